"""Throughput of intentc's f32 math functions over 2^24 inputs, against glibc's libmvec
(``gcc -O3 -march=native -ffast-math`` vector calls, libmvec_bench.c) and NumPy.

    python benchmarks/math/bench_math.py [--n 16777216] [--repeats 3] [--threads 1]

Prints a Markdown table: nanoseconds per element (best of ``repeats``) for intentc (one
thread unless ``--threads``: INTENT_NUM_THREADS), libmvec (one thread) and NumPy, and
intentc's time over libmvec's. Timings on a loaded machine vary; the table is a
measurement, not a test.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))

RANGES = {"sin": (-100, 100), "cos": (-100, 100), "tan": (-100, 100), "asin": (-1, 1), "acos": (-1, 1),
          "atan": (-100, 100), "sinh": (-80, 80), "cosh": (-80, 80), "asinh": (-100, 100), "acosh": (1, 100),
          "atanh": (-1, 1), "exp2": (-100, 100), "expm1": (-80, 80), "log2": (0, 100), "log10": (0, 100),
          "log1p": (-1, 100), "cbrt": (-100, 100), "erf": (-5, 5), "erfc": (-5, 10), "exp": (-80, 80),
          "log": (0, 100), "tanh": (-10, 10), "atan2": (-100, 100), "hypot": (-100, 100), "pow": (0, 100),
          "rsqrt": (0, 100), "lgamma": (0, 30), "sigmoid": (-20, 20), "softplus": (-20, 20), "floor": (-100, 100),
          "ceil": (-100, 100), "round": (-100, 100), "trunc": (-100, 100), "fmod": (-100, 100),
          "remainder": (-100, 100), "copysign": (-100, 100)}
NUMPY = {"sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
         "sinh": np.sinh, "cosh": np.cosh, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
         "exp2": np.exp2, "expm1": np.expm1, "log2": np.log2, "log10": np.log10, "log1p": np.log1p, "cbrt": np.cbrt,
         "exp": np.exp, "log": np.log, "tanh": np.tanh, "atan2": np.arctan2, "hypot": np.hypot, "pow": np.power,
         "floor": np.floor, "ceil": np.ceil, "round": np.rint, "trunc": np.trunc, "fmod": np.fmod,
         "remainder": np.remainder, "copysign": np.copysign, "rsqrt": lambda x: 1 / np.sqrt(x)}


def _inputs(name: str, n: int):
    rng = np.random.default_rng(0)
    lo, hi = RANGES[name]
    x = rng.uniform(lo, hi, n).astype(np.float32)
    y = rng.uniform(-8, 8, n).astype(np.float32)
    return x, y


def _best(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def intentc_times(names, n: int, repeats: int) -> dict:
    import intentc
    from intentc.base import math_catalog
    from intentc.driver import build

    src = ["import intent as I\n"]
    for name in names:
        if math_catalog.arity(name) == 1:
            src.append(f"@intent.kernel\ndef k_{name}(x: f32[N], out: mut f32[N]):\n"
                       f"    for i in I.parallel(x.axis(0)):\n        out[i] = I.{name}(x[i])\n")
        else:
            src.append(f"@intent.kernel\ndef k_{name}(x: f32[N], y: f32[N], out: mut f32[N]):\n"
                       f"    for i in I.parallel(x.axis(0)):\n        out[i] = I.{name}(x[i], y[i])\n")
    folder = Path(tempfile.mkdtemp())
    path = folder / "bench_math.intent"
    path.write_text("\n".join(src))
    build(path, folder / "bench_math.so")
    module = intentc.load(folder / "bench_math.so")
    out = {}
    for name in names:
        x, y = _inputs(name, n)
        z = np.empty_like(x)
        kernel = getattr(module, f"k_{name}")
        args = (x, z) if math_catalog.arity(name) == 1 else (x, y, z)
        kernel(*args)
        out[name] = 1e9 * _best(lambda: kernel(*args), repeats) / n
    return out


def libmvec_times(n: int, repeats: int) -> tuple[dict, str]:
    folder = Path(tempfile.mkdtemp())
    exe = folder / "libmvec_bench"
    subprocess.run(["gcc", "-O3", "-march=native", "-ffast-math", str(HERE / "libmvec_bench.c"), "-o", str(exe),
                    "-lmvec", "-lm"], check=True)
    symbols = subprocess.run(["nm", "-D", str(exe)], capture_output=True, text=True).stdout
    vector = sorted({line.split()[-1].split("@")[0] for line in symbols.splitlines() if "_ZGV" in line})
    run = subprocess.run([str(exe), str(n), str(repeats)], capture_output=True, text=True, check=True)
    times = {line.split()[0]: float(line.split()[1]) for line in run.stdout.splitlines()}
    return times, f"{len(vector)} libmvec vector entry points used"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1 << 24)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    os.environ["INTENT_NUM_THREADS"] = str(args.threads)
    from intentc.base import math_catalog

    names = list(math_catalog.ELEMENTARY + math_catalog.UNARY + math_catalog.BINARY)
    ours = intentc_times(names, args.n, args.repeats)
    mvec, note = libmvec_times(args.n, args.repeats)
    print(f"f32, {args.n} inputs, best of {args.repeats}, ns per element; intentc on {args.threads} thread(s); "
          f"{note}; load: {os.getloadavg()[0]:.2f}\n")
    print("| function | intentc | libmvec | NumPy | intentc / libmvec |")
    print("|---|---|---|---|---|")
    for name in names:
        x, y = _inputs(name, args.n)
        fn = NUMPY.get(name)
        if fn is not None:
            binary = math_catalog.arity(name) == 2
            with np.errstate(all="ignore"):
                t = 1e9 * _best(lambda: fn(x, y) if binary else fn(x), args.repeats) / args.n
            numpy_time = f"{t:.2f}"
        else:
            numpy_time = "-"
        lib = mvec.get(name)
        ratio = f"{ours[name] / lib:.2f}" if lib else "-"
        print(f"| {name} | {ours[name]:.2f} | {lib:.2f} | {numpy_time} | {ratio} |" if lib else
              f"| {name} | {ours[name]:.2f} | - | {numpy_time} | - |")


if __name__ == "__main__":
    main()
