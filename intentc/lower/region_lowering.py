"""How ``expand_tensor_exprs`` materialises ``region_fold`` and ``region_scan`` (R2-R9).

- A ``region_fold`` at the top of a kernel cuts its axis into blocks of
  ``block_size(n)`` members (from ``n`` only, R8): each block is summarised in parallel
  (``summarize`` inlined on views of the components), then the summaries are combined in
  block order (R3: never permuted). Inside a parallel point it is one segment, the whole axis.
- A ``region_scan`` summarises its blocks in parallel, computes each block's incoming
  state in order (``apply(prefix, init)``, R6), then emits every block in parallel from its
  state, writing straight into the result (R7: each emit returns its slice's members).
  When the emit is a seeded scan (``_seeded_scan``) the axis is cut into sub-segments of
  CHAIN_SEGMENT members, processed in windows of groups of chains (``lane_chains`` or
  interleaved scalar chains), each chain in member order: the same values, faster.
- Under ``--sanitize=laws`` the helpers' laws are checked first (``region_laws.py``).
"""
from __future__ import annotations

from intentc.diagnostics import error
from intentc.kir.core import Block, Op, Value
from intentc.kir.rewrite import clone_block, replace_uses
from intentc.kir.types import BOOL, INDEX, TensorType
from intentc.lower import lane_chains
from intentc.lower.kir_builder import KirBuilder
from intentc.lower.lane_chains import lane_chains_op, lane_combinable
from intentc.lower.region_laws import check_region_laws

# A region scan whose emit is a seeded scan (``_seeded_scan``) cuts its axis into sub-segments
# of CHAIN_SEGMENT members and emits GROUP_CHAINS of them at a time as independent chains: one
# per vector lane when the combine allows (``lane_chains``), else SCAN_CHAINS at a time as
# interleaved scalar chains. The size is fixed (results depend on nothing else), a multiple
# of a cache line's members and not of 1024, so the chains' addresses do not alias in the
# cache; with a constant distance between chains they share one address register per array.
# Four scalar chains: eight (two accumulators each in a summary) spill on targets with 16
# vector registers, and each chain is one more memory stream.
CHAIN_SEGMENT = 4096 + 32
GROUP_CHAINS = lane_chains.LANES
SCAN_CHAINS = 4
# Windows of this many groups (about 3 MB of f32 components and results) are summarised and
# then emitted before the next, so the emit reads its components from the cache. Neither the
# chains nor the windows change a value.
WINDOW_GROUPS = 8


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


class RegionExpansion:
    """Materialises region ops with the kernel's builder; ``walk`` expands a copied block
    (the pass's walk), so helpers inlined into a region are expanded in turn."""

    def __init__(self, b: KirBuilder, walk):
        self.b = b
        self.walk = walk

    # -- region_fold / region_scan (R2-R9) --------------------------------------------------------------
    def inline_region(self, region: Block, args: list[Value], into: list[Value | None] | None = None) -> list[Value]:
        """Expand a copy of ``region`` with its arguments bound to ``args``; return its yields.

        ``into``: per yielded tensor, a view of an output (``output_view``) that a structured
        op yielding it as is writes straight into (the caller then skips its copy)."""
        copy = clone_block(region, {})
        replace_uses(copy, {id(a): v for a, v in zip(copy.args, args)})
        self.b.register(copy)
        term = copy.ops[-1]
        for value, view in zip(term.operands, into or []):
            if view is not None and list(term.operands).count(value) == 1:
                self.b.destination[id(value)] = view
        ops = _stores_through_views(self.walk(copy), self.b.output_views)
        term = ops.pop()
        self.b.out.extend(ops)
        return list(term.operands)

    def output_view(self, out: Value, start: Value, stop: Value) -> Value:
        """``out[start:stop]`` as a write destination: stores into it are rewritten to ``out``."""
        view = Op("view", [out, start, stop], [TensorType(out.type.dtype, (None,))], {"axes": ["range"]})
        self.b.defs[id(view.result)] = view
        self.b.output_views[id(view.result)] = (out, start)
        return view.result

    def segment_views(self, comps: list[Value], start: Value, stop: Value) -> list[Value]:
        """Axis-0 slices ``c[start:stop, ...]`` of every component (the checks hold by construction)."""
        views = []
        for comp in comps:
            operands = [comp, start, stop]
            axes = ["range"]
            for axis in range(1, comp.type.rank):
                operands += [self.b.c(0), self.b.extent(comp, axis)]
                axes.append("range")
            # A view is consumed element by element (never emitted), like every tensor expression.
            view = Op("view", operands, [TensorType(comp.type.dtype, (None,) + comp.type.shape[1:])], {"axes": axes})
            self.b.defs[id(view.result)] = view
            views.append(view.result)
        return views

    def summaries(self, op: Op, comps, n, size, blocks, identity) -> list[Value]:
        """Per-block summaries in buffers, computed in parallel (segments from ``n`` only, R8, R9)."""
        buffers = [self.b.buffer(v.type, [blocks], op.span) for v in identity]

        def body(points):
            (b,) = points
            start = self.b.ix("mul", b, size)
            stop = self.b.ix("min", n, self.b.ix("add", start, size))
            values = self.inline_region(op.regions[0], self.segment_views(comps, start, stop))
            for buf, value in zip(buffers, values):
                self.b.out.append(Op("store", [buf, b, value], attrs={"inbounds": [True]}))

        self.b.parallel([blocks], body, grain=1)
        return buffers

    def ordered_combine(self, op: Op, buffers, count: Value, identity) -> list[Value]:
        """combine(...combine(identity, s0)..., s_{count-1}) in block order (R3: never permuted)."""
        def element(t):
            return self.b.loads(buffers, t)
        return self.b.fold(count, identity, element, op.regions[1], op.span)

    def materialize_region_fold(self, op: Op, replace: dict) -> None:
        if op.attrs.get("check_laws"):  # --sanitize=laws: the laws are checked first (region_laws.py)
            check_region_laws(self, op)
        n_comp = op.attrs["ncomp"]
        domain, comps, identity = op.operands[0], op.operands[1:1 + n_comp], op.operands[1 + n_comp:]
        n = self.b.emit("dom_len", [domain], [INDEX]).result
        if self.b.depth:  # inside a parallel point: one segment, the whole axis
            results = self.inline_region(op.regions[0], self.segment_views(comps, self.b.c(0), n))
        else:
            size, blocks = self.b.block_size(n)
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
        n = self.b.emit("dom_len", [domain], [INDEX]).result
        if self.b.depth:
            outputs = self.inline_region(emit, self.segment_views(comps, self.b.c(0), n) + list(init))
            total = self.inline_region(summarize, self.segment_views(comps, self.b.c(0), n))
            final = self.inline_region(apply, list(total) + list(init))
            for old, new in zip(op.results, list(outputs) + list(final)):
                replace[id(old)] = new
            return
        out_types = [r.type for r in op.results[:n_out]]
        if any(t.rank != 1 for t in out_types):
            raise error("region_scan outputs with more than one axis are not supported yet", op.span, rule="R7")
        outputs = [self.b.result_buffer(r, r.type.dtype, [n], op.span) for r in op.results[:n_out]]
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
                self.b.out.append(Op("store", [buf, b, value], attrs={"inbounds": [True]}))
            loaded = self.b.loads(sums, b)
            return self.inline_region(combine, list(accs) + loaded)

        region = self.b.with_block([b] + accs, prefix_body)
        loop = Op("for", [self.b.domain(blocks, begin)] + list(start), [v.type for v in start], None, [region])
        self.b.out.append(loop)
        return list(loop.results)

    def segmented_region_scan(self, op: Op, comps, identity, init, n: Value, outputs) -> list[Value]:
        """Blocks of ``block_size(n)`` members: summaries in parallel, incoming states in order,
        then every block emitted in parallel; returns the final state."""
        size, blocks = self.b.block_size(n)
        sums = self.summaries(op, comps, n, size, blocks, identity)
        states = [self.b.buffer(v.type, [blocks], op.span) for v in init]
        total = self.incoming_states(op, states, sums, init, blocks, identity)

        if any(out is not None for out in outputs):  # no output used: only the final state
            self.b.parallel([blocks], lambda points: self.emit_block(op, comps, outputs, states, n, size, points[0]),
                          grain=1)
        return self.inline_region(op.regions[2], total + list(init))

    def seeded_region_scan(self, op: Op, seeded, comps, identity, init, n: Value, outputs) -> list[Value]:
        """Sub-segments of CHAIN_SEGMENT members, in windows of WINDOW_GROUPS groups of
        GROUP_CHAINS: per window, summaries in parallel, incoming states in order (the prefix
        carried from window to window), then the window emitted in parallel while its
        components are still in the cache. Returns the final state."""
        size = self.b.c(CHAIN_SEGMENT)
        blocks = self.b.ix("floordiv", self.b.ix("add", n, self.b.c(CHAIN_SEGMENT - 1)), size)
        groups = self.b.ix("floordiv", self.b.ix("add", blocks, self.b.c(GROUP_CHAINS - 1)), self.b.c(GROUP_CHAINS))
        windows = self.b.ix("floordiv", self.b.ix("add", groups, self.b.c(WINDOW_GROUPS - 1)), self.b.c(WINDOW_GROUPS))
        sums = [self.b.buffer(v.type, [blocks], op.span) for v in identity]
        states = [self.b.buffer(v.type, [blocks], op.span) for v in init]

        def incoming(blk):
            return self.b.loads(states, blk)

        def segment(blk):
            self.emit_block(op, comps, outputs, states, n, size, blk)

        w = Value(INDEX, "w")
        accs = [Value(v.type, f"carry{j}") for j, v in enumerate(identity)]

        def window():
            g0 = self.b.ix("mul", w, self.b.c(WINDOW_GROUPS))
            g1 = self.b.ix("min", groups, self.b.ix("add", g0, self.b.c(WINDOW_GROUPS)))
            self.chained_summaries(op, comps, n, blocks, sums, g0, g1)
            b0 = self.b.ix("mul", g0, self.b.c(GROUP_CHAINS))
            b1 = self.b.ix("min", blocks, self.b.ix("mul", g1, self.b.c(GROUP_CHAINS)))
            total = self.incoming_states(op, states, sums, init, b1, accs, begin=b0)
            if any(out is not None for out in outputs):  # no output used: only the final state
                self.groups_of_chains(n, blocks, lambda first: self.chained_segments(op, seeded, comps, outputs, first,
                                                                                      incoming), segment, g0, g1)
            return total

        region = self.b.with_block([w] + accs, window)
        loop = Op("for", [self.b.domain(windows)] + list(identity), [v.type for v in identity], None, [region])
        self.b.out.append(loop)
        return self.inline_region(op.regions[2], list(loop.results) + list(init))

    def emit_block(self, op: Op, comps, outputs, states, n: Value, size: Value, blk: Value) -> None:
        """``emit`` of block ``blk`` (members [blk·size, min(n, (blk + 1)·size))) from its state."""
        start = self.b.ix("mul", blk, size)
        self.emit_segment(op, comps, outputs, start, self.b.ix("min", n, self.b.ix("add", start, size)),
                          self.b.loads(states, blk))

    def emit_segment(self, op: Op, comps, outputs, start: Value, stop: Value, incoming: list[Value]) -> None:
        """``emit`` of the slice [start, stop) from its incoming state, written at the slice's place."""
        emit = op.regions[3]
        views = [self.output_view(out, start, stop) if out is not None else None for out in outputs]
        pieces = self.inline_region(emit, self.segment_views(comps, start, stop) + incoming, into=views)
        length = self.b.ix("sub", stop, start)
        for piece, out, view in zip(pieces, outputs, views):
            if out is None or piece is view:  # unused, or written in place by the emit's scan
                continue
            # emit's output has its slice's membership (R7): same length, written at the slice's place.
            self.b.emit("assert_eq", [self.b.extent(piece, 0), length], attrs={
                "what": "region_scan: emit returned %lld members for a slice of %lld (R7)", "rule": "R7"})
            t = Value(INDEX, "t")

            def copy(piece=piece, out=out):
                value = self.b.element(piece, [t], op.span, proven=True)
                self.b.out.append(Op("store", [out, self.b.ix("add", start, t), value], attrs={"inbounds": [True]}))
                return []

            self.b.out.append(Op("for", [self.b.domain(length)], [], None, [self.b.with_block([t], copy)]))

    def run_to(self, region: Block, position: int, args: list[Value]) -> tuple[Op, list[Value]]:
        """Expand a copy of ``region`` on ``args`` up to (not including) its op at ``position``;
        returns that op of the copy and its operands as expanded."""
        copy = clone_block(region, {})
        replace_uses(copy, {id(a): v for a, v in zip(copy.args, args)})
        self.b.register(copy)
        target = copy.ops[position]
        ops = self.walk(Block([], copy.ops[:position] + [Op("yield", list(target.operands))]))
        operands = ops.pop().operands
        self.b.out.extend(ops)
        return target, list(operands)

    def groups_of_chains(self, n: Value, blocks: Value, chained, one, g0: Value, g1: Value) -> None:
        """A parallel loop over the groups [g0, g1) of GROUP_CHAINS consecutive sub-segments:
        ``chained(first)`` for a group of full sub-segments, else ``one(blk)`` for each of its
        sub-segments."""

        def body(points):
            first = self.b.ix("mul", points[0], self.b.c(GROUP_CHAINS))
            last = self.b.ix("add", first, self.b.c(GROUP_CHAINS))
            end = self.b.ix("mul", last, self.b.c(CHAIN_SEGMENT))
            full = self.b.emit("cmp", [end, n], [BOOL], {"pred": "le"}).result

            def one_by_one():
                blk = Value(INDEX, "blk")
                loop_body = self.b.with_block([blk], lambda: (one(blk), [])[1])
                blocks_here = self.b.domain(self.b.ix("min", last, blocks), first)
                self.b.out.append(Op("for", [blocks_here], [], None, [loop_body]))
                return []

            self.b.out.append(Op("if", [full], [], None, [self.b.with_block([], lambda: (chained(first), [])[1]),
                                                      self.b.with_block([], one_by_one)]))

        self.b.parallel([g1], body, grain=1, begins=[g0])

    def lane_tensors(self, comps, views: list[Value], inputs: list[Value]) -> list[Value] | None:
        """The components that ``inputs`` (a chain's operands of its fold or scan) read as they
        are — each a one-axis tensor in memory of numbers — or None if any is an expression,
        a view, booleans or microscaled codes."""
        picked = []
        for x in inputs:
            m = next((m for m, view in enumerate(views) if view is x), None)
            if m is None or id(comps[m]) not in self.b.params or comps[m].type.rank != 1:
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
            self.b.out.append(op)
            k = len(starts[0])
            return [list(op.results[j * k:(j + 1) * k]) for j in range(len(starts))]
        finals = []
        for base in range(0, len(starts), SCAN_CHAINS):
            finals += self.b.interleaved(self.b.c(CHAIN_SEGMENT), starts[base:base + SCAN_CHAINS],
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
                self.b.out.append(Op("store", [buf, blk, value], attrs={"inbounds": [True]}))

        def one(blk):
            start = self.b.ix("mul", blk, self.b.c(CHAIN_SEGMENT))
            stop = self.b.ix("min", n, self.b.ix("add", start, self.b.c(CHAIN_SEGMENT)))
            store(blk, self.inline_region(summarize, self.segment_views(comps, start, stop)))

        def chained(first):
            chains = []
            for j in range(GROUP_CHAINS):
                start = self.b.ix("mul", self.b.ix("add", first, self.b.c(j)), self.b.c(CHAIN_SEGMENT))
                views = self.segment_views(comps, start, self.b.ix("add", start, self.b.c(CHAIN_SEGMENT)))
                reduce, operands = self.run_to(summarize, plain[0], views)
                k = reduce.attrs["arity"]
                chains.append((reduce, operands[:k], operands[k:]))
                if j == 0:  # every chain runs a copy of the same helper: its operands are the same components
                    lanes = self.lane_tensors(comps, views, operands[:k])

            def step(t, j, accs):
                reduce, inputs, _ = chains[j]
                items = [self.b.element(x, [t], op.span, proven=True) for x in inputs]
                return self.b.apply(reduce.regions[0], accs, items)

            totals = self.chain_group(chains[0][0].regions[0], lanes, [c[2] for c in chains], step, first)
            for j, total in enumerate(totals):
                store(self.b.ix("add", first, self.b.c(j)), [total[pick] for pick in plain[1]])

        if plain is None:
            self.b.parallel([self.b.ix("min", blocks, self.b.ix("mul", g1, self.b.c(GROUP_CHAINS)))],
                          lambda points: one(points[0]), grain=1, begins=[self.b.ix("mul", g0, self.b.c(GROUP_CHAINS))])
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
            blk = self.b.ix("add", first, self.b.c(j))
            start = self.b.ix("mul", blk, self.b.c(CHAIN_SEGMENT))
            views = self.segment_views(comps, start, self.b.ix("add", start, self.b.c(CHAIN_SEGMENT)))
            scan, operands = self.run_to(emit, seeded[0], views + incoming(blk))
            k = scan.attrs["arity"]
            inputs, identity = operands[:k], operands[k:2 * k]
            start_acc = operands[2 * k:] if scan.attrs.get("has_init") else identity
            for x in inputs:  # emit's output has its slice's membership (R7)
                self.b.emit("assert_eq", [self.b.extent(x, 0), self.b.c(CHAIN_SEGMENT)], attrs={
                    "what": "region_scan: emit returned %lld members for a slice of %lld (R7)", "rule": "R7"})
            chains.append((start, inputs, list(start_acc), scan))
            if j == 0:  # every chain runs a copy of the same helper: its operands are the same components
                lanes = self.lane_tensors(comps, views, inputs)

        def step(t, j, accs):
            start, inputs, _, scan = chains[j]
            items = [self.b.element(x, [t], op.span, proven=True) for x in inputs]
            combined = self.b.apply(scan.regions[0], accs, items)
            values = accs if scan.attrs["exclusive"] else combined
            at = self.b.ix("add", start, t)
            for out, pick in zip(outputs, seeded[1]):
                if out is not None:
                    self.b.out.append(Op("store", [out, at, values[pick]], attrs={"inbounds": [True]}))
            return combined

        written = [(out, pick) for out, pick in zip(outputs, seeded[1]) if out is not None]
        if any(id(out) not in self.b.params for out, _ in written):
            lanes = None
        self.chain_group(chains[0][3].regions[0], lanes, [c[2] for c in chains], step, first,
                         [out for out, _ in written], [pick for _, pick in written], chains[0][3].attrs["exclusive"])
