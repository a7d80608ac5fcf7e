"""The PTX target (docs/ptx-abi.md, docs/targets.md).

- Every sample, and the kernels of tests/gpu/gpu_cases.py (every arithmetic rule, several
  phases, the serial mapping, run-time checks), assembles with ``ptxas`` for sm_80 and
  sm_90; sm_80's PTX also for sm_90 (PTX is forward compatible); sm_86 and sm_89 too.
- The manifest says exactly what the PTX takes: one entry per kernel, the ``.param``
  list in order and of the right sizes, launch formulas that evaluate (with this file's
  own evaluator) to the expected grids, blocks within ``.maxntid``, a check table that
  matches the status protocol, the logical parameters the CPU manifest has.
- The same source and flags give the same bytes; what does not lower is a T7 diagnostic.

Running the PTX needs a GPU (tests/gpu/test_gpu_samples.py); running the same IR on the
CPU is tests/gpu/test_emulated.py.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "gpu"))

import gpu_cases  # noqa: E402
from intentc.codegen import emit_nvptx, ptx_manifest  # noqa: E402
from intentc.diagnostics import CompileError  # noqa: E402
from intentc.driver import build, compile_source  # noqa: E402

SAMPLES = gpu_cases.SAMPLES
CASES = {"mapping": gpu_cases.MAPPING_SOURCE, "math": gpu_cases.MATH_SOURCE,
         "structured": gpu_cases.STRUCTURED_SOURCE, "cooperative": gpu_cases.COOPERATIVE_SOURCE}


def _find_ptxas() -> str | None:
    found = shutil.which("ptxas")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and (Path(root) / "bin" / "ptxas").is_file():
            return str(Path(root) / "bin" / "ptxas")
    return None


PTXAS = _find_ptxas()
needs_ptxas = pytest.mark.skipif(PTXAS is None, reason="no ptxas on PATH or in $CUDA_HOME/bin (CUDA toolkit, or "
                                                       "pip's nvidia-cuda-nvcc): PTX built but not assembled")
needs_libdevice = pytest.mark.skipif(emit_nvptx.find_libdevice() is None,
                                     reason="no CUDA libdevice: exp/log/pow/float % are rejected (T7) without it")


@pytest.fixture(scope="session")
def ptx(tmp_path_factory):
    """``ptx(name, target) -> (ptx path, manifest)``, built once per session."""
    root = tmp_path_factory.mktemp("ptx")
    cache = {}

    def get(name: str, target: str):
        if (name, target) not in cache:
            if name in CASES:
                source = root / f"{name}.intent"
                source.write_text(CASES[name])
            else:
                source = REPO / "samples" / f"{name}.intent"
            out = root / target / f"{name}.ptx"
            build(source, out, target)
            cache[name, target] = (out, json.loads(out.with_name(out.name + ".json").read_text()))
        return cache[name, target]

    return get


def _ptxas(path: Path, arch: str) -> None:
    run = subprocess.run([PTXAS, f"-arch={arch}", str(path), "-o", os.devnull], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, f"ptxas -arch={arch} {path.name}:\n{run.stderr}"


# ---- ptxas ---------------------------------------------------------------------------------------
@needs_ptxas
@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
@pytest.mark.parametrize("sample", SAMPLES)
def test_sample_assembles(ptx, sample, target):
    path, _ = ptx(sample, target)
    _ptxas(path, target)


@needs_ptxas
@pytest.mark.parametrize("sample", [s for s in ("saxpy", "reductions", "gather_scatter") if s in SAMPLES])
def test_sm80_ptx_assembles_for_sm90(ptx, sample):
    path, _ = ptx(sample, "sm_80")
    _ptxas(path, "sm_90")


@needs_ptxas
@pytest.mark.parametrize("target", ["sm_86", "sm_89"])
def test_other_sms_assemble(ptx, target):
    for sample in ("saxpy", "collatz_steps"):
        path, manifest = ptx(sample, target)
        assert f".target {target}" in path.read_text()
        _ptxas(path, target)


@needs_ptxas
@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
@pytest.mark.parametrize("case", [
    "mapping", pytest.param("math", marks=needs_libdevice), pytest.param("structured", marks=needs_libdevice)])
def test_case_kernels_assemble(ptx, case, target):
    path, manifest = ptx(case, target)
    text = path.read_text()
    externs = set(re.findall(r"\.extern \.func\s*(?:\([^)]*\))?\s*(\w+)", text))
    assert externs <= emit_nvptx.DEVICE_RUNTIME, externs  # the device heap only
    _ptxas(path, target)


def test_ptx_isa_per_sm(ptx):
    for target, isa in (("sm_80", "7.0"), ("sm_90", "7.8")):
        path, manifest = ptx("saxpy", target)
        text = path.read_text()
        assert f".version {isa}" in text and f".target {target}" in text
        assert manifest["ptx_isa"] == isa and manifest["target"] == target


# ---- the manifest ------------------------------------------------------------------------------------
def evaluate(formula, env):
    """This test's own evaluator of the manifest's formula language (docs/ptx-abi.md)."""
    if isinstance(formula, int):
        return formula
    tokens = re.findall(r"-?\d+|[A-Za-z_][\w.]*|[(),]", formula)
    assert "".join(tokens) == formula.replace(" ", ""), f"stray characters in {formula!r}"
    stack = [[]]
    names = []
    for tok in tokens:
        if tok == "(":
            stack.append([])
        elif tok == ",":
            continue
        elif tok == ")":
            args, name = stack.pop(), names.pop()
            stack[-1].append(_apply(name, args))
        elif re.fullmatch(r"-?\d+", tok):
            stack[-1].append(int(tok))
        elif tok in env:
            stack[-1].append(env[tok])
        else:
            names.append(tok)
    (value,) = stack[0]
    return value


def _apply(name, a):
    def fdiv(x, y):
        return 0 if y == 0 else x // y

    return {"add": lambda: sum(a), "sub": lambda: a[0] - a[1], "mul": lambda: a[0] * a[1],
            "floor_div": lambda: fdiv(a[0], a[1]), "ceil_div": lambda: -fdiv(-a[0], a[1]),
            "min": lambda: min(a), "max": lambda: max(a), "select": lambda: a[1] if a[0] else a[2],
            "lt": lambda: int(a[0] < a[1]), "le": lambda: int(a[0] <= a[1]), "gt": lambda: int(a[0] > a[1]),
            "ge": lambda: int(a[0] >= a[1]), "eq": lambda: int(a[0] == a[1]),
            "ne": lambda: int(a[0] != a[1])}[name]()


def _entries(ptx_text: str) -> dict:
    """entry name -> (list of .param types, .maxntid product)."""
    out = {}
    for m in re.finditer(r"\.visible \.entry (\w+)\(\s*(.*?)\)\s*(\.maxntid ([\d, ]+))?", ptx_text, re.S):
        params = re.findall(r"\.param \.(\w+)", m.group(2))
        maxntid = 1
        for n in (m.group(4) or "0").split(","):
            maxntid *= int(n)
        out[m.group(1)] = (params, maxntid)
    return out


def _kernel_names(source: str) -> list[str]:
    return re.findall(r"@intent\.kernel\s*\ndef (\w+)", source)


def _expected_args(params, scratch, phased: bool):
    names = []
    for p in params:
        if p["kind"] == "tensor":
            names.append(f"{p['name']}.data")
            names += [f"{p['name']}.shape{k}" for k in range(p["rank"])]
            names += [f"{p['name']}.stride{k}" for k in range(p["rank"])]
        else:
            names.append(p["name"])
    return names + ["status"] + [b["arg"] for b in scratch] + (["phase"] if phased else [])


_SCALAR_ARG = {"bool": "u8", "index": "i64", "f16": "u16", "bf16": "u16"}


@pytest.mark.parametrize("name", SAMPLES + ["mapping", pytest.param("structured", marks=needs_libdevice)])
def test_manifest_describes_the_ptx(ptx, name):
    path, manifest = ptx(name, "sm_80")
    text = path.read_text()
    source = CASES[name] if name in CASES else (REPO / "samples" / f"{name}.intent").read_text()
    assert manifest["format"] == "intentc-ptx" and manifest["manifest_version"] == 1
    assert manifest["ptx_abi_version"] == 1 and manifest["index"] == "i64"
    assert manifest["ptx"] == path.name
    assert manifest["ptx_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    status = manifest["status"]
    assert status["bytes"] == 40 and status["align"] == 8
    assert [(f["name"], f["offset"], f["type"]) for f in status["fields"]] == [
        ("code", 0, "i32"), ("check", 4, "i32"), ("args", 8, "i64")]
    entries = _entries(text)
    assert [k["name"] for k in manifest["kernels"]] == _kernel_names(source)
    assert sorted(entries) == sorted(k["entry"] for k in manifest["kernels"])
    for k in manifest["kernels"]:
        params, maxntid = entries[k["entry"]]
        phased = any("phase" in launch for launch in k["launches"])
        assert [a["name"] for a in k["args"]] == _expected_args(k["params"], k["scratch"], phased)
        ptx_types = []
        for a in k["args"]:
            assert a["bytes"] == (8 if a["type"] == "ptr" else int(a["type"][1:]) // 8)
            ptx_types.append("u64" if a["type"] == "ptr" else
                             a["type"] if a["type"][0] == "f" else f"u{a['type'][1:]}")
            if a["role"] == "value":
                dtype = next(p["dtype"] for p in k["params"] if p["name"] == a["param"])
                assert a["type"] == _SCALAR_ARG.get(dtype, dtype)
        assert params == ptx_types, f"{k['name']}: .param types {params} but the manifest says {ptx_types}"
        assert k["launches"], k["name"]
        for launch in k["launches"]:
            assert len(launch["grid"]) == 3 and len(launch["block"]) == 3 and launch["shared_bytes"] == 0
            assert all(isinstance(b, int) for b in launch["block"])
            assert launch["block"][0] * launch["block"][1] * launch["block"][2] <= maxntid
        for buffer in k["scratch"]:
            assert buffer["align"] == 256 and buffer["zero"] is False
            assert next(a for a in k["args"] if a["name"] == buffer["arg"])["role"] == "scratch"
        assert k["mapping"] in ("grid", "block", "serial")
        kinds = [launch["kind"] for launch in k["launches"]]
        assert set(kinds) <= {"grid", "blocks", "single", "block"}
        for launch in k["launches"]:
            if launch["kind"] == "single":
                assert launch["grid"] == [1, 1, 1] and launch["block"] == [1, 1, 1]
            if launch["kind"] == "block":
                assert launch["grid"] == [1, 1, 1] and launch["points"] == 1
            if launch["kind"] in ("blocks", "block"):  # a fixed tiling, recorded
                assert launch["block"] == [256, 1, 1] and launch["lanes"] == 256
            else:
                assert "lanes" not in launch and "points" not in launch
        cooperative = {"blocks", "block"} & set(kinds) or k["mapping"] == "block"
        assert k["static_shared_bytes"] == (2064 if cooperative else 0)
        for i, check in enumerate(k["checks"]):
            assert check["id"] == i and status["codes"][check["status"]] == check["code"] < 0
            assert check["message"].count("%lld") == check["nargs"] <= 4
            assert check["message"].startswith(f"{k['name']}: ")
        names = {a["name"] for a in k["args"]}
        for launch in k["launches"]:
            for g in launch["grid"] + [b["bytes"] for b in k["scratch"]]:
                if isinstance(g, str):
                    used = set(re.findall(r"[A-Za-z_][\w.]*", g))
                    assert used <= names | set(manifest["formula_functions"]), f"{g!r} uses {used - names}"


@pytest.mark.parametrize("sample", SAMPLES)
def test_manifest_params_are_the_cpu_manifests(ptx, sample):
    _, manifest = ptx(sample, "sm_80")
    source = REPO / "samples" / f"{sample}.intent"
    cpu = compile_source(source.read_text(), str(source), optimize_ir=False).manifest
    assert [k["params"] for k in manifest["kernels"]] == [k["params"] for k in cpu["kernels"]]


def _launch_of(manifest, kernel):
    return next(k for k in manifest["kernels"] if k["name"] == kernel)["launches"]


@pytest.mark.parametrize("n", [0, 1, 255, 256, 257, 4097, 10 ** 6, 16_777_216, 10 ** 9])
def test_saxpy_grid_formula(ptx, n):
    _, manifest = ptx("saxpy", "sm_90")
    (launch,) = _launch_of(manifest, "saxpy")
    env = {"x.shape0": n, "y.shape0": n, "out.shape0": n, "x.stride0": 1, "y.stride0": 1, "out.stride0": 1}
    grid = [evaluate(g, env) for g in launch["grid"]]
    assert launch["block"] == [256, 1, 1]
    assert grid == [min(max(-(-n // 256), 1), 65535), 1, 1]
    assert ptx_manifest.evaluate(launch["grid"][0], env) == grid[0]


@pytest.mark.parametrize("r, c", [(0, 5), (3, 5), (1, 1), (4096, 4096), (1, 10 ** 7)])
def test_two_dimensional_grid_formula(ptx, r, c):
    _, manifest = ptx("row_scale", "sm_80")
    (launch,) = _launch_of(manifest, "row_scale")
    env = {"x.shape0": r, "x.shape1": c, "s.shape0": r, "out.shape0": r, "out.shape1": c}
    assert evaluate(launch["grid"][0], env) == min(max(-(-(r * c) // 256), 1), 65535)


def test_mappings_and_phases(ptx):
    _, manifest = ptx("mapping", "sm_80")
    kernels = {k["name"]: k for k in manifest["kernels"]}
    two = kernels["two_phase"]
    assert two["mapping"] == "grid" and [launch["phase"] for launch in two["launches"]] == [0, 1]
    assert [a["name"] for a in two["args"]][-2:] == ["status", "phase"]
    assert two["args"][-1]["type"] == "i32" and two["args"][-1]["role"] == "phase"
    first = kernels["first_and_shift"]
    assert first["mapping"] == "grid" and [launch["kind"] for launch in first["launches"]] == ["single", "grid"]
    assert first["launches"][0]["grid"] == [1, 1, 1] and first["launches"][0]["phase"] == 0
    running = kernels["running_sum"]
    assert running["mapping"] == "serial" and "no parallel loop" in running["serial_reason"]
    assert running["launches"] == [{"grid": [1, 1, 1], "block": [1, 1, 1], "shared_bytes": 0, "kind": "single"}]
    # A parallel loop inside an ordered loop: the whole kernel on one block, the loop spread.
    halve = kernels["halve_k_times"]
    assert halve["mapping"] == "block" and "nested in an ordered loop" in halve["limited_by"]
    assert halve["launches"] == [{"grid": [1, 1, 1], "block": [256, 1, 1], "shared_bytes": 0, "kind": "block",
                                  "lanes": 256, "points": 1}]
    # 'f' is computed by the one-thread launch and used by the grid launch: carried in scratch.
    bump = kernels["bump_then_scale"]
    assert bump["mapping"] == "grid" and [launch["kind"] for launch in bump["launches"]] == ["single", "grid"]
    assert {"arg": "carried.data", "bytes": 8, "align": 256, "zero": False} in bump["scratch"]
    (fill,) = kernels["strided_fill"]["launches"]
    assert "select(" in fill["grid"][0]
    for n, step, points in ((10, 3, 4), (0, 2, 0), (-4, 2, 0), (1000, 1, 1000), (512, 2, 256), (513, 2, 257)):
        assert evaluate(fill["grid"][0], {"n": n, "step": step, "out.shape0": 10}) == max(-(-points // 256), 1)
    (outer,) = kernels["outer"]["launches"]
    env = {"a.shape0": 300, "b.shape0": 300, "out.shape0": 300, "out.shape1": 300, "out.shape2": 2}
    assert evaluate(outer["grid"][0], env) == -(-300 * 300 * 2 // 256)


@needs_libdevice
def test_reductions_use_scratch_and_single_phases(ptx):
    _, manifest = ptx("structured", "sm_80")
    kernels = {k["name"]: k for k in manifest["kernels"]}
    total = kernels["total"]
    # One block per tile of the input, then one block combining the tiles' partials.
    assert [launch["kind"] for launch in total["launches"]] == ["blocks", "block"]
    assert [launch["phase"] for launch in total["launches"]] == [0, 1]
    (buffer,) = total["scratch"]
    for n in (0, 1, 10 ** 6, 10 ** 9):
        chunk = max(-(-n // 1024), 4096)
        env = {"x.shape0": n, "x.stride0": 1, "out.shape0": 1}
        tiles = -(-n // chunk)
        assert evaluate(buffer["bytes"], env) == 4 * tiles
        assert evaluate(total["launches"][0]["points"], env) == tiles
        assert evaluate(total["launches"][0]["grid"][0], env) == min(max(tiles, 1), 65535)
    prefix = kernels["prefix"]
    assert [launch["kind"] for launch in prefix["launches"]][:3] == ["blocks", "single", "grid"]
    softmax = kernels["softmax_rows"]
    assert softmax["scratch"] == [] and [launch["kind"] for launch in softmax["launches"]] == ["blocks"]
    assert evaluate(softmax["launches"][0]["grid"][0], {"x.shape0": 256, "x.shape1": 1000}) == 256  # a block a row


@pytest.mark.parametrize("sample", SAMPLES)
def test_serial_reasons_speak_of_the_source(ptx, sample):
    """A kernel that still runs on one thread or one block says which statement limits it in
    source terms (a construct and a file:line:col), never by internal variable names."""
    _, manifest = ptx(sample, "sm_80")
    for k in manifest["kernels"]:
        if k["mapping"] == "grid":
            assert "serial_reason" not in k and "limited_by" not in k
            continue
        reason = k["serial_reason" if k["mapping"] == "serial" else "limited_by"]
        assert not re.search(r"\b(v|t|len|buf)_\d+\b", reason), reason
        assert re.search(rf"samples/{sample}\.intent:\d+:\d+", reason), reason


def test_cooperative_kernels(ptx):
    """Reductions run on many blocks through shared memory, barriers and warp shuffles; a
    row of literal extent 4 keeps one thread per row; nothing maps to one thread."""
    path, manifest = ptx("cooperative", "sm_90")
    kernels = {k["name"]: k for k in manifest["kernels"]}
    kinds = {name: [launch["kind"] for launch in k["launches"]] for name, k in kernels.items()}
    assert all(k["mapping"] == "grid" for k in kernels.values())
    for name in ("dot", "l2norm"):
        assert kinds[name] == ["blocks", "block"], (name, kinds[name])
    for name in ("total", "int_total", "int_max", "float_max"):  # a returned result, stored by a grid launch
        assert kinds[name] == ["blocks", "block", "grid"], (name, kinds[name])
        assert any(x["arg"] == "carried.data" for x in kernels[name]["scratch"])
    assert kinds["softmax"] == ["blocks"] and kinds["layernorm_backward"] == ["blocks"]
    assert kinds["crossentropy_mean"] == ["grid", "blocks", "block"]
    assert kinds["softmax_ordered"] == ["blocks"]  # ordered loops with independent iterations, spread
    assert kinds["narrow_rows"] == ["grid"] and kinds["row_running"] == ["grid"] and kinds["shifted_rows"] == ["grid"]
    # A region_fold's combine may be re-parenthesised, never permuted (R3): it stays in order
    # on one thread, while the reductions inside its summaries (T1) run on blocks.
    _, sample = ptx("logsumexp", "sm_80")
    (lse,) = sample["kernels"]
    assert [launch["kind"] for launch in lse["launches"]] == ["blocks", "single", "grid"]
    text = path.read_text()
    assert "bar.sync" in text and "shfl.sync.down" in text and ".shared .align 8 .b8 dot_$_shared[2064]" in text


@needs_libdevice
def test_buffer_per_point_uses_the_device_heap(ptx):
    path, manifest = ptx("structured", "sm_90")
    kernels = {k["name"]: k for k in manifest["kernels"]}
    assert kernels["row_cumsum"]["device_heap"] is True and kernels["row_cumsum"]["scratch"] == []
    assert kernels["total"]["device_heap"] is False
    assert any(c["status"] == "INTENT_E_ALLOC" and "CU_LIMIT_MALLOC_HEAP_SIZE" in c["message"]
               for c in kernels["row_cumsum"]["checks"])
    text = path.read_text()
    assert re.search(r"\.extern \.func\s*\(.*\)\s*malloc", text) and "call.uni free" in text


def test_reference_evaluators_agree():
    from intentc import ptx_loader

    env = {"a": 7, "b": -3, "z": 0}
    for formula, want in (("ceil_div(a, 2)", 4), ("ceil_div(b, 2)", -1), ("floor_div(b, 2)", -2),
                          ("floor_div(a, z)", 0), ("ceil_div(a, z)", 0), ("select(gt(a, b), a, b)", 7),
                          ("min(max(ceil_div(mul(a, 100), 256), 1), 65535)", 3), ("sub(add(a, b), -1)", 5),
                          ("select(le(a, z), 1, eq(b, -3))", 1), (12, 12)):
        assert evaluate(formula, env) == want, formula
        assert ptx_manifest.evaluate(formula, env) == want, formula
        assert ptx_loader.evaluate(formula, env) == want, formula


# ---- determinism, CLI, diagnostics ---------------------------------------------------------------------
def test_same_input_same_bytes(tmp_path):
    source = REPO / "samples" / "broadcast_add.intent"
    first, second = tmp_path / "a" / "k.ptx", tmp_path / "b" / "k.ptx"
    build(source, first, "sm_90")
    run = subprocess.run([sys.executable, "-m", "intentc", "build", str(source), "--target", "sm_90",
                          "-o", str(second)], capture_output=True, text=True, cwd=REPO, env=_env(), timeout=120)
    assert run.returncode == 0, run.stderr
    assert first.read_bytes() == second.read_bytes()
    assert (tmp_path / "a" / "k.ptx.json").read_bytes() == (tmp_path / "b" / "k.ptx.json").read_bytes()


def test_bytes_do_not_depend_on_earlier_builds_in_the_process(tmp_path):
    """A notebook or a build tool compiles many modules in one process: the PTX of one must not
    depend on what was compiled before it (LLVM's NVPTX backend numbers call sequences per
    target machine, so emission takes a machine of its own)."""
    source = REPO / "benchmarks" / "kernels" / "softmax.intent"  # calls: numbered call sequences
    build(source, tmp_path / "first" / "k.ptx", "sm_90")
    build(REPO / "samples" / "atomic_counter.intent", tmp_path / "other" / "k.ptx", "sm_90")
    build(source, tmp_path / "again" / "k.ptx", "sm_90")
    assert (tmp_path / "first" / "k.ptx").read_bytes() == (tmp_path / "again" / "k.ptx").read_bytes()


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def test_cli_explain_asm_prints_ptx():
    run = subprocess.run([sys.executable, "-m", "intentc", "explain", "samples/saxpy.intent", "--target", "sm_90",
                          "--stage", "asm"], capture_output=True, text=True, cwd=REPO, env=_env(), timeout=120)
    assert run.returncode == 0, run.stderr
    assert ".target sm_90" in run.stdout and ".visible .entry saxpy(" in run.stdout


def test_depfile(tmp_path):
    out, dep = tmp_path / "s.ptx", tmp_path / "s.d"
    written = build(REPO / "samples" / "saxpy.intent", out, "sm_80", depfile=dep)
    assert written == [out, out.with_name("s.ptx.json"), dep]
    assert dep.read_text().startswith(f"{out}: ")


def _diagnostic(source: str, tmp_path, target="sm_90", output="k.ptx") -> str:
    path = tmp_path / "k.intent"
    path.write_text(source)
    with pytest.raises(CompileError) as info:
        build(path, tmp_path / output, target)
    return str(info.value)


def test_math_needs_no_libdevice(tmp_path, monkeypatch):
    """Every math function, float ** and float % included, is intentc's own and inlined:
    without a CUDA libdevice the PTX builds and calls nothing."""
    monkeypatch.setattr(emit_nvptx, "find_libdevice", lambda: None)
    source = "import intent as I\n\n@intent.kernel\ndef k(x: f32[N], y: f32[N]) -> f32[N]:\n    return EXPR\n"
    for name, expr in (("pow", "x ** y"), ("mod", "x % y"), ("sqrt", "I.sqrt(x)"), ("exp", "I.exp(x)"),
                       ("log", "I.log(x)"), ("tanh", "I.tanh(x)"), ("sin", "I.sin(x)"), ("atan2", "I.atan2(y, x)")):
        path = tmp_path / f"{name}.intent"
        path.write_text(source.replace("EXPR", expr))
        build(path, tmp_path / f"{name}.ptx", "sm_80")
        ptx = (tmp_path / f"{name}.ptx").read_text()
        assert "call" not in ptx and "fma" not in ptx, name
    assert "sqrt.rn.f32" in (tmp_path / "sqrt.ptx").read_text()


def test_unresolved_call_is_refused():
    import llvmlite.binding as llvm

    from intentc.codegen.emit_llvm import UnsupportedError
    from intentc.codegen.target import gpu_target

    module = llvm.parse_assembly('target triple = "nvptx64-nvidia-cuda"\ndeclare float @powf(float, float)\n'
                                 'define ptx_kernel void @k(ptr addrspace(1) %p) {\n'
                                 '  %v = load float, ptr addrspace(1) %p\n'
                                 '  %r = call float @powf(float %v, float %v)\n'
                                 '  store float %r, ptr addrspace(1) %p\n  ret void\n}\n')
    with pytest.raises(UnsupportedError, match="powf"):
        emit_nvptx.ptx_assembly(module, gpu_target("sm_80"))


@pytest.mark.parametrize("target, output, message", [
    ("host", "k.ptx", "'k.ptx' is PTX, which needs a GPU target"),
    ("sm_90", "k.so", "target sm_90 produces PTX, not 'k.so'"),
    ("sm_70", "k.ptx", "unknown GPU target 'sm_70'"),
])
def test_target_and_output_must_agree(tmp_path, target, output, message):
    source = (REPO / "samples" / "saxpy.intent").read_text()
    assert message in _diagnostic(source, tmp_path, target, output)
