"""Re-derive the coefficients of intentc/base/math_f32_arith.py (needs mpmath).

    python benchmarks/math/fit_f32.py          # every fit, next to the module's values
    python benchmarks/math/fit_f32.py exp2     # one of them

Each polynomial is the minimax fit of the relative error of the whole function on the
reduced interval with its leading terms fixed, found with the Remez exchange of
tests/codegen/remez_fit.py and rounded to f32. What counts is the measured error over every
f32 input (tests/e2e/test_math_accuracy.py with INTENTC_MATHLIB_F32_STRIDE=1), since the
rounding of the coefficients and of every operation adds to the fit's error.
"""
from __future__ import annotations

import struct
import sys
from pathlib import Path

import mpmath as mp

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "codegen"))
from remez_fit import powers, remez  # noqa: E402

mp.mp.dps = 50


def f32(value) -> float:
    return struct.unpack("<f", struct.pack("<f", float(value)))[0]


def fit_exp2():
    """2^r = 1 + r ln2 + r^2 (c2 + ... + c6 r^4) on |r| <= 1/2."""
    ln2 = mp.log(2)
    edge = mp.mpf("0.5000001")
    return remez(lambda r: mp.power(2, r) - 1 - r * ln2, powers(2, 5), lambda r: 1 / mp.power(2, r), -edge, edge,
                 grid=1500)


def fit_atan():
    """atan t = t + t^3 (c3 + c5 t^2 + ... + c19 t^16) on [0, 1]."""
    return remez(lambda t: mp.atan(t) - t, powers(3, 9, 2), lambda t: 1 / mp.atan(t), mp.mpf("1e-6"),
                 mp.mpf("1.0000001"), grid=2000)


def fit_recip():
    """1 / (1 + z) = c0 + c1 z + c2 z^2 on [0, 1] in absolute error (a correction's factor)."""
    return remez(lambda z: 1 / (1 + z), powers(0, 3), lambda z: mp.mpf(1), mp.mpf(0), mp.mpf("1.0000001"), grid=500)


ERFC_P, ERFC_LOW, ERFC_HIGH, ERFC_DEGREE = 0.35, 0.5, 10.1, 12


def fit_erfc():
    """g(a) = e^(a^2) erfc(a) on [1/2, 10.1] as a polynomial of degree 12 in
    v = (u - centre) / half, u = 1 / (1 + 0.35 a) (math_f32's erf and erfc): a least-squares
    fit on 400 Chebyshev nodes (near-minimax), in doubles; returns the coefficients of v^0..v^12,
    the affine map (centre, 1 / half) and the largest relative error on a grid of 301 points."""
    import numpy as np

    u_lo, u_hi = 1 / (1 + ERFC_P * ERFC_HIGH), 1 / (1 + ERFC_P * ERFC_LOW)
    centre, half = (u_hi + u_lo) / 2, (u_hi - u_lo) / 2

    def g(v):
        a = (1 / (v * half + centre) - 1) / ERFC_P
        x = mp.mpf(a)
        return float(mp.erfc(x) * mp.exp(x * x))

    nodes = np.cos(np.pi * (np.arange(400) + 0.5) / 400)
    cheb = np.polynomial.chebyshev.chebfit(nodes, [g(v) for v in nodes], ERFC_DEGREE)
    coeffs = np.polynomial.chebyshev.cheb2poly(cheb)
    grid = np.linspace(-1, 1, 301)
    worst = max(abs(np.polynomial.polynomial.polyval(v, coeffs) / g(v) - 1) for v in grid)
    return [float(c) for c in coeffs] + [centre, 1 / half], mp.mpf(worst)


FITS = {"exp2": (fit_exp2, "EXP2_POLY"), "atan": (fit_atan, "ATAN_POLY"), "recip": (fit_recip, "RECIP_1PZ"),
        "erfc": (fit_erfc, "ERFC_G")}


def main(argv: list[str]) -> int:
    from intentc.base import math_f32, math_f32_arith

    for name in argv or list(FITS):
        fit, field = FITS[name]
        coeffs, error = fit()
        held = getattr(math_f32 if name == "erfc" else math_f32_arith, field, ())
        print(f"{name}: error of the fit 2^{float(mp.log(error, 2)):.1f}")
        for c, h in zip(coeffs, held or [0.0] * len(coeffs)):
            r = {"recip": lambda v: round(float(v), 8), "erfc": float}.get(name, f32)(c)
            print(f"  {r.hex():>24}  {'=' if r == h else '!= ' + h.hex()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
