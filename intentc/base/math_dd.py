"""Error-free transformations and double-word ("dd") arithmetic over an arithmetic ``A``.

The f64 algorithms carry intermediate values as unevaluated sums ``hi + lo`` (``|lo| <=
ulp(hi) / 2``) to keep about 100 bits where a cancellation or a long chain of roundings
would otherwise cost the last bits of the result. Every operation here is built from
exactly rounded IEEE additions and multiplications only (Dekker's product by splitting,
no fused multiply-add), so it runs identically as LLVM IR and with NumPy.

Guarantees (Dekker 1971, Knuth's TwoSum): ``two_sum`` and ``two_prod`` are exact (the
latter while no product overflows or underflows); ``dd_add``, ``dd_mul``, ``dd_div``
have a relative error below ``2^-100`` of their result (a few ``2^-106`` for products).
"""
from __future__ import annotations

SPLIT = 134217729.0  # 2^27 + 1: Veltkamp's splitting constant for 53-bit doubles


def fast_two_sum(A, a, b):
    """``a + b == s + e`` exactly when ``|a| >= |b|`` (or ``a == 0``)."""
    s = A.add(a, b)
    return s, A.sub(b, A.sub(s, a))


def two_sum(A, a, b):
    """``a + b == s + e`` exactly, whatever the magnitudes (Knuth)."""
    s = A.add(a, b)
    bb = A.sub(s, a)
    return s, A.add(A.sub(a, A.sub(s, bb)), A.sub(b, bb))


def split(A, a):
    """``a == hi + lo`` with each half of at most 26 significant bits (|a| < 2^996)."""
    t = A.mul(A.c(SPLIT), a)
    hi = A.sub(t, A.sub(t, a))
    return hi, A.sub(a, hi)


def two_prod(A, a, b):
    """``a * b == p + e`` exactly (Dekker), while the product neither overflows nor underflows."""
    p = A.mul(a, b)
    ah, al = split(A, a)
    bh, bl = split(A, b)
    e = A.add(A.add(A.add(A.sub(A.mul(ah, bh), p), A.mul(ah, bl)), A.mul(al, bh)), A.mul(al, bl))
    return p, e


def dd_add(A, x, y):
    """``(xh + xl) + (yh + yl)`` as a normalised dd (the accurate two-TwoSum sum)."""
    s, e = two_sum(A, x[0], y[0])
    t, f = two_sum(A, x[1], y[1])
    e = A.add(e, t)
    s, e = fast_two_sum(A, s, e)
    e = A.add(e, f)
    return fast_two_sum(A, s, e)


def dd_add_d(A, x, b):
    """``(xh + xl) + b`` for a double ``b``."""
    s, e = two_sum(A, x[0], b)
    e = A.add(e, x[1])
    return fast_two_sum(A, s, e)


def dd_mul(A, x, y):
    p, e = two_prod(A, x[0], y[0])
    e = A.add(e, A.add(A.mul(x[0], y[1]), A.mul(x[1], y[0])))
    return fast_two_sum(A, p, e)


def dd_mul_d(A, x, b):
    p, e = two_prod(A, x[0], b)
    e = A.add(e, A.mul(x[1], b))
    return fast_two_sum(A, p, e)


def dd_div(A, x, y):
    """``(xh + xl) / (yh + yl)``: one quotient, its remainder computed exactly, a correction."""
    q1 = A.div(x[0], y[0])
    r = dd_add(A, x, _neg(A, dd_mul_d(A, y, q1)))
    q2 = A.div(r[0], y[0])
    r = dd_add(A, r, _neg(A, dd_mul_d(A, y, q2)))
    q3 = A.div(r[0], y[0])
    q1, q2 = fast_two_sum(A, q1, q2)
    return dd_add_d(A, (q1, q2), q3)


def dd_sq(A, x):
    p, e = two_prod(A, x[0], x[0])
    e = A.add(e, A.mul(A.add(x[0], x[0]), x[1]))
    return fast_two_sum(A, p, e)


def _neg(A, x):
    return A.neg(x[0]), A.neg(x[1])


dd_neg = _neg


def dd(A, hi: float, lo: float = 0.0):
    return A.c(hi), A.c(lo)


def dd_horner(A, z, coeffs):
    """``c0 + z (c1 + z (c2 + ...))`` in dd; ``coeffs`` are (hi, lo) pairs of floats."""
    acc = dd(A, *coeffs[-1])
    for hi, lo in reversed(coeffs[:-1]):
        acc = dd_add(A, dd_mul(A, acc, z), dd(A, hi, lo))
    return acc


def horner(A, z, coeffs):
    acc = A.c(coeffs[-1])
    for c in reversed(coeffs[:-1]):
        acc = A.add(A.c(c), A.mul(z, acc))
    return acc
