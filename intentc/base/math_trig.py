"""The trigonometric functions in f64, branch-free: ``sin cos tan atan atan2 asin acos``.

Reduction (``reduce``): ``|x| = k pi/2 + r``, ``r`` in dd with ``|r| <= pi/4`` (about 100
correct bits even where ``x`` is close to a multiple of pi/2), ``k mod 4`` the quadrant.
Both reductions are computed and one is selected (no branch):

- Cody-Waite, for ``|x| < 2^20``: ``k = round(x 2/pi)``; pi/2 in four parts, the first
  three of 33 bits so that ``k`` times each is exact; the differences summed with TwoSum;
- Payne-Hanek, for larger ``|x|`` (and infinities, sanitised): ``x = M 2^s`` with an
  integral ``M < 2^53``; the bits of ``2^s * 2/pi`` from ``2^1`` down to ``2^-210`` come from a
  constant table indexed by ``x``'s exponent (four doubles of 53 bits each, computed from
  pi with Python integers, ``math_constants``); ``M`` times the first is exact in dd and
  reduced modulo 4 exactly, the others are added in dd, the nearest integer taken off and
  the fraction times pi/2 is ``r``.

``sin r = r + r^3 S(r^2)``, ``cos r = 1 - r^2/2 + r^4 C(r^2)`` (Taylor series; ``r^2/2`` and
the low part of ``r`` in dd), ``tan = sin / cos`` (or ``-cos / sin``) in dd. ``sin`` and
``tan`` are computed on ``|x|`` and take ``x``'s sign, ``cos`` on ``|x|``: ``sin(-x) ==
-sin(x)``, ``cos(-x) == cos(x)`` bit for bit; ``sin(+-0) == +-0``; infinities give NaN.

``atan`` reduces ``|x|`` to ``[0, 1]`` (``1/|x|`` in dd and ``pi/2 -``), then by the nearest
``c = j/8``: ``atan a = atan c + atan((a - c) / (1 + a c))`` with ``atan(j/8)`` from a table
of dd values and the Taylor series on ``|t| <= 1/16``. ``atan2(y, x)`` is the same on
``|y| / |x|`` (the smaller over the larger, in dd) with C99's quadrants and zeros;
``asin x = atan2(x, sqrt(1 - x^2))`` and ``acos x = atan2(sqrt(1 - x^2), x)`` with ``1 - x^2 =
(1 - x)(1 + x)`` and its square root in dd.
"""
from __future__ import annotations

import functools
import math
from fractions import Fraction

from intentc.base.math_constants import PI, chop, to_dd, two_over_pi_window
from intentc.base.math_dd import (dd_add, dd_add_d, dd_div, dd_mul, dd_neg, dd_sq, fast_two_sum, horner, two_prod,
                                  two_sum)

INF, NAN = float("inf"), float("nan")
MAGIC = 1.5 * 2.0 ** 52
PIO2 = PI / 2
C1 = chop(PIO2, 33)
C2 = chop(PIO2 - Fraction(C1), 33)
C3 = chop(PIO2 - Fraction(C1) - Fraction(C2), 33)
C4 = float(PIO2 - Fraction(C1) - Fraction(C2) - Fraction(C3))
PIO2_DD = to_dd(PIO2)
PI_DD = to_dd(PI)
TWO_OVER_PI = float(2 / PI)
CW_LIMIT = 2.0 ** 20
PH_FIRST = 1023 + 20  # the biased exponent of the first table entry
SIN_S = tuple(float(Fraction((-1) ** n, math.factorial(2 * n + 1))) for n in range(1, 11))
COS_C = tuple(float(Fraction((-1) ** n, math.factorial(2 * n))) for n in range(2, 12))
ATAN_P = tuple(float(Fraction((-1) ** n, 2 * n + 1)) for n in range(1, 10))


@functools.lru_cache(maxsize=None)
def _table(last: int) -> tuple:
    """Four doubles per biased exponent from PH_FIRST to ``last``: the bits of ``2^s 2/pi``
    (``s = E - 1075``) at weights 2^1..2^-51, 2^-52..2^-104, 2^-105..2^-157, 2^-158..2^-210."""
    values = []
    mask = (1 << 53) - 1
    for e in range(PH_FIRST, last + 1):
        n = two_over_pi_window(e - 1075, 210)
        values += [math.ldexp(n >> 159, -51), math.ldexp((n >> 106) & mask, -104),
                   math.ldexp((n >> 53) & mask, -157), math.ldexp(n & mask, -210)]
    return tuple(values)


def _round_int(A, v):
    magic = A.c(MAGIC)
    return A.sub(A.add(v, magic), magic)


def _mod4(A, k):
    return A.sub(k, A.mul(A.c(4.0), _floor_small(A, A.mul(k, A.c(0.25)))))


def _floor_small(A, v):
    r = _round_int(A, v)
    return A.select(A.gt(r, v), A.sub(r, A.c(1.0)), r)


def reduce(A, a):
    """``q`` (0..3, a float) and ``r`` (dd) with ``a = (4n + q) pi/2 + r`` for finite ``a >= 0``."""
    # Cody-Waite
    small = A.lt(a, A.c(CW_LIMIT))
    ac = A.select(small, a, A.c(0.0))
    k = _round_int(A, A.mul(ac, A.c(TWO_OVER_PI)))
    s0 = A.sub(ac, A.mul(k, A.c(C1)))  # exact
    s, e = two_sum(A, s0, A.neg(A.mul(k, A.c(C2))))
    s, e2 = two_sum(A, s, A.neg(A.mul(k, A.c(C3))))
    e = A.add(A.add(e, e2), A.neg(A.mul(k, A.c(C4))))
    r_cw = fast_two_sum(A, s, e)
    q_cw = _mod4(A, k)
    # Payne-Hanek
    last = 1023 + 128 if A.source == 32 else 2046
    bits = A.bits(A.select(small, A.c(CW_LIMIT), a))
    ex = A.ashr(bits, 52)
    index = A.shl(A.isub(ex, A.ic(PH_FIRST)), 2)
    table = _table(last)
    name = f"two_over_pi_{last}"
    w = [A.table(name, table, A.iadd(index, A.ic(j))) for j in range(4)]
    m = A.from_bits(A.ior(A.iand(bits, A.ic((1 << 52) - 1)), A.ic((1023 + 52) << 52)))
    a0 = two_prod(A, m, w[0])
    quarter = A.mul(a0[0], A.c(0.25))  # below 2^53, at least 0
    big = A.c(2.0 ** 52)
    quarter = A.select(A.lt(quarter, big), A.sub(A.add(quarter, big), big), quarter)  # rounded to an integer
    h = A.sub(a0[0], A.mul(A.c(4.0), quarter))  # exact: a multiple of 2^-51
    f0 = A.add(h, a0[1])  # exact
    b = two_prod(A, m, w[1])
    c = two_prod(A, m, w[2])
    d = A.mul(m, w[3])
    # take the integers off f0 and b's high part separately (each difference exact: both are
    # multiples of 2^-51 below 4), then off their sum, so that no difference needs 54 bits
    k1, k2 = _round_int(A, f0), _round_int(A, b[0])
    f1, b1 = A.sub(f0, k1), A.sub(b[0], k2)
    k3 = _round_int(A, A.add(f1, b1))
    kk = A.add(A.add(k1, k2), k3)
    z = two_sum(A, A.sub(f1, k3), b1)
    z = dd_add_d(A, z, b[1])
    z = dd_add(A, z, c)
    z = dd_add_d(A, z, d)
    r_ph = dd_mul(A, z, (A.c(PIO2_DD[0]), A.c(PIO2_DD[1])))
    q_ph = _mod4(A, kk)
    r = (A.select(small, r_cw[0], r_ph[0]), A.select(small, r_cw[1], r_ph[1]))
    return A.select(small, q_cw, q_ph), r


def _sin_cos(A, r):
    """``sin r`` and ``cos r`` as dd for ``|r| <= pi/4 (1 + eps)``."""
    rh, rl = r
    z = A.mul(rh, rh)
    corr = A.add(A.mul(A.mul(rh, z), horner(A, z, SIN_S)), A.mul(rl, A.sub(A.c(1.0), A.mul(z, A.c(0.5)))))
    sin = fast_two_sum(A, rh, corr)
    hh, hl = dd_sq(A, r)
    hh, hl = A.mul(hh, A.c(0.5)), A.mul(hl, A.c(0.5))
    w, we = fast_two_sum(A, A.c(1.0), A.neg(hh))
    tail = A.add(A.sub(we, hl), A.mul(A.mul(z, z), horner(A, z, COS_C)))
    cos = fast_two_sum(A, w, tail)
    return sin, cos


def _finite_abs(A, x):
    a = A.fabs(x)
    return A.select(A.lt(a, A.c(INF)), a, A.c(0.0))


def _signed(A, y, x):
    return A.from_bits(A.ixor(A.bits(y), A.iand(A.bits(x), A.ic(-(1 << 63)))))


def _pick(A, q, values):
    out = values[3]
    for j in (2, 1, 0):
        out = A.select(A.eq(q, A.c(float(j))), values[j], out)
    return out


def _bad(A, x, y):
    """NaN where ``x`` is infinite or NaN."""
    return A.select(A.lt(A.fabs(x), A.c(INF)), y, A.c(NAN))


def sin(A, x):
    q, r = reduce(A, _finite_abs(A, x))
    s, c = _sin_cos(A, r)
    s, c = A.add(s[0], s[1]), A.add(c[0], c[1])
    y = _pick(A, q, (s, c, A.neg(s), A.neg(c)))
    return _bad(A, x, _signed(A, y, x))


def cos(A, x):
    q, r = reduce(A, _finite_abs(A, x))
    s, c = _sin_cos(A, r)
    s, c = A.add(s[0], s[1]), A.add(c[0], c[1])
    return _bad(A, x, _pick(A, q, (c, A.neg(s), A.neg(c), s)))


def tan(A, x):
    q, r = reduce(A, _finite_abs(A, x))
    s, c = _sin_cos(A, r)
    odd = A.or_(A.eq(q, A.c(1.0)), A.eq(q, A.c(3.0)))
    num = (A.select(odd, c[0], s[0]), A.select(odd, c[1], s[1]))
    den = (A.select(odd, s[0], c[0]), A.select(odd, s[1], c[1]))
    t = dd_div(A, num, den)
    y = A.add(t[0], t[1])
    y = A.select(odd, A.neg(y), y)
    return _bad(A, x, _signed(A, y, x))


@functools.lru_cache(maxsize=None)
def _atan_table() -> tuple:
    """``atan(j/8)`` for j = 0..8, as (hi, lo) pairs (computed with a Taylor/Euler series in
    rationals: atan(j/8) for j <= 4 directly, the rest as pi/4 - atan((8 - j)/(8 + j)))."""
    def atan_q(t: Fraction) -> Fraction:
        # Euler's series: atan t = sum 2^(2n) (n!)^2 / (2n + 1)! * t^(2n+1) / (1 + t^2)^(n+1)
        total, term = Fraction(0), t / (1 + t * t)
        ratio = t * t / (1 + t * t)
        n = 0
        while abs(term) > Fraction(1, 1 << 130):
            total += term
            n += 1
            term = term * ratio * Fraction(2 * n, 2 * n + 1)
        return total
    values = []
    for j in range(9):
        t = Fraction(j, 8)
        v = atan_q(t) if j <= 4 else PI / 4 - atan_q(Fraction(8 - j, 8 + j))
        values.append(to_dd(v))
    return tuple(values)


def _normalise(A, p, q):
    """``p`` and ``q`` times one power of two that brings ``q`` (positive) into [1, 2), so that
    Dekker's products in the division neither overflow nor underflow."""
    sub = A.lt(q[0], A.c(2.0 ** -1000))
    qs = A.select(sub, A.mul(q[0], A.c(2.0 ** 200)), q[0])
    e = A.isub(A.ashr(A.bits(qs), 52), A.ic(1023))
    e = A.select(sub, A.isub(e, A.ic(200)), e)
    half = A.ashr(e, 1)
    f1 = A.from_bits(A.shl(A.isub(A.ic(1023), half), 52))
    f2 = A.from_bits(A.shl(A.isub(A.ic(1023), A.isub(e, half)), 52))
    scaled = [(A.mul(A.mul(v[0], f1), f2), A.mul(A.mul(v[1], f1), f2)) for v in (p, q)]
    return scaled[0], scaled[1]


def _atan_ratio(A, n, d):
    """``atan(n / d)`` as dd for dd ``n, d >= 0`` (not both 0, finite)."""
    swap = A.gt(n[0], d[0])
    p = (A.select(swap, d[0], n[0]), A.select(swap, d[1], n[1]))
    q = (A.select(swap, n[0], d[0]), A.select(swap, n[1], d[1]))
    p, q = _normalise(A, p, q)
    a = dd_div(A, p, q)  # in [0, 1]
    j = _round_int(A, A.mul(a[0], A.c(8.0)))
    j = A.select(A.and_(A.uge(j, A.c(0.0)), A.le(j, A.c(8.0))), j, A.c(0.0))  # NaN (selected away later): 0
    c = A.mul(j, A.c(0.125))
    num = dd_add_d(A, a, A.neg(c))
    den = dd_add_d(A, dd_add_d(A, dd_mul(A, a, (c, A.c(0.0))), A.c(0.0)), A.c(1.0))
    t = dd_div(A, num, den)  # |t| <= 1/16
    th, tl = t
    z = A.mul(th, th)
    corr = A.add(A.mul(A.mul(th, z), horner(A, z, ATAN_P)), A.mul(tl, A.sub(A.c(1.0), z)))
    at = fast_two_sum(A, th, corr)
    table = _atan_table()
    ji = A.ftoi(j)
    base = (A.table("atan_hi", tuple(h for h, _ in table), ji), A.table("atan_lo", tuple(lo for _, lo in table), ji))
    y = dd_add(A, base, at)
    comp = dd_add(A, (A.c(PIO2_DD[0]), A.c(PIO2_DD[1])), dd_neg(A, y))
    return A.select(swap, comp[0], y[0]), A.select(swap, comp[1], y[1])


def atan(A, x):
    a = A.fabs(x)
    inf = A.eq(a, A.c(INF))
    n = A.select(inf, A.c(1.0), a)
    d = A.select(inf, A.c(0.0), A.c(1.0))
    y = _atan_ratio(A, (n, A.c(0.0)), (d, A.c(0.0)))
    y = A.add(y[0], y[1])
    y = A.select(A.uno(x, x), x, y)
    return _signed(A, y, x)


def _atan2_dd(A, y, x, ny, nx):
    """``atan2`` of the magnitudes (dd ``ny``, ``nx``) placed in ``x``'s half-plane and rounded,
    with ``y``'s sign; the special cases of C99 F.9.1.4."""
    zero = A.c(0.0)
    ay, ax = A.fabs(y), A.fabs(x)
    yinf, xinf = A.eq(ay, A.c(INF)), A.eq(ax, A.c(INF))
    both_inf = A.and_(yinf, xinf)
    one, zz = A.c(1.0), A.c(0.0)
    # infinities become 1 (or 0 beside a finite other), 0/0 becomes 0/1
    nyh = A.select(yinf, one, A.select(xinf, zz, ny[0]))
    nyl = A.select(A.or_(yinf, xinf), zz, ny[1])
    nxh = A.select(xinf, one, A.select(yinf, zz, nx[0]))
    nxl = A.select(A.or_(yinf, xinf), zz, nx[1])
    nxh = A.select(both_inf, one, nxh)
    nyh = A.select(both_inf, one, nyh)
    both_zero = A.and_(A.eq(nyh, zero), A.eq(nxh, zero))
    nxh = A.select(both_zero, one, nxh)
    base = _atan_ratio(A, (nyh, nyl), (nxh, nxl))
    left = A.ilt(A.bits(x), A.ic(0))  # x < 0 or x = -0
    flip = dd_add(A, (A.c(PI_DD[0]), A.c(PI_DD[1])), dd_neg(A, base))
    r = A.select(left, A.add(flip[0], flip[1]), A.add(base[0], base[1]))
    r = _signed(A, r, y)
    return A.select(A.uno(x, y), A.c(NAN), r)


def atan2(A, y, x):
    r = _atan2_dd(A, y, x, (A.fabs(y), A.c(0.0)), (A.fabs(x), A.c(0.0)))
    # |y| / x below 2^-30 (x > 0): atan2 is the quotient to 2^-60, and one IEEE division rounds it
    # correctly even where it is subnormal (the double-word path rounds twice there: 1.84 ulp)
    q = A.div(A.fabs(y), x)
    tiny = A.and_(A.gt(x, A.c(0.0)), A.lt(q, A.c(2.0 ** -30)))
    return A.select(tiny, _signed(A, q, y), r)


def _sqrt_one_minus_sq(A, a):
    """``sqrt(1 - a^2)`` as dd for ``0 <= a <= 1``: (1 - a)(1 + a) in dd, then a corrected root."""
    u = dd_mul(A, two_sum(A, A.c(1.0), A.neg(a)), two_sum(A, A.c(1.0), a))
    s = A.sqrt(u[0])
    p, e = two_prod(A, s, s)
    corr = A.div(A.add(A.sub(A.sub(u[0], p), e), u[1]), A.add(s, s))
    corr = A.select(A.gt(s, A.c(0.0)), corr, A.c(0.0))
    return fast_two_sum(A, s, corr)


def asin(A, x):
    a = A.fabs(x)
    ok = A.le(a, A.c(1.0))
    ac = A.select(ok, a, A.c(0.0))
    r = _atan2_dd(A, ac, A.c(1.0), (ac, A.c(0.0)), _sqrt_one_minus_sq(A, ac))
    r = _signed(A, A.fabs(r), x)
    return A.select(ok, r, A.c(NAN))


def acos(A, x):
    a = A.fabs(x)
    ok = A.le(a, A.c(1.0))
    ac = A.select(ok, a, A.c(0.0))
    xc = A.select(ok, x, A.c(0.0))
    r = _atan2_dd(A, A.c(1.0), xc, _sqrt_one_minus_sq(A, ac), (ac, A.c(0.0)))
    return A.select(ok, r, A.c(NAN))


ALGORITHMS = {"sin": sin, "cos": cos, "tan": tan, "atan": atan, "atan2": atan2, "asin": asin, "acos": acos}
