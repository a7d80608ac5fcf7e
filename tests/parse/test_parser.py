"""The parser: every sample parses, AST spans point at their source text, and the lexical
corners of Python-shaped source (CRLF, a byte order mark, tabs, no final newline, line
continuations, brackets across lines, comments) are accepted or diagnosed with a location."""
from __future__ import annotations

import sys
from dataclasses import fields, is_dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from intentc.diagnostics import CompileError  # noqa: E402
from intentc.driver import frontend  # noqa: E402
from intentc.parse import ast, parse_source  # noqa: E402

SAMPLES = sorted(REPO.glob("samples/*.intent"))


def _nodes(node):
    if isinstance(node, tuple):
        for item in node:
            yield from _nodes(item)
    elif is_dataclass(node) and isinstance(node, ast.Node):
        yield node
        for f in fields(node):
            if f.name not in ("span", "name_span"):
                yield from _nodes(getattr(node, f.name))


@pytest.mark.parametrize("path", SAMPLES, ids=[p.stem for p in SAMPLES])
def test_samples_parse_with_spans_inside_the_source(path):
    text = path.read_text(encoding="utf-8")
    module = parse_source(text, path.name)
    assert module.functions
    for node in _nodes(module):
        span = node.span
        assert 0 <= span.start <= span.end <= len(span.source.text), node
        if isinstance(node, ast.Name):
            assert span.text == node.id, (span.text, node)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            assert span.text.replace("_", "").lower() in (str(node.value).lower(), repr(node.value)) or \
                float(span.text) == node.value


def test_expression_spans():
    module = parse_source("import intent as I\n@intent.kernel\ndef saxpy(a: f32, x: f32[N]) -> f32[N]:\n"
                          "    return a * x + I.exp(x[0])\n", "t.intent")
    ret = module.functions[0].body[-1]
    assert isinstance(ret, ast.Return)
    assert ret.value.span.text == "a * x + I.exp(x[0])"
    assert isinstance(ret.value, ast.BinOp) and ret.value.op == "+"
    assert ret.value.left.span.text == "a * x"
    call = ret.value.right
    assert isinstance(call, ast.Call) and call.span.text == "I.exp(x[0])"
    assert call.args[0].span.text == "x[0]"
    assert module.functions[0].name_span.text == "saxpy"
    assert (ret.value.span.line, ret.value.span.column) == (4, 12)


PROGRAM = "import intent as I\n\n@intent.kernel\ndef k(x: f32[N]) -> f32[N]:\n    return x * 2.0\n"


@pytest.mark.parametrize("variant", [
    PROGRAM.replace("\n", "\r\n"),  # CRLF line ends
    "\ufeff" + PROGRAM,  # a UTF-8 byte order mark
    PROGRAM.replace("    return", "\treturn"),  # a tab indents
    PROGRAM.rstrip("\n"),  # no final newline
    PROGRAM.rstrip("\n") + "  # a comment at the very end",
    PROGRAM.replace("x * 2.0", "x * \\\n        2.0"),  # a backslash continuation
    PROGRAM.replace("x * 2.0", "(x *\n  2.0)"),  # brackets across lines ignore indentation
    PROGRAM.replace("def k(x: f32[N])", "def k(\n    x: f32[N],\n)"),  # a trailing comma in parameters
    "# leading comment\n\n\n" + PROGRAM + "\n\n# trailing comment\n",
    PROGRAM.replace("import intent as I\n", "import intent as I  # the builtins\n"),
])
def test_lexical_variants_are_accepted(variant):
    module = frontend(variant, "variant.intent")
    assert [f.name for f in module.kernels] == ["k"]


def test_crlf_diagnostic_shows_the_line_without_carriage_return():
    with pytest.raises(CompileError) as info:
        frontend(PROGRAM.replace("x * 2.0", "x * y").replace("\n", "\r\n"), "crlf.intent")
    text = info.value.diagnostics[0].render_plain()
    assert "\r" not in text
    assert text.splitlines()[0].startswith("crlf.intent:5:16: error: undefined name 'y'")


@pytest.mark.parametrize("source, location, words", [
    (PROGRAM.replace("x * 2.0", "x * (2.0"), "5:", ["unexpected"]),
    (PROGRAM + "  y = 1\n", "6:3", ["indentation"]),
    (PROGRAM.replace("def k", "def 1k"), "4:5", ["unexpected"]),
    (PROGRAM.replace("->", "=>"), "4:", ["unexpected"]),
    ("import intent as I\n@intent.kernel\n", "2:", ["end of file"]),
    ("import numpy as np\n" + PROGRAM, "1:1", ["no module named 'numpy'", "import intent as I"]),
    (PROGRAM + "x += 1\n", "6:1", ["top level"]),
])
def test_syntax_errors_have_locations(source, location, words):
    try:
        frontend(source, "bad.intent")
    except CompileError as exc:
        text = exc.diagnostics[0].render_plain()
    else:
        raise AssertionError(f"accepted:\n{source}")
    assert text.startswith(f"bad.intent:{location}"), text
    for word in words:
        assert word in text, text
