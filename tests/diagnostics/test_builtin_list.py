"""The "unknown builtin" hint lists exactly the builtins that exist.

A name is a builtin when calling it does not produce "unknown builtin" (any other
diagnostic, e.g. about its arguments, is fine). Candidates come from the hint itself and
from every `I.name(` that docs/language.md mentions, so a builtin added to the compiler
and documented but missing from the hint fails here.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from intentc.diagnostics import CompileError  # noqa: E402
from intentc.driver import frontend  # noqa: E402

PROGRAM = """import intent as I

@intent.kernel
def k(x: f32[N], out: mut f32[N]):
    y = I.{name}()
"""


def _diagnostic(name: str) -> str:
    try:
        frontend(PROGRAM.format(name=name), "probe.intent")
    except CompileError as exc:
        return exc.diagnostics[0].render_plain()
    return ""


def _listed() -> list[str]:
    text = _diagnostic("no_such_builtin")
    assert "unknown builtin I.no_such_builtin" in text
    hint = text.split("hint:", 1)[1]
    return re.findall(r"I\.([a-z_][a-z0-9_]*)", hint.split("the builtins are", 1)[1])


def _documented() -> set[str]:
    docs = REPO / "docs" / "language.md"
    return set(re.findall(r"\bI\.([a-z_][a-z0-9_]*)\(", docs.read_text(encoding="utf-8"))) if docs.is_file() else set()


LISTED = _listed()


def test_the_list_is_sorted_and_not_empty():
    assert LISTED == sorted(set(LISTED)) and len(LISTED) >= 10


@pytest.mark.parametrize("name", LISTED)
def test_every_listed_name_is_a_builtin(name):
    assert "unknown builtin" not in _diagnostic(name)


def test_every_documented_builtin_is_listed():
    missing = sorted(n for n in _documented() - set(LISTED) if "unknown builtin" not in _diagnostic(n))
    assert not missing, f"builtins missing from the 'unknown builtin' hint: {missing}"
