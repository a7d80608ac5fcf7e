"""How microscaled contractions (T4, ``scaled_contract``) are lowered.

At the top of a kernel the contraction becomes one ``scaled_tiles`` op over the codes
themselves — there is no dequantised copy of ``a`` or ``b``:

1. ``expand_tensor_exprs`` decodes the scales into two small f32 buffers (``sa32[M, G]``
   and ``sb32[G, N]``, the latter transposed so that a tile's column scales are one
   vector), and the values of every code of ``a``'s and ``b``'s formats into a table
   ``[2, 256]``. ``a`` and ``b`` are read where they are: parameters (and the ``block=``
   reshape of a ``[M, K]`` or ``[K, N]`` parameter) through their strides; any other
   expression is first copied, as codes, into a buffer.
2. ``to_physical`` lowers ``scaled_tiles`` (:func:`lower_scaled_tiles`) to a ``parallel``
   loop over ``MC x NC`` blocks of the result; each ``MR x NR`` register tile walks the
   blocks ``g`` and their elements ``c`` in order: ``NR`` codes of a row of ``b`` are
   loaded as vectors and decoded in registers (``mx_llvm.decode``) and multiplied by the
   column scales, each row's code of ``a`` is looked up in the table and multiplied by
   its row scale, and the tile accumulates the products with fused multiply-adds.
   On the right edge whole rows take the remaining columns one vector at a time; what
   is left (and tiles on strides that are not unit along N) computes each element alone
   with both codes looked up in the table: the same operations in the same order.

Each result element is accumulated by one task, in ``k = g * C + c`` order, with one
fused multiply-add per product (the interpreter's definition), so the result has the
interpreter's bits and is the same for every thread count. Inside ``I.parallel`` (or when an operand cannot be tiled) each result element is
one ``fold`` over ``(g, c)``.
"""
from __future__ import annotations

from intentc.kir.core import Op, Value
from intentc.kir.types import BOOL, DTYPES, INDEX, TensorType
from intentc.lower import program as P

F32 = DTYPES["f32"]
U8 = DTYPES["u8"]
MR, VECTORS, LANES = 8, 2, 16  # register tile: MR rows x VECTORS vectors of LANES f32
MC, NC = 128, 256  # blocks of the result per task (multiples of MR and of VECTORS * LANES)


class ScaledExpansion:
    """Mixed into the expander of ``expand_tensor_exprs`` (uses emit, element, extent, ...)."""

    def materialize_scaled_contract(self, op: Op, replace: dict) -> None:
        a, sa, b, sb = op.operands
        m, g, c = (self.extent(a, axis) for axis in range(3))
        n = self.extent(b, 2)
        if self.depth == 0:
            result = self.scaled_tiled(op, m, g, c, n)
        else:
            result = self.scaled_folds(op, m, g, c, n)
        if result is not None:
            replace[id(op.result)] = result

    def decoded(self, x: Value, index: list[Value], span) -> Value:
        value = self.element(x, index, span, proven=True)
        return self.emit("cast", [value], [F32]).result

    def scaled_folds(self, op: Op, m, g, c, n) -> Value | None:
        """One fold over (g, c) per result element (inside I.parallel)."""
        a, sa, b, sb = op.operands
        out = self.result_buffer(op.result, F32, [m, n], op.span)
        if out is None:
            return None
        x, y = Value(F32, "x"), Value(F32, "y")
        from intentc.kir.core import Block

        combine = Block([x, y], [Op("add", [x, y], [F32])])
        combine.ops.append(Op("yield", [combine.ops[0].result]))
        zero = self.emit("const", [], [F32], {"value": 0.0}).result

        def body(points):
            i, j = points

            def element(t):
                gg, cc = self.unravel(t, [g, c])
                xa = self.emit("mul", [self.decoded(a, [i, gg, cc], op.span), self.decoded(sa, [i, gg], op.span)],
                               [F32]).result
                xb = self.emit("mul", [self.decoded(b, [gg, cc, j], op.span), self.decoded(sb, [j, gg], op.span)],
                               [F32]).result
                return [self.emit("mul", [xa, xb], [F32]).result]

            (value,) = self.fold(self.ix("mul", g, c), [zero], element, combine, op.span, ordered=True)
            self.out.append(Op("store", [out, i, j, value], attrs={"inbounds": [True, True]}))

        self.parallel([m, n], body)
        return out

    # -- the tiled form ------------------------------------------------------------------------
    def in_memory(self, x: Value, role: str, span) -> tuple[Value, list]:
        """``x`` as a tensor in memory and, per logical axis, (memory axis, times C?): a
        parameter or buffer as is, the block= split of a 2-D one through its strides, any
        other expression copied (as codes) into a buffer."""
        if id(x) in self.params:
            return x, [[axis, 1] for axis in range(3)]
        op = self.defs.get(id(x))
        if op is not None and op.name == "reshape" and op.attrs.get("split") == role \
                and id(op.operands[0]) in self.params:
            source = op.operands[0]
            return source, ([[0, 1], [1, "C"], [1, 1]] if role == "a" else [[0, "C"], [0, 1], [1, 1]])
        extents = [self.extent(x, axis) for axis in range(x.type.rank)]
        buf = self.buffer(x.type.dtype, extents, span)

        def body(points):
            value = self.element(x, list(points), span, proven=True)
            self.out.append(Op("store", [buf] + list(points) + [value], attrs={"inbounds": [True] * len(points)}))

        self.parallel(extents, body)
        return buf, [[axis, 1] for axis in range(3)]

    def scaled_tiled(self, op: Op, m, g, c, n) -> Value | None:
        a, sa, b, sb = op.operands
        out = self.result_buffer(op.result, F32, [m, n], op.span)
        if out is None:
            return None
        a_mem, a_axes = self.in_memory(a, "a", op.span)
        b_mem, b_axes = self.in_memory(b, "b", op.span)
        sa32 = self.buffer(F32, [m, g], op.span)
        sb32 = self.buffer(F32, [g, n], op.span)
        self.parallel([m, g], lambda p: self.out.append(Op(
            "store", [sa32, p[0], p[1], self.decoded(sa, [p[0], p[1]], op.span)], attrs={"inbounds": [True, True]})))
        self.parallel([g, n], lambda p: self.out.append(Op(
            "store", [sb32, p[0], p[1], self.decoded(sb, [p[1], p[0]], op.span)], attrs={"inbounds": [True, True]})))
        fa, fb = a.type.dtype, b.type.dtype
        table = self.buffer(F32, [self.c(2), self.c(256)], op.span)  # the values of a's and b's codes

        def entry(t):
            byte = self.emit("cast", [t], [U8]).result
            for row, dtype in ((0, fa), (1, fb)):
                code = self.emit("cast", [byte], [dtype]).result
                self.out.append(Op("store", [table, self.c(row), t, self.emit("cast", [code], [F32]).result],
                                   attrs={"inbounds": [True, True]}))

        self.loop(self.c(256), entry)
        self.out.append(Op("scaled_tiles", [a_mem, sa32, b_mem, sb32, table, out, m, n, g, c], [], {
            "fa": fa.name, "fb": fb.name, "a_axes": a_axes, "b_axes": b_axes,
            "mr": MR, "vectors": VECTORS, "lanes": LANES, "mc": MC, "nc": NC}, span=op.span))
        return out


# ---- physical: the register-tiled nest of scaled_tiles ---------------------------------------------------
def mul_add(dtype, a: P.Expr, b: P.Expr, c: P.Expr) -> P.Expr:
    """``a * b + c`` as one multiply and one add, each rounded (the sparse contractions: the
    interpreter's arithmetic, so results match it bit for bit on every target)."""
    return P.Binary(dtype, "add", P.Binary(dtype, "mul", a, b), c)


class _Builder:
    """Small helpers for writing physical statements."""

    def __init__(self, low):
        self.low = low

    def c(self, v):
        return P.Const(INDEX, v)

    def ix(self, name, a, b):
        return P.Binary(INDEX, name, a, b)

    def add(self, *terms):
        total = terms[0]
        for t in terms[1:]:
            total = self.ix("add", total, t)
        return total

    def mul(self, a, b):
        return self.ix("mul", a, b)

    def var(self, hint, dtype=INDEX):
        return self.low.fresh(hint, dtype)

    def let(self, hint, value, out, dtype=INDEX):
        v = self.var(hint, dtype)
        out.append(P.Assign(v, value))
        return P.read(v)

    def ceil_div(self, a, b: int):
        return self.ix("floordiv", self.ix("add", a, self.c(b - 1)), self.c(b))

    def both(self, *conds):
        total = conds[0]
        for cond in conds[1:]:
            total = P.Binary(BOOL, "and", total, cond)
        return total

    def lt(self, a, b):
        return P.Compare(BOOL, "lt", a, b)

    def le(self, a, b):
        return P.Compare(BOOL, "le", a, b)

    def eq(self, a, b):
        return P.Compare(BOOL, "eq", a, b)


def _strides(h: _Builder, sym: P.TensorSym, axes: list, c: P.Expr) -> list:
    """The element stride of each logical axis: a memory axis' stride, times C for a split axis."""
    out = []
    for axis, times in axes:
        stride = P.Field(INDEX, sym, "stride", axis)
        out.append(h.mul(stride, c) if times == "C" else stride)
    return out


def lower_scaled_tiles(low, op: Op) -> list[P.Stmt]:
    h = _Builder(low)
    A, SA, B, SB, TABLE, OUT = (low.tensors[id(v)] for v in op.operands[:6])
    m, n, g, c = (low.read(v) for v in op.operands[6:])
    attrs = op.attrs
    mr, vectors, lanes, mc, nc = (attrs[k] for k in ("mr", "vectors", "lanes", "mc", "nc"))
    nr = vectors * lanes
    fa, fb = DTYPES[attrs["fa"]], DTYPES[attrs["fb"]]
    vt = P.VectorType(F32, lanes)
    out: list[P.Stmt] = []
    s_am, s_ag, s_ac = (h.let(f"s_a{k}", s, out) for k, s in zip("mgc", _strides(h, A, attrs["a_axes"], c)))
    s_bg, s_bc, s_bn = (h.let(f"s_b{k}", s, out) for k, s in zip("gcn", _strides(h, B, attrs["b_axes"], c)))
    s_om, s_on = (h.let(f"s_o{k}", P.Field(INDEX, OUT, "stride", k), out) for k in range(2))
    s_sa = h.let("s_sa", P.Field(INDEX, SA, "stride", 0), out)
    s_sb = h.let("s_sb", P.Field(INDEX, SB, "stride", 0), out)
    s_t = h.let("s_table", P.Field(INDEX, TABLE, "stride", 0), out)
    tiles_m = h.let("tiles_m", h.ceil_div(m, mc), out)
    tiles_n = h.let("tiles_n", h.ceil_div(n, nc), out)
    # Vector tiles read consecutive codes of b: unit stride along N (and, for packed f4, even
    # element offsets) and write consecutive results.
    vector_ok = h.both(h.eq(s_bn, h.c(1)), h.eq(s_on, h.c(1)))
    if fb.bits == 4:
        vector_ok = h.both(vector_ok, h.eq(h.ix("and", s_bg, h.c(1)), h.c(0)),
                           h.eq(h.ix("and", s_bc, h.c(1)), h.c(0)))
    vectors_ok = h.var("vector_ok", BOOL)
    out.append(P.Assign(vectors_ok, vector_ok))

    def a_value(row_base, cc, scale):  # a's code looked up in the table, times its row's scale
        code = P.Load(fa, A, h.add(row_base, h.mul(cc, s_ac)))
        return P.Binary(F32, "mul", P.Load(F32, TABLE, P.Cast(INDEX, code)), scale)

    def vector_tile(i, j, rows: int, vecs: int) -> tuple[P.Stmt, ...]:
        """rows x (vecs * lanes) results at (i, j) in registers: every code of b decoded in registers."""
        accs = [[h.var(f"acc{r}_{v}", vt) for v in range(vecs)] for r in range(rows)]
        stmts: list[P.Stmt] = [P.Assign(accs[r][v], P.Splat(vt, P.Const(F32, 0.0)))
                               for r in range(rows) for v in range(vecs)]
        gg, cc = h.var("g"), h.var("c")
        gbody: list[P.Stmt] = []
        row_base = [h.let(f"arow{r}", h.add(h.mul(h.add(i, h.c(r)), s_am), h.mul(P.read(gg), s_ag)), gbody)
                    for r in range(rows)]
        row_scale = [h.let(f"sa{r}", P.Load(F32, SA, h.add(h.mul(h.add(i, h.c(r)), s_sa), P.read(gg))), gbody, F32)
                     for r in range(rows)]
        col_scale = []
        for v in range(vecs):
            sv = h.var(f"sb{v}", vt)
            gbody.append(P.Assign(sv, P.Load(vt, SB, h.add(h.mul(P.read(gg), s_sb), j, h.c(v * lanes)))))
            col_scale.append(P.read(sv))
        bbase = h.let("bbase", h.add(h.mul(P.read(gg), s_bg), j), gbody)
        micro: list[P.Stmt] = []
        bvecs = []
        for v in range(vecs):
            bv = h.var(f"bv{v}", vt)
            codes = P.Load(P.VectorType(fb, lanes), B, h.add(bbase, h.mul(P.read(cc), s_bc), h.c(v * lanes)))
            micro.append(P.Assign(bv, P.Binary(vt, "mul", P.Cast(vt, codes), col_scale[v])))
            bvecs.append(P.read(bv))
        for r in range(rows):
            av = h.var(f"av{r}", vt)
            micro.append(P.Assign(av, P.Splat(vt, a_value(row_base[r], P.read(cc), row_scale[r]))))
            for v in range(vecs):
                micro.append(P.Assign(accs[r][v], P.MulAdd(vt, P.read(av), bvecs[v], P.read(accs[r][v]))))
        gbody.append(P.Loop(cc, c, tuple(micro)))
        stmts.append(P.Loop(gg, g, tuple(gbody)))
        for r in range(rows):
            for v in range(vecs):
                stmts.append(P.Store(OUT, h.add(h.mul(h.add(i, h.c(r)), s_om), j, h.c(v * lanes)), P.read(accs[r][v])))
        return tuple(stmts)

    def element(row, col) -> tuple[P.Stmt, ...]:
        """One result alone: the same products in the same order, both codes looked up."""
        eg, ecc = h.var("eg"), h.var("ec_c")
        total = h.var("sum", F32)
        inner: list[P.Stmt] = []
        scale_a = h.let("esa", P.Load(F32, SA, h.add(h.mul(row, s_sa), P.read(eg))), inner, F32)
        scale_b = h.let("esb", P.Load(F32, SB, h.add(h.mul(P.read(eg), s_sb), col)), inner, F32)
        arow = h.let("earow", h.add(h.mul(row, s_am), h.mul(P.read(eg), s_ag)), inner)
        bcol = h.let("ebcol", h.add(h.mul(P.read(eg), s_bg), h.mul(col, s_bn)), inner)
        code = P.Load(fb, B, h.add(bcol, h.mul(P.read(ecc), s_bc)))
        y = P.Binary(F32, "mul", P.Load(F32, TABLE, h.add(s_t, P.Cast(INDEX, code))), scale_b)
        step = P.Assign(total, P.MulAdd(F32, a_value(arow, P.read(ecc), scale_a), y, P.read(total)))
        inner.append(P.Loop(ecc, c, (step,)))
        return (P.Assign(total, P.Const(F32, 0.0)), P.Loop(eg, g, tuple(inner)),
                P.Store(OUT, h.add(h.mul(row, s_om), h.mul(col, s_on)), P.read(total)))

    tile = h.var("tile")
    body: list[P.Stmt] = []
    m0 = h.let("m0", h.mul(h.ix("floordiv", P.read(tile), tiles_n), h.c(mc)), body)
    n0 = h.let("n0", h.mul(h.ix("mod", P.read(tile), tiles_n), h.c(nc)), body)
    mlen = h.let("mlen", h.ix("min", h.c(mc), h.ix("sub", m, m0)), body)
    nlen = h.let("nlen", h.ix("min", h.c(nc), h.ix("sub", n, n0)), body)
    jr, ir = h.var("jr"), h.var("ir")
    jbody: list[P.Stmt] = []
    j = h.let("j", h.add(n0, h.mul(P.read(jr), h.c(nr))), jbody)
    ibody: list[P.Stmt] = []
    i = h.let("i", h.add(m0, h.mul(P.read(ir), h.c(mr))), ibody)
    rows_in = h.var("rows_in", BOOL)
    ibody.append(P.Assign(rows_in, h.both(P.read(vectors_ok), h.le(h.add(i, h.c(mr)), m))))
    full = h.both(P.read(rows_in), h.le(h.add(j, h.c(nr)), n))
    # Edge tiles: whole rows take the remaining columns one vector at a time, then alone.
    chunk, er, ec = h.var("chunk"), h.var("er"), h.var("ec")
    edge: list[P.Stmt] = []
    count = h.let("chunks", P.Select(INDEX, P.read(rows_in), h.ix("min", h.c(vectors - 1),
                                                                   h.ix("floordiv", h.ix("sub", n, j), h.c(lanes))),
                                     h.c(0)), edge)
    edge.append(P.Loop(chunk, count, vector_tile(i, h.add(j, h.mul(P.read(chunk), h.c(lanes))), mr, 1)))
    first_col = h.let("first_col", h.mul(count, h.c(lanes)), edge)
    row, col = h.add(i, P.read(er)), h.add(j, P.read(ec))
    edge.append(P.Loop(er, h.c(mr), (P.Loop(ec, h.c(nr), (
        P.If(h.both(h.lt(row, m), h.lt(col, n), h.le(first_col, P.read(ec))), element(row, col)),)),)))
    ibody.append(P.If(full, vector_tile(i, j, mr, vectors), tuple(edge)))
    jbody.append(P.Loop(ir, h.ceil_div(mlen, mr), tuple(ibody)))
    body.append(P.Loop(jr, h.ceil_div(nlen, nr), tuple(jbody)))
    out.append(P.Loop(tile, h.mul(tiles_m, tiles_n), tuple(body), "parallel", h.c(1)))
    return out
