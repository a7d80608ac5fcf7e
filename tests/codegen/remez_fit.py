"""Re-derive the polynomial coefficients of intentc/codegen/mathlib.py (needs mpmath).

    python tests/codegen/remez_fit.py            # print every fit next to mathlib's values
    python tests/codegen/remez_fit.py exp f32    # one of them

Each polynomial is the minimax fit of the *relative* error of the whole function on the
reduced interval, with the leading terms fixed (``1 + r`` for exp, ``f - f^2/2`` for the
f32 log, ``x`` for tanh), found with a Remez exchange over a dense grid and then rounded
to the format. The rounded coefficients are what mathlib.py holds; the accuracy that
counts is the measured one (test_mathlib.py), since rounding of the coefficients and of
every operation adds to the fit's error.
"""
from __future__ import annotations

import sys
from pathlib import Path

import mpmath as mp

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

mp.mp.dps = 60


def remez(f, basis, weight, a, b, iterations=40, grid=2500):
    """Coefficients c minimising max |weight(x) (f(x) - sum c_i basis_i(x))| on [a, b],
    and that maximum."""
    n = len(basis)
    # a reference of n + 1 points, nudged off the centre (where some weights vanish)
    ref = sorted((a + b) / 2 + (b - a) * mp.mpf("0.0123") * (1 if i < n else -1)
                 - (b - a) / 2 * mp.cos(mp.pi * i / n) * mp.mpf("0.98") for i in range(n + 1))
    xs = [a + (b - a) * mp.mpf(i) / grid for i in range(grid + 1)]
    fx, wx = [f(x) for x in xs], [weight(x) for x in xs]
    bx = [[p(x) for p in basis] for x in xs]
    worst = None
    for _ in range(iterations):
        matrix = mp.matrix(n + 1, n + 1)
        rhs = mp.matrix(n + 1, 1)
        for i, x in enumerate(ref):
            for j, p in enumerate(basis):
                matrix[i, j] = weight(x) * p(x)
            matrix[i, n] = (-1) ** i
            rhs[i] = weight(x) * f(x)
        solution = mp.lu_solve(matrix, rhs)
        coeffs = [solution[j] for j in range(n)]
        level = abs(solution[n])
        errors = [wx[i] * (fx[i] - mp.fsum(c * p for c, p in zip(coeffs, bx[i]))) for i in range(grid + 1)]
        # the largest error in each run of one sign: the new reference
        runs: list[list] = []
        for i, e in enumerate(errors):
            sign = (e > 0) - (e < 0)
            if sign == 0:
                continue
            if not runs or runs[-1][0] != sign:
                runs.append([sign, i])
            elif abs(e) > abs(errors[runs[-1][1]]):
                runs[-1][1] = i
        while len(runs) > n + 1:  # drop the weaker end
            runs.pop(0 if abs(errors[runs[0][1]]) < abs(errors[runs[-1][1]]) else -1)
        if len(runs) < n + 1:
            raise RuntimeError(f"only {len(runs)} alternations")
        ref = [xs[i] for _, i in runs]
        worst = max(abs(e) for e in errors)
        if worst - level < 1e-4 * worst:
            break
    return coeffs, worst


def powers(first: int, count: int, step: int = 1):
    return [(lambda k: (lambda x: x ** k))(first + step * i) for i in range(count)]


LN2 = mp.log(2)
EXP_R = mp.mpf("0.3466") * (1 + mp.mpf("1e-5"))  # |r| <= ln2/2 = 0.34657..., with slack for rounding


def fit_exp(degree: int, grid: int):
    """e^r = 1 + r + sum_{k=2}^{degree} c_k r^k on |r| <= ln2/2."""
    return remez(lambda r: mp.exp(r) - 1 - r, powers(2, degree - 1), lambda r: 1 / mp.exp(r), -EXP_R, EXP_R,
                 grid=grid)


def fit_log_f32(degree: int, grid: int):
    """log1p(f) = f - f^2/2 + sum_{k=3}^{degree} c_k f^k on f in [sqrt(1/2) - 1, sqrt(2) - 1]."""
    a, b = mp.sqrt(mp.mpf(0.5)) - 1 - mp.mpf("1e-7"), mp.sqrt(2) - 1 + mp.mpf("1e-7")
    return remez(lambda f: mp.log1p(f) - f + f * f / 2, powers(3, degree - 2),
                 lambda f: 1 / mp.log1p(f) if f else mp.mpf(1), a, b, grid=grid)


def fit_log_f64(terms: int, grid: int):
    """2 atanh(s) = 2s + s R(s^2), R(z) = sum_{k=1}^{terms} c_k z^k, |s| <= (sqrt2-1)/(sqrt2+1)."""
    top = (mp.sqrt(2) - 1) / (mp.sqrt(2) + 1) * (1 + mp.mpf("1e-6"))
    return remez(lambda s: 2 * mp.atanh(s) - 2 * s, powers(3, terms, 2), lambda s: 1 / (2 * mp.atanh(s)),
                 mp.mpf("1e-8"), top, grid=grid)


def fit_tanh(terms: int, end: str, grid: int):
    """tanh(x) = x + sum_{k=0}^{terms-1} c_k x^(2k+3) on [0, end]."""
    return remez(lambda x: mp.tanh(x) - x, powers(3, terms, 2), lambda x: 1 / mp.tanh(x), mp.mpf("1e-8"),
                 mp.mpf(end), grid=grid)


FITS = {
    ("exp", "f32"): (lambda: fit_exp(6, 3000), "exp_poly"),
    ("exp", "f64"): (lambda: fit_exp(11, 2000), "exp_poly"),
    ("log", "f32"): (lambda: fit_log_f32(10, 3000), "log_poly"),
    ("log", "f64"): (lambda: fit_log_f64(7, 2000), "log_poly"),
    ("tanh", "f32"): (lambda: fit_tanh(8, "1.0", 3000), "tanh_poly"),
    ("tanh", "f64"): (lambda: fit_tanh(13, "0.75", 2500), "tanh_poly"),
}


def rounded(value, fmt: str) -> float:
    import numpy as np

    return float(np.float32(float(value))) if fmt == "f32" else float(value)


def main(argv: list[str]) -> int:
    from intentc.codegen import mathlib

    wanted = [tuple(argv[i:i + 2]) for i in range(0, len(argv), 2)] or list(FITS)
    for key in wanted:
        fit, field = FITS[key]
        coeffs, error = fit()
        held = getattr(mathlib.FORMATS[key[1]], field)
        print(f"{key[0]} {key[1]}: relative error of the fit 2^{float(mp.log(error, 2)):.1f}")
        for c, h in zip(coeffs, held):
            r = rounded(c, key[1])
            print(f"  {r.hex():>24}  {'=' if r == h else '!= ' + h.hex()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
