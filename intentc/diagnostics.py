"""Diagnostics: a span, a message, an optional spec rule ID, notes and a hint.

Every error intentc reports about a program is a ``Diagnostic``; compilation stages
raise ``CompileError`` carrying one or more of them, and the CLI renders them with
rich (file:line:col, the source line, a caret under the span).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from intentc.source import Span, char_width, display_char


@dataclass(frozen=True)
class Diagnostic:
    message: str
    span: Span | None = None
    rule: str | None = None
    hint: str | None = None
    notes: tuple[str, ...] = ()
    severity: str = "error"

    def render_plain(self) -> str:
        """The diagnostic as plain text, the form golden tests compare."""
        head = f"{self.severity}"
        if self.rule:
            head += f"[{self.rule}]"
        head += f": {_printable(self.message)}"
        lines = []
        if self.span is not None:
            lines.append(f"{self.span.location()}: {head}")
            line, column = self.span.source.line_col(self.span.start)
            end_line, end_column = self.span.source.line_col(max(self.span.start, self.span.end - 1))
            text = self.span.source.line_text(line)
            end = end_column if end_line == line else len(text)
            gutter = f"{line:>4} | "
            shown, caret = _excerpt(text, column - 1, max(end, column))
            lines.append(gutter + shown)
            lines.append(" " * len(gutter) + caret)
        else:
            lines.append(head)
        for note in self.notes:
            lines.append(f"  note: {_printable(note)}")
        if self.hint:
            lines.append(f"  hint: {_printable(self.hint)}")
        return "\n".join(lines)


# A source line longer than this is shown as an excerpt around the caret.
_EXCERPT_CHARS = 160


def _excerpt(text: str, start: int, end: int) -> tuple[str, str]:
    """The source line as shown (special characters replaced, long lines cut around the
    caret) and the caret line under it, aligned column for column on a terminal.

    ``start``/``end``: the underlined characters' indices in ``text`` (end exclusive,
    > start; they may point past the end, at the line break)."""
    lo, hi, prefix, suffix = 0, len(text), "", ""
    if len(text) > _EXCERPT_CHARS:
        lo = max(0, min(start - _EXCERPT_CHARS // 3, len(text) - _EXCERPT_CHARS))
        hi = min(len(text), lo + _EXCERPT_CHARS)
        prefix, suffix = ("..." if lo > 0 else ""), ("..." if hi < len(text) else "")
    shown, offset, width = [prefix], len(prefix), 0
    for index in range(lo, hi):
        piece = display_char(text[index])
        columns = sum(char_width(c) for c in piece)
        shown.append(piece)
        if index < start:
            offset += columns
        elif index < end:
            width += columns
    return "".join(shown) + suffix, " " * offset + "^" * max(1, width)


def _printable(text: str) -> str:
    """A message as it can be printed: control characters (a source's escape sequence, a
    form feed quoted into a message) become escapes, so that no diagnostic drives the terminal."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c == "\n" else repr(c)[1:-1] for c in text)


@dataclass
class CompileError(Exception):
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def __str__(self) -> str:
        return "\n".join(d.render_plain() for d in self.diagnostics)


def quote(span: Span | None, limit: int = 40) -> str | None:
    """The source text under ``span`` in quotes for a message, or None when it is long or spans lines."""
    if span is None:
        return None
    text = span.text.strip()
    if not text or len(text) > limit or "\n" in text:
        return None
    return f"'{text}'"


def error(message: str, span: Span | None = None, rule: str | None = None,
          hint: str | None = None, notes: tuple[str, ...] = ()) -> CompileError:
    """Build a CompileError holding one diagnostic (raise the result)."""
    return CompileError([Diagnostic(message, span, rule, hint, tuple(notes))])


def render_rich(diagnostics: list[Diagnostic], console) -> None:
    """Print diagnostics on a rich console: location, message, source line, caret."""
    from rich.markup import escape

    for diag in diagnostics:
        color = "red" if diag.severity == "error" else "yellow"
        for index, line in enumerate(diag.render_plain().splitlines()):
            if index == 0:
                console.print(f"[bold {color}]{escape(line)}[/]", highlight=False, soft_wrap=True)
            elif line.lstrip().startswith("^"):
                console.print(f"[bold {color}]{escape(line)}[/]", highlight=False, soft_wrap=True)
            elif line.lstrip().startswith("hint:"):
                console.print(f"[cyan]{escape(line)}[/]", highlight=False, soft_wrap=True)
            else:
                console.print(escape(line), highlight=False, soft_wrap=True)
