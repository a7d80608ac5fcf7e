"""Choose how thread tasks split each parallel loop, from the problem size only.

Before: ``parallel`` loops have no grain.
After: each ``parallel`` loop without a grain gets ``grain = max(1, POINTS_PER_TASK //
inner)``, where ``inner`` estimates the work of one point: the product of the counts of
the loops nested in it, as known before the loop starts (``point`` loops, a per-point fold
over a row, ...): a count that grows with an enclosing loop's variable is taken at that
variable's largest value, and one known only inside the point counts ``UNKNOWN_TRIPS``, so
points whose work is ordered loops are still spread over threads. A grain set earlier (e.g. 1 for loops over blocks)
is kept. The grain never depends on the thread count, so the work each task does, and
therefore every result, is the same for any ``INTENT_NUM_THREADS`` (P5).

With a remark sink it says, for each parallel loop, over what it is threaded and in tasks of
how many points (or why it is one task), and for each ordered loop outside one that it is not
threaded and what it carries.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import replace

from intentc.kir.types import INDEX
from intentc.lower import program as P
from intentc.lower.remark_terms import Terms

POINTS_PER_TASK = 1 << 15
# The trips assumed for a nested loop whose count is known only inside the point (a loop over
# a ragged row, a while loop's body): enough that such points are spread over threads.
UNKNOWN_TRIPS = 64


def run(program: P.Program, remarks=None) -> P.Program:
    kernels = tuple(replace(k, body=_stmts(k.body)) for k in program.kernels)
    if remarks is not None:
        for kernel in kernels:
            _remark_kernel(kernel, remarks)
    return replace(program, kernels=kernels)


def _stmts(stmts):
    return tuple(_stmt(s) for s in stmts)


def _stmt(s: P.Stmt) -> P.Stmt:
    if isinstance(s, P.Loop):
        body = _stmts(s.body)
        if s.kind == "parallel" and s.grain is None:
            inner = _inner_points(body, loop_var=s.var)
            grain = P.Binary(INDEX, "max", P.Const(INDEX, 1),
                             P.Binary(INDEX, "floordiv", P.Const(INDEX, POINTS_PER_TASK),
                                      P.Binary(INDEX, "max", P.Const(INDEX, 1), inner)))
            return replace(s, body=body, grain=grain)
        return replace(s, body=body)
    if isinstance(s, P.If):
        return replace(s, then=_stmts(s.then), orelse=_stmts(s.orelse))
    if isinstance(s, P.While):
        return replace(s, cond_body=_stmts(s.cond_body), body=_stmts(s.body))
    return s


def _inner_points(body, assigned: set | None = None, defs: dict | None = None, loop_var=None,
                  once: set | None = None, nested: bool = False) -> P.Expr:
    """The product of the counts of the point loops directly nested in a parallel body.

    The grain is computed before the loop runs, so a count that reads a variable the body
    assigns (a nested domain built inside the body) is not known there and is left out,
    unless the body assigns that variable once, at the top level of the body or of a loop
    nested in it, from values known outside without loading anything (an extent copied
    or offset, as a row view's ``n = sub(C, 0)``, or the segment length of a region scan
    inside an ordered loop): then its definition stands in for it. A loop inside another
    loop counts at least 1 (an iteration of the outer loop is work even when the inner
    loop is empty, as the interleaved part of a short region scan)."""
    if assigned is None:
        targets = Counter(s.var for s in P.walk_stmts(body) if isinstance(s, (P.Assign, P.Loop)))
        assigned = set(targets) | {loop_var}
        once = {v for v, n in targets.items() if n == 1}
        defs = {}
    defs = dict(defs)
    for s in body:
        if isinstance(s, P.Assign) and s.var in once:
            value = _known_outside(s.value, assigned, defs)
            if value is not None:
                defs[s.var] = value
    for s in body:
        if isinstance(s, P.Loop):  # point loops, and per-point folds whose count is known outside
            count = _known_outside(s.count, assigned, defs)
            if count is None:  # depends on the data (or on what the body computes): a guess
                count = P.Const(INDEX, UNKNOWN_TRIPS)
            if nested:
                count = P.Binary(INDEX, "max", P.Const(INDEX, 1), count)
            # Inside, the loop's variable is at most count - 1: a count that grows with it (a
            # causal loop over t2 <= t) is estimated at its largest.
            inner_defs = dict(defs)
            if s.var in once:
                inner_defs[s.var] = P.Binary(INDEX, "sub", count, P.Const(INDEX, 1))
            return P.Binary(INDEX, "mul", count, _inner_points(s.body, assigned, inner_defs, once=once, nested=True))
    return P.Const(INDEX, 1)


def _known_outside(e: P.Expr, assigned: set, defs: dict) -> P.Expr | None:
    """``e`` with ``defs`` substituted, or None when it loads or reads another assigned variable."""
    reads: set = set()
    loads: list = []
    P.map_expr(e, lambda x: (reads.add(x.var) if isinstance(x, P.Read) else
                             loads.append(x) if isinstance(x, P.Load) else None) or x)
    if loads or any(v in assigned and v not in defs for v in reads):
        return None
    return P.map_expr(e, lambda x: defs[x.var] if isinstance(x, P.Read) and x.var in defs else x)


# ---- remarks ----------------------------------------------------------------------------------
def _remark_kernel(kernel: P.Kernel, remarks) -> None:
    terms = Terms(kernel, remarks.user_names.get(kernel.name, set()))

    def visit(stmts, inside_parallel: bool):
        for s in stmts:
            if isinstance(s, P.Loop) and s.kind == "parallel":
                _remark_parallel(kernel, s, terms, remarks)
            elif isinstance(s, P.Loop) and s.kind == "serial" and not inside_parallel:
                origin = remarks.origin(kernel.name, s.var.name)
                if origin is not None and origin.construct == "for":
                    carried = f"; it carries {', '.join(origin.carries)} from one iteration to the next" \
                        if origin.carries else ""
                    remarks.add("missed", "schedule_parallel", kernel.name, origin.span,
                                f"not threaded: {origin.describe()} runs its iterations one after the other "
                                f"(O2){carried}; an I.parallel loop inside it is threaded per iteration")
            for block in P.stmt_blocks(s):
                visit(block, inside_parallel or (isinstance(s, P.Loop) and s.kind in ("parallel", "point")))

    visit(kernel.body, False)


def _remark_parallel(kernel: P.Kernel, loop: P.Loop, terms: Terms, remarks) -> None:
    origin = remarks.origin(kernel.name, loop.var.name)
    what = origin.describe() if origin is not None else "a parallel loop the compiler made"
    span = origin.span if origin is not None else None
    count_text = terms.text(loop.count, count=True)
    points = f"its {count_text} points" if count_text else "its points"
    count, grain = terms.value(loop.count), terms.value(loop.grain)
    inner = _inner_points(loop.body, loop_var=loop.var)
    inner_value, inner_text = terms.value(inner), terms.text(inner, count=True)
    work = "" if inner_value == 1 else \
        f" (a point's work is estimated at {inner_text or 'a run-time number of'} inner iterations, from the loops " \
        f"nested in it; a count known only inside a point counts {UNKNOWN_TRIPS})"
    if grain is not None and count is not None:
        tasks = -(-count // grain) if count > 0 else 0
        if tasks <= 1:
            remarks.add("missed", "schedule_parallel", kernel.name, span,
                        f"not threaded: {what} has {count} point{'s' if count != 1 else ''}, which is one task "
                        f"of up to {grain} points{work}; a task is about {POINTS_PER_TASK} points of work")
        else:
            remarks.add("applied", "schedule_parallel", kernel.name, span,
                        f"threaded: {what} runs its {count} points as {tasks} thread tasks of {grain} points{work}")
        return
    if grain is not None:
        per_task = ", one per task (each point is a block of work)" if grain == 1 else \
            f" in tasks of {grain} points{work}"
        single = "" if grain == 1 else \
            f"; while {count_text or 'their number'} <= {grain} it is one task, run by one thread"
        remarks.add("applied", "schedule_parallel", kernel.name, span,
                    f"threaded: {what} runs {points}{per_task}{single}")
        return
    grain_text = terms.text(loop.grain, count=True)
    if count is not None and count > 0 and inner_text:
        single = f"; while {inner_text} <= {POINTS_PER_TASK // count} its {count} points are one task, run by one " \
                 f"thread (their estimated work is below a task's {POINTS_PER_TASK})"
    elif count_text and inner_text:
        single = f"; while {count_text} * ({inner_text}) <= {POINTS_PER_TASK} it is one task, run by one thread"
    else:
        single = ""
    remarks.add("applied", "schedule_parallel", kernel.name, span,
                f"threaded: {what} runs {points} in tasks of {grain_text or 'a run-time number of'} points{work}"
                f"{single}")
