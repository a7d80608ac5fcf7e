"""Exact constants for the math functions, computed with Python integers when imported
(no table of digits to mistype): pi, ln 2, ln 10 to 1,400 bits, their double-word
roundings, and the bits of 2/pi that the Payne-Hanek reduction of ``math_trig`` reads.

``to_dd(q)`` is the double-word (hi, lo) nearest a rational ``q``: ``hi`` the double
nearest ``q``, ``lo`` the double nearest ``q - hi`` (so ``hi + lo`` is within
``2^-106 |q|``).
"""
from __future__ import annotations

from fractions import Fraction

PREC = 1400  # bits after the binary point of the fixed-point constants below


def _atan_inv(n: int, prec: int) -> int:
    """``atan(1/n) * 2^prec`` (truncated series, error below a few units)."""
    one = 1 << (prec + 16)
    term = one // n
    total, k, n2, sign = term, 1, n * n, 1
    while term:
        term //= n2
        k += 2
        sign = -sign
        total += sign * (term // k)
    return total >> 16


def _atanh_inv(n: int, prec: int) -> int:
    one = 1 << (prec + 16)
    term = one // n
    total, k, n2 = term, 1, n * n
    while term:
        term //= n2
        k += 2
        total += term // k
    return total >> 16


PI_FIXED = 16 * _atan_inv(5, PREC) - 4 * _atan_inv(239, PREC)  # Machin: pi * 2^PREC
LN2_FIXED = 2 * _atanh_inv(3, PREC)  # ln 2 = 2 atanh(1/3)
LN10_FIXED = 3 * LN2_FIXED + 2 * _atanh_inv(9, PREC)  # ln 10 = 3 ln 2 + ln(5/4), 5/4 = (1 + 1/9)/(1 - 1/9)

PI = Fraction(PI_FIXED, 1 << PREC)
LN2 = Fraction(LN2_FIXED, 1 << PREC)
LN10 = Fraction(LN10_FIXED, 1 << PREC)


def to_dd(q: Fraction) -> tuple[float, float]:
    hi = float(q)
    return hi, float(q - Fraction(hi))


def chop(q: Fraction, bits: int) -> float:
    """``q`` truncated to ``bits`` significant bits (so products with small integers are exact)."""
    if q == 0:
        return 0.0
    e = 0
    a = abs(q)
    while a >= 2:
        a /= 2
        e += 1
    while a < 1:
        a *= 2
        e -= 1
    m = int(a * (1 << (bits - 1)))
    value = Fraction(m, 1 << (bits - 1)) * Fraction(2) ** e
    return float(value if q > 0 else -value)


def two_over_pi_bits(start: int, count: int) -> int:
    """The ``count`` bits of 2/pi from weight ``2^-start`` down (``start >= 1``), as an integer:
    ``floor(2/pi * 2^(start + count - 1)) mod 2^count``."""
    need = start + count + 64
    # 2/pi to `need` bits: (2 << (PREC + need)) // PI_FIXED is 2/pi * 2^need, truncated
    value = (2 << (PREC + need)) // PI_FIXED
    return (value >> (need - (start + count - 1))) & ((1 << count) - 1)


def two_over_pi_window(s: int, width: int) -> int:
    """``floor(2^s * 2/pi * 2^width) mod 2^(width + 2)``: the bits of ``2^s * 2/pi`` from weight
    ``2^1`` down to ``2^-width`` (an integer of ``width + 2`` bits), for ``s >= -1``."""
    need = s + width + 64
    value = (2 << (PREC + need)) // PI_FIXED  # 2/pi * 2^need, truncated (PREC >> need)
    return (value >> (need - s - width)) & ((1 << (width + 2)) - 1)
