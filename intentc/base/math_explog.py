"""The exponential and logarithm families in f64, branch-free, through double-word cores:
``exp2 expm1 log2 log10 log1p sinh cosh sigmoid softplus pow``.

Two cores carry about 100 bits (``math_dd``), so every function built on them rounds once,
at the end, a value whose relative error is far below ``2^-53``:

``exp_core(x_hi + x_lo) -> k, p``
    ``e^x = 2^k (1 + p)``: ``k = round(x / ln 2)`` (add-and-subtract of ``1.5 * 2^52``),
    ``r = x - k ln 2`` with ln 2 in three parts (the first two of 42 bits, so ``k`` times
    them is exact), ``p = e^r - 1 = r + r^2/2 + r^3 Q(r)`` on ``|r| <= ln2/2``: ``r`` and
    ``r^2/2`` in dd, ``Q`` the Taylor series to ``r^12/15!`` in double (its rounding is
    below ``2^-60`` of the result).
``log_core(x) -> k, log(m)``
    ``x = 2^k m``, ``m`` in ``[sqrt(1/2), sqrt 2)`` from the bits (subnormals scaled first),
    ``log m = 2 atanh(s)``, ``s = (m - 1) / (m + 1)`` in dd (its remainder computed
    exactly), ``2s + s^3 (2/3 + 2z/5 + z^2 T(z))``, ``z = s^2``, all in dd but ``T`` (the
    Taylor series, 10 terms, in double): the absolute error stays near ``2^-75``, which
    ``lgamma`` and ``pow`` multiply.

The results are assembled in dd and rounded once; the scaling by ``2^k`` is done as two
multiplications of which only the last rounds (``_scale``), so overflow gives inf and
underflow the correctly rounded subnormal. Special values follow C99 Annex F (``pow``'s
table included); the zeros of odd functions keep their sign.
"""
from __future__ import annotations

from fractions import Fraction
from math import factorial

from intentc.base import elementary
from intentc.base.math_constants import LN2, LN10, chop, to_dd
from intentc.base.math_dd import (dd_add, dd_add_d, dd_div, dd_mul, dd_mul_d, dd_sq, fast_two_sum, horner,
                                  two_prod, two_sum)

INF, NAN = float("inf"), float("nan")
LN2_1 = chop(LN2, 42)
LN2_2 = chop(LN2 - Fraction(LN2_1), 42)
LN2_3 = float(LN2 - Fraction(LN2_1) - Fraction(LN2_2))
LN2_DD = to_dd(LN2)
INV_LN2_DD = to_dd(1 / LN2)
INV_LN10_DD = to_dd(1 / LN10)
LOG2E = float(1 / LN2)
MAGIC = 1.5 * 2.0 ** 52
EXP_Q = tuple(float(Fraction(1, factorial(n))) for n in range(3, 16))  # r^3 (1/3! + r/4! + ... + r^12/15!)
TWO_THIRDS = to_dd(Fraction(2, 3))
TWO_FIFTHS = to_dd(Fraction(2, 5))
LOG_T = tuple(float(Fraction(2, 2 * n + 1)) for n in range(2, 13))  # 2/5 + 2z/7 + ... + 2z^10/25


def _int(A, kf):
    """The integer of an integral float ``|kf| < 2^51`` (from the bits, no conversion
    instruction: a NaN gives garbage, never poison)."""
    magic = A.c(MAGIC)
    return A.isub(A.bits(A.add(kf, magic)), A.bits(magic))


def _pow2(A, kf):
    """``2^k`` for an integral float ``k`` in ``[-1022, 1023]``."""
    return A.from_bits(A.shl(A.iadd(_int(A, kf), A.ic(1023)), 52))


def _scale(A, v, kf):
    """``v * 2^k`` rounded once, for ``v`` in ``[1/4, 4]`` and an integral ``k``: overflow to inf,
    underflow to the correctly rounded subnormal or 0."""
    kf = A.select(A.lt(kf, A.c(-1078.0)), A.c(-1078.0), kf)
    kf = A.select(A.gt(kf, A.c(1026.0)), A.c(1026.0), kf)
    below = A.lt(kf, A.c(0.0))
    k = _int(A, kf)
    bias = A.select(below, A.ic(1023 + 60), A.ic(1023 - 2))
    first = A.from_bits(A.shl(A.iadd(k, bias), 52))
    return A.mul(A.mul(v, first), A.select(below, A.c(2.0 ** -60), A.c(4.0)))


def exp_core(A, xh, xl, lo: float = -746.0, hi: float = 710.0):
    """``k`` and ``p`` (dd) with ``e^(xh + xl) = 2^k (1 + p)``; ``xh`` is clamped to ``[lo, hi]``."""
    xh = A.select(A.lt(xh, A.c(lo)), A.c(lo), xh)
    xh = A.select(A.gt(xh, A.c(hi)), A.c(hi), xh)
    magic = A.c(MAGIC)
    kf = A.sub(A.add(A.mul(xh, A.c(LOG2E)), magic), magic)
    r1 = A.sub(xh, A.mul(kf, A.c(LN2_1)))  # exact: k ln2_1 is exact, and near x (Sterbenz)
    s, e = two_sum(A, r1, A.neg(A.mul(kf, A.c(LN2_2))))
    e = A.add(e, A.sub(xl, A.mul(kf, A.c(LN2_3))))
    r = fast_two_sum(A, s, e)
    h = dd_sq(A, r)
    half = (A.mul(h[0], A.c(0.5)), A.mul(h[1], A.c(0.5)))
    r3 = A.mul(A.mul(r[0], r[0]), r[0])
    tail = A.mul(r3, horner(A, r[0], EXP_Q))
    p = dd_add(A, r, dd_add_d(A, half, tail))
    return kf, p


def exp_value(A, kf, p):
    """``2^k (1 + p)`` rounded once."""
    s, e = fast_two_sum(A, A.c(1.0), p[0])
    return _scale(A, A.add(s, A.add(e, p[1])), kf)


def log_core(A, x):
    """``k`` (a float) and ``log m`` (dd) with ``x = 2^k m`` for a positive finite ``x``."""
    sub = A.lt(x, A.c(2.0 ** -1022))
    xs = A.select(sub, A.mul(x, A.c(2.0 ** 54)), x)
    bits = A.bits(xs)
    k = A.ashr(A.isub(bits, A.ic(0x3FE6A09E667F3BCD)), 52)
    m = A.from_bits(A.isub(bits, A.shl(k, 52)))
    kf = A.sub(A.itof(k), A.select(sub, A.c(54.0), A.c(0.0)))
    f = A.sub(m, A.c(1.0))  # exact
    two = A.c(2.0)
    uh, ul = fast_two_sum(A, two, f)  # m + 1 exactly
    s = A.div(f, uh)
    p, e = two_prod(A, s, uh)
    rem = A.sub(A.sub(A.sub(f, p), e), A.mul(s, ul))
    sl = A.div(rem, uh)
    sd = fast_two_sum(A, s, sl)
    z = dd_sq(A, sd)
    s3 = dd_mul(A, z, sd)
    # 2/3 + 2z/5 in dd, the rest (below 2.5e-4) in double
    inner = dd_add(A, (A.c(TWO_THIRDS[0]), A.c(TWO_THIRDS[1])), dd_mul(A, z, (A.c(TWO_FIFTHS[0]), A.c(TWO_FIFTHS[1]))))
    inner = dd_add_d(A, inner, A.mul(A.mul(z[0], z[0]), horner(A, z[0], LOG_T[1:])))
    tail = dd_mul(A, s3, inner)
    twice = (A.add(sd[0], sd[0]), A.add(sd[1], sd[1]))
    return kf, dd_add(A, twice, tail)


def log_dd(A, x):
    """``log x`` as dd for a positive finite ``x``."""
    kf, lm = log_core(A, x)
    kl = fast_two_sum(A, A.mul(kf, A.c(LN2_1)), A.mul(kf, A.c(LN2_2)))  # both exact
    kl = dd_add_d(A, kl, A.mul(kf, A.c(LN2_3)))
    return dd_add(A, kl, lm)


def _round(A, d):
    return A.add(d[0], d[1])


def _log_specials(A, x, y):
    """C99's log family at the edges: NaN below 0, -inf at +-0, +inf at +inf, NaN for NaN."""
    zero = A.c(0.0)
    y = A.select(A.lt(x, zero), A.c(NAN), y)
    y = A.select(A.eq(x, zero), A.c(-INF), y)
    return A.select(A.uge(x, A.c(INF)), x, y)


def _positive(A, x):
    """``x`` where it is positive and finite, else 1 (the special values are selected later)."""
    ok = A.and_(A.gt(x, A.c(0.0)), A.lt(x, A.c(INF)))
    return A.select(ok, x, A.c(1.0))


def log2(A, x):
    kf, lm = log_core(A, _positive(A, x))
    return _log_specials(A, x, _round(A, dd_add_d(A, dd_mul(A, lm, (A.c(INV_LN2_DD[0]), A.c(INV_LN2_DD[1]))), kf)))


def log10(A, x):
    y = dd_mul(A, log_dd(A, _positive(A, x)), (A.c(INV_LN10_DD[0]), A.c(INV_LN10_DD[1])))
    return _log_specials(A, x, _round(A, y))


def log1p(A, x):
    s, e = two_sum(A, x, A.c(1.0))  # 1 + x exactly
    ok = A.and_(A.gt(s, A.c(0.0)), A.lt(s, A.c(INF)))
    sp = A.select(ok, s, A.c(1.0))
    ep = A.select(ok, e, A.c(0.0))
    y = dd_add_d(A, log_dd(A, sp), A.div(ep, sp))  # log(s + e) = log s + e/s (|e/s| < 2^-53)
    y = _log_specials(A, s, _round(A, y))
    y = A.select(A.lt(x, A.c(-1.0)), A.c(NAN), y)
    return A.select(A.eq(x, A.c(0.0)), x, y)  # log1p(+-0) = +-0


def exp2(A, x):
    c = A.select(A.lt(x, A.c(-1100.0)), A.c(-1100.0), A.select(A.gt(x, A.c(1100.0)), A.c(1100.0), x))
    th, tl = two_prod(A, c, A.c(LN2_DD[0]))
    tl = A.add(tl, A.mul(c, A.c(LN2_DD[1])))
    kf, p = exp_core(A, th, tl)
    return exp_value(A, kf, p)


def _expm1_dd(A, kf, p):
    """``2^k (1 + p) - 1`` = ``2^k (p + 1 - 2^-k)`` as dd times ``2^k`` (for ``k`` in [-60, 1023])."""
    kc = A.select(A.gt(kf, A.c(1000.0)), A.c(1000.0), kf)
    c = two_sum(A, A.c(1.0), A.neg(_pow2(A, A.neg(kc))))
    return dd_add(A, p, c)


def expm1(A, x):
    xc = A.select(A.lt(x, A.c(-40.0)), A.c(-40.0), x)
    kf, p = exp_core(A, xc, A.c(0.0))
    m = _expm1_dd(A, kf, p)
    v = _round(A, m)
    y = A.select(A.eq(kf, A.c(0.0)), v, _scale(A, v, kf))
    return A.select(A.eq(x, A.c(0.0)), x, y)  # expm1(+-0) = +-0; NaN passes through the cores


def _sign_of(A, y, x):
    """``y`` (non-negative) with the sign of ``x``."""
    sign = A.iand(A.bits(x), A.ic(-(1 << 63)))
    return A.from_bits(A.ior(A.bits(y), sign))


def _hyperbolic(A, x, odd: bool):
    a = A.fabs(x)
    kf, p = exp_core(A, a, A.c(0.0), lo=0.0, hi=711.0)
    half = A.c(0.5)
    # moderate a (k <= 30): both exponentials in dd
    kc = A.select(A.gt(kf, A.c(40.0)), A.c(40.0), kf)
    scale = _pow2(A, kc)
    if odd:
        m = _expm1_dd(A, kc, p)  # e^a - 1 (over 2^k)
        em1 = (A.mul(m[0], scale), A.mul(m[1], scale))
        q = dd_div(A, em1, dd_add_d(A, em1, A.c(1.0)))  # 1 - e^-a
        small = _round(A, dd_add(A, em1, q))
    else:
        e1 = dd_add_d(A, p, A.c(1.0))
        e = (A.mul(e1[0], scale), A.mul(e1[1], scale))
        inv = dd_div(A, (A.c(1.0), A.c(0.0)), e)
        small = _round(A, dd_add(A, e, inv))
    small = A.mul(small, half)
    s, e = fast_two_sum(A, A.c(1.0), p[0])
    big = _scale(A, A.add(s, A.add(e, p[1])), A.sub(kf, A.c(1.0)))  # e^a / 2; e^-a is below 2^-80 of it
    y = A.select(A.gt(kf, A.c(30.0)), big, small)
    y = A.select(A.uno(x, x), x, y)
    return _sign_of(A, y, x) if odd else y


def sinh(A, x):
    return _hyperbolic(A, x, odd=True)


def cosh(A, x):
    return _hyperbolic(A, x, odd=False)


def sigmoid(A, x):
    a = A.fabs(x)
    kf, p = exp_core(A, A.neg(a), A.c(0.0))  # e^-a = 2^k (1 + p), k <= 0
    kc = A.select(A.lt(kf, A.c(-1000.0)), A.c(-1000.0), kf)
    one = A.c(1.0)
    e1 = dd_add_d(A, p, one)
    scale = _pow2(A, kc)
    e = (A.mul(e1[0], scale), A.mul(e1[1], scale))  # e^-a (negligible once k < -60)
    pos = dd_div(A, (one, A.c(0.0)), dd_add_d(A, e, one))  # 1 / (1 + e^-a)
    q = dd_mul(A, e1, pos)  # e^-a / (1 + e^-a) over 2^k
    neg = _scale(A, _round(A, q), kf)
    y = A.select(A.lt(x, A.c(0.0)), neg, _round(A, pos))
    return A.select(A.uno(x, x), x, y)


def softplus(A, x):
    a = A.fabs(x)
    kf, p = exp_core(A, A.neg(A.select(A.gt(a, A.c(40.0)), A.c(40.0), a)), A.c(0.0))
    e1 = dd_add_d(A, p, A.c(1.0))
    scale = _pow2(A, kf)
    s, t = two_sum(A, A.c(1.0), A.mul(e1[0], scale))  # 1 + e^-a, exactly but for e1's low part
    t = A.add(t, A.mul(e1[1], scale))
    lg = dd_add_d(A, log_dd(A, s), A.div(t, s))  # log(1 + e^-a)
    pos = _round(A, dd_add_d(A, lg, A.select(A.gt(x, A.c(0.0)), x, A.c(0.0))))
    # -37 <= x < -21: log1p(u) = u - u^2/2 to 2^-60 for u = e^x < 2^-30, from u in dd (the log of
    # 1 + u, within 2^-53 of 1, has lost its last bits there)
    u_hi, u_lo = A.mul(e1[0], scale), A.mul(e1[1], scale)
    near = A.add(u_hi, A.sub(u_lo, A.mul(A.mul(u_hi, u_hi), A.c(0.5))))
    y = A.select(A.lt(x, A.c(-21.0)), near, pos)
    tiny = elementary._exp(A, x)  # x < -37: log1p(e^x) rounds to e^x
    y = A.select(A.lt(x, A.c(-37.0)), tiny, y)
    y = A.select(A.eq(x, A.c(INF)), x, y)
    return A.select(A.uno(x, x), x, y)


def pow_(A, x, y):
    a = A.fabs(x)
    zero, inf = A.c(0.0), A.c(INF)
    lg = log_dd(A, _positive(A, a))
    yf = A.select(A.lt(A.fabs(y), inf), y, zero)
    # |y| > 2^900 over- or underflows unless |x| = 1 (log 0): keep Dekker's split in range
    yf = A.select(A.gt(A.fabs(yf), A.c(2.0 ** 900)), A.select(A.gt(yf, zero), A.c(2.0 ** 900), A.c(-2.0 ** 900)), yf)
    t = dd_mul_d(A, lg, yf)
    big = A.gt(A.fabs(t[0]), A.c(2000.0))  # far outside the range: the product's low part may be NaN
    th = A.select(big, A.select(A.gt(t[0], zero), A.c(2000.0), A.c(-2000.0)), t[0])
    tl = A.select(big, zero, t[1])
    kf, p = exp_core(A, th, tl)
    return pow_specials(A, x, y, a, exp_value(A, kf, p))


def pow_specials(A, x, y, a, mag):
    """``pow(x, y)`` from ``a = |x|`` and ``mag``, the computed ``a^y`` for finite nonzero ``a``
    and finite ``y``: the sign and C99 Annex F's special cases (F.9.4.4)."""
    one, zero, inf = A.c(1.0), A.c(0.0), A.c(INF)
    yneg = A.lt(y, zero)
    mag = A.select(A.eq(a, zero), A.select(yneg, inf, zero), mag)
    mag = A.select(A.eq(a, inf), A.select(yneg, zero, inf), mag)
    yinf = A.eq(A.fabs(y), inf)
    grows = A.select(A.lt(a, one), yneg, A.not_(yneg))  # |x| < 1 with y = -inf, or |x| > 1 with +inf
    mag = A.select(yinf, A.select(A.eq(a, one), one, A.select(grows, inf, zero)), mag)
    ay = A.fabs(y)
    integral = A.eq(_trunc_big(A, ay), ay)
    half = A.mul(ay, A.c(0.5))
    odd = A.and_(integral, A.and_(A.lt(ay, A.c(2.0 ** 53)), A.not_(A.eq(_trunc_big(A, half), half))))
    negative = A.ilt(A.bits(x), A.ic(0))  # the sign bit (-0 included)
    result = A.select(A.and_(negative, odd), A.neg(mag), mag)
    invalid = A.and_(A.and_(A.lt(x, zero), A.gt(x, A.c(-INF))), A.and_(A.not_(integral), A.not_(yinf)))
    result = A.select(invalid, A.c(NAN), result)
    result = A.select(A.uno(x, y), A.c(NAN), result)
    result = A.select(A.eq(x, one), one, result)
    return A.select(A.eq(y, zero), one, result)


def _trunc_big(A, a):
    """``trunc(a)`` for ``a >= 0`` (or inf/NaN, passed through)."""
    big = A.c(2.0 ** 52)
    r = A.sub(A.add(a, big), big)
    r = A.select(A.gt(r, a), A.sub(r, A.c(1.0)), r)
    return A.select(A.lt(a, big), r, a)


ALGORITHMS = {"exp2": exp2, "expm1": expm1, "log2": log2, "log10": log10, "log1p": log1p, "sinh": sinh,
              "cosh": cosh, "sigmoid": sigmoid, "softplus": softplus, "pow": pow_}
