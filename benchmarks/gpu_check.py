"""The GPU device check: every sample against the CPU build, then intentc's PTX timed
against PyTorch and Triton on the same device arrays.

    python benchmarks/gpu_check.py [--quick] [--json PATH] [--only NAME ...]
    python benchmarks/gpu_check.py --emulate      # no GPU: the harness on the block emulator

Needs a GPU, cuda-python (``pip install '.[gpu]'``) and, for the peers, PyTorch and
Triton (a peer that is missing is reported as such). Without a GPU it says why and exits 0.
One command, at most about 8 minutes on an H200 (``--quick``: about 2).

1. **Samples.** Each sample is built for the GPU's SM and for this host; ``samples/checks.py``
   runs on both (its exact checks against NumPy, bad calls included), every kernel call's
   results are recorded on both sides and compared bit for bit.
2. **Timings.** Inputs are PyTorch CUDA tensors, passed to intentc's kernels as they are
   (``__dlpack__``/``__cuda_array_interface__``: no host copy; docs/ptx-abi.md), so every
   contender reads the same device memory. Each kernel is checked against PyTorch once,
   then timed with CUDA events over batches of launches (median per launch; intentc's
   argument buffers are packed once, as a C caller's would be). Rows: triad (GB/s against
   the HBM peak), row softmax and layernorm (against ``torch`` and this file's Triton
   kernels, one program per row), sum and cumsum, a 256-bin histogram, f32 and bf16
   matrix products (cuBLAS through ``torch.matmul``, TF32 off for f32).
3. **Targets** (issue list): streaming >= 85 % of HBM peak; softmax and layernorm >= 1.0x
   Triton; f32 matmul >= 0.7x cuBLAS; bf16 matmul >= 0.6x cuBLAS; sum and cumsum >= 0.8x
   PyTorch. "speed" below is the peer's time over intentc's (above 1: intentc is faster).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "samples"))
sys.path.insert(0, str(REPO / "tests" / "gpu"))
sys.path.insert(0, str(REPO / "benchmarks"))

from gpu_bench import device_target, fast_launcher  # noqa: E402
from intentc import ptx_loader  # noqa: E402

BUILD = REPO / "benchmarks" / "build" / "gpu_check"
KERNELS = REPO / "benchmarks" / "gpu" / "kernels.intent"
# Peak HBM bandwidth (GB/s) by device name, from the vendors' data sheets.
HBM_PEAK = {"H200": 4800.0, "H100 SXM": 3350.0, "H100 NVL": 3900.0, "H100 PCIe": 2000.0, "A100-SXM4-80GB": 2039.0,
            "A100 80GB PCIe": 1935.0, "A100-SXM4-40GB": 1555.0, "L40S": 864.0}
TARGETS = {"triad": ("of HBM peak", 0.85), "softmax": ("triton", 1.0), "layernorm": ("triton", 1.0),
           "sum": ("torch", 0.8), "cumsum": ("torch", 0.8), "sgemm": ("torch", 0.7), "bf16_matmul": ("torch", 0.6)}


def _build(job):
    source, output, target = job
    from intentc.driver import build

    build(Path(source), Path(output), target)
    return output


# ---- 1. the samples on both targets ----------------------------------------------------------------
class Recorder:
    """A module whose calls are recorded: each call's results, or the status it raised."""

    def __init__(self, module, calls: list):
        self.module, self.calls = module, calls

    def set_num_threads(self, n: int) -> None:
        getattr(self.module, "set_num_threads", lambda n: None)(n)

    def __getattr__(self, name):
        kernel = getattr(self.module, name)

        def call(*args, **kwargs):
            try:
                result = kernel(*args, **kwargs)
            except Exception as exc:
                self.calls.append((name, "error", getattr(exc, "code", type(exc).__name__)))
                raise
            values = result if isinstance(result, tuple) else (result,)
            written = [a for a in args if isinstance(a, np.ndarray) and a.flags.writeable]
            self.calls.append((name, "ok", [np.array(v, copy=True) for v in values if v is not None] +
                               [a.copy() for a in written]))
            return result

        return call


def compare(a, b) -> tuple[bool, float | None]:
    """(same bits, the largest difference of float results relative to the largest magnitude
    of their array, where they differ, or
    None when something other than floats differs: a status, a shape, integers)."""
    if a[:2] != b[:2] or (a[1] == "error" and a[2] != b[2]) or (a[1] == "ok" and len(a[2]) != len(b[2])):
        return False, None
    if a[1] == "error":
        return True, 0.0
    worst = 0.0
    for x, y in zip(a[2], b[2]):
        if x.shape != y.shape or x.dtype != y.dtype:
            return False, None
        if x.tobytes() == y.tobytes():
            continue
        if x.dtype.kind != "f":  # integers, bools, indices: the same on every target
            return False, None
        x64, y64 = x.astype(np.float64), y.astype(np.float64)
        both_nan = np.isnan(x64) & np.isnan(y64)
        if (np.isnan(x64) != np.isnan(y64)).any():
            return False, None
        finite = np.isfinite(x64) & np.isfinite(y64)
        if (x64[~finite & ~both_nan] != y64[~finite & ~both_nan]).any():  # infinities must agree
            return False, None
        scale = max(float(np.abs(y64[finite]).max(initial=0.0)), np.finfo(x.dtype).tiny)
        worst = max(worst, float(np.abs(x64[finite] - y64[finite]).max(initial=0.0)) / scale)
    return worst == 0.0, worst


def check_samples(gpu_module_of, target: str, jobs: int, only=None, build_dir: Path = BUILD) -> list[dict]:
    import checks
    import gpu_cases
    import intentc

    names = [s for s in gpu_cases.SAMPLES if s in checks.CHECKS and (not only or s in only)]
    (build_dir / "host").mkdir(parents=True, exist_ok=True)
    builds = [(str(REPO / "samples" / f"{s}.intent"), str(build_dir / "host" / f"{s}.so"), None) for s in names]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(_build, builds))
    rows = []
    for sample in names:
        cpu_calls, gpu_calls = [], []
        started = time.perf_counter()
        row = {"sample": sample}
        try:
            row["cpu"] = checks.CHECKS[sample](Recorder(intentc.load(build_dir / "host" / f"{sample}.so"), cpu_calls))
            row["gpu"] = checks.CHECKS[sample](gpu_cases.Adapter(Recorder(gpu_module_of(sample), gpu_calls)))
        except Exception as exc:  # noqa: BLE001 - a failing sample is a row of the report
            row["failure"] = f"{type(exc).__name__}: {exc}"
        row["calls"] = len(gpu_calls)
        verdicts_ = [compare(a, b) for a, b in zip(cpu_calls, gpu_calls)]
        row["same_bits"] = sum(same for same, _ in verdicts_)
        # Float reductions may group differently on the two targets (T1); nothing else may differ.
        row["float_max_rel_diff"] = max((rel for _, rel in verdicts_ if rel is not None), default=0.0)
        mismatched = [k for k, (_, rel) in enumerate(verdicts_) if rel is None]
        if mismatched:
            k = mismatched[0]
            row.setdefault("failure", f"call {k} ({cpu_calls[k][0]}) differs in more than float rounding")
        row["seconds"] = round(time.perf_counter() - started, 2)
        if len(cpu_calls) != len(gpu_calls):
            row.setdefault("failure", f"{len(cpu_calls)} calls on the CPU but {len(gpu_calls)} on the GPU")
        rows.append(row)
        status = "FAIL " + row["failure"] if "failure" in row else "PASS"
        print(f"  {sample:34} {status[:70]:70} {row['same_bits']}/{row['calls']} calls same bits, "
              f"floats within {row['float_max_rel_diff']:.1e} relative", flush=True)
    return rows


# ---- 2. timings ------------------------------------------------------------------------------------
def pack_launches(call):
    """``call``'s launch sequence with every argument buffer packed once: what a C caller
    that launches the PTX itself does (docs/ptx-abi.md, "With cuda-python")."""
    call.kernel.module.backend.zero(call.status, call.kernel.module.manifest["status"]["bytes"])
    return fast_launcher(call)[0]


class Timer:
    def __init__(self, torch, repeats: int, budget_s: float):
        self.torch, self.repeats, self.budget_s = torch, repeats, budget_s

    def __call__(self, run) -> float:
        """Median milliseconds per call of ``run`` (batches sized to about 20 ms)."""
        torch = self.torch
        for _ in range(3):
            run()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        batch = max(1, min(200, int(20.0 / max(start.elapsed_time(end), 1e-3))))
        times = []
        began = time.perf_counter()
        for _ in range(self.repeats):
            start.record()
            for _ in range(batch):
                run()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / batch)
            if time.perf_counter() - began > self.budget_s:
                break
        return statistics.median(times)


def _triton_kernels():
    """Row softmax and layernorm in Triton, one program per row with the whole row in
    registers (the design of Triton's tutorials), or None without Triton."""
    try:
        import triton
        import triton.language as tl
    except Exception:  # noqa: BLE001 - no Triton: the column says so
        return None

    @triton.jit
    def softmax_rows(x_ptr, out_ptr, row_stride, cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offsets = tl.arange(0, BLOCK)
        inside = offsets < cols
        x = tl.load(x_ptr + row * row_stride + offsets, mask=inside, other=-float("inf"))
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(out_ptr + row * row_stride + offsets, e / tl.sum(e, axis=0), mask=inside)

    @triton.jit
    def layernorm_rows(x_ptr, w_ptr, b_ptr, out_ptr, row_stride, cols, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offsets = tl.arange(0, BLOCK)
        inside = offsets < cols
        x = tl.load(x_ptr + row * row_stride + offsets, mask=inside, other=0.0)
        mean = tl.sum(x, axis=0) / cols
        centred = tl.where(inside, x - mean, 0.0)
        rstd = 1.0 / tl.sqrt(tl.sum(centred * centred, axis=0) / cols + eps)
        w = tl.load(w_ptr + offsets, mask=inside, other=0.0)
        b = tl.load(b_ptr + offsets, mask=inside, other=0.0)
        tl.store(out_ptr + row * row_stride + offsets, centred * rstd * w + b, mask=inside)

    def launch_config(cols):
        block = triton.next_power_of_2(cols)
        return block, (4 if block <= 1024 else 8 if block <= 4096 else 16)

    def softmax(x, out):
        block, warps = launch_config(x.shape[1])
        softmax_rows[(x.shape[0],)](x, out, x.stride(0), x.shape[1], BLOCK=block, num_warps=warps)

    def layernorm(x, w, b, out):
        block, warps = launch_config(x.shape[1])
        layernorm_rows[(x.shape[0],)](x, w, b, out, x.stride(0), x.shape[1], 1e-5, BLOCK=block, num_warps=warps)

    return {"softmax": softmax, "layernorm": layernorm}


def cases(torch, quick: bool):
    """(name, intentc kernel, intentc args, torch reference thunk, tolerance, bytes, flops)."""
    F = torch.nn.functional
    g = torch.Generator(device="cuda").manual_seed(0)

    def uniform(*shape, lo=-1.0, hi=1.0, dtype=torch.float32):
        return (torch.rand(*shape, generator=g, device="cuda", dtype=torch.float32) * (hi - lo) + lo).to(dtype)

    n = 1 << (24 if quick else 27)
    rows, cols = (4096, 2048) if quick else (8192, 8192)
    size = 2048 if quick else 4096
    x, y = uniform(n), uniform(n)
    m = uniform(rows, cols, lo=-8, hi=8)
    w, b = uniform(cols), uniform(cols)
    s = uniform(n >> 1)
    u = uniform(n >> 1, lo=0.0, hi=1.0)
    a32, b32 = uniform(size, size), uniform(size, size)
    a16, b16 = a32.to(torch.bfloat16), b32.to(torch.bfloat16)
    sm_out, ln_out = torch.empty_like(m), torch.empty_like(m)
    yield ("triad", "triad", (1.5, x, y), lambda: torch.add(x, y, alpha=1.5), 0.0, 12 * n, 2 * n)
    yield ("softmax", "softmax", (m, sm_out), lambda: torch.softmax(m, dim=1), 1e-6, 8 * rows * cols, None)
    yield ("layernorm", "layernorm", (m, w, b, ln_out), lambda: F.layer_norm(m, (cols,), w, b, 1e-5), 1e-4,
           8 * rows * cols + 8 * cols, None)
    yield ("sum", "total", (s,), lambda: torch.sum(s).reshape(1), 1e-3, 4 * s.numel(), s.numel())
    yield ("cumsum", "cumsum", (s,), lambda: torch.cumsum(s, 0), 5e-2, 8 * s.numel(), s.numel())
    # Bin edges are computed differently (T6's rule against histc's), so a few values next to
    # an edge may land one bin over: counts agree to 1e-4 of the largest.
    yield ("histogram", "histogram", (u,), lambda: torch.histc(u, bins=256, min=0.0, max=1.0).to(torch.int64), 1e-4,
           4 * u.numel(), None)
    yield ("sgemm", "sgemm", (a32, b32), lambda: torch.matmul(a32, b32), 1e-3, None, 2 * size ** 3)
    yield ("bf16_matmul", "bf16_matmul", (a16, b16), lambda: torch.matmul(a16, b16).float(), 3e-2, None,
           2 * size ** 3)


def _close(got, want, tolerance: float) -> bool:
    if tolerance == 0.0:
        return bool((got == want).all())
    scale = max(1.0, float(want.abs().max()))
    return float((got.float() - want.float()).abs().max()) <= tolerance * scale


def time_kernels(backend, target: str, quick: bool, only) -> list[dict]:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False  # f32 means f32 (TF32 rounds the inputs)
    torch.backends.cudnn.allow_tf32 = False
    out = BUILD / target / "kernels.ptx"
    _build((str(KERNELS), str(out), target))
    module = ptx_loader.load(out, backend)
    timer = Timer(torch, repeats=7 if quick else 15, budget_s=8.0 if quick else 20.0)
    triton_impl = _triton_kernels()
    rows = []
    for name, kernel, args, reference, tolerance, traffic, flops in cases(torch, quick):
        if only and name not in only:
            continue
        row = {"kernel": name}
        call = getattr(module, kernel).prepare(*args)
        try:
            run = pack_launches(call)
            run()
            got = call.finish()
            if got is None:  # the result is the kernel's mut output
                got = args[-1]
            got = torch.as_tensor(got, device="cuda")
            want = reference()
            row["correct"] = _close(got, want, tolerance)
            row["intentc_ms"] = timer(run)
            call.finish()  # raises if any timed launch failed a check
        finally:
            call.release()
        row["torch_ms"] = timer(reference)
        if triton_impl and name in triton_impl:
            outputs = torch.empty_like(args[0])
            triton_args = args[:-1] + (outputs,)
            triton_impl[name](*triton_args)
            row["triton_correct"] = _close(outputs, reference(), tolerance)
            row["triton_ms"] = timer(lambda: triton_impl[name](*triton_args))
        if traffic:
            row["intentc_GBps"] = traffic / row["intentc_ms"] / 1e6
        if flops:
            row["intentc_GFLOPs"] = flops / row["intentc_ms"] / 1e6
        rows.append(row)
        print(f"  {name:12} correct={row['correct']} intentc {row['intentc_ms']:.4f} ms, torch {row['torch_ms']:.4f} ms"
              + (f", triton {row['triton_ms']:.4f} ms" if "triton_ms" in row else ""), flush=True)
    return rows


def verdicts(rows: list[dict], hbm_peak: float | None) -> list[str]:
    lines = [f"| kernel | intentc ms | torch ms | triton ms | GB/s | GFLOP/s | speed vs target peer | target | met |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        peer, target = TARGETS.get(row["kernel"], ("torch", None))
        if peer == "of HBM peak":
            speed = row["intentc_GBps"] / hbm_peak if hbm_peak else None
        else:
            peer_ms = row.get(f"{peer}_ms")
            speed = peer_ms / row["intentc_ms"] if peer_ms else None
        met = "" if target is None or speed is None else ("yes" if speed >= target and row["correct"] else "no")
        lines.append(f"| {row['kernel']} | {row['intentc_ms']:.4f} | {row['torch_ms']:.4f} | "
                     f"{row.get('triton_ms', float('nan')):.4f} | {row.get('intentc_GBps', float('nan')):.0f} | "
                     f"{row.get('intentc_GFLOPs', float('nan')):.0f} | "
                     f"{'' if speed is None else f'{speed:.2f} ({peer})'} | {'' if target is None else target} | {met} |")
    return lines


# ---- the emulator (no GPU): the same harness on tiny inputs ------------------------------------------------
def emulated_modules(target: str):
    from cpu_emulation import Emulator
    from intentc.driver import compile_source

    def module_of(sample):
        path = REPO / "samples" / f"{sample}.intent"
        compiled = compile_source(path.read_text(), str(path), target, optimize_ir=False)
        return ptx_loader.Module("", compiled.manifest, Emulator(compiled.llvm_ir, max_blocks=3, max_threads=32))

    return module_of


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    parser.add_argument("--json", type=Path, default=REPO / "benchmarks" / "results" / "gpu_check.json")
    parser.add_argument("--only", nargs="*", default=None, help="time only these rows (samples are still checked)")
    parser.add_argument("--samples", nargs="*", default=None, help="check only these samples")
    parser.add_argument("--skip-samples", action="store_true")
    parser.add_argument("--emulate", action="store_true",
                        help="no GPU: check the samples on the block emulator (tests/gpu), no timings")
    args = parser.parse_args(argv)
    jobs = max(1, (os.cpu_count() or 2) - 1)
    report = {"host": platform.node(), "load": os.getloadavg()}
    if args.emulate:
        rows = check_samples(emulated_modules("sm_80"), "sm_80", jobs, args.samples)
        return 0 if all("failure" not in r for r in rows) else 1
    try:
        backend = ptx_loader.CudaDriver()
    except Exception as exc:  # noqa: BLE001 - no driver, no GPU, no cuda-python
        print(f"gpu_check: skipped, no GPU to run on ({type(exc).__name__}: {exc})")
        return 0
    d = backend.driver
    name = backend._check(d.cuDeviceGetName(64, backend._check(d.cuDeviceGet(0)))).split(b"\0")[0].decode()
    target = device_target(backend.capability)
    peak = next((gbs for key, gbs in HBM_PEAK.items() if key in name), None)
    print(f"device: {name} (sm_{backend.capability[0]}{backend.capability[1]}), PTX target {target}, "
          f"HBM peak {peak or 'unknown'} GB/s", flush=True)
    report.update(device=name, target=target, hbm_peak_GBps=peak)
    started = time.perf_counter()
    if not args.skip_samples:
        print("samples (GPU and CPU builds, samples/checks.py, results compared bit for bit):", flush=True)
        (BUILD / target).mkdir(parents=True, exist_ok=True)
        names = [s.stem for s in sorted((REPO / "samples").glob("*.intent")) if not args.samples or s.stem in args.samples]
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(_build, [(str(REPO / "samples" / f"{s}.intent"), str(BUILD / target / f"{s}.ptx"), target)
                                   for s in names]))
        report["samples"] = check_samples(lambda s: ptx_loader.load(BUILD / target / f"{s}.ptx", backend), target, jobs,
                                          args.samples)
    try:
        import torch  # noqa: F401
    except Exception as exc:  # noqa: BLE001
        print(f"timings skipped: PyTorch is not importable ({exc})")
    else:
        print("timings (PyTorch CUDA tensors, passed to intentc in place):", flush=True)
        report["timings"] = time_kernels(backend, target, args.quick, args.only)
        table = verdicts(report["timings"], peak)
        print("\n".join(table))
        report["table"] = table
    report["seconds"] = round(time.perf_counter() - started, 1)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1, default=str) + "\n")
    print(f"wrote {args.json} ({report['seconds']} s)")
    failed = [r["sample"] for r in report.get("samples", []) if "failure" in r]
    wrong = [r["kernel"] for r in report.get("timings", []) if not r["correct"]]
    if failed or wrong:
        print(f"FAILED: samples {failed}, wrong timed kernels {wrong}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
