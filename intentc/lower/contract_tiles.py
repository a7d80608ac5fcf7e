"""The ``expand_contract_tiles`` pass's lowering of a ``contract_tiles`` nest (T3): the
``parallel`` loop over the ``MC x NC`` blocks of C and the register-tiled micro-kernel that
accumulates each tile in vector registers over its K blocks (``contract_lowering.py`` builds the
op and its packed operands; its docstring describes the scheme)."""
from __future__ import annotations

from intentc.kir.types import BOOL, INDEX
from intentc.lower import program as P
from intentc.lower.names import NameSupply


def lower_contract_tiles(names: NameSupply, nest: P.TileNest) -> list[P.Stmt]:
    """The ``parallel`` loop over the ``mc x nc`` blocks of C and its register-tiled micro-kernel.

    C is ``[m, n]`` or ``[batch, m, n]`` with any strides (the kernel's output, or a buffer).
    A tile that lies inside C, on a unit column stride, loads and stores its rows as
    vectors; an edge tile goes through its block's slot of ``scratch``, element by element."""
    ap, bp, c, scratch = nest.tensors
    batch, m, n, k = nest.scalars
    acc = ap.dtype
    attrs = dict(nest.attrs)
    mr, nr, lanes, mc, nc, kc = (attrs[key] for key in ("mr", "nr", "lanes", "mc", "nc", "kc"))
    vectors = nr // lanes
    vt = P.VectorType(acc, lanes)

    def const(v):
        return P.Const(INDEX, v)

    def ix(name, a, b):
        return P.Binary(INDEX, name, a, b)

    def var(hint, dtype=INDEX):
        return names.fresh(hint, dtype)

    def let(hint, value, out):
        v = var(hint)
        out.append(P.Assign(v, value))
        return P.read(v)

    def ceil_div(a, b):
        return ix("floordiv", ix("add", a, const(b - 1)), const(b))

    def both(a, b):
        return P.Binary(BOOL, "and", a, b)

    def stride(axis):
        return P.Field(INDEX, c, "stride", axis - 3 + c.rank)

    out: list[P.Stmt] = []
    mp = let("mp", ix("mul", ceil_div(m, mr), const(mr)), out)
    np_ = let("np", ix("mul", ceil_div(n, nr), const(nr)), out)
    # Blocks of at most mc x nc, as even as whole register tiles allow (so that no thread is
    # left with a thin last block while the other works): sizes from the problem only.
    tiles_m = let("tiles_m", ceil_div(mp, mc), out)
    tiles_n = let("tiles_n", ceil_div(np_, nc), out)
    block_m = let("block_m", ix("mul", ix("floordiv", ix("add", ix("floordiv", mp, const(mr)),
                                                             ix("sub", tiles_m, const(1))),
                                          ix("max", tiles_m, const(1))), const(mr)), out)
    block_n = let("block_n", ix("mul", ix("floordiv", ix("add", ix("floordiv", np_, const(nr)),
                                                             ix("sub", tiles_n, const(1))),
                                          ix("max", tiles_n, const(1))), const(nr)), out)
    per = let("tiles", ix("mul", tiles_m, tiles_n), out)
    # K blocks: at least one, so that K == 0 still stores the zero sums.
    kblocks = let("kblocks", ix("max", ceil_div(k, kc), const(1)), out)

    tile = var("tile")
    body: list[P.Stmt] = []
    bb = let("bb", ix("floordiv", P.read(tile), per), body)
    rest = let("rest", ix("mod", P.read(tile), per), body)
    m0 = let("m0", ix("mul", ix("floordiv", rest, tiles_n), block_m), body)
    n0 = let("n0", ix("mul", ix("mod", rest, tiles_n), block_n), body)
    mlen = let("mlen", ix("max", ix("min", block_m, ix("sub", mp, m0)), const(0)), body)
    nlen = let("nlen", ix("max", ix("min", block_n, ix("sub", np_, n0)), const(0)), body)
    arow = let("arow", ix("mul", bb, mp), body)
    brow = let("brow", ix("mul", bb, np_), body)
    crow = let("crow", ix("mul", bb, stride(0)) if c.rank == 3 else const(0), body)
    slot = let("slot", ix("mul", P.read(tile), const(mr * nr)), body)

    pc = var("pc")
    kbody: list[P.Stmt] = []
    k0 = let("k0", ix("mul", P.read(pc), const(kc)), kbody)
    klen = let("klen", ix("min", const(kc), ix("sub", k, k0)), kbody)

    jr = var("jr")
    jbody: list[P.Stmt] = []
    j = let("j", ix("add", n0, ix("mul", P.read(jr), const(nr))), jbody)
    bbase = let("bbase", ix("add", ix("mul", ix("add", brow, j), k), ix("mul", k0, const(nr))), jbody)

    ir = var("ir")
    ibody: list[P.Stmt] = []
    i = let("i", ix("add", m0, ix("mul", P.read(ir), const(mr))), ibody)
    abase = let("abase", ix("add", ix("mul", ix("add", arow, i), k), ix("mul", k0, const(mr))), ibody)
    cbase = let("cbase", ix("add", crow, ix("add", ix("mul", i, stride(1)), ix("mul", j, stride(2)))), ibody)
    full = var("full", BOOL)
    ibody.append(P.Assign(full, both(both(P.Compare(BOOL, "le", ix("add", i, const(mr)), m),
                                          P.Compare(BOOL, "le", ix("add", j, const(nr)), n)),
                                     P.Compare(BOOL, "eq", stride(2), const(1)))))
    accs = [[var(f"acc{r}_{v}", vt) for v in range(vectors)] for r in range(mr)]

    def c_at(r, v):  # row r, vector v of a full tile (unit column stride)
        return ix("add", cbase, ix("add", ix("mul", const(r), stride(1)), const(v * lanes)))

    def s_at(r, v):
        return ix("add", slot, const(r * nr + v * lanes))

    def edge_elements(action) -> P.Stmt:
        """action(C offset, scratch offset) for the tile's elements inside C (run-time trip
        counts: a loop LLVM keeps small)."""
        r, col = var("er"), var("ec")
        at_c = ix("add", cbase, ix("add", ix("mul", P.read(r), stride(1)), ix("mul", P.read(col), stride(2))))
        at_s = ix("add", slot, ix("add", ix("mul", P.read(r), const(nr)), P.read(col)))
        rows, cols = ix("min", const(mr), ix("sub", m, i)), ix("min", const(nr), ix("sub", n, j))
        return P.Loop(r, rows, (P.Loop(col, cols, action(at_c, at_s)),))

    every = [(r, v) for r in range(mr) for v in range(vectors)]
    zero = P.Splat(vt, P.Const(acc, 0))
    start = tuple(P.Assign(accs[r][v], zero) for r, v in every)
    resume_full = tuple(P.Assign(accs[r][v], P.Load(vt, c, c_at(r, v))) for r, v in every)
    clear = tuple(P.Store(scratch, s_at(r, v), zero) for r, v in every)
    fill = edge_elements(lambda at_c, at_s: (P.Store(scratch, at_s, P.Load(acc, c, at_c)),))
    resume_edge = clear + (fill,) + tuple(P.Assign(accs[r][v], P.Load(vt, scratch, s_at(r, v))) for r, v in every)
    ibody.append(P.If(P.Compare(BOOL, "eq", P.read(pc), const(0)), start,
                      (P.If(P.read(full), resume_full, resume_edge),)))
    kk = var("kk")
    micro: list[P.Stmt] = []
    bvec = [var(f"b{v}", vt) for v in range(vectors)]
    for v in range(vectors):
        micro.append(P.Assign(bvec[v], P.Load(vt, bp, ix("add", bbase, ix("add", ix("mul", P.read(kk), const(nr)),
                                                                           const(v * lanes))))))
    for r in range(mr):
        a = var(f"a{r}", vt)
        micro.append(P.Assign(a, P.Splat(vt, P.Load(acc, ap, ix("add", abase, ix("add", ix("mul", P.read(kk),
                                                                                            const(mr)), const(r)))))))
        for v in range(vectors):
            micro.append(P.Assign(accs[r][v], P.MulAdd(vt, P.read(a), P.read(bvec[v]), P.read(accs[r][v]))))
    ibody.append(P.Loop(kk, klen, tuple(micro)))
    store_full = tuple(P.Store(c, c_at(r, v), P.read(accs[r][v])) for r, v in every)
    spill = tuple(P.Store(scratch, s_at(r, v), P.read(accs[r][v])) for r, v in every)
    copy = edge_elements(lambda at_c, at_s: (P.Store(c, at_c, P.Load(acc, scratch, at_s)),))
    ibody.append(P.If(P.read(full), store_full, spill + (copy,)))

    jbody.append(P.Loop(ir, ix("floordiv", mlen, const(mr)), tuple(ibody)))
    kbody.append(P.Loop(jr, ix("floordiv", nlen, const(nr)), tuple(jbody)))
    body.append(P.Loop(pc, kblocks, tuple(kbody)))
    out.append(P.Loop(tile, ix("mul", batch, per), tuple(body), "parallel", const(1)))
    return out
