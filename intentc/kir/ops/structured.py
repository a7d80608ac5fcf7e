"""Structured KIR ops: reductions, scans and folds with combine regions (T1, T2), region
folds and scans (R2, R3, R6, R7), contraction (T3) and histogram (T6).

The interpreter (``intentc/interp/structured.py``, ``core_ops.py``) defines what each computes; the
lowering of each is in ``intentc/lower/reduction_lowering.py``, ``region_lowering.py`` and ``contract_lowering.py``.
"""
from __future__ import annotations

from intentc.kir.contract_spec import SpecError, acc_allowed, parse_spec
from intentc.kir.core import Op
from intentc.kir.ops.definition import (BOOL_A, DICT_A, DOMAIN_T, INDEX_T, INT_A, STR_A, TENSOR, VALUE, Attr,
                                        OpDef, Operand, VerifyError, check_combine, declare, list_of, many, need,
                                        optional, yield_types)
from intentc.kir.types import DTYPES, INDEX, DType, TensorType


def _check_reduce(op: Op) -> None:
    """reduce(x0..xk-1, id0..idk-1) {axes, keepdims, ordered?} [combine]: folds the axes with a
    typed pure combine declared associative and commutative (T1); ``ordered`` keeps member order."""
    k = op.attrs["arity"]
    need(k >= 1 and len(op.operands) == 2 * k and len(op.results) == k, op, "k inputs, k identities, k results")
    inputs, ids = op.operands[:k], op.operands[k:]
    need(all(isinstance(v.type, TensorType) for v in inputs), op, "inputs are tensors")
    rank = inputs[0].type.rank
    need(all(v.type.rank == rank for v in inputs), op, "inputs share one shape")
    need([v.type for v in ids] == [v.type.dtype for v in inputs], op, "identities have the input dtypes")
    axes = op.attrs["axes"]
    need(axes == sorted(set(axes)) and all(0 <= a < rank for a in axes) and axes, op, "axes are distinct, sorted")
    check_combine(op, 0, [v.type for v in ids])


def _check_scan(op: Op) -> None:
    """scan(x0..xk-1, id0..idk-1[, init0..initk-1]) {axis, exclusive, reverse, has_init?} [combine]:
    prefixes in member order with a typed pure associative combine (T2)."""
    k = op.attrs["arity"]
    extra = k if op.attrs.get("has_init") else 0  # an initial running value (default: the identity)
    need(k >= 1 and len(op.operands) == 2 * k + extra and len(op.results) == k, op,
         "k inputs, k identities, [k initial values,] k results")
    inputs, ids = op.operands[:k], op.operands[k:2 * k]
    need(all(isinstance(v.type, TensorType) for v in inputs), op, "inputs are tensors")
    need([v.type for v in op.operands[2 * k:]] in ([], [v.type for v in ids]), op, "init has the identity types")
    need([r.type for r in op.results] == [v.type for v in inputs], op, "results have the input types")
    need(0 <= op.attrs["axis"] < inputs[0].type.rank, op, "axis in range")
    check_combine(op, 0, [v.type for v in ids])


def _check_fold(op: Op) -> None:
    """fold(n, id...) [element(t) -> items, combine]: acc = id; for t in [0, n): acc = combine(acc, item(t)).
    The lowered form of reduce; with {"reassoc": true} the grouping is free (T1)."""
    types = [v.type for v in op.operands[1:]]
    need([r.type for r in op.results] == types, op, "results have the identity types")
    element = op.regions[0]
    need([a.type for a in element.args] == [INDEX], op, "element region takes the ordinal")
    need(yield_types(op, element) == types, op, "element region yields one item per accumulator")
    check_combine(op, 1, types)


def _check_region_fold(op: Op) -> None:
    """region_fold(axis, comps..., ids...) {ncomp} [summarize(slices...), combine]: the summary of
    the whole axis under any order-preserving segmentation (R2, R3)."""
    n = op.attrs["ncomp"]
    comps, ids = op.operands[1:1 + n], op.operands[1 + n:]
    need(n >= 1 and all(isinstance(c.type, TensorType) for c in comps), op, "components are tensors")
    need([r.type for r in op.results] == [v.type for v in ids], op, "results have the summary types")
    need(len(op.regions[0].args) == n, op, "summarize takes one slice per component")
    need(yield_types(op, op.regions[0]) == [v.type for v in ids], op, "summarize yields a summary")
    check_combine(op, 1, [v.type for v in ids])


def _check_region_scan(op: Op) -> None:
    """region_scan(axis, comps..., ids..., init...) {ncomp, nsummary}
    [summarize, combine, apply(summary..., state...), emit(slices..., state...)] -> outputs..., final state (R6, R7)."""
    n, m = op.attrs["ncomp"], op.attrs["nsummary"]
    ids = op.operands[1 + n:1 + n + m]
    init = op.operands[1 + n + m:]
    check_combine(op, 1, [v.type for v in ids])
    need(yield_types(op, op.regions[2]) == [v.type for v in init], op, "apply yields a state")
    outputs = op.results[:len(op.results) - len(init)]
    need([r.type for r in op.results[len(outputs):]] == [v.type for v in init], op, "final state results")
    need(all(isinstance(r.type, TensorType) for r in outputs), op, "outputs are tensors")


def _check_contract(op: Op) -> None:
    """contract(a, b) {spec, acc}: result[out] = the sum over the reduction axes, in k order,
    of acc(a[...]) * acc(b[...]), accumulated in ``acc`` (T3; intentc/kir/contract_spec.py)."""
    try:
        spec = parse_spec(op.attrs["spec"])
    except SpecError as exc:
        raise VerifyError(f"'contract': {exc.message}") from None
    a, b = (v.type for v in op.operands)
    need(a.rank == len(spec.a) and b.rank == len(spec.b), op, "the spec names one letter per operand axis")
    need(a.dtype == b.dtype, op, f"operands share one dtype, got {a.dtype} and {b.dtype}")
    acc = DTYPES.get(op.attrs["acc"])
    need(acc is not None and acc_allowed(a.dtype, acc), op, f"acc {op.attrs['acc']} for {a.dtype} operands")
    static: dict[str, int] = {}
    for letters, shape in ((spec.a, a.shape), (spec.b, b.shape)):
        for letter, extent in zip(letters, shape):
            if extent is not None:
                need(static.setdefault(letter, extent) == extent, op, f"paired axis '{letter}' has two extents")
    res = op.result.type
    if not spec.out:
        need(res == acc, op, "a contraction to no axes yields one acc scalar")
        return
    need(isinstance(res, TensorType) and res.dtype == acc and res.rank == len(spec.out), op,
         "the result is an acc tensor with the spec's result axes")
    need(all(e is None or static.get(c, e) == e for c, e in zip(spec.out, res.shape)), op,
         "result extents follow the operands")


def _check_histogram(op: Op) -> None:
    """histogram(values, n, [lo, hi], [weights]) {range, weighted}: counts (i64) or summed
    weights per bin of ``[0, n)`` (T6); see intentc/sema/contract.py for the binning."""
    ranged, weighted = op.attrs["range"], op.attrs["weighted"]
    need(len(op.operands) == 2 + 2 * ranged + weighted, op, "operands are values, n, [lo, hi], [weights]")
    values = op.operands[0].type
    need(values.dtype.is_float if ranged else values.dtype.is_int, op,
         "float values are binned by a range, integer values are bin indices")
    if ranged:
        lo, hi = (v.type for v in op.operands[2:4])
        binning = values.dtype if values.dtype.bits >= 32 else DType("f32", "float", 32)
        need(lo == hi == binning, op, f"lo and hi are {binning} scalars (the binning dtype)")
    res = op.result.type
    want = op.operands[-1].type.dtype if weighted else INDEX
    need(res.rank == 1 and res.dtype.bits == want.bits and res.dtype.is_int == want.is_int, op,
         "the result is one count (or weight sum) per bin")
    if weighted:
        need(isinstance(op.operands[-1].type, TensorType) and op.operands[-1].type.shape == values.shape, op,
             "weights have the values' shape")


# check_laws: the laws the region helpers are checked against at run time (--sanitize=laws, R2, R6)
_REGION_ATTRS = {"ncomp": Attr(INT_A), "check_laws": optional(DICT_A)}

OPS = declare(
    OpDef("reduce", "structured", operands=(many("inputs_and_identities"),), results=(many("results"),),
          attrs={"arity": Attr(INT_A), "axes": Attr(list_of(INT_A)), "keepdims": Attr(BOOL_A),
                 "ordered": optional(BOOL_A)},
          regions=1, check=_check_reduce),
    OpDef("scan", "structured", operands=(many("inputs_identities_init"),), results=(many("results"),),
          attrs={"arity": Attr(INT_A), "axis": Attr(INT_A), "exclusive": Attr(BOOL_A), "reverse": Attr(BOOL_A),
                 "has_init": optional(BOOL_A)},
          regions=1, check=_check_scan),
    OpDef("fold", "structured", operands=(Operand("count", INDEX_T), many("identities")), results=(many("results"),),
          attrs={"reassoc": Attr(BOOL_A)}, regions=2, check=_check_fold),
    OpDef("region_fold", "structured", operands=(Operand("axis", DOMAIN_T), many("components_identities")),
          results=(many("summaries"),), attrs=_REGION_ATTRS, regions=2, check=_check_region_fold),
    OpDef("region_scan", "structured", operands=(Operand("axis", DOMAIN_T), many("components_identities_init")),
          results=(many("outputs_and_state"),), attrs={**_REGION_ATTRS, "nsummary": Attr(INT_A)}, regions=4,
          check=_check_region_scan),
    OpDef("contract", "structured", operands=(Operand("a", TENSOR), Operand("b", TENSOR)),
          results=(Operand("result", VALUE),), attrs={"spec": Attr(STR_A), "acc": Attr(STR_A)},
          check=_check_contract),
    OpDef("histogram", "structured", operands=(Operand("values", TENSOR), Operand("n", INDEX_T),
                                               many("range_and_weights")),
          results=(Operand("result", TENSOR),), attrs={"range": Attr(BOOL_A), "weighted": Attr(BOOL_A)},
          check=_check_histogram),
)
