"""The pass list (``intentc.lower.pipeline.PASSES``) and how ``lower()`` walks it.

- every pass is an entry with a file of its own, with a docstring;
- every KIR pass has a FileCheck test (``tests/kir/pass_<name>.kir``) whose checks fail on
  the test's input as it is, so a pass that does nothing fails its test;
- conditions: each sanitizer's pass runs exactly when the sanitizer is on;
- verification: the physical verifier hook runs after every physical pass when asked
  (``verify_each`` / ``INTENTC_VERIFY_EACH=1``), never otherwise.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
KIR_TESTS = REPO / "tests" / "kir"
for path in (str(REPO), str(KIR_TESTS)):
    if path not in sys.path:
        sys.path.insert(0, path)

import kir_filecheck as filecheck  # noqa: E402
from intentc.driver import frontend  # noqa: E402
from intentc.kir.parser import parse_module  # noqa: E402
from intentc.kir.printer import print_module  # noqa: E402
from intentc.lower import pipeline  # noqa: E402
from intentc.lower.pipeline import KIR, PASSES, Options, lower  # noqa: E402

SOURCE = """import intent as I

@intent.kernel
def scale(x: f32[N], y: f32[N]) -> f32[N]:
    return 2.0 * x + y
"""


def test_names_are_unique_and_files_exist_with_docstrings():
    names = [p.name for p in PASSES]
    assert len(names) == len(set(names))
    for entry in PASSES:
        path = REPO / entry.source
        assert path.is_file(), f"{entry.name}: no {entry.source}"
        assert ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))), f"{entry.source}: no docstring"


def _pass_tests() -> dict[str, Path]:
    tests = {}
    for path in sorted(KIR_TESTS.glob("pass_*.kir")):
        runs = [line.split("RUN:", 1)[1].split() for line in path.read_text(encoding="utf-8").splitlines()
                if line.startswith("// RUN:")]
        for name in runs[0] if runs else []:
            tests.setdefault(name, path)
    return tests


def test_every_kir_pass_has_a_filecheck_test():
    tests = _pass_tests()
    missing = [p.name for p in PASSES if p.stage == KIR and p.name not in tests]
    assert not missing, f"KIR passes without a tests/kir/pass_<name>.kir: {missing}"


@pytest.mark.parametrize("path", sorted(KIR_TESTS.glob("pass_*.kir")), ids=lambda p: p.stem)
def test_pass_tests_fail_when_the_pass_does_nothing(path):
    text = path.read_text(encoding="utf-8")
    with pytest.raises(filecheck.CheckFailure):
        filecheck.check(print_module(parse_module(text)), filecheck.directives(text), name=path.name)


@pytest.mark.parametrize("options, runs, skipped", [
    (Options(), {"prove_bounds"}, {"check_unique", "check_laws", "keep_all_checks", "serialize_points",
                                   "serialize_points_reversed"}),
    (Options(frozenset({"bounds"})), {"keep_all_checks"}, {"prove_bounds"}),
    (Options(frozenset({"unique", "laws"})), {"check_unique", "check_laws", "prove_bounds"}, {"keep_all_checks"}),
    (Options(point_order="increasing"), {"serialize_points"}, {"serialize_points_reversed"}),
    (Options(point_order="decreasing"), {"serialize_points_reversed"}, {"serialize_points"}),
])
def test_conditions(options, runs, skipped):
    running = {p.name for p in PASSES if p.condition.holds(options)}
    assert runs <= running and not skipped & running
    assert {"inline_helpers", "expand_tensor_exprs", "to_physical", "schedule_parallel"} <= running


def test_physical_verifier_runs_after_every_physical_pass(monkeypatch):
    seen = []
    logged = []
    program = lower(frontend(SOURCE, "scale.intent"), verify_each=True, physical_verifier=seen.append,
                    print_after="all", log=lambda name, text: logged.append(name))
    physical = [p.name for p in PASSES if p.stage != KIR and p.condition.holds(Options())]
    assert len(seen) == len(physical) and seen[-1] is program
    assert logged == [p.name for p in PASSES if p.condition.holds(Options())]

    seen.clear()
    monkeypatch.delenv(pipeline.VERIFY_EACH_ENV, raising=False)
    lower(frontend(SOURCE, "scale.intent"), physical_verifier=seen.append)
    assert seen == []
    monkeypatch.setenv(pipeline.VERIFY_EACH_ENV, "1")
    lower(frontend(SOURCE, "scale.intent"), physical_verifier=seen.append)
    assert len(seen) == len(physical)


def test_a_failing_physical_verifier_stops_the_pipeline():
    def reject(program):
        raise AssertionError("malformed")

    with pytest.raises(AssertionError, match="malformed"):
        lower(frontend(SOURCE, "scale.intent"), verify_each=True, physical_verifier=reject)


@pytest.mark.parametrize("args", [["--print-after", "to_physical"], ["--stage", "physical"]])
def test_explain_verify_each_turns_the_physical_verifier_on(tmp_path, monkeypatch, args):
    from click.testing import CliRunner

    from intentc.cli import main

    source = tmp_path / "scale.intent"
    source.write_text(SOURCE, encoding="utf-8")
    monkeypatch.setenv(pipeline.VERIFY_EACH_ENV, "0")  # restored after the test
    seen = []
    monkeypatch.setattr(pipeline, "PHYSICAL_VERIFIER", seen.append)
    result = CliRunner().invoke(main, ["explain", str(source), *args], catch_exceptions=False)
    assert result.exit_code == 0 and seen == []
    result = CliRunner().invoke(main, ["explain", str(source), *args, "--verify-each"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert len(seen) == len([p for p in PASSES if p.stage != KIR and p.condition.holds(Options())])


def test_docs_pass_table_is_the_list():
    text = (REPO / "docs" / "passes.md").read_text(encoding="utf-8")
    assert pipeline.pass_table() in text, "docs/passes.md: regenerate the table with pipeline.pass_table()"


def test_print_after_names_a_pass():
    from intentc.diagnostics import CompileError

    with pytest.raises(CompileError, match="unknown lowering pass 'expand'"):
        lower(frontend(SOURCE, "scale.intent"), print_after="expand", log=lambda name, text: None)
