"""Contractions (T3) and histograms (T6): the surface forms and the KIR ops they build.

``I.contract("bmk,bkn->bmn", a, b, acc=f32)`` builds one ``contract`` op that keeps the
specification (batch, reduction and free axes), the two operands and the accumulator
dtype; paired extents are checked equal (at compile time when static, else at run time).

``I.histogram(values, bins=n, range=(lo, hi), weights=None)`` and the integer-bin form
``I.histogram(indices, bins=n)`` build one ``histogram`` op that keeps the binning: the
bin of a float ``v`` is ``min(floor((v - lo) * s), n - 1)`` with ``s = n / (hi - lo)``
for ``lo <= v <= hi`` (``hi`` is in the last bin, as in NumPy), anything else (NaN
included) is not counted; an integer ``v`` counts in bin ``v`` when ``0 <= v < n``.
"""
from __future__ import annotations

import math

import numpy as np

from intentc.diagnostics import error
from intentc.kir.contract_spec import SpecError, acc_allowed, default_acc, parse_spec
from intentc.kir.types import BOOL, DTYPES, INDEX, DType, TensorType
from intentc.parse import ast
from intentc.sema.annotations import dtype_of
from intentc.sema.arguments import keywords, tensor_arg
from intentc.sema.shapes import broadcast_extents, broadcast_to, static_shape
from intentc.sema.values import Literal, TupleValue, literal_as

# Bin numbers are 32-bit in the compiled code, and a float bin count is exact in f32.
MAX_BINS = {True: 1 << 24, False: (1 << 31) - 1}  # by the range form
F32 = DTYPES["f32"]
_NP = {32: np.float32, 64: np.float64}


def _contract(builder, name: str, node: ast.Call):
    usage = "I.contract(\"ij,jk->ik\", a, b, acc=dtype)"
    kwargs = keywords(node, ("acc",), "contract")
    if len(node.args) != 3:
        raise error(f"I.contract takes a specification and two tensors, got {len(node.args)} arguments",
                    node.span, rule="T3", hint=usage)
    spec_node = node.args[0]
    if not isinstance(spec_node, ast.Constant) or not isinstance(spec_node.value, str):
        raise error("the specification of I.contract must be a string literal", spec_node.span, rule="T3",
                    hint=usage)
    try:
        spec = parse_spec(spec_node.value)
    except SpecError as exc:
        raise error(exc.message, spec_node.span, rule="T3", hint=exc.hint) from None
    a = tensor_arg(builder, node.args[1], "the first operand of I.contract", "T3")
    b = tensor_arg(builder, node.args[2], "the second operand of I.contract", "T3")
    for letters, value, arg, which in ((spec.a, a, node.args[1], "first"), (spec.b, b, node.args[2], "second")):
        if len(letters) != value.type.rank:
            raise error(f"the {which} operand has rank {value.type.rank} but \"{spec_node.value}\" names "
                        f"{len(letters)} ax{'is' if len(letters) == 1 else 'es'} ('{letters}') for it", arg.span,
                        rule="T3")
    dtype = a.type.dtype
    if b.type.dtype != dtype:
        raise error(f"the operands of I.contract have different dtypes: {dtype} and {b.type.dtype}", node.span,
                    rule="T3", hint="cast one of them with I.cast; the accumulator is chosen with acc=")
    if dtype.is_bool:
        raise error("I.contract multiplies and adds numbers; bool operands have no multiply-add", node.span,
                    rule="T3", hint="I.cast the operands to an integer dtype")
    if "acc" in kwargs:
        acc = dtype_of(kwargs["acc"])
        if not acc_allowed(dtype, acc):
            raise error(f"acc={acc} cannot accumulate products of {dtype}", kwargs["acc"].span, rule="T3",
                        hint="floats accumulate in a float at least as wide (f16/bf16 in f32), integers in an "
                             "integer at least as wide (e.g. i8 in i32)")
    else:
        acc = default_acc(dtype)
    shape_a, shape_b = builder.shape_of(a), builder.shape_of(b)
    extent = {}
    for letter, e in zip(spec.a, shape_a):
        extent[letter] = e
    for axis, (letter, e) in enumerate(zip(spec.b, shape_b)):
        if letter not in extent:
            extent[letter] = e
            continue
        mine = extent[letter]
        if isinstance(mine, int) and isinstance(e, int):
            if mine != e:
                raise error(f"axis '{letter}' of \"{spec_node.value}\" has extent {mine} in the first operand but "
                            f"{e} in the second", node.span, rule="T3",
                            hint="paired axes (batch and reduction) must have equal extents")
            continue
        if mine is e:
            continue
        first = builder.index_value(mine, node.span)
        second = builder.index_value(e, node.span)
        builder.emit("assert_eq", [first, second], span=node.span, attrs={
            "what": f"I.contract(\"{spec}\"): axis '{letter}' has extent %lld in the first operand but %lld in "
                    f"the second; paired axes must be equal (T3)", "rule": "T3"})
    out_shape = [extent[c] for c in spec.out]
    static = static_shape(out_shape)
    result_type = TensorType(acc, static) if spec.out else acc
    op = builder.emit("contract", [a, b], [result_type], {"spec": str(spec), "acc": acc.name}, span=node.span)
    if spec.out:
        builder.shapes[id(op.result)] = out_shape
    return op.result


# ---- histogram (T6) -------------------------------------------------------------------------------
def _histogram(builder, name: str, node: ast.Call):
    usage = "I.histogram(values, bins=n, range=(lo, hi), weights=w) or I.histogram(indices, bins=n)"
    kwargs = keywords(node, ("bins", "range", "weights"), "histogram")
    if len(node.args) != 1 or "bins" not in kwargs:
        raise error("I.histogram takes one tensor of values and bins=n", node.span, rule="T6", hint=usage)
    values = tensor_arg(builder, node.args[0], "the values of I.histogram", "T6")
    dtype = values.type.dtype
    ranged = "range" in kwargs
    if dtype.is_bool:
        raise error("bool values cannot be binned", node.args[0].span, rule="T6",
                    hint="I.cast them to an integer dtype to count False (bin 0) and True (bin 1)")
    if ranged and not dtype.is_float:
        raise error(f"range= bins float values, but the values are {dtype}", node.args[0].span, rule="T6",
                    hint="integer values are bin indices: I.histogram(indices, bins=n); or I.cast the values "
                         "to a float dtype")
    if not ranged and not dtype.is_int:
        raise error(f"I.histogram of {dtype} values needs range=(lo, hi)", node.span, rule="T6",
                    hint="without range= the values are integer bin indices in [0, bins)")
    # bins: a literal or an integer scalar
    bins_node = kwargs["bins"]
    least, most = (1, MAX_BINS[True]) if ranged else (0, MAX_BINS[False])
    bins = builder.expr(bins_node)
    if isinstance(bins, Literal):
        if not isinstance(bins.value, int) or isinstance(bins.value, bool) or not least <= bins.value <= most:
            raise error(f"bins must be an integer in [{least}, {most}], got {bins.value!r}", bins_node.span,
                        rule="T6")
        count: int | object = bins.value
        n = builder.const(bins.value, INDEX, bins_node.span)
    else:
        n = builder.as_index(bins, bins_node.span)
        count = n
        low = builder.emit("cmp", [n, builder.const(least, INDEX, bins_node.span)], [BOOL], {"pred": "ge"},
                           span=bins_node.span).result
        high = builder.emit("cmp", [n, builder.const(most, INDEX, bins_node.span)], [BOOL], {"pred": "le"},
                            span=bins_node.span).result
        ok = builder.emit("and", [low, high], [BOOL], span=bins_node.span).result
        builder.emit("assert_true", [ok, n], span=bins_node.span, attrs={
            "what": f"I.histogram needs bins in [{least}, {most}], got %lld (T6)", "rule": "T6",
            "code": "domain"})
    operands = [values, n]
    if ranged:
        operands += _range(builder, kwargs["range"], dtype)
    weighted = "weights" in kwargs
    if weighted:
        weights = tensor_arg(builder, kwargs["weights"], "weights=", "T6")
        if weights.type.dtype.is_bool:
            raise error("weights must be numbers, not bool", kwargs["weights"].span, rule="T6",
                        hint="I.cast the weights to a number dtype")
        shapes = [builder.shape_of(values), builder.shape_of(weights)]
        spans = [node.args[0].span, kwargs["weights"].span]
        common = broadcast_extents(builder, shapes, spans)
        values = broadcast_to(builder, values, shapes[0], common, spans[0])
        weights = broadcast_to(builder, weights, shapes[1], common, spans[1])
        operands[0] = values
        operands.append(weights)
        result_dtype = weights.type.dtype
    else:
        result_dtype = DTYPES["i64"]
    static = (count,) if isinstance(count, int) else (None,)
    op = builder.emit("histogram", operands, [TensorType(result_dtype, static)],
                      {"range": ranged, "weighted": weighted}, span=node.span)
    builder.shapes[id(op.result)] = [count]
    return op.result


def bin_dtype(dtype: DType) -> DType:
    """The float dtype binning arithmetic runs in: f16/bf16 values are binned in f32."""
    return F32 if dtype.bits < 32 else dtype


def _range(builder, node, dtype: DType):
    """(lo, hi) as scalars of the binning dtype; literal bounds are checked here, others at run time."""
    value = builder.expr(node)
    if not isinstance(value, TupleValue) or len(value.items) != 2:
        raise error("range must be a pair (lo, hi)", node.span, rule="T6")
    compute = bin_dtype(dtype)
    bounds = []
    spans = node.elts if isinstance(node, ast.TupleExpr) else (node, node)
    for item, item_node in zip(value.items, spans):
        if isinstance(item, Literal):
            bounds.append(item)
            continue
        if not hasattr(item, "type") or item.type != dtype:
            got = getattr(item, "type", "this value")
            raise error(f"a bound of range must be a scalar {dtype} like the values, got {got}", item_node.span,
                        rule="T6", hint=f"I.cast it to {dtype}")
        bounds.append(item)
    if all(isinstance(b, Literal) for b in bounds):
        lo, hi = (float(literal_as(b, dtype)) for b in bounds)
        with np.errstate(all="ignore"):  # the check in the binning dtype, as at run time
            width = np.subtract(*(np.array([hi, lo], _NP[compute.bits])))
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi and np.isfinite(width) and width > 0):
            raise error(f"range=({lo!r}, {hi!r}) must be finite with lo < hi", node.span, rule="T6")
        return [builder.const(lo, compute, node.span), builder.const(hi, compute, node.span)]
    converted = []
    for b, item_node in zip(bounds, spans):
        if isinstance(b, Literal):
            converted.append(builder.const(float(literal_as(b, dtype)), compute, item_node.span))
        elif compute != dtype:
            converted.append(builder.emit("cast", [b], [compute], span=item_node.span).result)
        else:
            converted.append(b)
    lo, hi = converted
    width = builder.emit("sub", [hi, lo], [compute], span=node.span).result
    size = builder.emit("abs", [width], [compute], span=node.span).result
    finite = builder.emit("cmp", [size, builder.const(math.inf, compute, node.span)], [BOOL], {"pred": "lt"},
                          span=node.span).result
    ordered = builder.emit("cmp", [lo, hi], [BOOL], {"pred": "lt"}, span=node.span).result
    ok = builder.emit("and", [finite, ordered], [BOOL], span=node.span).result
    builder.emit("assert_true", [ok], span=node.span, attrs={
        "what": "I.histogram needs a finite range with lo < hi (T6)", "rule": "T6", "code": "domain"})
    return converted


BUILTINS = {"contract": _contract, "histogram": _histogram}
