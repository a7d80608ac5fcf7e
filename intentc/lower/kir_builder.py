"""The KIR builder of ``expand_tensor_exprs``: where ops go, and how tensor values are computed.

A ``KirBuilder`` is made per kernel. It appends new ops at its insertion point (``out``),
builds the common shapes — constants and index arithmetic, buffers, ``parallel`` nests,
``fold``s, interleaved ordered loops, inlined combines, the blocking of reductions — and
computes one element (``element``) or extent (``extent``) of any tensor value through the
relations that define it (broadcast, views, reshape, join, elementwise ops, S2, C4, S4),
so a consumer reads an expression without a temporary (P6). The expansion families
(``*_lowering.py``) and the pass share one builder; its state is declared here.
"""
from __future__ import annotations

from typing import Callable

from intentc.base import math_catalog
from intentc.kir.core import Block, Function, Op, Value
from intentc.kir.ops import effects
from intentc.kir.relations import RELATIONS, source_indices
from intentc.kir.rewrite import clone_block, replace_uses
from intentc.kir.types import BOOL, DOMAIN, INDEX, TensorType

# Reductions to scalars at the top of a kernel fold blocks of B = max(MIN_BLOCK, ceil(n / MAX_BLOCKS))
# elements: the grouping depends on n only, never on the thread count (T1).
MIN_BLOCK = 4096
MAX_BLOCKS = 1024

ELEMENTWISE = {"add", "sub", "mul", "div", "floordiv", "mod", "pow", "min", "max", "and", "or", "xor", "shl",
               "shr", "neg", "not", "abs", "exp", "log", "tanh", "sqrt", "cmp", "select", "cast",
               "fma", *math_catalog.UNARY, *math_catalog.NEW_BINARY}
# Tensor values whose element accesses are checked against their own extents before they
# are expanded (an index can leave them without leaving the parameters they read).
_CHECKED_RELATIONS = ELEMENTWISE | {"broadcast", "permute", "view", "reshape", "join", "indices"}


def regroupable(combine: Block) -> bool:
    """Free regrouping (LLVM's ``reassoc``) only for one builtin associative, commutative op:
    a helper's internal arithmetic must keep its own rounding (T7)."""
    ops = [op.name for op in combine.ops]
    return len(ops) == 2 and ops[0] in ("add", "mul", "min", "max", "and", "or", "xor")


# The element of a tensor value made by an op a family owns: (op, value, indices, span, proven) -> element.
ElementRule = Callable[[Op, Value, list, object, bool], Value]


def _written_by(op: Op) -> set[int]:
    """Ids of the tensors ``op`` (nested ops included) writes, updates or reduces into."""
    return {id(o.operands[e.operand]) for o in op.walk() for e in effects(o)
            if e.kind in ("write", "atomic", "buffer_write", "reduce") and e.operand is not None}


def _used_by(op: Op) -> set[int]:
    return {id(v) for o in op.walk() for v in o.operands}


class WriteWindows:
    """For the ops of one block: where each value defined there is last used — directly, in a
    nested region, or through the tensor-valued ops that are consumed element by element at
    their own uses — and which tensors each op writes. A value over a tensor needs a
    snapshot at its definition only when an op between the definition and that last use (the
    using op included) writes the tensor; otherwise computing its elements where they are
    read gives the same values (P6: reading a view never copies)."""

    def __init__(self, ops: list[Op], lazy):
        self.writes = [_written_by(op) for op in ops]
        self.last_use: dict[int, int] = {}
        for k in reversed(range(len(ops))):
            op = ops[k]
            for v in _used_by(op):
                self.last_use.setdefault(v, k)  # reversed: the first seen is the latest
            if lazy(op):  # consumed where its result is read: its operands live as long
                until = max((self.last_use.get(id(r), k) for r in op.results), default=k)
                for v in op.operands:
                    self.last_use[id(v)] = max(self.last_use.get(id(v), k), until)

    def written_before_last_use(self, k: int, op: Op) -> bool:
        reads = {id(v) for v in op.operands if isinstance(v.type, TensorType)}
        last = max((self.last_use.get(id(r), k) for r in op.results), default=k)
        return any(reads & self.writes[j] for j in range(k + 1, last + 1))


class KirBuilder:
    """The insertion point and what is known about the values of one kernel being expanded."""

    def __init__(self, func: Function):
        self.func = func
        # Tensors in memory (parameters, buffers): read with loads, not expanded.
        self.params: set[int] = {id(v) for v in func.args if isinstance(v.type, TensorType)}
        self.defs: dict[int, Op] = {}  # id(value) -> its defining op (emitted or only registered)
        for op in func.walk():
            for result in op.results:
                self.defs[id(result)] = op
        self.out: list[Op] = []  # where new ops are appended
        self.depth = 0  # how many parallel loops enclose the op being expanded
        self.ordered_depth = 0  # how many ordered loops (for, while) enclose it
        # The extents sema already read at entry, so that equal extents stay the same value.
        self.entry_dims: dict[tuple[int, int], Value] = {}
        for op in func.body.ops:
            if op.name == "dim" and id(op.operands[0]) in self.params:
                self.entry_dims.setdefault((id(op.operands[0]), op.attrs["axis"]), op.result)
        # ids of the values some op reads (None until the kernel's body is walked): a
        # structured result nobody reads needs no buffer.
        self.used: set[int] | None = None
        # id(structured result) -> the output (or output view) it is written into directly.
        self.destination: dict[int, Value] = {}
        # id(output view) -> (tensor, start): stores into the view are stores into the tensor.
        self.output_views: dict[int, tuple[Value, Value]] = {}
        self._written: set[int] | None = None  # tensors the kernel writes (computed when first asked)
        # Whether a value over tensors the kernel writes must be snapshotted where it is defined
        # (the walk installs the analysis of the block it is in: ``WriteWindows``).
        self.windows: "WriteWindows | None" = None
        self.position = 0  # the index, in the block being walked, of the op being expanded
        self.element_rules: dict[str, ElementRule] = {}

    def emit(self, name, operands, types=(), attrs=None, span=None, hint="") -> Op:
        op = Op(name, operands, list(types), attrs, None, span, [hint] * len(types) if hint else None)
        self.out.append(op)
        for result in op.results:
            self.defs[id(result)] = op
        return op

    def register(self, block: Block) -> None:
        """Record the defining ops of a copied region, so its tensor values can be expanded."""
        for op in block.walk():
            for result in op.results:
                self.defs[id(result)] = op
            if self.used is not None:
                self.used.update(id(v) for v in op.operands)

    # -- snapshots of values over written tensors ---------------------------------------------
    def written_tensors(self) -> set[int]:
        if self._written is None:
            self._written = {id(op.operands[e.operand]) for op in self.func.walk() for e in effects(op)
                             if e.kind in ("write", "atomic", "buffer_write", "reduce") and e.operand is not None}
        return self._written

    def reads_written(self, op: Op) -> bool:
        """Whether the tensor value ``op`` defines must be materialised where it stands: it reads
        a tensor that is written before its last (lazy) use. Without a block analysis: whether
        it reads any tensor the kernel writes."""
        if self.windows is not None:
            return self.windows.written_before_last_use(self.position, op)
        return any(id(v) in self.written_tensors() for v in op.operands if isinstance(v.type, TensorType))

    def snapshot(self, value: Value, span) -> Value:
        """Materialise ``value`` into a buffer now: a parallel copy of its elements."""
        extents = [self.extent(value, axis) for axis in range(value.type.rank)]
        buffer = self.buffer(value.type.dtype, extents, span)

        def body(points):
            element = self.element(value, list(points), span, proven=True)
            self.out.append(Op("store", [buffer] + list(points) + [element],
                               attrs={"inbounds": [True] * len(points)}))

        self.parallel(extents, body)
        return buffer

    # -- shapes and elements ------------------------------------------------------------------
    def extent(self, value: Value, axis: int) -> Value:
        if id(value) in self.params:
            known = self.entry_dims.get((id(value), axis))
            return known or self.emit("dim", [value], [INDEX], {"axis": axis}).result
        op = self.defs[id(value)]
        if op.name == "broadcast":
            return op.operands[1 + axis]
        if op.name == "indices":
            return self.emit("dom_len", [op.operands[0]], [INDEX]).result
        if op.name == "reshape":
            return op.operands[1 + axis]
        if op.name == "permute":
            return self.extent(op.operands[0], op.attrs["perm"][axis])
        if op.name == "join":
            if axis == op.result.type.rank - 1:
                return self.emit("const", [], [INDEX], {"value": 2}).result
            return self.extent(op.operands[0], axis)
        if op.name == "view":
            k = 0
            position = 1
            for source_axis, kind in enumerate(op.attrs["axes"]):
                if kind == "fix":
                    position += 1
                    continue
                if k == axis:
                    begin, end = op.operands[position], op.operands[position + 1]
                    return self.emit("sub", [end, begin], [INDEX]).result
                k += 1
                position += 2
        for operand in op.operands[1:] if op.name == "gather" else op.operands:  # a gather: its indices' shape
            if isinstance(operand.type, TensorType):
                return self.extent(operand, axis)
        raise AssertionError(f"no extent for {op.name}")

    def element(self, value: Value, indices: list[Value], span, proven: bool = False) -> Value:
        """The element of ``value`` at ``indices``. ``proven``: the indices range over the
        value's own extents, so the broadcast relation keeps every parameter load in bounds."""
        if not isinstance(value.type, TensorType):
            return value  # a scalar broadcast into a tensor
        if id(value) in self.params:
            attrs = {"inbounds": [True] * len(indices)} if proven else None
            return self.emit("load", [value] + list(indices), [value.type.dtype], attrs, span=span).result
        op = self.defs[id(value)]
        if op.name == "broadcast":
            source = op.operands[0]
            if not isinstance(source.type, TensorType):
                return source
            src_indices = []
            for k, result_axis in enumerate(op.attrs["map"]):
                src_indices.append(self._broadcast_index(source, k, op.operands[1 + result_axis],
                                                         indices[result_axis]))
            return self.element(source, src_indices, span, proven)
        if op.name == "join":
            zero = self.emit("const", [], [INDEX], {"value": 0}).result
            first = self.emit("cmp", [indices[-1], zero], [BOOL], {"pred": "eq"}).result
            a = self.element(op.operands[0], indices[:-1], span, proven)
            b = self.element(op.operands[1], indices[:-1], span, proven)
            return self.emit("select", [first, a, b], [a.type]).result
        if op.name in RELATIONS:  # view, permute, reshape (C4, S4): kir/relations.py
            source = op.operands[0]
            indices_there = source_indices(op, list(indices), lambda name, x, y: self.ix(name, x, y),
                                           lambda: self.c(0), lambda axis: self.extent(source, axis))
            return self.element(source, indices_there, span, proven)
        if op.name == "indices":  # source coordinates: begin + k * step (D6)
            domain = op.operands[0]
            begin = self.emit("dom_begin", [domain], [INDEX]).result
            step = self.emit("dom_step", [domain], [INDEX]).result
            scaled = self.emit("mul", [indices[0], step], [INDEX]).result
            return self.emit("add", [begin, scaled], [INDEX]).result
        if op.name in ELEMENTWISE:
            operands = [self.element(v, indices, span, proven) for v in op.operands]
            dtype = op.result.type.dtype
            return self.emit(op.name, operands, [dtype], dict(op.attrs), op.span).result
        if op.name in self.element_rules:  # gather, philox (M1, N1): memory_lowering.py
            return self.element_rules[op.name](op, value, indices, span, proven)
        raise NotImplementedError(f"cannot expand '{op.name}' element-wise")

    def check_element(self, value: Value, indices: list[Value], span) -> None:
        """Check an element access of a tensor value against the value's own extents (D5).

        Expanding the access maps the indices to the parameters it reads, and those loads
        are checked, but a relation can map an index outside its value into a parameter:
        ``x[0:2][5]`` reads ``x[5]``, ``I.join(a, b)[0, 7]`` reads ``b[0]``, a reshape or an
        extent-1 broadcast folds an index away, ``I.indices(d)[k]`` reads nothing."""
        op = self.defs.get(id(value))
        if op is None or op.name not in _CHECKED_RELATIONS:
            return
        zero = self.emit("const", [], [INDEX], {"value": 0}).result
        for axis, index in enumerate(indices):
            extent = self.extent(value, axis)
            low = self.emit("cmp", [index, zero], [BOOL], {"pred": "ge"}).result
            high = self.emit("cmp", [index, extent], [BOOL], {"pred": "lt"}).result
            ok = self.emit("and", [low, high], [BOOL]).result
            self.emit("assert_true", [ok, index, extent], span=span, attrs={
                "what": f"index %lld is out of range [0, %lld) on axis {axis} of a tensor value",
                "rule": "D5", "code": "bounds"})

    def _broadcast_index(self, source: Value, axis: int, result_extent: Value, index: Value) -> Value:
        static = source.type.shape[axis]
        if static == 1:
            return self.emit("const", [], [INDEX], {"value": 0}).result
        src_extent = self.extent(source, axis)
        if src_extent is result_extent:
            return index
        one = self.emit("const", [], [INDEX], {"value": 1}).result
        zero = self.emit("const", [], [INDEX], {"value": 0}).result
        is_one = self.emit("cmp", [src_extent, one], [BOOL], {"pred": "eq"}).result
        return self.emit("select", [is_one, zero, index], [INDEX]).result

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
        destination = self.destination.get(id(result))
        if destination is not None:
            for axis, extent in enumerate(extents):
                self.emit("assert_eq", [self.extent(destination, axis), extent], attrs={
                    "what": "result extent %lld but the operation makes %lld", "rule": "S1"})
            return destination
        if self.used is not None and id(result) not in self.used:
            return None
        return self.buffer(dtype, extents, span)

    def with_block(self, args: list[Value], build) -> Block:
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
        body = self.with_block([t], lambda: element(t))
        op = self.emit("fold", [count] + list(identity), [v.type for v in identity],
                       {"reassoc": regroupable(combine) and not ordered}, span=span)
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

        region = self.with_block(points, build)
        self.out.append(Op("parallel", domains, [], {"grain": grain} if grain else None, [region]))

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
        region = self.with_block([t] + flat_args, build)
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
        replace_uses(copy, binding)
        term = copy.ops.pop()
        self.out.extend(copy.ops)
        return [binding.get(id(v), v) for v in term.operands]

    def block_size(self, count: Value) -> tuple[Value, Value]:
        """(B, number of blocks): B = max(MIN_BLOCK, ceil(count / MAX_BLOCKS)), from the count only."""
        per = self.ix("floordiv", self.ix("add", count, self.c(MAX_BLOCKS - 1)), self.c(MAX_BLOCKS))
        size = self.ix("max", per, self.c(MIN_BLOCK))
        blocks = self.ix("floordiv", self.ix("add", count, self.ix("sub", size, self.c(1))), size)
        return size, blocks

    def blocked_fold(self, count: Value, identity, element, combine: Block, span, ordered=False) -> list[Value]:
        """The fold of ``element(t)``, t in [0, count), in blocks of ``block_size`` folded in
        parallel, then the block totals in order (T1). Inside an ordered loop (run once per
        iteration, where the blocks' buffer and parallel loop cost most), one block
        (``count <= MIN_BLOCK``) is folded directly, without them: ``identity`` combined with
        the one total is that total, so the value is the same. At the top of a kernel the
        blocked form stays whole (the GPU target launches its blocks as a grid phase)."""
        size, blocks = self.block_size(count)
        if self.ordered_depth == 0:
            return self._fold_blocks(count, size, blocks, identity, element, combine, span, ordered)
        single = self.emit("cmp", [blocks, self.c(1)], [BOOL], {"pred": "le"}).result
        then = self.with_block([], lambda: self.fold(count, identity, element, combine, span, ordered))
        other = self.with_block([], lambda: self._fold_blocks(count, size, blocks, identity, element, combine, span,
                                                                 ordered))
        op = Op("if", [single], [v.type for v in identity], None, [then, other], span)
        self.out.append(op)
        for result in op.results:
            self.defs[id(result)] = op
        return list(op.results)

    def _fold_blocks(self, count, size, blocks, identity, element, combine: Block, span, ordered) -> list[Value]:
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

    # -- small builders -----------------------------------------------------------------------
    def loop(self, extent: Value, body) -> None:
        """An ordered ``for`` over ``[0, extent)`` without carries; ``body(t)`` emits ops."""
        t = Value(INDEX, "t")
        region = self.with_block([t], lambda: (body(t), [])[1])
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
