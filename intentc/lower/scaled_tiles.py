"""The ``expand_scaled_tiles`` pass's lowering of a ``scaled_tiles`` nest (T4): the register-tiled
loop nest of a microscaled contraction over the codes themselves (``scaled_lowering.py`` builds
the op, its decoded scales and code tables; its docstring describes the scheme). Also the
physical-expression helpers the sparse tiles share (``TileExprs``, ``mul_add``)."""
from __future__ import annotations

from intentc.kir.types import BOOL, DTYPES, INDEX
from intentc.lower import program as P
from intentc.lower.names import NameSupply
from intentc.lower.scaled_lowering import F32


def mul_add(dtype, a: P.Expr, b: P.Expr, c: P.Expr) -> P.Expr:
    """``a * b + c`` as one multiply and one add, each rounded (the sparse contractions: the
    interpreter's arithmetic, so results match it bit for bit on every target)."""
    return P.Binary(dtype, "add", P.Binary(dtype, "mul", a, b), c)


class TileExprs:
    """Small helpers for writing physical statements."""

    def __init__(self, names: NameSupply):
        self.names = names

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
        return self.names.fresh(hint, dtype)

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


def _strides(h: TileExprs, sym: P.TensorSym, axes: list, c: P.Expr) -> list:
    """The element stride of each logical axis: a memory axis' stride, times C for a split axis."""
    out = []
    for axis, times in axes:
        stride = P.Field(INDEX, sym, "stride", axis)
        out.append(h.mul(stride, c) if times == "C" else stride)
    return out


def lower_scaled_tiles(names: NameSupply, nest: P.TileNest) -> list[P.Stmt]:
    h = TileExprs(names)
    A, SA, B, SB, TABLE, OUT = nest.tensors
    m, n, g, c = nest.scalars
    attrs = dict(nest.attrs)
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
