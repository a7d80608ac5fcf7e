"""How contractions (T3) and histograms (T6) are lowered for CPUs.

contract — a matrix-multiply shaped contraction (free axes on both operands, at the top
of a kernel) is computed the way BLAS libraries do it:

1. ``expand_tensor_exprs`` packs the operands, converted to the accumulator dtype, into
   buffers: ``A`` as panels of ``MR`` rows ``[batch][M/MR][K][MR]`` and ``B`` as panels of
   ``NR`` columns ``[batch][N/NR][K][NR]`` (``M`` = product of the first operand's free
   axes, ``N`` of the second's, ``K`` of the reduction axes; panels padded with zeros).
   Packing reads the operands through the element relation, so strided views,
   transposes and fused expressions are packed without temporaries (P6).
2. A ``contract_tiles`` op (lowered by ``to_physical`` through :func:`lower_contract_tiles`)
   computes ``C`` — the kernel's output itself when the result is returned as is in the
   canonical layout, else a ``[batch, M, N]`` buffer: a ``parallel`` loop over ``MC x NC``
   blocks of ``C``; in each, K is walked in blocks of ``KC`` (the ``B`` panel stays in L1,
   the ``A`` block in L2) and every ``MR x NR`` tile keeps its accumulators in vector
   registers over its K block, one fused multiply-add per vector (``MulAdd``: the
   contraction grants fusion and regrouping, T3/T7). Tiles on the edge of ``C`` (or of a
   ``C`` without unit column stride) go through a per-block scratch slot.
3. The result is ``C`` viewed with the free axes unflattened and permuted to the result's
   axis order; consumers read it element by element.

Each element of ``C`` is accumulated by one task, in k order (blocks of K in order,
continuing from the stored partial sum), and the block sizes are constants: results
are bit-identical for every thread count. Other contractions (dot products,
matrix-vector products, any contraction inside ``I.parallel``) are a ``fold`` per result
element, blocked like a reduction when the result is a scalar at the top of a kernel.

histogram — the values are cut into blocks whose size depends only on the number of
values and bins; each block counts into its own private histogram (a row of a
``[blocks, n + 1]`` buffer; column ``n`` takes the values that are not counted) in
sub-chunks: first the bins of a sub-chunk are computed into a small index buffer (a
loop LLVM vectorises), then added one by one. The private histograms are then summed
in block order, so weighted float histograms are the same for every thread count.
"""
from __future__ import annotations

from intentc.kir.contract_spec import parse_spec
from intentc.kir.core import Block, Op, Value
from intentc.kir.types import BOOL, DTYPES, I32, INDEX, TensorType
from intentc.lower import program as P

# Register tiles of the micro-kernel: MR rows x NR columns (NR = VECTORS vectors of
# VECTOR_BYTES), and the cache blocks (MC x NC blocks of C, KC deep: the A block stays in
# L2, a B panel in L1). Constants: every block boundary depends on the problem size only.
# Tuned on an AVX-512 core (32 vector registers): 6 x 4 accumulator vectors, 4 vectors of B
# and one broadcast of A. Other targets run the same loop nest with their own registers.
VECTOR_BYTES = 64
VECTORS = 4
MR = 6
MC, NC, KC = 192, 256, 256

# Histogram blocks: B = max(HIST_MIN_BLOCK, ceil(count / HIST_MAX_BLOCKS), 16 (n + 1)),
# counted in sub-chunks of HIST_CHUNK values.
HIST_MIN_BLOCK = 4096
HIST_MAX_BLOCKS = 256
HIST_CHUNK = 1024


def tile_shape(acc) -> tuple[int, int, int]:
    """(MR, NR, lanes) of the micro-kernel for an accumulator dtype."""
    lanes = max(1, VECTOR_BYTES // acc.itemsize)
    return MR, VECTORS * lanes, lanes


class ContractExpansion:
    """Mixed into the expander of ``expand_tensor_exprs`` (uses emit, element, extent, ...)."""

    # -- small builders -----------------------------------------------------------------------
    def loop(self, extent: Value, body) -> None:
        """An ordered ``for`` over ``[0, extent)`` without carries; ``body(t)`` emits ops."""
        t = Value(INDEX, "t")
        region = self._with_block([t], lambda: (body(t), [])[1])
        self.out.append(Op("for", [self.domain(extent)], [], None, [region]))

    def ceil_div(self, a: Value, b: Value) -> Value:
        return self.ix("floordiv", self.ix("add", a, self.ix("sub", b, self.c(1))), b)

    def scalar(self, dtype, value) -> Value:
        return self.emit("const", [], [dtype], {"value": value}).result

    def as_dtype(self, value: Value, dtype) -> Value:
        return value if value.type == dtype else self.emit("cast", [value], [dtype]).result

    def put(self, buf: Value, index: list[Value], value: Value) -> None:
        self.out.append(Op("store", [buf] + list(index) + [value], attrs={"inbounds": [True] * len(index)}))

    def get(self, buf: Value, index: list[Value]) -> Value:
        return self.emit("load", [buf] + list(index), [buf.type.dtype], {"inbounds": [True] * len(index)}).result

    def relation(self, name: str, operands: list[Value], type_, attrs: dict) -> Value:
        """A relation op consumed element by element (registered, never emitted)."""
        op = Op(name, operands, [type_], attrs)
        self.defs[id(op.result)] = op
        return op.result

    # -- contract (T3) ----------------------------------------------------------------------------
    def materialize_contract(self, op: Op, replace: dict) -> None:
        spec = parse_spec(op.attrs["spec"])
        acc = DTYPES[op.attrs["acc"]]
        a, b = op.operands
        extent: dict[str, Value] = {}
        for value, letters in ((b, spec.b), (a, spec.a)):
            for axis, letter in enumerate(letters):
                extent[letter] = self.extent(value, axis)
        if spec.free_a and spec.free_b and self.depth == 0:
            result = self.contract_tiled(op, spec, acc, extent)
        else:
            result = self.contract_folds(op, spec, acc, extent)
        if result is not None:
            replace[id(op.result)] = result

    def product_of(self, letters: str, extent: dict) -> Value:
        return self.product([extent[c] for c in letters])

    def coords(self, letters: str, ordinal: Value, extent: dict) -> dict[str, Value]:
        return dict(zip(letters, self.unravel(ordinal, [extent[c] for c in letters]))) if letters else {}

    def operand_at(self, x: Value, letters: str, coords: dict, acc, span) -> Value:
        return self.as_dtype(self.element(x, [coords[c] for c in letters], span, proven=True), acc)

    def contract_folds(self, op: Op, spec, acc, extent: dict) -> Value:
        """One fold over the reduction axes per result element (T3 grants the regrouping)."""
        a, b = op.operands
        reduced = spec.reduced
        count = self.product_of(reduced, extent)
        x, y = Value(acc, "x"), Value(acc, "y")
        combine = Block([x, y], [Op("add", [x, y], [acc])])
        combine.ops.append(Op("yield", [combine.ops[0].result]))
        zero = self.scalar(acc, 0)

        def elements(outer: dict):
            def element(t):
                coords = dict(outer)
                coords.update(self.coords(reduced, t, extent))
                va = self.operand_at(a, spec.a, coords, acc, op.span)
                vb = self.operand_at(b, spec.b, coords, acc, op.span)
                return [self.emit("mul", [va, vb], [acc]).result]
            return element

        if not spec.out:
            if self.depth == 0:
                return self.blocked_fold(count, [zero], elements({}), combine, op.span)[0]
            return self.fold(count, [zero], elements({}), combine, op.span)[0]
        extents = [extent[c] for c in spec.out]
        buf = self.result_buffer(op.result, acc, extents, op.span)
        if buf is None:
            return None  # never read

        def body(points):
            (value,) = self.fold(count, [zero], elements(dict(zip(spec.out, points))), combine, op.span)
            self.put(buf, list(points), value)

        self.parallel(extents, body)
        return buf

    def contract_tiled(self, op: Op, spec, acc, extent: dict) -> Value | None:
        a, b = op.operands
        if id(op.result) not in getattr(self, "used", {id(op.result)}):
            return None  # never read: nothing to compute
        mr, nr, lanes = tile_shape(acc)
        mc, nc = max(MC // mr, 1) * mr, max(NC // nr, 1) * nr
        batch = self.product_of(spec.batch, extent)
        m = self.product_of(spec.free_a, extent)
        n = self.product_of(spec.free_b, extent)
        k = self.product_of(spec.reduced, extent)
        mp = self.ix("mul", self.ceil_div(m, self.c(mr)), self.c(mr))
        np_ = self.ix("mul", self.ceil_div(n, self.c(nr)), self.c(nr))
        # C: the kernel's output itself when the result is returned as is and laid out as
        # [batch?, m, n]; else a [batch, m, n] buffer that the result views.
        direct = spec.out == spec.canonical and len(spec.batch) <= 1 and len(spec.free_a) == 1 \
            and len(spec.free_b) == 1 and id(op.result) in getattr(self, "destination", {})
        if direct:
            c = self.result_buffer(op.result, acc, [extent[ch] for ch in spec.out], op.span)
        else:
            c = self.buffer(acc, [batch, m, n], op.span)
        ap = self.buffer(acc, [self.product([batch, mp, k])], op.span)
        bp = self.buffer(acc, [self.product([batch, np_, k])], op.span)
        tiles = self.product([batch, self.ceil_div(mp, self.c(mc)), self.ceil_div(np_, self.c(nc))])
        scratch = self.buffer(acc, [self.ix("mul", tiles, self.c(mr * nr))], op.span)  # edge tiles
        zero = self.scalar(acc, 0)
        self.pack(a, spec.a, spec.free_a, mr, batch, m, mp, k, ap, spec, extent, acc, zero, op.span)
        self.pack(b, spec.b, spec.free_b, nr, batch, n, np_, k, bp, spec, extent, acc, zero, op.span)
        self.out.append(Op("contract_tiles", [ap, bp, c, scratch, batch, m, n, k], [], {
            "acc": acc.name, "mr": mr, "nr": nr, "lanes": lanes, "mc": mc, "nc": nc, "kc": KC}, span=op.span))
        if direct:
            return c
        # The result: C with the free axes unflattened, in result order.
        axes, operands = [], [c]
        for group, size in ((spec.batch, batch), (spec.free_a, m), (spec.free_b, n)):
            if group:
                axes.append("range")
                operands += [self.c(0), size]
            else:
                axes.append("fix")
                operands.append(self.c(0))
        ranges = sum(1 for kind in axes if kind == "range")
        value = self.relation("view", operands, TensorType(acc, (None,) * ranges), {"axes": axes})
        canonical = spec.canonical
        if len(canonical) != ranges:
            shape = [extent[ch] for ch in canonical]
            value = self.relation("reshape", [value] + shape, TensorType(acc, (None,) * len(canonical)), {})
        if spec.perm != list(range(len(canonical))):
            value = self.relation("permute", [value], TensorType(acc, (None,) * len(canonical)),
                                  {"perm": spec.perm})
        return value

    def pack(self, x: Value, letters: str, free: str, width: int, batch: Value, rows: Value, padded: Value,
             k: Value, buf: Value, spec, extent: dict, acc, zero: Value, span) -> None:
        """buf[((b * padded + p * width) * k + t) * width + w] = x at (batch b, free row p * width + w,
        reduction t), 0 past ``rows``: panels of ``width`` rows, each contiguous over k."""
        panels = self.ix("floordiv", padded, self.c(width))
        # Walk the operand's innermost axis innermost, so that a row-major operand is read in order.
        k_inner = bool(letters) and letters[-1] in spec.reduced

        def body(points):
            bb = self.ix("floordiv", points[0], panels)
            p = self.ix("mod", points[0], panels)
            first = self.ix("mul", p, self.c(width))
            base = self.ix("mul", self.ix("add", self.ix("mul", bb, padded), first), k)
            last = self.ix("sub", rows, self.c(1))
            outer = self.coords(spec.batch, bb, extent)

            def element(t, w, edge: bool):
                row = self.ix("add", first, w)
                coords = dict(outer)
                coords.update(self.coords(free, self.ix("min", row, last) if edge else row, extent))
                coords.update(self.coords(spec.reduced, t, extent))
                value = self.operand_at(x, letters, coords, acc, span)
                if edge:  # rows past the end read the last row (in bounds) and pack zeros
                    inside = self.emit("cmp", [row, rows], [BOOL], {"pred": "lt"}).result
                    value = self.emit("select", [inside, value, zero], [acc]).result
                at = self.ix("add", self.ix("add", base, self.ix("mul", t, self.c(width))), w)
                self.put(buf, [at], value)

            def panel(edge: bool):
                if k_inner:
                    self.loop(self.c(width), lambda w: self.loop(k, lambda t: element(t, w, edge)))
                else:
                    self.loop(k, lambda t: self.loop(self.c(width), lambda w: element(t, w, edge)))
                return []

            full = self.emit("cmp", [self.ix("add", first, self.c(width)), rows], [BOOL], {"pred": "le"}).result
            self.out.append(Op("if", [full], [], None, [self._with_block([], lambda: panel(False)),
                                                        self._with_block([], lambda: panel(True))]))

        # One panel per block of work (width x k elements; the pool hands out runs of panels).
        self.parallel([self.ix("mul", batch, panels)], body, grain=1)

    # -- histogram (T6) ------------------------------------------------------------------------------
    def materialize_histogram(self, op: Op, replace: dict) -> None:
        ranged, weighted = op.attrs["range"], op.attrs["weighted"]
        values, n = op.operands[0], op.operands[1]
        weights = op.operands[-1] if weighted else None
        acc = op.result.type.dtype
        rank = values.type.rank
        extents = [self.extent(values, axis) for axis in range(rank)]
        count = self.product(extents)
        width = self.ix("add", n, self.c(1))  # column n collects what is not counted
        size = self.ix("max", self.ix("max", self.c(HIST_MIN_BLOCK), self.ceil_div(count, self.c(HIST_MAX_BLOCKS))),
                       self.ix("mul", width, self.c(16)))
        has_bins = self.emit("cmp", [n, self.c(0)], [BOOL], {"pred": "gt"}).result
        blocks = self.emit("select", [has_bins, self.ceil_div(count, size), self.c(0)], [INDEX]).result
        if ranged:
            lo, hi = op.operands[2:4]
            binning = lo.type
            n_f, zero_f = self.as_dtype(n, binning), self.scalar(binning, 0.0)
            scale = self.emit("div", [n_f, self.emit("sub", [hi, lo], [binning]).result], [binning]).result
        private = self.buffer(acc, [blocks, width], op.span)
        staged = self.buffer(I32, [blocks, self.c(HIST_CHUNK)], op.span)  # each block's bins of a chunk
        zero, one = self.scalar(acc, 0), self.scalar(acc, 1)

        # Bin numbers are i32 (sema keeps n < 2**31, and n <= 2**24 with a range, so that n is
        # exact as a float): t is clamped to [0, n] (NaN to 0) before an in-range conversion,
        # which vectorises and gives the saturating conversion's bin.
        n32 = self.as_dtype(n, I32)
        last = self.emit("sub", [n32, self.scalar(I32, 1)], [I32]).result

        def bin_of(ordinal: Value) -> Value:
            v = self.element(values, self.unravel(ordinal, extents), op.span, proven=True)
            if ranged:
                v = self.as_dtype(v, binning)
                above = self.emit("cmp", [v, lo], [BOOL], {"pred": "ge"}).result
                below = self.emit("cmp", [v, hi], [BOOL], {"pred": "le"}).result
                valid = self.emit("and", [above, below], [BOOL]).result
                t = self.emit("mul", [self.emit("sub", [v, lo], [binning]).result, scale], [binning]).result
                positive = self.emit("cmp", [t, zero_f], [BOOL], {"pred": "ge"}).result
                t = self.emit("select", [positive, t, zero_f], [binning]).result  # NaN -> 0
                over = self.emit("cmp", [t, n_f], [BOOL], {"pred": "ge"}).result
                t = self.emit("select", [over, n_f, t], [binning]).result
                whole = self.emit("cast", [t], [I32], {"in_range": True}).result
                index = self.emit("min", [whole, last], [I32]).result
            else:
                wide = self.as_dtype(v, INDEX)  # as an index: u64 above 2**63 is negative
                valid = self.emit("and", [self.emit("cmp", [wide, self.c(0)], [BOOL], {"pred": "ge"}).result,
                                          self.emit("cmp", [wide, n], [BOOL], {"pred": "lt"}).result],
                                  [BOOL]).result
                index = self.as_dtype(wide, I32)
            return self.emit("select", [valid, index, n32], [I32]).result

        def count_block(b: Value) -> None:
            self.loop(width, lambda j: self.put(private, [b, j], zero))
            start = self.ix("mul", b, size)
            length = self.ix("min", size, self.ix("sub", count, start))

            def chunk(s):
                first = self.ix("add", start, self.ix("mul", s, self.c(HIST_CHUNK)))
                span_ = self.ix("min", self.c(HIST_CHUNK), self.ix("sub", self.ix("add", start, length), first))
                self.loop(span_, lambda t: self.put(staged, [b, t], bin_of(self.ix("add", first, t))))

                def add(t):
                    j = self.as_dtype(self.get(staged, [b, t]), INDEX)
                    if weighted:
                        w = self.element(weights, self.unravel(self.ix("add", first, t), extents), op.span,
                                         proven=True)
                    else:
                        w = one
                    self.put(private, [b, j], self.emit("add", [self.get(private, [b, j]), w], [acc]).result)

                self.loop(span_, add)

            self.loop(self.ceil_div(length, self.c(HIST_CHUNK)), chunk)

        if self.depth == 0:
            self.parallel([blocks], lambda points: count_block(points[0]), grain=1)
        else:
            self.loop(blocks, count_block)
        result = self.result_buffer(op.result, acc, [n], op.span)
        if result is None:
            return  # never read
        self.loop(n, lambda j: self.put(result, [j], zero))

        def merge(b):  # in block order: the same sums for every thread count
            self.loop(n, lambda j: self.put(result, [j], self.emit(
                "add", [self.get(result, [j]), self.get(private, [b, j])], [acc]).result))

        self.loop(blocks, merge)
        replace[id(op.result)] = result


# ---- physical: the tiled loop nest of contract_tiles ---------------------------------------------------
def lower_contract_tiles(low, op: Op) -> list[P.Stmt]:
    """The ``parallel`` loop over the ``mc x nc`` blocks of C and its register-tiled micro-kernel.

    C is ``[m, n]`` or ``[batch, m, n]`` with any strides (the kernel's output, or a buffer).
    A tile that lies inside C, on a unit column stride, loads and stores its rows as
    vectors; an edge tile goes through its block's slot of ``scratch``, element by element."""
    ap, bp, c, scratch = (low.tensors[id(v)] for v in op.operands[:4])
    batch, m, n, k = (low.read(v) for v in op.operands[4:])
    acc = ap.dtype
    attrs = op.attrs
    mr, nr, lanes, mc, nc, kc = (attrs[key] for key in ("mr", "nr", "lanes", "mc", "nc", "kc"))
    vectors = nr // lanes
    vt = P.VectorType(acc, lanes)

    def const(v):
        return P.Const(INDEX, v)

    def ix(name, a, b):
        return P.Binary(INDEX, name, a, b)

    def var(hint, dtype=INDEX):
        return low.fresh(hint, dtype)

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
