"""How contractions (T3) and histograms (T6) are lowered for CPUs.

contract — a matrix-multiply shaped contraction (free axes on both operands, at the top
of a kernel) is computed the way BLAS libraries do it:

1. ``expand_tensor_exprs`` packs the operands, converted to the accumulator dtype, into
   buffers: ``A`` as panels of ``MR`` rows ``[batch][M/MR][K][MR]`` and ``B`` as panels of
   ``NR`` columns ``[batch][N/NR][K][NR]`` (``M`` = product of the first operand's free
   axes, ``N`` of the second's, ``K`` of the reduction axes; panels padded with zeros).
   Packing reads the operands through the element relation, so strided views,
   transposes and fused expressions are packed without temporaries (P6).
2. A ``contract_tiles`` op (lowered by ``to_physical`` through ``contract_tiles.py``)
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
from intentc.lower.kir_builder import KirBuilder
from intentc.lower.row_accumulation import contract_rows

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
    """Materialises ``contract`` (T3) and ``histogram`` (T6) ops with the kernel's builder."""

    def __init__(self, b: KirBuilder):
        self.b = b

    # -- contract (T3) ----------------------------------------------------------------------------
    def materialize_contract(self, op: Op, replace: dict) -> None:
        spec = parse_spec(op.attrs["spec"])
        acc = DTYPES[op.attrs["acc"]]
        a, b = op.operands
        extent: dict[str, Value] = {}
        for value, letters in ((b, spec.b), (a, spec.a)):
            for axis, letter in enumerate(letters):
                extent[letter] = self.b.extent(value, axis)
        if spec.free_a and spec.free_b and self.b.depth == 0:
            result = self.contract_tiled(op, spec, acc, extent)
        else:
            result = self.contract_folds(op, spec, acc, extent)
        if result is not None:
            replace[id(op.result)] = result

    def product_of(self, letters: str, extent: dict) -> Value:
        return self.b.product([extent[c] for c in letters])

    def coords(self, letters: str, ordinal: Value, extent: dict) -> dict[str, Value]:
        return dict(zip(letters, self.b.unravel(ordinal, [extent[c] for c in letters]))) if letters else {}

    def operand_at(self, x: Value, letters: str, coords: dict, acc, span) -> Value:
        return self.b.as_dtype(self.b.element(x, [coords[c] for c in letters], span, proven=True), acc)

    def contract_folds(self, op: Op, spec, acc, extent: dict) -> Value:
        """One fold over the reduction axes per result element (T3 grants the regrouping);
        vector-matrix shapes accumulate whole rows instead (row_accumulation.py)."""
        a, b = op.operands
        reduced = spec.reduced
        x, y = Value(acc, "x"), Value(acc, "y")
        combine = Block([x, y], [Op("add", [x, y], [acc])])
        combine.ops.append(Op("yield", [combine.ops[0].result]))
        by_rows = contract_rows(self.b, op, spec, acc, extent, combine)
        if by_rows is not None:
            return by_rows
        count = self.product_of(reduced, extent)
        zero = self.b.scalar(acc, 0)

        def elements(outer: dict):
            def element(t):
                coords = dict(outer)
                coords.update(self.coords(reduced, t, extent))
                va = self.operand_at(a, spec.a, coords, acc, op.span)
                vb = self.operand_at(b, spec.b, coords, acc, op.span)
                return [self.b.emit("mul", [va, vb], [acc]).result]
            return element

        if not spec.out:
            if self.b.depth == 0:
                return self.b.blocked_fold(count, [zero], elements({}), combine, op.span)[0]
            return self.b.fold(count, [zero], elements({}), combine, op.span)[0]
        extents = [extent[c] for c in spec.out]
        buf = self.b.result_buffer(op.result, acc, extents, op.span)
        if buf is None:
            return None  # never read

        def body(points):
            (value,) = self.b.fold(count, [zero], elements(dict(zip(spec.out, points))), combine, op.span)
            self.b.put(buf, list(points), value)

        self.b.parallel(extents, body)
        return buf

    def contract_tiled(self, op: Op, spec, acc, extent: dict) -> Value | None:
        a, b = op.operands
        if self.b.used is not None and id(op.result) not in self.b.used:
            return None  # never read: nothing to compute
        mr, nr, lanes = tile_shape(acc)
        mc, nc = max(MC // mr, 1) * mr, max(NC // nr, 1) * nr
        batch = self.product_of(spec.batch, extent)
        m = self.product_of(spec.free_a, extent)
        n = self.product_of(spec.free_b, extent)
        k = self.product_of(spec.reduced, extent)
        mp = self.b.ix("mul", self.b.ceil_div(m, self.b.c(mr)), self.b.c(mr))
        np_ = self.b.ix("mul", self.b.ceil_div(n, self.b.c(nr)), self.b.c(nr))
        # C: the kernel's output itself when the result is returned as is and laid out as
        # [batch?, m, n]; else a [batch, m, n] buffer that the result views.
        direct = spec.out == spec.canonical and len(spec.batch) <= 1 and len(spec.free_a) == 1 \
            and len(spec.free_b) == 1 and id(op.result) in self.b.destination
        if direct:
            c = self.b.result_buffer(op.result, acc, [extent[ch] for ch in spec.out], op.span)
        else:
            c = self.b.buffer(acc, [batch, m, n], op.span)
        ap = self.b.buffer(acc, [self.b.product([batch, mp, k])], op.span)
        bp = self.b.buffer(acc, [self.b.product([batch, np_, k])], op.span)
        tiles = self.b.product([batch, self.b.ceil_div(mp, self.b.c(mc)), self.b.ceil_div(np_, self.b.c(nc))])
        scratch = self.b.buffer(acc, [self.b.ix("mul", tiles, self.b.c(mr * nr))], op.span)  # edge tiles
        zero = self.b.scalar(acc, 0)
        self.pack(a, spec.a, spec.free_a, mr, batch, m, mp, k, ap, spec, extent, acc, zero, op.span)
        self.pack(b, spec.b, spec.free_b, nr, batch, n, np_, k, bp, spec, extent, acc, zero, op.span)
        self.b.out.append(Op("contract_tiles", [ap, bp, c, scratch, batch, m, n, k], [], {
            "acc": acc.name, "mr": mr, "nr": nr, "lanes": lanes, "mc": mc, "nc": nc, "kc": KC}, span=op.span))
        if direct:
            return c
        # The result: C with the free axes unflattened, in result order.
        axes, operands = [], [c]
        for group, size in ((spec.batch, batch), (spec.free_a, m), (spec.free_b, n)):
            if group:
                axes.append("range")
                operands += [self.b.c(0), size]
            else:
                axes.append("fix")
                operands.append(self.b.c(0))
        ranges = sum(1 for kind in axes if kind == "range")
        value = self.b.relation("view", operands, TensorType(acc, (None,) * ranges), {"axes": axes})
        canonical = spec.canonical
        if len(canonical) != ranges:
            shape = [extent[ch] for ch in canonical]
            value = self.b.relation("reshape", [value] + shape, TensorType(acc, (None,) * len(canonical)), {})
        if spec.perm != list(range(len(canonical))):
            value = self.b.relation("permute", [value], TensorType(acc, (None,) * len(canonical)),
                                  {"perm": spec.perm})
        return value

    def pack(self, x: Value, letters: str, free: str, width: int, batch: Value, rows: Value, padded: Value,
             k: Value, buf: Value, spec, extent: dict, acc, zero: Value, span) -> None:
        """buf[((b * padded + p * width) * k + t) * width + w] = x at (batch b, free row p * width + w,
        reduction t), 0 past ``rows``: panels of ``width`` rows, each contiguous over k."""
        panels = self.b.ix("floordiv", padded, self.b.c(width))
        # Walk the operand's innermost axis innermost, so that a row-major operand is read in order.
        k_inner = bool(letters) and letters[-1] in spec.reduced

        def body(points):
            bb = self.b.ix("floordiv", points[0], panels)
            p = self.b.ix("mod", points[0], panels)
            first = self.b.ix("mul", p, self.b.c(width))
            base = self.b.ix("mul", self.b.ix("add", self.b.ix("mul", bb, padded), first), k)
            last = self.b.ix("sub", rows, self.b.c(1))
            outer = self.coords(spec.batch, bb, extent)

            def element(t, w, edge: bool):
                row = self.b.ix("add", first, w)
                coords = dict(outer)
                coords.update(self.coords(free, self.b.ix("min", row, last) if edge else row, extent))
                coords.update(self.coords(spec.reduced, t, extent))
                value = self.operand_at(x, letters, coords, acc, span)
                if edge:  # rows past the end read the last row (in bounds) and pack zeros
                    inside = self.b.emit("cmp", [row, rows], [BOOL], {"pred": "lt"}).result
                    value = self.b.emit("select", [inside, value, zero], [acc]).result
                at = self.b.ix("add", self.b.ix("add", base, self.b.ix("mul", t, self.b.c(width))), w)
                self.b.put(buf, [at], value)

            def panel(edge: bool):
                if k_inner:
                    self.b.loop(self.b.c(width), lambda w: self.b.loop(k, lambda t: element(t, w, edge)))
                else:
                    self.b.loop(k, lambda t: self.b.loop(self.b.c(width), lambda w: element(t, w, edge)))
                return []

            full = self.b.emit("cmp", [self.b.ix("add", first, self.b.c(width)), rows], [BOOL], {"pred": "le"}).result
            self.b.out.append(Op("if", [full], [], None, [self.b.with_block([], lambda: panel(False)),
                                                        self.b.with_block([], lambda: panel(True))]))

        # One panel per block of work (width x k elements; the pool hands out runs of panels).
        self.b.parallel([self.b.ix("mul", batch, panels)], body, grain=1)

    # -- histogram (T6) ------------------------------------------------------------------------------
    def materialize_histogram(self, op: Op, replace: dict) -> None:
        ranged, weighted = op.attrs["range"], op.attrs["weighted"]
        values, n = op.operands[0], op.operands[1]
        weights = op.operands[-1] if weighted else None
        acc = op.result.type.dtype
        rank = values.type.rank
        extents = [self.b.extent(values, axis) for axis in range(rank)]
        count = self.b.product(extents)
        width = self.b.ix("add", n, self.b.c(1))  # column n collects what is not counted
        least = self.b.c(HIST_MIN_BLOCK)  # before the quotient: the ops keep their order
        per = self.b.ceil_div(count, self.b.c(HIST_MAX_BLOCKS))
        size = self.b.ix("max", self.b.ix("max", least, per),
                       self.b.ix("mul", width, self.b.c(16)))
        has_bins = self.b.emit("cmp", [n, self.b.c(0)], [BOOL], {"pred": "gt"}).result
        blocks = self.b.emit("select", [has_bins, self.b.ceil_div(count, size), self.b.c(0)], [INDEX]).result
        if ranged:
            lo, hi = op.operands[2:4]
            binning = lo.type
            n_f, zero_f = self.b.as_dtype(n, binning), self.b.scalar(binning, 0.0)
            scale = self.b.emit("div", [n_f, self.b.emit("sub", [hi, lo], [binning]).result], [binning]).result
        private = self.b.buffer(acc, [blocks, width], op.span)
        staged = self.b.buffer(I32, [blocks, self.b.c(HIST_CHUNK)], op.span)  # each block's bins of a chunk
        zero, one = self.b.scalar(acc, 0), self.b.scalar(acc, 1)

        # Bin numbers are i32 (sema keeps n < 2**31, and n <= 2**24 with a range, so that n is
        # exact as a float): t is clamped to [0, n] (NaN to 0) before an in-range conversion,
        # which vectorises and gives the saturating conversion's bin.
        n32 = self.b.as_dtype(n, I32)
        last = self.b.emit("sub", [n32, self.b.scalar(I32, 1)], [I32]).result

        def bin_of(ordinal: Value) -> Value:
            v = self.b.element(values, self.b.unravel(ordinal, extents), op.span, proven=True)
            if ranged:
                v = self.b.as_dtype(v, binning)
                above = self.b.emit("cmp", [v, lo], [BOOL], {"pred": "ge"}).result
                below = self.b.emit("cmp", [v, hi], [BOOL], {"pred": "le"}).result
                valid = self.b.emit("and", [above, below], [BOOL]).result
                t = self.b.emit("mul", [self.b.emit("sub", [v, lo], [binning]).result, scale], [binning]).result
                positive = self.b.emit("cmp", [t, zero_f], [BOOL], {"pred": "ge"}).result
                t = self.b.emit("select", [positive, t, zero_f], [binning]).result  # NaN -> 0
                over = self.b.emit("cmp", [t, n_f], [BOOL], {"pred": "ge"}).result
                t = self.b.emit("select", [over, n_f, t], [binning]).result
                whole = self.b.emit("cast", [t], [I32], {"in_range": True}).result
                index = self.b.emit("min", [whole, last], [I32]).result
            else:
                wide = self.b.as_dtype(v, INDEX)  # as an index: u64 above 2**63 is negative
                valid = self.b.emit("and", [self.b.emit("cmp", [wide, self.b.c(0)], [BOOL], {"pred": "ge"}).result,
                                          self.b.emit("cmp", [wide, n], [BOOL], {"pred": "lt"}).result],
                                  [BOOL]).result
                index = self.b.as_dtype(wide, I32)
            return self.b.emit("select", [valid, index, n32], [I32]).result

        def count_block(b: Value) -> None:
            self.b.loop(width, lambda j: self.b.put(private, [b, j], zero))
            start = self.b.ix("mul", b, size)
            length = self.b.ix("min", size, self.b.ix("sub", count, start))

            def chunk(s):
                first = self.b.ix("add", start, self.b.ix("mul", s, self.b.c(HIST_CHUNK)))
                span_ = self.b.ix("min", self.b.c(HIST_CHUNK), self.b.ix("sub", self.b.ix("add", start, length), first))
                self.b.loop(span_, lambda t: self.b.put(staged, [b, t], bin_of(self.b.ix("add", first, t))))

                def add(t):
                    j = self.b.as_dtype(self.b.get(staged, [b, t]), INDEX)
                    if weighted:
                        w = self.b.element(weights, self.b.unravel(self.b.ix("add", first, t), extents), op.span,
                                         proven=True)
                    else:
                        w = one
                    self.b.put(private, [b, j], self.b.emit("add", [self.b.get(private, [b, j]), w], [acc]).result)

                self.b.loop(span_, add)

            self.b.loop(self.b.ceil_div(length, self.b.c(HIST_CHUNK)), chunk)

        if self.b.depth == 0:
            self.b.parallel([blocks], lambda points: count_block(points[0]), grain=1)
        else:
            self.b.loop(blocks, count_block)
        result = self.b.result_buffer(op.result, acc, [n], op.span)
        if result is None:
            return  # never read
        self.b.loop(n, lambda j: self.b.put(result, [j], zero))

        def merge(b):  # in block order: the same sums for every thread count
            self.b.loop(n, lambda j: self.b.put(result, [j], self.b.emit(
                "add", [self.b.get(result, [j]), self.b.get(private, [b, j])], [acc]).result))

        self.b.loop(blocks, merge)
        replace[id(op.result)] = result
