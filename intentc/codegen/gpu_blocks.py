"""Which parts of a kernel run as cooperative thread blocks on the GPU (part of the GPU
execution plan, ``gpu_launch.py``).

A *block region* is a statement list that every thread of one block runs together: the
body of one point of a top-level parallel nest (one block per point), or the ordered code
of a one-launch phase (one block). Inside it

- a **fold** (a serial loop whose only effect is ``acc = op(acc, f(t))`` with ``op`` a
  reduction's combine, marked ``fast``: associative and commutative, T1/R1) is computed
  cooperatively: ``LANES`` virtual lanes, lane ``L`` folding the elements ``L, L + LANES,
  L + 2·LANES, …`` in order (consecutive threads read consecutive elements), then a fixed
  tree ``s[L] = s[L] ⊕ s[L + h]`` for ``h = LANES/2, …, 1`` (shared memory and
  ``bar.sync`` for ``h ≥ 32``, warp shuffles below), then ``acc = acc_before ⊕ s[0]``. The
  lanes are virtual: a block launched with fewer threads runs several lanes per thread,
  so the bits depend on the problem size only, never on the grid or the block actually
  launched;
- a ``point``/``parallel`` loop is *spread* over the block's threads (thread ``k`` runs the
  iterations ``k, k + ntid, …``), and so is an ordered loop whose iterations are
  independent (``independent_iterations``: a row written element by element);
- a store outside those is done by thread 0;
- everything else (scalar code, checks, pure loops) is *replicated*: every thread
  computes the same values, so control stays uniform across the block and every thread
  reaches every barrier.

A region is refused (the plan keeps one thread per point, or one thread for the phase)
when a statement would break that: a buffer allocation, an atomic or a store in
replicated code, a check inside a spread loop (a thread returning early would leave the
others waiting at the next barrier).

A point's fold is cooperative when its work is large: its count is not known at compile
time to be below ``MIN_FOLD`` (a literal, or a literal extent of the signature, which the
entry checks; counts known only at run time are taken as large, since a block that
finds a short row only idles some lanes); with only small folds the nest keeps one
thread per point (per-thread loops).
"""
from __future__ import annotations

from dataclasses import dataclass

from intentc.lower import program as P

LANES = 256  # virtual lanes of a cooperative fold (also the block size of cooperative launches)
WARP = 32
SHARED_SLOTS = LANES + 2  # 8-byte slots of block-shared memory: one per lane, the result, the status flag
MIN_FOLD = 256  # a fold over fewer (literal) members stays a per-thread loop
FOLD_OPS = ("add", "mul", "max", "min", "and", "or", "xor")

REPLICATE, FOLD, SPREAD, STORE = "replicate", "fold", "spread", "store"


@dataclass(frozen=True)
class Fold:
    """``acc = op(acc, value)`` once per iteration of ``loop`` (``update`` is the statement
    that computes ``op(acc, value)`` into ``temp``)."""

    loop: P.Loop
    acc: P.Var
    temp: P.Var
    op: str


@dataclass(frozen=True)
class Region:
    stmts: tuple[P.Stmt, ...]
    kinds: tuple[str, ...]  # per statement: replicate | fold | spread | store
    folds: dict  # id(loop) -> Fold


def match_fold(s: P.Stmt) -> Fold | None:
    """``s`` as a cooperative fold, or None."""
    if not (isinstance(s, P.Loop) and s.kind == "serial") or len(s.body) < 2:
        return None
    if not all(isinstance(x, P.Assign) for x in s.body):
        return None
    update, carry = s.body[-2], s.body[-1]
    acc, temp = carry.var, update.var
    if not isinstance(carry.value, P.Read) or carry.value.var != temp or acc == temp:
        return None
    e = update.value
    if not (isinstance(e, P.Binary) and e.fast and e.op in FOLD_OPS) or isinstance(acc.dtype, P.VectorType):
        return None
    if e.dtype != acc.dtype or temp.dtype != acc.dtype:
        return None
    if e.a == P.read(acc):
        other = e.b
    elif e.b == P.read(acc):
        other = e.a
    else:
        return None
    if acc in _reads_expr(other) or acc.dtype.kind not in ("float", "bfloat", "int", "uint", "index", "bool"):
        return None
    if acc.dtype.kind in ("float", "bfloat") and e.op not in ("add", "mul", "max", "min"):
        return None
    for x in s.body[:-2]:
        if x.var in (acc, temp) or acc in _reads_expr(x.value) or temp in _reads_expr(x.value):
            return None
    if any(isinstance(n, P.Atomic) for x in s.body for n in P.walk_expr(x.value)):
        return None
    return Fold(s, acc, temp, e.op)


def is_large(fold: Fold, known: dict) -> bool:
    count = static_value(fold.loop.count, known)
    return count is None or count >= MIN_FOLD


def static_value(e: P.Expr, known: dict) -> int | None:
    """``e``'s value when the compiler knows it: a literal, or a variable in ``known``."""
    if isinstance(e, P.Const) and e.dtype.kind in ("int", "index"):
        return int(e.value)
    if isinstance(e, P.Read):
        return known.get(e.var)
    return None


def known_extents(kernel: P.Kernel) -> dict:
    """Variables of a kernel's top level with a value known at compile time: assigned once a
    known value, or checked equal to a literal (a literal extent of the signature: the call
    fails unless it holds)."""
    counts: dict = {}
    for s in P.walk_stmts(kernel.body):
        if isinstance(s, (P.Assign, P.Loop)):
            counts[s.var] = counts.get(s.var, 0) + 1
    known: dict = {}
    for s in kernel.body:
        if isinstance(s, P.Assign) and counts[s.var] == 1:
            value = static_value(s.value, known)
            if value is not None:
                known[s.var] = value
        elif isinstance(s, P.Check) and isinstance(s.cond, P.Compare) and s.cond.pred == "eq":
            a, b = s.cond.a, s.cond.b
            for var_side, const_side in ((a, b), (b, a)):
                if isinstance(var_side, P.Read) and counts.get(var_side.var) == 1 and \
                        static_value(const_side, known) is not None:
                    known[var_side.var] = static_value(const_side, known)
    return known


def plan_region(stmts) -> Region | None:
    """The block region of ``stmts``, or None when it cannot run cooperatively."""
    kinds, folds = [], {}
    for s in stmts:
        fold = match_fold(s)
        if fold is not None:
            # The loop's own variables are private to it: nothing after it may read them.
            folds[id(s)] = fold
            kinds.append(FOLD)
            continue
        inner = list(P.walk_stmts((s,)))
        if any(isinstance(x, P.Alloc) for x in inner):
            return None
        if isinstance(s, P.Store):
            if _has_atomic((s,)):
                return None
            kinds.append(STORE)
        elif isinstance(s, P.Loop) and s.kind in ("point", "parallel"):
            if any(isinstance(x, P.Check) for x in inner):
                return None
            kinds.append(SPREAD)
        elif independent_iterations(s):
            kinds.append(SPREAD)
        else:
            if any(isinstance(x, P.Store) for x in inner) or _has_atomic((s,)):
                return None
            kinds.append(REPLICATE)
    if not folds:
        return None
    # The private variables of a fold or a spread loop (its index, the temporaries of its
    # body) live in one thread: nothing after it may read them.
    for i, (s, kind) in enumerate(zip(stmts, kinds)):
        if kind in (FOLD, SPREAD):
            private = {x.var for x in P.walk_stmts((s,)) if isinstance(x, (P.Assign, P.Loop))}
            if kind == FOLD:
                private.discard(folds[id(s)].acc)
            if private & _reads(stmts[i + 1:]):
                return None
    return Region(tuple(stmts), tuple(kinds), folds)


def independent_iterations(s: P.Stmt) -> bool:
    """An ordered loop whose iterations do not depend on each other, so that running them
    spread over threads gives what running them in order gives: straight-line assignments
    and stores, no value carried from one iteration to the next, every store at an offset
    that differs for every iteration (the index times a stride or 1, plus terms that do
    not change in the loop: a written tensor's stride is never 0 on an axis the loop
    visits twice), and the written tensors read only at the element the iteration writes."""
    if not (isinstance(s, P.Loop) and s.kind == "serial") or not s.body:
        return False
    if not all(isinstance(x, (P.Assign, P.Store)) for x in s.body) or _has_atomic(s.body):
        return False
    local = {x.var for x in s.body if isinstance(x, P.Assign)}
    index = {s.var}  # the loop index and its copies
    assigned: set = set()
    stores: dict = {}
    for x in s.body:
        if _reads_of_stmt(x) & (local - assigned):
            return False  # read before this iteration assigns it: carried from the previous one
        if isinstance(x, P.Assign):
            assigned.add(x.var)
            if isinstance(x.value, P.Read) and x.value.var in index:
                index.add(x.var)
        else:
            if stores.setdefault(x.tensor.name, x.offset) != x.offset:
                return False
            if not _distinct_per_iteration(x.offset, index, local):
                return False
    for x in s.body:
        for e in P.stmt_exprs(x):
            for n in P.walk_expr(e):
                if isinstance(n, P.Load) and n.tensor.name in stores and n.offset != stores[n.tensor.name]:
                    return False
    return True


def _distinct_per_iteration(offset: P.Expr, index: set, local: set) -> bool:
    terms, pending = [], [offset]
    while pending:
        e = pending.pop()
        if isinstance(e, P.Binary) and e.op == "add":
            pending += [e.a, e.b]
        else:
            terms.append(e)
    varying = [t for t in terms if _reads_expr(t) & (index | local)]
    if len(varying) != 1:
        return False
    (term,) = varying
    if isinstance(term, P.Read):
        return term.var in index
    if isinstance(term, P.Binary) and term.op == "mul":
        for a, b in ((term.a, term.b), (term.b, term.a)):
            if isinstance(a, P.Read) and a.var in index and not _reads_expr(b) & (index | local):
                return (isinstance(b, P.Field) and b.kind == "stride") or (
                    isinstance(b, P.Const) and int(b.value) != 0)
    return False


def _reads_of_stmt(x: P.Stmt) -> set:
    return {n.var for e in P.stmt_exprs(x) for n in P.walk_expr(e) if isinstance(n, P.Read)}


def block_program_ok(stmts, scratch: set) -> bool:
    """Whether a whole kernel can run on one block (the ``block`` mapping): ordered control
    replicated on every thread, each parallel loop spread over the threads, stores outside
    them by thread 0. Statements outside parallel loops may not allocate or use atomics
    (every thread would; a scratch buffer, which the host allocates, is fine), and only the
    plain statement kinds appear there."""
    for s in stmts:
        if isinstance(s, P.Loop) and s.kind in ("parallel", "point"):
            continue
        if isinstance(s, P.Alloc) and s.tensor.name in scratch:
            continue
        if not isinstance(s, (P.Assign, P.Check, P.Store, P.Fence, P.Loop, P.While, P.If)):
            return False
        if any(isinstance(n, P.Atomic) for e in P.stmt_exprs(s) for n in P.walk_expr(e)):
            return False
        if not all(block_program_ok(block, scratch) for block in P.stmt_blocks(s)):
            return False
    return True


def worth_a_block(region: Region | None, known: dict) -> bool:
    return region is not None and any(is_large(f, known) for f in region.folds.values())


def written(stmts) -> set:
    return {x.tensor.name for x in P.walk_stmts(stmts) if isinstance(x, P.Store)} | \
        {n.tensor.name for x in P.walk_stmts(stmts) for e in P.stmt_exprs(x) for n in P.walk_expr(e)
         if isinstance(n, P.Atomic)}


def loaded(stmts) -> set:
    return {n.tensor.name for x in P.walk_stmts(stmts) for e in P.stmt_exprs(x) for n in P.walk_expr(e)
            if isinstance(n, (P.Load, P.Atomic))}


def _has_atomic(stmts) -> bool:
    return any(isinstance(n, P.Atomic) for x in P.walk_stmts(stmts) for e in P.stmt_exprs(x) for n in P.walk_expr(e))


def _reads(stmts) -> set:
    return {n.var for x in P.walk_stmts(stmts) for e in P.stmt_exprs(x) for n in P.walk_expr(e)
            if isinstance(n, P.Read)}


def _reads_expr(e: P.Expr) -> set:
    return {n.var for n in P.walk_expr(e) if isinstance(n, P.Read)}


def identity(op: str, dtype) -> P.Const:
    """The identity of a fold's combine in ``dtype`` (float ``add``: -0.0, exact for every x)."""
    if dtype.kind in ("float", "bfloat"):
        value = {"add": -0.0, "mul": 1.0, "max": float("-inf"), "min": float("inf")}.get(op)
        if value is None:
            raise ValueError(f"no float identity for '{op}'")
        return P.Const(dtype, value)
    if dtype.kind == "bool":
        return P.Const(dtype, op in ("and", "mul", "min"))
    bits = dtype.bits
    signed = dtype.kind in ("int", "index")
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    value = {"add": 0, "or": 0, "xor": 0, "mul": 1, "max": low, "min": high, "and": -1 if signed else high}[op]
    return P.Const(dtype, value)
