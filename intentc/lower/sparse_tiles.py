"""The ``expand_sparse_tiles`` pass's lowering of the ``sparse24_tiles`` and ``csr_tiles`` nests
(T5): the register-tiled loop nests that multiply only the stored values (``sparse_lowering.py``
builds the ops and their packed operands; its docstring describes the scheme)."""
from __future__ import annotations

from intentc.kir.types import BOOL, INDEX
from intentc.lower import program as P
from intentc.lower.names import NameSupply
from intentc.lower.scaled_tiles import TileExprs, mul_add
from intentc.lower.sparse_lowering import I32


def lower_sparse_tiles(names: NameSupply, nest: P.TileNest) -> list[P.Stmt]:
    """The loop nest of a ``sparse24_tiles`` or ``csr_tiles`` nest."""
    if nest.kind == "sparse24_tiles":
        return _two_four_tiles(names, nest)
    return _csr_tiles(names, nest)


def _two_four_tiles(names: NameSupply, nest: P.TileNest) -> list[P.Stmt]:
    """parallel over MC x NC blocks; per MR x NR tile, for every stored value t (in column order)
    and row r: acc[r][v] += vals[t][r] * bp[panel][cols[t][r]][v] (one vector FMA per vector)."""
    h = TileExprs(names)
    VALS, COLS, BP, OUT = nest.tensors
    m, n, k, half = nest.scalars
    mr, vectors, lanes, mc, nc = (nest.attr(key) for key in ("mr", "vectors", "lanes", "mc", "nc"))
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


def _csr_tiles(names: NameSupply, nest: P.TileNest) -> list[P.Stmt]:
    """parallel over (blocks of rows, column panels); per row and panel, for every stored value p
    in storage order: acc[v] += values[p] * bp[panel][columns[p]][v]."""
    h = TileExprs(names)
    OFF, COL, VAL, BP, OUT = nest.tensors
    m, n, k = nest.scalars
    vectors, lanes, rows = (nest.attr(key) for key in ("vectors", "lanes", "rows"))
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
