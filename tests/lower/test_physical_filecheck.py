"""FileCheck tests of the physical passes, matched by the ``filecheck`` package (LLVM FileCheck's
rules: ``CHECK``, ``CHECK-NEXT``, ``CHECK-NOT``, ``CHECK-SAME``, ``CHECK-LABEL``, ``{{regex}}``).

- ``tests/lower/*.phys``: a physical program in its text form (``physical_text``) with one
  ``// RUN: PASS [PASS...]`` line naming physical passes (``serialize_points`` takes
  ``--reverse``); lines starting with ``//`` are not part of the program. The program is
  parsed and verified, the passes run (verifying after each), and the printed result is
  matched against the file's ``// CHECK`` lines.
- ``tests/lower/*.intent``: an Intent source with ``# RUN: to_physical [PASS...]``: the source
  goes through the front end and the KIR passes, then ``to_physical`` and the passes named.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from intentc.driver import frontend
from intentc.lower import pipeline
from intentc.lower.passes import serialize_points, to_physical
from intentc.lower.physical_text import parse_program, print_program
from intentc.lower.physical_verifier import verify_program

HERE = Path(__file__).resolve().parent
FILES = sorted(HERE.glob("*.phys")) + sorted(HERE.glob("*.intent"))
PASSES = dict(pipeline.PHYSICAL_PASSES)
PASSES["serialize_points"] = lambda program: serialize_points.run(program, reverse=False)
PASSES["serialize_points --reverse"] = lambda program: serialize_points.run(program, reverse=True)


def filecheck(check_file: Path, output: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "filecheck", str(check_file)], input=output,
                          capture_output=True, text=True)


def run_line(text: str) -> list[str]:
    runs = [line.split("RUN:", 1)[1].strip() for line in text.splitlines() if "RUN:" in line]
    assert len(runs) == 1 and runs[0], "one RUN line naming the passes"
    names, words = [], runs[0].split()
    for word in words:
        if word.startswith("--"):
            names[-1] += " " + word
        else:
            names.append(word)
    return names


def lower(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    names = run_line(text)
    if path.suffix == ".intent":
        assert names[0] == "to_physical", "an Intent source starts at to_physical"
        module = frontend(text, path.name)
        for entry in pipeline.passes_for(stage=pipeline.KIR):
            module = entry.run(module)
        program = to_physical.run(module)
        names = names[1:]
    else:
        source = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))
        program = parse_program(source)
    verify_program(program)
    for name in names:
        program = PASSES[name](program)
        verify_program(program)
    return print_program(program)


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_pass(path):
    output = lower(path)
    result = filecheck(path, output)
    assert result.returncode == 0, f"{path.name}:\n{result.stdout}{result.stderr}\n--- output ---\n{output}"


def test_every_pass_has_tests():
    """Every pass of the list that makes or changes a physical program is named by a RUN line
    (both point orders of the order sanitizer are ``serialize_points``, with ``--reverse``)."""
    covered = set()
    for path in FILES:
        covered.update(name.split()[0] for name in run_line(path.read_text(encoding="utf-8")))
    wanted = {"serialize_points" if p.name == "serialize_points_reversed" else p.name
              for p in pipeline.PASSES if p.stage != pipeline.KIR}
    assert "expand_lane_chains" in wanted and not sorted(wanted - covered)


def test_a_wrong_check_fails(tmp_path):
    """The harness can fail: the same output against a check it does not satisfy."""
    path = next(p for p in FILES if p.suffix == ".phys")
    output = lower(path)
    wrong = tmp_path / "wrong.phys"
    wrong.write_text("// CHECK: this text is in no physical program\n", encoding="utf-8")
    assert filecheck(wrong, output).returncode != 0
