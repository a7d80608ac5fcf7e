"""The parser's limits and odd text: every failure is a located diagnostic.

Number literals follow Python's underscore rule; nesting deeper than ``MAX_NESTING`` and
statements longer than ``MAX_STATEMENT_TOKENS`` are refused where they start going
wrong (a megabyte-long line is refused while it is being lexed); form feeds, tabs,
U+2028 and wide characters keep the caret under the character it points at; a long line
is shown as an excerpt around the caret; bytes that are not UTF-8 are reported at the
first one.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from intentc.diagnostics import CompileError, Diagnostic  # noqa: E402
from intentc.driver import compile_source, frontend  # noqa: E402
from intentc.parse import parse_source  # noqa: E402
from intentc.parse.indenter import MAX_STATEMENT_TOKENS  # noqa: E402
from intentc.parse.parser import MAX_NESTING  # noqa: E402
from intentc.parse.reader import decode_source  # noqa: E402
from intentc.source import SourceFile, Span  # noqa: E402

HEAD = "import intent as I\n\n@intent.kernel\ndef k(x: f32[N], o: mut f32[N]):\n"
LOOP = HEAD + "    for i in I.parallel(x.axis(0)):\n"


def _diagnostic(source: str, parse_only: bool = False) -> Diagnostic:
    with pytest.raises(CompileError) as info:
        parse_source(source, "t.intent") if parse_only else frontend(source, "t.intent")
    assert len(info.value.diagnostics) == 1, info.value
    return info.value.diagnostics[0]


# ---- number literals ----------------------------------------------------------------------------
@pytest.mark.parametrize("literal, words", [
    ("0x_", ["hexadecimal literal '0x_' has no digits", "0x1"]),
    ("0b_", ["binary literal '0b_' has no digits"]),
    ("0X__", ["has no digits"]),
    ("0b__1", ["invalid number literal '0b__1'", "between two digits"]),
    ("1__0", ["invalid number literal '1__0'"]),
    ("1_", ["'1_'"]),
    ("1_.5", ["'1_.5'"]),
    ("1._5", ["'1._5'"]),
    ("1.5_", ["'1.5_'"]),
    ("0x1__f", ["'0x1__f'"]),
])
def test_malformed_number_literals_are_located_diagnostics(literal, words):
    diag = _diagnostic(HEAD + f"    o[0] = {literal}\n")
    text = diag.render_plain()
    assert diag.span.location() == "t.intent:5:12" and diag.span.text == literal, text
    for word in words:
        assert word in text, text


@pytest.mark.parametrize("literal, value", [("1_000", 1000), ("0x_ff", 255), ("0b_1_0", 2), ("0xF_F", 255),
                                            ("1_0.0_1", 10.01), ("5.", 5.0), (".5", 0.5)])
def test_well_formed_number_literals_with_underscores(literal, value):
    module = parse_source(HEAD + f"    o[0] = {literal}\n", "t.intent")
    assert module.functions[0].body[0].value.value == value


# ---- nesting ----------------------------------------------------------------------------------------
def _nested(form: str, depth: int) -> str:
    if form == "parens":
        return LOOP + "        o[i] = " + "(" * depth + "x[i]" + ")" * depth + "\n"
    if form == "calls":
        return LOOP + "        o[i] = " + "I.abs(" * depth + "x[i]" + ")" * depth + "\n"
    if form == "unary":
        return LOOP + "        o[i] = " + "-" * depth + "x[i]\n"
    if form == "chain":
        return LOOP + "        o[i] = x[i]" + " + x[i]" * depth + "\n"
    if form == "compare":  # `a < b < c` is a chain of `and`s in the AST
        return LOOP + "        o[i] = I.where(" + " < ".join(["x[i]"] * (depth + 1)) + ", 1.0, 0.0)\n"
    if form == "ifs":
        body = "".join("    " * (k + 2) + "if x[i] > 0.0:\n" for k in range(depth))
        return LOOP + body + "    " * (depth + 2) + "o[i] = x[i]\n"
    assert form == "elifs"
    return LOOP + "        if x[i] > 0.0:\n            o[i] = 0.0\n" + \
        "        elif x[i] > 1.0:\n            o[i] = 1.0\n" * depth + "        else:\n            o[i] = 2.0\n"


# The depth at which each form first passes the limit (its levels as the AST nests them).
# (The kernel, its loop and the assignment around the form take the first levels.)
FORMS = {"parens": MAX_NESTING - 4, "calls": MAX_NESTING - 4, "unary": MAX_NESTING - 4, "chain": MAX_NESTING - 4,
         "compare": MAX_NESTING - 5, "ifs": MAX_NESTING - 4, "elifs": MAX_NESTING - 6}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_nesting_limit_is_a_located_diagnostic(form):
    under = FORMS[form]
    parse_source(_nested(form, under), "t.intent")  # at the limit: accepted
    for depth in (under + 1, 400 if form in ("ifs", "elifs") else 1500):
        diag = _diagnostic(_nested(form, depth), parse_only=True)
        assert "nests too deeply" in diag.message and str(MAX_NESTING) in diag.message, diag.render_plain()
        assert diag.span is not None and diag.span.line >= 5, diag.render_plain()


@pytest.mark.parametrize("form", ["calls", "ifs", "compare"])
def test_the_whole_pipeline_handles_the_deepest_accepted_nesting(form):
    """The limit leaves the later stages room (they recurse on the tree): the deepest
    accepted program of the forms that cost most stack compiles, its IR prints."""
    from intentc.kir.printer import print_module

    compiled = compile_source(_nested(form, FORMS[form]), "t.intent", optimize_ir=False)
    assert print_module(compiled.kir) and compiled.llvm_ir


# ---- long statements and lines -------------------------------------------------------------------
def test_a_megabyte_line_is_refused_while_lexing():
    """`x + a + a ...` over 1 MB once took about a minute and 1 GB before failing without a
    location; it is refused at the token past the limit, having lexed only that far."""
    source = HEAD + "    o[0] = x[0]" + " + x[0]" * 150_000 + "\n"
    assert len(source) > 1_000_000
    start = time.process_time()
    diag = _diagnostic(source)
    cpu = time.process_time() - start
    assert "too long" in diag.message and str(MAX_STATEMENT_TOKENS) in diag.message
    # The token at which lexing stopped: the (limit + 1)-th of the statement, about 14,000
    # characters into the line (every "+ x[0]" is 5 tokens in 7 characters).
    assert diag.span.line == 5 and diag.span.column < 16_000, diag.span.location()
    assert cpu < 30, f"{cpu:.1f} s of CPU time"  # measured: about 0.6 s (a generous bound, in CPU time)
    rendered = diag.render_plain()
    assert max(len(line) for line in rendered.splitlines()) < 200, "the line is shown as an excerpt"


def test_statement_token_limit_boundary(monkeypatch):
    from intentc.parse import indenter

    monkeypatch.setattr(indenter, "MAX_STATEMENT_TOKENS", 40)  # the same code path, at a cheap size

    def statement(tokens: int) -> str:
        # "    o[0] = [" is 6 tokens, "]" one; each "0, " is two.
        items = (tokens - 7) // 2
        return HEAD + "    o[0] = [" + "0, " * items + "]\n"

    parse_source(statement(39), "t.intent")
    diag = _diagnostic(statement(42), parse_only=True)
    assert diag.message == "this statement is too long: it has more than 40 tokens"
    # A line break inside brackets does not end the statement, one outside does.
    parse_source(HEAD + ("    o[0] = 1\n" * 40), "t.intent")
    wrapped = HEAD + "    o[0] = [\n" + "0,\n" * 40 + "]\n"
    assert "too long" in _diagnostic(wrapped, parse_only=True).message


def test_long_line_excerpt_keeps_the_caret_under_its_character():
    source = HEAD + "    o[0] = I.sum([" + "x[0], " * 600 + "y])\n"
    diag = _diagnostic(source)
    lines = diag.render_plain().splitlines()
    shown, caret = lines[1], lines[2]
    assert len(shown) < 200 and "..." in shown and "y" in shown
    assert shown[caret.index("^")] == "y"


# ---- special whitespace and wide characters under the caret ------------------------------------------
def _caret_char(diag: Diagnostic) -> str:
    """The character of the shown line that a terminal puts above the caret."""
    from intentc.source import char_width

    _, shown, caret = diag.render_plain().splitlines()[:3]
    column, target = 0, caret.index("^")
    for char in shown:
        if column >= target and char_width(char):
            return char
        column += char_width(char)
    return ""


@pytest.mark.parametrize("line", [
    "    o[0] = \tq + 1.0",  # a tab before the name
    "    o[0] = 1.0 +\fq",  # a form feed
    "    o[0] = 1.0 + \u2028q",  # a line separator (not a line break for Intent)
    "    o[0] = \u00e9 + q",  # é is one column
    "    o[0] = 1.0 + \u4e2d\u6587q",  # two wide characters, two columns each
    "    o[0] = 1.0 + q # e\u0301",  # a combining accent in a comment
    "\f    o[0] = q",  # a form feed at the start of a line resets the indentation, as in Python
    "    o[0] = 1.0 +\x1b[2J q",  # an escape sequence is not sent to the terminal
])
def test_caret_stays_under_its_character(line):
    diag = _diagnostic(HEAD + line + "\n")
    rendered = diag.render_plain()
    assert all(c.isprintable() or c == "\n" for c in rendered), repr(rendered)
    # Under the caret: the character the diagnostic is about, as shown (U+FFFD or a blank for
    # what cannot be shown).
    assert _caret_char(diag) in (diag.span.text[0], "\ufffd", " "), rendered


def test_form_feed_at_line_start_is_not_indentation():
    assert parse_source(HEAD + "\f    o[0] = 1.0\n", "t.intent").functions[0].body


def test_no_kernel_has_a_location():
    for source, location in [("", "t.intent:1:1"), ("import intent as I\n", "t.intent:1:1"),
                             ("\n\nimport intent as I\n", "t.intent:1:1")]:
        diag = _diagnostic(source)
        assert "defines no @intent.kernel" in diag.message and diag.span.location() == location


# ---- bytes that are not UTF-8 -------------------------------------------------------------------------
@pytest.mark.parametrize("data, location, byte", [
    (b"\xff\xfe not utf-8", "t.intent:1:1", "0xff"),
    (b"import intent as I\n# caf\xe9\n", "t.intent:2:6", "0xe9"),
    ("import intent as I\n# \u00e9\u00e9 ".encode() + b"\xc0\x80\n", "t.intent:2:6", "0xc0"),  # é is one column
    (b"import intent as I\n\n\n   \xed\xa0\x80\n", "t.intent:4:4", "0xed"),  # an encoded surrogate
    (b"x\r\ny\r\n\x80", "t.intent:3:1", "0x80"),
])
def test_first_bad_byte_is_located(data, location, byte):
    with pytest.raises(CompileError) as info:
        decode_source(data, "t.intent")
    diag = info.value.diagnostics[0]
    assert diag.span.location() == location and byte in diag.message, diag.render_plain()
    assert "\ufffd" in diag.render_plain().splitlines()[1]


def test_spans_render_for_any_offset():
    """A span may point at the line break or past the last character (end of file)."""
    source = SourceFile.from_text("t.intent", "ab\ncd")
    for start in range(len(source.text) + 1):
        text = Diagnostic("m", Span(source, start, start + 1)).render_plain()
        assert text.splitlines()[2].strip() == "^"
