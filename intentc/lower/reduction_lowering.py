"""How ``expand_tensor_exprs`` materialises reductions and scans (T1, T2).

- A reduction to scalars becomes a ``fold`` over the elements of its (fused) input. At
  the top of a kernel it is blocked: a ``parallel`` loop folds blocks of ``B`` elements
  into a buffer of block totals, then one ordered ``fold`` combines the totals in block
  order. ``B = max(4096, ceil(n / 1024))`` depends on ``n`` only, so the grouping — and
  every result — is the same for any thread count (``KirBuilder.blocked_fold``). Inside a
  ``fold`` the grouping is free (``reassoc``), which lets floating-point sums vectorise
  (T1 grants it).
- A reduction to a tensor becomes a buffer written by a ``parallel`` loop over the kept
  axes, each point folding its reduced axes.
- A scan becomes a buffer. Along its axis, each line is scanned in member order with
  carries (reverse: from the last member). A long one-dimensional scan at the top of a
  kernel is blocked in two passes — block totals in parallel, an ordered exclusive scan
  of the totals, then each block rescanned from its prefix in parallel — combining
  operands strictly left to right, never permuting them (T2).
"""
from __future__ import annotations

from intentc.kir.core import Op, Value
from intentc.kir.types import INDEX, TensorType
from intentc.lower.kir_builder import KirBuilder
from intentc.lower.row_accumulation import reduce_rows

LANES = 4  # independent chains of an ordered scan line (instruction-level parallelism)
CHAIN_SKEW = 17  # elements by which chunks are shortened so their starts do not alias in the cache


class ReductionExpansion:
    """Materialises ``reduce`` and ``scan`` ops with the kernel's builder."""

    def __init__(self, b: KirBuilder):
        self.b = b

    # -- reduce ----------------------------------------------------------------------------------------
    def materialize_reduce(self, op: Op, replace: dict) -> None:
        k = op.attrs["arity"]
        inputs, identity = op.operands[:k], op.operands[k:]
        axes, keepdims = op.attrs["axes"], op.attrs["keepdims"]
        combine = op.regions[0]
        rank = inputs[0].type.rank
        extents = [self.b.extent(inputs[0], a) for a in range(rank)]
        reduced = [extents[a] for a in axes]
        kept_axes = [a for a in range(rank) if a not in axes]

        def items_at(point: list[Value]):
            return [self.b.element(x, point, op.span, proven=True) for x in inputs]

        def reduced_elements(outer: dict[int, Value]):
            def element(t):
                coords = dict(zip(axes, self.b.unravel(t, reduced)))
                coords.update(outer)
                return items_at([coords[a] for a in range(rank)])
            return element

        ordered = bool(op.attrs.get("ordered"))
        if not isinstance(op.results[0].type, TensorType):
            count = self.b.product(reduced)
            if self.b.depth == 0:
                results = self.b.blocked_fold(count, identity, reduced_elements({}), combine, op.span, ordered)
            else:
                results = self.b.fold(count, identity, reduced_elements({}), combine, op.span, ordered)
            for old, new in zip(op.results, results):
                replace[id(old)] = new
            return
        out_extents = [self.b.c(1) if a in axes else extents[a] for a in range(rank)] if keepdims else \
            [extents[a] for a in kept_axes]
        buffers = [self.b.result_buffer(r, x.type.dtype, out_extents, op.span) for r, x in zip(op.results, inputs)]
        if reduce_rows(self.b, inputs, identity, axes, extents, buffers, keepdims, combine, op.span):
            for old, new in zip(op.results, buffers):
                replace[id(old)] = new
            return
        count = self.b.product(reduced)  # known before the loop, so scheduling sees each point's work

        def body(points):
            outer = dict(zip(kept_axes, points))
            values = self.b.fold(count, identity, reduced_elements(outer), combine, op.span, ordered)
            if keepdims:
                index = [self.b.c(0) if a in axes else outer[a] for a in range(rank)]
            else:
                index = list(points)
            for buf, value in zip(buffers, values):
                if buf is not None:
                    self.b.out.append(Op("store", [buf] + index + [value], attrs={"inbounds": [True] * len(index)}))

        self.b.parallel([extents[a] for a in kept_axes], body)
        for old, new in zip(op.results, buffers):
            replace[id(old)] = new

    # -- scan ------------------------------------------------------------------------------------------------
    def materialize_scan(self, op: Op, replace: dict) -> None:
        k = op.attrs["arity"]
        inputs, identity = op.operands[:k], op.operands[k:2 * k]
        start = op.operands[2 * k:] if op.attrs.get("has_init") else identity
        axis, exclusive, reverse = op.attrs["axis"], op.attrs["exclusive"], op.attrs["reverse"]
        combine = op.regions[0]
        rank = inputs[0].type.rank
        extents = [self.b.extent(inputs[0], a) for a in range(rank)]
        buffers = [self.b.result_buffer(r, x.type.dtype, extents, op.span) for r, x in zip(op.results, inputs)]
        n = extents[axis]
        other = [a for a in range(rank) if a != axis]

        def position(t: Value) -> Value:  # the member at logical step t of the scan
            return self.b.ix("sub", self.b.ix("sub", n, self.b.c(1)), t) if reverse else t

        def items_at(outer, step):
            coords = dict(outer)
            coords[axis] = position(step)
            index = [coords[a] for a in range(rank)]
            return index, [self.b.element(x, index, op.span, proven=True) for x in inputs]

        def line(outer: dict[int, Value], begin: Value, length: Value, start_acc: list[Value]) -> None:
            """Scan steps [begin, begin + length) of one line, starting from start_acc.

            The line is cut into LANES contiguous chunks scanned in an interleaved loop (independent
            dependency chains): chunk totals first, their ordered prefix, then each chunk rescanned
            from its prefix; the remainder continues the last chunk. Operands are combined strictly
            in member order within each chunk and chunks compose in order: regrouped, never
            permuted (T2)."""
            lanes = LANES
            # A little shorter than length / lanes so the chains' addresses do not alias in the cache.
            per_lane = self.b.ix("floordiv", length, self.b.c(lanes))
            chunk = self.b.ix("max", self.b.ix("sub", per_lane, self.b.c(CHAIN_SKEW)),
                            self.b.c(0))
            k = len(start_acc)

            def offsets(t, j):
                return self.b.ix("add", begin, self.b.ix("add", self.b.ix("mul", self.b.c(j), chunk), t))

            # Pass A: totals of chunks 0 .. lanes-2, interleaved.
            ids = list(identity)
            totals = self.b.interleaved(chunk, [ids] * (lanes - 1),
                                      lambda t, j, accs: self.b.apply(combine, accs, items_at(outer, offsets(t, j))[1]))
            prefixes = [list(start_acc)]
            for j in range(lanes - 1):
                prefixes.append(self.b.apply(combine, prefixes[-1], totals[j]))

            # Pass B: rescan every chunk from its prefix, writing the outputs.
            def rescan(step_of):
                def body(t, j, accs):
                    index, items = items_at(outer, step_of(t, j))
                    combined = self.b.apply(combine, accs, items)
                    for buf, value in zip(buffers, accs if exclusive else combined):
                        if buf is not None:
                            self.b.out.append(Op("store", [buf] + index + [value], attrs={"inbounds": [True] * rank}))
                    return combined
                return body

            finals = self.b.interleaved(chunk, prefixes, rescan(offsets))
            tail_start = self.b.ix("mul", chunk, self.b.c(lanes))
            self.b.interleaved(self.b.ix("sub", length, tail_start), [finals[-1]],
                             rescan(lambda t, j: self.b.ix("add", begin, self.b.ix("add", tail_start, t))))
            del k

        if rank == 1 and self.b.depth == 0:
            self.blocked_scan(n, identity, start, inputs, line, position, combine, op.span)
        else:
            def body(points):
                line(dict(zip(other, points)), self.b.c(0), n, start)
            if other:
                self.b.parallel([extents[a] for a in other], body)
            else:
                body([])
        for old, new in zip(op.results, buffers):
            replace[id(old)] = new

    def blocked_scan(self, n, identity, start, inputs, line, position, combine, span) -> None:
        size, blocks = self.b.block_size(n)
        totals = [self.b.buffer(v.type, [blocks], span) for v in identity]
        prefix = [self.b.buffer(v.type, [blocks], span) for v in identity]

        def element_at(t):
            return [self.b.element(x, [position(t)], span, proven=True) for x in inputs]

        def totals_body(points):
            (b,) = points
            start = self.b.ix("mul", b, size)
            length = self.b.ix("min", size, self.b.ix("sub", n, start))
            values = self.b.fold(length, identity, lambda t: element_at(self.b.ix("add", start, t)), combine, span)
            for buf, value in zip(totals, values):
                self.b.out.append(Op("store", [buf, b, value], attrs={"inbounds": [True]}))

        self.b.parallel([blocks], totals_body, grain=1)
        # An ordered exclusive scan of the totals gives each block's incoming prefix.
        b = Value(INDEX, "b")
        accs = [Value(v.type, f"acc{j}") for j, v in enumerate(identity)]

        def prefix_body():
            for buf, acc in zip(prefix, accs):
                self.b.out.append(Op("store", [buf, b, acc], attrs={"inbounds": [True]}))
            loaded = self.b.loads(totals, b)
            return self.b.apply(combine, accs, loaded)

        region = self.b.with_block([b] + accs, prefix_body)
        self.b.out.append(Op("for", [self.b.domain(blocks)] + list(start), [v.type for v in identity], None, [region]))

        def rescan_body(points):
            (blk,) = points
            start = self.b.ix("mul", blk, size)
            length = self.b.ix("min", size, self.b.ix("sub", n, start))
            incoming = [self.b.emit("load", [buf, blk], [buf.type.dtype], {"inbounds": [True]}).result
                        for buf in prefix]
            line({}, start, length, incoming)

        self.b.parallel([blocks], rescan_body, grain=1)
