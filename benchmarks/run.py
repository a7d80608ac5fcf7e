"""Side-by-side CPU benchmarks: intentc against C (-O3 -march=native OpenMP), NumPy and Numba.

    python benchmarks/run.py [--quick] [--repeats R] [NAME ...]

Every contender of a benchmark runs in the same process on the same arrays:
a warm-up call whose result is checked against NumPy, then R timed calls; the
table shows the median (and the minimum), the achieved bandwidth and the ratio
to the C baseline.  The figures are also written to benchmarks/results/latest.json.

A benchmark is a function registered with ``@benchmark(...)`` that builds its
inputs and returns the reference result and its contenders; see ``saxpy`` below.
"""
from __future__ import annotations

import os

# Thread counts are fixed before any threaded library is loaded: every tool gets
# all the cores this process may run on.
THREADS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
for _var in ("OMP_NUM_THREADS", "INTENT_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = str(THREADS)
# OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE (set on some machines for older OpenBLAS builds) slow
# the current NumPy down (bench/TARGETS.md): the OpenBLAS baseline runs without them. They
# are dropped before NumPy loads; no other contender uses OpenBLAS.
BLAS_ENV_DROPPED = {_var: os.environ.pop(_var) for _var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
                    if _var in os.environ}

import argparse  # noqa: E402
import ctypes  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Callable  # noqa: E402

import numpy as np  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.markup import escape  # noqa: E402
from rich.table import Table  # noqa: E402

try:
    import numba  # noqa: E402
except ImportError:
    numba = None

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
BUILD = BENCH / "build"
RESULTS = BENCH / "results" / "latest.json"
C_FLAGS = ["-O3", "-march=native", "-fopenmp", "-shared", "-fPIC"]
C_LABEL = "C -O3 OpenMP"  # the baseline every ratio refers to
# Idle time before each contender, so that the threads of the previous tool's pool
# (OpenMP, Numba, intentc) have stopped polling and sleep while the next one runs.
SETTLE_S = 0.2
ROUNDS = 3  # the timed calls of each contender are split into this many alternating rounds

sys.path.insert(0, str(REPO))  # the checkout's intentc, as the CLI below uses it

console = Console()


# --------------------------------------------------------------------------- tools

class Unavailable(Exception):
    """A contender that cannot run here (tool missing, build failed)."""


class Tools:
    """Builds and loads what the contenders need, once per source."""

    def __init__(self, build_dir: Path):
        self.build_dir = build_dir
        self.build_seconds: dict[str, float] = {}  # intentc build time per source file
        self._cache: dict[tuple, object] = {}

    def _once(self, key: tuple, make: Callable[[], object]):
        if key not in self._cache:
            try:
                self._cache[key] = make()
            except Unavailable as e:
                self._cache[key] = e
        value = self._cache[key]
        if isinstance(value, Unavailable):
            raise value
        return value

    def intentc(self, source: Path):
        """The module ``intentc.load`` returns for ``source``, built with the intentc CLI."""
        return self._once(("intentc", source), lambda: self._build_intent(source))

    def _build_intent(self, source: Path):
        self.build_dir.mkdir(parents=True, exist_ok=True)
        # Sources outside benchmarks/kernels (samples) get their folder in the name: two
        # sources with one stem must not overwrite a library that is already loaded.
        stem = source.stem if source.parent == BENCH / "kernels" else f"{source.stem}_{source.parent.name}"
        library = self.build_dir / f"{stem}.so"
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        start = time.perf_counter()
        built = _private(library)
        proc = subprocess.run([sys.executable, "-m", "intentc", "build", str(source.relative_to(REPO)),
                               "-o", str(built)],
                              cwd=REPO, env=env, capture_output=True, text=True)
        self.build_seconds[source.name] = time.perf_counter() - start
        if proc.returncode != 0:
            lines = (proc.stderr or proc.stdout).strip().splitlines()
            raise Unavailable(f"intentc build failed: {lines[-1] if lines else proc.returncode}")
        _publish(built, library)
        try:
            import intentc
            return intentc.load(str(library))
        except Exception as e:  # a loader failure is reported in the table
            raise Unavailable(f"intentc.load failed: {type(e).__name__}: {e}") from None

    def c_function(self, source: str, symbol: str, argtypes: list, flags: tuple[str, ...] = (), restype=None):
        """``symbol`` from benchmarks/c/``source`` built with gcc -O3 -march=native -fopenmp
        and ``flags`` (e.g. ``("-ffast-math",)``)."""
        library = self._once(("c", source, flags), lambda: self._build_c(BENCH / "c" / source, flags))
        fn = getattr(library, symbol)
        fn.argtypes = argtypes
        fn.restype = restype
        return fn

    def _build_c(self, source: Path, flags: tuple[str, ...] = ()):
        self.build_dir.mkdir(parents=True, exist_ok=True)
        suffix = "".join("_" + flag.lstrip("-").replace("-", "_") for flag in flags)
        library = self.build_dir / f"{source.stem}_c{suffix}.so"
        built = _private(library)
        proc = subprocess.run(["gcc", *C_FLAGS, *flags, str(source), "-o", str(built), "-lm"],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise Unavailable(f"gcc failed: {proc.stderr.strip().splitlines()[-1:]}")
        _publish(built, library)
        return ctypes.CDLL(str(library))


def _private(library: Path) -> Path:
    """A name of this process's own for building ``library``: another run of this script
    that rebuilds it while this one has the old file loaded must not rewrite that file in
    place (its code would change under the running process, which then crashes)."""
    return library.with_name(f"{library.stem}.{os.getpid()}{library.suffix}")


def _publish(built: Path, library: Path) -> None:
    """Move a private build to its name atomically (a loaded old file keeps its inode)."""
    for suffix in (library.suffix, ".h"):
        if built.with_suffix(suffix).exists():
            os.replace(built.with_suffix(suffix), library.with_suffix(suffix))


class Contenders:
    """The labelled zero-argument calls of one benchmark; each returns its result array."""

    def __init__(self):
        self.calls: dict[str, Callable[[], np.ndarray]] = {}
        self.unavailable: dict[str, str] = {}

    def add(self, label: str, make: Callable[[], Callable[[], np.ndarray]]) -> None:
        try:
            self.calls[label] = make()
        except Unavailable as e:
            self.unavailable[label] = str(e)


# ----------------------------------------------------------------------- registry

@dataclass
class Benchmark:
    name: str
    title: str
    n: int
    quick_n: int
    bytes_per_element: int  # memory traffic per element, for GB/s
    target: str             # the intentc target of bench/TARGETS.md
    target_ratio: float     # ... as a ratio (time) to the baseline
    setup: Callable[[int, Tools], tuple[np.ndarray, Contenders]] = field(repr=False)
    baseline: str = C_LABEL  # the contender every ratio refers to
    flops: Callable[[int], float] | None = None  # floating-point operations per call: GFLOP/s
    rtol: float = 1e-5      # tolerance of the result check (rtol = atol)


BENCHMARKS: dict[str, Benchmark] = {}


def benchmark(**spec):
    """Registers ``setup(n, tools) -> (reference result, Contenders)`` as a benchmark."""
    def register(setup):
        BENCHMARKS[spec["name"]] = Benchmark(setup=setup, **spec)
        return setup
    return register


def _f32(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.standard_normal(n, dtype=np.float32)


def _need_numba() -> None:
    if numba is None:
        raise Unavailable("numba is not installed")


if numba is not None:  # compiled on first call, i.e. during the warm-up
    @numba.njit(parallel=True)
    def _numba_saxpy(a, x, y, out):
        for i in numba.prange(out.shape[0]):
            out[i] = a * x[i] + y[i]

    @numba.njit(parallel=True)
    def _numba_triad(b, c, s, out):
        for i in numba.prange(out.shape[0]):
            out[i] = b[i] + s * c[i]


@benchmark(name="saxpy", title="saxpy out = a·x + y (f32)", n=2**24, quick_n=2**22,
           bytes_per_element=12, target="≤ 1.05 × best C", target_ratio=1.05)
def saxpy(n: int, tools: Tools):
    rng = np.random.default_rng(1)
    x, y, a = _f32(rng, n), _f32(rng, n), np.float32(2.5)
    out, tmp = np.empty(n, np.float32), np.empty(n, np.float32)
    c = Contenders()

    def intent():
        m = tools.intentc(REPO / "samples" / "saxpy.intent")
        return lambda: m.saxpy(float(a), x, y, out=out)

    def c_omp():
        fn = tools.c_function("saxpy.c", "saxpy_c", [ctypes.c_int64, ctypes.c_float, ctypes.c_void_p,
                                                     ctypes.c_void_p, ctypes.c_void_p])
        args = (n, float(a), x.ctypes.data, y.ctypes.data, out.ctypes.data)
        return lambda: (fn(*args), out)[1]

    def numba_parallel():
        _need_numba()
        return lambda: (_numba_saxpy(a, x, y, out), out)[1]

    c.add("intentc", intent)
    c.add(C_LABEL, c_omp)
    c.add("NumPy (out=)", lambda: lambda: np.add(np.multiply(a, x, out=tmp), y, out=out))
    c.add("NumPy a*x+y", lambda: lambda: a * x + y)
    c.add("Numba parallel", numba_parallel)
    return a * x + y, c


@benchmark(name="triad", title="triad a = b + s·c (f32)", n=2**25, quick_n=2**23,
           bytes_per_element=12, target="≤ 1.05 × C OpenMP", target_ratio=1.05)
def triad(n: int, tools: Tools):
    rng = np.random.default_rng(2)
    b, cc, s = _f32(rng, n), _f32(rng, n), np.float32(3.0)
    out, tmp = np.empty(n, np.float32), np.empty(n, np.float32)
    c = Contenders()

    def intent():
        m = tools.intentc(BENCH / "kernels" / "triad.intent")
        return lambda: m.triad(b, cc, float(s), out=out)

    def c_omp():
        fn = tools.c_function("triad.c", "triad_c", [ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p,
                                                     ctypes.c_float, ctypes.c_void_p])
        args = (n, b.ctypes.data, cc.ctypes.data, float(s), out.ctypes.data)
        return lambda: (fn(*args), out)[1]

    def numba_parallel():
        _need_numba()
        return lambda: (_numba_triad(b, cc, s, out), out)[1]

    c.add("intentc", intent)
    c.add(C_LABEL, c_omp)
    c.add("NumPy (out=)", lambda: lambda: np.add(b, np.multiply(s, cc, out=tmp), out=out))
    c.add("NumPy b+s*c", lambda: lambda: b + s * cc)
    c.add("Numba parallel", numba_parallel)
    return b + s * cc, c


if numba is not None:
    @numba.njit(parallel=True)
    def _numba_sgemm(a, b, c):
        m, k = a.shape
        n = b.shape[1]
        for i in numba.prange(m):
            for j in range(n):
                c[i, j] = 0.0
            for p in range(k):
                av = a[i, p]
                for j in range(n):
                    c[i, j] += av * b[p, j]

    @numba.njit(parallel=True)
    def _numba_histogram(x, bins, lo, hi, out):
        """One private histogram per thread over a contiguous slice, summed at the end."""
        threads = numba.get_num_threads()
        chunk = (x.shape[0] + threads - 1) // threads
        private = np.zeros((threads, bins), np.int64)
        scale = bins / (hi - lo)
        for t in numba.prange(threads):
            for i in range(t * chunk, min(x.shape[0], (t + 1) * chunk)):
                v = x[i]
                if v >= lo and v <= hi:
                    b = int((v - lo) * scale)
                    private[t, min(b, bins - 1)] += 1
        out[:] = 0
        for t in range(threads):
            out += private[t]


OPENBLAS = "NumPy (OpenBLAS)"


def sgemm(n: int, tools: Tools):
    """C = A B with n x n f32 matrices; the baseline is OpenBLAS through np.matmul."""
    rng = np.random.default_rng(3)
    a, b = (rng.uniform(-1, 1, (n, n)).astype(np.float32) for _ in range(2))
    out = np.empty((n, n), np.float32)
    c = Contenders()

    def intent():
        m = tools.intentc(BENCH / "kernels" / "sgemm.intent")
        return lambda: m.sgemm(a, b, out=out)

    def c_omp():
        fn = tools.c_function("sgemm.c", "sgemm_c", [ctypes.c_int64] * 3 + [ctypes.c_void_p] * 3)
        args = (n, n, n, a.ctypes.data, b.ctypes.data, out.ctypes.data)
        return lambda: (fn(*args), out)[1]

    def numba_parallel():
        _need_numba()
        return lambda: (_numba_sgemm(a, b, out), out)[1]

    c.add("intentc", intent)
    c.add(OPENBLAS, lambda: lambda: np.matmul(a, b, out=out))
    c.add(C_LABEL + " (ikj)", c_omp)
    c.add("Numba parallel (ikj)", numba_parallel)
    return a @ b, c


for _name, _n, _quick in (("sgemm", 1024, 512), ("sgemm2048", 2048, 1024)):
    benchmark(name=_name, title="sgemm C = A·B (f32, n × n)", n=_n, quick_n=_quick, bytes_per_element=12,
              target="≥ 0.85 × OpenBLAS", target_ratio=1 / 0.85, baseline=OPENBLAS, flops=lambda n: 2.0 * n ** 3,
              rtol=2e-3)(sgemm)


@benchmark(name="histogram", title="histogram of f32 values in [0, 1) → 256 bins", n=2**24, quick_n=2**22,
           bytes_per_element=4, target="≤ 1.0 × Numba", target_ratio=1.0, baseline="Numba parallel")
def histogram(n: int, tools: Tools):
    rng = np.random.default_rng(4)
    x = rng.random(n, dtype=np.float32)
    out = np.empty(256, np.int64)
    want = np.bincount(np.minimum((x * np.float32(256)).astype(np.int64), 255), minlength=256)
    c = Contenders()

    def intent():
        m = tools.intentc(BENCH / "kernels" / "histogram.intent")
        return lambda: m.histogram(x, out=out)

    def c_omp():
        fn = tools.c_function("histogram.c", "histogram_c", [ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64,
                                                             ctypes.c_float, ctypes.c_float, ctypes.c_void_p])
        args = (n, x.ctypes.data, 256, 0.0, 1.0, out.ctypes.data)
        return lambda: (fn(*args), out)[1]

    def numba_parallel():
        _need_numba()
        return lambda: (_numba_histogram(x, 256, np.float32(0.0), np.float32(1.0), out), out)[1]

    c.add("intentc", intent)
    c.add("Numba parallel", numba_parallel)
    c.add(C_LABEL, c_omp)
    c.add("NumPy histogram", lambda: lambda: np.histogram(x, 256, (0.0, 1.0))[0])
    c.add("NumPy bincount", lambda: lambda: np.bincount((x * np.float32(256)).astype(np.intp), minlength=256))
    return want, c


if numba is not None:
    @numba.njit(parallel=True)
    def _numba_softmax(x, out):
        for r in numba.prange(x.shape[0]):
            m = x[r, 0]
            for c in range(x.shape[1]):
                m = max(m, x[r, c])
            s = np.float32(0.0)
            for c in range(x.shape[1]):
                e = np.exp(x[r, c] - m)
                out[r, c] = e
                s += e
            inv = np.float32(1.0) / s
            for c in range(x.shape[1]):
                out[r, c] *= inv

    @numba.njit(parallel=True)
    def _numba_logsumexp(x):
        m = x[0]
        for i in numba.prange(x.shape[0]):
            m = max(m, x[i])
        s = 0.0
        for i in numba.prange(x.shape[0]):
            s += np.exp(x[i] - m)
        return m + np.log(s)


SOFTMAX_COLS = 4096
FAST_C_LABEL = "C -O3 -ffast-math OpenMP"  # vectorised approximate expf (glibc's libmvec)
EXACT_C_LABEL = "C -O3 OpenMP (expf)"  # the C library's exact expf, one call per element


@benchmark(name="softmax", title=f"row softmax, rows of {SOFTMAX_COLS} (f32)", n=4096 * SOFTMAX_COLS,
           quick_n=1024 * SOFTMAX_COLS, bytes_per_element=8, target="≤ 1.0 × Halide exp (here: C -ffast-math)",
           target_ratio=1.0, baseline=FAST_C_LABEL)
def softmax(n: int, tools: Tools):
    rows = n // SOFTMAX_COLS
    x = np.random.default_rng(3).standard_normal((rows, SOFTMAX_COLS), dtype=np.float32) * np.float32(4)
    out, tmp = np.empty_like(x), np.empty_like(x)
    c = Contenders()

    def intent(kernel: str):
        def make():
            fn = getattr(tools.intentc(BENCH / "kernels" / "softmax.intent"), kernel)
            return lambda: (fn(x, out), out)[1]
        return make

    def c_omp(flags: tuple[str, ...]):
        def make():
            fn = tools.c_function("softmax.c", "softmax_c", [ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p,
                                                             ctypes.c_void_p], flags)
            return lambda: (fn(rows, SOFTMAX_COLS, x.ctypes.data, out.ctypes.data), out)[1]
        return make

    def numpy_out():
        np.subtract(x, x.max(axis=1, keepdims=True), out=tmp)
        np.exp(tmp, out=out)
        return np.divide(out, out.sum(axis=1, keepdims=True), out=out)

    def numba_parallel():
        _need_numba()
        return lambda: (_numba_softmax(x, out), out)[1]

    c.add("intentc", intent("softmax"))
    c.add("intentc (exp twice)", intent("softmax_recompute"))
    c.add(FAST_C_LABEL, c_omp(("-ffast-math",)))
    c.add(EXACT_C_LABEL, c_omp(()))
    c.add("NumPy (out=)", lambda: numpy_out)
    c.add("Numba parallel", numba_parallel)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32), c


@benchmark(name="logsumexp", title="log-sum-exp log(Σ exp(x)) (f32)", n=2**24, quick_n=2**22,
           bytes_per_element=4, target="≤ 1.0 × C -ffast-math", target_ratio=1.0, baseline=FAST_C_LABEL)
def logsumexp(n: int, tools: Tools):
    x = np.random.default_rng(4).standard_normal(n, dtype=np.float32) * np.float32(4)
    out = np.zeros(1, np.float32)
    c = Contenders()

    def intent():
        m = tools.intentc(BENCH / "kernels" / "logsumexp.intent")
        return lambda: (m.logsumexp(x, out), out)[1]

    def intent_region_fold():  # one pass: a (max, sum) summary per segment, merged (R2)
        m = tools.intentc(REPO / "samples" / "logsumexp.intent")
        return lambda: m.logsumexp(x, out=out)

    def c_omp(flags: tuple[str, ...]):
        def make():
            fn = tools.c_function("logsumexp.c", "logsumexp_c", [ctypes.c_int64, ctypes.c_void_p], flags,
                                  ctypes.c_float)
            return lambda: np.array([fn(n, x.ctypes.data)], np.float32)
        return make

    def numpy_plain():
        m = x.max()
        return np.array([m + np.log(np.exp(x - m).sum(dtype=np.float32))], np.float32)

    def numba_parallel():
        _need_numba()
        return lambda: np.array([_numba_logsumexp(x)], np.float32)

    c.add("intentc", intent)
    c.add("intentc (region fold)", intent_region_fold)
    c.add(FAST_C_LABEL, c_omp(("-ffast-math",)))
    c.add(EXACT_C_LABEL, c_omp(()))
    c.add("NumPy", lambda: numpy_plain)
    c.add("Numba parallel", numba_parallel)
    m = x.astype(np.float64).max()
    return np.array([m + np.log(np.exp(x.astype(np.float64) - m).sum())], np.float32), c


# ------------------------------------------- stencil, scans, recurrences, region folds
# The kernels are the samples themselves (samples/stencil3.intent, prefix_sum.intent,
# linear_recurrence.intent, logsumexp.intent, reductions.intent).

SERIAL_C_LABEL = "C -O3 serial"


@benchmark(name="stencil3", title="3-point stencil out(i) = (x(i-1) + x(i) + x(i+1)) / 3 (f32)", n=2**24,
           quick_n=2**22, bytes_per_element=8, target="≤ 1.25 × C -O3", target_ratio=1.25,
           baseline=SERIAL_C_LABEL)
def stencil3(n: int, tools: Tools):
    x = _f32(np.random.default_rng(5), n)
    out, out_np = np.zeros(n, np.float32), np.zeros(n, np.float32)
    c = Contenders()

    def intent():
        m = tools.intentc(REPO / "samples" / "stencil3.intent")
        return lambda: (m.stencil3(x, out), out)[1]

    def c_fn(symbol: str):
        def make():
            fn = tools.c_function("stencil3.c", symbol, [ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p])
            return lambda: (fn(n, x.ctypes.data, out.ctypes.data), out)[1]
        return make

    def numpy_out():
        inner = out_np[1:-1]
        np.add(x[:-2], x[1:-1], out=inner)
        np.add(inner, x[2:], out=inner)
        np.divide(inner, np.float32(3.0), out=inner)
        return out_np

    c.add("intentc", intent)
    c.add(SERIAL_C_LABEL, c_fn("stencil3_c"))
    c.add(C_LABEL, c_fn("stencil3_omp"))
    c.add("NumPy (out=)", lambda: numpy_out)
    want = np.zeros(n, np.float32)
    want[1:-1] = (x[:-2] + x[1:-1] + x[2:]) / np.float32(3.0)
    return want, c


TWO_PASS_LABEL = "C -O3 OpenMP two-pass"


@benchmark(name="prefix_sum", title="inclusive prefix sum (f32, values in [0, 1))", n=2**24, quick_n=2**22,
           bytes_per_element=8, target="≤ 1.0 × C two-pass", target_ratio=1.0, baseline=TWO_PASS_LABEL,
           rtol=2e-4)
def prefix_sum(n: int, tools: Tools):
    # Positive values keep every prefix well conditioned: serial f32 sums of 2^24 terms
    # (NumPy's, C's) are within ~1e-4 of the float64 prefix.
    x = np.random.default_rng(6).random(n, dtype=np.float32)
    out = np.empty(n, np.float32)
    c = Contenders()

    def intent():
        m = tools.intentc(REPO / "samples" / "prefix_sum.intent")
        return lambda: m.prefix_sum(x, out=out)

    def c_fn(symbol: str):
        def make():
            fn = tools.c_function("prefix_sum.c", symbol, [ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p])
            return lambda: (fn(n, x.ctypes.data, out.ctypes.data), out)[1]
        return make

    c.add("intentc", intent)
    c.add(TWO_PASS_LABEL, c_fn("prefix_sum_two_pass"))
    c.add(SERIAL_C_LABEL, c_fn("prefix_sum_serial"))
    c.add("NumPy cumsum (out=)", lambda: lambda: np.cumsum(x, out=out))
    return np.cumsum(x, dtype=np.float64).astype(np.float32), c


FMA_C_LABEL = "C -O3 serial (FMA contracted)"
NO_FMA_C_LABEL = "C -O3 serial -ffp-contract=off"


@benchmark(name="linear_recurrence", title="linear recurrence h = a·h + b (f32, a in [0.5, 1))", n=2**24,
           quick_n=2**22, bytes_per_element=12, target="≥ 1.7 × faster than serial C (≤ 0.59 ×)",
           target_ratio=1 / 1.7, baseline=FMA_C_LABEL)
def linear_recurrence(n: int, tools: Tools):
    rng = np.random.default_rng(7)
    a = rng.uniform(0.5, 1.0, n).astype(np.float32)
    b = rng.uniform(-1.0, 1.0, n).astype(np.float32)
    h0 = 0.25
    out = np.empty(n, np.float32)
    c = Contenders()
    argtypes = [ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_float, ctypes.c_void_p]

    def intent():
        m = tools.intentc(REPO / "samples" / "linear_recurrence.intent")
        return lambda: m.linear_recurrence(a, b, h0, out=out)

    def c_fn(flags: tuple[str, ...]):
        def make():
            fn = tools.c_function("linear_recurrence.c", "linear_recurrence_c", argtypes, flags)
            return lambda: (fn(n, a.ctypes.data, b.ctypes.data, h0, out.ctypes.data), out)[1]
        return make

    c.add("intentc", intent)
    c.add(FMA_C_LABEL, c_fn(()))
    c.add(NO_FMA_C_LABEL, c_fn(("-ffp-contract=off",)))
    want = np.empty(n, np.float32)  # the recurrence in float64
    ref = tools.c_function("linear_recurrence.c", "linear_recurrence_f64",
                           argtypes[:3] + [ctypes.c_double, ctypes.c_void_p])
    ref(n, a.ctypes.data, b.ctypes.data, h0, want.ctypes.data)
    return want, c


SSM_CHANNELS, SSM_STATES = 64, 16

if numba is not None:
    @numba.njit(parallel=True)
    def _numba_selective_scan(x, delta, a, b, c, h0, y, last):
        for d in numba.prange(x.shape[0]):
            h = h0[d].copy()
            for t in range(x.shape[1]):
                dt = delta[d, t]
                acc = np.float32(0.0)
                for s in range(SSM_STATES):
                    h[s] = np.exp(dt * a[d, s]) * h[s] + dt * b[s, t] * x[d, t]
                    acc += c[s, t] * h[s]
                y[d, t] = acc
            last[d] = h


@benchmark(name="selective_scan", title=f"selective scan (Mamba S6): {SSM_CHANNELS} channels, {SSM_STATES} states, "
           f"N = channels × steps (f32, samples/selective_scan.intent)", n=SSM_CHANNELS * 2**16,
           quick_n=SSM_CHANNELS * 2**14, bytes_per_element=12, target="quoted vs serial C (issue 6)",
           target_ratio=1.0, baseline=SERIAL_C_LABEL, rtol=1e-4)
def selective_scan(n: int, tools: Tools):
    # Decaying steps as in Mamba: delta log-uniform in [1e-3, 0.1], a in [-16, -1]. Every
    # tool computes 16 exponentials per element; y (checked against the float64 loop) has
    # magnitudes around 1.
    d, t = SSM_CHANNELS, n // SSM_CHANNELS
    rng = np.random.default_rng(14)
    x = rng.uniform(-1, 1, (d, t)).astype(np.float32)
    delta = np.exp(rng.uniform(np.log(1e-3), np.log(0.1), (d, t))).astype(np.float32)
    a = -rng.uniform(1, 16, (d, SSM_STATES)).astype(np.float32)
    b, cc = (rng.uniform(-1, 1, (SSM_STATES, t)).astype(np.float32) for _ in range(2))
    h0 = rng.uniform(-1, 1, (d, SSM_STATES)).astype(np.float32)
    y, last = np.empty((d, t), np.float32), np.empty((d, SSM_STATES), np.float32)
    arrays = (x, delta, a, b, cc, h0, y, last)
    c = Contenders()
    argtypes = [ctypes.c_int64, ctypes.c_int64] + [ctypes.c_void_p] * 8

    def intent():
        m = tools.intentc(REPO / "samples" / "selective_scan.intent")
        return lambda: m.selective_scan(x, delta, a, b, cc, h0, out=(y, last))[0]

    def c_fn(symbol: str):
        def make():
            fn = tools.c_function("selective_scan.c", symbol, argtypes)
            return lambda: (fn(d, t, *(v.ctypes.data for v in arrays)), y)[1]
        return make

    def numpy_steps():  # one step at a time, the (channel, state) grid as arrays
        p, q, h = (np.empty((d, SSM_STATES), np.float32) for _ in range(3))

        def call():
            h[...] = h0
            for k in range(t):
                dt = delta[:, k, None]
                np.exp(np.multiply(dt, a, out=p), out=p)
                np.multiply(np.multiply(dt, b[None, :, k], out=q), x[:, k, None], out=q)
                np.add(np.multiply(p, h, out=h), q, out=h)
                y[:, k] = h @ cc[:, k]
            return y
        return call

    def numba_parallel():
        _need_numba()
        return lambda: (_numba_selective_scan(x, delta, a, b, cc, h0, y, last), y)[1]

    c.add("intentc", intent)
    c.add(SERIAL_C_LABEL, c_fn("selective_scan_serial"))
    c.add(C_LABEL, c_fn("selective_scan_omp"))
    c.add("NumPy (a loop over steps)", lambda: numpy_steps())
    c.add("Numba parallel", numba_parallel)
    want, want_last = np.empty((d, t), np.float32), np.empty((d, SSM_STATES), np.float32)
    tools.c_function("selective_scan.c", "selective_scan_f64", argtypes)(
        d, t, x.ctypes.data, delta.ctypes.data, a.ctypes.data, b.ctypes.data, cc.ctypes.data, h0.ctypes.data,
        want.ctypes.data, want_last.ctypes.data)
    return want, c


@benchmark(name="logsumexp_fold", title="log-sum-exp as a region fold (samples/logsumexp.intent, f32)",
           n=2**24, quick_n=2**22, bytes_per_element=4, target="≤ 1.0 × C -ffast-math", target_ratio=1.0,
           baseline=FAST_C_LABEL)
def logsumexp_fold(n: int, tools: Tools):
    x = np.random.default_rng(4).standard_normal(n, dtype=np.float32) * np.float32(4)
    out = np.zeros(1, np.float32)
    c = Contenders()

    def intent(source: Path, how):
        def make():
            m = tools.intentc(source)
            return lambda: how(m)
        return make

    def c_omp(flags: tuple[str, ...]):
        def make():
            fn = tools.c_function("logsumexp.c", "logsumexp_c", [ctypes.c_int64, ctypes.c_void_p], flags,
                                  ctypes.c_float)
            return lambda: np.array([fn(n, x.ctypes.data)], np.float32)
        return make

    def numpy_plain():
        m = x.max()
        return np.array([m + np.log(np.exp(x - m).sum(dtype=np.float32))], np.float32)

    c.add("intentc", intent(REPO / "samples" / "logsumexp.intent", lambda m: m.logsumexp(x, out=out)))
    c.add("intentc (max, then sum: two passes)",
          intent(BENCH / "kernels" / "logsumexp.intent", lambda m: (m.logsumexp(x, out), out)[1]))
    c.add(FAST_C_LABEL, c_omp(("-ffast-math",)))
    c.add(EXACT_C_LABEL, c_omp(()))
    c.add("NumPy", lambda: numpy_plain)
    m = x.astype(np.float64).max()
    return np.array([m + np.log(np.exp(x.astype(np.float64) - m).sum())], np.float32), c


@benchmark(name="sum", title="full sum Σx (f32, values in [0, 1))", n=2**24, quick_n=2**22, bytes_per_element=4,
           target="≤ 1.05 × C OpenMP (memory-bound, like triad)", target_ratio=1.05)
def total(n: int, tools: Tools):
    x = np.random.default_rng(8).random(n, dtype=np.float32)
    out = np.zeros(1, np.float32)
    c = Contenders()

    def intent():
        m = tools.intentc(REPO / "samples" / "reductions.intent")
        return lambda: m.total(x, out=out)

    def c_omp():
        fn = tools.c_function("sum.c", "sum_c", [ctypes.c_int64, ctypes.c_void_p], (), ctypes.c_float)
        return lambda: np.array([fn(n, x.ctypes.data)], np.float32)

    c.add("intentc", intent)
    c.add(C_LABEL, c_omp)
    c.add("NumPy sum (pairwise)", lambda: lambda: np.array([x.sum()], np.float32))
    return np.array([x.sum(dtype=np.float64)], np.float32), c


# ------------------------------------------------- indexed memory, ragged rows, RNG (spec §8-§10)

MEMORY_ROWS, MEMORY_SEGMENTS = 2**24, 2**16


def _csr(n: int, rows: int, seed: int):
    """CSR rows of random lengths (uniform cut points) over n values."""
    rng = np.random.default_rng(seed)
    cuts = np.sort(rng.integers(0, n + 1, rows - 1))
    offsets = np.concatenate([[0], cuts, [n]]).astype(np.int64)
    return offsets, rng.standard_normal(n, dtype=np.float32), rng


if numba is not None:
    @numba.njit(parallel=True, fastmath=True)
    def _numba_segsum(offsets, values, out):
        for r in numba.prange(out.shape[0]):
            acc = np.float32(0.0)
            for j in range(offsets[r], offsets[r + 1]):
                acc += values[j]
            out[r] = acc

    @numba.njit(parallel=True, fastmath=True)
    def _numba_spmv(offsets, cols, values, x, y):
        for r in numba.prange(y.shape[0]):
            acc = np.float32(0.0)
            for j in range(offsets[r], offsets[r + 1]):
                acc += values[j] * x[cols[j]]
            y[r] = acc

    @numba.njit(parallel=True)
    def _numba_philox(seed, out):
        m = out.shape[1]
        chunks = 256
        per = (m + chunks - 1) // chunks
        for chunk in numba.prange(chunks):
            for i in range(chunk * per, min(m, (chunk + 1) * per)):
                c0, c1, c2, c3 = np.uint64(i & 0xFFFFFFFF), np.uint64(i >> 32), np.uint64(0), np.uint64(0)
                k0, k1 = np.uint64(seed), np.uint64(0)
                for r in range(10):
                    if r:
                        k0 = (k0 + np.uint64(0x9E3779B9)) & np.uint64(0xFFFFFFFF)
                        k1 = (k1 + np.uint64(0xBB67AE85)) & np.uint64(0xFFFFFFFF)
                    p0 = np.uint64(0xD2511F53) * c0
                    p1 = np.uint64(0xCD9E8D57) * c2
                    n0 = (p1 >> np.uint64(32)) ^ c1 ^ k0
                    n2 = (p0 >> np.uint64(32)) ^ c3 ^ k1
                    c0, c1, c2, c3 = n0, p1 & np.uint64(0xFFFFFFFF), n2, p0 & np.uint64(0xFFFFFFFF)
                out[0, i], out[1, i], out[2, i], out[3, i] = c0, c1, c2, c3


@benchmark(name="segmented_sum", title=f"segmented sums / csr_row_sums: 2^24 values, 2^16 rows of random "
           "lengths (f32, samples/ragged_csr.intent)", n=MEMORY_ROWS, quick_n=2**22, bytes_per_element=4,
           target="≤ 1.05 × C OpenMP", target_ratio=1.05, rtol=1e-4)
def segmented_sum(n: int, tools: Tools):
    offsets, values, _ = _csr(n, MEMORY_SEGMENTS, 11)
    out = np.zeros(MEMORY_SEGMENTS, np.float32)
    c = Contenders()

    def intent():
        m = tools.intentc(REPO / "samples" / "ragged_csr.intent")
        return lambda: (m.csr_row_sums(values, offsets, out), out)[1]

    def c_omp():
        fn = tools.c_function("memory.c", "segsum_c", [ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p,
                                                       ctypes.c_void_p])
        args = (MEMORY_SEGMENTS, offsets.ctypes.data, values.ctypes.data, out.ctypes.data)
        return lambda: (fn(*args), out)[1]

    def numba_parallel():
        _need_numba()
        return lambda: (_numba_segsum(offsets, values, out), out)[1]

    c.add("intentc", intent)
    c.add(C_LABEL, c_omp)
    c.add("Numba parallel fastmath", numba_parallel)
    starts = offsets[:-1]
    c.add("NumPy reduceat", lambda: lambda: np.where(offsets[1:] > starts, np.add.reduceat(
        values, np.minimum(starts, n - 1)), 0).astype(np.float32))
    want = np.add.reduceat(values.astype(np.float64), np.minimum(starts, n - 1))
    return np.where(offsets[1:] > starts, want, 0).astype(np.float32), c


@benchmark(name="spmv_csr", title="CSR sparse matrix × vector: 2^24 non-zeros, 2^16 rows, 2^16 columns (f32, "
           "samples/ragged_csr.intent)", n=MEMORY_ROWS, quick_n=2**22, bytes_per_element=16,
           target="≤ 1.3 × C -O3 (issue #7)", target_ratio=1.3, rtol=1e-4)
def spmv_csr(n: int, tools: Tools):
    offsets, values, rng = _csr(n, MEMORY_SEGMENTS, 12)
    cols = rng.integers(0, 2**16, n)
    x = rng.standard_normal(2**16, dtype=np.float32)
    y = np.zeros(MEMORY_SEGMENTS, np.float32)
    c = Contenders()

    def intent():
        m = tools.intentc(REPO / "samples" / "ragged_csr.intent")
        return lambda: (m.spmv_csr(values, cols, offsets, x, y), y)[1]

    def c_omp():
        fn = tools.c_function("memory.c", "spmv_c", [ctypes.c_int64] + [ctypes.c_void_p] * 5)
        args = (MEMORY_SEGMENTS, offsets.ctypes.data, cols.ctypes.data, values.ctypes.data, x.ctypes.data,
                y.ctypes.data)
        return lambda: (fn(*args), y)[1]

    def numba_parallel():
        _need_numba()
        return lambda: (_numba_spmv(offsets, cols, values, x, y), y)[1]

    c.add("intentc", intent)
    c.add(C_LABEL, c_omp)
    c.add("Numba parallel fastmath", numba_parallel)
    prods = values.astype(np.float64) * x[cols]
    starts = offsets[:-1]
    want = np.where(offsets[1:] > starts, np.add.reduceat(prods, np.minimum(starts, n - 1)), 0)
    return want.astype(np.float32), c


@benchmark(name="philox", title="Philox4x32-10: 2^24 u32 words, four per counter, stored as four rows "
           "(samples/philox_rng.intent)", n=2**24, quick_n=2**22, bytes_per_element=4,
           target="≤ 1.0 × Numba prange over chunks", target_ratio=1.0, baseline="Numba parallel (chunks)")
def philox(n: int, tools: Tools):
    counters = n // 4
    out = np.zeros((4, counters), np.uint32)
    c = Contenders()

    def intent():
        m = tools.intentc(REPO / "samples" / "philox_rng.intent")
        return lambda: (m.philox_words(20261130, out), out)[1]

    def c_omp():
        fn = tools.c_function("memory.c", "philox_c", [ctypes.c_int64, ctypes.c_uint32, ctypes.c_void_p])
        return lambda: (fn(counters, 20261130, out.ctypes.data), out)[1]

    def numba_parallel():
        _need_numba()
        return lambda: (_numba_philox(20261130, out), out)[1]

    c.add("intentc", intent)
    c.add("Numba parallel (chunks)", numba_parallel)
    c.add(C_LABEL, c_omp)
    from intentc.interp.memory import philox4x32

    i = np.arange(counters, dtype=np.uint64)
    zero = np.zeros(counters, np.uint32)
    want = np.array(philox4x32((np.full(counters, 20261130, np.uint32), zero),
                               (i.astype(np.uint32), (i >> np.uint64(32)).astype(np.uint32), zero, zero)))
    return want, c


@benchmark(name="histogram_scatter_reduce", title="256-bin histogram of 2^24 i64 values by I.scatter_reduce "
           "(benchmarks/kernels/scatter_histogram.intent)", n=2**24, quick_n=2**22, bytes_per_element=8,
           target="quoted vs NumPy (issue #7)", target_ratio=1.0, baseline="NumPy bincount")
def histogram_scatter_reduce(n: int, tools: Tools):
    values = np.random.default_rng(13).integers(-8, 264, n)
    valid = (values >= 0) & (values < 256)
    out = np.zeros(256, np.int64)
    c = Contenders()

    def intent():
        m = tools.intentc(BENCH / "kernels" / "scatter_histogram.intent")
        return lambda: m.scatter_histogram(values, out=out)

    def c_omp():
        fn = tools.c_function("memory.c", "hist256_c", [ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p])
        return lambda: (fn(n, values.ctypes.data, out.ctypes.data), out)[1]

    c.add("intentc", intent)
    c.add("NumPy bincount", lambda: lambda: np.bincount(values[(values >= 0) & (values < 256)], minlength=256))
    c.add(C_LABEL, c_omp)
    c.add("NumPy add.at", lambda: lambda: (lambda h: (np.add.at(h, values[(values >= 0) & (values < 256)], 1), h)[1])(
        np.zeros(256, np.int64)))
    return np.bincount(values[valid], minlength=256), c


# ------------------------------------------------------------------------ running

def time_calls(call: Callable[[], np.ndarray], count: int) -> list[float]:
    times = []
    for _ in range(count):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return times


def run_benchmark(bench: Benchmark, n: int, tools: Tools, warmup: int, repeats: int) -> dict:
    """Warms up and checks every contender, then times them in ROUNDS alternating rounds
    (so a burst of outside load spreads over all of them) and returns the figures."""
    want, contenders = bench.setup(n, tools)
    errors: dict[str, str] = {}
    exact: dict[str, bool] = {}
    for label, call in contenders.calls.items():
        time.sleep(SETTLE_S)
        try:
            for _ in range(warmup):
                got = call()
            np.testing.assert_allclose(got, want, rtol=bench.rtol, atol=bench.rtol)
            exact[label] = bool(np.array_equal(got, want))
        except Exception as e:  # a wrong result or a failing call: reported, not timed
            errors[label] = " ".join(f"{type(e).__name__}: {e}".split())[:200]

    times: dict[str, list[float]] = {label: [] for label in exact}
    per_round = -(-repeats // ROUNDS)
    for _ in range(ROUNDS):
        for label in times:
            time.sleep(SETTLE_S)
            times[label] += time_calls(contenders.calls[label], per_round)

    results: dict[str, dict] = {}
    for label, samples in times.items():
        median = statistics.median(samples)
        results[label] = {
            "median_ms": median * 1e3,
            "min_ms": min(samples) * 1e3,
            "gb_per_s": bench.bytes_per_element * n / median / 1e9,
            "repetitions": len(samples),
            "exact": exact[label],
        }
        if bench.flops is not None:
            results[label]["gflop_per_s"] = bench.flops(n) / median / 1e9
    base = results.get(C_LABEL, {}).get("median_ms")
    baseline = results.get(bench.baseline, {}).get("median_ms")
    for figures in results.values():
        figures["ratio_to_c"] = figures["median_ms"] / base if base else None
        figures["ratio"] = figures["median_ms"] / baseline if baseline else None
    return {"title": bench.title, "n": n, "bytes_per_element": bench.bytes_per_element,
            "baseline": bench.baseline, "target": bench.target, "results": results,
            "not_run": {**contenders.unavailable, **errors}, "errors": sorted(errors)}


def show(bench: Benchmark, record: dict) -> None:
    table = Table(title=f"{bench.title}, N = 2^{record['n'].bit_length() - 1} = {record['n']:,}",
                  caption=f"intentc target: {bench.target}")
    rate = "GFLOP/s" if bench.flops is not None else f"GB/s ({record['bytes_per_element']} B/elem)"
    versus = "× C" if bench.baseline == C_LABEL else f"× {bench.baseline}"
    for column in ("tool", "median ms", "min ms", rate, versus):
        table.add_column(column, justify="left" if column == "tool" else "right")
    for label, f in record["results"].items():
        ratio = f["ratio"]
        ratio_text = "—" if ratio is None else f"{ratio:.2f}"
        if label == "intentc" and ratio is not None:
            colour = "green" if ratio <= bench.target_ratio else "red"
            ratio_text = f"[{colour}]{ratio_text}[/]"
        speed = f["gflop_per_s"] if bench.flops is not None else f["gb_per_s"]
        table.add_row(label, f"{f['median_ms']:.2f}", f"{f['min_ms']:.2f}", f"{speed:.1f}", ratio_text)
    for label, why in record["not_run"].items():
        colour = "red" if label in record["errors"] or label == "intentc" else "dim"
        table.add_row(label, f"[{colour}]not run: {escape(why)}[/]", "", "", "")
    console.print(table)


def other_load(seconds: float = 0.5) -> float | None:
    """How many CPUs other processes kept busy while this one slept (Linux; else None)."""
    def sample():
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        return sum(fields), fields[3] + fields[4]  # total, idle + iowait
    try:
        total0, idle0 = sample()
        time.sleep(seconds)
        total1, idle1 = sample()
    except (OSError, ValueError, IndexError):
        return None
    if total1 == total0:
        return 0.0
    return (os.cpu_count() or 1) * (1 - (idle1 - idle0) / (total1 - total0))


def machine() -> dict:
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        gcc = subprocess.run(["gcc", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    except (OSError, IndexError):
        gcc = None
    numba_version = numba.__version__ if numba is not None else None
    return {"cpu": cpu, "cpus": os.cpu_count(), "threads": THREADS, "python": platform.python_version(),
            "numpy": np.__version__, "numba": numba_version, "gcc": gcc}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"benchmarks to run (default: all of {', '.join(BENCHMARKS)})")
    parser.add_argument("--quick", action="store_true", help="smaller N, 7 repetitions, 1 warm-up")
    parser.add_argument("--repeats", type=int,
                        help="timed repetitions (at least 7, rounded up to a multiple of 3; default 12, quick 7 → 9)")
    parser.add_argument("--json", type=Path, default=RESULTS, help="where to write the figures")
    args = parser.parse_args(argv)
    unknown = [name for name in args.names if name not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}")
    repeats = max(7, args.repeats or (7 if args.quick else 12))
    repeats = -(-repeats // ROUNDS) * ROUNDS
    warmup = 1 if args.quick else 3

    tools = Tools(BUILD)
    report = {"generated": datetime.datetime.now().isoformat(timespec="seconds"),
              "quick": args.quick, "repeats": repeats, "warmup": warmup,
              "machine": machine(), "c_flags": C_FLAGS, "blas_env_dropped": BLAS_ENV_DROPPED, "benchmarks": {}}
    console.rule(f"intentc benchmarks · {THREADS} threads · median of {repeats} after {warmup} warm-up")
    busy = other_load()
    report["busy_cpus_before"] = busy
    if busy is not None and busy > 0.25:
        console.print(f"[yellow]other processes keep {busy:.1f} CPUs busy: times will be noisy, "
                      f"the threaded rows most[/]")
    failed = False
    for name in args.names or list(BENCHMARKS):
        bench = BENCHMARKS[name]
        n = bench.quick_n if args.quick else bench.n
        record = run_benchmark(bench, n, tools, warmup, repeats)
        show(bench, record)
        report["benchmarks"][name] = record
        failed |= bool(record["errors"]) or "intentc" not in record["results"]
    report["intentc_build_s"] = tools.build_seconds
    for source, seconds in tools.build_seconds.items():
        console.print(f"intentc build {source}: {seconds:.2f} s")

    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2) + "\n")
    console.print(f"figures written to {args.json}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
