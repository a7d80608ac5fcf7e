"""Pointwise builtins: math functions, ``I.minimum``/``I.maximum``, ``I.where`` and ``I.cast``.

Each applies element by element: literals take their partner's dtype (or a default),
tensor operands broadcast to one shape (S2, S3), dtypes never convert implicitly except
through ``I.cast``. Two literals fold at compile time for ``I.minimum``/``I.maximum``.
"""
from __future__ import annotations

from intentc.diagnostics import error
from intentc.kir.core import Value
from intentc.kir.types import BOOL, DTYPES, DType, TensorType, element_dtype
from intentc.sema.annotations import dtype_of
from intentc.sema.arguments import arity, is_tensor, no_keywords
from intentc.sema.conversions import integer_scalar
from intentc.sema.folding import fold_extremum
from intentc.sema.shapes import broadcast_extents, broadcast_to
from intentc.sema.values import Literal

UNARY_MATH = {"exp": "exp", "log": "log", "tanh": "tanh", "sqrt": "sqrt", "abs": "abs"}
BINARY_MATH = {"minimum": "min", "maximum": "max"}


def _unary_math(b, name: str, node):
    no_keywords(name, node)
    args = node.args
    arity(node, 1)
    value = b.numeric(b.expr(args[0]), args[0].span)
    if isinstance(value, Literal):
        value = b.scalar_of(value, value.default_dtype if name == "abs" else DTYPES["f32"],
                            args[0].span, f"the argument of I.{name}")
    elif name != "abs" and integer_scalar(value):  # I.sqrt(hs): an integer scalar converts (conversions.py)
        value = b.converted(value, DTYPES["f32"], args[0].span)
    dtype = element_dtype(value.type)
    if name != "abs" and not dtype.is_float:
        raise error(f"I.{name} needs a float argument, got {dtype}", args[0].span,
                    hint="use I.cast(x, f32)")
    if dtype.is_bool:
        raise error("I.abs is not defined on bool", args[0].span)
    op = b.emit(UNARY_MATH[name], [value], [value.type], span=node.span)
    if isinstance(value.type, TensorType):
        b.shapes[id(op.result)] = b.shape_of(value)
    return op.result


def _binary_math(b, name: str, node):
    no_keywords(name, node)
    args = node.args
    arity(node, 2)
    left, right = (b.numeric(b.expr(a), a.span) for a in args)
    if isinstance(left, Literal) and isinstance(right, Literal):
        return fold_extremum(name, left, right, node.span)
    dtype = b.common_dtype(left, right, args[0].span, args[1].span, node.span)
    b.check_operator(BINARY_MATH[name], name, dtype, node.span)
    x, y = b.pointwise_operands([left, right], dtype, [args[0].span, args[1].span], node.span)
    return b.shaped_like(b.emit(BINARY_MATH[name], [x, y], [x.type], span=node.span).result, x)


def _where(b, name: str, node):
    no_keywords(name, node)
    args = node.args
    arity(node, 3)
    cond, x, y = (b.numeric(b.expr(a), a.span) for a in args)
    if isinstance(cond, Literal):
        cond = b.scalar_of(cond, BOOL, args[0].span, "the condition")
    if element_dtype(cond.type) != BOOL:
        raise error(f"the condition of I.where must be bool, got {cond.type}", args[0].span)
    if isinstance(x, Literal) and isinstance(y, Literal):
        x = b.scalar_of(x, x.default_dtype if not isinstance(y.value, float) else y.default_dtype,
                        args[1].span, "a choice")
    dtype = b.common_dtype(x, y, args[1].span, args[2].span, node.span)
    x, y = [b.scalar_of(v, dtype, s, "a choice") if isinstance(v, Literal) else v
            for v, s in ((x, args[1].span), (y, args[2].span))]
    shapes = [b.shape_of(v) for v in (cond, x, y)]
    spans = [a.span for a in args]
    if any(shapes):
        result = broadcast_extents(b, shapes, spans)
        cond, x, y = [broadcast_to(b, v, s, result, sp) for v, s, sp in zip((cond, x, y), shapes, spans)]
    return b.shaped_like(b.emit("select", [cond, x, y], [x.type], span=node.span).result, x)


def _cast(b, name: str, node):
    no_keywords(name, node)
    args = node.args
    arity(node, 2)
    value = b.numeric(b.expr(args[0]), args[0].span)
    dtype = dtype_of(args[1])
    if isinstance(value, Literal):
        value = b.scalar_of(value, value.default_dtype, args[0].span, "the argument")
    result_type = TensorType(dtype, value.type.shape) if isinstance(value.type, TensorType) else dtype
    if value.type == result_type:
        return value
    return convert(b, value, dtype, node.span)


def convert(b, value: Value, dtype: DType, span) -> Value:
    """One ``cast`` of a scalar or a tensor to ``dtype``, element by element (same extents)."""
    result_type = TensorType(dtype, value.type.shape) if is_tensor(value) else dtype
    op = b.emit("cast", [value], [result_type], span=span)
    if is_tensor(value):
        b.shapes[id(op.result)] = b.shape_of(value)
    return op.result


BUILTINS = {**{name: _unary_math for name in UNARY_MATH}, **{name: _binary_math for name in BINARY_MATH},
            "where": _where, "cast": _cast}
