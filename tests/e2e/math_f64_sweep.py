"""The f64 accuracy sweep behind the "measured max" of f64 in docs/language.md (opt-in; not
part of the test suite: minutes per function).

    python tests/e2e/math_f64_sweep.py [--n 10000000] [--confirm 300] [names...]

For each function: ``n`` random and edge inputs (``math_cases.random_inputs``: random bit
patterns, the function's interesting range, [-1, 1], tiny values, edges), evaluated as the
compiled code computes them (the interpreter's NumPy run of the same algorithm, the same
bits as the compiled code: tests/e2e/test_math_library.py). Every result is screened
against the function in 80-bit long double (``math_f64_reference.c``, glibc's ``*l``
functions: 11 bits more than f64, so the screen is good to about 2^-10 ulp); the
``confirm`` worst are measured again against mpmath at 256 bits, and that maximum is the
one reported. ``lgamma`` on negative arguments is measured relative to ``max(1, |lgamma|)``
(docs/language.md), the rest in ulp of the correctly rounded result.
"""
from __future__ import annotations

import argparse
import ctypes
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))
from math_cases import EXACT, FUNCTIONS, mp_value, random_inputs, ulp_error  # noqa: E402

from intentc.base import math_catalog  # noqa: E402
from intentc.interp import mathfuncs  # noqa: E402

CHUNK = 1 << 20


def _library():
    folder = Path(tempfile.mkdtemp())
    so = folder / "reference.so"
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", str(HERE / "math_f64_reference.c"), "-o", str(so), "-lm"],
                   check=True)
    lib = ctypes.CDLL(str(so))
    lib.reference.restype = ctypes.c_int
    return lib


def long_double_reference(lib, name: str, args) -> np.ndarray:
    x = np.ascontiguousarray(args[0], np.float64)
    y = np.ascontiguousarray(args[1] if len(args) > 1 else args[0], np.float64)
    out = np.empty(x.size, np.longdouble)
    rc = lib.reference(name.encode(), x.ctypes.data_as(ctypes.c_void_p), y.ctypes.data_as(ctypes.c_void_p),
                       ctypes.c_long(x.size), out.ctypes.data_as(ctypes.c_void_p))
    assert rc == 0, name
    return out


def screen(y: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """ulp error of f64 ``y`` against the long double ``ref`` (inf where NaN-ness, an
    infinity or a zero disagree); a ``y`` equal to ``ref`` rounded counts at most 0.5."""
    ld = np.longdouble
    with np.errstate(all="ignore"):
        limit = ld(np.finfo(np.float64).max) + np.ldexp(ld(1), 1023 - 54)
        _, e = np.frexp(np.abs(ref))
        e = np.maximum(e.astype(np.int64) - 1, -1022)
        ulp = np.ldexp(ld(1), (e - 52).astype(np.int32))
        err = np.abs(y.astype(ld) - ref) / ulp
        rounded = ref.astype(np.float64)
        err = np.where(y == rounded, np.minimum(err, 0.5), err)
        over = np.abs(ref) >= limit
        err = np.where(over, np.where(np.isinf(y) & (np.sign(y) == np.sign(ref)), 0.0, np.inf), err)
        err = np.where(~over & np.isinf(y), np.inf, err)
        err = np.where(ref == 0, np.where(y == 0, 0.0, np.inf), err)
        nan_ref, nan_y = np.isnan(ref), np.isnan(y)
        err = np.where(nan_ref | nan_y, np.where(nan_ref & nan_y, 0.0, np.inf), err)
    return err.astype(np.float64)


def sweep(lib, name: str, n: int, confirm: int) -> str:
    start = time.time()
    per = max(n // 4, 1)
    args = random_inputs(name, "f64", per, seed=1064)
    total = args[0].size
    errs = np.empty(total)
    rel_neg = 0.0  # lgamma, x < 0: |error| / max(1, |lgamma|)
    for lo in range(0, total, CHUNK):
        part = [a[lo: lo + CHUNK] for a in args]
        y = mathfuncs.evaluate(name, *part)
        ref = long_double_reference(lib, name, part)
        err = screen(y, ref)
        if name == "lgamma":  # x < 0: relative to max(1, |lgamma|); infinities and NaN as elsewhere
            neg = part[0] < 0
            finite = neg & np.isfinite(ref) & np.isfinite(y)
            with np.errstate(all="ignore"):
                rel = np.abs(y[finite].astype(np.longdouble) - ref[finite]) / np.maximum(1, np.abs(ref[finite]))
            rel_neg = max(rel_neg, float(rel.max()) if rel.size else 0.0)
            err[finite] = 0.0
        errs[lo: lo + CHUNK] = err
    negative_bad = []
    if name == "lgamma":  # x < 0 in ulp only where the screen saw an infinity or NaN disagree
        neg_all = args[0] < 0
        negative_bad = list(np.flatnonzero(neg_all & ~np.isfinite(errs))[:confirm])
        errs = np.where(neg_all, -1.0, errs)
    worst_screen = float(errs.max())
    order = list(np.argsort(errs)[::-1][:confirm]) + negative_bad
    confirmed, where, disagree = 0.0, None, 0
    for i in order:
        point = [float(a[i]) for a in args]
        got = float(mathfuncs.evaluate(name, *[np.array([p]) for p in point])[0])
        e = ulp_error(got, mp_value(name, point), "f64")
        if not math.isfinite(e) and math.isfinite(errs[i]):
            disagree += 1  # the long double reference and mpmath disagree on NaN/inf conventions
        if e > confirmed:
            confirmed, where = e, point
    tail = f"; x < 0: {rel_neg:.3g} of max(1, |lgamma|)" if name == "lgamma" else ""
    return (f"{name}: {total} inputs, screen max {worst_screen:.4f}, mpmath max of the {len(order)} worst "
            f"{confirmed:.4f} ulp at {where}{tail}; {time.time() - start:.0f} s"
            + (f"; {disagree} reference conventions differ" if disagree else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--confirm", type=int, default=300)
    parser.add_argument("names", nargs="*")
    args = parser.parse_args()
    lib = _library()
    names = args.names or [n for n in FUNCTIONS if n not in EXACT] + list(math_catalog.ELEMENTARY)
    for name in names:
        print(sweep(lib, name, args.n, args.confirm), flush=True)


if __name__ == "__main__":
    main()
