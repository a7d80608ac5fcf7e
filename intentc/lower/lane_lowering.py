"""The ``expand_lane_chains`` pass's lowering of a ``lane_chains`` nest (``lane_chains.py``; R3,
R9, T2).

Each chain still runs in member order, so every value is the one the sub-segment alone
would give; only the machine code differs. :func:`lower_lane_chains` turns the op into
vector code when every tensor has unit stride: after a few scalar members that bring the
written (else the first read) tensor to a cache line boundary, each step loads LANES
consecutive members of each chain, one vector per chain, transposes the LANES × LANES
block in registers so that a vector holds one member of every chain, applies the combine
lane-wise LANES times and, for an emit, transposes the states back before storing them —
with streaming stores, a whole line per chain at a time, when the outputs are large. A
strided tensor takes the scalar loop of the same chains. All give the same values.
"""
from __future__ import annotations

from intentc.kir.types import BOOL, INDEX
from intentc.lower import program as P
from intentc.lower.names import NameSupply
from intentc.lower.lane_chains import LANES

LINE_BYTES = 64  # a cache line: streamed outputs are written a whole line at a time
STREAM_BYTES = 8 << 20  # outputs at least this large take streaming stores (far beyond L2)
# An 8 × 8 transpose in three rounds of two-input shuffles, each a single instruction on
# x86-64 with AVX (unpcklps/unpckhps, shufps, vperm2f128); other targets get their own.
_ROUNDS = (
    ((0, 1, (0, 8, 1, 9, 4, 12, 5, 13)), (0, 1, (2, 10, 3, 11, 6, 14, 7, 15)),
     (2, 3, (0, 8, 1, 9, 4, 12, 5, 13)), (2, 3, (2, 10, 3, 11, 6, 14, 7, 15)),
     (4, 5, (0, 8, 1, 9, 4, 12, 5, 13)), (4, 5, (2, 10, 3, 11, 6, 14, 7, 15)),
     (6, 7, (0, 8, 1, 9, 4, 12, 5, 13)), (6, 7, (2, 10, 3, 11, 6, 14, 7, 15))),
    ((0, 2, (0, 1, 8, 9, 4, 5, 12, 13)), (0, 2, (2, 3, 10, 11, 6, 7, 14, 15)),
     (1, 3, (0, 1, 8, 9, 4, 5, 12, 13)), (1, 3, (2, 3, 10, 11, 6, 7, 14, 15)),
     (4, 6, (0, 1, 8, 9, 4, 5, 12, 13)), (4, 6, (2, 3, 10, 11, 6, 7, 14, 15)),
     (5, 7, (0, 1, 8, 9, 4, 5, 12, 13)), (5, 7, (2, 3, 10, 11, 6, 7, 14, 15))),
    ((0, 4, (0, 1, 2, 3, 8, 9, 10, 11)), (1, 5, (0, 1, 2, 3, 8, 9, 10, 11)),
     (2, 6, (0, 1, 2, 3, 8, 9, 10, 11)), (3, 7, (0, 1, 2, 3, 8, 9, 10, 11)),
     (0, 4, (4, 5, 6, 7, 12, 13, 14, 15)), (1, 5, (4, 5, 6, 7, 12, 13, 14, 15)),
     (2, 6, (4, 5, 6, 7, 12, 13, 14, 15)), (3, 7, (4, 5, 6, 7, 12, 13, 14, 15))),
)


def _index(*terms) -> P.Expr:
    total = terms[0]
    for term in terms[1:]:
        total = P.Binary(INDEX, "add", total, term)
    return total


def _mul(a: P.Expr, b: int | P.Expr) -> P.Expr:
    return P.Binary(INDEX, "mul", a, P.Const(INDEX, b) if isinstance(b, int) else b)


def _combine(names: NameSupply, combine: P.LaneCombine, args: list[P.Expr],
             lanes: int | None) -> tuple[list[P.Stmt], list[P.Expr]]:
    """Statements computing one instance of ``combine`` on ``args`` (vectors of ``lanes`` lanes,
    or scalars when ``lanes`` is None), and the expressions of its yielded values."""
    def typed(dtype):
        return P.VectorType(dtype, lanes) if lanes else dtype

    env = {arg.name: value for arg, value in zip(combine.args, args)}

    def at(e: P.Read) -> P.Expr:
        return env[e.var.name]

    stmts: list[P.Stmt] = []
    for assign, hint in zip(combine.body, combine.hints):
        e, t = assign.value, typed(assign.var.dtype)
        if isinstance(e, P.Const):
            expr = P.Splat(t, e) if lanes else e
        elif isinstance(e, P.Binary):
            expr = P.Binary(t, e.op, at(e.a), at(e.b))
        elif isinstance(e, P.Unary):
            expr = P.Unary(t, e.op, at(e.a))
        elif isinstance(e, P.Compare):
            expr = P.Compare(typed(BOOL), e.pred, at(e.a), at(e.b))
        else:  # Select
            expr = P.Select(t, at(e.cond), at(e.a), at(e.b))
        var = names.fresh(hint, t)
        stmts.append(P.Assign(var, expr))
        env[assign.var.name] = P.read(var)
    return stmts, [at(y) for y in combine.yields]


def _carry(low, accs: list[P.Var], values: list[P.Expr]) -> list[P.Stmt]:
    """``accs = values`` through temporaries (a combine may yield its arguments swapped)."""
    temps = [low.fresh(acc.name + "_next", acc.dtype) for acc in accs]
    return [P.Assign(tmp, value) for tmp, value in zip(temps, values)] + \
           [P.Assign(acc, P.read(tmp)) for acc, tmp in zip(accs, temps)]


def _transpose(low, rows: list[P.Expr], dtype, hint: str) -> tuple[list[P.Stmt], list[P.Expr]]:
    """Statements transposing the LANES × LANES block ``rows`` (vector j = row j)."""
    stmts: list[P.Stmt] = []
    current = rows
    for round_ in _ROUNDS:
        step = []
        for left, right, mask in round_:
            var = low.fresh(hint, dtype)
            stmts.append(P.Assign(var, P.Shuffle(dtype, current[left], current[right], mask)))
            step.append(P.read(var))
        current = step
    return stmts, current


class _Chains:
    """The parts of one ``lane_chains`` op, as physical symbols."""

    def __init__(self, names: NameSupply, nest: P.TileNest):
        a = dict(nest.attrs)
        n_in, n_out = a["n_in"], a["n_out"]
        self.low, self.k, self.lanes = names, a["k"], a["lanes"]
        self.segment, self.picks, self.exclusive = a["segment"], a["picks"], a["exclusive"]
        self.ins = list(nest.tensors[:n_in])
        self.outs = list(nest.tensors[n_in:n_in + n_out])
        self.first = nest.scalars[0]
        flat = nest.scalars[1:]
        self.starts = [flat[j * self.k:(j + 1) * self.k] for j in range(self.lanes)]
        self.finals = [list(nest.results[j * self.k:(j + 1) * self.k]) for j in range(self.lanes)]
        self.combine = nest.combine

    def origin(self, chain: int | P.Expr) -> P.Expr:
        """The position of member 0 of chain ``chain``."""
        j = P.Const(INDEX, chain) if isinstance(chain, int) else chain
        return _mul(P.Binary(INDEX, "add", self.first, j), self.segment)

    def scalar(self, begin: P.Expr, end: P.Expr, chains: list[list[P.Var]]) -> list[P.Stmt]:
        """Members [begin, end) of every chain, one interleaved scalar loop, into ``chains``."""
        low = self.low
        t = low.fresh("t", INDEX)
        body: list[P.Stmt] = []
        for j, accs in enumerate(chains):
            at = _index(self.origin(j), begin, P.read(t))
            items = [P.Load(x.dtype, x, _mul(at, P.Field(INDEX, x, "stride", 0))) for x in self.ins]
            stmts, values = _combine(low, self.combine, [P.read(v) for v in accs] + items, None)
            written = [P.read(v) for v in accs] if self.exclusive else values
            for out, pick in zip(self.outs, self.picks):
                stmts.append(P.Store(out, _mul(at, P.Field(INDEX, out, "stride", 0)), written[pick]))
            body += stmts + _carry(low, accs, values)
        return [P.Loop(t, P.Binary(INDEX, "sub", end, begin), tuple(body), "serial")]

    def vector_loop(self, accs: list[P.Var], start: P.Expr, count: P.Expr, unroll: int,
                    streaming: bool) -> P.Loop:
        """``count`` iterations of ``unroll`` blocks of LANES members of every chain, from
        member ``start``; ``streaming``: each chain's ``unroll`` vectors are stored back to
        back with streaming stores (a whole cache line when ``unroll`` is the line's)."""
        low, lanes = self.low, self.lanes
        u = low.fresh("u", INDEX)
        base = low.fresh("base", INDEX)
        body: list[P.Stmt] = [P.Assign(base, _index(self.origin(0), start, _mul(P.read(u), unroll * lanes)))]
        rows_out = [[[] for _ in range(lanes)] for _ in self.outs]  # per output, per chain: its vectors
        for block in range(unroll):
            columns = []
            for x in self.ins:
                vt = P.VectorType(x.dtype, lanes)
                rows = [P.Load(vt, x, _index(P.read(base), P.Const(INDEX, j * self.segment + block * lanes)))
                        for j in range(lanes)]
                stmts, cols = _transpose(low, rows, vt, f"{x.name}_col")
                body += stmts
                columns.append(cols)
            written = [[] for _ in self.outs]
            for t in range(lanes):
                before = [P.read(acc) for acc in accs]
                stmts, values = _combine(low, self.combine, before + [cols[t] for cols in columns], lanes)
                body += stmts
                for o, pick in enumerate(self.picks):
                    state = before[pick] if self.exclusive else values[pick]
                    var = low.fresh(f"{self.outs[o].name}_col", accs[pick].dtype)
                    body.append(P.Assign(var, state))
                    written[o].append(P.read(var))
                body += _carry(low, accs, values)
            for o, (tensor, cols, pick) in enumerate(zip(self.outs, written, self.picks)):
                stmts, rows = _transpose(low, cols, accs[pick].dtype, f"{tensor.name}_row")
                body += stmts
                for j, row in enumerate(rows):
                    rows_out[o][j].append(row)
        for tensor, chains in zip(self.outs, rows_out):
            for j, rows in enumerate(chains):
                body += [P.Store(tensor, _index(P.read(base), P.Const(INDEX, j * self.segment + block * lanes)),
                                 row, streaming) for block, row in enumerate(rows)]
        return P.Loop(u, count, tuple(body), "serial")

    def line_members(self, x: P.TensorSym) -> int:
        return max(self.lanes, LINE_BYTES // x.dtype.itemsize)

    def streamable(self, peel: P.Expr) -> P.Expr:
        """Whether the outputs take streaming stores: each holds at least STREAM_BYTES (far
        more than stays in the caches anyway) and is aligned to a cache line after ``peel``."""
        test = None
        for x in self.outs:
            size = x.dtype.itemsize
            address = P.Field(INDEX, x, "address", 0)
            member = P.Binary(INDEX, "add", P.Binary(INDEX, "floordiv", address, P.Const(INDEX, size)), peel)
            parts = [P.Compare(BOOL, "ge", _mul(P.Field(INDEX, x, "shape", 0), size), P.Const(INDEX, STREAM_BYTES)),
                     P.Compare(BOOL, "eq", P.Binary(INDEX, "mod", address, P.Const(INDEX, size)), P.Const(INDEX, 0)),
                     P.Compare(BOOL, "eq", P.Binary(INDEX, "mod", member, P.Const(INDEX, self.line_members(x))),
                               P.Const(INDEX, 0))]
            for part in parts:
                test = part if test is None else P.Binary(BOOL, "and", test, part)
        return test

    def vector(self) -> list[P.Stmt]:
        """Members up to a cache-line boundary scalar, then whole blocks of LANES members of
        every chain in vector lanes, then the rest scalar; the chains' tuples in ``finals``."""
        low, lanes = self.low, self.lanes
        # Chains start a multiple of a cache line apart (segment), so one peel aligns the
        # vectors of every chain of the anchor tensor (the written one, else the first read).
        anchor = (self.outs or self.ins)[0]
        first_member = P.Binary(INDEX, "floordiv", P.Field(INDEX, anchor, "address", 0),
                                P.Const(INDEX, anchor.dtype.itemsize))
        peel = low.fresh("peel", INDEX)
        blocks = low.fresh("blocks", INDEX)
        out: list[P.Stmt] = [
            P.Assign(peel, P.Binary(INDEX, "mod", P.Binary(INDEX, "sub", P.Const(INDEX, 0), first_member),
                                    P.Const(INDEX, self.line_members(anchor)))),
            P.Assign(blocks, P.Binary(INDEX, "floordiv", P.Binary(INDEX, "sub", P.Const(INDEX, self.segment),
                                                                  P.read(peel)), P.Const(INDEX, lanes)))]
        out += self.scalar(P.Const(INDEX, 0), P.read(peel), self.finals)
        dtypes = [v.dtype for v in self.starts[0]]
        accs = [low.fresh(f"lanes{c}", P.VectorType(d, lanes)) for c, d in enumerate(dtypes)]
        out += [P.Assign(acc, P.Pack(acc.dtype, tuple(P.read(finals[c]) for finals in self.finals)))
                for c, acc in enumerate(accs)]
        plain = self.vector_loop(accs, P.read(peel), P.read(blocks), 1, False)
        if self.outs:
            # Large outputs are streamed past the caches a whole line at a time: no line is
            # read for ownership, and none stays half written in a write-combining buffer.
            per_line = max(1, min(self.line_members(x) for x in self.outs) // lanes)
            lines = P.Binary(INDEX, "floordiv", P.read(blocks), P.Const(INDEX, per_line))
            rest = P.Binary(INDEX, "sub", P.read(blocks), _mul(lines, per_line))
            streamed = (self.vector_loop(accs, P.read(peel), lines, per_line, True), P.Fence(),
                        self.vector_loop(accs, _index(P.read(peel), _mul(lines, per_line * lanes)), rest, 1, False))
            out.append(P.If(self.streamable(P.read(peel)), streamed, (plain,)))
        else:
            out.append(plain)
        for j, finals in enumerate(self.finals):
            out += [P.Assign(v, P.Lane(v.dtype, P.read(acc), j)) for v, acc in zip(finals, accs)]
        done = P.Binary(INDEX, "add", P.read(peel), _mul(P.read(blocks), lanes))
        return out + self.scalar(done, P.Const(INDEX, self.segment), self.finals)


def lower_lane_chains(names: NameSupply, nest: P.TileNest) -> list[P.Stmt]:
    """Physical statements of a ``lane_chains`` nest (see the module docstring)."""
    chains = _Chains(names, nest)
    assert chains.lanes == LANES, "the transpose is written for LANES chains"
    start = [P.Assign(v, s) for finals, starts in zip(chains.finals, chains.starts)
             for v, s in zip(finals, starts)]
    unit = None
    for x in chains.ins + chains.outs:
        if x.storage == "heap":  # kernel-local buffers are row-major
            continue
        test = P.Compare(BOOL, "eq", P.Field(INDEX, x, "stride", 0), P.Const(INDEX, 1))
        unit = test if unit is None else P.Binary(BOOL, "and", unit, test)
    vector = start + chains.vector()
    if unit is None:
        return vector
    scalar = start + chains.scalar(P.Const(INDEX, 0), P.Const(INDEX, chains.segment), chains.finals)
    return [P.If(unit, tuple(vector), tuple(scalar))]
