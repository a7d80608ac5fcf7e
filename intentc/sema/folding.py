"""Constant folding: operators applied to two untyped literals give a literal.

Literals have no dtype until an operation gives them one (values.py), so ``2 ** 10 - 1``
or ``-1`` fold here with Python's exact arithmetic: integers stay exact, ``/`` is true
division in floating point, bool literals take only the logical operators. A result
that no dtype could hold (over ``MAX_CONST_BITS`` bits), a division by zero or a
non-finite float is a diagnostic at the expression.
"""
from __future__ import annotations

from intentc.diagnostics import error
from intentc.sema.values import Literal

MAX_CONST_BITS = 4096  # constant folding stops here: no dtype holds more than 64 bits


def fold_unary(op: str, lit: Literal, span) -> Literal:
    """``not``, ``~`` or ``-`` of a literal."""
    v = lit.value
    if op == "not":
        if not isinstance(v, bool):
            raise error("'not' needs a bool", span, rule="O1")
        return Literal(not v, span)
    if op == "~":
        if isinstance(v, float):
            raise error("'~' needs an integer", span)
        return Literal(~v if not isinstance(v, bool) else not v, span)
    if isinstance(v, bool):
        raise error("cannot negate a bool", span)
    return Literal(-v, span)


def fold_binary(op: str, a: Literal, b: Literal, span) -> Literal:
    """``a op b`` for an arithmetic or bitwise operator; Python's exact integers, bounded in size."""
    x, y = a.value, b.value
    if isinstance(x, bool) or isinstance(y, bool):
        if op in "&|^" and isinstance(x, bool) and isinstance(y, bool):
            return Literal({"&": x and y, "|": x or y, "^": x != y}[op], span)
        raise error(f"'{op}' is not defined on bool literals", span)
    if isinstance(x, int) and isinstance(y, int) and y > 0 and (
            (op == "**" and abs(x) > 1 and (abs(x).bit_length() - 1) * y > MAX_CONST_BITS)
            or (op == "<<" and x and y > MAX_CONST_BITS)):
        raise error(f"the constant expression '{op}' is too large for any dtype", span,
                    hint="integer dtypes hold at most 64 bits")
    try:
        if op == "/":
            return Literal(float(x) / float(y), span)
        if op in ("&", "|", "^", "<<", ">>") and (isinstance(x, float) or isinstance(y, float)):
            raise error(f"'{op}' needs integer operands", span)
        result = {"+": lambda: x + y, "-": lambda: x - y, "*": lambda: x * y, "//": lambda: x // y,
                  "%": lambda: x % y, "**": lambda: x ** y, "&": lambda: x & y, "|": lambda: x | y,
                  "^": lambda: x ^ y, "<<": lambda: x << y, ">>": lambda: x >> y}[op]()
    except ZeroDivisionError:
        raise error("division by zero in a constant expression", span) from None
    except (OverflowError, ValueError):
        raise error("this constant expression has no finite value", span) from None
    if isinstance(result, int) and result.bit_length() > MAX_CONST_BITS:
        raise error(f"the constant expression '{op}' is too large for any dtype", span,
                    hint="integer dtypes hold at most 64 bits")
    return Literal(result, span)


def fold_compare(op: str, a: Literal, b: Literal, span) -> Literal:
    """``a op b`` for a comparison: a bool literal."""
    x, y = a.value, b.value
    return Literal({"<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y, "==": x == y, "!=": x != y}[op], span)


def fold_extremum(name: str, a: Literal, b: Literal, span) -> Literal:
    """``I.minimum`` or ``I.maximum`` of two literals."""
    pick = min if name == "minimum" else max
    return Literal(pick(a.value, b.value), span)
