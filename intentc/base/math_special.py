"""``erf erfc cbrt rsqrt hypot asinh acosh atanh`` in f64, branch-free, finished in dd.

``erf`` / ``erfc``
    ``|x| < 1/2``: ``erf x = x (2/sqrt(pi) + z P(z))``, ``z = x^2``, the Taylor series (14
    terms) with its leading coefficient in dd. ``1/2 <= |x| < 28``: ``erfc x = e^(-x^2)
    g(x)`` with ``g = e^(x^2) erfc`` expanded in Taylor series of degree 15 around the
    centre of each interval of width 1/4 (110 intervals; ``g(x0)`` from its continued
    fraction or, below 2, from erf's series, in 80-digit decimals; the coefficients from
    ``g' = 2 x g - 2/sqrt(pi)``), read from a constant table indexed by the interval;
    ``x^2`` exact in dd and ``e^(-x^2)`` from ``math_explog.exp_core``. ``erf = 1 - erfc``,
    ``erfc(-x) = 2 - erfc(x)`` in dd; ``erf`` is odd bit for bit.
``cbrt``
    ``|x| = 2^(3q + r) m``; a cubic guess for ``cbrt(2^r m)`` in ``[1, 2)``, three Newton
    steps, one last correction with the residual ``t - y^3`` in dd; times ``2^q``, ``x``'s sign.
``rsqrt``
    ``y = 1 / sqrt(x)`` corrected once by ``y (1 - x y^2) / 2`` with ``x y^2`` in dd (inputs
    scaled by an even power of two where ``y^2`` would leave the range).
``hypot``
    Both scaled by the power of two that brings the larger into [1, 2), the sum of squares
    in dd, its square root corrected in dd, scaled back once; ``hypot(+-inf, NaN) = +inf``.
``asinh acosh atanh``
    ``log(a + sqrt(a^2 + 1))``, ``log(x + sqrt((x - 1)(x + 1)))`` and ``log((1 + a)/(1 - a)) / 2``
    with every argument of the logarithm formed in dd (``math_explog.log_dd`` of its high
    part plus low/high), so there is no cancellation near 0 or 1; ``log(2a)`` for huge ``a``.
"""
from __future__ import annotations

import functools
from decimal import Decimal, localcontext

from intentc.base.math_constants import LN2, PI, to_dd
from intentc.base.math_dd import dd_add, dd_add_d, dd_div, dd_mul, dd_mul_d, fast_two_sum, horner, two_prod, two_sum
from intentc.base.math_explog import _int, _pow2, _scale, exp_core, log_dd
from math import factorial

INF, NAN = float("inf"), float("nan")
ERF_LOW, ERF_HIGH, ERF_STEP, ERF_DEGREE = 0.5, 28.0, 0.25, 15
ERF_INTERVALS = int((ERF_HIGH - ERF_LOW) / ERF_STEP)


@functools.lru_cache(maxsize=None)
def _erf_constants():
    """(2/sqrt(pi) as dd, the series coefficients of erf, the table of g's Taylor coefficients)."""
    with localcontext() as ctx:
        ctx.prec = 80
        sqrt_pi = (Decimal(PI.numerator) / Decimal(PI.denominator)).sqrt()
        c = 2 / sqrt_pi

        def erfc_series(x: Decimal) -> Decimal:
            total, term, n = Decimal(0), x, 0
            while True:
                t = term / (2 * n + 1)
                total += t
                if abs(t) < Decimal(10) ** -75:
                    return 1 - c * total
                n += 1
                term = -term * x * x / n

        def g_fraction(x: Decimal) -> Decimal:  # e^(x^2) erfc(x) by its continued fraction
            t = x
            for n in range(3000 if x < 4 else 800, 0, -1):
                t = x + (Decimal(n) / 2) / t
            return 1 / (sqrt_pi * t)

        table = []
        for j in range(ERF_INTERVALS):
            x0 = Decimal(ERF_LOW) + Decimal(ERF_STEP) * j + Decimal(ERF_STEP) / 2
            g = erfc_series(x0) * (x0 * x0).exp() if x0 < 2 else g_fraction(x0)
            a = [g, 2 * x0 * g - c]
            for n in range(1, ERF_DEGREE):
                a.append((2 * x0 * a[n] + 2 * a[n - 1]) / (n + 1))
            hi = float(a[0])
            table += [hi, float(a[0] - Decimal(hi))] + [float(v) for v in a[1:]]
        c_hi = float(c)
        c_dd = (c_hi, float(c - Decimal(c_hi)))
        series = tuple(float(c * Decimal((-1) ** n) / (factorial(n) * (2 * n + 1))) for n in range(1, 15))
    return c_dd, series, tuple(table)


def _erf_small(A, a):
    """``erf a`` as dd for ``|a| <= 1/2``."""
    c_dd, series, _ = _erf_constants()
    z = A.mul(a, a)
    lead = dd_mul_d(A, (A.c(c_dd[0]), A.c(c_dd[1])), a)
    return dd_add_d(A, lead, A.mul(A.mul(a, z), horner(A, z, series)))


def _erfc_large(A, a):
    """``k`` and ``v`` (dd) with ``erfc a = 2^k v`` for ``1/2 <= a < 28`` (sanitised ``a``)."""
    _, _, table = _erf_constants()
    width = ERF_DEGREE + 1
    jf = A.sub(A.mul(A.sub(a, A.c(ERF_LOW)), A.c(1.0 / ERF_STEP)), A.c(0.5))
    magic = A.c(1.5 * 2.0 ** 52)
    jf = A.sub(A.add(jf, magic), magic)  # the interval: round((a - low)/step - 1/2)
    jf = A.select(A.lt(jf, A.c(0.0)), A.c(0.0), A.select(A.gt(jf, A.c(ERF_INTERVALS - 1.0)),
                                                     A.c(ERF_INTERVALS - 1.0), jf))
    x0 = A.add(A.c(ERF_LOW + ERF_STEP / 2), A.mul(jf, A.c(ERF_STEP)))
    h = A.sub(a, x0)  # exact
    base = _int(A, A.mul(jf, A.c(float(width + 1))))  # the interval's row: g(x0) in dd, then a_1 .. a_15
    coeff = [A.table("erfc_g", table, A.iadd(base, A.ic(n))) for n in range(width + 1)]
    acc = coeff[width]
    for n in range(width - 1, 1, -1):
        acc = A.add(coeff[n], A.mul(h, acc))
    tail = A.mul(h, acc)
    g = two_sum(A, coeff[0], tail)
    g = fast_two_sum(A, g[0], A.add(g[1], coeff[1]))
    sq = two_prod(A, a, a)
    kf, p = exp_core(A, A.neg(sq[0]), A.neg(sq[1]))
    e1 = dd_add_d(A, p, A.c(1.0))
    return kf, dd_mul(A, e1, g)


def _erf_tiny(A, a):
    """``erf a = (2/sqrt(pi)) a`` for ``a < 2^-1000``, computed on ``a 2^64`` so that the product's
    rounding error is kept (Dekker's split of a subnormal would lose it) and the result is
    rounded once more only where it is subnormal."""
    c_dd, _, _ = _erf_constants()
    scaled = A.mul(A.select(A.lt(a, A.c(2.0 ** -1000)), a, A.c(0.0)), A.c(2.0 ** 64))  # exact
    p, e = two_prod(A, A.c(c_dd[0]), scaled)
    return A.mul(A.add(p, A.add(e, A.mul(A.c(c_dd[1]), scaled))), A.c(2.0 ** -64))


def _sign_of(A, y, x):
    return A.from_bits(A.ixor(A.bits(y), A.iand(A.bits(x), A.ic(-(1 << 63)))))


def _erf_parts(A, x):
    a = A.fabs(x)
    small = A.lt(a, A.c(ERF_LOW))
    inside = A.and_(A.uge(a, A.c(ERF_LOW)), A.lt(a, A.c(ERF_HIGH)))
    al = A.select(inside, a, A.c(ERF_LOW))
    kf, v = _erfc_large(A, al)
    kc = A.select(A.lt(kf, A.c(-1000.0)), A.c(-1000.0), kf)
    s = _pow2(A, kc)
    ec = (A.mul(v[0], s), A.mul(v[1], s))  # erfc(a) in dd (negligible below 2^-1000)
    es = _erf_small(A, A.select(small, a, A.c(0.0)))
    return a, small, kf, v, ec, es


def erf(A, x):
    a, small, _, _, ec, es = _erf_parts(A, x)
    big = dd_add_d(A, (A.neg(ec[0]), A.neg(ec[1])), A.c(1.0))
    y = A.select(small, A.add(es[0], es[1]), A.add(big[0], big[1]))
    y = A.select(A.lt(a, A.c(2.0 ** -1000)), _erf_tiny(A, a), y)
    y = A.select(A.uge(a, A.c(ERF_HIGH)), A.c(1.0), y)  # +-inf included
    y = A.select(A.uno(x, x), x, y)
    return _sign_of(A, y, x)


def erfc(A, x):
    a, small, kf, v, ec, es = _erf_parts(A, x)
    negative = A.lt(x, A.c(0.0))
    near = dd_add_d(A, (A.select(negative, es[0], A.neg(es[0])), A.select(negative, es[1], A.neg(es[1]))),
                    A.c(1.0))  # 1 - erf(x)
    far_neg = dd_add_d(A, (A.neg(ec[0]), A.neg(ec[1])), A.c(2.0))  # 2 - erfc(|x|)
    far_pos = _scale(A, A.add(v[0], v[1]), kf)
    y = A.select(negative, A.add(far_neg[0], far_neg[1]), far_pos)
    y = A.select(small, A.add(near[0], near[1]), y)
    y = A.select(A.uge(a, A.c(ERF_HIGH)), A.select(negative, A.c(2.0), A.c(0.0)), y)
    return A.select(A.uno(x, x), x, y)


CBRT_GUESS = (0.7214, 0.329, -0.0347, 0.0017)


def cbrt(A, x):
    a = A.fabs(x)
    sub = A.lt(a, A.c(2.0 ** -1022))
    a_s = A.select(sub, A.mul(a, A.c(2.0 ** 54)), a)
    ok = A.and_(A.gt(a_s, A.c(0.0)), A.lt(a_s, A.c(INF)))
    a_s = A.select(ok, a_s, A.c(1.0))
    bits = A.bits(a_s)
    e = A.itof(A.isub(A.ashr(bits, 52), A.ic(1023)))
    m = A.from_bits(A.ior(A.iand(bits, A.ic((1 << 52) - 1)), A.ic(1023 << 52)))  # [1, 2)
    q = A.div(e, A.c(3.0))
    magic = A.c(1.5 * 2.0 ** 52)
    qr = A.sub(A.add(q, magic), magic)
    qf = A.select(A.gt(qr, q), A.sub(qr, A.c(1.0)), qr)  # floor(e / 3)
    r = A.sub(e, A.mul(qf, A.c(3.0)))  # 0, 1 or 2
    t = A.mul(m, A.select(A.eq(r, A.c(0.0)), A.c(1.0), A.select(A.eq(r, A.c(1.0)), A.c(2.0), A.c(4.0))))
    y = horner(A, t, CBRT_GUESS)
    three = A.c(3.0)
    for _ in range(3):
        y = A.sub(y, A.div(A.sub(A.mul(A.mul(y, y), y), t), A.mul(three, A.mul(y, y))))
    y2 = two_prod(A, y, y)
    y3 = dd_mul_d(A, y2, y)
    res = dd_add_d(A, (A.neg(y3[0]), A.neg(y3[1])), t)  # t - y^3, nearly exact
    y = A.add(y, A.div(A.add(res[0], res[1]), A.mul(three, A.mul(y, y))))
    qf = A.sub(qf, A.select(sub, A.c(18.0), A.c(0.0)))
    y = A.mul(y, _pow2(A, qf))
    y = A.select(ok, y, a)  # 0, inf, NaN: themselves
    return _sign_of(A, y, x)


def rsqrt(A, x):
    tiny, huge = A.lt(x, A.c(2.0 ** -900)), A.gt(x, A.c(2.0 ** 900))
    xs = A.select(tiny, A.mul(x, A.c(2.0 ** 1000)), A.select(huge, A.mul(x, A.c(2.0 ** -1000)), x))
    one = A.c(1.0)
    y = A.div(one, A.sqrt(xs))
    y2 = two_prod(A, y, y)
    xy2 = dd_mul_d(A, y2, xs)
    r = dd_add_d(A, (A.neg(xy2[0]), A.neg(xy2[1])), one)  # 1 - x y^2
    z = A.add(y, A.mul(A.mul(y, A.add(r[0], r[1])), A.c(0.5)))
    z = A.mul(z, A.select(tiny, A.c(2.0 ** 500), A.select(huge, A.c(2.0 ** -500), one)))
    ok = A.and_(A.gt(x, A.c(0.0)), A.lt(x, A.c(INF)))
    return A.select(ok, z, A.div(one, A.sqrt(x)))  # 1/sqrt: +-0 -> +-inf, inf -> 0, x < 0 and NaN -> NaN


def hypot(A, x, y):
    a, b = A.fabs(x), A.fabs(y)
    big = A.select(A.gt(b, a), b, a)
    small = A.select(A.gt(b, a), a, b)
    ok = A.and_(A.gt(big, A.c(0.0)), A.lt(big, A.c(INF)))
    bigs = A.select(ok, big, A.c(1.0))
    sub = A.lt(bigs, A.c(2.0 ** -1000))
    bs = A.select(sub, A.mul(bigs, A.c(2.0 ** 200)), bigs)
    e = A.isub(A.ashr(A.bits(bs), 52), A.ic(1023))
    e = A.select(sub, A.isub(e, A.ic(200)), e)
    half = A.ashr(e, 1)
    f1 = A.from_bits(A.shl(A.isub(A.ic(1023), half), 52))
    f2 = A.from_bits(A.shl(A.isub(A.ic(1023), A.isub(e, half)), 52))
    u = A.mul(A.mul(bigs, f1), f2)
    v = A.mul(A.mul(A.select(ok, small, A.c(0.0)), f1), f2)
    s = dd_add(A, two_prod(A, u, u), two_prod(A, v, v))
    r = A.sqrt(s[0])
    p, pe = two_prod(A, r, r)
    r = A.add(r, A.div(A.add(A.sub(A.sub(s[0], p), pe), s[1]), A.add(r, r)))
    g1 = A.from_bits(A.shl(A.iadd(A.ic(1023), half), 52))
    g2 = A.from_bits(A.shl(A.iadd(A.ic(1023), A.isub(e, half)), 52))
    res = A.mul(A.mul(r, g1), g2)
    res = A.select(ok, res, A.add(big, small))  # both 0: 0; inf: inf; NaN: NaN
    inf = A.c(INF)
    return A.select(A.or_(A.eq(a, inf), A.eq(b, inf)), inf, res)


def _log_of_dd(A, v):
    """``log(vh + vl)`` as dd for a positive finite dd."""
    return dd_add_d(A, log_dd(A, v[0]), A.div(v[1], v[0]))


def _sqrt_dd(A, s):
    r = A.sqrt(s[0])
    p, pe = two_prod(A, r, r)
    corr = A.div(A.add(A.sub(A.sub(s[0], p), pe), s[1]), A.add(r, r))
    return fast_two_sum(A, r, A.select(A.gt(r, A.c(0.0)), corr, A.c(0.0)))


LN2_DD = to_dd(LN2)


def _log_2a(A, a):
    """``log(2a)`` as a double for a large finite ``a``."""
    y = dd_add(A, log_dd(A, a), (A.c(LN2_DD[0]), A.c(LN2_DD[1])))
    return A.add(y[0], y[1])


def asinh(A, x):
    a = A.fabs(x)
    huge = A.gt(a, A.c(2.0 ** 500))
    am = A.select(A.and_(A.lt(a, A.c(2.0 ** 500)), A.uge(a, A.c(0.0))), a, A.c(1.0))
    u = _sqrt_dd(A, dd_add_d(A, two_prod(A, am, am), A.c(1.0)))
    v = dd_add_d(A, u, am)
    y = _log_of_dd(A, v)
    y = A.add(y[0], y[1])
    y = A.select(huge, _log_2a(A, A.select(A.lt(a, A.c(INF)), a, A.c(1.0))), y)
    y = A.select(A.eq(a, A.c(INF)), a, y)
    y = A.select(A.lt(a, A.c(2.0 ** -26)), _odd_series(A, a, -1.0 / 6), y)
    y = A.select(A.uno(x, x), x, y)
    return _sign_of(A, y, x)


def _odd_series(A, a, c3: float):
    """``a + c3 a^3`` for ``a < 2^-26`` (the next term is below ``2^-104`` of it), rounded once:
    where the result is ``2^-53`` of 1, the log of a double word has lost its last bit."""
    return A.add(a, A.mul(A.mul(a, A.mul(a, a)), A.c(c3)))


def acosh(A, x):
    huge = A.gt(x, A.c(2.0 ** 500))
    ok = A.and_(A.uge(x, A.c(1.0)), A.lt(x, A.c(2.0 ** 500)))
    xm = A.select(ok, x, A.c(1.0))
    w = dd_mul(A, two_sum(A, xm, A.c(-1.0)), two_sum(A, xm, A.c(1.0)))  # x^2 - 1 = (x - 1)(x + 1)
    v = dd_add_d(A, _sqrt_dd(A, w), xm)
    y = _log_of_dd(A, v)
    y = A.add(y[0], y[1])
    y = A.select(huge, _log_2a(A, A.select(A.lt(x, A.c(INF)), x, A.c(1.0))), y)
    y = A.select(A.eq(x, A.c(INF)), x, y)
    y = A.select(A.uge(x, A.c(1.0)), y, A.c(NAN))
    return A.select(A.uno(x, x), x, y)


def atanh(A, x):
    a = A.fabs(x)
    ok = A.lt(a, A.c(1.0))
    am = A.select(ok, a, A.c(0.0))
    q = dd_div(A, two_sum(A, A.c(1.0), am), two_sum(A, A.c(1.0), A.neg(am)))
    y = _log_of_dd(A, q)
    y = A.mul(A.add(y[0], y[1]), A.c(0.5))
    y = A.select(A.eq(a, A.c(1.0)), A.c(INF), y)
    y = A.select(A.gt(a, A.c(1.0)), A.c(NAN), y)
    y = A.select(A.lt(a, A.c(2.0 ** -26)), _odd_series(A, a, 1.0 / 3), y)
    y = A.select(A.uno(x, x), x, y)
    return _sign_of(A, y, x)


ALGORITHMS = {"erf": erf, "erfc": erfc, "cbrt": cbrt, "rsqrt": rsqrt, "hypot": hypot, "asinh": asinh,
              "acosh": acosh, "atanh": atanh}
