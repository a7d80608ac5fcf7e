"""Version each parallel loop nest for the common case of unit innermost strides.

Before: element offsets multiply every index by a run-time stride.
After: each top-level ``parallel`` loop that accesses tensors is wrapped in
``if all(innermost stride == 1): <copy with those strides as the constant 1> else:
<original>``. The fast copy has provably contiguous inner accesses, which LLVM's loop
vectoriser needs; strided views keep working through the general copy. With a remark sink it
says which tensors' strides choose between the copies.
"""
from __future__ import annotations

from dataclasses import replace

from intentc.kir.types import BOOL, INDEX
from intentc.lower import program as P


def run(program: P.Program, remarks=None) -> P.Program:
    kernels = tuple(replace(k, body=_stmts(k.body, lambda loop: _remark(k.name, loop, remarks) if remarks else None))
                    for k in program.kernels)
    return replace(program, kernels=kernels)


def _stmts(stmts, on_version) -> tuple:
    out = []
    for s in stmts:
        if isinstance(s, P.Loop) and s.kind == "parallel":
            on_version(s)
            out.append(_version(s))
        elif isinstance(s, P.If):
            out.append(replace(s, then=_stmts(s.then, on_version), orelse=_stmts(s.orelse, on_version)))
        elif isinstance(s, P.Loop):
            out.append(replace(s, body=_stmts(s.body, on_version)))
        elif isinstance(s, P.While):
            out.append(replace(s, cond_body=_stmts(s.cond_body, on_version), body=_stmts(s.body, on_version)))
        else:
            out.append(s)
    return tuple(out)


def _remark(kernel: str, loop: P.Loop, remarks) -> None:
    origin = remarks.origin(kernel, loop.var.name)
    checked = sorted({t.name for t in _tensors(loop) if t.rank > 0 and t.storage != "heap"})
    if origin is None or not checked:
        return
    remarks.add("applied", "specialize_unit_stride", kernel, origin.span,
                f"versioned: {origin.describe()} has a contiguous copy, run when {', '.join(checked)} "
                f"{'has' if len(checked) == 1 else 'have'} stride 1 on the last axis, and a strided copy otherwise")


def _version(loop: P.Loop) -> P.Stmt:
    tensors = sorted(_tensors(loop), key=lambda t: t.name)
    tensors = [t for t in tensors if t.rank > 0]
    # Kernel-local buffers are row-major by construction: their innermost stride is 1 already.
    checked = [t for t in tensors if t.storage != "heap"]
    if not tensors:
        return loop
    if not checked:
        return P.map_stmts((loop,), _unit_rewriter({(t.name, t.rank - 1) for t in tensors}))[0]
    cond = None
    for t in checked:
        test = P.Compare(BOOL, "eq", P.Field(INDEX, t, "stride", t.rank - 1), P.Const(INDEX, 1))
        cond = test if cond is None else P.Binary(BOOL, "and", cond, test)
    unit = {(t.name, t.rank - 1) for t in tensors}
    heap_only = {(t.name, t.rank - 1) for t in tensors if t.storage == "heap"}
    fast = P.map_stmts((loop,), _unit_rewriter(unit))
    general = P.map_stmts((loop,), _unit_rewriter(heap_only))
    return P.If(cond, fast, general)


def _unit_rewriter(unit: set):
    def to_unit(e):
        if isinstance(e, P.Field) and e.kind == "stride" and (e.tensor.name, e.axis) in unit:
            return P.Const(INDEX, 1)
        if isinstance(e, P.Binary) and e.op == "mul" and isinstance(e.b, P.Const) and e.b.value == 1:
            return e.a
        return e
    return to_unit


def _tensors(loop: P.Loop) -> set:
    found = set()

    def visit(e):
        if isinstance(e, (P.Field, P.Load)):
            found.add(e.tensor)
        return e

    P.map_stmts((loop,), visit)
    for s in P.walk_stmts((loop,)):
        if isinstance(s, P.Store):
            found.add(s.tensor)
    return found
