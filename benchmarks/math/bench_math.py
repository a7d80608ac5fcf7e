"""Throughput of intentc's f32 math functions over 2^24 inputs, against glibc's libmvec
(``gcc -O3 -march=native -ffast-math`` vector calls, libmvec_bench.c, loaded as a shared
library), SLEEF where its package and AVX-512 are present (sleef_bench.c: the 16-lane
1.0-ulp functions) and NumPy.

    python benchmarks/math/bench_math.py [--n 16777216] [--repeats 5] [--threads 1] [names...]

Prints a Markdown table: nanoseconds per element for intentc (one thread unless
``--threads``: INTENT_NUM_THREADS), libmvec and SLEEF (one thread) and NumPy, each the median of
``repeats`` runs on the same inputs (CPU time of the process, not wall time), the three contenders interleaved run by run (so that
a change of the machine's load hits all three), and intentc's time over libmvec's. The
load average before and after is printed; timings on a loaded machine vary, the table is a
measurement, not a test.
"""
from __future__ import annotations

import argparse
import ctypes
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


def _time(fn) -> float:
    """The process's CPU time for one run: on a shared, loaded machine wall time mostly
    measures when the scheduler lets a contender run; every contender runs in this process
    (intentc on ``--threads`` threads), so CPU time compares them fairly."""
    t = time.process_time()
    fn()
    return time.process_time() - t


def intentc_module(names):
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
    return intentc.load(folder / "bench_math.so")


def libmvec_library():
    folder = Path(tempfile.mkdtemp())
    so = folder / "libmvec_bench.so"
    subprocess.run(["gcc", "-O3", "-march=native", "-ffast-math", "-shared", "-fPIC", str(HERE / "libmvec_bench.c"),
                    "-o", str(so), "-lmvec", "-lm"], check=True)
    symbols = subprocess.run(["nm", "-D", str(so)], capture_output=True, text=True).stdout
    vector = sorted({line.split()[-1].split("@")[0] for line in symbols.splitlines() if "_ZGV" in line})
    return ctypes.CDLL(str(so)), f"{len(vector)} libmvec vector entry points used"


def sleef_library():
    """SLEEF's functions as a shared library, or None where SLEEF or AVX-512 is missing."""
    folder = Path(tempfile.mkdtemp())
    so = folder / "sleef_bench.so"
    flags = open("/proc/cpuinfo").read() if Path("/proc/cpuinfo").exists() else ""
    if " avx512f" not in flags:
        return None
    pkg = subprocess.run(["pkg-config", "--cflags", "sleef"], capture_output=True, text=True)
    cflags = pkg.stdout.split() if pkg.returncode == 0 else []
    run = subprocess.run(["gcc", "-O3", "-mavx512f", "-shared", "-fPIC", *cflags, str(HERE / "sleef_bench.c"),
                          "-o", str(so), "-lsleef"], capture_output=True, text=True)
    return ctypes.CDLL(str(so)) if run.returncode == 0 else None


def _load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1 << 24)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("names", nargs="*")
    args = parser.parse_args()
    os.environ["INTENT_NUM_THREADS"] = str(args.threads)
    from intentc.base import math_catalog

    names = args.names or list(math_catalog.ELEMENTARY + math_catalog.UNARY + math_catalog.BINARY)
    module = intentc_module(names)
    mvec, note = libmvec_library()
    sleef = sleef_library()
    note += "; SLEEF " + ("3.x, 16-lane AVX-512 functions" if sleef is not None else "not available")
    load_before = _load()
    rows = []
    for name in names:
        x, y = _inputs(name, args.n)
        z = np.empty_like(x)
        binary = math_catalog.arity(name) == 2
        kernel = getattr(module, f"k_{name}")
        contenders = {"intentc": (lambda: kernel(x, y, z)) if binary else (lambda: kernel(x, z))}
        lib = getattr(mvec, f"mvec_{name}", None)
        if lib is not None:
            pointers = [a.ctypes.data_as(ctypes.c_void_p) for a in (z, x, y)]
            contenders["libmvec"] = lambda lib=lib: lib(*pointers, ctypes.c_long(args.n))
        lib = getattr(sleef, f"sleef_{name}", None) if sleef is not None else None
        if lib is not None:
            pointers_s = [a.ctypes.data_as(ctypes.c_void_p) for a in (z, x, y)]
            contenders["sleef"] = lambda lib=lib: lib(*pointers_s, ctypes.c_long(args.n))
        fn = NUMPY.get(name)
        if fn is not None:
            contenders["numpy"] = (lambda: fn(x, y)) if binary else (lambda: fn(x))
        times = {key: [] for key in contenders}
        with np.errstate(all="ignore"):
            for key, run in contenders.items():
                run()  # warm up
            for _ in range(args.repeats):
                for key, run in contenders.items():
                    times[key].append(_time(run))
        ns = {key: 1e9 * float(np.median(v)) / args.n for key, v in times.items()}
        rows.append((name, ns))
    print(f"f32, {args.n} inputs, median of {args.repeats} interleaved runs, CPU ns per element; intentc on "
          f"{args.threads} thread(s); {note}; load average (1, 5, 15 min) {load_before} before, {_load()} after\n")
    print("| function | intentc | libmvec | SLEEF | NumPy | intentc / libmvec | intentc / SLEEF |")
    print("|---|---|---|---|---|---|---|")
    for name, ns in rows:
        cells = [f"{ns[key]:.2f}" if key in ns else "-" for key in ("intentc", "libmvec", "sleef", "numpy")]
        ratios = [f"{ns['intentc'] / ns[key]:.2f}" if key in ns else "-" for key in ("libmvec", "sleef")]
        print(f"| {name} | {' | '.join(cells)} | {' | '.join(ratios)} |")


if __name__ == "__main__":
    main()
