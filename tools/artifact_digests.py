"""SHA-256 of every artifact intentc builds from the samples and benchmark kernels.

A guard for refactors that must not change what the compiler emits:

    python tools/artifact_digests.py record   # before the change: writes tools/artifact_digests.json
    python tools/artifact_digests.py check    # after it: exit status 1 and a list of what changed
    python tools/artifact_digests.py check saxpy selective_scan   # only sources whose path has one of these

Each source under samples/ and benchmarks/kernels/ is built, from the repository root with a
relative path (runtime error messages quote the path as given), into .so (with its .h and
intent_runtime.h), .o and .a for x86-64 (``--cpu x86-64-v3``, so the digest does not depend on
this machine's CPU) and AArch64, into .ptx and .ptx.json for sm_90, and into a host object for
each sanitizer. A build that fails is recorded by the digest of its message.

The .so, .o and .a files also hold the C runtime compiled by the system's C compilers, so they
can be compared only where those compilers are the ones that recorded them: the JSON names
them, and ``check`` on another toolchain compares the files the C compilers do not touch
(headers, PTX, manifests) and says what it skipped.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # this checkout's compiler, whatever else is installed
DIGESTS = REPO / "tools" / "artifact_digests.json"
X86 = ("x86_64-linux-gnu", "x86-64-v3")
AARCH64 = ("aarch64-linux-gnu", "native")  # native: the cross target's baseline
SANITIZERS = ("bounds", "order", "unique", "race", "laws")
# Files whose bytes come from intentc alone (no C compiler, no linker).
COMPILER_ONLY = (".h", ".ptx", ".json")


def sources() -> list[str]:
    found = sorted(REPO.glob("samples/*.intent")) + sorted(REPO.glob("benchmarks/kernels/*.intent"))
    return [str(p.relative_to(REPO)) for p in found]


def jobs(only: list[str]) -> list[tuple[str, str, str, str, tuple[str, ...]]]:
    """(source, output suffix, target, cpu, sanitizers) for every build (of the sources whose path
    contains one of ``only``, when given)."""
    out = []
    for src in sources():
        if only and not any(part in src for part in only):
            continue
        for target, cpu in (X86, AARCH64):
            for kind in (".so", ".o", ".a"):
                out.append((src, kind, target, cpu, ()))
        out.append((src, ".ptx", "sm_90", "native", ()))
        for name in SANITIZERS:
            out.append((src, ".o", X86[0], X86[1], (name,)))
    return out


def job_key(src: str, kind: str, target: str, cpu: str, sanitize: tuple[str, ...]) -> str:
    extra = f" sanitize={','.join(sanitize)}" if sanitize else ""
    return f"{src} -> {kind} {target} cpu={cpu}{extra}"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def run_job(job) -> tuple[str, dict[str, str]]:
    src, kind, target, cpu, sanitize = job
    from intentc.diagnostics import CompileError
    from intentc.driver import build

    with tempfile.TemporaryDirectory(prefix="intentc-digest-") as tmp:
        output = Path(tmp) / (Path(src).stem + kind)
        try:
            written = build(src, output, target=target, cpu=cpu, sanitize=sanitize)
        except CompileError as exc:
            return job_key(*job), {"error": _sha(str(exc).encode())}
        return job_key(*job), {p.name: _sha(p.read_bytes()) for p in sorted(written)}


def toolchains() -> dict[str, str]:
    import llvmlite

    found = {"llvmlite": llvmlite.__version__}
    for cc in ("cc", "aarch64-linux-gnu-gcc"):
        try:
            first = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout.splitlines()
            found[cc] = first[0] if first else "unknown"
        except OSError:
            found[cc] = "absent"
    found["INTENTC_CROSS_TOOLCHAIN"] = os.environ.get("INTENTC_CROSS_TOOLCHAIN", "")
    return found


def collect(workers: int, only: list[str]) -> dict[str, dict[str, str]]:
    os.chdir(REPO)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return dict(pool.map(run_job, jobs(only), chunksize=4))


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[1] not in ("record", "check"):
        print(__doc__)
        return 2
    workers = int(os.environ.get("JOBS", os.cpu_count() or 1))
    only = argv[2:]
    if only and argv[1] == "record":
        print("record takes no filter: the baseline covers every source")
        return 2
    digests = collect(workers, only)
    if argv[1] == "record":
        DIGESTS.write_text(json.dumps({"toolchains": toolchains(), "artifacts": digests}, indent=1,
                                      sort_keys=True) + "\n")
        count = sum(len(v) for v in digests.values())
        print(f"recorded {count} digests of {len(digests)} builds in {DIGESTS.relative_to(REPO)}")
        return 0
    recorded = json.loads(DIGESTS.read_text())
    same_toolchain = recorded["toolchains"] == toolchains()
    if not same_toolchain:
        print(f"note: the C toolchains differ from the recorded ones ({recorded['toolchains']}); "
              f"comparing only {', '.join(COMPILER_ONLY)} files")
    changed, compared = [], 0
    expected = {key for key in recorded["artifacts"] if not only or any(part in key.split(" -> ")[0] for part in only)}
    for key in sorted(expected | set(digests)):
        old, new = recorded["artifacts"].get(key, {}), digests.get(key, {})
        for name in sorted(set(old) | set(new)):
            if not same_toolchain and not name.endswith(COMPILER_ONLY):
                continue
            compared += 1
            if old.get(name) != new.get(name):
                changed.append(f"{key}: {name}")
    for line in changed:
        print("changed:", line)
    print(f"{compared - len(changed)} of {compared} digests unchanged")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
