"""Runs the Lark parser and turns its exceptions into Intent diagnostics."""
from __future__ import annotations

import functools
import os
from pathlib import Path

from lark import Lark, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError
from lark.indenter import DedentError

from intentc.diagnostics import CompileError, error
from intentc.parse import ast
from intentc.parse import indenter
from intentc.parse.indenter import IntentIndenter, StatementTooLong
from intentc.parse.to_ast import ToAst
from intentc.resources import grammar_path
from intentc.source import SourceFile, Span

# Token names as a reader would say them.
_TOKEN_WORDS = {
    "NAME": "a name", "INT": "an integer", "FLOAT": "a number", "STRING": "a string",
    "_NEWLINE": "end of line", "_INDENT": "an indented block", "_DEDENT": "end of block",
    "LPAR": "'('", "RPAR": "')'", "LSQB": "'['", "RSQB": "']'", "COLON": "':'", "COMMA": "','",
    "EQUAL": "'='", "$END": "end of file", "TRUE": "True", "FALSE": "False", "NOT": "'not'", "COMPOP": "a comparison", "MUT": "'mut'",
}


@functools.lru_cache(maxsize=1)
def _lark() -> Lark:
    return Lark(grammar_path().read_text(encoding="utf-8"), parser="lalr", postlex=IntentIndenter(),
                propagate_positions=True, maybe_placeholders=True, start="start")


def _describe(token_type: str, value: str | None = None) -> str:
    if token_type in _TOKEN_WORDS:
        return _TOKEN_WORDS[token_type]
    if value:
        return f"'{value}'"
    return token_type.lower()


def _expected_words(expected) -> str:
    if {"NAME", "INT", "FLOAT"} <= set(expected):
        return "an expression"
    words = sorted({_describe(t) for t in expected if not t.startswith("__")})
    if len(words) > 6:
        words = words[:6] + ["..."]
    return ", ".join(words)


def parse_source(text: str, path: str = "<input>") -> ast.Module:
    """The AST of ``text``, or a ``CompileError`` with located diagnostics (never another exception
    for any text: odd characters, literals, nesting or lengths are diagnostics)."""
    text = text[1:] if text.startswith("\ufeff") else text  # a UTF-8 byte order mark, as Python allows
    source = SourceFile.from_text(path, text if text.endswith("\n") else text + "\n")
    try:
        tree = _lark().parse(source.text)
    except UnexpectedToken as exc:
        raise _token_error(source, exc) from None
    except UnexpectedCharacters as exc:
        span = Span(source, exc.pos_in_stream, exc.pos_in_stream + 1)
        raise error(f"unexpected character {source.text[exc.pos_in_stream]!r}", span,
                    hint="Intent source uses Python-style names, numbers and operators") from None
    except UnexpectedEOF as exc:
        span = Span(source, max(0, len(source.text) - 1), len(source.text))
        raise error("unexpected end of file", span,
                    hint=f"expected {_expected_words(exc.expected)}") from None
    except DedentError:
        raise error("inconsistent indentation: this line does not match any outer block",
                    _dedent_span(source), hint="indent it exactly as far as the block it belongs to") from None
    except StatementTooLong as exc:
        start = exc.token.start_pos or 0
        raise error(f"this statement is too long: it has more than {indenter.MAX_STATEMENT_TOKENS} tokens",
                    Span(source, start, max(start + 1, exc.token.end_pos or 0)),
                    hint="split it into several statements (name the parts of a long expression)") from None
    except UnexpectedInput as exc:  # any other Lark failure still becomes a diagnostic
        raise error(f"syntax error: {exc}", Span(source, 0, 1)) from None
    _check_nesting(tree, source)
    try:
        return ToAst(source).transform(tree)
    except RecursionError:  # a safety net: _check_nesting keeps the tree shallower than this
        raise too_deep(None) from None
    except VisitError as exc:
        if isinstance(exc.orig_exc, CompileError):
            raise exc.orig_exc from None
        if isinstance(exc.orig_exc, RecursionError):
            raise too_deep(None) from None
        meta = getattr(exc.obj, "meta", None)
        span = Span(source, meta.start_pos, meta.end_pos) if meta is not None and not meta.empty else None
        raise error(f"internal error: the parser failed on this {exc.rule}: {type(exc.orig_exc).__name__}: "
                    f"{exc.orig_exc}", span, hint="please report this with the source file") from None


# How deeply expressions, calls, subscripts and blocks may nest inside one another. Python's
# parser stops at 200 brackets and 100 indentation levels; the compiler's stages recurse on the
# tree (with Python's default recursion limit they manage about twice this in the worst case).
MAX_NESTING = 100

# Rules that only group their children: they add no level of nesting.
_GROUPING = frozenset({"start", "suite", "arguments", "subscripts", "parameters", "param", "else_clause",
                       "for_target", "dotted_name", "decorator", "funcdef"})


def _check_nesting(tree: Tree, source: SourceFile) -> None:
    """Refuse a tree nesting deeper than MAX_NESTING, at the first construct too deep.

    One level per expression (a chain ``a + b + c`` is nested, one level per operator; a
    comparison chain ``a < b < c`` and an if/elif chain too, as the AST nests them) and
    per block; iterative, so that any depth is measured without recursion."""
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if node.data not in _GROUPING:
            depth += 1
            if node.data == "compare":
                depth += len(node.children) // 2 - 1
        if depth > MAX_NESTING:
            raise too_deep(_node_span(node, source))
        elifs, children = 0, []
        for child in node.children:
            if isinstance(child, Tree):
                if child.data in ("elif_clause", "else_clause") and node.data == "if_stmt":
                    elifs += 1
                    children.append((child, depth + elifs))
                else:
                    children.append((child, depth))
        stack.extend(reversed(children))  # leftmost first: report where the too-deep part starts


def _node_span(node: Tree, source: SourceFile) -> Span | None:
    meta = node.meta
    if getattr(meta, "empty", True):
        return None
    return Span(source, meta.start_pos, max(meta.start_pos + 1, meta.end_pos))


def too_deep(span: Span | None) -> CompileError:
    return error(f"this nests too deeply: more than {MAX_NESTING} levels of expressions and blocks inside one "
                 "another", span, notes=("each operator of a chain such as a + b + c, each call, subscript and "
                                          "bracket and each block counts as one level",),
                 hint="give inner parts names in statements of their own, or move them into an @intent.fn helper")


def _dedent_span(source: SourceFile) -> Span:
    """Where the indenter gave up: the first character of the line after the last line break it read."""
    last = None
    try:
        for token in _lark().lex(source.text):
            if token.type == "_NEWLINE":
                last = token
    except DedentError:
        pass
    except (UnexpectedInput, AssertionError, StatementTooLong):
        last = None
    if last is None or last.end_pos is None:
        return Span(source, 0, 1)
    start = min(last.end_pos, len(source.text) - 1)
    return Span(source, start, start + 1)


def _token_error(source: SourceFile, exc: UnexpectedToken) -> CompileError:
    token = exc.token
    start = getattr(token, "start_pos", None)
    if start is None:
        start = max(0, len(source.text) - 1)
    end = getattr(token, "end_pos", None) or start + 1
    if token.type == "_INDENT":
        # The token sits on the previous line break; point at the indented text.
        while start < len(source.text) - 1 and source.text[start] in "\r\n \t":
            start += 1
        end = start + 1
    elif token.type in ("_NEWLINE", "_DEDENT", "$END"):
        # Point at the end of the previous line rather than at the next one.
        start = max(0, start)
        while start > 0 and source.text[start - 1] in "\n\r \t":
            start -= 1
        start = max(0, start - 1)
        end = start + 1
    span = Span(source, start, max(end, start + 1))
    found = _describe(token.type, str(token))
    expected = _expected_words(exc.expected)
    message = f"unexpected {found}"
    after = token.end_pos if getattr(token, "end_pos", None) is not None else len(source.text)
    if token.type in ("_DEDENT", "$END") and not source.text[after:].strip():
        message = "unexpected end of file"
    if token.type == "_INDENT":
        message = "unexpected indentation"
        hint = "indent only the body of a def, if, elif, else, for or while"
    if token.type != "_INDENT":
        hint = f"expected {expected}" if expected else None
    if "COLON" in exc.expected and token.type in ("_NEWLINE",):
        hint = "a block header (def, if, elif, else, for, while) ends with ':'"
    return error(message, span, hint=hint)


def parse_file(path: str | Path) -> ast.Module:
    from intentc.parse.reader import read_source

    return parse_source(read_source(path), os.fsdecode(os.fspath(path)))
