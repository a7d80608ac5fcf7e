"""The math builtins of intentc/base/math_catalog.py, and the ones built from other ops.

- one-operand functions (``I.sin(x)``, ``I.floor(x)``, ...) and two-operand ones
  (``I.atan2(y, x)``, ``I.pow(x, y)``, ``I.fmod``, ``I.remainder``, ``I.copysign``,
  ``I.hypot``): float operands of one dtype, element-wise with broadcasting (S2, S3); a
  literal takes its partner's dtype, or f32;
- ``I.isnan``, ``I.isinf``, ``I.isfinite``, ``I.signbit``: bool results, from comparisons
  (and ``copysign`` for the sign bit, which sees the sign of zeros and NaNs);
- ``I.fma(a, b, c)``: ``a * b + c`` rounded once (the KIR op ``fma``; f16 rounds to f32 first);
- ``I.clamp(x, lo, hi)`` is ``I.minimum(I.maximum(x, lo), hi)`` (NaN propagates);
- ``I.minimum`` / ``I.maximum`` of two or more operands fold left to right, all operands
  broadcast together (literals alone fold at compile time).
"""
from __future__ import annotations

import math

from intentc.base import math_catalog
from intentc.diagnostics import error
from intentc.kir.types import BOOL, DTYPES, TensorType, element_dtype
from intentc.sema.arguments import arity, no_keywords
from intentc.sema.conversions import integer_scalar
from intentc.sema.folding import fold_extremum
from intentc.sema.values import Literal

_F32 = DTYPES["f32"]


def _float_operands(b, name: str, node, count: int):
    """The ``count`` arguments as values of one float dtype, broadcast together."""
    no_keywords(name, node)
    arity(node, count)
    values = [b.numeric(b.expr(a), a.span) for a in node.args]
    spans = [a.span for a in node.args]
    floats = [element_dtype(v.type) for v in values if not isinstance(v, Literal) and element_dtype(v.type).is_float]
    # An integer scalar converts to the float operands' dtype, or to f32 as a literal would
    # (conversions.py): I.sqrt(hs), I.pow(x, n), I.atan2(y, N).
    values = [b.converted(v, floats[0] if floats else _F32, s) if integer_scalar(v) else v
              for v, s in zip(values, spans)]
    typed = [element_dtype(v.type) for v in values if not isinstance(v, Literal)]
    dtype = typed[0] if typed else _F32
    for v, s in zip(values, spans):
        if not isinstance(v, Literal) and element_dtype(v.type) != dtype:
            raise error(f"the arguments of I.{name} have different dtypes ({dtype} and {element_dtype(v.type)})",
                        s, hint="dtypes never convert implicitly; use I.cast")
    if not dtype.is_float:
        raise error(f"I.{name} needs float arguments, got {dtype}", spans[0], hint="use I.cast(x, f32)")
    if count == 1:
        value = values[0]
        return [b.scalar_of(value, dtype, spans[0], f"the argument of I.{name}")
                if isinstance(value, Literal) else value]
    return b.pointwise_operands(values, dtype, spans, node.span)


def _function(b, name: str, node):
    operands = _float_operands(b, name, node, math_catalog.arity(name))
    return b.shaped_like(b.emit(name, operands, [operands[0].type], span=node.span).result, operands[0])


def _fma(b, name: str, node):
    """``I.fma(a, b, c)``: ``a * b + c`` with one rounding, on every target."""
    operands = _float_operands(b, name, node, 3)
    return b.shaped_like(b.emit("fma", operands, [operands[0].type], span=node.span).result, operands[0])


def _compare(b, pred: str, x, y, span):
    result_type = TensorType(BOOL, x.type.shape) if isinstance(x.type, TensorType) else BOOL
    return b.shaped_like(b.emit("cmp", [x, y], [result_type], {"pred": pred}, span=span).result, x)


def _like(b, x, value: float, span):
    """The constant ``value`` in ``x``'s dtype, broadcast to ``x``'s shape."""
    dtype = element_dtype(x.type)
    return b.pointwise_operands([x, Literal(value, span)], dtype, [span, span], span)[1]


def _predicate(b, name: str, node):
    (x,) = _float_operands(b, name, node, 1)
    span = node.span
    if name == "isnan":
        return _compare(b, "ne", x, x, span)
    if name == "signbit":
        one = b.shaped_like(b.emit("copysign", [_like(b, x, 1.0, span), x], [x.type], span=span).result, x)
        return _compare(b, "lt", one, _like(b, x, 0.0, span), span)
    magnitude = b.shaped_like(b.emit("abs", [x], [x.type], span=span).result, x)
    return _compare(b, "eq" if name == "isinf" else "lt", magnitude, _like(b, x, math.inf, span), span)


def _extremum(b, name: str, node):
    """``I.minimum`` / ``I.maximum`` of two or more operands."""
    no_keywords(name, node)
    if len(node.args) < 2:
        raise error(f"I.{name} takes two or more arguments, got {len(node.args)}", node.span)
    values = [b.numeric(b.expr(a), a.span) for a in node.args]
    spans = [a.span for a in node.args]
    if all(isinstance(v, Literal) for v in values):
        result = values[0]
        for v in values[1:]:
            result = fold_extremum(name, result, v, node.span)
        return result
    typed = [(v, s) for v, s in zip(values, spans) if not isinstance(v, Literal)]
    dtype = element_dtype(typed[0][0].type)
    for v, s in typed[1:]:
        b.common_dtype(typed[0][0], v, typed[0][1], s, node.span)
    op = "min" if name == "minimum" else "max"
    b.check_operator(op, name, dtype, node.span)
    operands = b.pointwise_operands(values, dtype, spans, node.span)
    result = operands[0]
    for v in operands[1:]:
        result = b.shaped_like(b.emit(op, [result, v], [result.type], span=node.span).result, operands[0])
    return result


def _clamp(b, name: str, node):
    no_keywords(name, node)
    arity(node, 3)
    values = [b.numeric(b.expr(a), a.span) for a in node.args]
    spans = [a.span for a in node.args]
    typed = [(v, s) for v, s in zip(values, spans) if not isinstance(v, Literal)]
    if not typed:
        raise error("I.clamp needs a typed operand", node.span, hint="annotate or cast one of its arguments")
    dtype = element_dtype(typed[0][0].type)
    for v, s in typed[1:]:
        b.common_dtype(typed[0][0], v, typed[0][1], s, node.span)
    b.check_operator("max", name, dtype, node.span)
    x, lo, hi = b.pointwise_operands(values, dtype, spans, node.span)
    low = b.shaped_like(b.emit("max", [x, lo], [x.type], span=node.span).result, x)
    return b.shaped_like(b.emit("min", [low, hi], [x.type], span=node.span).result, x)


BUILTINS = {
    **{name: _function for name in math_catalog.UNARY + math_catalog.BINARY},
    **{name: _predicate for name in ("isnan", "isinf", "isfinite", "signbit")},
    "minimum": _extremum, "maximum": _extremum, "clamp": _clamp, "fma": _fma,
}
