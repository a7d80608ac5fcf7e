"""FileCheck-style tests.

- `tests/kir/*.intent`: each `# RUN: ARGS --check-prefix P` line runs `intentc explain FILE
  ARGS` (the click command, in process) and matches its output against the file's `# P:` /
  `# P-NOT:` / `# P-NEXT:` / `# P-SAME:` / `# P-LABEL:` lines;
- `tests/kir/*.kir`: KIR text; `// RUN: PASS...` names KIR lowering passes. The text is
  parsed and verified, the passes run (verifying after each), and the printed result is
  matched against the `// CHECK...` lines.

The matcher is the small one in `kir_filecheck.py`.
"""
from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
for path in (str(REPO), str(HERE)):
    if path not in sys.path:
        sys.path.insert(0, path)

from click.testing import CliRunner  # noqa: E402

import kir_filecheck as filecheck  # noqa: E402
from intentc.cli import main  # noqa: E402
from intentc.kir.parser import parse_module  # noqa: E402
from intentc.kir.printer import print_module  # noqa: E402
from intentc.kir.verifier import verify_module  # noqa: E402
from intentc.lower.pipeline import KIR_PASSES  # noqa: E402


def _runs(path: Path) -> list[tuple[list[str], str]]:
    runs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip("# ").startswith("RUN:"):
            args = shlex.split(line.split("RUN:", 1)[1])
            prefix = "CHECK"
            if "--check-prefix" in args:
                k = args.index("--check-prefix")
                prefix = args[k + 1]
                del args[k:k + 2]
            runs.append((args, prefix))
    return runs


CASES = [pytest.param(path, args, prefix, id=f"{path.stem}-{prefix}")
         for path in sorted(HERE.glob("*.intent")) for args, prefix in _runs(path)]


def explain(path: Path, args: list[str]) -> str:
    result = CliRunner().invoke(main, ["explain", str(path), *args], catch_exceptions=False)
    out = getattr(result, "stdout", result.output)
    assert result.exit_code == 0, f"intentc explain {path.name} {' '.join(args)} exited {result.exit_code}:\n" \
                                  f"{result.output}"
    return out


def test_every_file_has_runs_and_checks():
    files = sorted(HERE.glob("*.intent"))
    assert len(files) >= 6
    for path in files:
        runs = _runs(path)
        assert runs, f"{path.name} has no RUN line"
        text = path.read_text(encoding="utf-8")
        for _, prefix in runs:
            positive = [d for d in filecheck.directives(text, prefix) if d.kind != "NOT"]
            assert positive, f"{path.name}: no positive {prefix} line"


@pytest.mark.parametrize("path, args, prefix", CASES)
def test_filecheck(path, args, prefix):
    output = explain(path, args)
    checks = filecheck.directives(path.read_text(encoding="utf-8"), prefix)
    filecheck.check(output, checks, name=f"{path.name} [{prefix}]")


KIR_FILES = sorted(HERE.glob("*.kir"))


@pytest.mark.parametrize("path", KIR_FILES, ids=[p.stem for p in KIR_FILES])
def test_kir_pass(path):
    text = path.read_text(encoding="utf-8")
    runs = [line.split("RUN:", 1)[1].split() for line in text.splitlines() if line.startswith("// RUN:")]
    assert len(runs) == 1 and runs[0], f"{path.name}: one `// RUN: PASS...` line"
    passes = dict(KIR_PASSES)
    module = parse_module(text)
    verify_module(module)
    for name in runs[0]:
        module = passes[name](module)
        verify_module(module)
    filecheck.check(print_module(module), filecheck.directives(text), name=path.name)


def test_every_kir_pass_has_a_test():
    """Each KIR -> KIR pass of the pipeline's list is named by some file's RUN line."""
    covered = set()
    for path in KIR_FILES:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("// RUN:"):
                covered.update(line.split("RUN:", 1)[1].split())
    assert not sorted({name for name, _ in KIR_PASSES} - covered)


# ---- the matcher itself: it must be able to fail ---------------------------------------
OUTPUT = """kernel @k(%x) {
  %a = load(%x, %i)
  %b = mul(%a, %a)
  store(%out, %i, %b)
  return()
}"""


def _check(lines: str) -> None:
    filecheck.check(OUTPUT, filecheck.directives(lines), "t")


@pytest.mark.parametrize("lines", [
    "# CHECK: load(\n# CHECK: store(",
    "# CHECK-LABEL: kernel @k\n# CHECK-NEXT: load(%x,\n# CHECK-SAME: %{{[a-z]}})\n# CHECK-NEXT: mul(",
    "# CHECK: load(\n# CHECK-NOT: add(\n# CHECK: store(\n# CHECK-NOT: load(",
    "# CHECK-NOT: broadcast(\n# CHECK: return()",
])
def test_matcher_accepts(lines):
    _check(lines)


@pytest.mark.parametrize("lines", [
    "# CHECK: store(\n# CHECK: load(",  # order matters
    "# CHECK: add(",  # absent
    "# CHECK: load(\n# CHECK-NEXT: store(",  # not the next line
    "# CHECK: load(\n# CHECK-NOT: mul(\n# CHECK: store(",  # forbidden between matches
    "# CHECK: store(\n# CHECK-NOT: return",  # forbidden after the last match
    "# CHECK-NOT: load(\n# CHECK: mul(",  # forbidden before the first match
    "# CHECK: load(%x, %{{[0-9]+}})",  # the regex part must match
    "# CHECK: load(\n# CHECK-SAME: mul",  # not on the same line
    "",  # no directives at all
])
def test_matcher_rejects(lines):
    with pytest.raises(filecheck.CheckFailure):
        _check(lines)
