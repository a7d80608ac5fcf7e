"""How one kernel's physical program maps onto CUDA launches (the GPU execution plan).

The plan is computed from the physical program alone and decides what the PTX emitter
and the manifest must agree on:

- the *entry ABI*: the flat ``.entry`` parameter list (``entry_args``);
- *scratch*: each buffer the program allocates at the kernel's top level (``alloc``, e.g.
  the partial results of a blocked reduction) becomes a global buffer the host allocates
  per call, with its size as a formula over the entry arguments;
- the *phases*, one launch each, classifying the kernel's top-level statements:
  ``uniform`` code (extent reads, scalar arithmetic, shape/broadcast/domain checks,
             buffer shapes: it stores nothing and reads no memory the kernel writes) is
             replayed by every thread of every launch, so it needs no communication;
  ``grid``   each top-level ``parallel`` loop nest (also inside an ``if`` with a uniform
             condition, such as the unit-stride versions) is a phase run across the
             grid: a grid-stride loop over its points, one point per thread and step;
  ``single`` ordered top-level code with memory effects between the grid phases (the
             combine step of a reduction, a serial scan of block sums) is a phase run by
             one thread.
  Phases communicate only through memory (a launch boundary orders them). When that is
  not enough — a value computed inside a parallel loop is used by another launch, a
  parallel loop sits inside ordered control, or a buffer's size is known only to the
  kernel — the whole kernel runs on one thread: the ``serial`` mapping (P5 lets the
  compiler serialise). A kernel limited only by parallel loops inside ordered control
  runs on one block instead (the ``block`` mapping, ``gpu_blocks.block_program_ok``):
  the ordered control on every thread, each parallel loop spread over the block.

Cooperative blocks (``gpu_blocks.py``): a grid phase whose points each hold a large
reduction (a fold) runs one block per point (launch kind ``blocks``: the block-stride
loop over the points, each point's fold a block-wide tree), and a one-launch phase that
holds a fold runs on one whole block (kind ``block``) instead of one thread. A value
computed by one-thread or one-block code and used by a later launch travels through
the ``carried`` scratch buffer (8 bytes per value): the code that computes it stores it
there, the launches that use it load it first.

Within a grid phase the outermost parallel loop and the ``point`` loops nested directly in
it (when their counts do not depend on the outer points and only pure assignments
precede them) are flattened into one index space in row-major order, so consecutive
threads get consecutive innermost points (coalesced accesses).
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from intentc.codegen import gpu_blocks, gpu_contract
from intentc.kir.types import INDEX, DType
from intentc.lower import program as P
from intentc.lower.names import NameSupply

BLOCK = 256  # threads per block in grid phases (also the entry's .maxntid)
MAX_BLOCKS = 65535  # grid-stride beyond this many blocks
FALLBACK_BLOCKS = 1024  # grid when the point count has no formula (still correct: grid-stride)
SCRATCH_ALIGN = 256


@dataclass(frozen=True)
class EntryArg:
    """One parameter of the ``.entry``, in order."""

    name: str  # x, x.data, x.shape0, x.stride1, status, phase
    type: str  # ptr, i8 .. i64, u8 .. u64, f32, f64
    role: str  # value | data | shape | stride | status | scratch | phase
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
    region: gpu_blocks.Region | None = None  # one block per point: the body as a block region


@dataclass(frozen=True)
class Launch:
    grid: tuple  # int or formula string per dimension
    block: tuple[int, int, int]
    phase: int | None = None
    kind: str = "grid"  # grid | blocks (one block per point) | single (one thread) | block (one block)
    #                     | tiles (a contraction: one block per tile of C, gpu_contract.py)
    points: object = None  # blocks: the number of points (tiles), a formula; block: 1
    tiles: object = None  # tiles: the gpu_contract.TileConfig


@dataclass(frozen=True)
class Scratch:
    tensor: P.TensorSym
    arg: str  # the entry argument carrying its address
    bytes: object  # int or formula


@dataclass
class Plan:
    mapping: str  # grid | block (the whole kernel on one block) | serial (on one thread)
    reason: str  # what limits a block or serial kernel ("" for grid)
    phases: int
    nests: dict  # id(parallel P.Loop) -> GridNest
    launches: list
    args: list
    scratch: list  # Scratch, in order of allocation
    single: dict  # id(top-level statement) -> phase, for the one-thread statements
    single_regions: dict = None  # phase -> gpu_blocks.Region, for phases run by one block
    carried: dict = None  # Var -> its slot in the carried-values scratch buffer
    carry_tensor: P.TensorSym | None = None
    tiles: dict = None  # id(top-level contract_tiles TileNest) -> (phase, gpu_contract.TileConfig)

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


def entry_args(kernel: P.Kernel, scratch: list, phased: bool) -> list[EntryArg]:
    """The flat ``.entry`` parameter list: per tensor its data pointer, extents and strides
    (i64, in elements); scalars by value; the status pointer; a pointer per scratch buffer;
    for kernels with more than one phase, the phase number."""
    args = []
    for p in kernel.params:
        if isinstance(p, P.TensorSym):
            args.append(EntryArg(f"{p.name}.data", "ptr", "data", p.name))
            args += [EntryArg(f"{p.name}.shape{k}", "i64", "shape", p.name, k) for k in range(p.rank)]
            args += [EntryArg(f"{p.name}.stride{k}", "i64", "stride", p.name, k) for k in range(p.rank)]
        else:
            args.append(EntryArg(p.name, scalar_arg_type(p.dtype), "value", p.name))
    args.append(EntryArg("status", "ptr", "status"))
    args += [EntryArg(s.arg, "ptr", "scratch") for s in scratch]
    if phased:
        args.append(EntryArg("phase", "i32", "phase"))
    return args


# ---- planning ------------------------------------------------------------------------------------
def plan_kernel(kernel: P.Kernel) -> Plan:
    defs = _top_level_defs(kernel)
    scalars = {p.name for p in kernel.params if isinstance(p, P.Var) and p.dtype.kind in ("int", "index")}
    scratch = _scratch(kernel, defs, scalars)
    kinds, reason, crossing = _classify(kernel, {x.tensor.name for x in scratch})
    if reason:
        if reason.startswith("a parallel loop is nested") and gpu_blocks.block_program_ok(
                kernel.body, {x.tensor.name for x in scratch}):
            # The whole kernel on one block: its parallel loops spread over the block's threads.
            launch = Launch((1, 1, 1), (gpu_blocks.LANES, 1, 1), None, "block", 1)
            return Plan("block", reason, 1, {}, [launch], entry_args(kernel, scratch, False), scratch, {}, {}, {})
        launch = Launch((1, 1, 1), (1, 1, 1), None, "single")
        return Plan("serial", reason, 1, {}, [launch], entry_args(kernel, scratch, False), scratch, {}, {}, {})
    carried, carry_tensor = {}, None
    if crossing:
        # a name the kernel does not hold (parameters, buffers, variables): lower/names.py
        carry_tensor = P.TensorSym(NameSupply.of_kernel(kernel).fresh("carried", INDEX).name, INDEX, 1, True, "heap")
        carried = {var: k for k, var in enumerate(sorted(crossing, key=lambda v: v.name))}
        scratch = scratch + [Scratch(carry_tensor, f"{carry_tensor.name}.data", 8 * len(carried))]
    nests: dict = {}
    single: dict = {}
    tiles: dict = {}
    phases: list[str] = []  # the kind of each phase
    known = gpu_blocks.known_extents(kernel)
    for s, kind in zip(kernel.body, kinds):
        if kind == "tiles":
            tiles[id(s)] = (len(phases), gpu_contract.tile_config(kernel, s))
            phases.append("tiles")
        elif kind == "grid":
            _assign_phases((s,), len(phases), nests, known)
            phases.append("grid")
        elif kind == "single":
            if not phases or phases[-1] != "single":
                phases.append("single")
            single[id(s)] = len(phases) - 1
    # Cooperative blocks: a grid phase all of whose nests have a block region; a single
    # phase whose statements together are one.
    for phase, kind in enumerate(phases):
        mine = [key for key, nest in nests.items() if nest.phase == phase]
        if kind == "grid" and mine and all(nests[key].region is not None for key in mine):
            phases[phase] = "blocks"
        elif kind == "grid":
            for key in mine:
                nests[key] = GridNest(nests[key].phase, nests[key].levels, nests[key].body, None)
    single_regions: dict = {}
    for phase, kind in enumerate(phases):
        if kind == "single":
            region = gpu_blocks.plan_region([s for s in kernel.body if single.get(id(s)) == phase])
            if gpu_blocks.worth_a_block(region, known):
                single_regions[phase] = region
                phases[phase] = "block"
    launches = []
    for phase, kind in enumerate(phases):
        number = phase if len(phases) > 1 else None
        if kind == "single":
            launches.append(Launch((1, 1, 1), (1, 1, 1), number, "single"))
            continue
        if kind == "block":
            launches.append(Launch((1, 1, 1), (gpu_blocks.LANES, 1, 1), number, "block", 1))
            continue
        if kind == "tiles":
            s, config = next((s, tiles[id(s)][1]) for s in kernel.body if tiles.get(id(s), (None,))[0] == phase)
            count = _tile_count(s, config, defs, scalars)
            launches.append(Launch((blocks_formula([count]), 1, 1), (gpu_contract.THREADS, 1, 1), number, "tiles",
                                   count, config))
            continue
        totals = []
        for nest in nests.values():
            if nest.phase == phase:
                totals.append(_points(nest, defs, scalars))
        if kind == "blocks":
            launches.append(Launch((blocks_formula(totals), 1, 1), (gpu_blocks.LANES, 1, 1), number, "blocks",
                                   _max_formula(totals)))
        else:
            launches.append(Launch((grid_formula(totals), 1, 1), (BLOCK, 1, 1), number))
    return Plan("grid", "", len(phases), nests, launches, entry_args(kernel, scratch, len(phases) > 1), scratch,
                single, single_regions, carried, carry_tensor, tiles)


def _tile_count(nest: P.TileNest, config, defs, scalars):
    """``batch · ⌈m / BM⌉ · ⌈n / BN⌉``, the tiles of C, as a formula (None when unknown)."""
    batch, m, n, _k = (formula(x, defs, scalars) for x in nest.scalars)
    if None in (batch, m, n):
        return None
    return f"mul(mul({batch}, ceil_div({m}, {config.bm})), ceil_div({n}, {config.bn}))"


def _max_formula(totals: list) -> object:
    """``max(totals)`` as a formula, or None when a count has none."""
    if not totals or any(t is None for t in totals):
        return None
    unique = sorted(set(totals))
    total = unique[0]
    for other in unique[1:]:
        total = f"max({total}, {other})"
    return total


def blocks_formula(totals: list) -> object:
    """Blocks for a phase of one block per point (block-stride beyond MAX_BLOCKS)."""
    total = _max_formula(totals)
    return FALLBACK_BLOCKS if total is None else f"min(max({total}, 1), {MAX_BLOCKS})"


def _points(nest, defs, scalars):
    total = None
    for level in nest.levels:
        count = formula(level.loop.count, defs, scalars)
        if count is None:
            return None
        total = count if total is None else f"mul({total}, {count})"
    return total


def grid_formula(totals: list) -> object:
    """Blocks for a phase whose point count is ``max(totals)``; a constant when unknown."""
    total = _max_formula(totals)
    return FALLBACK_BLOCKS if total is None else f"min(max(ceil_div({total}, {BLOCK}), 1), {MAX_BLOCKS})"


def _scratch(kernel: P.Kernel, defs: dict, scalars: set) -> list:
    """Buffers allocated once, at the kernel's top level, with a size the host can compute
    from the arguments: scratch memory the caller provides. Every other buffer comes from
    the device heap (``malloc`` in the thread that needs it)."""
    counts = Counter(s.tensor.name for s in P.walk_stmts(kernel.body) if isinstance(s, P.Alloc))
    out = []
    for s in kernel.body:
        if not isinstance(s, P.Alloc) or counts[s.tensor.name] != 1:
            continue
        size = str(s.tensor.dtype.itemsize)
        for extent in s.extents:
            value = formula(extent, defs, scalars)
            if value is None:
                break
            size = f"mul({size}, max({value}, 0))"
        else:
            out.append(Scratch(s.tensor, f"{s.tensor.name}.data", size))
    return out


def uses_heap(kernel: P.Kernel, scratch: list) -> bool:
    names = {x.tensor.name for x in scratch}
    return any(isinstance(s, P.Alloc) and s.tensor.name not in names for s in P.walk_stmts(kernel.body))


def _parallel_loops(stmts):
    return [s for s in P.walk_stmts(stmts) if isinstance(s, P.Loop) and s.kind == "parallel"]


def _classify(kernel: P.Kernel, scratch: set) -> tuple[list, str, set]:
    """The kind of each top-level statement (uniform, grid or single) and the variables
    that one-thread code computes for later launches; or why the kernel must run on one
    thread."""
    body = kernel.body
    if not _parallel_loops(body):
        return [], "the kernel has no parallel loop", set()
    grid_loops = _parallel_loops(body)
    inside = {id(x) for loop in grid_loops for x in P.walk_stmts((loop,))}
    for i, top in enumerate(body):
        for s in P.walk_stmts((top,)):
            if isinstance(s, P.Alloc) and s.tensor.name not in scratch and id(s) not in inside:
                # A heap buffer lives in one thread's registers: it cannot be shared by launches.
                return [], (f"a buffer whose size the kernel computes{where(body, i)} is allocated outside the "
                            f"parallel loops, so the launches cannot share it"), set()
    written = {s.tensor.name for s in P.walk_stmts(body) if isinstance(s, P.Store)} | {
        s.tensors[2].name for s in P.walk_stmts(body) if isinstance(s, P.TileNest)}  # a tile nest writes C
    kinds = []
    single_vars: set = set()
    for i, s in enumerate(body):
        if isinstance(s, P.TileNest) and s.kind == "contract_tiles":
            kinds.append("tiles")  # a launch of its own (gpu_contract.py)
            continue
        if _parallel_loops((s,)):
            if not _is_grid(s, written, single_vars):
                construct = "an ordered loop" if isinstance(s, (P.Loop, P.While)) else "a branch on a computed value"
                return [], (f"a parallel loop is nested in {construct}{where(body, i)}: each iteration would need "
                            f"launches of its own"), set()
            kinds.append("grid")
            continue
        inner = list(P.walk_stmts((s,)))
        if any(isinstance(x, P.Store) for x in inner) or _loaded(inner) & written or _reads(inner) & single_vars:
            single_vars |= {x.var for x in inner if isinstance(x, (P.Assign, P.Loop))}
            kinds.append("single")
        else:
            kinds.append("uniform")
    # The launch each statement runs in: grid statements their own, consecutive single
    # statements (with only uniform code between them) one together, uniform code all.
    units, group = [], 0
    for i, kind in enumerate(kinds):
        if kind in ("grid", "tiles"):
            units.append(("grid", i))
            group += 1
        elif kind == "single":
            units.append(("single", group))
        else:
            units.append(None)
    # Registers do not survive a launch: a value computed by grid or single code may only
    # be used in the same launch.
    owners: dict = {}
    for s, unit in zip(body, units):
        if unit is not None:
            for x in P.walk_stmts((s,)):
                if isinstance(x, (P.Assign, P.Loop)):
                    owners.setdefault(x.var, set()).add(unit)
    # A value that ordered code computes (in one launch) may be carried to later launches
    # through scratch memory; one computed per point of a parallel loop may not.
    crossing = set()
    for i, (s, unit) in enumerate(zip(body, units)):
        for var in _reads(list(P.walk_stmts((s,)))):
            if var in owners and owners[var] != {unit}:
                (owner,) = owners[var] if len(owners[var]) == 1 else (None,)
                if owner is None or owner[0] != "single":
                    return [], (f"a value computed inside a parallel loop is used by a later statement"
                                f"{where(body, i)}, which runs in another launch"), set()
                crossing.add(var)
    return kinds, "", crossing


_AT = re.compile(r"\(at ([^()]*:\d+:\d+)\)")


def where(body, index: int) -> str:
    """Where the top-level statement ``index`` comes from in the source, as the located
    checks the lowering put just before it (the source position of the statement it
    belongs to) and inside it (of what it calls): `` (after FILE:LINE:COL, near …)``, or ""
    (the physical program keeps no spans of its own)."""
    parts = []
    for s in reversed(body[:index]):
        if isinstance(s, P.Check) and _AT.search(s.message):
            parts.append(f"after {_AT.search(s.message).group(1)}")
            break
    for s in P.walk_stmts((body[index],)):
        if isinstance(s, P.Check) and _AT.search(s.message):
            parts.append(f"near {_AT.search(s.message).group(1)}")
            break
    return f" ({', '.join(parts)})" if parts else ""


def _is_grid(s: P.Stmt, written: set, single_vars: set) -> bool:
    """A parallel loop, or an ``if`` on a uniform condition whose branches hold only grid
    statements and uniform code."""
    if isinstance(s, P.Loop) and s.kind == "parallel":
        return True
    if not isinstance(s, P.If):
        return False
    nodes = P.walk_expr(s.cond)
    if any(isinstance(n, P.Load) and n.tensor.name in written for n in nodes) or _reads_expr(s.cond) & single_vars:
        return False
    for t in s.then + s.orelse:
        if _parallel_loops((t,)):
            if not _is_grid(t, written, single_vars):
                return False
        else:
            inner = list(P.walk_stmts((t,)))
            if any(isinstance(x, (P.Store, P.Alloc)) for x in inner) or _loaded(inner) & written:
                return False
    return True


def _loaded(stmts) -> set:
    return {n.tensor.name for s in stmts for e in P.stmt_exprs(s) for n in P.walk_expr(e) if isinstance(n, P.Load)}


def _reads(stmts) -> set:
    return {n.var for s in stmts for e in P.stmt_exprs(s) for n in P.walk_expr(e) if isinstance(n, P.Read)}


def _assign_phases(stmts, phase: int, nests: dict, known: dict) -> int:
    """Number the top-level parallel loops in program order; the branches of an ``if``
    start from the same number (only one of them runs), so versioned copies of one loop
    share a phase. Returns the next free phase."""
    for s in stmts:
        if isinstance(s, P.Loop) and s.kind == "parallel":
            nests[id(s)] = _flatten(s, phase, known)
            phase += 1
        elif isinstance(s, P.If):
            phase = max(_assign_phases(s.then, phase, nests, known), _assign_phases(s.orelse, phase, nests, known))
    return phase


def _flatten(loop: P.Loop, phase: int, known: dict) -> GridNest:
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
            region = gpu_blocks.plan_region(body)
            return GridNest(phase, tuple(levels), body, region if gpu_blocks.worth_a_block(region, known) else None)
        levels.append(Level(current, tuple(prefix)))
        current = inner


def _reads_expr(e: P.Expr) -> set:
    return {n.var for n in P.walk_expr(e) if isinstance(n, P.Read)}


def _top_level_defs(kernel: P.Kernel) -> dict:
    """What launch formulas may substitute: variables assigned exactly once in the kernel,
    directly in its body; the extents and strides of buffers allocated once there
    (row-major); and which tensors are parameters."""
    counts = Counter(s.var for s in P.walk_stmts(kernel.body) if isinstance(s, (P.Assign, P.Loop)))
    defs: dict = {s.var: s.value for s in kernel.body if isinstance(s, P.Assign) and counts[s.var] == 1}
    allocs = Counter(s.tensor.name for s in P.walk_stmts(kernel.body) if isinstance(s, P.Alloc))
    for s in kernel.body:
        if isinstance(s, P.Alloc) and allocs[s.tensor.name] == 1:
            stride: P.Expr = P.Const(INDEX, 1)
            for axis in reversed(range(len(s.extents))):
                defs[("field", s.tensor.name, "shape", axis)] = s.extents[axis]
                defs[("field", s.tensor.name, "stride", axis)] = stride
                stride = P.Binary(INDEX, "mul", stride, s.extents[axis])
    defs["params"] = {p.name for p in kernel.params if isinstance(p, P.TensorSym)}
    return defs


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
        key = ("field", e.tensor.name, e.kind, e.axis)
        if key in defs:
            return formula(defs[key], defs, scalars, depth + 1)
        return f"{e.tensor.name}.{e.kind}{e.axis}" if e.tensor.name in defs.get("params", ()) else None
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
