"""``lgamma`` (``log |Gamma(x)|``) in f64, branch-free, in double-word.

- ``x >= 10``: Stirling's series ``(x - 1/2) log x - x + log(2 pi)/2 + sum B_2k / (2k (2k - 1)
  x^(2k-1))`` (10 terms, Bernoulli numbers from Python fractions); the leading terms in dd;
- ``0 < x < 10``: ``lgamma(x + n) - log(x (x + 1) ... (x + n - 1))`` with ``n`` such that
  ``x + n >= 10``: ten conditional steps (selects), the shifted argument and the product in dd;
- near the zeros 1 and 2 (``|x - 1|, |x - 2| < 2^-12``, five terms) the Taylor series in ``h``
  (``-gamma h + zeta(2)/2 h^2 - ...`` and ``(1 - gamma) h + (zeta(2) - 1)/2 h^2 - ...``), and
  ``-log x - gamma x`` below ``2^-30``: no cancellation;
- ``x < 0``: the reflection ``log(pi / |sin(pi x)|) - lgamma(1 - x)``, ``sin(pi x)`` from the
  distance to the nearest integer (exact) and ``math_trig``'s kernels; near the zeros of
  lgamma on the negative axis (x = -2.457..., -2.747..., ...) the cancellation costs
  relative accuracy: the error stays below ``2^-52 max(1, |lgamma x|)`` (docs/language.md);
- ``lgamma(1) = lgamma(2) = +0``; ``+inf`` at the poles (0, -0 and the negative integers)
  and at +-inf; NaN gives NaN.
"""
from __future__ import annotations

import functools
from fractions import Fraction

from intentc.base.math_constants import PI, to_dd
from intentc.base.math_dd import dd_add, dd_add_d, dd_div, dd_mul, dd_mul_d, dd_neg, horner, two_sum
from intentc.base.math_constants import LN2
from intentc.base.math_explog import log_dd
from intentc.base.math_trig import _sin_cos

INF, NAN = float("inf"), float("nan")
# Euler's constant and Apery's constant zeta(3), to 50 digits
EULER = Fraction("0.57721566490153286060651209008240243104215933593992")
ZETA3 = Fraction("1.2020569031595942853997381615114499907649862923405")
ZETA2 = PI * PI / 6
ZETA4 = PI ** 4 / 90
ZETA5 = Fraction("1.0369277551433699263313654864570341680570809195019")
ZETA6 = PI ** 6 / 945
NEAR = 2.0 ** -12  # the Taylor series at 1 and 2 below this distance
SHIFT = 10.0


@functools.lru_cache(maxsize=None)
def _constants():
    bern = _bernoulli(20)
    stirling = tuple(float(bern[2 * k] / (2 * k * (2 * k - 1))) for k in range(1, 11))
    half_log_2pi = to_dd(_log_fraction(2 * PI) / 2)
    return {
        "stirling": stirling, "half_log_2pi": half_log_2pi, "euler": to_dd(EULER), "log_pi": to_dd(_log_fraction(PI)),
        "near1": tuple(float(v) for v in (ZETA2 / 2, -ZETA3 / 3, ZETA4 / 4, -ZETA5 / 5, ZETA6 / 6)),
        "near2": (to_dd(1 - EULER), tuple(float(v) for v in ((ZETA2 - 1) / 2, -(ZETA3 - 1) / 3, (ZETA4 - 1) / 4,
                                                           -(ZETA5 - 1) / 5, (ZETA6 - 1) / 6))),
        "pi": to_dd(PI), "twelfth": to_dd(Fraction(1, 12)),
    }


def _log_fraction(q: Fraction) -> Fraction:
    """``log q`` for a rational ``q > 0`` to about 2^-200: ``k log 2 + 2 atanh((m - 1)/(m + 1))``."""
    k = 0
    while q > Fraction(4, 3):
        q /= 2
        k += 1
    while q < Fraction(2, 3):
        q *= 2
        k -= 1
    t = (q - 1) / (q + 1)
    total, power, n = Fraction(0), t, 1
    while abs(power) > Fraction(1, 1 << 220):
        total += power / n
        power *= t * t
        n += 2
        if power.denominator > (1 << 400):  # keep the fractions small: round to 2^-300
            power = Fraction(round(power * (1 << 300)), 1 << 300)
    return k * LN2 + 2 * total


def _bernoulli(n: int) -> list:
    """B_0 .. B_n (B_1 = -1/2) by the Akiyama-Tanigawa algorithm."""
    out, a = [], [Fraction(0)] * (n + 1)
    for m in range(n + 1):
        a[m] = Fraction(1, m + 1)
        for j in range(m, 0, -1):
            a[j - 1] = j * (a[j - 1] - a[j])
        out.append(a[0])
    out[1] = -out[1] if out[1] > 0 else out[1]
    return out


def _dd(A, pair):
    return A.c(pair[0]), A.c(pair[1])


def _log_of_dd(A, v):
    return dd_add_d(A, log_dd(A, v[0]), A.div(v[1], v[0]))


def _stirling(A, y):
    """``lgamma(y)`` as dd for a dd ``y >= 10`` (below 2^900)."""
    k = _constants()
    ly = _log_of_dd(A, y)
    t = dd_mul(A, dd_add_d(A, y, A.c(-0.5)), ly)
    t = dd_add(A, t, dd_neg(A, y))
    t = dd_add(A, t, _dd(A, k["half_log_2pi"]))
    inv = A.div(A.c(1.0), y[0])
    first = dd_div(A, _dd(A, k["twelfth"]), y)  # 1/(12 y) in dd: near the zeros it matters
    inv2 = A.mul(inv, inv)
    rest = A.mul(A.mul(inv, inv2), horner(A, inv2, k["stirling"][1:]))
    return dd_add_d(A, dd_add(A, t, first), rest)


def _lgamma_positive(A, z):
    """``lgamma`` of a dd ``z`` with ``0 < z < 2^900`` (not tiny: the caller selects that case)."""
    y, prod = z, (A.c(1.0), A.c(0.0))
    for _ in range(int(SHIFT)):
        shift = A.lt(y[0], A.c(SHIFT))
        moved = dd_mul(A, prod, y)
        prod = (A.select(shift, moved[0], prod[0]), A.select(shift, moved[1], prod[1]))
        nxt = dd_add_d(A, y, A.c(1.0))
        y = (A.select(shift, nxt[0], y[0]), A.select(shift, nxt[1], y[1]))
    return dd_add(A, _stirling(A, y), dd_neg(A, _log_of_dd(A, prod)))


def _near(A, z, centre: float, lead, coeffs):
    """The Taylor series of lgamma around 1 or 2 at ``h = z - centre``, as dd."""
    h = dd_add_d(A, z, A.c(-centre))  # z - centre: exact high part
    tail = A.mul(A.mul(h[0], h[0]), horner(A, h[0], coeffs))
    return dd_add_d(A, dd_mul(A, lead, h), tail)


def lgamma(A, x):
    k = _constants()
    zero, one = A.c(0.0), A.c(1.0)
    a = A.fabs(x)
    finite = A.lt(a, A.c(INF))
    positive = A.and_(A.gt(x, zero), finite)
    # the argument of the positive part: x itself, or 1 - x (in dd) for the reflection
    ref = two_sum(A, one, A.neg(A.select(A.lt(x, zero), A.select(finite, x, zero), zero)))
    zh = A.select(positive, x, ref[0])
    zl = A.select(positive, zero, ref[1])
    huge = A.uge(zh, A.c(2.0 ** 900))
    zs = (A.select(huge, A.c(SHIFT), zh), A.select(huge, zero, zl))
    main = _lgamma_positive(A, zs)
    near1 = _near(A, zs, 1.0, dd_neg(A, _dd(A, k["euler"])), k["near1"])
    near2 = _near(A, zs, 2.0, _dd(A, k["near2"][0]), k["near2"][1])
    tiny_z = A.select(A.lt(zh, A.c(2.0 ** -30)), zh, A.c(2.0 ** -30))  # lgamma(z) = -log z - gamma z
    tiny = dd_add_d(A, dd_neg(A, log_dd(A, tiny_z)), A.neg(A.mul(A.c(k["euler"][0]), tiny_z)))
    d1 = A.fabs(A.sub(zh, one))
    d2 = A.fabs(A.sub(zh, A.c(2.0)))
    pos = main
    pos = _choose(A, A.lt(d1, A.c(NEAR)), near1, pos)
    pos = _choose(A, A.lt(d2, A.c(NEAR)), near2, pos)
    pos = _choose(A, A.lt(zh, A.c(2.0 ** -30)), tiny, pos)
    # x (log x - 1) (the rest is below 2^-890 of it), scaled by 2^-128 so that Dekker's split fits
    lz = dd_add_d(A, log_dd(A, A.select(huge, zh, one)), A.c(-1.0))
    v = dd_mul_d(A, lz, A.mul(A.select(huge, zh, one), A.c(2.0 ** -128)))
    big = A.mul(A.add(v[0], v[1]), A.c(2.0 ** 128))
    result_pos = A.select(huge, big, A.add(pos[0], pos[1]))
    # reflection for x < 0: log(pi) - log|sin(pi x)| - lgamma(1 - x)
    xr = A.select(A.and_(A.lt(x, zero), A.lt(a, A.c(2.0 ** 52))), x, A.c(-0.5))
    magic = A.c(2.0 ** 52)
    nearest = A.add(A.sub(xr, magic), magic)  # xr - 2^52 is in (-2^53, -2^52]: ulp 1, so rounded to an integer
    d = A.fabs(A.sub(xr, nearest))  # exact, in [0, 1/2]
    use_cos = A.gt(d, A.c(0.25))
    arg = A.select(use_cos, A.sub(A.c(0.5), d), d)
    s, c = _sin_cos(A, dd_mul_d(A, _dd(A, k["pi"]), arg))
    sp = (A.select(use_cos, c[0], s[0]), A.select(use_cos, c[1], s[1]))  # |sin(pi x)| > 0
    refl = dd_add(A, _dd(A, k["log_pi"]), dd_neg(A, _log_of_dd(A, sp)))
    refl = dd_add(A, refl, dd_neg(A, pos))
    result_neg = A.add(refl[0], refl[1])
    pole = A.or_(A.eq(d, zero), A.uge(a, A.c(2.0 ** 52)))  # above 2^52 every double is an integer
    result_neg = A.select(pole, A.c(INF), result_neg)
    # tiny negative x: -log|x| - gamma x (the reflection's sin(pi x) would underflow)
    small_a = A.select(A.lt(a, A.c(2.0 ** -30)), A.select(A.gt(a, zero), a, one), A.c(2.0 ** -30))
    tiny_neg = dd_add_d(A, dd_neg(A, log_dd(A, small_a)), A.neg(A.mul(A.c(k["euler"][0]), xr)))
    result_neg = A.select(A.and_(A.lt(a, A.c(2.0 ** -30)), A.lt(x, zero)), A.add(tiny_neg[0], tiny_neg[1]),
                          result_neg)
    y = A.select(positive, result_pos, result_neg)
    y = A.select(A.or_(A.eq(x, one), A.eq(x, A.c(2.0))), zero, y)
    y = A.select(A.eq(x, zero), A.c(INF), y)
    y = A.select(A.eq(a, A.c(INF)), A.c(INF), y)
    return A.select(A.uno(x, x), x, y)


def _choose(A, cond, a, b):
    return A.select(cond, a[0], b[0]), A.select(cond, a[1], b[1])


ALGORITHMS = {"lgamma": lgamma}
