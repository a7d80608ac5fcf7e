"""CLI conventions (docs/cli.md): usage errors exit 2, unknown pass names are refused with the
list of passes, --emit-llvm and .ll outputs, --color, and the documents that hints name exist
in the package (shipped as package data)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from intentc.cli import main

REPO = Path(__file__).resolve().parents[2]
SAXPY = REPO / "samples" / "saxpy.intent"


def test_bare_intentc_prints_help_and_exits_2():
    proc = subprocess.run([sys.executable, "-m", "intentc"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 2
    assert "Commands:" in proc.stderr and "build" in proc.stderr and proc.stdout == ""


def test_an_unknown_pass_is_a_usage_error_listing_the_passes():
    from intentc.lower.pipeline import PASS_NAMES

    result = CliRunner().invoke(main, ["explain", str(SAXPY), "--print-after", "bogus_pass"])
    assert result.exit_code == 2, result.output
    assert "bogus_pass" in result.output and all(name in result.output for name in PASS_NAMES)
    result = CliRunner().invoke(main, ["explain", str(SAXPY), "--print-after", PASS_NAMES[-1]])
    assert result.exit_code == 0, result.output


def test_emit_llvm_writes_the_optimised_ir(tmp_path):
    result = CliRunner().invoke(main, ["build", str(SAXPY), "-o", str(tmp_path / "saxpy.so"), "--emit-llvm",
                                       "--no-cache", "--cpu", "x86-64-v3"])
    assert result.exit_code == 0, result.output
    ir = (tmp_path / "saxpy.ll").read_text()
    assert re.search(r"define .*@saxpy\(", ir) and "x86_64" in ir
    result = CliRunner().invoke(main, ["explain", str(SAXPY), "--stage", "llvm-opt", "--cpu", "x86-64-v3"])
    assert result.output.strip() == ir.strip(), "--emit-llvm writes what explain --stage llvm-opt shows"
    alone = CliRunner().invoke(main, ["build", str(SAXPY), "-o", str(tmp_path / "only.ll"), "--no-cache",
                                      "--cpu", "x86-64-v3"])
    assert alone.exit_code == 0 and (tmp_path / "only.ll").read_text() == ir
    assert sorted(p.name for p in (tmp_path).iterdir()) == ["intent_runtime.h", "only.ll", "saxpy.h", "saxpy.ll",
                                                           "saxpy.so"]


def test_header_goes_where_asked_and_keeps_its_time_when_unchanged(tmp_path):
    args = ["build", str(SAXPY), "-o", str(tmp_path / "lib" / "libsaxpy.so"), "--header",
            str(tmp_path / "include" / "saxpy.h")]
    assert CliRunner().invoke(main, args).exit_code == 0
    header = tmp_path / "include" / "saxpy.h"
    assert (tmp_path / "include" / "intent_runtime.h").is_file() and not (tmp_path / "lib" / "libsaxpy.h").exists()
    stamp = header.stat().st_mtime_ns
    library = (tmp_path / "lib" / "libsaxpy.so").stat().st_mtime_ns
    result = CliRunner().invoke(main, [*args, "-v"])
    assert result.exit_code == 0 and "saxpy.h" not in result.output, result.output
    assert header.stat().st_mtime_ns == stamp, "an unchanged header must not be rewritten"
    assert (tmp_path / "lib" / "libsaxpy.so").stat().st_mtime_ns >= library


@pytest.mark.parametrize("mode,escapes", [("always", True), ("never", False), ("auto", False)])
def test_color(mode, escapes, tmp_path):
    # CliRunner's stderr is not a terminal: auto means no colour there.
    proc = subprocess.run([sys.executable, "-m", "intentc", "check", str(tmp_path / "missing.intent"),
                           f"--color={mode}"], cwd=REPO, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "TERM": "xterm"})
    assert proc.returncode == 1 and "no such file" in proc.stderr
    assert ("\x1b[" in proc.stderr) == escapes, proc.stderr
    result = CliRunner().invoke(main, ["check", str(SAXPY), "--color=sometimes"])
    assert result.exit_code == 2


def test_documents_named_by_messages_exist_and_are_shipped():
    named = set()
    for path in (REPO / "intentc").rglob("*.py"):
        named |= set(re.findall(r"docs/([a-z0-9_-]+\.md)", path.read_text()))
    assert named, "no document named: the test would prove nothing"
    missing = sorted(name for name in named if not (REPO / "docs" / name).is_file())
    assert not missing, f"messages name documents that do not exist: {missing}"
    setup = (REPO / "setup.py").read_text()
    assert '"docs": ("*.md",)' in setup and "_data/docs/*.md" in (REPO / "pyproject.toml").read_text()
    result = CliRunner().invoke(main, ["--docs-dir"])
    assert result.exit_code == 0 and (Path(result.output.strip()) / "cli.md").is_file()


def test_every_file_the_docs_cite_is_in_the_repository_and_the_spec_is_shipped():
    """The docs cite the language spec (`spec/logical-program.md`) and each other by path: each
    cited path is a file of the repository, and the spec travels with an installed package."""
    cited = set()
    for path in sorted((REPO / "docs").glob("*.md")) + [REPO / "README.md"]:
        cited |= set(re.findall(r"`((?:spec|docs)/[A-Za-z0-9_.-]+\.(?:md|txt))`", path.read_text()))
    assert "spec/logical-program.md" in cited, "the docs no longer cite the spec: the test would prove nothing"
    missing = sorted(name for name in cited if not (REPO / name).is_file() and "NAME" not in name)
    assert not missing, f"the docs cite files that are not in the repository: {missing}"
    assert (REPO / "spec" / "logical-program.zh.txt").is_file()  # the authoritative original beside it
    assert '"spec": ("*.md", "*.txt")' in (REPO / "setup.py").read_text()
    assert "_data/spec/*.md" in (REPO / "pyproject.toml").read_text()


def test_doc_reference_names_the_installed_copy(tmp_path, monkeypatch):
    from intentc import resources

    assert resources.doc_reference("targets.md") == "docs/targets.md"  # a checkout: its docs/ folder
    installed = tmp_path / "_data" / "docs"
    installed.mkdir(parents=True)
    (installed / "targets.md").write_text("# targets\n")
    monkeypatch.setattr(resources, "_PACKAGE", tmp_path)
    assert resources.doc_reference("targets.md") == str(installed / "targets.md")


def test_progress_shows_only_on_a_terminal_and_after_the_delay(monkeypatch):
    import io

    from intentc import cli

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(cli._Progress, "DELAY", 0.05)
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    quiet = cli._Progress()  # not a terminal: no timer, nothing shown
    assert quiet._timer is None
    quiet.stop()
    monkeypatch.setattr(sys, "stderr", Terminal())
    progress = cli._Progress()
    progress.stage("lower")
    assert progress._status is None  # not yet: a fast build shows nothing
    progress._timer.join(5)
    assert progress._status is not None
    progress.stage("link")
    progress.stop()
    assert progress._status is None and progress._timer is None


def test_an_installed_intentc_names_its_installed_documents(tmp_path, monkeypatch):
    from intentc import cli, resources
    from intentc.diagnostics import Diagnostic

    installed = tmp_path / "_data" / "docs"
    installed.mkdir(parents=True)
    for name in ("cli.md", "targets.md"):
        (installed / name).write_text("#\n")
    monkeypatch.setattr(resources, "_PACKAGE", tmp_path)
    [fixed] = cli._with_installed_docs([Diagnostic("bad target", hint="docs/targets.md describes each target",
                                                   notes=("see docs/targets.md and mydocs/targets.md",))])
    assert fixed.hint == f"{installed / 'targets.md'} describes each target"
    assert fixed.notes == (f"see {installed / 'targets.md'} and mydocs/targets.md",)
    monkeypatch.undo()
    plain = Diagnostic("x", hint="docs/targets.md")
    assert cli._with_installed_docs([plain]) == [plain]  # a checkout: as written


def test_color_is_chosen_per_invocation(tmp_path):
    from intentc import cli

    missing = str(tmp_path / "missing.intent")
    CliRunner().invoke(main, ["check", missing, "--color=always"])
    assert cli._color["mode"] == "always"
    CliRunner().invoke(main, ["check", missing])
    assert cli._color["mode"] == "auto", "an earlier --color must not stick"
    CliRunner().invoke(main, ["--color=never", "check", missing])
    assert cli._color["mode"] == "never"
    CliRunner().invoke(main, ["check", missing])
