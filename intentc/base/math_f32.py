"""The math functions for ``f32`` operands (and ``f16``/``bf16``, computed as ``f32`` is), run in
plain ``f64`` arithmetic: the operand widened exactly, one ``f64`` evaluation whose relative
error stays near ``2^-45`` or below, one rounding to ``f32`` at the end.

The ``f64`` algorithms of ``math_explog``, ``math_trig`` and ``math_special`` carry about 100
bits in double-word arithmetic (Dekker's products, TwoSum): right for an ``f64`` result, about
ten times the work an ``f32`` result needs. Here every intermediate is a single double:
with 29 bits more than ``f32`` the final rounding is the correct one but for inputs whose
``f64`` value lands within about ``2^-20`` ulp of an ``f32`` halfway point, so the error is
``0.5 + 2^-20`` ulp at most where the analysis below holds (measured: docs/language.md).
The same rules as everywhere in the library: exactly rounded IEEE operations only (no FMA,
no fast-math), no branches (every case is a ``select``), a constant table read at most, so
the bits are the same on every target and in the interpreter.

Building blocks: ``elementary``'s ``f64`` ``exp`` (uncompensated; below 1 ulp of ``f64``)
and ``log`` (below 1 ulp), and ``log1p_f64(u)`` for any double ``u`` as
``log(w) + (u - (w - 1)) / w`` with ``w = 1 + u`` (the classic correction: the rounding
of ``w`` is put back to first order).

``expm1 sinh cosh sigmoid softplus pow``
    ``expm1`` is ``e^x - 1`` for
    ``|x| > 1/32`` (cancellation at most a factor 33) and its Taylor series to ``x^7``
    below; ``sinh a = (e^a - 1/e^a)/2`` for ``a = |x| >= 1/4`` and the series to
    ``a^11`` below, ``cosh a = (e^a + 1/e^a)/2``; ``sigmoid x = 1/(1 + e^-x)``;
    ``softplus x = max(x, 0) + log1p(e^-|x|)``; ``pow(x, y) = e^(y log|x|)`` (the product's
    error is at most ``150 * 2^-53`` where the result is a finite normal ``f32``) with
    ``math_explog``'s C99 special cases.
``log1p``
    ``log1p_f64``.
``rsqrt cbrt hypot``
    ``1/sqrt(x)``; ``cbrt a = e^(log a / 3)`` (``|log a| < 104``) with ``x``'s sign;
    ``sqrt(x^2 + y^2)``, the squares of ``f32`` values exact in ``f64`` and far from its
    overflow and underflow.
``asinh acosh atanh``
    ``log1p(a + a^2 / (1 + sqrt(1 + a^2)))``, ``log1p(t + sqrt(t (x + 1)))`` with
    ``t = x - 1`` (exact), ``log1p(2a / (1 - a)) / 2``; ``log(a) + ln2`` above ``2^28``.
``sin cos tan``
    One reduction for every finite ``f32`` (no second path, no threshold): ``x = M 2^s``
    with an integral ``M < 2^24``; a table indexed by the exponent holds ``T = 2^s 2/pi``
    modulo 4 in three parts (29, 29 and 53 bits from ``T``'s leading bit: ``M`` times each of
    the first two is exact); ``k`` is the integer nearest ``M T``, the fraction summed with
    TwoSum (exact but for the third product's rounding, ``2^-110`` of ``T``'s scale), and
    ``r = frac * pi/2`` in double (relative error near ``2^-52`` even for the ``f32`` closest
    to a multiple of pi/2); ``sin r`` and ``cos r`` by their Taylor series to ``r^15`` and
    ``r^16`` on ``|r| <= pi/4``; ``tan = sin/cos`` or ``-cos/sin``.
``erf erfc``
    ``a = |x|``: ``erf a = a P(a^2)`` (the Taylor series to ``a^17``, error ``2^-35``) below
    1/2; above, ``erfc a = e^(-a^2) g(a)`` (``a^2`` exact) with ``g = e^(a^2) erfc`` a
    polynomial of degree 12 in ``v``, an affine map of ``u = 1/(1 + 0.35a)``, fitted by least
    squares on Chebyshev nodes (relative error ``2^-36``; ``benchmarks/math/fit_f32.py erfc``);
    ``erf = 1 - erfc`` there (no cancellation: ``erfc(1/2) < 0.48``), ``erfc(-a) = 2 - erfc a``,
    ``erfc = 1 -+ erf`` below 1/2; ``erfc`` is ``+0`` above 10.1 (below half the least f32).
    The error is ``0.5 + 2^-11`` ulp at most.

Odd functions are computed on ``|x|`` and take ``x``'s sign bit (``sin(-x) == -sin(x)`` bit
for bit, zeros keep their sign); special values follow C99 Annex F.
"""
from __future__ import annotations

import functools
from fractions import Fraction
from math import factorial

from intentc.base import elementary
from intentc.base.math_constants import LN2, PI, PI_FIXED, PREC, to_dd
from intentc.base.math_dd import two_sum
from intentc.base.math_explog import pow_specials
from intentc.base.math_special import _erf_constants
from intentc.base.math_trig import _mod4, _pick, _round_int

INF, NAN = float("inf"), float("nan")
LN2_F = float(LN2)
PIO2_HI, PIO2_LO = to_dd(PI / 2)
SIGN = -(1 << 63)
EXPM1_T = tuple(float(Fraction(1, factorial(n))) for n in range(2, 8))  # x^2 (1/2! + x/3! + ... + x^5/7!)
SINH_T = tuple(float(Fraction(1, factorial(n))) for n in range(3, 12, 2))  # a^3 (1/3! + a^2/5! + ... + a^8/11!)
SIN_S = tuple(float(Fraction((-1) ** n, factorial(2 * n + 1))) for n in range(1, 8))  # to r^15
COS_C = tuple(float(Fraction((-1) ** n, factorial(2 * n))) for n in range(2, 9))  # r^4 .. r^16
# erfc a = e^(-a^2) g(a) on [1/2, 10.1]: g a polynomial of degree 12 in v = (u - centre) / half,
# u = 1 / (1 + 0.35 a) (relative error 2^-36; benchmarks/math/fit_f32.py erfc), then centre, 1 / half
ERFC_G = tuple(map(float.fromhex, (
    "0x1.b37ee1bd1e523p-3", "0x1.e5becc115798cp-3", "0x1.ca3b4754c845cp-4", "0x1.505c4273a88ccp-5",
    "0x1.6b0c1fbe43038p-7", "0x1.e915e71577808p-10", "0x1.b7165c73ca13fp-15", "-0x1.e1c6f57d9c940p-15",
    "-0x1.2fa34954ccf86p-17", "0x1.dbcd977dce3f4p-20", "0x1.1c64d39f0be78p-21",
    "-0x1.19f0970ddae3cp-24", "-0x1.a9bb9807deb5bp-26",
    "0x1.12527a1052897p-1", "0x1.95fd8fd8fd8fdp+1")))
ERF_CUT, ERFC_LAST = 0.5, 10.1  # the series below ERF_CUT; erfc rounds to +0 in f32 above ERFC_LAST
# the biased f64 exponents of f32 values: 2^-149 (the least subnormal) to 2^127
E_FIRST, E_LAST = 1023 - 149, 1023 + 127


def _horner(A, z, coeffs):
    acc = A.c(coeffs[-1])
    for c in reversed(coeffs[:-1]):
        acc = A.add(A.c(c), A.mul(z, acc))
    return acc


def _exp(A, x):
    return elementary._exp(A, x, compensated=False)


def _log(A, x):
    return elementary._log(A, x)


def _signed(A, y, x):
    """``y`` (its sign bit clear) with ``x``'s sign bit."""
    return A.from_bits(A.ior(A.bits(y), A.iand(A.bits(x), A.ic(SIGN))))


def log1p_f64(A, u):
    """``log(1 + u)`` for a double ``u`` (-1 gives -inf, below it NaN, +inf gives +inf)."""
    one = A.c(1.0)
    w = A.add(one, u)
    ok = A.and_(A.gt(w, A.c(0.0)), A.lt(w, A.c(INF)))
    ws = A.select(ok, w, one)
    corr = A.select(ok, A.div(A.sub(u, A.sub(ws, one)), ws), A.c(0.0))
    return A.add(_log(A, w), corr)


# ---- exponentials ----------------------------------------------------------------------
def expm1(A, x):
    small = A.add(x, A.mul(A.mul(x, x), _horner(A, x, EXPM1_T)))
    big = A.sub(_exp(A, x), A.c(1.0))
    y = A.select(A.lt(A.fabs(x), A.c(1.0 / 32)), small, big)
    return A.select(A.eq(x, A.c(0.0)), x, y)  # expm1(+-0) = +-0


def sinh(A, x):
    a = A.fabs(x)
    e = _exp(A, a)
    big = A.mul(A.c(0.5), A.sub(e, A.div(A.c(1.0), e)))
    small = A.add(a, A.mul(A.mul(a, A.mul(a, a)), _horner(A, A.mul(a, a), SINH_T)))
    y = A.select(A.lt(a, A.c(0.25)), small, big)  # NaN takes big: NaN
    return _signed(A, y, x)


def cosh(A, x):
    e = _exp(A, A.fabs(x))
    return A.mul(A.c(0.5), A.add(e, A.div(A.c(1.0), e)))


def sigmoid(A, x):
    return A.div(A.c(1.0), A.add(A.c(1.0), _exp(A, A.neg(x))))


def softplus(A, x):
    tail = log1p_f64(A, _exp(A, A.neg(A.fabs(x))))
    return A.add(A.select(A.gt(x, A.c(0.0)), x, A.c(0.0)), tail)  # NaN: NaN from the tail


def pow_(A, x, y):
    a = A.fabs(x)
    ok = A.and_(A.gt(a, A.c(0.0)), A.lt(a, A.c(INF)))
    lg = _log(A, A.select(ok, a, A.c(1.0)))
    yf = A.select(A.lt(A.fabs(y), A.c(INF)), y, A.c(0.0))  # |y| < 2^128: the product is finite
    return pow_specials(A, x, y, a, _exp(A, A.mul(yf, lg)))


# ---- logarithms ------------------------------------------------------------------------
def log1p(A, x):
    return A.select(A.eq(x, A.c(0.0)), x, log1p_f64(A, x))  # log1p(+-0) = +-0


# ---- roots -----------------------------------------------------------------------------
def rsqrt(A, x):
    return A.div(A.c(1.0), A.sqrt(x))  # +0: +inf, -0: -inf, x < 0: NaN, +inf: 0


def cbrt(A, x):
    a = A.fabs(x)
    y = _exp(A, A.mul(_log(A, a), A.c(1.0 / 3)))  # 0: e^-inf = 0, inf: inf, NaN: NaN
    return _signed(A, y, x)


def hypot(A, x, y):
    r = A.sqrt(A.add(A.mul(x, x), A.mul(y, y)))
    inf = A.c(INF)
    return A.select(A.or_(A.eq(A.fabs(x), inf), A.eq(A.fabs(y), inf)), inf, r)  # hypot(inf, NaN) = inf


# ---- inverse hyperbolic ----------------------------------------------------------------
def _large_log(A, a):
    """``log(2a)`` for ``a > 2^28``, where ``a + sqrt(a^2 +- 1)`` is ``2a`` to ``2^-56``."""
    return A.add(_log(A, a), A.c(LN2_F))


def asinh(A, x):
    a = A.fabs(x)
    aa = A.mul(a, a)
    v = A.add(a, A.div(aa, A.add(A.c(1.0), A.sqrt(A.add(A.c(1.0), aa)))))
    y = A.select(A.gt(a, A.c(2.0 ** 28)), _large_log(A, a), log1p_f64(A, v))
    return _signed(A, y, x)


def acosh(A, x):
    t = A.sub(x, A.c(1.0))
    v = A.add(t, A.sqrt(A.mul(t, A.add(x, A.c(1.0)))))
    y = A.select(A.gt(x, A.c(2.0 ** 28)), _large_log(A, x), log1p_f64(A, v))
    return A.select(A.lt(x, A.c(1.0)), A.c(NAN), y)  # NaN stays NaN


def atanh(A, x):
    a = A.fabs(x)
    y = A.mul(A.c(0.5), log1p_f64(A, A.div(A.add(a, a), A.sub(A.c(1.0), a))))  # 1: inf, above: NaN
    return _signed(A, y, x)


# ---- sin, cos, tan -----------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _reduction_table() -> tuple:
    """Three doubles per biased f64 exponent E of an f32 value: ``T = 2^s 2/pi mod 4``
    (``s = E - 1046``, so that ``x = M 2^s`` with an integral ``M < 2^24``) as 29 bits from its
    leading bit, the next 29, and the rest rounded to a double."""
    width = 420
    values = []
    for e in range(E_FIRST, E_LAST + 1):
        s = e - 1046
        need = s + width + 64  # 2/pi * 2^need, then 2^s * 2/pi * 2^width
        value = ((2 << (PREC + need)) // PI_FIXED) >> 64
        t = value & ((4 << width) - 1)  # modulo 4
        lead = t.bit_length()
        w0 = t >> (lead - 29)
        rest = t - (w0 << (lead - 29))
        w1 = rest >> (lead - 58)
        rest -= w1 << (lead - 58)
        scale = Fraction(1, 1 << width)
        values += [float(Fraction(w0 << (lead - 29)) * scale), float(Fraction(w1 << (lead - 58)) * scale),
                   float(Fraction(rest) * scale)]
    return tuple(values)


def _reduce(A, a):
    """``q`` (0..3, a float) and ``r`` with ``a = (4n + q) pi/2 + r``, ``|r| <= pi/4 (1 + 2^-50)``,
    for finite ``a >= 0`` (other values give garbage that the callers select away)."""
    bits = A.bits(a)
    e = A.ashr(bits, 52)
    index = A.isub(e, A.ic(E_FIRST))
    index = A.select(A.ilt(index, A.ic(0)), A.ic(0), index)  # +0 (selected away by the callers)
    index = A.select(A.ilt(A.ic(E_LAST - E_FIRST), index), A.ic(E_LAST - E_FIRST), index)  # inf, NaN
    index = A.iadd(A.iadd(index, index), index)
    table = _reduction_table()
    w = [A.table("f32_two_over_pi", table, A.iadd(index, A.ic(j))) for j in range(3)]
    m = A.from_bits(A.ior(A.iand(bits, A.ic((1 << 52) - 1)), A.ic((1023 + 23) << 52)))  # M, in [2^23, 2^24)
    hi, mid, lo = A.mul(m, w[0]), A.mul(m, w[1]), A.mul(m, w[2])  # the first two exact
    k = _round_int(A, A.add(hi, mid))
    s, err = two_sum(A, A.sub(hi, k), mid)  # hi - k exact (|hi - k| <= 1/2 + 2^-29)
    tail = A.add(err, lo)
    r = A.add(A.mul(s, A.c(PIO2_HI)), A.add(A.mul(s, A.c(PIO2_LO)), A.mul(tail, A.c(PIO2_HI))))
    return _mod4(A, k), r


def _sin_cos(A, r):
    z = A.mul(r, r)
    sin = A.add(r, A.mul(A.mul(r, z), _horner(A, z, SIN_S)))
    cos = A.add(A.sub(A.c(1.0), A.mul(z, A.c(0.5))), A.mul(A.mul(z, z), _horner(A, z, COS_C)))
    return sin, cos


def _finite(A, x, y):
    return A.select(A.lt(A.fabs(x), A.c(INF)), y, A.c(NAN))  # inf and NaN give NaN


def sin(A, x):
    a = A.fabs(x)
    q, r = _reduce(A, a)
    s, c = _sin_cos(A, r)
    y = _pick(A, q, (s, c, A.neg(s), A.neg(c)))
    y = A.from_bits(A.ixor(A.bits(y), A.iand(A.bits(x), A.ic(SIGN))))  # sin(-x) = -sin(x)
    y = A.select(A.eq(a, A.c(0.0)), x, y)  # sin(+-0) = +-0
    return _finite(A, x, y)


def cos(A, x):
    a = A.fabs(x)
    q, r = _reduce(A, a)
    s, c = _sin_cos(A, r)
    y = _pick(A, q, (c, A.neg(s), A.neg(c), s))
    return _finite(A, x, A.select(A.eq(a, A.c(0.0)), A.c(1.0), y))


def tan(A, x):
    a = A.fabs(x)
    q, r = _reduce(A, a)
    s, c = _sin_cos(A, r)
    odd = A.or_(A.eq(q, A.c(1.0)), A.eq(q, A.c(3.0)))
    t = A.div(A.select(odd, c, s), A.select(odd, s, c))
    t = A.select(odd, A.neg(t), t)
    y = A.from_bits(A.ixor(A.bits(t), A.iand(A.bits(x), A.ic(SIGN))))  # tan(-x) = -tan(x)
    y = A.select(A.eq(a, A.c(0.0)), x, y)
    return _finite(A, x, y)


# ---- erf, erfc -----------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _erf_series() -> tuple:
    """erf a = a (c0 + c1 a^2 + ... + c8 a^16), the Taylor series (error 2^-35 on |a| < 1/2)."""
    c_dd, series, _ = _erf_constants()
    return (c_dd[0],) + series[:8]


def _erf_parts(A, x):
    """``a = |x|``, ``erf a`` for ``a < 1/2`` and ``erfc a`` for ``a >= 1/2`` (garbage elsewhere,
    selected away), and ``a < 1/2``."""
    a = A.fabs(x)
    z = A.mul(a, a)  # exact: a is an f32 value
    small = A.mul(a, _horner(A, z, _erf_series()))
    ac = A.select(A.lt(a, A.c(ERFC_LAST)), a, A.c(ERFC_LAST))  # inf and NaN (selected away) too
    u = A.div(A.c(1.0), A.add(A.c(1.0), A.mul(ac, A.c(0.35))))
    v = A.mul(A.sub(u, A.c(ERFC_G[-2])), A.c(ERFC_G[-1]))
    g = _horner(A, v, ERFC_G[:-2])
    zc = A.mul(ac, ac)
    large = A.mul(_exp(A, A.neg(zc)), g)
    large = A.select(A.lt(a, A.c(ERFC_LAST)), large, A.c(0.0))
    return a, small, large, A.lt(a, A.c(ERF_CUT))


def erf(A, x):
    a, small, large, is_small = _erf_parts(A, x)
    y = A.select(is_small, small, A.sub(A.c(1.0), large))
    y = A.select(A.uno(x, x), x, y)
    return _signed(A, y, x)  # odd bit for bit, erf(+-0) = +-0


def erfc(A, x):
    a, small, large, is_small = _erf_parts(A, x)
    neg = A.lt(x, A.c(0.0))
    one, two = A.c(1.0), A.c(2.0)
    y_small = A.select(neg, A.add(one, small), A.sub(one, small))  # 1 -+ erf a
    y_large = A.select(neg, A.sub(two, large), large)
    y = A.select(is_small, y_small, y_large)
    return A.select(A.uno(x, x), x, y)


ALGORITHMS = {
    "expm1": expm1, "sinh": sinh, "cosh": cosh, "sigmoid": sigmoid, "softplus": softplus,
    "pow": pow_, "log1p": log1p, "rsqrt": rsqrt, "cbrt": cbrt, "hypot": hypot,
    "asinh": asinh, "acosh": acosh, "atanh": atanh, "sin": sin, "cos": cos, "tan": tan,
    "erf": erf, "erfc": erfc,
}
