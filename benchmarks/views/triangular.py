"""A view in an expression against the scalar loop it stands for (issue: slices were copied).

PolyBench-style triangular update ``A[i, j] -= sum_k A[i, k] * A[k, j]`` over k < i, written
two ways in one Intent module — ``I.sum(A[i, 0:i] * A[0:i, j])`` on slices of the ``mut``
parameter, and the ordered scalar loop — built with ``intentc build``, called on the same
matrix, results compared, medians of interleaved rounds reported with the load.

    python benchmarks/views/triangular.py [N] [repeats]
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
import intentc  # noqa: E402

SOURCE = """
import intent as I

@intent.kernel
def sliced(A: mut f32[N, N]):
    for i in range(N):
        for j in range(i + 1, N):
            A[i, j] = A[i, j] - I.sum(A[i, 0:i] * A[0:i, j])

@intent.kernel
def scalar_loop(A: mut f32[N, N]):
    for i in range(N):
        for j in range(i + 1, N):
            acc = 0.0
            for k in range(i):
                acc = acc + A[i, k] * A[k, j]
            A[i, j] = A[i, j] - acc
"""


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 600
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 9
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "tri.intent"
        src.write_text(SOURCE)
        subprocess.run([sys.executable, "-m", "intentc", "build", str(src), "-o", str(Path(tmp) / "tri.so"),
                        "--no-cache"], check=True)
        module = intentc.load(Path(tmp) / "tri.so")
        a0 = np.random.default_rng(0).uniform(-1, 1, (n, n)).astype(np.float32) / n
        results, times = {}, {"sliced": [], "scalar_loop": []}
        for _ in range(repeats):
            for name in times:  # interleaved
                a = a0.copy()
                start = time.perf_counter()
                getattr(module, name)(a)
                times[name].append(time.perf_counter() - start)
                results[name] = a
        np.testing.assert_allclose(results["sliced"], results["scalar_loop"], rtol=1e-4, atol=1e-6)
        load = os.getloadavg()[0]
        base = statistics.median(times["scalar_loop"])
        print(f"N = {n}, {repeats} interleaved rounds, load average {load:.2f}")
        for name, ts in times.items():
            med = statistics.median(ts)
            print(f"  {name:12s} median {med * 1e3:8.2f} ms  min {min(ts) * 1e3:8.2f} ms  ratio {med / base:.2f}")


if __name__ == "__main__":
    main()
