"""What an expression evaluates to during KIR construction.

Runtime values are KIR ``Value``s. Untyped numeric literals stay ``Literal`` until an
operation gives them a dtype (a literal adopts the other operand's dtype; a literal
that cannot be represented is a diagnostic). Tuples group values without changing
them (C3). Functions, constants, imported modules and the ``I`` namespace are compile-time
references.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from intentc.diagnostics import error
from intentc.kir.types import DType, DTYPES
from intentc.sema.mx import mx_literal
from intentc.source import Span

DEFAULT_INT = DTYPES["i64"]
DEFAULT_FLOAT = DTYPES["f32"]


@dataclass(frozen=True)
class Literal:
    value: int | float | bool
    span: Span

    @property
    def default_dtype(self) -> DType:
        if isinstance(self.value, bool):
            return DTYPES["bool"]
        return DEFAULT_INT if isinstance(self.value, int) else DEFAULT_FLOAT


@dataclass(frozen=True)
class TupleValue:
    items: tuple


@dataclass(frozen=True)
class NamespaceRef:
    name: str  # the builtin namespace `I`


@dataclass(frozen=True)
class FunctionRef:
    name: str  # the function's KIR name
    kind: str = ""  # "kernel" or "fn" where known (imports refuse kernels)


@dataclass(frozen=True)
class ConstantRef:
    """A module-level constant: an untyped literal's value (``dtype`` None), or a value of ``dtype``."""

    value: int | float | bool
    dtype: DType | None = None


@dataclass(frozen=True, eq=False)
class ModuleRef:
    """An imported module (``import common``): ``common.f(...)``, ``common.EPS``."""

    name: str  # as the import names it
    names: dict  # its namespace (sema/imports.py)
    path: str  # as messages show it


@dataclass(frozen=True)
class DTypeRef:
    dtype: DType


def literal_as(lit: Literal, dtype: DType, rule: str | None = None) -> int | float | bool:
    """The literal's value converted to ``dtype``, or a diagnostic when it does not fit."""
    value = lit.value
    if dtype.is_bool:
        if isinstance(value, bool):
            return value
        raise error(f"the literal {value!r} is not a bool", lit.span, rule=rule,
                    hint="write True or False, or compare with a number")
    if dtype.kind == "mx":  # OCP Microscaling codes are made by I.cast from f32
        raise mx_literal(dtype, lit.span)
    if isinstance(value, bool):
        raise error(f"a bool literal cannot be used as {dtype}", lit.span, rule=rule,
                    hint=f"use I.cast({value}, {dtype})")
    if dtype.is_float:
        try:
            return float(value)
        except OverflowError:
            raise error(f"this literal ({value.bit_length()} bits) is too large for {dtype}", lit.span, rule=rule,
                        hint="write a smaller value, or I.inf for infinity") from None
    if isinstance(value, float):
        if not math.isfinite(value) or value != int(value):
            raise error(f"the literal {value!r} is not an integer, but {dtype} is expected", lit.span,
                        rule=rule, hint=f"use an integer literal, or I.cast to {dtype}")
        value = int(value)
    low, high = int_range(dtype)
    if not low <= value <= high:
        raise error(f"the literal {value} does not fit in {dtype} (range {low}..{high})", lit.span, rule=rule,
                    hint=f"a literal takes the dtype it is used with, here {dtype}; use a value in range, "
                         "or I.cast the other operand to a wider dtype")
    return value


def int_range(dtype: DType) -> tuple[int, int]:
    if dtype.is_signed:
        return -(1 << (dtype.bits - 1)), (1 << (dtype.bits - 1)) - 1
    return 0, (1 << dtype.bits) - 1


def items_of(value) -> list:
    """The items of a tuple value, or the value alone as one item."""
    return list(value.items) if isinstance(value, TupleValue) else [value]
