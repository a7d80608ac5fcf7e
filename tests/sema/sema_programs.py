"""Helpers of the sema unit tests: build a source with sema alone and look at the result.

``kir(source)`` is the printed KIR (``intentc.kir.printer``) of the module sema builds;
``diagnostics(source)`` the diagnostics it raises instead; ``call_node(text)`` the parsed
``ast.Call`` of one expression statement, for the argument helpers.
"""
from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from intentc.diagnostics import CompileError, Diagnostic  # noqa: E402
from intentc.kir.printer import print_module  # noqa: E402
from intentc.parse import ast, parse_source  # noqa: E402
from intentc.sema import build_module  # noqa: E402

HEADER = "import intent as I\n\n"


def build(source: str):
    return build_module(parse_source(HEADER + source, "test.intent"), "test")


def kir(source: str) -> str:
    return print_module(build(source))


def diagnostics(source: str) -> list[Diagnostic]:
    try:
        build(source)
    except CompileError as exc:
        return list(exc.diagnostics)
    raise AssertionError("the source compiled without a diagnostic")


def diagnostic(source: str) -> Diagnostic:
    """The one diagnostic of ``source``."""
    found = diagnostics(source)
    assert len(found) == 1, [d.render_plain() for d in found]
    return found[0]


def call_node(expression: str) -> ast.Call:
    tree = parse_source(HEADER + f"@intent.kernel\ndef k():\n    {expression}\n", "call.intent")
    node = tree.functions[0].body[0].value
    assert isinstance(node, ast.Call)
    return node


def lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines()]
