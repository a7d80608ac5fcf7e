"""Real workloads side by side: llm.c's CPU kernels and PolyBench/C, intentc against C
(serial and OpenMP, -O3 -march=native; llm.c's -Ofast -fopenmp build too) and NumPy.

    python benchmarks/realworld.py [--quick] [--threads 1,2] [--only NAME] [--budget S]

Each kernel's results are first checked against its C loop (serial -O3), then the
contenders are timed in alternating rounds (one call of each per round, the order
rotated each round, inputs restored outside the timed region), per thread count.
Tables show medians; ``ratio`` is intentc's median over the best peer's at the same
thread count (the serial C counts at every thread count). Figures go to
benchmarks/results/realworld.json and realworld.md (``--out DIR`` elsewhere).
"""
from __future__ import annotations

import os

# OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE slow current OpenBLAS builds down (bench/TARGETS.md):
# the BLAS peer runs without them; they are dropped before NumPy loads.
for _var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
    os.environ.pop(_var, None)

import argparse  # noqa: E402
import ctypes  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO))

from realworld_support import Kernel, compare  # noqa: E402
import llmc.cases  # noqa: E402
import polybench.cases  # noqa: E402

KERNELS: tuple[Kernel, ...] = llmc.cases.KERNELS + polybench.cases.KERNELS
C_BUILDS = {  # label -> gcc flags
    "C -O3 serial": ("-O3", "-march=native"),
    "C -O3 OpenMP": ("-O3", "-march=native", "-fopenmp"),
    "C -Ofast OpenMP": ("-Ofast", "-march=native", "-fopenmp"),
}
REFERENCE = "C -O3 serial"
SETTLE_S = 0.02  # idle time before each timed call: the last tool's spinning threads go to sleep


class Unavailable(Exception):
    """A contender that cannot run here (a build failed, a library is missing)."""


# ------------------------------------------------------------------------------ builds

class Builds:
    """intentc libraries and C libraries of the suite, built once into ``directory``."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.seconds: dict[str, float] = {}
        self._cache: dict[tuple, object] = {}
        self._locks: dict[tuple, object] = {}
        self._lock = threading.Lock()

    def prebuild(self, kernels, workers: int) -> None:
        """Builds every library the kernels need, ``workers`` compilers at a time, so that the
        timed part of the run does not wait for them (failures are reported when used)."""
        from concurrent.futures import ThreadPoolExecutor

        jobs = []
        for kernel in kernels:
            jobs.append(("intentc", kernel.intent_source, None))
            labels = [REFERENCE] + (["C -O3 OpenMP"] if kernel.c_parallel else []) + \
                (["C -Ofast OpenMP"] if kernel.ofast else [])
            jobs += [("c", kernel.c_source, label) for label in labels]

        def run(job):
            kind, source, label = job
            try:
                self.intentc(source) if kind == "intentc" else self.c(source, label)
            except Unavailable:
                pass  # raised again where the contender is made

        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            list(pool.map(run, dict.fromkeys(jobs)))

    def intentc(self, source: str):
        return self._once(("intentc", source), lambda: self._build_intentc(source))

    def _once(self, key, make):
        with self._lock:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:  # one build per key, even when two threads ask for it
            if key not in self._cache:
                try:
                    self._cache[key] = make()
                except Unavailable as e:
                    self._cache[key] = e
        value = self._cache[key]
        if isinstance(value, Unavailable):
            raise value
        return value

    def _build_intentc(self, source: str):
        self.directory.mkdir(parents=True, exist_ok=True)
        library = self.directory / (source.replace("/", "_").removesuffix(".intent") + ".so")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "intentc", "build", str(BENCH / source), "-o", str(library)],
                              cwd=REPO, env=env, capture_output=True, text=True)
        self.seconds[source] = round(time.perf_counter() - start, 3)
        if proc.returncode != 0:
            raise Unavailable(f"intentc build of {source} failed:\n{proc.stderr or proc.stdout}")
        import intentc
        return intentc.load(str(library))

    def c(self, source: str, label: str):
        return self._once(("c", source, label), lambda: self._build_c(source, label))

    def _build_c(self, source: str, label: str):
        self.directory.mkdir(parents=True, exist_ok=True)
        tag = label.split()[1].lstrip("-") + ("_omp" if "OpenMP" in label else "")
        library = self.directory / f"{source.replace('/', '_').removesuffix('.c')}_{tag}.so"
        proc = subprocess.run(["gcc", *C_BUILDS[label], "-shared", "-fPIC", str(BENCH / source),
                               "-o", str(library), "-lm"], capture_output=True, text=True)
        if proc.returncode != 0:
            raise Unavailable(f"gcc {label} of {source} failed:\n{proc.stderr}")
        return ctypes.CDLL(str(library))


def _openblas_threads():
    """NumPy's OpenBLAS thread setter, or None when it is not found."""
    for line in open("/proc/self/maps"):
        path = line.split()[-1]
        if "openblas" in path and path.endswith(".so") or ".so." in path and "openblas" in path:
            lib = ctypes.CDLL(path)
            for name in ("scipy_openblas_set_num_threads64_", "openblas_set_num_threads64_",
                         "openblas_set_num_threads"):
                if hasattr(lib, name):
                    return getattr(lib, name)
    return None


# ---------------------------------------------------------------------------- contenders

@dataclass
class Contender:
    label: str
    call: object              # (arrays) -> None
    set_threads: object       # (n) -> None
    threaded: bool            # its time depends on the thread count
    arrays: dict = field(default_factory=dict)
    times: dict = field(default_factory=dict)  # threads -> [seconds]
    error: str | None = None


def contenders_of(kernel: Kernel, builds: Builds, dims: dict, pristine: dict, blas_threads) -> list[Contender]:
    found, missing = [], {}

    def own_arrays():
        return {name: (array.copy() if name in kernel.mutated else array) for name, array in pristine.items()}

    def add(label, make, set_threads, threaded):
        try:
            call = make()
        except Unavailable as e:
            missing[label] = str(e)
            return
        found.append(Contender(label, call, set_threads, threaded, own_arrays()))

    def intentc_call():
        module = builds.intentc(kernel.intent_source)
        fn = getattr(module, kernel.intent_symbol)
        return lambda a: kernel.intent_call(fn, a, dims)

    module_threads = lambda n: builds.intentc(kernel.intent_source).set_num_threads(n)  # noqa: E731
    add("intentc", intentc_call, module_threads, True)
    labels = [REFERENCE] + (["C -O3 OpenMP"] if kernel.c_parallel else []) + (["C -Ofast OpenMP"] if kernel.ofast else [])
    for label in labels:
        def c_call(label=label):
            lib = builds.c(kernel.c_source, label)
            fn = getattr(lib, kernel.c_symbol)
            return lambda a: kernel.c_call(fn, a, dims)

        def c_threads(n, label=label):
            builds.c(kernel.c_source, label).realworld_set_threads(ctypes.c_int(n))
        add(label, c_call, c_threads, "OpenMP" in label)
    if kernel.numpy_call is not None:
        add(kernel.numpy_label, lambda: (lambda a: kernel.numpy_call(a, dims)),
            lambda n: blas_threads(n) if blas_threads else None, True)
    return found, missing


def reset(kernel: Kernel, contender: Contender, pristine: dict) -> None:
    for name in kernel.mutated:
        np.copyto(contender.arrays[name], pristine[name])


def timed_call(kernel, contender, pristine, threads) -> float:
    contender.set_threads(threads)
    reset(kernel, contender, pristine)
    time.sleep(SETTLE_S)
    start = time.perf_counter()
    contender.call(contender.arrays)
    return time.perf_counter() - start


# -------------------------------------------------------------------------------- runs

def run_dataset(kernel, dataset, builds, threads_list, budget_s, blas_threads, log):
    dims = dataset.dims
    row_start = time.perf_counter()
    pristine = kernel.setup(dims, np.random.default_rng(12345))
    contenders, missing = contenders_of(kernel, builds, dims, pristine, blas_threads)
    row = dict(kernel=kernel.name, dataset=dataset.label, dims=dims, unavailable=missing,
               tolerance=dict(rtol=kernel.rtol, atol=kernel.atol, why=kernel.tolerance),
               loadavg_before=os.getloadavg(), contenders={}, ratios={})
    reference = next((c for c in contenders if c.label == REFERENCE), None)
    if reference is None:
        row["error"] = f"no C reference: {missing.get(REFERENCE)}"
        return row
    warm = {}
    first = threads_list[0]
    warm[REFERENCE] = timed_call(kernel, reference, pristine, first)
    want = {name: reference.arrays[name].copy() for name in kernel.results}
    for c in contenders:
        if c is reference:
            continue
        try:
            warm[c.label] = timed_call(kernel, c, pristine, first)
        except Exception as e:  # noqa: BLE001 - reported in the table
            c.error = f"{type(e).__name__}: {e}"
            continue
        for name in kernel.results:
            problem = compare(name, c.arrays[name], want[name], kernel.rtol, kernel.atol)
            if problem:
                c.error = problem
                break
    live = [c for c in contenders if c.error is None]
    for threads in threads_list:
        group = [c for c in live if c.threaded or threads == first]
        reps = {c.label: max(1, min(15, int(budget_s / len(group) / max(warm[c.label], 1e-4)))) for c in group}
        reps = {label: (n if warm[label] > budget_s / 3 else max(n, 3)) for label, n in reps.items()}
        for r in range(max(reps.values())):
            order = group[r % len(group):] + group[:r % len(group)]
            for c in order:
                if r < reps[c.label]:
                    c.times.setdefault(threads, []).append(timed_call(kernel, c, pristine, threads))
    row["loadavg_after"] = os.getloadavg()
    row["seconds"] = round(time.perf_counter() - row_start, 2)
    work = (kernel.flops(dims) if kernel.flops else None, kernel.bytes(dims) if kernel.bytes else None)
    for c in contenders:
        entry = dict(threaded=c.threaded, error=c.error, warmup_s=warm.get(c.label), medians={}, minima={}, calls={})
        for threads, samples in c.times.items():
            entry["medians"][threads] = statistics.median(samples)
            entry["minima"][threads] = min(samples)
            entry["calls"][threads] = len(samples)
        row["contenders"][c.label] = entry
    for threads in threads_list:
        mine = row["contenders"].get("intentc", {}).get("medians", {}).get(threads)
        peers = {label: e["medians"].get(threads, e["medians"].get(first) if not e["threaded"] else None)
                 for label, e in row["contenders"].items() if label != "intentc" and e["error"] is None}
        peers = {k: v for k, v in peers.items() if v}
        if mine and peers:
            best = min(peers, key=peers.get)
            row["ratios"][threads] = dict(best_peer=best, ratio=mine / peers[best],
                                          gflops=work[0] / mine / 1e9 if work[0] else None,
                                          gbs=work[1] / mine / 1e9 if work[1] else None)
    log(row)
    return row


def format_row(row) -> list[str]:
    took = f", {row['seconds']} s, load average {row['loadavg_before'][0]:.2f}" if "seconds" in row else ""
    lines = [f"### {row['kernel']} ({row['dataset']}{took})", ""]
    if "error" in row:
        return lines + [f"error: {row['error']}", ""]
    threads = sorted({t for e in row["contenders"].values() for t in e["medians"]})
    lines.append("| contender | " + " | ".join(f"{t} thr median ms (calls)" for t in threads) + " |")
    lines.append("|---|" + "---|" * len(threads))
    for label, e in row["contenders"].items():
        if e["error"]:
            lines.append(f"| {label} | wrong or failed: {e['error']} |")
            continue
        cells = [f"{e['medians'][t] * 1e3:.3f} ({e['calls'][t]})" if t in e["medians"] else "(serial)" for t in threads]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    for label, why in row["unavailable"].items():
        lines.append(f"| {label} | unavailable: {why.splitlines()[0]} |")
    lines.append("")
    return lines


def summary_table(rows) -> list[str]:
    threads = sorted({t for row in rows for t in row.get("ratios", {})})
    head = "| kernel | dataset | " + " | ".join(f"{t} thr: intentc / best peer" for t in threads) + " | rate (intentc, most threads) |"
    lines = [head, "|---|---|" + "---|" * (len(threads) + 1)]
    for row in rows:
        ratios = row.get("ratios", {})
        cells = []
        for t in threads:
            r = ratios.get(t)
            cells.append(f"{r['ratio']:.2f}× {r['best_peer']}" if r else "—")
        rate = ""
        if ratios:
            r = ratios[max(ratios)]
            rate = f"{r['gflops']:.1f} GFLOP/s" if r["gflops"] else (f"{r['gbs']:.1f} GB/s" if r["gbs"] else "")
        wrong = [label for label, e in row.get("contenders", {}).items() if e["error"]]
        note = f" (wrong: {', '.join(wrong)})" if wrong else ""
        lines.append(f"| {row['kernel']} | {row['dataset']} | " + " | ".join(cells) + f" | {rate}{note} |")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small datasets and a short budget (about 2 minutes)")
    parser.add_argument("--threads", default=None, help="thread counts to time, e.g. 1,2 (default: 1 and all cores)")
    parser.add_argument("--only", action="append", default=[], help="kernels whose name contains NAME (repeatable)")
    parser.add_argument("--budget", type=float, default=None, help="seconds of timed calls per dataset and thread count")
    parser.add_argument("--out", type=Path, default=BENCH / "results", help="folder of realworld.json and realworld.md")
    args = parser.parse_args(argv)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    threads_list = [int(t) for t in args.threads.split(",")] if args.threads else sorted({1, cores})
    budget = args.budget if args.budget is not None else (0.6 if args.quick else 4.0)
    kernels = [k for k in KERNELS if not args.only or any(s in k.name for s in args.only)]
    if not kernels:
        print(f"no kernel matches {args.only}; kernels: {', '.join(k.name for k in KERNELS)}", file=sys.stderr)
        return 2
    builds = Builds(BENCH / "build" / "realworld")
    blas_threads = _openblas_threads()
    started = time.perf_counter()
    builds.prebuild(kernels, cores)
    rows = []

    def log(row):
        print("\n".join(format_row(row)), flush=True)

    load_start = os.getloadavg()
    print(f"load average at start: {load_start[0]:.2f} {load_start[1]:.2f} {load_start[2]:.2f}; threads {threads_list}")
    for kernel in kernels:
        for dataset in (kernel.quick if args.quick else kernel.full):
            try:
                rows.append(run_dataset(kernel, dataset, builds, threads_list, budget, blas_threads, log))
            except Unavailable as e:
                rows.append(dict(kernel=kernel.name, dataset=dataset.label, error=str(e)))
                log(rows[-1])
    elapsed = time.perf_counter() - started
    load_end = os.getloadavg()
    summary = summary_table(rows)
    print("\n".join(summary))
    print(f"{elapsed:.0f} s; load average at start {load_start[0]:.2f}, at end {load_end[0]:.2f}")
    args.out.mkdir(parents=True, exist_ok=True)
    meta = dict(date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                machine=platform.machine(), processor=_cpu_name(), cores=cores, threads=threads_list,
                quick=args.quick, budget_s=budget, seconds=round(elapsed, 1), numpy=np.__version__,
                gcc=_gcc_version(), loadavg_start=load_start, loadavg_end=load_end,
                intentc_build_s=builds.seconds)
    (args.out / "realworld.json").write_text(json.dumps(dict(meta=meta, rows=rows), indent=1, default=str) + "\n")
    md = [f"# Real workloads ({'--quick' if args.quick else 'full'} run)", "",
          f"{meta['date']}, {meta['processor']}, {cores} cores, threads {threads_list}, "
          f"load average {load_start[0]:.2f} at start and {load_end[0]:.2f} at end, {elapsed:.0f} s, "
          f"NumPy {np.__version__}, {meta['gcc']}.", "",
          "Ratio: intentc's median time over the best peer's at the same thread count (below 1: intentc is faster).",
          "", *summary, "", "## Per kernel", ""]
    for row in rows:
        md += format_row(row)
    (args.out / "realworld.md").write_text("\n".join(md) + "\n")
    wrong = any(row.get("contenders", {}).get("intentc", {}).get("error") or "error" in row for row in rows)
    return 1 if wrong else 0


def _cpu_name() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _gcc_version() -> str:
    try:
        return subprocess.run(["gcc", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    except (OSError, IndexError):
        return "gcc ?"


if __name__ == "__main__":
    sys.exit(main())
