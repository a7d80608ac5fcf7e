"""How one kernel's physical program maps onto CUDA launches (the GPU execution plan).

The plan is computed from the physical program alone and decides three things that the
PTX emitter and the manifest must agree on:

- the *entry ABI*: the flat ``.entry`` parameter list (``entry_args``);
- the *mapping*, one of
  ``grid``   every top-level ``parallel`` loop nest is a *phase*, run by one launch over
             all of its points (grid-stride, one point per thread and step). Code outside
             the parallel loops (extent reads, shape/broadcast/domain checks, scalar
             arithmetic, ``if`` versioning) is uniform: every thread of every launch
             replays it, so it needs no communication between threads or launches. This
             is only correct when that code stores nothing and loads nothing the kernel
             writes, which the planner checks;
  ``serial`` one thread runs the whole kernel in program order, parallel loops included
             (P5 lets the compiler serialise). Used when the kernel has no parallel loop,
             or when ordered top-level code writes memory or a parallel loop sits inside
             ordered control (``for``/``while``), where phases cannot be formed;
- the *launch sequence*: per phase, the grid as a formula over the entry arguments in the
  manifest's expression language (``formula``; docs/ptx-abi.md), and a fixed block.

Within a phase the outermost parallel loop and the ``point`` loops nested directly in it
(when their counts do not depend on the outer points and only pure assignments precede
them) are flattened into one index space in row-major order, so consecutive threads get
consecutive innermost points (coalesced accesses).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from intentc.kir.types import DType
from intentc.lower import program as P

BLOCK = 256  # threads per block in grid mapping (also the entry's .maxntid)
MAX_BLOCKS = 65535  # grid-stride beyond this many blocks
FALLBACK_BLOCKS = 1024  # grid when the point count has no formula (still correct: grid-stride)


@dataclass(frozen=True)
class EntryArg:
    """One parameter of the ``.entry``, in order."""

    name: str  # x, x.data, x.shape0, x.stride1, status, phase
    type: str  # ptr, i8 .. i64, u8 .. u64, f32, f64
    role: str  # value | data | shape | stride | status | phase
    param: str | None = None  # the kernel parameter it comes from
    axis: int | None = None

    @property
    def bytes(self) -> int:
        return 8 if self.type == "ptr" else int(self.type[1:]) // 8


@dataclass(frozen=True)
class Level:
    """One flattened loop of a grid nest: its ordinal loop and the pure assignments that
    precede the next level in its body (re-run for every point)."""

    loop: P.Loop
    prefix: tuple[P.Stmt, ...]


@dataclass(frozen=True)
class GridNest:
    phase: int
    levels: tuple[Level, ...]
    body: tuple[P.Stmt, ...]  # the innermost loop's body


@dataclass(frozen=True)
class Launch:
    grid: tuple  # int or formula string per dimension
    block: tuple[int, int, int]
    phase: int | None = None


@dataclass
class Plan:
    mapping: str  # grid | serial
    reason: str  # why serial ("" for grid)
    phases: int
    nests: dict  # id(parallel P.Loop) -> GridNest
    launches: list
    args: list

    def nest(self, loop: P.Loop) -> GridNest | None:
        return self.nests.get(id(loop))


def scalar_arg_type(dtype: DType) -> str:
    """How a scalar parameter travels by value (as in the C ABI: bool as u8, f16/bf16 as bits)."""
    if dtype.is_bool:
        return "u8"
    if dtype.name in ("f16", "bf16"):
        return "u16"
    if dtype.kind == "index":
        return "i64"
    if dtype.kind == "int":
        return f"i{dtype.bits}"
    if dtype.kind == "uint":
        return f"u{dtype.bits}"
    return dtype.name  # f32, f64


def entry_args(kernel: P.Kernel, phased: bool) -> list[EntryArg]:
    """The flat ``.entry`` parameter list: per tensor its data pointer, extents and strides
    (i64, in elements); scalars by value; then the status pointer and, for kernels with
    more than one phase, the phase number."""
    args = []
    for p in kernel.params:
        if isinstance(p, P.TensorSym):
            args.append(EntryArg(f"{p.name}.data", "ptr", "data", p.name))
            args += [EntryArg(f"{p.name}.shape{k}", "i64", "shape", p.name, k) for k in range(p.rank)]
            args += [EntryArg(f"{p.name}.stride{k}", "i64", "stride", p.name, k) for k in range(p.rank)]
        else:
            args.append(EntryArg(p.name, scalar_arg_type(p.dtype), "value", p.name))
    args.append(EntryArg("status", "ptr", "status"))
    if phased:
        args.append(EntryArg("phase", "i32", "phase"))
    return args


# ---- planning ------------------------------------------------------------------------------------
def plan_kernel(kernel: P.Kernel) -> Plan:
    serial_reason = _serial_reason(kernel)
    if serial_reason:
        launch = Launch((1, 1, 1), (1, 1, 1))
        return Plan("serial", serial_reason, 1, {}, [launch], entry_args(kernel, False))
    nests: dict = {}
    phases = _assign_phases(kernel.body, 0, nests)
    defs = _top_level_defs(kernel)
    scalars = {p.name for p in kernel.params if isinstance(p, P.Var) and p.dtype.kind in ("int", "index")}
    launches = []
    for phase in range(phases):
        totals = []
        for nest in nests.values():
            if nest.phase != phase:
                continue
            total = None
            for level in nest.levels:
                count = formula(level.loop.count, defs, scalars)
                total = None if count is None else count if total is None else (
                    None if total is None else f"mul({total}, {count})")
                if count is None:
                    break
            totals.append(total)
        grid = grid_formula(totals)
        launches.append(Launch((grid, 1, 1), (BLOCK, 1, 1), phase if phases > 1 else None))
    return Plan("grid", "", phases, nests, launches, entry_args(kernel, phases > 1))


def grid_formula(totals: list) -> object:
    """Blocks for a phase whose point count is ``max(totals)``; a constant when unknown."""
    if not totals or any(t is None for t in totals):
        return FALLBACK_BLOCKS
    unique = sorted(set(totals))
    total = unique[0]
    for other in unique[1:]:
        total = f"max({total}, {other})"
    return f"min(max(ceil_div({total}, {BLOCK}), 1), {MAX_BLOCKS})"


def _parallel_loops(stmts):
    return [s for s in P.walk_stmts(stmts) if isinstance(s, P.Loop) and s.kind == "parallel"]


def _serial_reason(kernel: P.Kernel) -> str:
    body = kernel.body
    if not _parallel_loops(body):
        return "the kernel has no parallel loop"
    outside = list(_outside(body))
    for s in outside:
        if isinstance(s, (P.Loop, P.While)) and _parallel_loops(s.body if isinstance(s, P.Loop)
                                                                else s.cond_body + s.body):
            return "a parallel loop is nested in ordered control"
        if isinstance(s, P.Store):
            return f"ordered code outside the parallel loops writes '{s.tensor.name}'"
    written = {s.tensor.name for s in P.walk_stmts(body) if isinstance(s, P.Store)}
    for name in sorted(_loaded(outside) & written):
        return f"ordered code outside the parallel loops reads '{name}', which the kernel writes"
    # Values computed inside one parallel loop exist only in its launch.
    inside_writes: dict = {}
    for loop in _parallel_loops(body):
        for s in P.walk_stmts((loop,)):
            if isinstance(s, (P.Assign, P.Loop)):
                inside_writes.setdefault(s.var, set()).add(id(loop))
    for var in sorted(_reads(outside) & set(inside_writes), key=lambda v: v.name):
        return f"'{var.name}' is computed inside a parallel loop and used after it"
    for loop in _parallel_loops(body):
        for var in _reads_in((loop,)):
            if var in inside_writes and id(loop) not in inside_writes[var]:
                return f"'{var.name}' is computed inside one parallel loop and used in another"
    return ""


def _outside(stmts):
    """Statements not inside a parallel loop (the parallel loops themselves excluded)."""
    for s in stmts:
        if isinstance(s, P.Loop) and s.kind == "parallel":
            continue
        yield s
        if isinstance(s, P.If):
            yield from _outside(s.then)
            yield from _outside(s.orelse)
        elif isinstance(s, P.Loop):
            yield from _outside(s.body)
        elif isinstance(s, P.While):
            yield from _outside(s.cond_body)
            yield from _outside(s.body)


def _stmt_exprs(s: P.Stmt) -> list[P.Expr]:
    if isinstance(s, P.Assign):
        return [s.value]
    if isinstance(s, P.Store):
        return [s.offset, s.value]
    if isinstance(s, P.If):
        return [s.cond]
    if isinstance(s, P.Loop):
        return [s.count]
    if isinstance(s, P.While):
        return [s.cond]
    if isinstance(s, P.Check):
        return [s.cond, *s.args]
    return []


def _nodes(e: P.Expr):
    found = []
    P.map_expr(e, lambda n: found.append(n) or n)
    return found


def _loaded(stmts) -> set:
    return {n.tensor.name for s in stmts for e in _stmt_exprs(s) for n in _nodes(e) if isinstance(n, P.Load)}


def _reads(stmts) -> set:
    return {n.var for s in stmts for e in _stmt_exprs(s) for n in _nodes(e) if isinstance(n, P.Read)}


def _reads_in(stmts) -> set:
    return _reads(list(P.walk_stmts(stmts)))


def _assign_phases(stmts, phase: int, nests: dict) -> int:
    """Number the top-level parallel loops in program order; the branches of an ``if``
    start from the same number (only one of them runs), so versioned copies of one loop
    share a phase. Returns the next free phase."""
    for s in stmts:
        if isinstance(s, P.Loop) and s.kind == "parallel":
            nests[id(s)] = _flatten(s, phase)
            phase += 1
        elif isinstance(s, P.If):
            phase = max(_assign_phases(s.then, phase, nests), _assign_phases(s.orelse, phase, nests))
    return phase


def _flatten(loop: P.Loop, phase: int) -> GridNest:
    levels = []
    bound: set = set()  # variables that vary with the points of the outer levels
    current = loop
    while True:
        body = current.body
        bound.add(current.var)
        inner = body[-1] if body else None
        prefix = body[:-1]
        can_nest = (isinstance(inner, P.Loop) and inner.kind in ("point", "parallel")
                    and all(isinstance(s, P.Assign) for s in prefix))
        if can_nest:
            bound |= {s.var for s in prefix}
            can_nest = not (_reads_expr(inner.count) & bound)
        if not can_nest:
            levels.append(Level(current, ()))
            return GridNest(phase, tuple(levels), body)
        levels.append(Level(current, tuple(prefix)))
        current = inner


def _reads_expr(e: P.Expr) -> set:
    return {n.var for n in _nodes(e) if isinstance(n, P.Read)}


def _top_level_defs(kernel: P.Kernel) -> dict:
    """Variables assigned exactly once in the kernel, directly in its body: their values
    may be substituted into launch formulas."""
    counts = Counter(s.var for s in P.walk_stmts(kernel.body) if isinstance(s, (P.Assign, P.Loop)))
    return {s.var: s.value for s in kernel.body if isinstance(s, P.Assign) and counts[s.var] == 1}


# ---- the formula language ---------------------------------------------------------------------------
_FORMULA_OPS = {"add": "add", "sub": "sub", "mul": "mul", "floordiv": "floor_div", "min": "min", "max": "max"}
_FORMULA_CMP = {"lt", "le", "gt", "ge", "eq", "ne"}


def formula(e: P.Expr, defs: dict, scalars: set, depth: int = 0) -> str | None:
    """``e`` (a signed 64-bit integer expression) as a formula over the entry arguments,
    or None when it depends on anything else (a float, a loaded value, an unsigned type)."""
    if depth > 64:
        return None
    if e.dtype.kind not in ("int", "index", "bool"):
        return None
    if isinstance(e, P.Const):
        return str(int(e.value))
    if isinstance(e, P.Field):
        return f"{e.tensor.name}.{e.kind}{e.axis}"
    if isinstance(e, P.Read):
        if e.var in defs:
            return formula(defs[e.var], defs, scalars, depth + 1)
        return e.var.name if e.var.name in scalars and e.var.dtype.kind in ("int", "index") else None
    if isinstance(e, P.Cast):
        inner = e.a.dtype
        if e.dtype.kind in ("int", "index") and e.dtype.bits == 64 and (
                inner.kind in ("int", "index") or (inner.kind == "uint" and inner.bits < 64)):
            return formula(e.a, defs, scalars, depth + 1)
        return None
    if isinstance(e, P.Binary) and e.op in _FORMULA_OPS and e.dtype.kind in ("int", "index"):
        a, b = formula(e.a, defs, scalars, depth + 1), formula(e.b, defs, scalars, depth + 1)
        if a is None or b is None:
            return None
        if e.op in ("add", "sub") and b == "0":
            return a
        if e.op == "add" and a == "0":
            return b
        if e.op == "mul" and b == "1":
            return a
        if e.op == "mul" and a == "1":
            return b
        return f"{_FORMULA_OPS[e.op]}({a}, {b})"
    if isinstance(e, P.Compare) and e.pred in _FORMULA_CMP and e.a.dtype.kind in ("int", "index"):
        a, b = formula(e.a, defs, scalars, depth + 1), formula(e.b, defs, scalars, depth + 1)
        return None if a is None or b is None else f"{e.pred}({a}, {b})"
    if isinstance(e, P.Select):
        parts = [formula(x, defs, scalars, depth + 1) for x in (e.cond, e.a, e.b)]
        return None if None in parts else f"select({parts[0]}, {parts[1]}, {parts[2]})"
    return None
