"""Collapse a parallel loop with the point loop nested in it when the points are heavy.

Before: ``for b in parallel(0, B): ...; for t in point(0, T): <body with loops>`` — only
the outer loop is spread over threads, so a nest whose outer extent is small (one batch,
``B = 1``) runs on one thread however much work each point holds.
After: where the parallel loop's body is assignments that do not load (hoisted when they
do not depend on the point) followed by one ``point`` loop whose count is known before
the nest and whose body holds a loop (the points are heavy, the inner loop is not the
vectorised one), the two are one ``parallel`` loop over ``B * T`` points, each recovering
``b = p // T`` and ``t = p % T``; repeated, a ``(b, t, h)`` nest becomes one loop. The points
are the same and independent (P1), so every result is unchanged; the row-major order of
the flattened points keeps ``--sanitize=order``'s increasing and decreasing runs. A nest
with more than 2^63 - 1 points fails with ``INTENT_E_DOMAIN`` instead of wrapping.

With a remark sink it says which nests were collapsed, and for a parallel loop over points
whose inner point loop stays inside each task, why.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import replace

from intentc.kir.types import BOOL, INDEX
from intentc.lower import program as P
from intentc.lower.names import NameSupply

_MAX = 2 ** 63 - 1


def run(program: P.Program, remarks=None) -> P.Program:
    kernels = []
    for kernel in program.kernels:
        names = NameSupply.of_kernel(kernel)
        kernels.append(replace(kernel, body=_stmts(kernel.body, names, kernel.name, remarks)))
    return replace(program, kernels=tuple(kernels))


def _stmts(stmts, names: NameSupply, kernel: str, remarks=None) -> tuple:
    out: list[P.Stmt] = []
    for s in stmts:
        if isinstance(s, P.Loop) and s.kind == "parallel" and s.grain is None:
            out.extend(_collapse(s, names, kernel, remarks))
        elif isinstance(s, P.Loop):
            out.append(replace(s, body=_stmts(s.body, names, kernel, remarks)))
        elif isinstance(s, P.If):
            out.append(replace(s, then=_stmts(s.then, names, kernel, remarks),
                               orelse=_stmts(s.orelse, names, kernel, remarks)))
        elif isinstance(s, P.While):
            out.append(replace(s, cond_body=_stmts(s.cond_body, names, kernel, remarks),
                               body=_stmts(s.body, names, kernel, remarks)))
        else:
            out.append(s)
    return tuple(out)


def _collapse(loop: P.Loop, names: NameSupply, kernel: str, remarks=None) -> list[P.Stmt]:
    """The statements that replace ``loop``: hoisted invariants, checks, the collapsed loop."""
    before: list[P.Stmt] = []
    while True:
        parts = _split(loop)
        if isinstance(parts, str):
            if remarks is not None:
                _remark_kept(loop, parts, kernel, remarks)
            return before + [loop]
        hoisted, inside, inner = parts
        before += hoisted
        flat = names.fresh(f"{loop.var.name}_{inner.var.name}", INDEX)
        outer_count, inner_count = loop.count, inner.count
        # outer * inner points must be countable: inner <= MAX // outer (outer > 0).
        fits = P.Binary(BOOL, "or", P.Compare(BOOL, "le", outer_count, P.Const(INDEX, 0)),
                        P.Compare(BOOL, "le", inner_count,
                                  P.Binary(INDEX, "floordiv", P.Const(INDEX, _MAX), outer_count)))
        before.append(P.Check(fits, "INTENT_E_DOMAIN",
                              f"{kernel}: a parallel nest of %lld x %lld points has more than 2^63 - 1 points",
                              (outer_count, inner_count)))
        count = P.Binary(INDEX, "mul", outer_count, inner_count)
        body = (P.Assign(loop.var, P.Binary(INDEX, "floordiv", P.read(flat), inner_count)),
                P.Assign(inner.var, P.Binary(INDEX, "mod", P.read(flat), inner_count)),
                *inside, *inner.body)
        if remarks is not None:
            _remark_collapsed(loop, inner, flat, kernel, remarks)
        loop = P.Loop(flat, count, body, "parallel", None)


def _split(loop: P.Loop):
    """(hoisted assignments, assignments that stay, the point loop) when ``loop`` is a heavy
    collapsible nest, else why not (a remark's reason; "" when there is no point loop)."""
    *prefix, last = loop.body or (None,)
    if not isinstance(last, P.Loop) or last.kind != "point" or last.grain is not None:
        return ""
    if not any(isinstance(s, (P.Loop, P.While)) for s in P.walk_stmts(last.body)):
        return "its points are light (no loop inside them): the inner point loop is the one to vectorise"
    if not all(isinstance(s, P.Assign) for s in prefix):
        return "the outer point's body does more than compute values before the inner points"
    assigned = {s.var.name for s in P.walk_stmts(loop.body) if isinstance(s, (P.Assign, P.Loop))}
    assignments = Counter(s.var.name for s in P.walk_stmts(loop.body) if isinstance(s, P.Assign))
    varying = {loop.var.name}
    hoisted, inside = [], []
    for s in prefix:
        reads = _reads(s.value)
        if _loads(s.value):
            return "a value the inner points need is loaded from memory before them"
        if reads & varying or assignments[s.var.name] > 1:
            varying.add(s.var.name)
            inside.append(s)
        else:
            hoisted.append(s)
    if _reads(last.count) & (varying | (assigned - {h.var.name for h in hoisted})) or _loads(last.count):
        return "the inner points' count depends on the outer point (a ragged or triangular nest)"
    if _reads(loop.count) & assigned:
        return "the outer count is computed inside the nest"
    return hoisted, inside, last


def _remark_collapsed(loop: P.Loop, inner: P.Loop, flat: P.Var, kernel: str, remarks) -> None:
    outer_origin, inner_origin = remarks.origin(kernel, loop.var.name), remarks.origin(kernel, inner.var.name)
    if outer_origin is None:
        return
    names = outer_origin.names + (inner_origin.names if inner_origin is not None else ())
    remarks.origins[(kernel, flat.name)] = replace(outer_origin, names=names)
    remarks.add("applied", "collapse_point_nests", kernel, outer_origin.span,
                f"collapsed: the points over ({', '.join(names)}) are one parallel loop, so that a small outer "
                f"extent still spreads over threads (each point holds a loop)")


def _remark_kept(loop: P.Loop, reason: str, kernel: str, remarks) -> None:
    inner = loop.body[-1] if loop.body and isinstance(loop.body[-1], P.Loop) else None
    origin = remarks.origin(kernel, loop.var.name)
    if not reason or inner is None or origin is None:
        return
    inner_origin = remarks.origin(kernel, inner.var.name)
    inner_names = ", ".join(inner_origin.names) if inner_origin is not None and inner_origin.names else "the inner axis"
    remarks.add("analysis" if reason.startswith("its points are light") else "missed", "collapse_point_nests", kernel,
                origin.span, f"not collapsed: the points over {inner_names} run inside each task of "
                             f"{origin.describe()}: {reason}")


def _reads(e: P.Expr) -> set[str]:
    return {x.var.name for x in P.walk_expr(e) if isinstance(x, P.Read)}


def _loads(e: P.Expr) -> bool:
    return any(isinstance(x, (P.Load, P.Atomic)) for x in P.walk_expr(e))
