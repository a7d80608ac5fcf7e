"""How lowering treats the memory ops (``kir/ops/memory.py``): gathers, masks, scatters,
scatter_reduce, atomics and Philox.

In ``expand_tensor_exprs`` (``MemoryExpansion``, on the kernel's ``KirBuilder``):

- a tensor ``gather`` is consumed element by element like any tensor expression: one
  element is ``src[element(i_0), ..., element(i_{r-1})]``, so ``x[idx[j]] * w[j]`` is one
  fused loop with no temporaries (M1). Where every index is ``indices(d)`` of a subregion
  chain of ``src``'s own axis domain, the access is in bounds by the subregion checks (D4,
  D5) and needs no check of its own — the inner loops of ragged reductions vectorise;
- a masked lane becomes ``if valid { load } else { fill }``: an invalid lane touches no
  memory and runs no bounds check (M3); a masked store becomes ``if valid { store }``;
- ``scatter`` with tensor lanes becomes a loop nest over the lanes (``parallel`` at the top
  of a kernel — M4 proved the writes distinct — else ordered) of checked stores;
- ``scatter_reduce`` at the top of a kernel is privatised: the lanes are cut into
  ``privatized_blocks(n, size(dst))`` blocks (sizes only, never the thread count), each
  block folds its lanes in order into a private copy of ``dst`` that starts at the identity
  (every index is checked there, so a bad index fails before ``dst`` is touched), and a
  parallel loop over ``dst`` combines each element with the private copies in block order.
  Exact and deterministic for integers; for floats deterministic, with the grouping the
  interpreter defines (M5). Inside a parallel loop it combines each lane with an atomic
  read-modify-write (M6; sema admits only exact combines there) or, into a tensor of the
  point's own, with a plain one;
- ``philox`` becomes u32 arithmetic: ten rounds of two 32x32->64 multiplies (``u64``
  ``mul`` + ``shr 32``), xors and Weyl key bumps, which LLVM vectorises (N1).

``to_physical`` lowers the atomic ops itself.
"""
from __future__ import annotations

from intentc.kir.core import Block, Op, Value
from intentc.base.blocking import MAX_BLOCKS, MIN_BLOCK, PRIVATE_LIMIT, exact_combine
from intentc.base.philox import PHILOX_M, PHILOX_W, ROUNDS
from intentc.kir.types import BOOL, DTYPES, INDEX, TensorType
from intentc.lower.kir_builder import KirBuilder

U32, U64 = DTYPES["u32"], DTYPES["u64"]
MATERIALIZED = ("buffer", "gather", "scatter", "scatter_reduce", "philox")


class MemoryExpansion:
    """Materialises the memory ops (MATERIALIZED) and gives the elements of gathers and Philox
    values (``element_rules``) with the kernel's builder."""

    def __init__(self, b: KirBuilder):
        self.b = b
        # id(buffer) -> the depth of the parallel point that made it (its own copy there).
        self.point_buffers: dict[int, int] = {}
        # (op, indices, insertion point) -> Philox words already computed there.
        self.philox_memo: dict = {}

    # -- statements ------------------------------------------------------------------------------------
    def materialize_memory(self, op: Op, replace: dict) -> None:
        if op.name == "buffer":
            self.b.params.add(id(op.result))  # a tensor in memory from here on
            if self.b.depth:
                self.point_buffers[id(op.result)] = self.b.depth
            self.b.out.append(op)
        elif op.name == "gather":
            if not isinstance(op.result.type, TensorType):  # a masked element read
                replace[id(op.result)] = self._gather_element(op, [], op.span, False)
            elif self.b.reads_written(op):  # a gather of a tensor the kernel writes: a snapshot here
                replace[id(op.result)] = self.b.snapshot(op.result, op.span)
        elif op.name == "philox":
            if not isinstance(op.results[0].type, TensorType):
                for old, new in zip(op.results, self.philox_rounds(op.operands)):
                    replace[id(old)] = new
        elif op.name == "scatter":
            self._scatter(op)
        else:
            self._scatter_reduce(op)

    # -- elements of tensor expressions ----------------------------------------------------------------
    def memory_element(self, op: Op, value: Value, indices: list[Value], span, proven: bool) -> Value:
        if op.name == "gather":
            return self._gather_element(op, indices, span, proven)
        memo = self.philox_memo
        key = (id(op), tuple(id(i) for i in indices), id(self.b.out))
        if key not in memo:
            words = [self.b.element(v, indices, span, proven) for v in op.operands]
            memo[key] = (self.b.out, self.philox_rounds(words))
        return memo[key][1][op.results.index(value)]

    def _gather_element(self, op: Op, indices: list[Value], span, proven: bool) -> Value:
        src = op.operands[0]
        rank = src.type.rank
        where = [self.b.element(v, indices, span, proven) for v in op.operands[1:1 + rank]]
        in_bounds = self._gather_in_bounds(op)
        if not op.attrs.get("masked"):
            return self.b.element(src, where, span, in_bounds)
        valid = self.b.element(op.operands[1 + rank], indices, span, proven)
        fill = op.operands[2 + rank]
        return self.guarded(valid, lambda: self.b.element(src, where, span, in_bounds), fill)

    def guarded(self, cond: Value, build, fill: Value) -> Value:
        """``if cond { build() } else { fill }``: the read in ``build`` runs only when valid."""
        then = self.b.with_block([], lambda: [build()])
        other = self.b.with_block([], lambda: [fill])
        op = Op("if", [cond], [fill.type], None, [then, other])
        self.b.out.append(op)
        self.b.defs[id(op.result)] = op
        return op.result

    def _gather_in_bounds(self, op: Op) -> bool:
        """Every index is ``indices(d)`` with ``d`` a subregion chain of the source's own axis k."""
        src = op.operands[0]
        if id(src) not in self.b.params:
            return False
        for axis, index in enumerate(op.operands[1:1 + src.type.rank]):
            ids = self.b.defs.get(id(index))
            if ids is None or ids.name != "indices":
                return False
            domain = self.b.defs.get(id(ids.operands[0]))
            while domain is not None and domain.name == "subregion":
                domain = self.b.defs.get(id(domain.operands[0]))
            if domain is None or domain.name != "domain":
                return False
            begin, end, step = domain.operands
            if self._const(begin) != 0 or not (self._const(step) or 0) > 0:
                return False
            if not self._same_extent(end, src, axis):
                return False
        return True

    def _const(self, value: Value):
        op = self.b.defs.get(id(value))
        return op.attrs.get("value") if op is not None and op.name == "const" else None

    def _same_extent(self, extent: Value, tensor: Value, axis: int) -> bool:
        """``extent`` is the tensor's extent on ``axis``: the same value, or ``dim`` of a
        parameter axis declared with the same extent name (checked equal on entry, S1)."""
        if tensor.type.shape[axis] is not None and self._const(extent) == tensor.type.shape[axis]:
            return True
        if extent is self.b.extent(tensor, axis):
            return True
        names = {id(arg): param.extents for param, arg in zip(self.b.func.params, self.b.func.args)}

        def name_of(value, t=None, a=None):
            if t is not None:
                extents = names.get(id(t), ())
                return extents[a] if a < len(extents) and isinstance(extents[a], str) else None
            op = self.b.defs.get(id(value))
            if op is None or op.name != "dim":
                return None
            return name_of(None, op.operands[0], op.attrs["axis"])

        mine = name_of(None, tensor, axis)
        return mine is not None and name_of(extent) == mine

    # -- scatter (M4) ---------------------------------------------------------------------------------------
    def _lanes(self, op: Op, first: int) -> Value | None:
        """A tensor operand of the lanes' shape, preferring values and masks over indices and
        expressions over materialised buffers (whose extents the GPU planner cannot see)."""
        rank = op.operands[0].type.rank
        ordered = op.operands[1 + rank:] + op.operands[first:1 + rank]
        tensors = [v for v in ordered if isinstance(v.type, TensorType)]
        if op.attrs.get("check_unique"):
            tensors = [v for v in tensors if v is not op.operands[-1]]
        for v in tensors:
            defining = self.b.defs.get(id(v))
            if defining is None or defining.name != "buffer":
                return v
        return tensors[0] if tensors else None

    def _scatter(self, op: Op) -> None:
        dst = op.operands[0]
        rank = dst.type.rank
        index_ops, vals = op.operands[1:1 + rank], op.operands[1 + rank]
        marker = op.operands[-1] if op.attrs.get("check_unique") else None
        mask = op.operands[-2 if marker is not None else -1] if op.attrs.get("masked") else None
        lanes = self._lanes(op, 1)

        def write(points):
            where = [self.b.element(v, points, op.span, True) for v in index_ops]
            value = self.b.element(vals, points, op.span, True)

            def store():
                if marker is not None:
                    self._claim(op, marker, where)
                self.b.out.append(Op("store", [dst] + where + [value], span=op.span))
                return []
            if mask is None:
                store()
            else:
                self.when(self.b.element(mask, points, op.span, True), store)

        if lanes is None:
            write([])
            return
        extents = [self.b.extent(lanes, a) for a in range(lanes.type.rank)]
        self.loop_nest(extents, write, parallel=self.b.depth == 0)

    def _claim(self, op: Op, marker: Value, where: list[Value]) -> None:
        """--sanitize=unique: mark the element; a second write to it fails the call (M4)."""
        dst = op.operands[0]
        extents = [self.b.extent(dst, a) for a in range(dst.type.rank)]
        flat = self._checked_flat(op, where, extents)
        one = self.b.emit("const", [], [marker.type.dtype], {"value": 1}).result
        old = self.b.emit("atomic_rmw", [marker] + where + [one], [marker.type.dtype],
                        {"op": "exchange", "order": "relaxed"}, span=op.span).result
        fresh = self.b.emit("cmp", [old, self.b.emit("const", [], [marker.type.dtype], {"value": 0}).result], [BOOL],
                          {"pred": "eq"}).result
        name = _param_name(self.b.func, dst)
        self.b.emit("assert_true", [fresh, flat], attrs={
            "what": f"unique sanitizer (M4): a scatter asserted unique=True writes element %lld (row-major) of "
                    f"'{name}' a second time", "rule": "M4", "code": "sanitizer"}, span=op.span)

    def when(self, cond: Value, build) -> None:
        then = self.b.with_block([], build)
        other = self.b.with_block([], lambda: [])
        self.b.out.append(Op("if", [cond], [], None, [then, other]))

    def loop_nest(self, extents: list[Value], body, parallel: bool) -> None:
        if parallel:
            self.b.parallel(extents, body)
            return
        points: list[Value] = []

        def level(k):
            if k == len(extents):
                body(points)
                return []
            t = Value(INDEX, f"l{k}")
            points.append(t)
            region = self.b.with_block([t], lambda: level(k + 1))
            self.b.out.append(Op("for", [self.b.domain(extents[k])], [], None, [region]))
            return []

        level(0)

    def serial_for(self, count: Value, body) -> None:
        t = Value(INDEX, "t")
        region = self.b.with_block([t], lambda: body(t) or [])
        self.b.out.append(Op("for", [self.b.domain(count)], [], None, [region]))

    # -- scatter_reduce (M5) ----------------------------------------------------------------------------------
    def combine(self, op: Op, acc: Value, item: Value) -> Value:
        return self.b.apply(op.regions[0], [acc], [item])[0]

    def _scatter_reduce(self, op: Op) -> None:
        dst = op.operands[0]
        rank = dst.type.rank
        lanes = self._lanes(op, 1)
        if self.b.depth or lanes is None:
            self._scatter_reduce_lanes(op, lanes)
            return
        self._privatized(op, lanes)

    def _lane_parts(self, op: Op, points: list[Value]):
        dst = op.operands[0]
        rank = dst.type.rank
        where = [self.b.element(v, points, op.span, True) for v in op.operands[1:1 + rank]]
        value = self.b.element(op.operands[1 + rank], points, op.span, True)
        valid = self.b.element(op.operands[-1], points, op.span, True) if op.attrs.get("masked") else None
        return where, value, valid

    def _scatter_reduce_lanes(self, op: Op, lanes: Value | None) -> None:
        """Each lane in order: an atomic read-modify-write into a tensor shared by the parallel
        points around, a plain one into a top-level or point-local tensor."""
        dst = op.operands[0]
        shared = self.b.depth > 0 and not self._local(dst)

        def lane(points):
            where, value, valid = self._lane_parts(op, points)

            def update():
                if shared:
                    self.b.emit("atomic_rmw", [dst] + where + [value], [dst.type.dtype],
                              {"op": op.attrs["combine"], "order": "relaxed"}, span=op.span)
                else:
                    old = self.b.emit("load", [dst] + where, [dst.type.dtype], span=op.span).result
                    self.b.out.append(Op("store", [dst] + where + [self.combine(op, old, value)], span=op.span))
                return []
            if valid is None:
                update()
            else:
                self.when(valid, update)

        if lanes is None:
            lane([])
            return
        self.loop_nest([self.b.extent(lanes, a) for a in range(lanes.type.rank)], lane, parallel=False)

    def _local(self, tensor: Value) -> bool:
        """A buffer created inside the innermost enclosing parallel point (its own copy)."""
        return self.point_buffers.get(id(tensor)) == self.b.depth

    def _privatized(self, op: Op, lanes: Value) -> None:
        dst = op.operands[0]
        rank = dst.type.rank
        dtype = dst.type.dtype
        identity = op.operands[2 + rank]
        lane_extents = [self.b.extent(lanes, a) for a in range(lanes.type.rank)]
        dst_extents = [self.b.extent(dst, a) for a in range(rank)]
        n = self.b.product(lane_extents)
        size = self.b.product(dst_extents)
        block, blocks = self.private_blocks(n, size)
        private = self.b.buffer(dtype, [blocks, size], op.span)

        def accumulate(points):
            (b,) = points

            def reset(t):
                self.b.out.append(Op("store", [private, b, t, identity], attrs={"inbounds": [True, True]}))
            self.serial_for(size, reset)
            start = self.b.ix("mul", b, block)
            count = self.b.ix("min", block, self.b.ix("sub", n, start))

            def lane(t):
                coords = self.b.unravel(self.b.ix("add", start, t), lane_extents)
                where, value, valid = self._lane_parts(op, coords)

                def update():
                    flat = self._checked_flat(op, where, dst_extents)
                    old = self.b.emit("load", [private, b, flat], [dtype], {"inbounds": [True, True]}).result
                    new = self.combine(op, old, value)
                    self.b.out.append(Op("store", [private, b, flat, new], attrs={"inbounds": [True, True]}))
                    return []
                if valid is None:
                    update()
                else:
                    self.when(valid, update)
            self.serial_for(count, lane)

        self.b.parallel([blocks], accumulate, grain=1)

        def merge(points):
            flat = self._flat(points, dst_extents)
            start = self.b.emit("load", [dst] + list(points), [dtype], {"inbounds": [True] * rank}).result
            t, acc = Value(INDEX, "t"), Value(dtype, "acc")

            def step():  # strictly in block order: the grouping the interpreter defines
                part = self.b.emit("load", [private, t, flat], [dtype], {"inbounds": [True, True]}).result
                return [self.combine(op, acc, part)]
            loop = Op("for", [self.b.domain(blocks), start], [dtype], None, [self.b.with_block([t, acc], step)])
            self.b.out.append(loop)
            total = loop.results[0]
            self.b.out.append(Op("store", [dst] + list(points) + [total], attrs={"inbounds": [True] * rank}))

        self.b.parallel(dst_extents, merge)

    def private_blocks(self, n: Value, size: Value) -> tuple[Value, Value]:
        """base/blocking.privatized_blocks, as index arithmetic."""
        c = self.b.c
        per = self.b.ix("floordiv", self.b.ix("add", n, c(MAX_BLOCKS - 1)), c(MAX_BLOCKS))
        block = self.b.ix("max", per, c(MIN_BLOCK))
        blocks = self.b.ix("floordiv", self.b.ix("add", n, self.b.ix("sub", block, c(1))), block)
        cap = self.b.ix("max", c(1), self.b.ix("floordiv", c(PRIVATE_LIMIT), self.b.ix("max", size, c(1))))
        over = self.b.emit("cmp", [blocks, cap], [BOOL], {"pred": "gt"}).result
        capped = self.b.ix("floordiv", self.b.ix("add", n, self.b.ix("sub", cap, c(1))), cap)
        block = self.b.emit("select", [over, capped, block], [INDEX]).result
        blocks = self.b.ix("floordiv", self.b.ix("add", n, self.b.ix("sub", block, c(1))), block)
        return block, blocks

    def _flat(self, coords: list[Value], extents: list[Value]) -> Value:
        flat = None
        for coord, extent in zip(coords, extents):
            flat = coord if flat is None else self.b.ix("add", self.b.ix("mul", flat, extent), coord)
        return flat if flat is not None else self.b.c(0)

    def _checked_flat(self, op: Op, where: list[Value], extents: list[Value]) -> Value:
        """D5 for every index of a privatised lane, before anything of ``dst`` is written."""
        name = _param_name(self.b.func, op.operands[0])
        for axis, (index, extent) in enumerate(zip(where, extents)):
            ok = self.b.emit("and", [self.b.emit("cmp", [index, self.b.c(0)], [BOOL], {"pred": "ge"}).result,
                                   self.b.emit("cmp", [index, extent], [BOOL], {"pred": "lt"}).result], [BOOL]).result
            self.b.emit("assert_true", [ok, index, extent], attrs={
                "what": f"index %lld is out of range [0, %lld) on axis {axis} of '{name}'", "rule": "D5",
                "code": "bounds"}, span=op.span)
        return self._flat(where, extents)

    # -- Philox4x32-10 (N1) ------------------------------------------------------------------------------------
    def philox_rounds(self, words: list[Value]) -> list[Value]:
        def const(value, dtype):
            return self.b.emit("const", [], [dtype], {"value": value}).result

        def op(name, a, b, dtype=U32):
            return self.b.emit(name, [a, b], [dtype]).result

        def cast(v, dtype):
            return self.b.emit("cast", [v], [dtype]).result

        k0, k1, c0, c1, c2, c3 = words
        m0, m1 = const(PHILOX_M[0], U64), const(PHILOX_M[1], U64)
        w0, w1 = const(PHILOX_W[0], U32), const(PHILOX_W[1], U32)
        shift = const(32, U64)
        for r in range(ROUNDS):
            if r:
                k0, k1 = op("add", k0, w0), op("add", k1, w1)
            p0 = op("mul", cast(c0, U64), m0, U64)
            p1 = op("mul", cast(c2, U64), m1, U64)
            hi0, lo0 = cast(op("shr", p0, shift, U64), U32), cast(p0, U32)
            hi1, lo1 = cast(op("shr", p1, shift, U64), U32), cast(p1, U32)
            c0, c1, c2, c3 = op("xor", op("xor", hi1, c1), k0), lo1, op("xor", op("xor", hi0, c3), k1), lo0
        return [c0, c1, c2, c3]


def _param_name(func, value: Value) -> str:
    for param, arg in zip(func.params, func.args):
        if arg is value:
            return param.name
    return value.hint or "buffer"


__all__ = ["MemoryExpansion", "MATERIALIZED", "exact_combine", "Block"]
