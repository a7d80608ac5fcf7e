"""What one call of a small compiled kernel costs from Python, beside the alternatives.

    python benchmarks/call_overhead.py [--n 16] [--rounds 15] [--calls 20000] [--library saxpy.so]

Contenders, on the same 1-D f32 arrays with a preallocated output:

- ``ctypes, prepared``: the kernel's C function called through ctypes with descriptors
  built once beforehand: the floor of any ctypes-based call (no argument handling at all).
- ``intentc.load``: ``saxpy(a, x, y, out=out)``, the loader's prepared call.
- ``intentc general path``: the same call through the path every other call takes
  (keyword arguments, lists, allocated results, ...).
- ``Numba dispatch``: an ``@njit`` function of the same loop (when numba imports).

Rounds alternate between the contenders; the table shows each one's median and minimum
over the rounds of the mean time per call, in microseconds, and the load average before and
after. On a busy machine the means mostly measure the other processes, so each contender is
also timed one call at a time (``--single`` calls, interleaved): the 10th percentile of
those times, less that of an empty function timed the same way, is what a call costs when
it is not interrupted.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import intentc  # noqa: E402
from intentc.loader import IntentTensor, _DType, _Device  # noqa: E402

SAXPY = REPO / "samples" / "saxpy.intent"


def _library(path: str | None) -> Path:
    if path:
        return Path(path)
    from intentc.driver import build

    folder = Path(tempfile.mkdtemp(prefix="call-overhead-"))
    build(SAXPY, folder / "saxpy.so")
    return folder / "saxpy.so"


def _descriptor(array: np.ndarray, keep: list) -> IntentTensor:
    dims = (ctypes.c_int64 * 2)(array.shape[0], array.strides[0] // array.itemsize)
    keep.append(dims)
    return IntentTensor(array.ctypes.data, _Device(1, 0), 1, _DType(2, 32, 1),
                        ctypes.cast(dims, ctypes.POINTER(ctypes.c_int64)),
                        ctypes.cast(ctypes.addressof(dims) + 8, ctypes.POINTER(ctypes.c_int64)), 0)


def contenders(module, n: int) -> dict:
    x = np.arange(n, dtype=np.float32)
    y = np.ones(n, np.float32)
    out = np.empty(n, np.float32)
    kernel = module.saxpy
    keep: list = []
    descriptors = [ctypes.byref(_descriptor(a, keep)) for a in (x, y, out)]
    raw = kernel.func
    a = ctypes.c_float(2.0)

    def bare():
        raw(a, *descriptors)

    def fast():
        kernel(2.0, x, y, out=out)

    def general():
        kernel._call((2.0, x, y), out, {})

    found = {"ctypes, prepared": bare, "intentc.load": fast, "intentc general path": general}
    try:
        import numba
    except ImportError:
        numba = None
    if numba is not None:
        @numba.njit(cache=False)
        def saxpy_nb(a, x, y, out):
            for i in range(x.shape[0]):
                out[i] = a * x[i] + y[i]

        saxpy_nb(np.float32(2.0), x, y, out)  # compile

        def numba_call():
            saxpy_nb(2.0, x, y, out)

        found[f"Numba {numba.__version__} dispatch"] = numba_call
    for name, call in found.items():  # every contender computes the same thing
        out[:] = 0
        call()
        np.testing.assert_array_equal(out, np.float32(2.0) * x + y, err_msg=name)
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--single", type=int, default=20000, help="calls timed one at a time, per contender")
    parser.add_argument("--library", help="a saxpy.so already built from samples/saxpy.intent")
    args = parser.parse_args(argv)
    module = intentc.load(_library(args.library))
    module.set_num_threads(1)  # a 16-element call runs inline anyway
    found = contenders(module, args.n)
    load_before = os.getloadavg()
    times: dict = {name: [] for name in found}
    for _ in range(args.rounds):
        for name, call in found.items():
            start = time.perf_counter()
            for _ in range(args.calls):
                call()
            times[name].append((time.perf_counter() - start) / args.calls * 1e6)
    single = _single_calls(found, args.single)
    load_after = os.getloadavg()
    print(f"n = {args.n}, {args.rounds} rounds x {args.calls} calls, Python {sys.version.split()[0]}, "
          f"NumPy {np.__version__}")
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f} ({os.cpu_count()} CPUs)")
    print(f"{'contender':<28} {'median us':>10} {'min us':>8} {'one call, p10 us':>17}")
    for name, values in times.items():
        print(f"{name:<28} {statistics.median(values):10.2f} {min(values):8.2f} {single[name]:17.2f}")
    return 0


def _single_calls(found: dict, count: int) -> dict:
    """Each contender's 10th-percentile time of one call, less an empty function's."""
    def nothing():
        pass

    clock = time.perf_counter_ns
    samples: dict = {name: [] for name in ("", *found)}
    calls = [("", nothing), *found.items()]
    for _ in range(count):
        for name, call in calls:
            start = clock()
            call()
            samples[name].append(clock() - start)
    p10 = {name: sorted(values)[len(values) // 10] / 1000 for name, values in samples.items()}
    return {name: p10[name] - p10[""] for name in found}


if __name__ == "__main__":
    sys.exit(main())
