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
Structured ops become loops over buffers (or straight over the outputs they are returned
as), each by its family, in program order: ``reduce``/``scan`` (T1, T2:
``reduction_lowering.py``), ``contract``/``histogram`` (T3, T6: ``contract_lowering.py``),
``scaled_contract`` (T4: ``scaled_lowering.py``), ``sparse_contract`` (T5:
``sparse_lowering.py``), ``region_fold``/``region_scan`` (R2-R9: ``region_lowering.py``),
buffers, gathers, scatters and Philox (M1-M6, N1: ``memory_lowering.py``). All share the
kernel's ``KirBuilder`` (``kir_builder.py``), which computes elements and extents.

Guarantees: no tensor-valued pure op is left (each was consumed element by element, or
snapshotted into a buffer where it stands when a tensor it reads is written before its last
use — ``kir_builder.WriteWindows`` — so that reading a view or slice copies nothing unless a
write in between requires it, P6);
a load of an expression is checked against the expression's own extents (D5); every
result is computed with the grouping its family defines, independent of thread count.

Why one pass: the families recurse into each other (a region's helpers hold reductions
and contractions; a contraction reads a reduction's buffer), so each structured op is
materialised where it stands, in one walk, with the values before it already in memory.
"""
from __future__ import annotations

from intentc.kir.core import Block, Function, Module, Op, Param, Value
from intentc.kir.extents import build as build_extent
from intentc.kir.types import DOMAIN, INDEX, TensorType
from intentc.lower.contract_lowering import ContractExpansion
from intentc.lower.kir_builder import KirBuilder, WriteWindows
from intentc.lower.memory_lowering import MATERIALIZED as MEMORY_OPS, MemoryExpansion
from intentc.lower.reduction_lowering import ReductionExpansion
from intentc.lower.region_lowering import RegionExpansion
from intentc.lower.scaled_lowering import ScaledExpansion
from intentc.lower.sparse_lowering import SparseExpansion

_STRUCTURED_RESULTS = ("reduce", "scan", "region_scan", "contract", "histogram", "scaled_contract",
                       "sparse_contract")  # ops whose returned tensor is written straight into its output


def run(module: Module) -> Module:
    for func in module.kernels:
        _Expander(func).run()
    return module


class _Expander:
    """The walk over one kernel: each op is kept, consumed element by element, or handed to
    the family that materialises it (``materialize``)."""

    def __init__(self, func: Function):
        self.func = func
        self.b = KirBuilder(func)
        reductions = ReductionExpansion(self.b)
        contracts = ContractExpansion(self.b)
        scaled = ScaledExpansion(self.b)
        sparse = SparseExpansion(self.b)
        regions = RegionExpansion(self.b, self._block)
        memory = MemoryExpansion(self.b)
        self.b.element_rules.update(gather=memory.memory_element, philox=memory.memory_element)
        # op name -> materialise(op, replace): emits the op's loops, maps its results in ``replace``.
        self.materialize = {
            "reduce": reductions.materialize_reduce,
            "scan": reductions.materialize_scan,
            "contract": contracts.materialize_contract,  # T3, T6
            "histogram": contracts.materialize_histogram,
            "scaled_contract": scaled.materialize_scaled_contract,  # T4
            "sparse_contract": sparse.materialize_sparse_contract,  # T5
            "region_fold": regions.materialize_region_fold,  # R2-R9
            "region_scan": regions.materialize_region_scan,
        }
        for name in MEMORY_OPS:  # buffers, gathers, scatters, philox
            self.materialize[name] = memory.materialize_memory

    def run(self) -> None:
        func, b = self.func, self.b
        body = func.body
        ret = body.ops[-1]
        results = list(ret.operands)
        new_args, prologue = [], []
        if results:
            for k, (value, extents) in enumerate(zip(results, func.result_extents)):
                name = "out" if len(results) == 1 else f"out{k}"
                declared = func.result_types[k]  # a scalar result is written as a rank-0 one (docs/abi.md)
                arg = Value(declared if isinstance(declared, TensorType) else TensorType(declared, ()), name)
                new_args.append(arg)
                func.params.append(Param(name, True, tuple(extents), result=True))
        b.out = prologue
        named = self._named_extents()
        scalars = {p.name: a for p, a in zip(func.params, body.args) if not isinstance(a.type, TensorType)}
        for arg, param in zip(new_args, func.params[len(func.params) - len(new_args):]):
            for axis, extent in enumerate(param.extents):
                dim = b.emit("dim", [arg], [INDEX], {"axis": axis}).result
                if isinstance(extent, int):
                    want = b.emit("const", [], [INDEX], {"value": extent}).result
                else:  # re-read the named extents here, before the body defines them (S1)
                    def lookup(name):
                        if name not in named:  # an integer scalar parameter (S1)
                            scalar = scalars[name]
                            return scalar if scalar.type == INDEX else b.emit("cast", [scalar], [INDEX]).result
                        source = named[name]
                        return b.emit("dim", source.operands, [INDEX], dict(source.attrs), hint=name).result

                    want = build_extent(
                        extent, lookup, lambda c: b.emit("const", [], [INDEX], {"value": c}).result,
                        lambda op, x, y: b.emit(op, [x, y], [INDEX]).result)
                b.emit("assert_eq", [dim, want], attrs={
                    "what": f"extent {extent}: {param.name}.shape[{axis}] = %lld but the kernel's result "
                            f"needs %lld", "rule": "S1"})
        body.args.extend(new_args)
        b.params.update(id(a) for a in new_args)
        # A returned tensor made by a structured op is written straight into its output.
        for value, arg in zip(results, new_args):
            op = b.defs.get(id(value))
            if op is not None and op.name in _STRUCTURED_RESULTS and results.count(value) == 1 and arg.type.rank \
                    and value.type.rank == arg.type.rank:
                b.destination[id(value)] = arg
        b.used = {id(v) for op in func.walk() for v in op.operands}
        func.result_types = []
        body.ops = prologue + self._block(body, self._ret_writer(new_args))

    def _named_extents(self) -> dict[str, Op]:
        named = {}
        for op in self.func.body.ops:
            if op.name == "dim" and op.results[0].hint and id(op.operands[0]) in self.b.params:
                named.setdefault(op.results[0].hint, op)
        return named

    def _ret_writer(self, outs):
        def write(ret: Op) -> None:
            for value, out in zip(ret.operands, outs):
                self._write_whole(out, value, ret.span)
            self.b.out.append(Op("return", [], span=ret.span))
        return write

    # -- walking --------------------------------------------------------------------------
    def _block(self, block: Block, on_return=None) -> list[Op]:
        b = self.b
        saved, saved_windows, saved_position = b.out, b.windows, b.position
        b.out = []
        windows = WriteWindows(block.ops, _lazy)
        replace: dict[int, Value] = {}
        for position, op in enumerate(block.ops):
            b.windows, b.position = windows, position  # (a nested walk installs its own)
            op.operands = [replace.get(id(v), v) for v in op.operands]
            if op.name == "return" and on_return is not None:
                on_return(op)
                continue
            if op.name in self.materialize:
                self.materialize[op.name](op, replace)
                continue
            if op.results and any(isinstance(r.type, TensorType) for r in op.results) and op.name != "call":
                if b.reads_written(op):
                    # A value over a tensor written before its last use is a snapshot taken
                    # here (program order), so those writes cannot leak into it through fusion.
                    replace[id(op.result)] = b.snapshot(op.result, op.span)
                continue  # pure tensor-valued op: consumed element by element below
            if op.name == "load" and id(op.operands[0]) not in b.params:
                b.check_element(op.operands[0], op.operands[1:], op.span)
                replace[id(op.result)] = b.element(op.operands[0], op.operands[1:], op.span)
                continue
            if op.name == "dim" and id(op.operands[0]) not in b.params:
                replace[id(op.result)] = b.extent(op.operands[0], op.attrs["axis"])
                continue
            inside = op.name == "parallel"
            ordered = op.name in ("for", "while")
            b.depth += inside
            b.ordered_depth += ordered
            try:
                for region in op.regions:
                    _replace_in(region, replace)
                    region.ops = self._block(region)
            finally:
                b.depth -= inside
                b.ordered_depth -= ordered
            b.out.append(op)
        result = b.out
        b.out, b.windows, b.position = saved, saved_windows, saved_position
        return result

    def _write_whole(self, out: Value, value: Value, span) -> None:
        if value is out:  # already materialised in place
            return
        b = self.b
        rank = out.type.rank
        domains = []
        for axis in range(rank):
            zero = b.emit("const", [], [INDEX], {"value": 0}).result
            one = b.emit("const", [], [INDEX], {"value": 1}).result
            extent = b.emit("dim", [out], [INDEX], {"axis": axis}).result
            domains.append(b.emit("domain", [zero, extent, one], [DOMAIN], {"axis_of": axis}).result)
        indices = [Value(INDEX, f"i{axis}") for axis in range(rank)]
        saved = b.out
        b.out = []
        element = b.element(value, indices, span, proven=True)
        b.out.append(Op("store", [out] + indices + [element], span=span, attrs={"inbounds": [True] * rank}))
        b.out.append(Op("yield", []))
        region = Block(indices, b.out)
        b.out = saved
        if rank == 0:
            b.out += region.ops[:-1]
            return
        b.out.append(Op("parallel", domains, [], None, [region], span))


def _lazy(op: Op) -> bool:
    """Whether an op's tensor value may be computed where it is read (so its operands are read
    there too): any op with a tensor result, conservatively (a structured op reads its operands
    where it stands, so treating it as lazy only widens the windows)."""
    return any(isinstance(r.type, TensorType) for r in op.results)


def _replace_in(block: Block, replace: dict[int, Value]) -> None:
    for op in block.ops:
        op.operands = [replace.get(id(v), v) for v in op.operands]
        for region in op.regions:
            _replace_in(region, replace)
