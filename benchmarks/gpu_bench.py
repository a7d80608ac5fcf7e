"""GPU bandwidth of intentc's PTX: saxpy and a row-wise kernel, against a device copy.

    python benchmarks/gpu_bench.py [--quick] [--repeats R] [--target sm_XX]

Needs a GPU and cuda-python (``pip install '.[gpu]'``); without them it says why and
exits with status 0. Each kernel is built with ``intentc build --target sm_XX`` (the
GPU's own SM by default), launched through ``intentc.ptx_loader`` (which follows only the
manifest), checked once against NumPy, then timed with CUDA events over batches of
launches (the median batch is reported). GB/s is the traffic the kernel needs (saxpy:
read x and y, write out: 12 bytes per element; row_scale: 8 bytes per element plus the
row scales). The anchor is ``cuMemcpyDtoD`` of a buffer of the same size as the
output, which reads and writes it once (8 bytes per f32 element).
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from intentc import ptx_loader  # noqa: E402
from intentc.codegen.target import GPU_PTX_ISA  # noqa: E402
from intentc.driver import build  # noqa: E402

BUILD = REPO / "benchmarks" / "build" / "gpu"


def device_target(capability) -> str:
    number = capability[0] * 10 + capability[1]
    usable = [name for value, name in sorted((int(n[3:]), n) for n in GPU_PTX_ISA) if value <= number]
    if not usable:
        raise SystemExit(f"the GPU is sm_{number}; intentc's PTX target starts at sm_80")
    return usable[-1]


class Timer:
    """Median milliseconds per launch of ``run()`` over batches, with CUDA events."""

    def __init__(self, backend):
        self.driver = backend.driver
        self.backend = backend

    def __call__(self, run, repeats: int, batch: int) -> float:
        d = self.driver
        start = self.backend._check(d.cuEventCreate(0))
        end = self.backend._check(d.cuEventCreate(0))
        times = []
        for _ in range(repeats):
            self.backend._check(d.cuEventRecord(start, 0))
            for _ in range(batch):
                run()
            self.backend._check(d.cuEventRecord(end, 0))
            self.backend._check(d.cuEventSynchronize(end))
            times.append(self.backend._check(d.cuEventElapsedTime(start, end)) / batch)
        return statistics.median(times)


def fast_launcher(call):
    """Launch ``call``'s sequence with its argument buffer packed once (the status word
    stays 0 while the kernel succeeds, so it is not cleared between launches)."""
    d = call.kernel.module.backend.driver
    backend = call.kernel.module.backend
    launches = []
    for launch in call.kernel.spec["launches"]:
        grid = [ptx_loader.evaluate(g, call.env) for g in launch["grid"]]
        block = [ptx_loader.evaluate(b, call.env) for b in launch["block"]]
        values = [np.array([launch.get("phase", 0) if role == "phase" else value], dtype=ptx_loader.ARG_NUMPY[kind])
                  for kind, value, role in call.args]
        pointers = np.array([v.ctypes.data for v in values], dtype=np.uint64)
        launches.append((grid, block, launch.get("shared_bytes", 0), values, pointers))

    def run():
        for grid, block, shared, _values, pointers in launches:
            backend._check(d.cuLaunchKernel(call.kernel.function, *grid, *block, shared, 0, pointers.ctypes.data, 0))

    return run, launches


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--target", default=None, help="sm_XX to build for (default: the GPU's)")
    args = parser.parse_args(argv)
    try:
        backend = ptx_loader.CudaDriver()
    except Exception as exc:  # noqa: BLE001 - no driver, no GPU, no cuda-python
        print(f"gpu_bench: skipped, no GPU to run on ({type(exc).__name__}: {exc})")
        return 0
    target = args.target or device_target(backend.capability)
    repeats = args.repeats or (5 if args.quick else 15)
    batch = 5 if args.quick else 20
    d = backend.driver
    dev = backend._check(d.cuDeviceGet(0))
    name = backend._check(d.cuDeviceGetName(64, dev)).split(b"\0")[0].decode()
    print(f"device: {name} (sm_{backend.capability[0]}{backend.capability[1]}), PTX target {target}")
    timer = Timer(backend)
    rng = np.random.default_rng(0)
    rows = []

    def module(sample):
        out = BUILD / target / f"{sample}.ptx"
        build(REPO / "samples" / f"{sample}.intent", out, target)
        return ptx_loader.load(out, backend)

    def measure(label, kernel, inputs, want, traffic, copy_bytes):
        call = kernel.prepare(*inputs)
        try:
            call.launch()
            got = call.finish()
            if isinstance(want, tuple):  # a kernel that writes a mut parameter
                got, want = want
            assert np.array_equal(got, want), f"{label}: wrong result"
            run, _ = fast_launcher(call)
            ms = timer(run, repeats, batch)
        finally:
            call.release()
        src, dst = backend.alloc(copy_bytes), backend.alloc(copy_bytes)
        try:
            copy_ms = timer(lambda: backend._check(d.cuMemcpyDtoD(dst, src, copy_bytes)), repeats, batch)
        finally:
            backend.free(src)
            backend.free(dst)
        rows.append((label, ms, traffic / ms / 1e6, 2 * copy_bytes / copy_ms / 1e6))

    saxpy = module("saxpy")
    for n in ((1 << 22,) if args.quick else (1 << 24, 1 << 26)):
        a = np.float32(1.5)
        x, y = rng.uniform(-1, 1, n).astype(np.float32), rng.uniform(-1, 1, n).astype(np.float32)
        measure(f"saxpy N=2^{n.bit_length() - 1}", saxpy.saxpy, (float(a), x, y), a * x + y, 12 * n, 4 * n)
    rows_k = module("row_scale")
    for r, c in (((1024, 4096),) if args.quick else ((4096, 4096), (16384, 4096), (1 << 20, 16))):
        x, s = rng.uniform(-1, 1, (r, c)).astype(np.float32), rng.uniform(-2, 2, r).astype(np.float32)
        out = np.zeros((r, c), np.float32)
        measure(f"row_scale {r}x{c}", rows_k.row_scale, (x, s, out), (out, x * s[:, None]), 8 * r * c + 4 * r,
                4 * r * c)
    print(f"{'kernel':24} {'ms':>9} {'GB/s':>9} {'copy GB/s':>10} {'of copy':>8}")
    for label, ms, gbs, copy_gbs in rows:
        print(f"{label:24} {ms:9.4f} {gbs:9.1f} {copy_gbs:10.1f} {gbs / copy_gbs:8.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
