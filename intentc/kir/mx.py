"""The OCP Microscaling (MX) element and scale types: formats, storage and conversions.

This module is the definition of what an MX code means and how an ``f32`` becomes one;
the interpreter runs it, the compiled code (``codegen/mx_llvm.py``) implements the same
rules with integer and float arithmetic, and the tests check both against ``ml_dtypes``.

Formats (sign, exponent and mantissa bits; the value of a code with exponent field ``e``
and mantissa field ``m`` is ``(-1)^s * 2^(e - bias) * (1 + m / 2^M)`` for ``e > 0`` and
``(-1)^s * 2^(1 - bias) * (m / 2^M)`` for ``e == 0``, a subnormal or zero):

==========  =====  ====  =========================================  ================
dtype       E, M   bias  special codes                              largest finite
==========  =====  ====  =========================================  ================
f8e4m3      4, 3   7     no infinities; NaN = S.1111.111            448
f8e5m2      5, 2   15    IEEE-like: S.11111.00 = inf, S.11111.xx NaN 57344
f6e2m3      2, 3   1     none (every code is a number)              7.5
f6e3m2      3, 2   3     none                                       28
f4e2m1      2, 1   1     none                                       6
e8m0        8, 0   127   no sign, no zero: 2^(e - 127); 0xFF = NaN   2^127
==========  =====  ====  =========================================  ================

Storage (in memory, at the C ABI and in the compiled code)
    ``f8e4m3``, ``f8e5m2`` and ``e8m0``: one code per byte. ``f6e2m3`` and ``f6e3m2``:
    one code per byte, in the low six bits (the high two bits are ignored when read and
    written as zero). ``f4e2m1``: packed two per byte, little bit-endian as DLPack
    specifies: element ``i`` of the storage order (the element offset computed from the
    strides, in elements) is in byte ``i >> 1``, the low nibble for even ``i`` and the
    high nibble for odd ``i``. In NumPy (the interpreter, ``intentc.load``) every MX
    tensor is an ``ml_dtypes`` array with one code per byte; the loader packs ``f4e2m1``
    arrays for the call.

Conversions
    MX -> f32 is exact (every code is an f32 value; e8m0 ``0x00`` is the f32 subnormal
    2^-127). f32 -> an element type rounds to nearest, ties to even (subnormals
    included); a rounded magnitude beyond the largest finite value becomes infinity in
    ``f8e5m2`` (the IEEE rule) and saturates to +-max in the formats without infinities
    (``f8e4m3``, ``f6e2m3``, ``f6e3m2``, ``f4e2m1``: the MX specification's clamping),
    infinities likewise. NaN becomes NaN (``f8e4m3``: S.1111.111, ``f8e5m2``:
    S.11111.10) and, in the formats without NaN, a zero with the NaN's sign bit. f32 ->
    ``e8m0`` gives the nearest power of two ``2^k``, ``-127 <= k <= 127``, a tie
    (``1.5 * 2^k``) going to the even code; values below 2^-127 and above 2^127 (+inf
    included) saturate to the smallest and largest scale; NaN, zeros and negative
    values, which have no scale, become NaN (``0xFF``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class MXFormat:
    name: str
    exp: int  # exponent bits
    man: int  # mantissa bits
    bias: int
    signed: bool = True
    inf: bool = False  # an IEEE-like all-ones exponent: infinity and NaNs
    nan: int | None = None  # the NaN code (without the sign) when the format has NaN
    dlpack: int = 0  # DLPack type code (dlpack.h, DLDataTypeCode)
    ml_dtypes: str = ""  # the ml_dtypes type holding one code per byte

    @property
    def bits(self) -> int:
        return self.exp + self.man + (1 if self.signed else 0)

    @property
    def mask(self) -> int:
        return (1 << self.bits) - 1

    @property
    def sign_bit(self) -> int:
        return 1 << (self.exp + self.man) if self.signed else 0

    @property
    def max_code(self) -> int:
        """The code (without sign) of the largest finite value."""
        if self.inf:
            return (((1 << self.exp) - 2) << self.man) | ((1 << self.man) - 1)
        if self.nan is not None:
            return self.nan - 1
        return (1 << (self.exp + self.man)) - 1

    @property
    def is_scale(self) -> bool:
        return not self.signed

    @property
    def packed(self) -> bool:
        """Two codes per byte in memory (f4e2m1)."""
        return self.bits == 4


FORMATS: dict[str, MXFormat] = {
    "f8e4m3": MXFormat("f8e4m3", 4, 3, 7, nan=0x7F, dlpack=10, ml_dtypes="float8_e4m3fn"),
    "f8e5m2": MXFormat("f8e5m2", 5, 2, 15, inf=True, nan=0x7E, dlpack=12, ml_dtypes="float8_e5m2"),
    "f6e2m3": MXFormat("f6e2m3", 2, 3, 1, dlpack=15, ml_dtypes="float6_e2m3fn"),
    "f6e3m2": MXFormat("f6e3m2", 3, 2, 3, dlpack=16, ml_dtypes="float6_e3m2fn"),
    "f4e2m1": MXFormat("f4e2m1", 2, 1, 1, dlpack=17, ml_dtypes="float4_e2m1fn"),
    "e8m0": MXFormat("e8m0", 8, 0, 127, signed=False, nan=0xFF, dlpack=14, ml_dtypes="float8_e8m0fnu"),
}
ELEMENT_TYPES = tuple(n for n, f in FORMATS.items() if not f.is_scale)
SCALE_TYPES = ("e8m0",)
BY_ML_DTYPES = {f.ml_dtypes: f for f in FORMATS.values()}


def fmt(dtype) -> MXFormat:
    """The format of an MX dtype (a DType or its name)."""
    return FORMATS[getattr(dtype, "name", dtype)]


def numpy_dtype(name: str) -> np.dtype:
    """The ml_dtypes dtype that holds codes of ``name``, one per byte."""
    try:
        import ml_dtypes
    except ImportError:  # pragma: no cover - depends on the environment
        raise NotImplementedError(f"{name} tensors need the ml_dtypes package (pip install ml_dtypes)") from None
    return np.dtype(getattr(ml_dtypes, FORMATS[name].ml_dtypes))


def codes(array) -> np.ndarray:
    """The codes of an MX array (any one-byte dtype) as uint8, masked to the format's bits
    when the array's dtype names a format (f6: the high two bits are ignored)."""
    array = np.asarray(array)
    raw = array.view(np.uint8) if array.dtype.itemsize == 1 else array.astype(np.uint8)
    known = BY_ML_DTYPES.get(array.dtype.name)
    return raw & known.mask if known is not None else raw


# ---- decoding ----------------------------------------------------------------------------------------
def decode(code, name: str) -> np.ndarray:
    """The f32 values of codes (an int or an array of ints) of format ``name``. Exact."""
    f = FORMATS[name]
    c = np.asarray(code).astype(np.int64) & f.mask
    if f.is_scale:  # 2^(e - 127); 0xFF is NaN
        with np.errstate(all="ignore"):
            value = np.ldexp(np.float64(1.0), (c - 127).astype(np.int64))
        return np.where(c == f.nan, np.float64("nan"), value).astype(np.float32)
    sign = (c >> (f.exp + f.man)) & 1
    e = (c >> f.man) & ((1 << f.exp) - 1)
    m = c & ((1 << f.man) - 1)
    magnitude = np.where(e == 0, np.ldexp(m.astype(np.float64), 1 - f.bias - f.man),
                         np.ldexp(((1 << f.man) + m).astype(np.float64), (e - f.bias - f.man).astype(np.int64)))
    if f.inf:
        top = e == (1 << f.exp) - 1
        magnitude = np.where(top & (m == 0), np.inf, np.where(top, np.nan, magnitude))
    elif f.nan is not None:
        magnitude = np.where((c & ~f.sign_bit) == f.nan, np.nan, magnitude)
    return np.where(sign == 1, -magnitude, magnitude).astype(np.float32)


# ---- encoding ----------------------------------------------------------------------------------------
def _round_even(x: np.ndarray) -> np.ndarray:
    return np.round(x)  # NumPy rounds halves to even


def encode(value, name: str) -> np.ndarray:
    """The codes (uint8) of f32 values converted to format ``name`` (module docstring rules)."""
    f = FORMATS[name]
    x = np.asarray(value, dtype=np.float32).astype(np.float64)  # exact
    if f.is_scale:
        return _encode_scale(x)
    negative = np.signbit(x)
    a = np.abs(x)
    nan = np.isnan(x)
    a = np.where(nan, 0.0, a)
    # The quantum at a's binade (at least the subnormal quantum), and the rounded magnitude.
    min_exp = 1 - f.bias  # the exponent of the smallest normal value
    _, binade = np.frexp(a)  # a = mant * 2^binade with 0.5 <= mant < 1, so floor(log2 a) = binade - 1
    exponent = np.maximum(binade - 1, min_exp)
    quantum = np.ldexp(1.0, (exponent - f.man).astype(np.int64))
    with np.errstate(over="ignore", invalid="ignore"):
        steps = np.where(np.isinf(a), np.inf, _round_even(a / quantum))
        r = steps * quantum
    largest = float(decode(f.max_code, name))
    over = r > largest
    # Codes of the in-range magnitudes.
    r_ok = np.where(over, 0.0, r)
    _, rb = np.frexp(r_ok)
    normal = r_ok >= np.ldexp(1.0, min_exp)
    e_field = np.where(normal, rb - 1 + f.bias, 0)
    m_field = np.where(normal, np.ldexp(r_ok, (-(rb - 1) + f.man).astype(np.int64)) - (1 << f.man),
                       np.ldexp(r_ok, (f.bias - 1 + f.man)))
    code = (e_field.astype(np.int64) << f.man) | m_field.astype(np.int64)
    if f.inf:
        overflow_code = ((1 << f.exp) - 1) << f.man
    else:
        overflow_code = f.max_code
    code = np.where(over, overflow_code, code)
    if f.nan is not None:
        code = np.where(nan, f.nan, code)
    else:
        code = np.where(nan, 0, code)
    code = code | np.where(negative, f.sign_bit, 0)
    return code.astype(np.uint8)


def _encode_scale(x: np.ndarray) -> np.ndarray:
    """f32 -> e8m0: the nearest power of two, ties to the even code, saturating; NaN for
    NaN, zeros and negative values."""
    with np.errstate(all="ignore"):
        bad = np.isnan(x) | (x <= 0)
        a = np.where(bad, 1.0, x)
        mant, binade = np.frexp(a)  # a = mant * 2^binade, 0.5 <= mant < 1: a in [2^k, 2^(k+1)), k = binade - 1
        k = binade - 1
        frac = mant * 2.0  # in [1, 2)
        up = (frac > 1.5) | ((frac == 1.5) & (((k + 127) & 1) == 1))
        k = np.where(up, k + 1, k)
        k = np.where(np.isinf(a), 127, k)
        code = np.clip(k + 127, 0, 254)
    return np.where(bad, 0xFF, code).astype(np.uint8)


# ---- storage -------------------------------------------------------------------------------------------
def scalar_code(value, name: str) -> int:
    """The code a scalar argument passes: an ml_dtypes scalar of the format as is, any other
    number converted from f32."""
    dtype = getattr(value, "dtype", None)
    if dtype is not None and dtype.name == FORMATS[name].ml_dtypes:
        return int(np.asarray(value).reshape(1).view(np.uint8)[0])
    return int(encode(np.float32(value), name))


def to_numpy(codes_array: np.ndarray, name: str) -> np.ndarray:
    """An ml_dtypes array holding these codes (one per byte)."""
    return np.ascontiguousarray(np.asarray(codes_array, dtype=np.uint8)).view(numpy_dtype(name))


def pack_f4(array) -> np.ndarray:
    """The packed bytes of an f4e2m1 array in row-major order: element 2j in the low nibble
    of byte j, element 2j + 1 in the high nibble (an odd count leaves the last high nibble 0)."""
    flat = codes(np.ascontiguousarray(array)).reshape(-1) & 0xF
    if flat.size % 2:
        flat = np.concatenate([flat, np.zeros(1, np.uint8)])
    return (flat[0::2] | (flat[1::2] << 4)).astype(np.uint8)


def unpack_f4(packed: np.ndarray, count: int) -> np.ndarray:
    """The first ``count`` f4e2m1 codes (uint8) of packed bytes."""
    packed = np.asarray(packed, dtype=np.uint8).reshape(-1)
    out = np.empty(packed.size * 2, np.uint8)
    out[0::2] = packed & 0xF
    out[1::2] = packed >> 4
    return out[:count]


# ---- I.cast in the interpreter -----------------------------------------------------------------------
def cast(value, src, dst):
    """``I.cast`` with an MX side: ``value`` is an ml_dtypes scalar/array (MX source) or an
    f32 scalar/array; the result is an ml_dtypes scalar/array (MX target) or f32/f64.

    Between a code and an integer (only lowering builds these casts, for its tables of code
    values) the cast moves the code's bits, as the compiled code does (``codegen/mx_llvm.py``):
    an integer's low byte becomes the code, a code zero-extends to the integer."""
    scalar = np.ndim(value) == 0
    if src.kind in _INTEGER and dst.kind == "mx":  # the lowering's code tables: a code from its bits
        out = to_numpy(np.atleast_1d(np.asarray(value).astype(np.int64) & 0xFF), dst.name)
        return out[0] if scalar else out.reshape(np.shape(value))
    if src.kind == "mx" and dst.kind in _INTEGER:  # a code's bits, zero-extended
        bits = codes(np.atleast_1d(value)).astype(np.int64)
        return int(bits[0]) if scalar else bits.reshape(np.shape(value)).astype(_numpy_int(dst))
    if src.kind == "mx":
        values = decode(codes(value), src.name)
        if dst.kind == "mx":
            return cast(values, _F32, dst) if not scalar else cast(np.float32(values), _F32, dst)
        result = values.astype(np.float64) if dst.name == "f64" else values
        return result[()] if scalar else result
    out = to_numpy(np.atleast_1d(encode(value, dst.name)), dst.name)
    return out[0] if scalar else out.reshape(np.shape(value))


_INTEGER = ("int", "uint", "index")


def _numpy_int(dtype) -> np.dtype:
    return np.dtype(("int" if dtype.kind != "uint" else "uint") + str(dtype.bits))


class _F32Type:
    kind, name = "float", "f32"


_F32 = _F32Type()
