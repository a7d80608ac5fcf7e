"""The unique sanitizer (``--sanitize=unique``): scatters asserted unique are checked.

Before: a ``scatter {unique: true}`` stands for the author's promise that no two of its
writes (lanes, or points of the parallel loops around it) hit one element (M4) — a
promise the compiler could not prove.
After: each such scatter gets a marker operand: an ``i32`` buffer shaped like its
destination, allocated and zero-filled once, where the destination is defined (at the
kernel's start for a parameter, right after a logical buffer). Its expansion
(``memory_lowering``) exchanges 1 into the marker element of every write, atomically, and
fails the call with ``INTENT_E_SANITIZER`` naming the element when the old value was
already 1 — before the second write happens.
"""
from __future__ import annotations

from intentc.kir.core import Block, Function, Module, Op, Value
from intentc.kir.types import DOMAIN, DTYPES, INDEX, TensorType

I32 = DTYPES["i32"]


def run(module: Module) -> Module:
    for func in module.kernels:
        _instrument(func)
    return module


def _instrument(func: Function) -> None:
    markers: dict[int, Value] = {}
    for op in list(func.walk()):
        if op.name != "scatter" or not op.attrs.get("unique") or op.attrs.get("check_unique"):
            continue
        dst = op.operands[0]
        if id(dst) not in markers:
            markers[id(dst)] = _marker(func, dst)
        op.operands.append(markers[id(dst)])
        op.attrs["check_unique"] = True


def _marker(func: Function, dst: Value) -> Value:
    """A zero-filled i32 buffer shaped like ``dst``, allocated where ``dst`` comes to exist."""
    block, position, extents, ops = _home(func, dst)
    zero_i, one_i = Op("const", [], [INDEX], {"value": 0}), Op("const", [], [INDEX], {"value": 1})
    zero = Op("const", [], [I32], {"value": 0})
    ops += [zero_i, one_i, zero]
    buf = Op("buffer", extents, [TensorType(I32, tuple(None for _ in extents))], {"dtype": "i32"},
             result_hints=["unique_marks"])
    ops.append(buf)
    domains = []
    for extent in extents:
        domain = Op("domain", [zero_i.result, extent, one_i.result], [DOMAIN])
        ops.append(domain)
        domains.append(domain.result)
    points = [Value(INDEX, f"m{k}") for k in range(len(extents))]
    body = Block(points, [Op("store", [buf.result] + points + [zero.result], attrs={"inbounds": [True] * len(points)}),
                          Op("yield", [])])
    ops.append(Op("parallel", domains, [], None, [body]))
    block.ops[position:position] = ops
    return buf.result


def _home(func: Function, dst: Value):
    """(block, insertion index, extent values, ops that define them) for the marker of ``dst``."""
    body = func.body
    if any(dst is arg for arg in func.args):
        position = 0
        while position < len(body.ops) and body.ops[position].name in ("dim", "assert_eq", "const"):
            position += 1
        dims = [Op("dim", [dst], [INDEX], {"axis": k}) for k in range(dst.type.rank)]
        return body, position, [d.result for d in dims], list(dims)
    for op in func.walk():
        for region in op.regions:
            if _defines(region, dst):
                return _after_buffer(region, dst)
    return _after_buffer(body, dst)


def _defines(block: Block, value: Value) -> bool:
    return any(value in op.results for op in block.ops)


def _after_buffer(block: Block, dst: Value):
    position = next(k for k, op in enumerate(block.ops) if dst in op.results)
    return block, position + 1, list(block.ops[position].operands), []
