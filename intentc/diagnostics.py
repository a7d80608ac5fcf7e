"""Diagnostics: a span, a message, an optional spec rule ID, notes and a hint.

Every error intentc reports about a program is a ``Diagnostic``; compilation stages
raise ``CompileError`` carrying one or more of them, and the CLI renders them with
rich (file:line:col, the source line, a caret under the span).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from intentc.source import Span


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
        head += f": {self.message}"
        lines = []
        if self.span is not None:
            lines.append(f"{self.span.location()}: {head}")
            line, column = self.span.source.line_col(self.span.start)
            text = self.span.source.line_text(line)
            end_line, end_column = self.span.source.line_col(max(self.span.start, self.span.end - 1))
            width = (end_column - column + 1) if end_line == line else max(1, len(text) - column + 1)
            gutter = f"{line:>4} | "
            lines.append(gutter + text)
            lines.append(" " * (len(gutter) + column - 1) + "^" * max(1, width))
        else:
            lines.append(head)
        for note in self.notes:
            lines.append(f"  note: {note}")
        if self.hint:
            lines.append(f"  hint: {self.hint}")
        return "\n".join(lines)


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
