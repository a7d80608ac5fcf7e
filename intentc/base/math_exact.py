"""The exactly rounded functions: ``floor ceil round trunc copysign fmod remainder``, in the
operand's own format, branch-free (selects only) and call-free.

Each result is the exact value (these functions are exact by definition), so every target
and the interpreter give the same bits whatever the instructions; no rounding instruction
is assumed (the x86-64 baseline has none), which also lets every loop vectorise.

``round``
    Half to even (IEEE ``roundToIntegralTiesToEven``): ``|x| + 2^p - 2^p`` rounds ``|x| <
    2^p`` to an integer, ties to even (``p`` the mantissa bits); larger ``|x|``, infinities
    and NaN are already integral and pass through; ``x``'s sign is copied back, so
    ``round(-0.4) == -0``.
``trunc floor ceil``
    ``round`` then a correction by one where it went the wrong way, and ``x``'s sign copied
    (the result of each has ``x``'s sign or is a zero of ``x``'s sign: ``ceil(-0.5) == -0``).
``copysign(x, y)``
    ``|x|`` with ``y``'s sign bit (NaN's sign bit included).
``fmod(x, y)``
    C's ``fmod``: ``x - n y`` with ``n = trunc(x / y)``, exact, with ``x``'s sign. f32 (f16
    through f32) computes in f64 on the integral significands: ``M_x 2^d mod M_y`` with
    ``2^d mod M_y`` by square-and-double over the 9 bits of the exponent gap ``d`` (every
    product below 2^48, exact in f64), one division (the reciprocal of ``M_y``) in all.
    f64 closes 48 bits per step with Dekker's exact product (45 steps). ``fmod(x, 0)``,
    ``fmod(+-inf, y)`` and NaN give NaN; ``fmod(x, +-inf) == x``; ``fmod(+-0, y) == +-0``.
``remainder(x, y)``
    IEEE ``remainder``: ``x - n y`` with ``n`` the integer nearest ``x / y``, ties to even;
    ``fmod`` by ``2y`` and then at most one subtraction of ``y``, all exact.
"""
from __future__ import annotations



def _sign_mask(A):
    return A.ic(-(1 << (A.fmt.bits - 1)))


def copysign(A, x, y):
    mag = A.iand(A.bits(x), A.ic((1 << (A.fmt.bits - 1)) - 1))
    return A.from_bits(A.ior(mag, A.iand(A.bits(y), _sign_mask(A))))


def _round_abs(A, a):
    """``a >= 0`` (or NaN) rounded to an integer, ties to even."""
    big = A.c(2.0 ** A.fmt.mant)
    r = A.sub(A.add(a, big), big)
    return A.select(A.lt(a, big), r, a)


def round_(A, x):
    return copysign(A, _round_abs(A, A.fabs(x)), x)


def trunc(A, x):
    a = A.fabs(x)
    r = _round_abs(A, a)
    r = A.select(A.gt(r, a), A.sub(r, A.c(1.0)), r)
    return copysign(A, r, x)


def floor(A, x):
    r = round_(A, x)
    r = A.select(A.gt(r, x), A.sub(r, A.c(1.0)), r)
    return copysign(A, r, x)


def ceil(A, x):
    r = round_(A, x)
    r = A.select(A.lt(r, x), A.add(r, A.c(1.0)), r)
    return copysign(A, r, x)


def _exponent(A, a):
    """``floor(log2(a))`` as a float for a positive ``a`` (subnormals included), from the bits."""
    F = A.fmt
    sub = A.lt(a, A.c(F.min_normal))
    a = A.select(sub, A.mul(a, A.c(2.0 ** (F.mant + 2))), a)
    e = A.itof(A.isub(A.ashr(A.bits(a), F.mant), A.ic(F.bias)))
    return A.select(sub, A.sub(e, A.c(float(F.mant + 2))), e)


def _pow2(A, e):
    """``2^e`` for an integral float ``e`` in the normal range (built in the exponent bits)."""
    F = A.fmt
    return A.from_bits(A.shl(A.iadd(A.ftoi(e), A.ic(F.bias)), F.mant))


def _floor_small(A, v):
    """``floor(v)`` for ``0 <= v < 2^51``."""
    big = A.c(2.0 ** 52)
    t = A.sub(A.add(v, big), big)
    return A.select(A.gt(t, v), A.sub(t, A.c(1.0)), t)


def _mod_integer(A, p, m, inv):
    """``p mod m`` for integers ``0 <= p < 2^49`` and ``2^23 <= m < 2^24`` (``inv`` = 1/m rounded):
    the quotient estimate is the floor or one off, the product and difference exact."""
    q = _floor_small(A, A.mul(p, inv))
    r = A.sub(p, A.mul(q, m))
    r = A.select(A.lt(r, A.c(0.0)), A.add(r, m), r)
    return A.select(A.uge(r, m), A.sub(r, m), r)


def _fmod_abs_narrow(A, a, b):
    """``fmod(a, b)`` exactly for ``a > 0``, ``b > 0`` of 24-bit significands (f32 values, and
    twice one), computed in f64: with ``a = M_a 2^(e_a - 23)``, ``b = M_b 2^(e_b - 23)``
    (integral ``M`` in ``[2^23, 2^24)``), ``fmod = 2^(e_b - 23) (M_a 2^d mod M_b)``, ``d = e_a - e_b``;
    ``2^d mod M_b`` by square-and-double over the 9 bits of ``d`` (products below 2^48,
    exact). Valid where ``a >= b``; the caller takes ``a`` itself below."""
    ea, eb = _exponent(A, a), _exponent(A, b)
    twenty_three = A.c(23.0)
    ma = A.mul(a, _pow2(A, A.sub(twenty_three, ea)))
    mb = A.mul(b, _pow2(A, A.sub(twenty_three, eb)))
    inv = A.div(A.c(1.0), mb)
    d = A.sub(ea, eb)
    bits = A.ftoi(A.select(A.gt(d, A.c(0.0)), d, A.c(0.0)))  # below 2^9
    r = A.c(1.0)
    for k in range(8, -1, -1):
        r = _mod_integer(A, A.mul(r, r), mb, inv)
        twice = A.add(r, r)
        twice = A.select(A.uge(twice, mb), A.sub(twice, mb), twice)
        bit = A.ilt(A.ic(0), A.iand(A.ashr(bits, k), A.ic(1)))
        r = A.select(bit, twice, r)
    return A.mul(_mod_integer(A, A.mul(ma, r), mb, inv), _pow2(A, A.sub(eb, twenty_three)))


def _fmod_abs(A, a, b):
    """``fmod(a, b)`` for finite ``a >= 0`` and finite ``b > 0``, exact. f32 operands (in f64):
    ``_fmod_abs_narrow``. f64: each step subtracts ``q * b * 2^s``, ``s`` chosen so that the
    quotient ``q`` has at most 50 bits and the product is exact by Dekker's product."""
    if A.source == 32:
        return _fmod_abs_narrow(A, a, b)
    step, steps = 48, 45
    eb = _exponent(A, b)
    zero = A.c(0.0)
    for _ in range(steps):
        ea = _exponent(A, A.select(A.lt(a, b), b, a))  # below b (0 included): s = 0
        s = A.sub(A.sub(ea, eb), A.c(float(step)))
        s = A.select(A.gt(s, zero), s, zero)
        # 2^s may exceed the format (s reaches 2049 from the smallest subnormal): three factors
        t1 = trunc(A, A.div(s, A.c(3.0)))
        t2 = trunc(A, A.mul(A.sub(s, t1), A.c(0.5)))
        bs = A.mul(A.mul(A.mul(b, _pow2(A, t1)), _pow2(A, t2)), _pow2(A, A.sub(A.sub(s, t1), t2)))
        q = trunc(A, A.div(a, bs))  # below 2^(step + 2); at most one too large, never too small
        a = _sub_product(A, a, q, bs)
        a = A.select(A.lt(a, zero), A.add(a, bs), a)  # q one too large: back into [0, bs)
        a = A.select(A.uge(a, bs), A.sub(a, bs), a)
    return a


def _sub_product(A, a, q, bs):
    """``a - q bs`` exactly, for an integral ``q < 2^50`` at most one above ``a / bs``: Dekker's
    product ``q bs = p + e`` with halves cut in the bits (no overflow of the splitting
    constant), ``a - p`` exact (Sterbenz) and the difference representable. Where ``bs`` is so
    small that the product's low part would underflow, all three are scaled by 2^200 first
    (``a < 2^51 bs``: nothing overflows), where ``a`` is so large that ``q bs`` could round
    to inf, by 2^-200 (``bs > 2^950``: nothing underflows)."""
    tiny = A.lt(bs, A.c(2.0 ** -900))
    huge = A.gt(a, A.c(2.0 ** 1000))  # q bs may round past the largest finite value
    up = A.select(tiny, A.c(2.0 ** 200), A.select(huge, A.c(2.0 ** -200), A.c(1.0)))
    a, bs = A.mul(a, up), A.mul(bs, up)
    mask = A.ic(-(1 << 27))
    bh = A.from_bits(A.iand(A.bits(bs), mask))
    bl = A.sub(bs, bh)
    qh = A.from_bits(A.iand(A.bits(q), mask))
    ql = A.sub(q, qh)
    p = A.mul(q, bs)
    e = A.add(A.add(A.add(A.sub(A.mul(qh, bh), p), A.mul(qh, bl)), A.mul(ql, bh)), A.mul(ql, bl))
    r = A.sub(A.sub(a, p), e)
    return A.mul(r, A.select(tiny, A.c(2.0 ** -200), A.select(huge, A.c(2.0 ** 200), A.c(1.0))))


def fmod(A, x, y):
    a, b = A.fabs(x), A.fabs(y)
    finite = A.lt(a, A.c(float("inf")))
    usable = A.and_(A.gt(b, A.c(0.0)), A.lt(b, A.c(float("inf"))))
    r = _fmod_abs(A, A.select(finite, a, A.c(0.0)), A.select(usable, b, A.c(1.0)))
    r = A.select(A.lt(a, b), a, r)  # |x| < |y| (y = inf included): x itself
    r = copysign(A, r, x)
    bad = A.or_(A.or_(A.uno(x, y), A.eq(b, A.c(0.0))), A.eq(a, A.c(float("inf"))))
    return A.select(bad, A.c(float("nan")), r)


def remainder(A, x, y):
    a, b = A.fabs(x), A.fabs(y)
    inf = A.c(float("inf"))
    # a = 2b m + r with r in [0, 2b) (2b overflowing to inf leaves r = a, still right)
    r = fmod(A, a, A.add(b, b))
    odd = A.uge(r, b)  # the quotient so far: 2m + 1 once b is taken off
    r = A.select(odd, A.sub(r, b), r)  # exact, now in [0, b)
    twice = A.add(r, r)  # may overflow only when r > b / 2 anyway
    up = A.or_(A.gt(twice, b), A.and_(A.eq(twice, b), odd))  # past half, or a tie with an odd quotient
    res = A.select(up, A.sub(r, b), r)
    res = A.from_bits(A.ixor(A.bits(res), A.iand(A.bits(x), _sign_mask(A))))  # x's sign, zeros included
    bad = A.or_(A.or_(A.uno(x, y), A.eq(b, A.c(0.0))), A.eq(a, inf))
    res = A.select(A.eq(b, inf), x, res)
    return A.select(bad, A.c(float("nan")), res)
