"""Frontend robustness: mutated sources end in success or a `CompileError`, never in another
exception and never in a hang.

Hypothesis mutates real programs (the samples, the FileCheck programs, the golden
diagnostic cases) by token deletion, duplication, swaps and replacement, insertion of
random text (ASCII, control characters, unicode) or of Intent fragments, truncation, and
indentation changes. Each mutant goes through `intentc.driver.frontend` in process under a
per-example alarm; when it is accepted it also goes through lowering
(`compile_source(..., optimize_ir=False)`), which must also end in success or a
`CompileError`. A few mutants go through the `intentc check` command in a subprocess.
Every diagnostic must render (`render_plain`) with its span inside the source.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from intentc.diagnostics import CompileError  # noqa: E402
from intentc.driver import compile_source, frontend  # noqa: E402

PER_EXAMPLE_SECONDS = 10


def _corpus() -> list[str]:
    paths = sorted(REPO.glob("samples/*.intent")) + sorted((REPO / "tests" / "kir").glob("*.intent")) + \
        sorted((REPO / "tests" / "diagnostics").glob("*.intent"))
    sources = []
    for path in paths:
        # Check lines and comments only make the mutants longer; keep the program.
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if not line.lstrip().startswith("#")]
        sources.append("\n".join(lines) + "\n")
    return sources


CORPUS = _corpus()
TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9][0-9_.]*|\s+|\*\*|//|<<|>>|<=|>=|==|!=|->|.", re.S)
FRAGMENTS = [
    "(", ")", "[", "]", ":", ",", ".", "=", "+", "-", "*", "/", "//", "%", "**", "<<", "&", "~", "@", "#",
    "\\", "\"", "'", "\n", "\t", "\r", "\f", "\x00", "\ufeff", "\u2028", "é", "λ", "∑", "😀",
    "for", "in", "if", "elif", "else", "while", "break", "continue", "return", "pass", "def", "mut", "not",
    "and", "or", "True", "False", "import intent as I", "@intent.kernel", "@intent.fn",
    "0", "-1", "012", "1e999", "0x" + "f" * 40, "9" * 40, "10 ** 10 ** 10", "1 << 100000", "2.5",
    "I.parallel(x.axis(0))", "I.domain(0, N, 0)", "I.domain(0, N, -1)", "x.axis(0)", "x.axis(7)", "x[i]",
    "x[i, i]", "x[0:2]", "x[::2]", "x.shape", "len(x)", "I.sum(x)", "I.cumsum(x)", "I.argmax(x)",
    "I.reshape(x, [2, -1])", "I.transpose(x)", "I.join(x, x)", "I.indices(x.axis(0))", "I.cast(x, i8)",
    "I.where(x > 0.0, x, 0.0)", "I.exp(x)", "enumerate(x.axis(0))", "(1, 2)", "()", "f32", "i8", "index",
    "bool", "f16", "u64", "f32[N]", "f32[4]", "f32[N, M]", "-" * 300 + "x", "(" * 60 + "x" + ")" * 60,
    "\n    ", "\n        ", "\n  ", "\n\t",
]


@st.composite
def mutants(draw) -> str:
    tokens = TOKEN.findall(draw(st.sampled_from(CORPUS)))
    for _ in range(draw(st.integers(1, 4))):
        if not tokens:
            break
        where = draw(st.integers(0, len(tokens) - 1))
        kind = draw(st.sampled_from(["delete", "duplicate", "swap", "replace", "fragment", "text", "truncate",
                                     "indent", "dedent", "line"]))
        if kind == "delete":
            del tokens[where:where + draw(st.integers(1, 3))]
        elif kind == "duplicate":
            tokens[where:where] = tokens[where:where + draw(st.integers(1, 4))]
        elif kind == "swap":
            other = draw(st.integers(0, len(tokens) - 1))
            tokens[where], tokens[other] = tokens[other], tokens[where]
        elif kind == "replace":
            tokens[where] = draw(st.sampled_from(tokens))
        elif kind == "fragment":
            tokens.insert(where, draw(st.sampled_from(FRAGMENTS)))
        elif kind == "text":
            tokens.insert(where, draw(st.text(min_size=1, max_size=6)))
        elif kind == "truncate":
            tokens = tokens[:where]
        elif kind in ("indent", "dedent"):
            # Change the indentation of one line: the whitespace token after a line break.
            breaks = [k for k, t in enumerate(tokens) if t.startswith("\n") or "\n" in t]
            if breaks:
                k = breaks[where % len(breaks)]
                head, _, indent = tokens[k].rpartition("\n")
                width = draw(st.integers(1, 8))
                indent = indent + " " * width if kind == "indent" else indent[:max(0, len(indent) - width)]
                tokens[k] = f"{head}\n{indent}"
        else:  # a whole line duplicated or removed
            text = "".join(tokens)
            lines = text.split("\n")
            k = where % len(lines)
            if draw(st.booleans()):
                lines.insert(k, lines[k])
            else:
                del lines[k]
            tokens = TOKEN.findall("\n".join(lines))
    return "".join(tokens)


class _Hang(Exception):
    pass


def _alarm(signum, frame):
    raise _Hang()


def _check_diagnostics(exc: CompileError, source: str) -> None:
    assert exc.diagnostics, "a CompileError without diagnostics"
    for diag in exc.diagnostics:
        text = diag.render_plain()
        assert diag.message and text
        if diag.span is not None:
            assert 0 <= diag.span.start <= diag.span.end <= len(diag.span.source.text) + 1, (diag.span, text)


def _compile_in_process(source: str) -> str:
    """'ok', 'diagnostic' or 'lowering-diagnostic'; anything else fails the example."""
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(PER_EXAMPLE_SECONDS)
    stage = "frontend"
    try:
        try:
            frontend(source, "mutant.intent")
            stage = "lowering"
            compile_source(source, "mutant.intent", optimize_ir=False)
            return "ok"
        except CompileError as exc:
            _check_diagnostics(exc, source)
            return "diagnostic" if stage == "frontend" else "lowering-diagnostic"
        except _Hang:
            pytest.fail(f"the {stage} took more than {PER_EXAMPLE_SECONDS} s on:\n{source}")
        except Exception as exc:  # noqa: BLE001 - this is what the test looks for
            raise AssertionError(f"the {stage} raised {type(exc).__name__}: {exc}\non:\n{source}") from exc
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


OUTCOMES: dict[str, int] = {}


@settings(max_examples=2000, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(mutants())
def test_mutated_sources_end_in_success_or_a_diagnostic(source):
    outcome = _compile_in_process(source)
    OUTCOMES[outcome] = OUTCOMES.get(outcome, 0) + 1


def test_the_mutants_reach_both_outcomes():
    """The corpus and mutations are not all rejected at once: some mutants compile."""
    if not OUTCOMES:  # run alone (or in another worker): run the mutants here
        test_mutated_sources_end_in_success_or_a_diagnostic()
    assert OUTCOMES.get("diagnostic", 0) > 0 and OUTCOMES.get("ok", 0) > 0, OUTCOMES


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["NO_COLOR"] = "1"
    return env


@settings(max_examples=8, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(mutants())
def test_cli_check_on_mutants(tmp_path, source):
    path = tmp_path / "mutant.intent"
    path.write_bytes(source.encode("utf-8", "surrogatepass"))
    proc = subprocess.run([sys.executable, "-m", "intentc", "check", str(path)], env=_env(), capture_output=True,
                          timeout=60)
    stderr = proc.stderr.decode("utf-8", "replace")
    assert "Traceback" not in stderr, stderr
    assert proc.returncode in (0, 1), f"exit {proc.returncode}\n{stderr}"
    assert (proc.returncode == 0) == (not stderr.strip()), stderr


@pytest.mark.parametrize("data", [b"\xff\xfe not utf-8", b"import intent as I\n\x00\x00", b"", b"\n\n\n",
                                  "import intent as I\n@intent.kernel\ndef k(x: f32[N]):\n\tpass\n".encode()])
def test_cli_check_on_odd_bytes(tmp_path, data):
    path = tmp_path / "odd.intent"
    path.write_bytes(data)
    proc = subprocess.run([sys.executable, "-m", "intentc", "check", str(path)], env=_env(), capture_output=True,
                          timeout=60)
    assert b"Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 1)
