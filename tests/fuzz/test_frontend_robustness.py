"""Front-end robustness: hostile sources end in success or located diagnostics, never in
another exception and never in a hang.

The sources come from ``hostile.py`` (mutated samples and grammar-aware garbage:
truncations, byte flips, deep nesting, long lines, odd literals, odd whitespace,
unicode), 2,000 cases per run in four shards, deterministic (case ``i`` is the same in
every run and process). ``INTENTC_FUZZ_CASES=20000`` runs more (see docs/testing.md).

Each case runs in process: bytes through the source decoder, text through
``intentc.driver.frontend``; every eighth accepted source (every one with
``INTENTC_FUZZ_LOWER_EVERY=1``) also through lowering and LLVM IR emission
(``compile_source(..., optimize_ir=False)``). Verdicts:

- any exception other than ``CompileError`` fails the case (with its traceback);
- every diagnostic renders, names a line and column inside the source, shows a source
  line with no control characters and a caret line of blanks and carets;
- a case that takes more than ``HANG_CPU_SECONDS`` of *CPU time* is a hang. The bound is
  measured with a profiling timer (``ITIMER_PROF`` counts this process's CPU time only),
  so a busy machine, which stretches wall-clock time, cannot make a slow but finite case
  look hung; it is far above the slowest case measured (well under a second).

A few cases also go through the ``intentc check`` command in a subprocess.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
for folder in (str(REPO), str(HERE)):
    if folder not in sys.path:
        sys.path.insert(0, folder)

import hostile  # noqa: E402

from intentc.diagnostics import CompileError  # noqa: E402
from intentc.driver import compile_source, frontend  # noqa: E402
from intentc.parse.reader import decode_source  # noqa: E402

CASES = int(os.environ.get("INTENTC_FUZZ_CASES", "2000"))
LOWER_EVERY = int(os.environ.get("INTENTC_FUZZ_LOWER_EVERY", "8"))
SHARDS = 4
HANG_CPU_SECONDS = 60
PATH = "hostile.intent"


class _Hang(BaseException):
    """Raised by the CPU-time timer; a BaseException so that no ``except Exception`` swallows it."""


def _on_timer(signum, frame):
    raise _Hang()


def _diagnostic_problems(exc: CompileError) -> list[str]:
    problems = []
    if not exc.diagnostics:
        problems.append("a CompileError without diagnostics")
    for diag in exc.diagnostics:
        text = diag.render_plain()
        if not diag.message:
            problems.append(f"an empty message: {text!r}")
        if any(not (c.isprintable() or c == "\n") for c in text):
            problems.append(f"the rendering holds control characters: {text!r}")
        if diag.span is None:
            problems.append(f"no line:col: {text!r}")
            continue
        if not 0 <= diag.span.start <= diag.span.end <= len(diag.span.source.text) + 1:
            problems.append(f"the span {diag.span.start}..{diag.span.end} is outside the source: {text!r}")
        caret = text.splitlines()[2] if len(text.splitlines()) > 2 else ""
        if not caret.strip() or set(caret) - {" ", "^"}:
            problems.append(f"no caret line: {text!r}")
    return problems


def run_case(case: hostile.Case, lower: bool) -> tuple[str, float, str]:
    """(outcome, CPU seconds, details): outcome 'ok', 'diagnostic', 'bad-diagnostic', 'hang' or 'traceback'."""
    previous = signal.signal(signal.SIGPROF, _on_timer)
    start = time.process_time()
    signal.setitimer(signal.ITIMER_PROF, HANG_CPU_SECONDS)
    stage = "decoding"
    try:
        text = case.text if case.data is None else decode_source(case.data, PATH)
        stage = "front end"
        frontend(text, PATH)
        if lower:
            stage = "lowering"
            compile_source(text, PATH, optimize_ir=False)
        outcome, details = "ok", ""
    except CompileError as exc:
        problems = _diagnostic_problems(exc)
        outcome, details = ("bad-diagnostic", f"{stage}: " + "; ".join(problems)) if problems else ("diagnostic", "")
    except _Hang:
        outcome, details = "hang", f"{stage}: more than {HANG_CPU_SECONDS} s of CPU time"
    except Exception:  # noqa: BLE001 - this is what the test looks for
        outcome, details = "traceback", f"{stage}:\n{traceback.format_exc(limit=-8)}"
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)
    return outcome, time.process_time() - start, details


@pytest.mark.parametrize("shard", range(SHARDS))
def test_hostile_sources_end_in_success_or_located_diagnostics(shard):
    counts: dict[str, int] = {}
    kinds: dict[str, int] = {}
    failures, slowest, accepted = [], (0.0, -1), 0
    for index in range(shard, CASES, SHARDS):
        case = hostile.case(index)
        kinds[case.kind] = kinds.get(case.kind, 0) + 1
        # Which accepted sources go on to lowering is decided before running (a pure function
        # of the index), so the work is the same in every run.
        outcome, cpu, details = run_case(case, lower=index % LOWER_EVERY == 0)
        counts[outcome] = counts.get(outcome, 0) + 1
        slowest = max(slowest, (cpu, index))
        if outcome in ("ok", "diagnostic"):
            accepted += outcome == "ok"
            continue
        failures.append(f"{case.describe()}\n  -> {outcome}: {details}")
    summary = (f"shard {shard}: {sum(counts.values())} cases, outcomes {dict(sorted(counts.items()))}, "
               f"kinds {dict(sorted(kinds.items()))}, slowest case {slowest[1]} ({slowest[0]:.2f} s CPU)")
    print(summary)
    assert not failures, f"{len(failures)} failing cases ({summary}):\n" + "\n".join(failures[:8])
    # The generator is not degenerate: both outcomes occur and every kind was drawn.
    assert counts.get("ok", 0) > 0 and counts.get("diagnostic", 0) > 0, summary
    if CASES >= 400:
        assert set(kinds) == set(hostile.KINDS), summary


def test_cases_are_deterministic():
    """Case i is a pure function of i (no dependence on the process or on earlier cases)."""
    assert [hostile.case(i) for i in (0, 17, 999)] == [hostile.case(i) for i in (999, 17, 0)][::-1]
    code = "import hostile, sys; c = hostile.case(17); sys.stdout.write(repr(c.text if c.data is None else c.data))"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), str(REPO)]), PYTHONHASHSEED="123")
    other = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=True)
    case = hostile.case(17)
    assert other.stdout == repr(case.text if case.data is None else case.data)


def test_hang_detection_counts_cpu_time_not_waiting():
    """A case that waits (as a busy machine makes a case wait) is not a hang; one that spins is."""
    import intentc.parse.modules as parse_package  # the front end parses every module through it

    slow = hostile.Case(-1, "mutant", text="import intent as I\n")

    real = parse_package.parse_source

    def waiting(text, path):
        time.sleep(1.5)  # wall-clock time only
        return real(text, path)

    parse_package.parse_source = waiting
    global HANG_CPU_SECONDS
    bound, HANG_CPU_SECONDS = HANG_CPU_SECONDS, 1
    try:
        assert run_case(slow, lower=False)[0] == "diagnostic"  # no kernel: a diagnostic, after the wait

        def spinning(text, path):
            while True:
                pass

        parse_package.parse_source = spinning
        assert run_case(slow, lower=False)[0] == "hang"
    finally:
        parse_package.parse_source = real
        HANG_CPU_SECONDS = bound


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["NO_COLOR"] = "1"
    return env


# One case of each kind whose in-process outcome is a diagnostic, found once by index.
CLI_CASES = [3, 5, 8, 11]


@pytest.mark.parametrize("index", CLI_CASES)
def test_cli_check_on_hostile_sources(tmp_path, index):
    case = hostile.case(index)
    path = tmp_path / "hostile.intent"
    path.write_bytes(case.data if case.data is not None else case.text.encode("utf-8", "surrogatepass"))
    proc = subprocess.run([sys.executable, "-m", "intentc", "check", str(path)], env=_env(), capture_output=True,
                          timeout=120)
    stderr = proc.stderr.decode("utf-8", "replace")
    assert "Traceback" not in stderr and "internal error" not in stderr, f"{case.describe()}\n{stderr}"
    assert proc.returncode in (0, 1), f"exit {proc.returncode}\n{stderr}"
    assert (proc.returncode == 0) == (not stderr.strip()), stderr
    if proc.returncode == 1:
        assert "hostile.intent:" in stderr and "^" in stderr, stderr  # located, with a caret
