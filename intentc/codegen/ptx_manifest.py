"""The PTX manifest (``kernel.ptx.json``): everything a loader needs to launch the PTX
without intentc — the entry ABI, the launch sequence, the status protocol and the
argument checks the host must do. The format is versioned; docs/ptx-abi.md describes it.

This module also holds the reference implementation of the manifest's formula language
(``evaluate``), which loaders may copy: it is deliberately tiny.
"""
from __future__ import annotations

import json
import re

from intentc.codegen.abi import STATUS
from intentc.codegen import gpu_blocks
from intentc.codegen.gpu_launch import SCRATCH_ALIGN, uses_heap
from intentc.kir.types import DTYPES

MANIFEST_FORMAT = "intentc-ptx"
MANIFEST_VERSION = 1
PTX_ABI_VERSION = 1
STATUS_BYTES = 40

FUNCTIONS = ("add", "sub", "mul", "floor_div", "ceil_div", "min", "max", "select",
             "lt", "le", "gt", "ge", "eq", "ne")


def ptx_manifest(base: dict, kernels, spec) -> dict:
    """The manifest of a module: ``base`` is the CPU module manifest (logical parameters),
    ``kernels`` the emitter's (physical kernel, plan, check table) triples."""
    logical = {k["name"]: k for k in base["kernels"]}
    out = []
    for kernel, plan, checks in kernels:
        launches = []
        for launch in plan.launches:
            entry = {"grid": list(launch.grid), "block": list(launch.block), "shared_bytes": 0,
                     "kind": launch.kind}
            if launch.phase is not None:
                entry["phase"] = launch.phase
            if launch.kind in ("blocks", "block"):
                # The fixed tiling of its reductions: the bits depend on these, never on the grid.
                entry["lanes"] = gpu_blocks.LANES
                entry["points"] = launch.points
            if launch.kind == "tiles":
                # One block per tile of C: the tiling (gpu_contract.py) fixes the bits, never the grid.
                entry["points"] = launch.points
                entry["tiles"] = launch.tiles.describe()
            launches.append(entry)
        out.append({
            "name": kernel.name,
            "entry": kernel.name,
            "params": logical[kernel.name]["params"],
            "args": [_arg(a) for a in plan.args],
            "mapping": plan.mapping,
            **({"serial_reason": plan.reason} if plan.mapping == "serial" else {}),
            **({"limited_by": plan.reason} if plan.mapping == "block" else {}),
            "launches": launches,
            "scratch": [{"arg": x.arg, "bytes": x.bytes, "align": SCRATCH_ALIGN, "zero": False}
                        for x in plan.scratch],
            "checks": [dict(c, id=k) for k, c in enumerate(checks)],
            "device_heap": uses_heap(kernel, plan.scratch),
            **_scalar_results(logical[kernel.name]["params"]),
            "static_shared_bytes": _static_shared(plan),
        })
    return {
        "format": MANIFEST_FORMAT,
        "manifest_version": MANIFEST_VERSION,
        "ptx_abi_version": PTX_ABI_VERSION,
        "module": base["module"],
        "source": base["source"],
        "target": spec.name,
        "ptx_isa": _ptx_isa(spec.features),
        "index": "i64",
        "status": {
            "bytes": STATUS_BYTES,
            "align": 8,
            "fields": [{"name": "code", "offset": 0, "type": "i32"},
                       {"name": "check", "offset": 4, "type": "i32"},
                       {"name": "args", "offset": 8, "type": "i64", "count": 4}],
            "codes": dict(sorted(STATUS.items(), key=lambda kv: -kv[1])),
        },
        "formula_functions": list(FUNCTIONS),
        "kernels": out,
    }


def _scalar_results(params: list) -> dict:
    """A kernel's scalar results, each a device buffer of one element that the host allocates,
    passes as the ``NAME.data`` argument and reads back only when the call succeeds (absent
    when the kernel returns no scalar; docs/ptx-abi.md)."""
    buffers = [{"param": p["name"], "arg": f"{p['name']}.data", "dtype": p["dtype"],
                "bytes": max(1, DTYPES[p["dtype"]].bits // 8)}
               for p in params if p["kind"] == "scalar" and p.get("result")]
    return {"scalar_results": buffers} if buffers else {}


def _static_shared(plan) -> int:
    """The block-shared bytes the PTX declares: the cooperative slots, and a contraction's
    tile buffers (one array, as large as the largest)."""
    if not any(launch.kind in ("blocks", "block", "tiles") for launch in plan.launches):
        return 0
    tiles = [launch.tiles.shared_bytes for launch in plan.launches if launch.kind == "tiles"]
    return 8 * gpu_blocks.SHARED_SLOTS + (max(tiles) if tiles else 0)


def _ptx_isa(features: str) -> str:
    match = re.search(r"\+ptx(\d+)(\d)", features)
    return f"{match.group(1)}.{match.group(2)}" if match else ""


def _arg(a) -> dict:
    entry = {"name": a.name, "type": a.type, "bytes": a.bytes, "role": a.role}
    if a.param is not None:
        entry["param"] = a.param
    if a.axis is not None:
        entry["axis"] = a.axis
    return entry


def manifest_text(manifest: dict) -> str:
    """Indented JSON with sorted keys; objects and lists holding no containers on one line."""
    return _dump(manifest, "") + "\n"


def _dump(value, indent: str) -> str:
    if isinstance(value, dict) and any(isinstance(v, (dict, list)) for v in value.values()):
        inner = indent + "  "
        items = [f"{inner}{json.dumps(k)}: {_dump(value[k], inner)}" for k in sorted(value)]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        inner = indent + "  "
        return "[\n" + ",\n".join(inner + _dump(v, inner) for v in value) + "\n" + indent + "]"
    return json.dumps(value, sort_keys=True)


# ---- formulas ------------------------------------------------------------------------------------
_TOKEN = re.compile(r"\s*(?:(-?\d+)|([A-Za-z_][\w.]*)|(.))")


def evaluate(formula, env: dict) -> int:
    """Evaluate a launch formula (an int, or a string such as
    ``"min(max(ceil_div(x.shape0, 256), 1), 65535)"``) with ``env`` mapping argument names
    (``x.shape0``, ``x.stride1``, ``n``) to integers. Arithmetic is on Python integers;
    ``floor_div``/``ceil_div`` by 0 give 0; comparisons give 0 or 1."""
    if isinstance(formula, int):
        return formula
    tokens = [m.group(1) or m.group(2) or m.group(3) for m in _TOKEN.finditer(formula) if m.group(0).strip()]
    pos = 0

    def take() -> str:
        nonlocal pos
        if pos >= len(tokens):
            raise ValueError(f"formula {formula!r} ends early")
        pos += 1
        return tokens[pos - 1]

    def expr() -> int:
        tok = take()
        if re.fullmatch(r"-?\d+", tok):
            return int(tok)
        if pos < len(tokens) and tokens[pos] == "(":
            take()
            args = [expr()]
            while (sep := take()) == ",":
                args.append(expr())
            if sep != ")":
                raise ValueError(f"formula {formula!r}: expected ')'")
            return _apply(tok, args)
        if tok not in env:
            raise KeyError(f"formula {formula!r} needs '{tok}'")
        return int(env[tok])

    value = expr()
    if pos != len(tokens):
        raise ValueError(f"formula {formula!r} has trailing text")
    return value


def _floor_div(a: int, b: int) -> int:
    return 0 if b == 0 else a // b


def _apply(name: str, args: list[int]) -> int:
    if name == "add":
        return sum(args)
    if name == "mul":
        out = 1
        for a in args:
            out *= a
        return out
    if name == "min":
        return min(args)
    if name == "max":
        return max(args)
    if name == "select":
        return args[1] if args[0] else args[2]
    a, b = args
    table = {"sub": a - b, "floor_div": _floor_div(a, b), "ceil_div": -_floor_div(-a, b),
             "lt": int(a < b), "le": int(a <= b), "gt": int(a > b), "ge": int(a >= b), "eq": int(a == b),
             "ne": int(a != b)}
    if name not in table:
        raise ValueError(f"unknown formula function '{name}'")
    return table[name]
