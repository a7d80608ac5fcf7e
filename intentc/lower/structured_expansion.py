"""How ``expand_tensor_exprs`` materialises reductions and scans (T1, T2).

- A reduction to scalars becomes a ``fold`` over the elements of its (fused) input. At
  the top of a kernel it is blocked: a ``parallel`` loop folds blocks of ``B`` elements
  into a buffer of block totals, then one ordered ``fold`` combines the totals in block
  order. ``B = max(4096, ceil(n / 1024))`` depends on ``n`` only, so the grouping — and
  every result — is the same for any thread count. Inside a ``fold`` the grouping is
  free (``reassoc``), which lets floating-point sums vectorise (T1 grants it).
- A reduction to a tensor becomes a buffer written by a ``parallel`` loop over the kept
  axes, each point folding its reduced axes.
- A scan becomes a buffer. Along its axis, each line is scanned in member order with
  carries (reverse: from the last member). A long one-dimensional scan at the top of a
  kernel is blocked in two passes — block totals in parallel, an ordered exclusive scan
  of the totals, then each block rescanned from its prefix in parallel — combining
  operands strictly left to right, never permuting them (T2).
"""
from __future__ import annotations

from intentc.diagnostics import error
from intentc.kir.core import Block, Op, Value
from intentc.kir.rewrite import clone_block
from intentc.kir.types import BOOL, DOMAIN, INDEX, TensorType
from intentc.lower import lane_lowering
from intentc.lower.lane_lowering import lane_chains_op, lane_combinable
from intentc.lower.region_laws import check_region_laws

MIN_BLOCK = 4096
MAX_BLOCKS = 1024
LANES = 4  # independent chains of an ordered scan line (instruction-level parallelism)
CHAIN_SKEW = 17  # elements by which chunks are shortened so their starts do not alias in the cache
# A region scan whose emit is a seeded scan (``_seeded_scan``) cuts its axis into sub-segments
# of CHAIN_SEGMENT members and emits GROUP_CHAINS of them at a time as independent chains: one
# per vector lane when the combine allows (``lane_lowering``), else SCAN_CHAINS at a time as
# interleaved scalar chains. The size is fixed (results depend on nothing else), a multiple
# of a cache line's members and not of 1024, so the chains' addresses do not alias in the
# cache; with a constant distance between chains they share one address register per array.
# Four scalar chains: eight (two accumulators each in a summary) spill on targets with 16
# vector registers, and each chain is one more memory stream.
CHAIN_SEGMENT = 4096 + 32
GROUP_CHAINS = lane_lowering.LANES
SCAN_CHAINS = 4
# Windows of this many groups (about 3 MB of f32 components and results) are summarised and
# then emitted before the next, so the emit reads its components from the cache. Neither the
# chains nor the windows change a value.
WINDOW_GROUPS = 8


def _regroupable(combine: Block) -> bool:
    """Free regrouping (LLVM's ``reassoc``) only for one builtin associative, commutative op:
    a helper's internal arithmetic must keep its own rounding (T7)."""
    ops = [op.name for op in combine.ops]
    return len(ops) == 2 and ops[0] in ("add", "mul", "min", "max", "and", "or", "xor")


def _stores_through_views(ops: list[Op], views: dict[int, tuple[Value, Value]]) -> list[Op]:
    """``ops`` with every store into an output view (``output_view``: id -> (tensor, start))
    rewritten to a store into the viewed tensor at ``start + index``, nested regions included."""
    rewritten = []
    for op in ops:
        target = views.get(id(op.operands[0])) if op.name == "store" and op.operands else None
        if target is not None:
            base, start = target
            shifted = Op("add", [start, op.operands[1]], [INDEX])
            rewritten.append(shifted)
            op.operands = [base, shifted.result] + op.operands[2:]
        for region in op.regions:
            region.ops = _stores_through_views(region.ops, views)
        rewritten.append(op)
    return rewritten


def _seeded_scan(emit: Block) -> tuple[int, list[int]] | None:
    """(position of the scan, which scan result each output is) when ``emit`` ends in one
    forward, one-axis ``scan`` whose results it yields as they are — a scan seeded from the
    incoming state, as in affine recurrences and running extrema; else None."""
    ops = emit.ops
    if len(ops) < 2 or ops[-2].name != "scan":
        return None
    scan, term = ops[-2], ops[-1]
    if scan.attrs.get("reverse") or scan.attrs.get("axis") != 0 or any(r.type.rank != 1 for r in scan.results):
        return None
    if any(o.name == "scan" for o in ops[:-2]):
        return None
    results = [id(r) for r in scan.results]
    if not term.operands or any(id(v) not in results for v in term.operands):
        return None
    return len(ops) - 2, [results.index(id(v)) for v in term.operands]


def _plain_reduce(summarize: Block) -> tuple[int, list[int]] | None:
    """(position of the reduce, which reduce result each summary component is) when
    ``summarize`` ends in one full ``reduce`` of one-axis tensors whose results it yields as
    they are (as in affine and (max, argmax) summaries); else None."""
    ops = summarize.ops
    if len(ops) < 2 or ops[-2].name != "reduce":
        return None
    reduce, term = ops[-2], ops[-1]
    k = reduce.attrs["arity"]
    if any(x.type.rank != 1 for x in reduce.operands[:k]) or isinstance(reduce.results[0].type, TensorType):
        return None
    if any(o.name in ("reduce", "scan") for o in ops[:-2]):
        return None
    results = [id(r) for r in reduce.results]
    if not term.operands or any(id(v) not in results for v in term.operands):
        return None
    return len(ops) - 2, [results.index(id(v)) for v in term.operands]


class StructuredExpansion:
    """Mixed into the expander: uses emit, element, extent, params, out, depth."""

    # -- small builders --------------------------------------------------------------------------
    def c(self, value: int) -> Value:
        return self.emit("const", [], [INDEX], {"value": value}).result

    def ix(self, name: str, a: Value, b: Value) -> Value:
        return self.emit(name, [a, b], [INDEX]).result

    def product(self, values: list[Value]) -> Value:
        total = self.c(1)
        for v in values:
            total = self.ix("mul", total, v)
        return total

    def domain(self, extent: Value, begin: Value | None = None) -> Value:
        return self.emit("domain", [begin if begin is not None else self.c(0), extent, self.c(1)], [DOMAIN]).result

    def unravel(self, t: Value, extents: list[Value]) -> list[Value]:
        """Row-major coordinates of the ordinal ``t`` over ``extents``."""
        coords = [None] * len(extents)
        for k in reversed(range(len(extents))):
            if k == 0:
                coords[0] = t
            else:
                coords[k] = self.ix("mod", t, extents[k])
                t = self.ix("floordiv", t, extents[k])
        return coords

    def loads(self, buffers: list[Value], index: Value) -> list[Value]:
        """Element ``index`` of each one-axis buffer (in bounds by construction)."""
        return [self.emit("load", [buf, index], [buf.type.dtype], {"inbounds": [True]}).result for buf in buffers]

    def buffer(self, dtype, extents: list[Value], span) -> Value:
        """Kernel-local storage; inside a parallel loop each point gets its own (freed by the task)."""
        static = tuple(None for _ in extents)
        value = self.emit("buffer", list(extents), [TensorType(dtype, static)], {"dtype": str(dtype)}).result
        self.params.add(id(value))
        return value

    def result_buffer(self, result: Value, dtype, extents: list[Value], span) -> Value | None:
        """Where a structured op's tensor result goes: the kernel's output when it is returned
        as is, nothing when it is never used, else a new buffer."""
        destination = getattr(self, "destination", {}).get(id(result))
        if destination is not None:
            for axis, extent in enumerate(extents):
                self.emit("assert_eq", [self.extent(destination, axis), extent], attrs={
                    "what": "result extent %lld but the operation makes %lld", "rule": "S1"})
            return destination
        if id(result) not in getattr(self, "used", {id(result)}):
            return None
        return self.buffer(dtype, extents, span)

    def _with_block(self, args: list[Value], build) -> Block:
        saved = self.out
        self.out = []
        try:
            results = build()
            self.out.append(Op("yield", list(results)))
            return Block(args, self.out)
        finally:
            self.out = saved

    def fold(self, count: Value, identity: list[Value], element, combine: Block, span,
             ordered: bool = False) -> list[Value]:
        """``fold`` of ``element(t)`` for t in [0, count) with a copy of ``combine``."""
        t = Value(INDEX, "t")
        body = self._with_block([t], lambda: element(t))
        op = self.emit("fold", [count] + list(identity), [v.type for v in identity],
                       {"reassoc": _regroupable(combine) and not ordered}, span=span)
        op.regions = [body, clone_block(combine, {})]
        return list(op.results)

    def parallel(self, extents: list[Value], body, grain: int | None = None, begins: list[Value] | None = None) -> None:
        """A parallel loop nest over [begin, extent) per axis (begin 0 by default); ``grain=1``
        when every point is a whole block of work."""
        if not extents:  # no axis left (every axis reduced, keepdims): one point, no loop
            self.depth += 1
            try:
                body([])
            finally:
                self.depth -= 1
            return
        points = [Value(INDEX, f"p{k}") for k in range(len(extents))]
        domains = [self.domain(e, b) for e, b in zip(extents, begins or [None] * len(extents))]

        def build():
            self.depth += 1
            try:
                body(points)
            finally:
                self.depth -= 1
            return []

        region = self._with_block(points, build)
        self.out.append(Op("parallel", domains, [], {"grain": grain} if grain else None, [region]))

    # -- reduce ----------------------------------------------------------------------------------------
    def materialize_reduce(self, op: Op, replace: dict) -> None:
        k = op.attrs["arity"]
        inputs, identity = op.operands[:k], op.operands[k:]
        axes, keepdims = op.attrs["axes"], op.attrs["keepdims"]
        combine = op.regions[0]
        rank = inputs[0].type.rank
        extents = [self.extent(inputs[0], a) for a in range(rank)]
        reduced = [extents[a] for a in axes]
        kept_axes = [a for a in range(rank) if a not in axes]

        def items_at(point: list[Value]):
            return [self.element(x, point, op.span, proven=True) for x in inputs]

        def reduced_elements(outer: dict[int, Value]):
            def element(t):
                coords = dict(zip(axes, self.unravel(t, reduced)))
                coords.update(outer)
                return items_at([coords[a] for a in range(rank)])
            return element

        ordered = bool(op.attrs.get("ordered"))
        if not isinstance(op.results[0].type, TensorType):
            count = self.product(reduced)
            if self.depth == 0:
                results = self.blocked_fold(count, identity, reduced_elements({}), combine, op.span, ordered)
            else:
                results = self.fold(count, identity, reduced_elements({}), combine, op.span, ordered)
            for old, new in zip(op.results, results):
                replace[id(old)] = new
            return
        out_extents = [self.c(1) if a in axes else extents[a] for a in range(rank)] if keepdims else \
            [extents[a] for a in kept_axes]
        buffers = [self.result_buffer(r, x.type.dtype, out_extents, op.span) for r, x in zip(op.results, inputs)]
        count = self.product(reduced)  # known before the loop, so scheduling sees each point's work

        def body(points):
            outer = dict(zip(kept_axes, points))
            values = self.fold(count, identity, reduced_elements(outer), combine, op.span, ordered)
            if keepdims:
                index = [self.c(0) if a in axes else outer[a] for a in range(rank)]
            else:
                index = list(points)
            for buf, value in zip(buffers, values):
                if buf is not None:
                    self.out.append(Op("store", [buf] + index + [value], attrs={"inbounds": [True] * len(index)}))

        self.parallel([extents[a] for a in kept_axes], body)
        for old, new in zip(op.results, buffers):
            replace[id(old)] = new

    def block_size(self, count: Value) -> tuple[Value, Value]:
        """(B, number of blocks): B = max(MIN_BLOCK, ceil(count / MAX_BLOCKS)), from the count only."""
        per = self.ix("floordiv", self.ix("add", count, self.c(MAX_BLOCKS - 1)), self.c(MAX_BLOCKS))
        size = self.ix("max", per, self.c(MIN_BLOCK))
        blocks = self.ix("floordiv", self.ix("add", count, self.ix("sub", size, self.c(1))), size)
        return size, blocks

    def blocked_fold(self, count: Value, identity, element, combine: Block, span, ordered=False) -> list[Value]:
        size, blocks = self.block_size(count)
        totals = [self.buffer(v.type, [blocks], span) for v in identity]

        def body(points):
            (b,) = points
            start = self.ix("mul", b, size)
            length = self.ix("min", size, self.ix("sub", count, start))
            values = self.fold(length, identity, lambda t: element(self.ix("add", start, t)), combine, span, ordered)
            for buf, value in zip(totals, values):
                self.out.append(Op("store", [buf, b, value], attrs={"inbounds": [True]}))

        self.parallel([blocks], body, grain=1)
        return self.fold(blocks, identity, lambda t: [self.emit("load", [buf, t], [buf.type.dtype],
                                                                   {"inbounds": [True]}).result for buf in totals],
                         combine, span)

    # -- scan ------------------------------------------------------------------------------------------------
    def materialize_scan(self, op: Op, replace: dict) -> None:
        k = op.attrs["arity"]
        inputs, identity = op.operands[:k], op.operands[k:2 * k]
        start = op.operands[2 * k:] if op.attrs.get("has_init") else identity
        axis, exclusive, reverse = op.attrs["axis"], op.attrs["exclusive"], op.attrs["reverse"]
        combine = op.regions[0]
        rank = inputs[0].type.rank
        extents = [self.extent(inputs[0], a) for a in range(rank)]
        buffers = [self.result_buffer(r, x.type.dtype, extents, op.span) for r, x in zip(op.results, inputs)]
        n = extents[axis]
        other = [a for a in range(rank) if a != axis]

        def position(t: Value) -> Value:  # the member at logical step t of the scan
            return self.ix("sub", self.ix("sub", n, self.c(1)), t) if reverse else t

        def items_at(outer, step):
            coords = dict(outer)
            coords[axis] = position(step)
            index = [coords[a] for a in range(rank)]
            return index, [self.element(x, index, op.span, proven=True) for x in inputs]

        def line(outer: dict[int, Value], begin: Value, length: Value, start_acc: list[Value]) -> None:
            """Scan steps [begin, begin + length) of one line, starting from start_acc.

            The line is cut into LANES contiguous chunks scanned in an interleaved loop (independent
            dependency chains): chunk totals first, their ordered prefix, then each chunk rescanned
            from its prefix; the remainder continues the last chunk. Operands are combined strictly
            in member order within each chunk and chunks compose in order: regrouped, never
            permuted (T2)."""
            lanes = LANES
            # A little shorter than length / lanes so the chains' addresses do not alias in the cache.
            chunk = self.ix("max", self.ix("sub", self.ix("floordiv", length, self.c(lanes)), self.c(CHAIN_SKEW)),
                            self.c(0))
            k = len(start_acc)

            def offsets(t, j):
                return self.ix("add", begin, self.ix("add", self.ix("mul", self.c(j), chunk), t))

            # Pass A: totals of chunks 0 .. lanes-2, interleaved.
            ids = list(identity)
            totals = self.interleaved(chunk, [ids] * (lanes - 1),
                                      lambda t, j, accs: self.apply(combine, accs, items_at(outer, offsets(t, j))[1]))
            prefixes = [list(start_acc)]
            for j in range(lanes - 1):
                prefixes.append(self.apply(combine, prefixes[-1], totals[j]))

            # Pass B: rescan every chunk from its prefix, writing the outputs.
            def rescan(step_of):
                def body(t, j, accs):
                    index, items = items_at(outer, step_of(t, j))
                    combined = self.apply(combine, accs, items)
                    for buf, value in zip(buffers, accs if exclusive else combined):
                        if buf is not None:
                            self.out.append(Op("store", [buf] + index + [value], attrs={"inbounds": [True] * rank}))
                    return combined
                return body

            finals = self.interleaved(chunk, prefixes, rescan(offsets))
            tail_start = self.ix("mul", chunk, self.c(lanes))
            self.interleaved(self.ix("sub", length, tail_start), [finals[-1]],
                             rescan(lambda t, j: self.ix("add", begin, self.ix("add", tail_start, t))))
            del k

        if rank == 1 and self.depth == 0:
            self.blocked_scan(n, identity, start, inputs, line, position, combine, op.span)
        else:
            def body(points):
                line(dict(zip(other, points)), self.c(0), n, start)
            if other:
                self.parallel([extents[a] for a in other], body)
            else:
                body([])
        for old, new in zip(op.results, buffers):
            replace[id(old)] = new

    def interleaved(self, count: Value, starts: list[list[Value]], step) -> list[list[Value]]:
        """One ordered loop over t in [0, count) carrying len(starts) independent accumulator
        tuples; ``step(t, j, accs_j)`` returns chain j's next tuple. Returns the final tuples."""
        t = Value(INDEX, "t")
        carried = [[Value(v.type, f"acc{j}_{i}") for i, v in enumerate(start)] for j, start in enumerate(starts)]

        def build():
            out = []
            for j, accs in enumerate(carried):
                out += list(step(t, j, accs))
            return out

        flat_args = [v for accs in carried for v in accs]
        region = self._with_block([t] + flat_args, build)
        flat_start = [v for start in starts for v in start]
        loop = Op("for", [self.domain(count)] + flat_start, [v.type for v in flat_start], None, [region])
        self.out.append(loop)
        results, finals = list(loop.results), []
        for start in starts:
            finals.append(results[:len(start)])
            results = results[len(start):]
        return finals

    def apply(self, combine: Block, accs: list[Value], items: list[Value]) -> list[Value]:
        """Inline a copy of ``combine`` on (accs, items); return its yielded values."""
        mapping = {}
        copy = clone_block(combine, mapping)
        binding = {id(arg): value for arg, value in zip(copy.args, list(accs) + list(items))}
        from intentc.kir.rewrite import replace_uses

        replace_uses(copy, binding)
        term = copy.ops.pop()
        self.out.extend(copy.ops)
        return [binding.get(id(v), v) for v in term.operands]

    def blocked_scan(self, n, identity, start, inputs, line, position, combine, span) -> None:
        size, blocks = self.block_size(n)
        totals = [self.buffer(v.type, [blocks], span) for v in identity]
        prefix = [self.buffer(v.type, [blocks], span) for v in identity]

        def element_at(t):
            return [self.element(x, [position(t)], span, proven=True) for x in inputs]

        def totals_body(points):
            (b,) = points
            start = self.ix("mul", b, size)
            length = self.ix("min", size, self.ix("sub", n, start))
            values = self.fold(length, identity, lambda t: element_at(self.ix("add", start, t)), combine, span)
            for buf, value in zip(totals, values):
                self.out.append(Op("store", [buf, b, value], attrs={"inbounds": [True]}))

        self.parallel([blocks], totals_body, grain=1)
        # An ordered exclusive scan of the totals gives each block's incoming prefix.
        b = Value(INDEX, "b")
        accs = [Value(v.type, f"acc{j}") for j, v in enumerate(identity)]

        def prefix_body():
            for buf, acc in zip(prefix, accs):
                self.out.append(Op("store", [buf, b, acc], attrs={"inbounds": [True]}))
            loaded = self.loads(totals, b)
            return self.apply(combine, accs, loaded)

        region = self._with_block([b] + accs, prefix_body)
        self.out.append(Op("for", [self.domain(blocks)] + list(start), [v.type for v in identity], None, [region]))

        def rescan_body(points):
            (blk,) = points
            start = self.ix("mul", blk, size)
            length = self.ix("min", size, self.ix("sub", n, start))
            incoming = [self.emit("load", [buf, blk], [buf.type.dtype], {"inbounds": [True]}).result
                        for buf in prefix]
            line({}, start, length, incoming)

        self.parallel([blocks], rescan_body, grain=1)

    # -- region_fold / region_scan (R2-R9) --------------------------------------------------------------
    def inline_region(self, region: Block, args: list[Value], into: list[Value | None] | None = None) -> list[Value]:
        """Expand a copy of ``region`` with its arguments bound to ``args``; return its yields.

        ``into``: per yielded tensor, a view of an output (``output_view``) that a structured
        op yielding it as is writes straight into (the caller then skips its copy)."""
        from intentc.kir.rewrite import replace_uses

        copy = clone_block(region, {})
        replace_uses(copy, {id(a): v for a, v in zip(copy.args, args)})
        self.register(copy)
        term = copy.ops[-1]
        for value, view in zip(term.operands, into or []):
            if view is not None and list(term.operands).count(value) == 1:
                self.destination[id(value)] = view
        ops = _stores_through_views(self._block(copy), getattr(self, "output_views", {}))
        term = ops.pop()
        self.out.extend(ops)
        return list(term.operands)

    def output_view(self, out: Value, start: Value, stop: Value) -> Value:
        """``out[start:stop]`` as a write destination: stores into it are rewritten to ``out``."""
        view = Op("view", [out, start, stop], [TensorType(out.type.dtype, (None,))], {"axes": ["range"]})
        self.defs[id(view.result)] = view
        if not hasattr(self, "output_views"):
            self.output_views = {}
        self.output_views[id(view.result)] = (out, start)
        return view.result

    def segment_views(self, comps: list[Value], start: Value, stop: Value) -> list[Value]:
        """Axis-0 slices ``c[start:stop, ...]`` of every component (the checks hold by construction)."""
        views = []
        for comp in comps:
            operands = [comp, start, stop]
            axes = ["range"]
            for axis in range(1, comp.type.rank):
                operands += [self.c(0), self.extent(comp, axis)]
                axes.append("range")
            # A view is consumed element by element (never emitted), like every tensor expression.
            view = Op("view", operands, [TensorType(comp.type.dtype, (None,) + comp.type.shape[1:])], {"axes": axes})
            self.defs[id(view.result)] = view
            views.append(view.result)
        return views

    def summaries(self, op: Op, comps, n, size, blocks, identity) -> list[Value]:
        """Per-block summaries in buffers, computed in parallel (segments from ``n`` only, R8, R9)."""
        buffers = [self.buffer(v.type, [blocks], op.span) for v in identity]

        def body(points):
            (b,) = points
            start = self.ix("mul", b, size)
            stop = self.ix("min", n, self.ix("add", start, size))
            values = self.inline_region(op.regions[0], self.segment_views(comps, start, stop))
            for buf, value in zip(buffers, values):
                self.out.append(Op("store", [buf, b, value], attrs={"inbounds": [True]}))

        self.parallel([blocks], body, grain=1)
        return buffers

    def ordered_combine(self, op: Op, buffers, count: Value, identity) -> list[Value]:
        """combine(...combine(identity, s0)..., s_{count-1}) in block order (R3: never permuted)."""
        def element(t):
            return self.loads(buffers, t)
        return self.fold(count, identity, element, op.regions[1], op.span)

    def materialize_region_fold(self, op: Op, replace: dict) -> None:
        if op.attrs.get("check_laws"):  # --sanitize=laws: the laws are checked first (region_laws.py)
            check_region_laws(self, op)
        n_comp = op.attrs["ncomp"]
        domain, comps, identity = op.operands[0], op.operands[1:1 + n_comp], op.operands[1 + n_comp:]
        n = self.emit("dom_len", [domain], [INDEX]).result
        if self.depth:  # inside a parallel point: one segment, the whole axis
            results = self.inline_region(op.regions[0], self.segment_views(comps, self.c(0), n))
        else:
            size, blocks = self.block_size(n)
            buffers = self.summaries(op, comps, n, size, blocks, identity)
            results = self.ordered_combine(op, buffers, blocks, identity)
        for old, new in zip(op.results, results):
            replace[id(old)] = new

    def materialize_region_scan(self, op: Op, replace: dict) -> None:
        if op.attrs.get("check_laws"):  # --sanitize=laws: the laws are checked first (region_laws.py)
            check_region_laws(self, op)
        n_comp, m = op.attrs["ncomp"], op.attrs["nsummary"]
        domain = op.operands[0]
        comps = op.operands[1:1 + n_comp]
        identity = op.operands[1 + n_comp:1 + n_comp + m]
        init = op.operands[1 + n_comp + m:]
        summarize, combine, apply, emit = op.regions
        n_out = len(op.results) - len(init)
        n = self.emit("dom_len", [domain], [INDEX]).result
        if self.depth:
            outputs = self.inline_region(emit, self.segment_views(comps, self.c(0), n) + list(init))
            total = self.inline_region(summarize, self.segment_views(comps, self.c(0), n))
            final = self.inline_region(apply, list(total) + list(init))
            for old, new in zip(op.results, list(outputs) + list(final)):
                replace[id(old)] = new
            return
        out_types = [r.type for r in op.results[:n_out]]
        if any(t.rank != 1 for t in out_types):
            raise error("region_scan outputs with more than one axis are not supported yet", op.span, rule="R7")
        outputs = [self.result_buffer(r, r.type.dtype, [n], op.span) for r in op.results[:n_out]]
        seeded = _seeded_scan(emit)
        if seeded is not None:
            final = self.seeded_region_scan(op, seeded, comps, identity, init, n, outputs)
        else:
            final = self.segmented_region_scan(op, comps, identity, init, n, outputs)
        for old, new in zip(op.results, outputs + list(final)):
            replace[id(old)] = new

    def incoming_states(self, op: Op, states, sums, init, blocks: Value, start, begin: Value | None = None):
        """The ordered loop over blocks [begin, blocks), the prefix summary starting at
        ``start``: stores each block's incoming state ``apply(prefix, init)`` and combines its
        summary into the prefix (R6); returns the final prefix summary."""
        apply, combine = op.regions[2], op.regions[1]
        b = Value(INDEX, "b")
        accs = [Value(v.type, f"acc{j}") for j, v in enumerate(start)]

        def prefix_body():
            for buf, value in zip(states, self.inline_region(apply, list(accs) + list(init))):
                self.out.append(Op("store", [buf, b, value], attrs={"inbounds": [True]}))
            loaded = self.loads(sums, b)
            return self.inline_region(combine, list(accs) + loaded)

        region = self._with_block([b] + accs, prefix_body)
        loop = Op("for", [self.domain(blocks, begin)] + list(start), [v.type for v in start], None, [region])
        self.out.append(loop)
        return list(loop.results)

    def segmented_region_scan(self, op: Op, comps, identity, init, n: Value, outputs) -> list[Value]:
        """Blocks of ``block_size(n)`` members: summaries in parallel, incoming states in order,
        then every block emitted in parallel; returns the final state."""
        size, blocks = self.block_size(n)
        sums = self.summaries(op, comps, n, size, blocks, identity)
        states = [self.buffer(v.type, [blocks], op.span) for v in init]
        total = self.incoming_states(op, states, sums, init, blocks, identity)

        if any(out is not None for out in outputs):  # no output used: only the final state
            self.parallel([blocks], lambda points: self.emit_block(op, comps, outputs, states, n, size, points[0]),
                          grain=1)
        return self.inline_region(op.regions[2], total + list(init))

    def seeded_region_scan(self, op: Op, seeded, comps, identity, init, n: Value, outputs) -> list[Value]:
        """Sub-segments of CHAIN_SEGMENT members, in windows of WINDOW_GROUPS groups of
        GROUP_CHAINS: per window, summaries in parallel, incoming states in order (the prefix
        carried from window to window), then the window emitted in parallel while its
        components are still in the cache. Returns the final state."""
        size = self.c(CHAIN_SEGMENT)
        blocks = self.ix("floordiv", self.ix("add", n, self.c(CHAIN_SEGMENT - 1)), size)
        groups = self.ix("floordiv", self.ix("add", blocks, self.c(GROUP_CHAINS - 1)), self.c(GROUP_CHAINS))
        windows = self.ix("floordiv", self.ix("add", groups, self.c(WINDOW_GROUPS - 1)), self.c(WINDOW_GROUPS))
        sums = [self.buffer(v.type, [blocks], op.span) for v in identity]
        states = [self.buffer(v.type, [blocks], op.span) for v in init]

        def incoming(blk):
            return self.loads(states, blk)

        def segment(blk):
            self.emit_block(op, comps, outputs, states, n, size, blk)

        w = Value(INDEX, "w")
        accs = [Value(v.type, f"carry{j}") for j, v in enumerate(identity)]

        def window():
            g0 = self.ix("mul", w, self.c(WINDOW_GROUPS))
            g1 = self.ix("min", groups, self.ix("add", g0, self.c(WINDOW_GROUPS)))
            self.chained_summaries(op, comps, n, blocks, sums, g0, g1)
            b0 = self.ix("mul", g0, self.c(GROUP_CHAINS))
            b1 = self.ix("min", blocks, self.ix("mul", g1, self.c(GROUP_CHAINS)))
            total = self.incoming_states(op, states, sums, init, b1, accs, begin=b0)
            if any(out is not None for out in outputs):  # no output used: only the final state
                self.groups_of_chains(n, blocks, lambda first: self.chained_segments(op, seeded, comps, outputs, first,
                                                                                      incoming), segment, g0, g1)
            return total

        region = self._with_block([w] + accs, window)
        loop = Op("for", [self.domain(windows)] + list(identity), [v.type for v in identity], None, [region])
        self.out.append(loop)
        return self.inline_region(op.regions[2], list(loop.results) + list(init))

    def emit_block(self, op: Op, comps, outputs, states, n: Value, size: Value, blk: Value) -> None:
        """``emit`` of block ``blk`` (members [blk·size, min(n, (blk + 1)·size))) from its state."""
        start = self.ix("mul", blk, size)
        self.emit_segment(op, comps, outputs, start, self.ix("min", n, self.ix("add", start, size)),
                          self.loads(states, blk))

    def emit_segment(self, op: Op, comps, outputs, start: Value, stop: Value, incoming: list[Value]) -> None:
        """``emit`` of the slice [start, stop) from its incoming state, written at the slice's place."""
        emit = op.regions[3]
        views = [self.output_view(out, start, stop) if out is not None else None for out in outputs]
        pieces = self.inline_region(emit, self.segment_views(comps, start, stop) + incoming, into=views)
        length = self.ix("sub", stop, start)
        for piece, out, view in zip(pieces, outputs, views):
            if out is None or piece is view:  # unused, or written in place by the emit's scan
                continue
            # emit's output has its slice's membership (R7): same length, written at the slice's place.
            self.emit("assert_eq", [self.extent(piece, 0), length], attrs={
                "what": "region_scan: emit returned %lld members for a slice of %lld (R7)", "rule": "R7"})
            t = Value(INDEX, "t")

            def copy(piece=piece, out=out):
                value = self.element(piece, [t], op.span, proven=True)
                self.out.append(Op("store", [out, self.ix("add", start, t), value], attrs={"inbounds": [True]}))
                return []

            self.out.append(Op("for", [self.domain(length)], [], None, [self._with_block([t], copy)]))

    def run_to(self, region: Block, position: int, args: list[Value]) -> tuple[Op, list[Value]]:
        """Expand a copy of ``region`` on ``args`` up to (not including) its op at ``position``;
        returns that op of the copy and its operands as expanded."""
        from intentc.kir.rewrite import replace_uses

        copy = clone_block(region, {})
        replace_uses(copy, {id(a): v for a, v in zip(copy.args, args)})
        self.register(copy)
        target = copy.ops[position]
        ops = self._block(Block([], copy.ops[:position] + [Op("yield", list(target.operands))]))
        operands = ops.pop().operands
        self.out.extend(ops)
        return target, list(operands)

    def groups_of_chains(self, n: Value, blocks: Value, chained, one, g0: Value, g1: Value) -> None:
        """A parallel loop over the groups [g0, g1) of GROUP_CHAINS consecutive sub-segments:
        ``chained(first)`` for a group of full sub-segments, else ``one(blk)`` for each of its
        sub-segments."""

        def body(points):
            first = self.ix("mul", points[0], self.c(GROUP_CHAINS))
            last = self.ix("add", first, self.c(GROUP_CHAINS))
            full = self.emit("cmp", [self.ix("mul", last, self.c(CHAIN_SEGMENT)), n], [BOOL], {"pred": "le"}).result

            def one_by_one():
                blk = Value(INDEX, "blk")
                loop_body = self._with_block([blk], lambda: (one(blk), [])[1])
                self.out.append(Op("for", [self.domain(self.ix("min", last, blocks), first)], [], None, [loop_body]))
                return []

            self.out.append(Op("if", [full], [], None, [self._with_block([], lambda: (chained(first), [])[1]),
                                                      self._with_block([], one_by_one)]))

        self.parallel([g1], body, grain=1, begins=[g0])

    def lane_tensors(self, comps, views: list[Value], inputs: list[Value]) -> list[Value] | None:
        """The components that ``inputs`` (a chain's operands of its fold or scan) read as they
        are — each a one-axis tensor in memory of numbers — or None if any is an expression,
        a view, booleans or microscaled codes."""
        picked = []
        for x in inputs:
            m = next((m for m, view in enumerate(views) if view is x), None)
            if m is None or id(comps[m]) not in self.params or comps[m].type.rank != 1:
                return None
            if comps[m].type.dtype.is_bool or comps[m].type.dtype.kind == "mx":  # not one register lane each
                return None
            picked.append(comps[m])
        return picked

    def chain_group(self, combine: Block, lanes: list[Value] | None, starts: list[list[Value]], step,
                    first: Value, outputs=(), picks=(), exclusive=False) -> list[list[Value]]:
        """GROUP_CHAINS chains from ``first``: one ``lane_chains`` op when the combine is
        lane-wise and ``lanes`` (the components read) is known, else interleaved scalar loops
        of SCAN_CHAINS chains (``step`` as in ``interleaved``). Returns the final tuples."""
        if lanes is not None and lane_combinable(combine):
            op = lane_chains_op(combine, lanes, list(outputs), list(picks), first, starts, CHAIN_SEGMENT, exclusive)
            self.out.append(op)
            k = len(starts[0])
            return [list(op.results[j * k:(j + 1) * k]) for j in range(len(starts))]
        finals = []
        for base in range(0, len(starts), SCAN_CHAINS):
            finals += self.interleaved(self.c(CHAIN_SEGMENT), starts[base:base + SCAN_CHAINS],
                                       lambda t, j, accs, base=base: step(t, base + j, accs))
        return finals

    def chained_summaries(self, op: Op, comps, n: Value, blocks: Value, buffers, g0: Value, g1: Value) -> None:
        """Summaries of the sub-segments of groups [g0, g1) into ``buffers``. When
        ``summarize`` is a plain reduce (``_plain_reduce``), the GROUP_CHAINS sub-segments of a
        group are folded as independent chains (``chain_group``), each in member order (as
        ``summarize`` alone would fold it)."""
        summarize = op.regions[0]
        plain = _plain_reduce(summarize)

        def store(blk, values):
            for buf, value in zip(buffers, values):
                self.out.append(Op("store", [buf, blk, value], attrs={"inbounds": [True]}))

        def one(blk):
            start = self.ix("mul", blk, self.c(CHAIN_SEGMENT))
            stop = self.ix("min", n, self.ix("add", start, self.c(CHAIN_SEGMENT)))
            store(blk, self.inline_region(summarize, self.segment_views(comps, start, stop)))

        def chained(first):
            chains = []
            for j in range(GROUP_CHAINS):
                start = self.ix("mul", self.ix("add", first, self.c(j)), self.c(CHAIN_SEGMENT))
                views = self.segment_views(comps, start, self.ix("add", start, self.c(CHAIN_SEGMENT)))
                reduce, operands = self.run_to(summarize, plain[0], views)
                k = reduce.attrs["arity"]
                chains.append((reduce, operands[:k], operands[k:]))
                if j == 0:  # every chain runs a copy of the same helper: its operands are the same components
                    lanes = self.lane_tensors(comps, views, operands[:k])

            def step(t, j, accs):
                reduce, inputs, _ = chains[j]
                return self.apply(reduce.regions[0], accs, [self.element(x, [t], op.span, proven=True) for x in inputs])

            totals = self.chain_group(chains[0][0].regions[0], lanes, [c[2] for c in chains], step, first)
            for j, total in enumerate(totals):
                store(self.ix("add", first, self.c(j)), [total[pick] for pick in plain[1]])

        if plain is None:
            self.parallel([self.ix("min", blocks, self.ix("mul", g1, self.c(GROUP_CHAINS)))],
                          lambda points: one(points[0]), grain=1, begins=[self.ix("mul", g0, self.c(GROUP_CHAINS))])
        else:
            self.groups_of_chains(n, blocks, chained, one, g0, g1)

    def chained_segments(self, op: Op, seeded: tuple[int, list[int]], comps, outputs, first: Value,
                         incoming) -> None:
        """GROUP_CHAINS consecutive full sub-segments, from ``first``, emitted as independent chains.

        ``emit`` is a scan seeded from the incoming state (``_seeded_scan``): each sub-segment's
        copy of the emit runs up to its scan (the seed), then the scans run as independent
        chains (``chain_group``) — each in member order, as the emit alone would run it —
        writing their members in place. Same values as emitting the sub-segments one by one."""
        emit = op.regions[3]
        chains = []
        for j in range(GROUP_CHAINS):
            blk = self.ix("add", first, self.c(j))
            start = self.ix("mul", blk, self.c(CHAIN_SEGMENT))
            views = self.segment_views(comps, start, self.ix("add", start, self.c(CHAIN_SEGMENT)))
            scan, operands = self.run_to(emit, seeded[0], views + incoming(blk))
            k = scan.attrs["arity"]
            inputs, identity = operands[:k], operands[k:2 * k]
            start_acc = operands[2 * k:] if scan.attrs.get("has_init") else identity
            for x in inputs:  # emit's output has its slice's membership (R7)
                self.emit("assert_eq", [self.extent(x, 0), self.c(CHAIN_SEGMENT)], attrs={
                    "what": "region_scan: emit returned %lld members for a slice of %lld (R7)", "rule": "R7"})
            chains.append((start, inputs, list(start_acc), scan))
            if j == 0:  # every chain runs a copy of the same helper: its operands are the same components
                lanes = self.lane_tensors(comps, views, inputs)

        def step(t, j, accs):
            start, inputs, _, scan = chains[j]
            items = [self.element(x, [t], op.span, proven=True) for x in inputs]
            combined = self.apply(scan.regions[0], accs, items)
            values = accs if scan.attrs["exclusive"] else combined
            at = self.ix("add", start, t)
            for out, pick in zip(outputs, seeded[1]):
                if out is not None:
                    self.out.append(Op("store", [out, at, values[pick]], attrs={"inbounds": [True]}))
            return combined

        written = [(out, pick) for out, pick in zip(outputs, seeded[1]) if out is not None]
        if any(id(out) not in self.params for out, _ in written):
            lanes = None
        self.chain_group(chains[0][3].regions[0], lanes, [c[2] for c in chains], step, first,
                         [out for out, _ in written], [pick for _, pick in written], chains[0][3].attrs["exclusive"])
