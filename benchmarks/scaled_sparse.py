"""Microscaled and sparse contractions against the dense f32 contraction, in one run.

    python benchmarks/scaled_sparse.py            # M = N = K = 1024
    python benchmarks/scaled_sparse.py --size 2048 --repeats 15

Builds ``samples/mxfp8_matmul.intent``, ``samples/mxfp4_matmul.intent``,
``samples/sparse24_matmul.intent`` and ``benchmarks/kernels/sgemm.intent`` into
``benchmarks/build/`` and times, on the same machine and in alternating rounds:

- ``sgemm``: ``I.contract("mk,kn->mn")`` in f32 (the dense baseline);
- ``mxfp8``: ``I.scaled_contract`` of f8e4m3 codes with e8m0 scales per 32 along K;
- ``mxfp4``: the same with f4e2m1 codes (packed two per byte; the arrays are packed once,
  outside the timed region, by calling the kernel on a pre-packed descriptor);
- ``sparse24``: ``I.sparse_contract("2:4")`` of an [M, K] operand keeping 2 of every 4.

GFLOP/s count ``2 M N K`` for every row (the logical shape), so the sparse row shows how
much faster the same logical product is; ``x sgemm`` is the median time over sgemm's.
Every result is checked against NumPy first (a dequantised / decompressed f64 product,
within ``K * 2^-24 * sum |x y|``). Figures go to ``benchmarks/results/scaled_sparse.json``.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

os.environ.setdefault("INTENT_NUM_THREADS", str(len(os.sched_getaffinity(0))))

import numpy as np  # noqa: E402

import intentc  # noqa: E402
from intentc.kir import mx  # noqa: E402
from intentc.loader import IntentTensor, _Device, _DType  # noqa: E402

KERNELS = {"sgemm": HERE / "kernels" / "sgemm.intent", "mxfp8": REPO / "samples" / "mxfp8_matmul.intent",
           "mxfp4": REPO / "samples" / "mxfp4_matmul.intent", "sparse24": REPO / "samples" / "sparse24_matmul.intent"}


def build(name: str, source: Path) -> Path:
    out = HERE / "build" / f"{name}.so"
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "intentc", "build", str(source), "-o", str(out)], check=True, cwd=REPO,
                   env=dict(os.environ, PYTHONPATH=str(REPO)))
    return out


def packed_call(kernel, arrays: list, out: np.ndarray):
    """A call of ``kernel`` on descriptors built once: f4e2m1 arrays packed beforehand, so the
    timed region is the kernel alone."""
    keep, args = [], []
    for array in arrays + [out]:
        if array.dtype.name == "float4_e2m1fn":
            data, code, bits = mx.pack_f4(array), 17, 4
        else:
            data, (code, bits) = array, _dlpack(array.dtype)
        shape = (ctypes.c_int64 * array.ndim)(*array.shape)
        strides = (ctypes.c_int64 * array.ndim)(*[int(np.prod(array.shape[k + 1:])) for k in range(array.ndim)])
        i64 = ctypes.POINTER(ctypes.c_int64)
        keep += [data, shape, strides]
        args.append(ctypes.byref(IntentTensor(data.ctypes.data, _Device(1, 0), array.ndim, _DType(code, bits, 1),
                                              ctypes.cast(shape, i64), ctypes.cast(strides, i64), 0)))
    func = kernel.func

    def call():
        rc = func(*args)
        assert rc == 0, kernel.module.last_error()
        return keep

    return call


def _dlpack(dtype) -> tuple[int, int]:
    from intentc.kir.calling import dlpack_of

    return dlpack_of(dtype)


def time_rounds(calls: dict, repeats: int) -> dict:
    times = {name: [] for name in calls}
    rounds = 3
    for name, call in calls.items():  # warm-up
        call()
    for _ in range(rounds):
        for name, call in calls.items():
            time.sleep(0.2)
            for _ in range(max(1, repeats // rounds)):
                start = time.perf_counter()
                call()
                times[name].append(time.perf_counter() - start)
    return times


def main(argv=None) -> int:
    import ml_dtypes

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--json", default=str(HERE / "results" / "scaled_sparse.json"))
    args = parser.parse_args(argv)
    n = args.size
    g = n // 32
    libs = {name: intentc.load(build(name, source)) for name, source in KERNELS.items()}
    rng = np.random.default_rng(0)

    def codes(shape, name, bits):
        c = rng.integers(0, 1 << bits, shape).astype(np.uint8)
        if name == "float8_e4m3fn":
            c[(c & 0x7F) == 0x7F] = 0x38
        return c.view(getattr(ml_dtypes, name))

    scales_a = rng.integers(120, 134, (n, g)).astype(np.uint8).view(ml_dtypes.float8_e8m0fnu)
    scales_b = rng.integers(120, 134, (n, g)).astype(np.uint8).view(ml_dtypes.float8_e8m0fnu)
    a32, b32 = rng.standard_normal((n, n)).astype(np.float32), rng.standard_normal((n, n)).astype(np.float32)
    a8, b8 = codes((n, n), "float8_e4m3fn", 8), codes((n, n), "float8_e4m3fn", 8)
    a4, b4 = codes((n, g, 32), "float4_e2m1fn", 4), codes((g, 32, n), "float4_e2m1fn", 4)
    pairs = np.array([(i, j) for i in range(4) for j in range(i + 1, 4)])
    chosen = pairs[rng.integers(0, 6, (n, n // 4))]
    meta = (chosen[..., 0] | (chosen[..., 1] << 2)).astype(np.uint8)
    values = rng.standard_normal((n, n // 2)).astype(np.float32)
    outs = {name: np.empty((n, n), np.float32) for name in KERNELS}

    # Correctness first.
    def check(name, got, x, y):
        want = x @ y
        bound = x.shape[1] * 2.0 ** -24 * (np.abs(x) @ np.abs(y))
        assert np.all(np.abs(got - want) <= bound + 1e-30), f"{name}: wrong result"

    dq = lambda v, s: v.astype(np.float64) * np.repeat(s.astype(np.float64), 32, axis=1)  # noqa: E731
    calls = {
        "sgemm": lambda: libs["sgemm"].sgemm(a32, b32, out=outs["sgemm"]),
        "mxfp8": lambda: libs["mxfp8"].mxfp8_matmul(a8, scales_a, b8, scales_b, out=outs["mxfp8"]),
        "mxfp4": packed_call(libs["mxfp4"].mxfp4_matmul, [a4, scales_a, b4, scales_b], outs["mxfp4"]),
        "sparse24": lambda: libs["sparse24"].sparse24_matmul(values, meta, b32, out=outs["sparse24"]),
    }
    for call in calls.values():
        call()
    check("sgemm", outs["sgemm"], a32.astype(np.float64), b32.astype(np.float64))
    check("mxfp8", outs["mxfp8"], dq(a8, scales_a), dq(b8.T, scales_b).T)
    check("mxfp4", outs["mxfp4"], dq(a4.reshape(n, n), scales_a), dq(b4.reshape(n, n).T, scales_b).T)
    dense = np.zeros((n, n))
    for j in range(2):
        np.put_along_axis(dense, 4 * np.arange(n // 4)[None, :] + chosen[..., j], values[:, j::2].astype(np.float64),
                          axis=1)
    check("sparse24", outs["sparse24"], dense, b32.astype(np.float64))

    times = time_rounds(calls, args.repeats)
    flops = 2.0 * n ** 3
    base = statistics.median(times["sgemm"])
    rows = []
    print(f"M = N = K = {n}, {os.environ['INTENT_NUM_THREADS']} threads; GFLOP/s of the logical 2 M N K")
    print(f"{'kernel':<10} {'median ms':>10} {'min ms':>9} {'GFLOP/s':>9} {'x sgemm':>8}")
    for name, ts in times.items():
        median = statistics.median(ts)
        rows.append({"kernel": name, "median_s": median, "min_s": min(ts), "gflops": flops / median / 1e9,
                     "vs_sgemm": median / base})
        print(f"{name:<10} {median * 1e3:>10.2f} {min(ts) * 1e3:>9.2f} {flops / median / 1e9:>9.1f} "
              f"{median / base:>8.2f}")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps({"size": n, "threads": os.environ["INTENT_NUM_THREADS"],
                                           "machine": platform.processor() or platform.machine(),
                                           "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
