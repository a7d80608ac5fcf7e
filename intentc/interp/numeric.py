"""The numeric rules of KIR: what every scalar and elementwise operation computes.

Part of the reference interpreter (``intentc/interp/``): the op handlers of every family
call these functions, and the compiled code implements the same rules on every target.
A reader who wants to know what ``floordiv`` does on ``i8`` or what ``cast`` does with
NaN finds the answer here, in plain Python. ``Domain`` is the point counting of
``I.domain`` values (D1).

Values
    ``bool`` scalars are Python ``bool``; integer and ``index`` scalars are Python ``int``
    kept inside their dtype's range; float scalars are NumPy scalars of their dtype
    (``np.float16/32/64``) so that every operation rounds to the dtype; tensors are NumPy
    arrays; a domain is a ``Domain``.

Numeric rules (one meaning on every target; the compiled code implements the same)
    - Integers (``i8..i64``, ``u8..u64``, ``index`` = 64-bit signed) wrap around at their
      width. ``//`` and ``%`` round toward negative infinity; ``x // 0 == 0``,
      ``x % 0 == x``, ``MIN // -1 == MIN`` (and ``MIN % -1 == 0``).
    - Shifts by an amount outside ``[0, bits)`` (a negative amount included) give 0, or
      the sign fill (``-1`` / ``0``) for ``>>`` of a signed value.
    - Integer ``**`` is exponentiation by squaring with wrap-around; a negative exponent
      gives 0, except a base of 1 (gives 1) and -1 (gives -1 for odd, 1 for even
      exponents). ``0 ** 0 == 1``.
    - ``neg``/``abs`` wrap (``abs(MIN) == MIN``); unsigned ``abs`` is the identity.
    - Float arithmetic is IEEE in the operand dtype, rounded to that dtype after every
      operation (no fused multiply-add, no excess precision). ``/`` is true division;
      float ``//`` is ``floor(a / b)``; float ``%`` is Python's: the remainder of
      ``fmod`` moved to the divisor's sign, a zero remainder takes the divisor's sign,
      ``x % 0`` is NaN.
    - ``minimum``/``maximum`` on floats propagate NaN and order ``-0.0 < +0.0``.
    - Comparisons involving NaN are false, except ``!=`` which is true.
    - Casts: float -> int truncates toward zero and saturates at the target's range,
      NaN -> 0; int -> float rounds to nearest, ties to even (once, directly to the
      target dtype); float -> float rounds to nearest even; int -> int keeps the low bits
      (sign- or zero-extending by the *source* signedness); anything -> bool is
      ``!= 0`` (so NaN -> True); bool -> number is 0 or 1. Casts between an OCP
      Microscaling type and f32 follow ``intentc/kir/mx.py`` (exact decoding; rounding to
      nearest even, saturating where the format has no infinity).
    - The math functions (``exp``, ``log``, ``tanh``, float ``**`` and ``%``'s ``fmod``, and
      every function of ``intentc/base/math_catalog.py``) are intentc's own
      (``intentc/base/``), run with NumPy one IEEE operation at a time (``mathfuncs.py``):
      the same bits as the compiled code on every target. ``sqrt`` uses NumPy and is
      correctly rounded everywhere.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from intentc.interp import mathfuncs
from intentc.kir import mx
from intentc.kir.types import DType


# =====================================================================================
# dtypes
# =====================================================================================
def numpy_dtype(dtype: DType) -> np.dtype:
    """The NumPy dtype that holds ``dtype`` (``index`` is int64, ``bool`` one byte, MX types
    the ml_dtypes type with one code per byte)."""
    if dtype.kind == "mx":
        return mx.numpy_dtype(dtype.name)
    if dtype.kind == "bfloat":
        try:
            import ml_dtypes
        except ImportError:  # pragma: no cover - depends on the environment
            raise NotImplementedError("bf16 needs the ml_dtypes package") from None
        return np.dtype(ml_dtypes.bfloat16)
    if dtype.is_bool:
        return np.dtype(np.bool_)
    if dtype.kind == "index":
        return np.dtype(np.int64)
    return np.dtype({"int": "i", "uint": "u", "float": "f"}[dtype.kind] + str(dtype.itemsize))


def int_range(dtype: DType) -> tuple[int, int]:
    if dtype.is_signed:
        return -(1 << (dtype.bits - 1)), (1 << (dtype.bits - 1)) - 1
    return 0, (1 << dtype.bits) - 1


def wrap(value: int, dtype: DType) -> int:
    """``value`` reduced to ``dtype``'s width: two's complement wrap-around."""
    bits = dtype.bits
    value &= (1 << bits) - 1
    if dtype.is_signed and value >> (bits - 1):
        value -= 1 << bits
    return value


_MANTISSA = {16: 11, 32: 24, 64: 53}  # significand bits of f16, f32, f64 (bf16: 8)


def _mantissa_bits(dtype: DType) -> int:
    return 8 if dtype.kind == "bfloat" else _MANTISSA[dtype.bits]


# =====================================================================================
# Integer and bool semantics, defined on Python scalars
# =====================================================================================
def int_binary(op: str, dtype: DType, a: int, b: int):
    """``a <op> b`` for integer (or ``index``) operands of ``dtype``; bools for and/or/xor."""
    if dtype.is_bool:
        if op == "and":
            return a and b
        if op == "or":
            return a or b
        if op == "xor":
            return a != b
        if op == "min":
            return a and b
        if op == "max":
            return a or b
        raise NotImplementedError(f"'{op}' on bool")
    bits = dtype.bits
    if op == "add":
        return wrap(a + b, dtype)
    if op == "sub":
        return wrap(a - b, dtype)
    if op == "mul":
        return wrap(a * b, dtype)
    if op == "floordiv":  # toward -inf; x // 0 == 0; MIN // -1 wraps to MIN
        return 0 if b == 0 else wrap(a // b, dtype)
    if op == "mod":  # the remainder of floordiv, with the divisor's sign; x % 0 == x
        return a if b == 0 else a % b
    if op == "pow":
        return int_pow(a, b, dtype)
    if op == "min":
        return min(a, b)
    if op == "max":
        return max(a, b)
    if op == "and":
        return wrap(a & b, dtype)
    if op == "or":
        return wrap(a | b, dtype)
    if op == "xor":
        return wrap(a ^ b, dtype)
    if op == "shl":  # an amount outside [0, bits) gives 0
        return wrap(a << b, dtype) if 0 <= b < bits else 0
    if op == "shr":  # arithmetic for signed values: the sign fills an out-of-range shift
        if 0 <= b < bits:
            return a >> b
        return -1 if a < 0 else 0
    raise NotImplementedError(f"'{op}' on {dtype}")


def int_pow(a: int, b: int, dtype: DType) -> int:
    """Exponentiation by squaring with wrap-around. A negative exponent gives 0, except
    for a base of 1 (gives 1) and -1 (gives -1 when the exponent is odd, else 1)."""
    if b < 0:
        if a == 1:
            return 1
        if a == -1:
            return -1 if b & 1 else 1
        return 0
    modulus = 1 << dtype.bits
    return wrap(pow(a % modulus, b, modulus), dtype)


def int_unary(op: str, dtype: DType, a):
    if dtype.is_bool:
        if op == "not":
            return not a
        raise NotImplementedError(f"'{op}' on bool")
    if op == "neg":
        return wrap(-a, dtype)
    if op == "not":
        return wrap(~a, dtype)
    if op == "abs":
        return wrap(abs(a), dtype) if dtype.is_signed else a
    raise NotImplementedError(f"'{op}' on {dtype}")


def int_compare(pred: str, a, b) -> bool:
    if pred == "lt":
        return a < b
    if pred == "le":
        return a <= b
    if pred == "gt":
        return a > b
    if pred == "ge":
        return a >= b
    if pred == "eq":
        return a == b
    return a != b


# =====================================================================================
# Float semantics, defined on NumPy values of the dtype (scalars or arrays alike)
# =====================================================================================
def _same_kind(result, dtype: np.dtype):
    """NumPy returns 0-d arrays from some functions on scalars: give back a scalar."""
    if isinstance(result, np.ndarray):
        if result.dtype != dtype:
            result = result.astype(dtype)
        if result.ndim == 0:
            return result[()]
    return result


def float_binary(op: str, dtype: DType, a, b):
    """``a <op> b`` for float operands; the result is rounded to the operand dtype."""
    nd = numpy_dtype(dtype)
    if op == "add":
        return _same_kind(np.add(a, b, dtype=nd), nd)
    if op == "sub":
        return _same_kind(np.subtract(a, b, dtype=nd), nd)
    if op == "mul":
        return _same_kind(np.multiply(a, b, dtype=nd), nd)
    if op == "div":
        return _same_kind(np.divide(a, b, dtype=nd), nd)
    if op == "floordiv":  # floor of the rounded quotient (not Python's float //)
        return _same_kind(np.floor(np.divide(a, b, dtype=nd)), nd)
    if op == "mod":
        return _same_kind(float_mod(a, b, nd), nd)
    if op in mathfuncs.FUNCTIONS:  # pow and the binary functions: the compiled code's algorithm
        return _same_kind(mathfuncs.evaluate(op, a, b, dtype=nd), nd)
    if op == "pow":
        if isinstance(a, np.ndarray):
            return lift(lambda x, y: c_pow(x, y, nd), [a, b], dtype, dtype)
        return c_pow(a, b, nd)
    if op in ("min", "max"):
        return _same_kind(float_min_max(op, a, b, nd), nd)
    raise NotImplementedError(f"'{op}' on {dtype}")


def float_mod(a, b, nd: np.dtype):
    """Python's float ``%``: ``fmod`` (exact), moved into the divisor's sign by adding the
    divisor once when the signs differ; a zero remainder takes the divisor's sign;
    ``x % 0``, ``inf % y`` and NaN operands give NaN."""
    a = np.asarray(a, nd)
    b = np.asarray(b, nd)
    r = np.asarray(mathfuncs.evaluate("fmod", a, b, dtype=nd), nd)
    differ = ((r < 0) | (r > 0)) & ((r < 0) != (b < 0))
    r = np.where(differ, np.add(r, b, dtype=nd), r)
    return np.where(r == 0, np.copysign(np.zeros((), nd), b), r)


def c_pow(x, y, nd: np.dtype):
    """C's ``pow`` (with C99's special cases: ``pow(-inf, 0.5) == inf``, ``pow(1, nan) == 1``,
    ``pow(x, 0) == 1``) in double precision, rounded to the dtype. (NumPy's ``power`` is
    not C's: it computes ``x ** 0.5`` as ``sqrt(x)``.)"""
    x, y = float(x), float(y)
    try:
        result = math.pow(x, y)
    except OverflowError:  # finite operands, an infinite result
        odd = y.is_integer() and int(y) % 2 == 1
        result = -math.inf if x < 0 and odd else math.inf
    except ValueError:  # a pole (0 ** negative) or an invalid operation (negative ** fraction)
        if x == 0:
            odd = y.is_integer() and int(y) % 2 == 1
            result = math.copysign(math.inf, x) if odd else math.inf
        else:
            result = math.nan
    with np.errstate(all="ignore"):
        return nd.type(result)


def _fma_scalar(a: float, b: float, c: float, steps: tuple):
    """``a * b + c`` rounded once to the first dtype of ``steps`` (then to each next one): exact
    rational arithmetic for finite operands, IEEE's rules for infinities, NaN and zeros."""
    from fractions import Fraction

    if not (math.isfinite(a) and math.isfinite(b) and math.isfinite(c)):
        value = a * b + c  # inf * 0 and inf - inf give NaN, as fma's
    else:
        exact = Fraction(a) * Fraction(b) + Fraction(c)
        if exact == 0:
            product_negative = (math.copysign(1.0, a) * math.copysign(1.0, b)) < 0
            both_negative = product_negative and math.copysign(1.0, c) < 0
            value = -0.0 if (both_negative and a * b == 0 and c == 0) else 0.0
        else:
            try:
                value = exact.numerator / exact.denominator  # correctly rounded to double
            except OverflowError:
                value = math.inf if exact > 0 else -math.inf
            if steps[0] != np.float64:  # round the exact value once to the (narrower) first dtype
                value = _round_exact(exact, value, steps[0])
    with np.errstate(all="ignore"):
        for nd in steps:
            value = nd(value)
    return value


def _round_exact(exact, value: float, nd) -> float:
    """The ``nd`` value nearest ``exact`` (ties to even); ``value`` is ``exact`` rounded to double."""
    from fractions import Fraction

    with np.errstate(all="ignore"):
        near = nd(value)
    if not np.isfinite(near):
        return float(near)
    below, above = (np.nextafter(near, nd(-np.inf)), np.nextafter(near, nd(np.inf)))
    best = float(near)
    for candidate in (below, above):
        if not np.isfinite(candidate):
            continue
        d_new, d_best = abs(Fraction(float(candidate)) - exact), abs(Fraction(best) - exact)
        even = int(np.asarray(candidate).view({np.float16: np.uint16, np.float32: np.uint32}[nd])) % 2 == 0
        if d_new < d_best or (d_new == d_best and even):
            best = float(candidate)
    return best


def fused_multiply_add(dtype: DType, a, b, c):
    """``I.fma``: ``a * b + c`` rounded once (f16: to f32, then to f16, as the compiled code;
    bf16 likewise), element-wise."""
    nd = numpy_dtype(dtype)
    steps = (np.float64,) if nd == np.float64 else (np.float32,) if nd == np.float32 else (np.float32, nd.type)
    a, b, c = np.broadcast_arrays(*(np.asarray(v, nd) for v in (a, b, c)))
    out = np.empty(a.shape, nd)
    for index in np.ndindex(a.shape):
        out[index] = _fma_scalar(float(a[index]), float(b[index]), float(c[index]), steps)
    return out[()] if out.ndim == 0 else out


def float_min_max(op: str, a, b, nd: np.dtype):
    """IEEE 754-2019 minimum/maximum: NaN if either operand is NaN; -0.0 < +0.0."""
    a = np.asarray(a, nd)
    b = np.asarray(b, nd)
    nan = np.isnan(a) | np.isnan(b)
    if op == "min":
        pick = np.where(a == b, np.where(np.signbit(a), a, b), np.where(a < b, a, b))
    else:
        pick = np.where(a == b, np.where(np.signbit(a), b, a), np.where(a > b, a, b))
    return np.where(nan, np.asarray(np.nan, nd), pick)


def float_unary(op: str, dtype: DType, a):
    nd = numpy_dtype(dtype)
    if op == "neg":
        return _same_kind(np.negative(a), nd)
    if op == "abs":
        return _same_kind(np.abs(a), nd)
    if op in mathfuncs.FUNCTIONS:  # the compiled code's own algorithm, operation by operation
        return _same_kind(mathfuncs.evaluate(op, a, dtype=nd), nd)
    if op == "sqrt":
        return _same_kind(np.sqrt(a, dtype=nd), nd)
    raise NotImplementedError(f"'{op}' on {dtype}")


_NP_COMPARE = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
               "eq": np.equal, "ne": np.not_equal}


def float_compare(pred: str, a, b):
    """IEEE comparisons: every comparison with NaN is false except ``ne``."""
    result = _NP_COMPARE[pred](a, b)
    return bool(result) if np.ndim(result) == 0 else result


# =====================================================================================
# Casts
# =====================================================================================
def cast_scalar(value, src: DType, dst: DType):
    """One scalar converted from ``src`` to ``dst`` (the rules in the module docstring)."""
    if src == dst:
        return value
    if src.kind == "mx" or dst.kind == "mx":  # OCP Microscaling: intentc/kir/mx.py
        return mx.cast(value, src, dst)
    if dst.is_bool:
        if src.is_float:
            return bool(value != 0)  # NaN != 0: NaN converts to True
        return value != 0
    if src.is_bool:
        return numpy_dtype(dst).type(1 if value else 0) if dst.is_float else int(bool(value))
    if src.is_float and dst.is_float:
        return numpy_dtype(dst).type(value)  # NumPy rounds once, to nearest even
    if src.is_float:
        return float_to_int(float(value), dst)
    if dst.is_float:
        return int_to_float(value, dst)
    return wrap(value, dst)


def float_to_int(x: float, dst: DType) -> int:
    """Truncate toward zero, saturating at ``dst``'s range; NaN -> 0."""
    if math.isnan(x):
        return 0
    low, high = int_range(dst)
    if x <= low:
        return low
    if x >= high:
        return high
    return int(x)


def int_to_float(n: int, dst: DType):
    """``n`` rounded to nearest (ties to even) directly to ``dst``'s precision; beyond the
    largest finite value it becomes +-inf."""
    nd = numpy_dtype(dst)
    magnitude = abs(n)
    precision = _mantissa_bits(dst)
    extra = magnitude.bit_length() - precision
    if extra > 0:
        quotient, remainder = divmod(magnitude, 1 << extra)
        half = 1 << (extra - 1)
        if remainder > half or (remainder == half and quotient & 1):
            quotient += 1
        magnitude = quotient << extra
    # ``magnitude`` now has at most ``precision`` significant bits: exact in f64, and the
    # conversion to ``dst`` is exact too unless it is past ``dst``'s range (then inf).
    with np.errstate(over="ignore"):
        return nd.type(float(-magnitude if n < 0 else magnitude))


def cast_array(array: np.ndarray, src: DType, dst: DType) -> np.ndarray:
    nd = numpy_dtype(dst)
    if src == dst:
        return array
    if src.kind == "mx" or dst.kind == "mx":  # OCP Microscaling: intentc/kir/mx.py
        return mx.cast(array, src, dst)
    if dst.is_bool:
        return np.asarray(array != 0)
    if src.is_bool or (src.is_float and dst.is_float):
        return array.astype(nd)
    return lift(lambda v: cast_scalar(v, src, dst), [array], dst, src)


# =====================================================================================
# Lifting scalar semantics to tensors
# =====================================================================================
def _py(array: np.ndarray, dtype: DType) -> list:
    """The elements of ``array`` as the interpreter's scalars (flat, row-major)."""
    if dtype.is_float:
        return list(np.ascontiguousarray(array).reshape(-1))
    return np.ascontiguousarray(array).reshape(-1).tolist()


def lift(fn, arrays: list[np.ndarray], result: DType, operand: DType) -> np.ndarray:
    """Apply a scalar function element by element (the arrays have one shape)."""
    shape = arrays[0].shape
    columns = [_py(a, operand) for a in arrays]
    values = list(map(fn, *columns))
    nd = numpy_dtype(result)
    if result.is_float:
        return np.array(values, dtype=nd).reshape(shape) if values else np.empty(shape, nd)
    return np.array(values, dtype=nd).reshape(shape)


def binary(op: str, dtype: DType, a, b, tensor: bool):
    if dtype.is_float:
        return float_binary(op, dtype, a, b)
    if tensor:
        return lift(lambda x, y: int_binary(op, dtype, x, y), [a, b], dtype, dtype)
    return int_binary(op, dtype, a, b)


def unary(op: str, dtype: DType, a, tensor: bool):
    if dtype.is_float:
        return float_unary(op, dtype, a)
    if tensor:
        return lift(lambda x: int_unary(op, dtype, x), [a], dtype, dtype)
    return int_unary(op, dtype, a)


def compare(pred: str, dtype: DType, a, b, tensor: bool):
    if dtype.is_float:
        return float_compare(pred, a, b)
    if tensor:
        return lift(lambda x, y: int_compare(pred, x, y), [a, b], _BOOL, dtype)
    return int_compare(pred, a, b)


def cast(value, src: DType, dst: DType, tensor: bool):
    return cast_array(value, src, dst) if tensor else cast_scalar(value, src, dst)


_BOOL = DType("bool", "bool", 8)


def scalar_of(value, dtype: DType):
    """A scalar read from memory (or an attribute) as the interpreter represents it."""
    if dtype.is_bool:
        return bool(value)
    if dtype.is_float or dtype.kind == "mx":
        return numpy_dtype(dtype).type(value)
    return int(value)


# =====================================================================================
# Domains
# =====================================================================================
@dataclass(frozen=True)
class Domain:
    """``[begin, end)`` with ``step > 0`` (D1). ``length`` is exact for any 64-bit bounds:
    ``ceil((end - begin) / step)``, or 0 when ``end <= begin`` (D3; a domain of more than
    2^63 - 1 members is refused where it is made, ``MAX_LENGTH``)."""

    begin: int
    end: int
    step: int

    @property
    def length(self) -> int:
        diff = self.end - self.begin
        return (diff - 1) // self.step + 1 if diff > 0 else 0

    def point(self, ordinal: int) -> int:
        return wrap(self.begin + ordinal * self.step, _INDEX)


_INDEX = DType("index", "index", 64)
MAX_LENGTH = 2 ** 63 - 1  # the most members a domain may have: its length is an index
