"""Core KIR ops: constants, elementwise arithmetic, comparisons, selects and casts.

Every op here is pure and elementwise: scalars, or tensors of one shape (the front end has
made broadcasts explicit, S2). What each computes, per dtype, is the interpreter's
``interp.py`` (wrap-around integers, IEEE floats rounded per op).
"""
from __future__ import annotations

from intentc.base import math_catalog
from intentc.kir.core import Op
from intentc.kir.ops.definition import (BOOL_A, FLOATS, INTS, INTS_OR_BOOLS, NUMBER_A, SCALAR, VALUE, Attr, OpDef,
                                        Operand, declare, need, one_of, optional, shaped_like)
from intentc.kir.types import BOOL, element_dtype

# The math functions' op names come from intentc/base/math_catalog.py (float operands only).
BINARY_OPS = ("add", "sub", "mul", "div", "floordiv", "mod", "pow", "min", "max", "and", "or", "xor", "shl",
              "shr") + math_catalog.NEW_BINARY
UNARY_OPS = ("neg", "not", "abs", "exp", "log", "tanh", "sqrt") + math_catalog.UNARY
FLOAT_ONLY = {"div", "exp", "log", "tanh", "sqrt", *math_catalog.UNARY, *math_catalog.NEW_BINARY}
INT_OR_BOOL_ONLY = {"and", "or", "xor", "not"}
INT_ONLY = {"shl", "shr"}
CMP_PREDICATES = ("lt", "le", "gt", "ge", "eq", "ne")


def _operand_class(name: str):
    if name in FLOAT_ONLY:
        return FLOATS
    if name in INT_OR_BOOL_ONLY:
        return INTS_OR_BOOLS
    if name in INT_ONLY:
        return INTS
    return VALUE


def _check_binary(op: Op) -> None:
    a, b = op.operands
    need(a.type == b.type, op, f"operand types differ: {a.type} and {b.type}")
    need(op.result.type == a.type, op, "result type must equal the operand type")


def _check_unary(op: Op) -> None:
    need(op.result.type == op.operands[0].type, op, "result type must equal the operand type")


def _check_cmp(op: Op) -> None:
    a, b = op.operands
    need(a.type == b.type, op, f"operand types differ: {a.type} and {b.type}")
    need(op.result.type == shaped_like(a.type, BOOL), op, "result must be bool-shaped like the operands")


def _check_select(op: Op) -> None:
    cond, a, b = op.operands
    need(a.type == b.type == op.result.type, op, "both choices and the result need one type")
    need(cond.type == shaped_like(a.type, BOOL), op, "the condition must be bool-shaped like the choices")


def _check_fma(op: Op) -> None:
    a, b, c = op.operands
    need(a.type == b.type == c.type == op.result.type, op, "fma's operands and result need one type")


def _check_cast(op: Op) -> None:
    src = op.operands[0].type
    need(op.result.type == shaped_like(src, element_dtype(op.result.type)), op, "a cast changes only the dtype")


def _binary(name: str) -> OpDef:
    kind = _operand_class(name)
    return OpDef(name, "core", operands=(Operand("lhs", kind), Operand("rhs", kind)),
                 results=(Operand("result", VALUE),), check=_check_binary)


def _unary(name: str) -> OpDef:
    return OpDef(name, "core", operands=(Operand("x", _operand_class(name)),), results=(Operand("result", VALUE),),
                 check=_check_unary)


OPS = declare(
    *(_binary(name) for name in BINARY_OPS),
    *(_unary(name) for name in UNARY_OPS),
    OpDef("const", "core", results=(Operand("result", SCALAR),), attrs={"value": Attr(NUMBER_A)}),
    OpDef("cmp", "core", operands=(Operand("lhs", VALUE), Operand("rhs", VALUE)), results=(Operand("result", VALUE),),
          attrs={"pred": Attr(one_of("a comparison predicate", CMP_PREDICATES))}, check=_check_cmp),
    OpDef("select", "core", operands=(Operand("cond", VALUE), Operand("then", VALUE), Operand("else", VALUE)),
          results=(Operand("result", VALUE),), check=_check_select),
    # fma: a * b + c rounded once (I.fma, explicitly fused)
    OpDef("fma", "core", operands=(Operand("a", FLOATS), Operand("b", FLOATS), Operand("c", FLOATS)),
          results=(Operand("result", VALUE),), check=_check_fma),
    # in_range: the value is known to fit the target dtype (set by lowering; no saturation needed)
    OpDef("cast", "core", operands=(Operand("x", VALUE),), results=(Operand("result", VALUE),),
          attrs={"in_range": optional(BOOL_A)}, check=_check_cast),
)
