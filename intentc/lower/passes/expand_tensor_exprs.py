"""Fuse whole-tensor expressions into element computations (P6) and turn returned
tensors into caller-provided outputs.

Before: kernels may hold tensor-valued pure ops (pointwise arithmetic, comparisons,
casts, selects, math, ``broadcast``), ``load``/``dim`` of such values, and
``return(%t...)`` of tensors.
After: every tensor value is a parameter. A ``load`` of an expression is replaced by
the scalar ops that compute that one element (broadcast axes read index 0 where the
source extent is 1, S2); ``dim`` of an expression is its extent; each returned tensor
becomes a trailing ``result`` parameter whose extents are checked on entry against
the declared ones, and is written by one ``parallel`` loop nest over its axes, so the
whole expression is one fused loop with no temporaries. ``return`` has no operands.
"""
from __future__ import annotations

from intentc.kir.extents import build as build_extent
from intentc.lower.structured_expansion import StructuredExpansion
from intentc.lower.contract_lowering import ContractExpansion
from intentc.lower.memory_lowering import MATERIALIZED as MEMORY_OPS, MemoryExpansion
from intentc.lower.scaled_lowering import ScaledExpansion
from intentc.lower.sparse_lowering import SparseExpansion
from intentc.kir.core import Block, Function, Module, Op, Param, Value
from intentc.kir.types import BOOL, DOMAIN, INDEX, TensorType

_ELEMENTWISE = {"add", "sub", "mul", "div", "floordiv", "mod", "pow", "min", "max", "and", "or", "xor", "shl",
                "shr", "neg", "not", "abs", "exp", "log", "tanh", "sqrt", "cmp", "select", "cast"}
# Tensor values whose element accesses are checked against their own extents before they
# are expanded (an index can leave them without leaving the parameters they read).
_CHECKED_RELATIONS = _ELEMENTWISE | {"broadcast", "permute", "view", "reshape", "join", "indices"}


def run(module: Module) -> Module:
    for func in module.kernels:
        _Expander(func).run()
    return module


class _Expander(StructuredExpansion, ContractExpansion, MemoryExpansion, ScaledExpansion, SparseExpansion):
    def __init__(self, func: Function):
        self.func = func
        self.params = {id(v) for v in func.args if isinstance(v.type, TensorType)}
        self.defs: dict[int, Op] = {}
        for op in func.walk():
            for result in op.results:
                self.defs[id(result)] = op
        self.out: list[Op] = []
        self.depth = 0  # how many parallel loops enclose the op being expanded
        # The extents sema already read at entry, so that equal extents stay the same value.
        self.entry_dims: dict[tuple[int, int], Value] = {}
        for op in func.body.ops:
            if op.name == "dim" and id(op.operands[0]) in self.params:
                self.entry_dims.setdefault((id(op.operands[0]), op.attrs["axis"]), op.result)

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
            if hasattr(self, "used"):
                self.used.update(id(v) for v in op.operands)

    def run(self) -> None:
        func = self.func
        body = func.body
        ret = body.ops[-1]
        results = list(ret.operands)
        new_args, prologue = [], []
        if results:
            for k, (value, extents) in enumerate(zip(results, func.result_extents)):
                name = "out" if len(results) == 1 else f"out{k}"
                arg = Value(TensorType(value.type.dtype, func.result_types[k].shape), name)
                new_args.append(arg)
                func.params.append(Param(name, True, tuple(extents), result=True))
        self.out = prologue
        named = self._named_extents()
        for arg, param in zip(new_args, func.params[len(func.params) - len(new_args):]):
            for axis, extent in enumerate(param.extents):
                dim = self.emit("dim", [arg], [INDEX], {"axis": axis}).result
                if isinstance(extent, int):
                    want = self.emit("const", [], [INDEX], {"value": extent}).result
                else:  # re-read the named extents here, before the body defines them (S1)
                    def lookup(name):
                        source = named[name]
                        return self.emit("dim", source.operands, [INDEX], dict(source.attrs), hint=name).result

                    want = build_extent(
                        extent, lookup, lambda c: self.emit("const", [], [INDEX], {"value": c}).result,
                        lambda op, a, b: self.emit(op, [a, b], [INDEX]).result)
                self.emit("assert_eq", [dim, want], attrs={
                    "what": f"extent {extent}: {param.name}.shape[{axis}] = %lld but the kernel's result "
                            f"needs %lld", "rule": "S1"})
        body.args.extend(new_args)
        self.params.update(id(a) for a in new_args)
        # A returned tensor made by a structured op is written straight into its output.
        self.destination = {}
        for value, arg in zip(results, new_args):
            op = self.defs.get(id(value))
            if op is not None and op.name in ("reduce", "scan", "region_scan", "contract", "histogram",
                                              "scaled_contract", "sparse_contract") \
                    and results.count(value) == 1 \
                    and value.type.rank == arg.type.rank:
                self.destination[id(value)] = arg
        self.used = {id(v) for op in func.walk() for v in op.operands}
        self.func.result_types = []
        body.ops = prologue + self._block(body, self._ret_writer(new_args))

    def _named_extents(self) -> dict[str, Op]:
        named = {}
        for op in self.func.body.ops:
            if op.name == "dim" and op.results[0].hint and id(op.operands[0]) in self.params:
                named.setdefault(op.results[0].hint, op)
        return named

    def _ret_writer(self, outs):
        def write(ret: Op) -> None:
            for value, out in zip(ret.operands, outs):
                self._write_whole(out, value, ret.span)
            self.out.append(Op("return", [], span=ret.span))
        return write

    # -- walking --------------------------------------------------------------------------
    def _block(self, block: Block, on_return=None) -> list[Op]:
        saved = self.out
        self.out = []
        replace: dict[int, Value] = {}
        for op in block.ops:
            op.operands = [replace.get(id(v), v) for v in op.operands]
            if op.name == "return" and on_return is not None:
                on_return(op)
                continue
            if op.name == "reduce":
                self.materialize_reduce(op, replace)
                continue
            if op.name == "scan":
                self.materialize_scan(op, replace)
                continue
            if op.name in ("contract", "histogram"):  # T3, T6: contract_lowering.py
                getattr(self, f"materialize_{op.name}")(op, replace)
                continue
            if op.name in ("scaled_contract", "sparse_contract"):  # T4, T5: scaled_lowering.py, sparse_lowering.py
                getattr(self, f"materialize_{op.name}")(op, replace)
                continue
            if op.name == "region_fold":
                self.materialize_region_fold(op, replace)
                continue
            if op.name in MEMORY_OPS:  # buffers, gathers, scatters, philox: memory_lowering.py
                self.materialize_memory(op, replace)
                continue
            if op.name == "region_scan":
                self.materialize_region_scan(op, replace)
                continue
            if op.results and any(isinstance(r.type, TensorType) for r in op.results) and op.name != "call":
                if self.reads_written(op):
                    # A value over a tensor the kernel writes is a snapshot taken here (program
                    # order), so later writes cannot leak into it through fusion.
                    replace[id(op.result)] = self.snapshot(op.result, op.span)
                continue  # pure tensor-valued op: consumed element by element below
            if op.name == "load" and id(op.operands[0]) not in self.params:
                self.check_element(op.operands[0], op.operands[1:], op.span)
                replace[id(op.result)] = self.element(op.operands[0], op.operands[1:], op.span)
                continue
            if op.name == "dim" and id(op.operands[0]) not in self.params:
                replace[id(op.result)] = self.extent(op.operands[0], op.attrs["axis"])
                continue
            inside = op.name == "parallel"
            self.depth += inside
            try:
                for region in op.regions:
                    _replace_in(region, replace)
                    region.ops = self._block(region)
            finally:
                self.depth -= inside
            self.out.append(op)
        result, self.out = self.out, saved
        return result

    # -- snapshots of values over written tensors ---------------------------------------------
    def written_tensors(self) -> set[int]:
        if not hasattr(self, "_written"):
            from intentc.kir.ops import effects

            self._written = {id(op.operands[e.operand]) for op in self.func.walk() for e in effects(op)
                             if e.kind in ("write", "atomic", "buffer_write", "reduce") and e.operand is not None}
        return self._written

    def reads_written(self, op: Op) -> bool:
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
        if op.name == "permute":
            source_indices = [None] * len(indices)
            for k, p in enumerate(op.attrs["perm"]):
                source_indices[p] = indices[k]
            return self.element(op.operands[0], source_indices, span, proven)
        if op.name == "join":
            zero = self.emit("const", [], [INDEX], {"value": 0}).result
            first = self.emit("cmp", [indices[-1], zero], [BOOL], {"pred": "eq"}).result
            a = self.element(op.operands[0], indices[:-1], span, proven)
            b = self.element(op.operands[1], indices[:-1], span, proven)
            return self.emit("select", [first, a, b], [a.type]).result
        if op.name == "view":
            source_indices, position, k = [], 1, 0
            for kind in op.attrs["axes"]:
                if kind == "fix":
                    source_indices.append(op.operands[position])
                    position += 1
                else:
                    begin = op.operands[position]
                    source_indices.append(self.emit("add", [begin, indices[k]], [INDEX]).result)
                    position += 2
                    k += 1
            return self.element(op.operands[0], source_indices, span, proven)
        if op.name == "reshape":  # through the row-major linear coordinate (C4, S4)
            source = op.operands[0]
            linear = None
            for k, index in enumerate(indices):
                if linear is None:
                    linear = index
                else:
                    scaled = self.emit("mul", [linear, op.operands[1 + k]], [INDEX]).result
                    linear = self.emit("add", [scaled, index], [INDEX]).result
            if linear is None:
                linear = self.emit("const", [], [INDEX], {"value": 0}).result
            rank = source.type.rank
            source_indices = [None] * rank
            for axis in reversed(range(rank)):
                extent = self.extent(source, axis)
                if axis == 0:
                    source_indices[0] = linear
                    break
                source_indices[axis] = self.emit("mod", [linear, extent], [INDEX]).result
                linear = self.emit("floordiv", [linear, extent], [INDEX]).result
            return self.element(source, source_indices, span, proven)
        if op.name == "indices":  # source coordinates: begin + k * step (D6)
            domain = op.operands[0]
            begin = self.emit("dom_begin", [domain], [INDEX]).result
            step = self.emit("dom_step", [domain], [INDEX]).result
            scaled = self.emit("mul", [indices[0], step], [INDEX]).result
            return self.emit("add", [begin, scaled], [INDEX]).result
        if op.name in _ELEMENTWISE:
            operands = [self.element(v, indices, span, proven) for v in op.operands]
            dtype = op.result.type.dtype
            return self.emit(op.name, operands, [dtype], dict(op.attrs), op.span).result
        if op.name in ("gather", "philox"):  # M1, N1: memory_lowering.py
            return self.memory_element(op, value, indices, span, proven)
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

    def _write_whole(self, out: Value, value: Value, span) -> None:
        if value is out:  # already materialised in place
            return
        rank = out.type.rank
        domains = []
        for axis in range(rank):
            zero = self.emit("const", [], [INDEX], {"value": 0}).result
            one = self.emit("const", [], [INDEX], {"value": 1}).result
            extent = self.emit("dim", [out], [INDEX], {"axis": axis}).result
            domains.append(self.emit("domain", [zero, extent, one], [DOMAIN], {"axis_of": axis}).result)
        indices = [Value(INDEX, f"i{axis}") for axis in range(rank)]
        saved = self.out
        self.out = []
        element = self.element(value, indices, span, proven=True)
        self.out.append(Op("store", [out] + indices + [element], span=span, attrs={"inbounds": [True] * rank}))
        self.out.append(Op("yield", []))
        body = Block(indices, self.out)
        self.out = saved
        if rank == 0:
            self.out += body.ops[:-1]
            return
        self.out.append(Op("parallel", domains, [], None, [body], span))


def _replace_in(block: Block, replace: dict[int, Value]) -> None:
    for op in block.ops:
        op.operands = [replace.get(id(v), v) for v in op.operands]
        for region in op.regions:
            _replace_in(region, replace)
