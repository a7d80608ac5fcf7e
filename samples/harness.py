"""The steps shared by samples/demo.py and tests/samples: compile a sample with
the intentc CLI, compile and run its C driver, run its Python check.

Every step runs as a child process from the repository root, so a crash in a
compiled kernel is reported as that step's failure.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples"
DRIVERS = SAMPLES / "c"


@dataclass
class Step:
    ok: bool
    line: str      # the one-line outcome (a PASS/FAIL line, a summary, or an error)
    output: str    # everything the step printed
    seconds: float = 0.0


def sample_sources() -> list[Path]:
    return sorted(SAMPLES.glob("*.intent"))


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of every child: the checkout's intentc importable, plus ``extra``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.update(extra or {})
    return env


def _run(cmd: list, timeout: float, env: dict[str, str] | None = None) -> tuple[int | None, str, float]:
    """Runs ``cmd``; returns its exit status (None when it timed out), its output and its time."""
    start = time.perf_counter()
    try:
        proc = subprocess.run([str(c) for c in cmd], cwd=REPO, env=child_env(env), timeout=timeout,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              errors="replace")
        code, output = proc.returncode, proc.stdout
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        code, output = None, out
    return code, output, time.perf_counter() - start


def _outcome(code: int | None, output: str, failed: str) -> str:
    """The last PASS/FAIL line of the output, else the last line, else how the child ended."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if ln.startswith(("PASS ", "FAIL ")):
            return ln
    last = lines[-1] if lines else "no output"
    if code == 0:
        return last
    if code is None:
        return f"{failed}: timed out"
    if code < 0:
        return f"{failed}: killed by signal {-code}"
    return f"{failed} (exit {code}): {last}"


def library_path(stem: str, out_dir: Path) -> Path:
    return out_dir / f"{stem}.so"


def build_sample(source: Path, out_dir: Path) -> Step:
    """``intentc build SOURCE -o OUT_DIR/STEM.so`` (also writes STEM.h and intent_runtime.h)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    library = library_path(source.stem, out_dir)
    # The path as given lands in the runtime's messages: keep it relative to the checkout.
    cmd = [sys.executable, "-m", "intentc", "build", source.resolve().relative_to(REPO), "-o", library]
    code, output, seconds = _run(cmd, timeout=300)
    ok = code == 0 and library.is_file() and (out_dir / f"{source.stem}.h").is_file()
    if ok:
        line = f"built {library.name} in {seconds:.2f} s"
    elif code == 0:
        line = f"intentc build exited 0 but did not write {library.name} and {source.stem}.h"
    else:
        line = _outcome(code, output, "intentc build failed")
    return Step(ok, line, output, seconds)


def driver_source(stem: str) -> Path:
    return DRIVERS / f"{stem}_driver.c"


def build_driver(stem: str, out_dir: Path) -> Step:
    """``cc -O2 -I OUT_DIR samples/c/STEM_driver.c OUT_DIR/STEM.so -Wl,-rpath,OUT_DIR``."""
    exe = out_dir / f"{stem}_driver"
    cc = os.environ.get("CC", "cc")
    cmd = [cc, "-O2", "-I", out_dir, driver_source(stem).relative_to(REPO),
           library_path(stem, out_dir), f"-Wl,-rpath,{out_dir}", "-o", exe]
    code, output, seconds = _run(cmd, timeout=120)
    line = "compiled" if code == 0 else _outcome(code, output, "driver compile failed")
    return Step(code == 0, line, output, seconds)


def run_driver(stem: str, out_dir: Path, env: dict[str, str] | None = None) -> Step:
    """Runs the compiled driver (``env``: extra variables, e.g. INTENT_NUM_THREADS)."""
    code, output, seconds = _run([out_dir / f"{stem}_driver"], timeout=300, env=env)
    line = _outcome(code, output, "driver failed")
    return Step(code == 0 and line == f"PASS {stem}", line, output, seconds)


def run_check(stem: str, out_dir: Path) -> Step:
    """``python samples/checks.py STEM OUT_DIR/STEM.so``."""
    cmd = [sys.executable, SAMPLES / "checks.py", stem, library_path(stem, out_dir)]
    code, output, seconds = _run(cmd, timeout=300)
    line = _outcome(code, output, "check failed")
    return Step(code == 0, line, output, seconds)
