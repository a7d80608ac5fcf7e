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
    through f32) computes in f64: the exponent gap is closed 27 bits per step (a quotient
    of at most 29 bits times a 24-bit ``y`` is exact in f64), 11 steps cover every gap.
    f64 closes 25 bits per step, the product exact as two (85 steps). ``fmod(x, 0)``,
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


def _fmod_abs(A, a, b):
    """``fmod(a, b)`` for finite ``a >= 0`` and finite ``b > 0``, exact. Each step subtracts
    ``q * b * 2^s``, ``s`` chosen so that the quotient ``q`` has at most ``step + 2`` bits
    and the product is exact (in f64 for f32 operands, else as two products)."""
    wide = A.source == 32  # f32 operands, exact in f64: 28-bit steps, products exact as they are
    step, steps = (27, 11) if wide else (25, 85)
    eb = _exponent(A, b)
    zero = A.c(0.0)
    for _ in range(steps):
        ea = _exponent(A, A.select(A.lt(a, b), b, a))  # below b (0 included): s = 0
        s = A.sub(A.sub(ea, eb), A.c(float(step)))
        s = A.select(A.gt(s, zero), s, zero)
        # 2^s may exceed the format (s reaches 2072 from the smallest subnormal): three factors
        t1 = trunc(A, A.div(s, A.c(3.0)))
        t2 = trunc(A, A.mul(A.sub(s, t1), A.c(0.5)))
        bs = A.mul(A.mul(A.mul(b, _pow2(A, t1)), _pow2(A, t2)), _pow2(A, A.sub(A.sub(s, t1), t2)))
        q = trunc(A, A.div(a, bs))
        if wide:
            a = A.sub(a, A.mul(q, bs))  # q < 2^29, bs of 24 bits: exact; so is the difference
        else:  # q < 2^27 times the halves of bs (26 and 27 bits, cut in the bits: no overflow)
            hi = A.from_bits(A.iand(A.bits(bs), A.ic(-(1 << 27))))
            a = A.sub(A.sub(a, A.mul(q, hi)), A.mul(q, A.sub(bs, hi)))  # each step exact (Sterbenz)
        # q may be one off: bring a back into [0, bs)
        a = A.select(A.lt(a, zero), A.add(a, bs), a)
        a = A.select(A.uge(a, bs), A.sub(a, bs), a)
    return a


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
