"""Run the points of every parallel loop one after another, in increasing or decreasing order.

Used only by the order sanitizer (``--sanitize=order``): the kernel body is built twice,
once with ``reverse=False`` and once with ``reverse=True``, and the two runs must write
identical results (P1: no order of points is observable).

Before: ``parallel`` and ``point`` loops.
After: every such loop is a ``serial`` loop; with ``reverse`` its ordinal runs from
``count - 1`` down to 0 (the loop variable is recomputed from a fresh counter).
"""
from __future__ import annotations

import itertools
from dataclasses import replace

from intentc.kir.types import INDEX
from intentc.lower import program as P

_fresh = itertools.count()


def run_increasing(program: P.Program) -> P.Program:
    """Every parallel loop's points in increasing order."""
    return run(program, reverse=False)


def run_decreasing(program: P.Program) -> P.Program:
    """Every parallel loop's points in decreasing order."""
    return run(program, reverse=True)


def run(program: P.Program, reverse: bool) -> P.Program:
    return replace(program, kernels=tuple(replace(k, body=_stmts(k.body, reverse)) for k in program.kernels))


def _stmts(stmts, reverse: bool) -> tuple:
    return tuple(_stmt(s, reverse) for s in stmts)


def _stmt(s: P.Stmt, reverse: bool) -> P.Stmt:
    if isinstance(s, P.Loop):
        body = _stmts(s.body, reverse)
        if s.kind not in ("parallel", "point"):
            return replace(s, body=body)
        if not reverse:
            return replace(s, body=body, kind="serial", grain=None)
        counter = P.Var(f"{s.var.name}_down{next(_fresh)}", INDEX)
        last = P.Binary(INDEX, "sub", s.count, P.Const(INDEX, 1))
        point = P.Assign(s.var, P.Binary(INDEX, "sub", last, P.read(counter)))
        return P.Loop(counter, s.count, (point,) + body, "serial")
    if isinstance(s, P.If):
        return replace(s, then=_stmts(s.then, reverse), orelse=_stmts(s.orelse, reverse))
    if isinstance(s, P.While):
        return replace(s, cond_body=_stmts(s.cond_body, reverse), body=_stmts(s.body, reverse))
    return s
