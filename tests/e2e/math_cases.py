"""Shared cases of the math library tests (tests/e2e/test_math_*.py): the functions, their
reference values in arbitrary precision (mpmath), the documented bounds, input generators."""
from __future__ import annotations

import math

import numpy as np

from intentc.base import math_catalog

NP = {"f16": np.float16, "f32": np.float32, "f64": np.float64}
UINT = {"f16": np.uint16, "f32": np.uint32, "f64": np.uint64}
FUNCTIONS = math_catalog.UNARY + math_catalog.BINARY
EXACT = ("floor", "ceil", "round", "trunc", "copysign", "fmod", "remainder")

# The documented bounds in ulp of the correctly rounded result (docs/language.md, "Math
# functions"): f64 and f32 alike (f32 is computed in f64 and rounded once).
BOUND = {name: 1.0 for name in FUNCTIONS}
BOUND.update({name: 2.0 for name in ("tan", "asin", "acos", "atan", "atan2", "asinh", "acosh", "atanh", "lgamma",
                                     "pow")})
BOUND.update({name: 0.5 for name in EXACT})  # exact: 0, counted as at most 0.5 when equal to the rounding


def reference(name: str):
    """The function in mpmath (raises ValueError/ZeroDivisionError where it has no real value)."""
    import mpmath

    inf = mpmath.inf

    def cbrt(x):
        return mpmath.sign(x) * mpmath.cbrt(abs(x))

    def rsqrt(x):
        if x == 0:
            return inf
        if x < 0:
            raise ValueError
        return 1 / mpmath.sqrt(x)

    def lgamma(x):
        if x <= 0 and x == mpmath.floor(x):
            return inf
        return mpmath.log(abs(mpmath.gamma(x)))

    def erfc(x):
        return mpmath.erfc(x) if x < 40 else mpmath.mpf(0)

    def erf(x):
        return mpmath.erf(x) if abs(x) < 40 else mpmath.sign(x)

    def softplus(x):
        return mpmath.log1p(mpmath.exp(x)) if x < 50 else x + mpmath.log1p(mpmath.exp(-x))

    def pow_(x, y):  # C99's pow(x, +-0) = 1 and pow(1, y) = 1 (mpmath has no opinion on inf ** 0)
        if y == 0 or x == 1:
            return mpmath.mpf(1)
        return mpmath.power(x, y)

    def real(f):
        def g(*a):
            v = f(*a)
            if isinstance(v, mpmath.mpc):
                raise ValueError
            return v
        return g

    table = {
        "sin": mpmath.sin, "cos": mpmath.cos, "tan": mpmath.tan, "asin": real(mpmath.asin),
        "acos": real(mpmath.acos), "atan": mpmath.atan, "sinh": mpmath.sinh, "cosh": mpmath.cosh,
        "asinh": mpmath.asinh, "acosh": real(mpmath.acosh), "atanh": real(mpmath.atanh),
        "exp2": lambda x: mpmath.power(2, x), "expm1": mpmath.expm1, "log2": real(lambda x: mpmath.log(x, 2)),
        "log10": real(mpmath.log10), "log1p": real(mpmath.log1p), "rsqrt": rsqrt, "cbrt": cbrt, "erf": erf,
        "erfc": erfc, "lgamma": lgamma, "sigmoid": lambda x: 1 / (1 + mpmath.exp(-x)), "softplus": softplus,
        "atan2": mpmath.atan2, "hypot": mpmath.hypot, "pow": real(pow_),
    }
    return table[name]


def ulp_error(y: float, ref, dt: str) -> float:
    """``|y - ref|`` in ulp of ``dt`` at ``ref`` (an mpmath number); inf where one is NaN or
    infinite and the other is not; a ``y`` equal to ``ref`` rounded counts at most 0.5."""
    import mpmath

    info = np.finfo(NP[dt])
    if ref is not None and mpmath.isnan(ref):
        ref = None
    if ref is None:
        return 0.0 if math.isnan(y) else math.inf
    top = mpmath.mpf(2) ** (info.maxexp)  # an overflow rounds to inf beyond (max + ulp/2)
    limit = mpmath.mpf(float(info.max)) + mpmath.mpf(2) ** (info.maxexp - 1 - info.nmant - 1)
    if abs(ref) >= limit:
        return 0.0 if math.isinf(y) and (y > 0) == (ref > 0) else math.inf
    if math.isnan(y) or math.isinf(y):
        return math.inf
    del top
    if ref == 0:
        return 0.0 if y == 0 else math.inf
    e = max(int(mpmath.floor(mpmath.log(abs(ref), 2))), info.minexp)
    ulp = mpmath.mpf(2) ** (e - info.nmant)
    err = float(abs(mpmath.mpf(float(y)) - ref) / ulp)
    rounded = float(NP[dt](float(ref))) if dt != "f64" else float(ref)
    return min(err, 0.5) if y == rounded else err


def mp_value(name: str, args):
    import mpmath

    mpmath.mp.prec = 256
    if any(math.isnan(float(a)) for a in args) and name not in ("pow", "hypot"):
        return None  # NaN in, NaN out
    if name == "rsqrt" and float(args[0]) == 0:  # mpmath has no signed zeros: 1/sqrt(-0) = -inf
        return mpmath.inf if math.copysign(1.0, float(args[0])) > 0 else -mpmath.inf
    try:
        return reference(name)(*[mpmath.mpf(float(a)) for a in args])
    except (ValueError, ZeroDivisionError):
        return None


def random_inputs(name: str, dt: str, n: int, seed: int = 0) -> list[np.ndarray]:
    """Random bit patterns, values where the function is interesting, and edges."""
    rng = np.random.default_rng(seed)
    nd = NP[dt]
    ranges = {"sinh": 720, "cosh": 720, "exp2": 1100, "expm1": 720, "sigmoid": 750, "softplus": 750, "erf": 7,
              "erfc": 30, "lgamma": 30, "sin": 1e6, "cos": 1e6, "tan": 1e6, "asin": 1, "acos": 1, "atanh": 1}
    scale = ranges.get(name, 30)
    with np.errstate(all="ignore"):
        bits = rng.integers(0, np.iinfo(UINT[dt]).max, n, dtype=UINT[dt], endpoint=True).view(nd)
        parts = [bits, rng.uniform(-scale, scale, n).astype(nd), rng.uniform(-1, 1, n).astype(nd),
                 (rng.standard_normal(n) * 1e-4).astype(nd)]
        if name == "acosh":
            parts.append(rng.uniform(1, 3, n).astype(nd))
        x = np.concatenate(parts + [edge_values(dt)])
        if math_catalog.arity(name) == 1:
            return [x]
        y = np.concatenate([rng.permutation(bits), rng.uniform(-scale, scale, n).astype(nd),
                            rng.uniform(-3, 3, n).astype(nd), (rng.standard_normal(n) * 10).astype(nd),
                            rng.permutation(edge_values(dt))])
        if name == "pow":
            x = np.abs(x) if n > 0 else x
        return [x[: y.size], y[: x.size]]


def edge_values(dt: str) -> np.ndarray:
    info = np.finfo(NP[dt])
    values = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 0.25, 10.0,
              float(info.max), -float(info.max), float(info.smallest_normal), -float(info.smallest_normal),
              float(info.smallest_subnormal), -float(info.smallest_subnormal), float(info.eps), math.pi, -math.pi,
              math.pi / 2, math.pi / 4, 1.5, -1.5, 2.5, 0.4999, 0.5001, 20.0, 30.0, 700.0, -700.0, 1e-30]
    with np.errstate(all="ignore"):
        return np.array(values, NP[dt])
