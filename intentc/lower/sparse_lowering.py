"""How sparse contractions (T5, ``sparse_contract``) are lowered: only stored values are
multiplied, so the work is proportional to the stored entries, not to M * K * N.

1. The metadata is checked first, in the interpreter's order (``ops_scaled.CHECKS``):
   each check is a blocked fold (the same blocks for every thread count) that finds the
   first violation, then one ``assert_true`` names it. Nothing is written before.
2. At the top of a kernel ``b`` is packed, converted to the accumulator dtype, into
   panels of ``NR`` columns ``[N/NR][K][NR]`` (zero padded), so every stored value
   multiplies ``NR`` consecutive floats of one row of ``b``.
   - 2:4: the stored values and their columns (``4q + position``, decoded from the
     metadata) are packed in panels of ``MR`` rows ``[M/MR][K/2][MR]``; a ``sparse24_tiles``
     op computes each ``MR x NR`` tile of the result in registers: for every stored value
     of each row, one vector multiply and add per vector of the panel row it selects.
   - CSR: a ``csr_tiles`` op walks each row's stored values in storage order, one vector
     multiply and add per vector of the selected panel row.
   Products and sums are rounded one by one (``mul_add``), as the interpreter does.
   Tiles on the edges compute each element alone with the same operations in the same
   order, so every element is accumulated in the interpreter's order by one task: the
   result does not depend on the thread count.
3. Inside ``I.parallel`` each result element is one ordered ``fold`` over its row's
   stored values.
"""
from __future__ import annotations

from intentc.kir.core import Block, Op, Value
from intentc.kir.ops_scaled import CHECKS
from intentc.kir.types import BOOL, DTYPES, INDEX, TensorType
from intentc.lower import program as P
from intentc.lower.scaled_lowering import _Builder, mul_add

I32 = DTYPES["i32"]
U8 = DTYPES["u8"]
VECTOR_BYTES = 64
MR, VECTORS = 4, 4  # 2:4 register tile: MR rows x VECTORS vectors
CSR_VECTORS = 4
MC, NC = 64, 256  # 2:4 blocks of the result per task
CSR_ROWS = 16  # rows per CSR task


def lanes_of(acc) -> int:
    return max(1, VECTOR_BYTES // acc.itemsize)


class SparseExpansion:
    """Mixed into the expander of ``expand_tensor_exprs`` (uses emit, element, extent, ...)."""

    def materialize_sparse_contract(self, op: Op, replace: dict) -> None:
        acc = DTYPES[op.attrs["acc"]]
        b = op.operands[-1]
        k, n = self.extent(b, 0), self.extent(b, 1)
        if op.attrs["format"] == "2:4":
            values, meta = op.operands[:2]
            m, half = self.extent(values, 0), self.extent(values, 1)
            groups = self.extent(meta, 1)
            self.check_two_four(op, meta, m, groups)
            result = self.two_four_tiled(op, acc, m, half, k, n) if self.depth == 0 \
                else self.sparse_folds(op, acc, m, n, half, self.two_four_term(op, acc))
        else:
            offsets, columns, values = op.operands[:3]
            m = self.ix("sub", self.extent(offsets, 0), self.c(1))
            self.check_csr(op, offsets, columns, m, k)
            result = self.csr_tiled(op, acc, m, k, n) if self.depth == 0 else self.csr_folds(op, acc, m, n)
        if result is not None:
            replace[id(op.result)] = result

    # -- checks ----------------------------------------------------------------------------------
    def first_where(self, count: Value, bad_at, span) -> Value:
        """The smallest t in [0, count) with bad_at(t), else count (a blocked min fold)."""
        x, y = Value(INDEX, "x"), Value(INDEX, "y")
        combine = Block([x, y], [Op("min", [x, y], [INDEX])])
        combine.ops.append(Op("yield", [combine.ops[0].result]))

        def element(t):
            return [self.emit("select", [bad_at(t), t, count], [INDEX]).result]

        if self.depth == 0:
            return self.blocked_fold(count, [count], element, combine, span)[0]
        return self.fold(count, [count], element, combine, span)[0]

    def fail_unless(self, ok: Value, check: str, args, span) -> None:
        """assert_true(ok) with the message of ``check``; ``args()`` builds the message's
        values inside a branch taken only when the check fails (they may read at the
        failing position)."""
        code, what = CHECKS[check]

        def failing():
            return list(args())

        def fine():
            return [self.c(0)] * what.count("%lld")

        branch = Op("if", [ok], [INDEX] * what.count("%lld"), None,
                    [self._with_block([], fine), self._with_block([], failing)])
        self.out.append(branch)
        self.emit("assert_true", [ok] + list(branch.results), span=span, attrs={"what": what, "rule": "T5",
                                                                                "code": code})

    def lt(self, a: Value, b: Value) -> Value:
        return self.emit("cmp", [a, b], [BOOL], {"pred": "lt"}).result

    def as_index(self, v: Value) -> Value:
        return v if v.type == INDEX else self.emit("cast", [v], [INDEX]).result

    def meta_positions(self, v: Value) -> tuple[Value, Value, Value]:
        """(first, second, valid) of a 2:4 metadata byte as index values."""
        v = self.as_index(v)
        first = self.ix("and", v, self.c(3))
        second = self.ix("and", self.ix("shr", v, self.c(2)), self.c(3))
        high = self.ix("shr", v, self.c(4))
        zero = self.emit("cmp", [high, self.c(0)], [BOOL], {"pred": "eq"}).result
        valid = self.emit("and", [zero, self.lt(first, second)], [BOOL]).result
        return first, second, valid

    def check_two_four(self, op: Op, meta: Value, m: Value, groups: Value) -> None:
        count = self.ix("mul", m, groups)

        def bad_at(t):
            r, q = self.unravel(t, [m, groups])
            valid = self.meta_positions(self.element(meta, [r, q], op.span, proven=True))[2]
            return self.emit("not", [valid], [BOOL]).result

        first = self.first_where(count, bad_at, op.span)
        ok = self.emit("cmp", [first, count], [BOOL], {"pred": "eq"}).result

        def args():
            r, q = self.unravel(first, [m, groups])
            return [r, q, self.as_index(self.element(meta, [r, q], op.span, proven=True))]

        self.fail_unless(ok, "meta24", args, op.span)

    def check_csr(self, op: Op, offsets: Value, columns: Value, m: Value, k: Value) -> None:
        def off(i):
            return self.as_index(self.element(offsets, [i], op.span, proven=True))

        zero = self.c(0)
        start = off(zero)
        self.fail_unless(self.emit("cmp", [start, zero], [BOOL], {"pred": "eq"}).result, "csr_first",
                         lambda: [start], op.span)
        down = self.first_where(m, lambda r: self.lt(off(self.ix("add", r, self.c(1))), off(r)), op.span)
        self.fail_unless(self.emit("cmp", [down, m], [BOOL], {"pred": "eq"}).result, "csr_order",
                         lambda: [down, off(down), off(self.ix("add", down, self.c(1)))], op.span)
        nnz = self.extent(columns, 0)
        end = off(m)
        self.fail_unless(self.emit("cmp", [end, nnz], [BOOL], {"pred": "le"}).result, "csr_end",
                         lambda: [end, nnz], op.span)

        def column(p):
            return self.as_index(self.element(columns, [p], op.span, proven=True))

        def outside(p):
            col = column(p)
            below = self.lt(col, zero)
            above = self.emit("cmp", [col, k], [BOOL], {"pred": "ge"}).result
            return self.emit("or", [below, above], [BOOL]).result

        bad = self.first_where(end, outside, op.span)
        self.fail_unless(self.emit("cmp", [bad, end], [BOOL], {"pred": "eq"}).result, "csr_column",
                         lambda: [bad, column(bad), k], op.span)

    # -- inside I.parallel: folds -------------------------------------------------------------------
    def sparse_folds(self, op: Op, acc, m, n, count_of, term) -> Value | None:
        """out[i, j] = ordered fold of term(i, j, t) over t in [0, count_of(i))."""
        out = self.result_buffer(op.result, acc, [m, n], op.span)
        if out is None:
            return None
        x, y = Value(acc, "x"), Value(acc, "y")
        combine = Block([x, y], [Op("add", [x, y], [acc])])
        combine.ops.append(Op("yield", [combine.ops[0].result]))
        zero = self.emit("const", [], [acc], {"value": 0.0}).result

        def body(points):
            i, j = points
            count = count_of(i) if callable(count_of) else count_of
            (value,) = self.fold(count, [zero], lambda t: [term(i, j, t)], combine, op.span, ordered=True)
            self.out.append(Op("store", [out, i, j, value], attrs={"inbounds": [True, True]}))

        self.parallel([m, n], body)
        return out

    def operand(self, x: Value, index: list[Value], acc, span) -> Value:
        value = self.element(x, index, span, proven=True)
        return value if value.type == acc else self.emit("cast", [value], [acc]).result

    def two_four_term(self, op: Op, acc):
        values, meta, b = op.operands

        def term(i, j, t):
            q, half = self.ix("floordiv", t, self.c(2)), self.ix("and", t, self.c(1))
            first, second, _ = self.meta_positions(self.element(meta, [i, q], op.span, proven=True))
            is_second = self.emit("cmp", [half, self.c(1)], [BOOL], {"pred": "eq"}).result
            position = self.emit("select", [is_second, second, first], [INDEX]).result
            col = self.ix("add", self.ix("mul", q, self.c(4)), position)
            return self.emit("mul", [self.operand(values, [i, t], acc, op.span),
                                     self.operand(b, [col, j], acc, op.span)], [acc]).result
        return term

    def csr_folds(self, op: Op, acc, m, n) -> Value | None:
        offsets, columns, values, b = op.operands

        def off(i):
            return self.as_index(self.element(offsets, [i], op.span, proven=True))

        def count_of(i):
            return self.ix("sub", off(self.ix("add", i, self.c(1))), off(i))

        def term(i, j, t):
            p = self.ix("add", off(i), t)
            col = self.as_index(self.element(columns, [p], op.span, proven=True))
            return self.emit("mul", [self.operand(values, [p], acc, op.span),
                                     self.operand(b, [col, j], acc, op.span)], [acc]).result

        return self.sparse_folds(op, acc, m, n, count_of, term)

    # -- at the top of a kernel: packed panels and register tiles -------------------------------------
    def pack_b(self, b: Value, acc, k: Value, n: Value, nr: int, span) -> tuple[Value, Value]:
        """b as [panels][K][NR] panels of the accumulator dtype, zero past N."""
        panels = self.ceil_div(n, self.c(nr))
        bp = self.buffer(acc, [self.product([panels, k, self.c(nr)])], span)
        zero = self.emit("const", [], [acc], {"value": 0.0}).result
        last = self.ix("sub", n, self.c(1))

        def body(points):
            p, kk = points
            first = self.ix("mul", p, self.c(nr))
            base = self.ix("mul", self.ix("add", self.ix("mul", p, k), kk), self.c(nr))

            def lane(w, edge: bool):
                col = self.ix("add", first, w)
                value = self.operand(b, [kk, self.ix("min", col, last) if edge else col], acc, span)
                if edge:
                    value = self.emit("select", [self.lt(col, n), value, zero], [acc]).result
                self.out.append(Op("store", [bp, self.ix("add", base, w), value], attrs={"inbounds": [True]}))

            def panel(edge: bool):
                self.loop(self.c(nr), lambda w: lane(w, edge))
                return []

            full = self.emit("cmp", [self.ix("add", first, self.c(nr)), n], [BOOL], {"pred": "le"}).result
            self.out.append(Op("if", [full], [], None, [self._with_block([], lambda: panel(False)),
                                                        self._with_block([], lambda: panel(True))]))

        self.parallel([panels, k], body)
        return bp, panels

    def two_four_tiled(self, op: Op, acc, m, half, k, n) -> Value | None:
        values, meta, b = op.operands
        out = self.result_buffer(op.result, acc, [m, n], op.span)
        if out is None:
            return None
        lanes = lanes_of(acc)
        nr = VECTORS * lanes
        bp, _ = self.pack_b(b, acc, k, n, nr, op.span)
        # Stored values and their columns in panels of MR rows: [M/MR][K/2][MR].
        rows = self.ceil_div(m, self.c(MR))
        size = self.product([rows, half, self.c(MR)])
        vals = self.buffer(acc, [size], op.span)
        cols = self.buffer(I32, [size], op.span)
        zero = self.emit("const", [], [acc], {"value": 0.0}).result
        last = self.ix("sub", m, self.c(1))

        def body(points):
            pa, w = points
            row = self.ix("add", self.ix("mul", pa, self.c(MR)), w)
            inside = self.lt(row, m)
            safe = self.ix("min", row, last)

            def element(t):
                q, second = self.ix("floordiv", t, self.c(2)), self.ix("and", t, self.c(1))
                code = self.as_index(self.element(meta, [safe, q], op.span, proven=True))
                position = self.ix("and", self.ix("shr", code, self.ix("mul", second, self.c(2))), self.c(3))
                col = self.ix("add", self.ix("mul", q, self.c(4)), position)
                at = self.ix("add", self.ix("mul", self.ix("add", self.ix("mul", pa, half), t), self.c(MR)), w)
                value = self.emit("select", [inside, self.operand(values, [safe, t], acc, op.span), zero],
                                  [acc]).result
                col = self.emit("select", [inside, col, self.c(0)], [INDEX]).result
                self.out.append(Op("store", [vals, at, value], attrs={"inbounds": [True]}))
                self.out.append(Op("store", [cols, at, self.emit("cast", [col], [I32]).result],
                                   attrs={"inbounds": [True]}))

            self.loop(half, element)

        self.parallel([rows, self.c(MR)], body)
        self.out.append(Op("sparse24_tiles", [vals, cols, bp, out, m, n, k, half], [], {
            "mr": MR, "vectors": VECTORS, "lanes": lanes, "mc": MC, "nc": NC}, span=op.span))
        return out

    def csr_tiled(self, op: Op, acc, m, k, n) -> Value | None:
        offsets, columns, values, b = op.operands
        out = self.result_buffer(op.result, acc, [m, n], op.span)
        if out is None:
            return None
        lanes = lanes_of(acc)
        nr = CSR_VECTORS * lanes
        bp, _ = self.pack_b(b, acc, k, n, nr, op.span)
        mem = [self.in_memory_1d(x, op.span) for x in (offsets, columns, values)]
        self.out.append(Op("csr_tiles", mem + [bp, out, m, n, k], [], {
            "vectors": CSR_VECTORS, "lanes": lanes, "rows": CSR_ROWS}, span=op.span))
        return out

    def in_memory_1d(self, x: Value, span) -> Value:
        if id(x) in self.params:
            return x
        extent = self.extent(x, 0)
        buf = self.buffer(x.type.dtype, [extent], span)
        self.parallel([extent], lambda p: self.out.append(Op(
            "store", [buf, p[0], self.element(x, [p[0]], span, proven=True)], attrs={"inbounds": [True]})))
        return buf


# ---- physical ---------------------------------------------------------------------------------------
def lower_sparse_tiles(low, op: Op) -> list[P.Stmt]:
    """The loop nest of a ``sparse24_tiles`` or ``csr_tiles`` op."""
    if op.name == "sparse24_tiles":
        return _two_four_tiles(low, op)
    return _csr_tiles(low, op)


def _two_four_tiles(low, op: Op) -> list[P.Stmt]:
    """parallel over MC x NC blocks; per MR x NR tile, for every stored value t (in column order)
    and row r: acc[r][v] += vals[t][r] * bp[panel][cols[t][r]][v] (one vector FMA per vector)."""
    h = _Builder(low)
    VALS, COLS, BP, OUT = (low.tensors[id(v)] for v in op.operands[:4])
    m, n, k, half = (low.read(v) for v in op.operands[4:])
    mr, vectors, lanes, mc, nc = (op.attrs[key] for key in ("mr", "vectors", "lanes", "mc", "nc"))
    nr = vectors * lanes
    acc = VALS.dtype
    vt = P.VectorType(acc, lanes)
    out: list[P.Stmt] = []
    s_om = h.let("s_om", P.Field(INDEX, OUT, "stride", 0), out)
    s_on = h.let("s_on", P.Field(INDEX, OUT, "stride", 1), out)
    tiles_m = h.let("tiles_m", h.ceil_div(m, mc), out)
    tiles_n = h.let("tiles_n", h.ceil_div(n, nc), out)

    tile, jr, ir, t = h.var("tile"), h.var("jr"), h.var("ir"), h.var("t")
    body: list[P.Stmt] = []
    m0 = h.let("m0", h.mul(h.ix("floordiv", P.read(tile), tiles_n), h.c(mc)), body)
    n0 = h.let("n0", h.mul(h.ix("mod", P.read(tile), tiles_n), h.c(nc)), body)
    mlen = h.let("mlen", h.ix("min", h.c(mc), h.ix("sub", m, m0)), body)
    nlen = h.let("nlen", h.ix("min", h.c(nc), h.ix("sub", n, n0)), body)
    jbody: list[P.Stmt] = []
    j = h.let("j", h.add(n0, h.mul(P.read(jr), h.c(nr))), jbody)
    panel = h.let("panel", h.mul(h.ix("floordiv", j, h.c(nr)), k), jbody)  # panel * K
    ibody: list[P.Stmt] = []
    i = h.let("i", h.add(m0, h.mul(P.read(ir), h.c(mr))), ibody)
    abase = h.let("abase", h.mul(h.ix("floordiv", i, h.c(mr)), h.mul(half, h.c(mr))), ibody)
    full = h.var("full", BOOL)
    ibody.append(P.Assign(full, h.both(h.le(h.add(i, h.c(mr)), m), h.le(h.add(j, h.c(nr)), n),
                                       h.eq(s_on, h.c(1)))))

    def at(r):  # the packed position of row r (a constant or an expression) at stored value t
        return h.add(abase, h.mul(P.read(t), h.c(mr)), h.c(r) if isinstance(r, int) else r)

    def row_of_b(r):  # the element offset of the selected row of the panel
        return h.mul(h.add(panel, P.Cast(INDEX, P.Load(I32, COLS, at(r)))), h.c(nr))

    accs = [[h.var(f"acc{r}_{v}", vt) for v in range(vectors)] for r in range(mr)]
    tile_stmts: list[P.Stmt] = [P.Assign(accs[r][v], P.Splat(vt, P.Const(acc, 0.0)))
                                for r in range(mr) for v in range(vectors)]
    micro: list[P.Stmt] = []
    for r in range(mr):
        av = h.var(f"a{r}", vt)
        micro.append(P.Assign(av, P.Splat(vt, P.Load(acc, VALS, at(r)))))
        base = h.let(f"brow{r}", row_of_b(r), micro)
        for v in range(vectors):
            bv = P.Load(vt, BP, h.add(base, h.c(v * lanes)))
            micro.append(P.Assign(accs[r][v], mul_add(vt, P.read(av), bv, P.read(accs[r][v]))))
    tile_stmts.append(P.Loop(t, half, tuple(micro)))
    for r in range(mr):
        for v in range(vectors):
            tile_stmts.append(P.Store(OUT, h.add(h.mul(h.add(i, h.c(r)), s_om), j, h.c(v * lanes)),
                                      P.read(accs[r][v])))
    er, ec = h.var("er"), h.var("ec")
    row, col = h.add(i, P.read(er)), h.add(j, P.read(ec))
    total = h.var("sum", acc)
    step = P.Assign(total, mul_add(acc, P.Load(acc, VALS, at(P.read(er))),
                                    P.Load(acc, BP, h.add(row_of_b(P.read(er)), P.read(ec))), P.read(total)))
    element = (P.Assign(total, P.Const(acc, 0.0)), P.Loop(t, half, (step,)),
               P.Store(OUT, h.add(h.mul(row, s_om), h.mul(col, s_on)), P.read(total)))
    edge = P.Loop(er, h.c(mr), (P.Loop(ec, h.c(nr), (P.If(h.both(h.lt(row, m), h.lt(col, n)), element),)),))
    ibody.append(P.If(P.read(full), tuple(tile_stmts), (edge,)))
    jbody.append(P.Loop(ir, h.ceil_div(mlen, mr), tuple(ibody)))
    body.append(P.Loop(jr, h.ceil_div(nlen, nr), tuple(jbody)))
    out.append(P.Loop(tile, h.mul(tiles_m, tiles_n), tuple(body), "parallel", h.c(1)))
    return out


def _csr_tiles(low, op: Op) -> list[P.Stmt]:
    """parallel over (blocks of rows, column panels); per row and panel, for every stored value p
    in storage order: acc[v] += values[p] * bp[panel][columns[p]][v]."""
    h = _Builder(low)
    OFF, COL, VAL, BP, OUT = (low.tensors[id(v)] for v in op.operands[:5])
    m, n, k = (low.read(v) for v in op.operands[5:])
    vectors, lanes, rows = (op.attrs[key] for key in ("vectors", "lanes", "rows"))
    nr = vectors * lanes
    acc = BP.dtype
    vt = P.VectorType(acc, lanes)
    out: list[P.Stmt] = []
    s_off = h.let("s_off", P.Field(INDEX, OFF, "stride", 0), out)
    s_col = h.let("s_col", P.Field(INDEX, COL, "stride", 0), out)
    s_val = h.let("s_val", P.Field(INDEX, VAL, "stride", 0), out)
    s_om = h.let("s_om", P.Field(INDEX, OUT, "stride", 0), out)
    s_on = h.let("s_on", P.Field(INDEX, OUT, "stride", 1), out)
    blocks = h.let("row_blocks", h.ceil_div(m, rows), out)
    panels = h.let("panels", h.ceil_div(n, nr), out)

    def value_at(p):
        v = P.Load(VAL.dtype, VAL, h.mul(p, s_val))
        return v if VAL.dtype == acc else P.Cast(acc, v)

    def row_of_b(panel_k, p):
        return h.mul(h.add(panel_k, P.Cast(INDEX, P.Load(COL.dtype, COL, h.mul(p, s_col)))), h.c(nr))

    task, rr, p = h.var("task"), h.var("r"), h.var("p")
    body: list[P.Stmt] = []
    first_row = h.let("first_row", h.mul(h.ix("floordiv", P.read(task), panels), h.c(rows)), body)
    pn = h.let("pn", h.ix("mod", P.read(task), panels), body)
    j = h.let("j", h.mul(pn, h.c(nr)), body)
    panel_k = h.let("panel_k", h.mul(pn, k), body)
    full = h.let("full", h.both(h.le(h.add(j, h.c(nr)), n), h.eq(s_on, h.c(1))), body, BOOL)
    rbody: list[P.Stmt] = []
    row = h.let("row", h.add(first_row, P.read(rr)), rbody)
    start = h.let("start", P.Cast(INDEX, P.Load(OFF.dtype, OFF, h.mul(row, s_off))), rbody)
    end = h.let("end", P.Cast(INDEX, P.Load(OFF.dtype, OFF, h.mul(h.add(row, h.c(1)), s_off))), rbody)
    accs = [h.var(f"acc{v}", vt) for v in range(vectors)]
    vec: list[P.Stmt] = [P.Assign(a, P.Splat(vt, P.Const(acc, 0.0))) for a in accs]
    q = h.add(start, P.read(p))
    micro: list[P.Stmt] = []
    av = h.var("a", vt)
    micro.append(P.Assign(av, P.Splat(vt, value_at(q))))
    base = h.let("brow", row_of_b(panel_k, q), micro)
    for v in range(vectors):
        micro.append(P.Assign(accs[v], mul_add(vt, P.read(av), P.Load(vt, BP, h.add(base, h.c(v * lanes))),
                                                P.read(accs[v]))))
    vec.append(P.Loop(p, h.ix("sub", end, start), tuple(micro)))
    for v in range(vectors):
        vec.append(P.Store(OUT, h.add(h.mul(row, s_om), j, h.c(v * lanes)), P.read(accs[v])))
    ec = h.var("ec")
    col = h.add(j, P.read(ec))
    total = h.var("sum", acc)
    step = P.Assign(total, mul_add(acc, value_at(q), P.Load(acc, BP, h.add(row_of_b(panel_k, q), P.read(ec))),
                                    P.read(total)))
    element = (P.Assign(total, P.Const(acc, 0.0)), P.Loop(p, h.ix("sub", end, start), (step,)),
               P.Store(OUT, h.add(h.mul(row, s_om), h.mul(col, s_on)), P.read(total)))
    edge = P.Loop(ec, h.c(nr), (P.If(h.lt(col, n), element),))
    rbody.append(P.If(full, tuple(vec), (edge,)))
    count = h.ix("min", h.c(rows), h.ix("sub", m, first_row))
    body.append(P.Loop(rr, count, tuple(rbody)))
    out.append(P.Loop(task, h.mul(blocks, panels), tuple(body), "parallel", h.c(1)))
    return out
