"""Replace reads of variables that are assigned once, with a constant, by that constant.

Before: constants reach their uses through variables (one per KIR value).
After: such variables are gone and their reads are ``Const`` nodes, so that outlined
task bodies see literal steps and offsets (``begin + t * 1``) instead of captured
variables, which is what lets LLVM recognise unit-stride loops and vectorise them.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import replace

from intentc.lower import program as P


def run(program: P.Program) -> P.Program:
    return replace(program, kernels=tuple(_kernel(k) for k in program.kernels))


def _kernel(kernel: P.Kernel) -> P.Kernel:
    body = kernel.body
    while True:
        counts = Counter(s.var for s in P.walk_stmts(body) if isinstance(s, P.Assign))
        counts.update(s.var for s in P.walk_stmts(body) if isinstance(s, P.Loop))
        consts = {s.var: s.value for s in P.walk_stmts(body)
                  if isinstance(s, P.Assign) and counts[s.var] == 1 and isinstance(s.value, P.Const)}
        if not consts:
            return replace(kernel, body=body)
        body = _drop(body, consts)
        body = P.map_stmts(body, lambda e: consts.get(e.var, e) if isinstance(e, P.Read) else _fold(e))


def _drop(stmts, consts) -> tuple:
    out = []
    for s in stmts:
        if isinstance(s, P.Assign) and s.var in consts:
            continue
        if isinstance(s, P.If):
            s = replace(s, then=_drop(s.then, consts), orelse=_drop(s.orelse, consts))
        elif isinstance(s, P.Loop):
            s = replace(s, body=_drop(s.body, consts))
        elif isinstance(s, P.While):
            s = replace(s, cond_body=_drop(s.cond_body, consts), body=_drop(s.body, consts))
        out.append(s)
    return tuple(out)


def _fold(e: P.Expr) -> P.Expr:
    """Fold the index arithmetic identities that the loop point computation produces."""
    if isinstance(e, P.Binary) and e.dtype.kind == "index":
        a, b = e.a, e.b
        if e.op == "mul":
            if isinstance(b, P.Const) and b.value == 1:
                return a
            if isinstance(a, P.Const) and a.value == 1:
                return b
        if e.op == "add":
            if isinstance(a, P.Const) and a.value == 0:
                return b
            if isinstance(b, P.Const) and b.value == 0:
                return a
    return e
