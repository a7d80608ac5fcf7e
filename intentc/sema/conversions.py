"""The one rule of implicit conversions between dtypes (everything else needs ``I.cast``).

1. ``index`` and ``i64`` are the same 64-bit two's-complement integer on every target:
   either converts to the other with the bits unchanged, and an operation mixing them has
   dtype ``i64``.
2. An integer scalar — a signed, unsigned or ``index`` value that is not a tensor, extents
   (``N``, ``x.shape[k]``, ``len(d)``) included — meets a float operand (scalar or tensor):
   it converts to that float dtype, rounded to nearest with ties to even (IEEE 754
   convertFromInt; beyond the largest finite value: ±inf), exactly as ``I.cast`` converts.
   ``I.sum(x) / N``, ``beta ** t``, ``x * i`` and ``i < x[k]`` read as a Python or NumPy
   programmer expects. An argument of a float math builtin converts the same way, to the
   float arguments' dtype, or to f32 (a literal's default) when there is none: ``I.sqrt(hs)``.
3. An integer scalar stored into a float tensor, or assigned to a float variable,
   converts the same way.

4. A name assigned a literal (``acc = 0.0``, ``n = 3``) has the literal's default dtype
   (f32, i64) only until it meets another: an operand of another numeric dtype gives it that
   dtype (the literal itself, exactly: ``t = 0.1`` meeting f64 is f64's 0.1), and a loop that
   carries it is built with the literal in the dtype its body computes (``acc = 0.0``, then
   ``acc = acc + x[i]`` over f64 ``x``, accumulates in f64). A float literal never becomes an
   integer, a bool literal nothing else.

Never implicit: a tensor of one dtype meeting a tensor of another, bool to or from
anything, float to integer, and integers of different widths (other than rule 1). Float
literals take the dtype of what they meet (values.py), as before. Each conversion is an
explicit ``cast`` op in KIR, so the interpreter and every target compute the same bits.
"""
from __future__ import annotations

from intentc.diagnostics import CompileError
from intentc.kir.core import Value
from intentc.kir.types import DTYPES, DType, TensorType, element_dtype

I64 = DTYPES["i64"]


def _integer(dtype: DType) -> bool:
    return dtype.kind in ("int", "uint", "index")


def integer_scalar(value) -> bool:
    return isinstance(value, Value) and not isinstance(value.type, TensorType) and _integer(value.type)


def common(left: Value, right: Value) -> DType | None:
    """The dtype two operands of different dtypes convert to (rules 1 and 2), or None."""
    a, b = element_dtype(left.type), element_dtype(right.type)
    if {a.name, b.name} == {"index", "i64"}:
        return I64
    if b.is_float and integer_scalar(left):
        return b
    if a.is_float and integer_scalar(right):
        return a
    return None


def converts_to(value: Value, dtype: DType) -> bool:
    """Whether a scalar ``value`` converts implicitly to the scalar ``dtype`` (rules 1 and 3)."""
    if not isinstance(value, Value) or isinstance(value.type, TensorType):
        return False
    if {value.type.name, dtype.name} == {"index", "i64"}:
        return True
    return dtype.is_float and integer_scalar(value)


def literal_fits(literal, dtype) -> bool:
    """Whether ``literal`` can take ``dtype`` (a number literal a numeric dtype; an int literal
    no float-to-integer change)."""
    if isinstance(literal.value, bool) or not isinstance(dtype, DType) or dtype.is_bool or dtype.is_mx:
        return False
    return dtype.is_float or (isinstance(literal.value, int) and dtype.is_int)


class CarryTypeChange(CompileError):
    """A loop body gives a carried name another dtype (O2): an error, unless the name holds a
    literal from before the loop (then the loop is built again with the literal in that dtype)."""

    def __init__(self, diagnostics, name: str, dtype):
        super().__init__(diagnostics)
        self.name, self.dtype = name, dtype
