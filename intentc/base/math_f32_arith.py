"""Math functions of ``f32`` operands (and ``f16``/``bf16``, computed as ``f32`` is) computed in
``f32`` arithmetic: twice the vector lanes of ``math_f32``'s plain-``f64`` algorithms.

An ``f32`` result has no spare bits, so each algorithm keeps the rounding errors that would
cost more than a few hundredths of an ulp: the leading products are split so that they are
exact (``hi`` parts of 12 significant bits, cut from the bit pattern with an integer mask),
sums of a large and a small term are kept as ``hi + lo`` with Fast2Sum, and only small
corrections are rounded. The same rules as everywhere in the library (``math_f32``):
exactly rounded IEEE operations only, no FMA, no branches, so the bits are the same on
every target and in the interpreter. Coefficients: minimax fits of the relative error,
``benchmarks/math/fit_f32.py`` (mpmath) re-derives them.

``exp2``
    Clamp ``x`` to ``[-151, 128]`` (NaN passes), ``k = round(x)`` by adding and subtracting
    ``1.5 * 2^23``, ``r = x - k`` exact (``|r| <= 1/2``); ``2^r = 1 + r ln2 + r^2 P(r)`` (``P``
    of degree 4, fit error ``2^-28.3``) with ``r ln2`` as ``r_hi ln2_hi`` (exact: 12 bits
    each) plus ``r_lo ln2_hi + r ln2_lo``, ``1 + r_hi ln2_hi`` summed by Fast2Sum; then times
    ``2^k`` as ``math``'s ``exp`` does (two factors, only the last product rounds: overflow
    gives ``+inf``, underflow a correctly rounded subnormal or ``+0``). Error: the final
    rounding plus about ``0.1`` ulp; a subnormal result is rounded twice (``0.76`` ulp).
``log2 log10``
    ``x = 2^k m`` with ``m`` in ``[sqrt(1/2), sqrt(2))`` (subnormals scaled first), ``f = m - 1``
    exact; ``log1p f = s + t`` with ``s = f - f_hi^2/2`` by Fast2Sum (``f_hi^2/2`` exact) and
    ``t`` the Fast2Sum error, ``-(f_hi f_lo + f_lo^2/2)`` and ``f^3 P(f)`` (``elementary``'s
    ``f32`` ``log`` polynomial); then ``k log_b 2 + s / ln b`` with ``s_hi / ln b`` exact on
    12-bit parts and Fast2Sum, the rest of the products added to the low part.
    ``log(+-0) = -inf``, ``log(x < 0) = NaN``, ``+inf`` and NaN give themselves.
"""
from __future__ import annotations

import math
from fractions import Fraction

from intentc.base.elementary import F32, _horner, scale_pow2
from intentc.base.math_constants import LN2, LN10, PI

INF, NAN = float("inf"), float("nan")
HI_MASK = -4096  # clears the 12 low mantissa bits: 12 significant bits remain


def _f32(q) -> float:
    """``q`` rounded to the nearest f32 (through the nearest double: exact for these constants)."""
    import struct

    return struct.unpack("<f", struct.pack("<f", float(q)))[0]


def _chop(q, bits: int) -> float:
    """``q`` truncated to ``bits`` significant bits."""
    m, e = math.frexp(float(q))
    return math.ldexp(math.floor(m * (1 << bits)) / (1 << bits), e)


def _split(q, bits: int = 12) -> tuple[float, float]:
    hi = _chop(q, bits)
    return hi, _f32(Fraction(q) - Fraction(hi))


LN2_HI, LN2_LO = _split(LN2)
INV_LN2_HI, INV_LN2_LO = _split(1 / LN2)
INV_LN10_HI, INV_LN10_LO = _split(1 / LN10)
LOG10_2_HI, LOG10_2_LO = _split(LN2 / LN10, 15)  # k * LOG10_2_HI exact for |k| < 2^9
PIO2_HI, PIO2_LO = _f32(PI / 2), _f32(PI / 2 - Fraction(_f32(PI / 2)))
PI_HI, PI_LO = _f32(PI), _f32(PI - Fraction(_f32(PI)))
SIGN = -(1 << 31)
# atan t = t + t^3 (c3 + c5 t^2 + ... + c19 t^16) on [0, 1] (fit_f32.py atan)
ATAN_POLY = tuple(map(float.fromhex, ("-0x1.55553ep-2", "0x1.9991fep-3", "-0x1.2421b6p-3", "0x1.c09a02p-4",
                                      "-0x1.58349ep-4", "0x1.daca18p-5", "-0x1.fed1d2p-6", "0x1.65a6dep-7",
                                      "-0x1.d630e2p-10")))
# 1 / (1 + z) on [0, 1] within 0.74% (a correction's factor: fit_f32.py recip)
RECIP_1PZ = (0.99264079, -0.82842717, 0.34314559)
# 2^r = 1 + r ln2 + r^2 (c2 + c3 r + ... + c6 r^4) on |r| <= 1/2 (fit_f32.py exp2)
EXP2_POLY = tuple(map(float.fromhex, ("0x1.ebfbdcp-3", "0x1.c6af88p-5", "0x1.3b2e0cp-7", "0x1.5f03dap-10",
                                      "0x1.414ecep-13")))


def _hi(A, v):
    return A.from_bits(A.iand(A.bits(v), A.ic(HI_MASK)))


def exp2(A, x):
    lo, hi = A.c(-151.0), A.c(128.0)
    x = A.select(A.lt(x, lo), lo, x)  # NaN compares false and stays NaN
    x = A.select(A.gt(x, hi), hi, x)
    magic = A.c(F32.magic)
    t = A.add(x, magic)
    r = A.sub(x, A.sub(t, magic))  # exact, |r| <= 1/2
    r_hi = _hi(A, r)
    lead = A.mul(r_hi, A.c(LN2_HI))  # exact
    rest = A.add(A.mul(A.sub(r, r_hi), A.c(LN2_HI)), A.mul(r, A.c(LN2_LO)))
    one = A.c(1.0)
    s_hi = A.add(one, lead)
    s_lo = A.add(A.sub(one, s_hi), lead)  # Fast2Sum: 1 + lead == s_hi + s_lo
    poly = A.mul(A.mul(r, r), _horner(A, r, EXP2_POLY))
    p = A.add(s_hi, A.add(s_lo, A.add(rest, poly)))
    return scale_pow2(A, p, t, x)


def _log1p_parts(A, x):
    """``k`` (a float) and ``s + t = log1p(f)`` for ``x = 2^k (1 + f)``, ``|t| <~ 2^-24 |s|``."""
    F = A.fmt
    sub = A.lt(x, A.c(F.min_normal))  # subnormal (or <= 0: replaced by the caller)
    xs = A.select(sub, A.mul(x, A.c(2.0 ** F.mant)), x)
    bits = A.bits(xs)
    k = A.ashr(A.isub(bits, A.ic(F.sqrt_half_bits)), F.mant)
    m = A.from_bits(A.isub(bits, A.shl(k, F.mant)))  # in [sqrt(1/2), sqrt(2))
    k = A.isub(k, A.select(sub, A.ic(F.mant), A.ic(0)))
    f = A.sub(m, A.c(1.0))  # exact
    f_hi = _hi(A, f)
    f_lo = A.sub(f, f_hi)
    half_sq = A.mul(A.mul(f_hi, f_hi), A.c(0.5))  # exact
    s = A.sub(f, half_sq)
    err = A.sub(A.sub(f, s), half_sq)  # Fast2Sum: |f| >= f_hi^2 / 2
    cross = A.add(A.mul(f_hi, f_lo), A.mul(A.mul(f_lo, f_lo), A.c(0.5)))  # f^2/2 - f_hi^2/2
    cubic = A.mul(A.mul(f, f), A.mul(f, _horner(A, f, F.log_poly)))
    return A.itof(k), s, A.add(A.sub(err, cross), cubic)


def _log_specials(A, x, y):
    zero = A.c(0.0)
    y = A.select(A.lt(x, zero), A.c(NAN), y)
    y = A.select(A.eq(x, zero), A.c(-INF), y)
    return A.select(A.uge(x, A.c(INF)), x, y)  # +inf and NaN give themselves


def _log_base(A, k_hi, k_lo, s, t, inv_hi: float, inv_lo: float):
    """``k_hi + k_lo + (s + t) (inv_hi + inv_lo)``, ``|k_hi| >= |s| inv_hi`` unless ``k_hi == 0``."""
    s_hi = _hi(A, s)
    lead = A.mul(s_hi, A.c(inv_hi))  # exact
    y_hi = A.add(k_hi, lead)
    y_lo = A.add(A.sub(k_hi, y_hi), lead)  # Fast2Sum (exact when k_hi == 0)
    rest = A.add(A.add(A.mul(A.sub(s, s_hi), A.c(inv_hi)), A.mul(s, A.c(inv_lo))), A.mul(t, A.c(inv_hi + inv_lo)))
    return A.add(y_hi, A.add(y_lo, A.add(k_lo, rest)))


def log2(A, x):
    k, s, t = _log1p_parts(A, x)
    return _log_specials(A, x, _log_base(A, k, A.c(0.0), s, t, INV_LN2_HI, INV_LN2_LO))


def log10(A, x):
    k, s, t = _log1p_parts(A, x)
    y = _log_base(A, A.mul(k, A.c(LOG10_2_HI)), A.mul(k, A.c(LOG10_2_LO)), s, t, INV_LN10_HI, INV_LN10_LO)
    return _log_specials(A, x, y)


# ---- inverse trigonometric ----------------------------------------------------------------
def _signed(A, y, x):
    """``y`` (its sign bit clear) with ``x``'s sign bit."""
    return A.from_bits(A.ior(A.bits(y), A.iand(A.bits(x), A.ic(SIGN))))


def _atan_ratio(A, t, swap, left=None, t_lo=None):
    """The angle ``atan t`` (``swap`` and ``left`` false), ``pi/2 - atan t`` (``swap``),
    ``pi - atan t`` (``left``) or ``pi/2 + atan t`` (both) for ``t`` in ``[0, 1]`` (plus
    ``t_lo``, a correction below ``ulp(t)``, if given): the constant's high part and ``+-t``
    summed by Fast2Sum, the rest added to the low part."""
    z = A.mul(t, t)
    tail = A.mul(A.mul(t, z), _horner(A, z, ATAN_POLY))  # atan t - t
    if t_lo is not None:  # atan(t + t_lo) = atan t + t_lo / (1 + t^2), the latter to 1%
        tail = A.add(tail, A.mul(t_lo, _horner(A, z, RECIP_1PZ)))
    zero = A.c(0.0)
    if left is None:
        c_hi = A.select(swap, A.c(PIO2_HI), zero)
        c_lo = A.select(swap, A.c(PIO2_LO), zero)
        minus = swap
    else:
        c_hi = A.select(swap, A.c(PIO2_HI), A.select(left, A.c(PI_HI), zero))
        c_lo = A.select(swap, A.c(PIO2_LO), A.select(left, A.c(PI_LO), zero))
        minus = A.or_(A.and_(swap, A.not_(left)), A.and_(left, A.not_(swap)))
    u = A.select(minus, A.neg(t), t)
    v = A.select(minus, A.neg(tail), tail)
    s = A.add(c_hi, u)
    e = A.add(A.sub(c_hi, s), u)  # Fast2Sum: |c_hi| >= |u| unless c_hi == 0 (then exact)
    return A.add(s, A.add(e, A.add(c_lo, v)))


def _quotient(A, n, d):
    """``t = min/max`` of ``n, d >= 0`` (finite, not both 0) and whether ``n > d``. One f32
    division: its rounding (half an ulp of ``t``) is the largest error of atan and atan2; the
    quotient in f64 with its rounding kept would cost twice the time for 0.15 ulp."""
    swap = A.gt(n, d)
    return A.div(A.select(swap, d, n), A.select(swap, n, d)), swap


def atan(A, x):
    a = A.fabs(x)
    inf = A.eq(a, A.c(INF))
    t, swap = _quotient(A, A.select(inf, A.c(1.0), a), A.select(inf, A.c(0.0), A.c(1.0)))
    y = _atan_ratio(A, t, swap)
    y = A.select(A.uno(x, x), x, y)
    return _signed(A, y, x)


def atan2(A, y, x):
    ay, ax = A.fabs(y), A.fabs(x)
    one, zero, inf = A.c(1.0), A.c(0.0), A.c(INF)
    yinf, xinf = A.eq(ay, inf), A.eq(ax, inf)
    # C99 F.9.1.4: infinities become 1 (or 0 beside a finite other), 0/0 becomes 0/1
    n = A.select(yinf, one, A.select(xinf, zero, ay))
    d = A.select(xinf, one, A.select(yinf, zero, ax))
    d = A.select(A.and_(A.eq(n, zero), A.eq(d, zero)), one, d)
    t, swap = _quotient(A, n, d)
    r = _atan_ratio(A, t, swap, A.ilt(A.bits(x), A.ic(0)))  # x < 0 or x = -0: the left half-plane
    r = _signed(A, r, y)
    return A.select(A.uno(x, y), A.c(NAN), r)


def _asin_quotient(A, x):
    """For ``a = |x| <= 1``: ``t`` = the smaller over the larger of ``a`` and ``sqrt(1 - a^2)``
    (in f64: ``(1 - a)(1 + a)`` exact, the quotient rounded to f32 as ``t + t_lo``), whether ``a`` is
    the larger, whether the root is, and whether ``|x| <= 1``; ``t_lo`` the quotient's rounding."""
    W = A.wide()
    a = A.fabs(x)
    ok = A.le(a, A.c(1.0))
    aw = A.widen(A.select(ok, a, A.c(0.0)))
    one = W.c(1.0)
    root = W.sqrt(W.mul(W.sub(one, aw), W.add(one, aw)))
    swap = W.gt(aw, root)
    t = W.div(W.select(swap, root, aw), W.select(swap, aw, root))  # root = 0 only at |x| = 1
    t_hi = W.round_f32(t)
    return t_hi, W.round_f32(W.sub(t, A.widen(t_hi))), swap, W.gt(root, aw), ok


def asin(A, x):
    t, t_lo, a_larger, _, ok = _asin_quotient(A, x)  # asin x = atan2(|x|, sqrt(1 - x^2)), x's sign
    return A.select(ok, _signed(A, _atan_ratio(A, t, a_larger, t_lo=t_lo), x), A.c(NAN))


def acos(A, x):
    t, t_lo, _, root_larger, ok = _asin_quotient(A, x)  # acos x = atan2(sqrt(1 - x^2), x)
    r = _atan_ratio(A, t, root_larger, A.lt(x, A.c(0.0)), t_lo)
    return A.select(ok, r, A.c(NAN))


ALGORITHMS = {"exp2": exp2, "log2": log2, "log10": log10, "atan": atan, "atan2": atan2, "asin": asin,
              "acos": acos}
