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

MIN_BLOCK = 4096
MAX_BLOCKS = 1024


def _regroupable(combine: Block) -> bool:
    """Free regrouping (LLVM's ``reassoc``) only for one builtin associative, commutative op:
    a helper's internal arithmetic must keep its own rounding (T7)."""
    ops = [op.name for op in combine.ops]
    return len(ops) == 2 and ops[0] in ("add", "mul", "min", "max", "and", "or", "xor")


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

    def buffer(self, dtype, extents: list[Value], span) -> Value:
        if self.depth:
            raise error("a reduction or scan with a tensor result inside I.parallel is not supported yet", span,
                        hint="reduce to a scalar inside the loop, or compute the tensor before the loop")
        static = tuple(None for _ in extents)
        value = self.emit("buffer", list(extents), [TensorType(dtype, static)], {"dtype": str(dtype)}).result
        self.params.add(id(value))
        return value

    def _with_block(self, args: list[Value], build) -> Block:
        saved = self.out
        self.out = []
        try:
            results = build()
            self.out.append(Op("yield", list(results)))
            return Block(args, self.out)
        finally:
            self.out = saved

    def fold(self, count: Value, identity: list[Value], element, combine: Block, span) -> list[Value]:
        """``fold`` of ``element(t)`` for t in [0, count) with a copy of ``combine``."""
        t = Value(INDEX, "t")
        body = self._with_block([t], lambda: element(t))
        op = self.emit("fold", [count] + list(identity), [v.type for v in identity],
                       {"reassoc": _regroupable(combine)}, span=span)
        op.regions = [body, clone_block(combine, {})]
        return list(op.results)

    def parallel(self, extents: list[Value], body, grain: int | None = None) -> None:
        """A parallel loop nest; ``grain=1`` when every point is a whole block of work."""
        points = [Value(INDEX, f"p{k}") for k in range(len(extents))]
        domains = [self.domain(e) for e in extents]

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

        if not isinstance(op.results[0].type, TensorType):
            count = self.product(reduced)
            if self.depth == 0:
                results = self.blocked_fold(count, identity, reduced_elements({}), combine, op.span)
            else:
                results = self.fold(count, identity, reduced_elements({}), combine, op.span)
            for old, new in zip(op.results, results):
                replace[id(old)] = new
            return
        out_extents = [self.c(1) if a in axes else extents[a] for a in range(rank)] if keepdims else \
            [extents[a] for a in kept_axes]
        buffers = [self.buffer(x.type.dtype, out_extents, op.span) for x in inputs]
        count = self.product(reduced)  # known before the loop, so scheduling sees each point's work

        def body(points):
            outer = dict(zip(kept_axes, points))
            values = self.fold(count, identity, reduced_elements(outer), combine, op.span)
            if keepdims:
                index = [self.c(0) if a in axes else outer[a] for a in range(rank)]
            else:
                index = list(points)
            for buf, value in zip(buffers, values):
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

    def blocked_fold(self, count: Value, identity, element, combine: Block, span) -> list[Value]:
        size, blocks = self.block_size(count)
        totals = [self.buffer(v.type, [blocks], span) for v in identity]

        def body(points):
            (b,) = points
            start = self.ix("mul", b, size)
            length = self.ix("min", size, self.ix("sub", count, start))
            values = self.fold(length, identity, lambda t: element(self.ix("add", start, t)), combine, span)
            for buf, value in zip(totals, values):
                self.out.append(Op("store", [buf, b, value], attrs={"inbounds": [True]}))

        self.parallel([blocks], body, grain=1)
        return self.fold(blocks, identity, lambda t: [self.emit("load", [buf, t], [buf.type.dtype],
                                                                   {"inbounds": [True]}).result for buf in totals],
                         combine, span)

    # -- scan ------------------------------------------------------------------------------------------------
    def materialize_scan(self, op: Op, replace: dict) -> None:
        k = op.attrs["arity"]
        inputs, identity = op.operands[:k], op.operands[k:]
        axis, exclusive, reverse = op.attrs["axis"], op.attrs["exclusive"], op.attrs["reverse"]
        combine = op.regions[0]
        rank = inputs[0].type.rank
        extents = [self.extent(inputs[0], a) for a in range(rank)]
        buffers = [self.buffer(x.type.dtype, extents, op.span) for x in inputs]
        n = extents[axis]
        other = [a for a in range(rank) if a != axis]

        def position(t: Value) -> Value:  # the member at logical step t of the scan
            return self.ix("sub", self.ix("sub", n, self.c(1)), t) if reverse else t

        def line(outer: dict[int, Value], begin: Value, length: Value, start_acc: list[Value]) -> None:
            """Scan steps [begin, begin + length) of one line, starting from start_acc."""
            t = Value(INDEX, "t")
            accs = [Value(v.type, f"acc{j}") for j, v in enumerate(start_acc)]

            def build():
                step = self.ix("add", begin, t)
                coords = dict(outer)
                coords[axis] = position(step)
                index = [coords[a] for a in range(rank)]
                items = [self.element(x, index, op.span, proven=True) for x in inputs]
                combined = self.apply(combine, accs, items)
                written = accs if exclusive else combined
                for buf, value in zip(buffers, written):
                    self.out.append(Op("store", [buf] + index + [value], attrs={"inbounds": [True] * rank}))
                return combined

            region = self._with_block([t] + accs, build)
            loop = Op("for", [self.domain(length)] + list(start_acc), [v.type for v in start_acc], None, [region])
            self.out.append(loop)

        if rank == 1 and self.depth == 0:
            self.blocked_scan(n, identity, inputs, line, position, combine, op.span)
        else:
            def body(points):
                line(dict(zip(other, points)), self.c(0), n, identity)
            if other:
                self.parallel([extents[a] for a in other], body)
            else:
                body([])
        for old, new in zip(op.results, buffers):
            replace[id(old)] = new

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

    def blocked_scan(self, n, identity, inputs, line, position, combine, span) -> None:
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
            loaded = [self.emit("load", [buf, b], [buf.type.dtype], {"inbounds": [True]}).result for buf in totals]
            return self.apply(combine, accs, loaded)

        region = self._with_block([b] + accs, prefix_body)
        self.out.append(Op("for", [self.domain(blocks)] + list(identity), [v.type for v in identity], None, [region]))

        def rescan_body(points):
            (blk,) = points
            start = self.ix("mul", blk, size)
            length = self.ix("min", size, self.ix("sub", n, start))
            incoming = [self.emit("load", [buf, blk], [buf.type.dtype], {"inbounds": [True]}).result
                        for buf in prefix]
            line({}, start, length, incoming)

        self.parallel([blocks], rescan_body, grain=1)
