"""Run the points of every parallel loop one after another, in increasing or decreasing order.

Used only by the order sanitizer (``--sanitize=order``): the kernel body is built twice,
once with ``reverse=False`` and once with ``reverse=True``, and the two runs must write
identical results (P1: no order of points is observable).

Before: ``parallel`` and ``point`` loops.
After: every such loop is a ``serial`` loop; with ``reverse`` its ordinal runs from
``count - 1`` down to 0 (the loop variable is recomputed from a fresh counter, named beside
the kernel's other variables: the names depend on the kernel alone, not on what else the
process compiled).
"""
from __future__ import annotations

from dataclasses import replace

from intentc.kir.types import INDEX
from intentc.lower import program as P
from intentc.lower.names import NameSupply


def run_increasing(program: P.Program) -> P.Program:
    """Every parallel loop's points in increasing order."""
    return run(program, reverse=False)


def run_decreasing(program: P.Program) -> P.Program:
    """Every parallel loop's points in decreasing order."""
    return run(program, reverse=True)


def run(program: P.Program, reverse: bool) -> P.Program:
    return replace(program, kernels=tuple(replace(k, body=_stmts(k.body, reverse, NameSupply.of_kernel(k)))
                                          for k in program.kernels))


def _stmts(stmts, reverse: bool, names: NameSupply) -> tuple:
    return tuple(_stmt(s, reverse, names) for s in stmts)


def _stmt(s: P.Stmt, reverse: bool, names: NameSupply) -> P.Stmt:
    if isinstance(s, P.Loop):
        body = _stmts(s.body, reverse, names)
        if s.kind not in ("parallel", "point"):
            return replace(s, body=body)
        if not reverse:
            return replace(s, body=body, kind="serial", grain=None)
        counter = names.fresh(f"{s.var.name}_down", INDEX)
        last = P.Binary(INDEX, "sub", s.count, P.Const(INDEX, 1))
        point = P.Assign(s.var, P.Binary(INDEX, "sub", last, P.read(counter)))
        return P.Loop(counter, s.count, (point,) + body, "serial")
    if isinstance(s, P.If):
        return replace(s, then=_stmts(s.then, reverse, names), orelse=_stmts(s.orelse, reverse, names))
    if isinstance(s, P.While):
        return replace(s, cond_body=_stmts(s.cond_body, reverse, names), body=_stmts(s.body, reverse, names))
    return s
