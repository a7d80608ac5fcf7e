"""KIR text round trip: print -> parse -> print is the identity, and the parsed module verifies.

For every sample and every diagnostics-free program of the test suite (the `.intent`
files under tests/ outside tests/diagnostics, benchmark kernels, and Intent programs
written as string constants in test modules), before lowering (`driver.frontend`) and
after it (`driver.compile_source(...).kir`).
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from intentc.diagnostics import CompileError  # noqa: E402
from intentc.driver import compile_source, frontend  # noqa: E402
from intentc.kir.parser import parse_module  # noqa: E402
from intentc.kir.printer import print_module  # noqa: E402
from intentc.kir.verifier import verify_module  # noqa: E402
from intentc.lower.pipeline import lower  # noqa: E402


def _programs() -> list[tuple[str, str]]:
    """(name, source) of every candidate program."""
    found = []
    files = sorted(REPO.glob("samples/*.intent")) + sorted(REPO.glob("benchmarks/**/*.intent")) + \
        sorted(p for p in REPO.glob("tests/**/*.intent") if "diagnostics" not in p.relative_to(REPO).parts)
    for path in files:
        found.append((str(path.relative_to(REPO)), path.read_text(encoding="utf-8")))
    for module in sorted(REPO.glob("tests/**/*.py")):
        try:
            tree = ast.parse(module.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and "@intent.kernel" in node.value \
                    and "import intent as I" in node.value:
                found.append((f"{module.relative_to(REPO)}:{node.lineno}", node.value))
    return found


def _diagnostics_free() -> list[tuple[str, str]]:
    keep = []
    for name, source in _programs():
        try:
            frontend(source, name.replace(":", "_") + ".intent")
        except CompileError:
            continue  # a program that is meant to fail (or a template)
        keep.append((name, source))
    return keep


PROGRAMS = _diagnostics_free()


def test_the_corpus_holds_every_sample():
    names = {name for name, _ in PROGRAMS}
    samples = {str(p.relative_to(REPO)) for p in REPO.glob("samples/*.intent")}
    assert samples and samples <= names, f"samples that do not compile: {sorted(samples - names)}"
    assert len(PROGRAMS) >= len(samples) + 6


def _round_trip(module, what: str) -> None:
    text = print_module(module)
    parsed = parse_module(text)
    verify_module(parsed)
    again = print_module(parsed)
    assert again == text, f"{what}: print(parse(print(kir))) differs from print(kir)"
    # Reading back the re-printed text is a fixed point too.
    assert print_module(parse_module(again)) == text


@pytest.mark.parametrize("name, source", PROGRAMS, ids=[n for n, _ in PROGRAMS])
def test_round_trip_before_and_after_lowering(name, source):
    path = name.replace(":", "_") + ".intent"
    before = frontend(source, path)
    _round_trip(before, f"{name} (kir)")
    try:
        after = compile_source(source, path, optimize_ir=False).kir
    except CompileError as exc:  # a program for another target (e.g. bf16 arithmetic on the GPU only)
        assert all(d.rule == "T7" for d in exc.diagnostics), exc
        after = frontend(source, path)
        lower(after)  # the same KIR passes compile_source runs, in place
    verify_module(after)
    _round_trip(after, f"{name} (lowered)")
    assert not any(op.name == "call" for f in after.kernels for op in f.walk()), "lowering left a call"


KIR_TEXTS = sorted(HERE.glob("*.kir"))


@pytest.mark.parametrize("path", KIR_TEXTS, ids=[p.stem for p in KIR_TEXTS])
def test_hand_written_kir_round_trips(path):
    module = parse_module(path.read_text(encoding="utf-8"))
    verify_module(module)
    _round_trip(module, path.name)
