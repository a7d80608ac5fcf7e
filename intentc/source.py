"""Source files and spans: every AST node and KIR op points back at the text it came from.

``SourceFile.path`` is the file's name as messages show it (``display_path``): a name
with bytes that are not UTF-8 or with control characters (a newline, a tab) is shown
with escapes, so that a diagnostic, a manifest or a message compiled into a library can
always be printed and encoded. Names made of printable UTF-8 are kept as they are.
"""
from __future__ import annotations

import bisect
import os
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path


def display_path(path: str | os.PathLike) -> str:
    """``path`` as text that can be printed and encoded as UTF-8 (escapes for what cannot)."""
    text = os.fspath(path)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if text.isprintable():  # the common case: nothing to escape
        return text
    out = []
    for char in text:
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8, as os.fsdecode keeps it
            out.append(f"\\x{code - 0xDC00:02x}")
        elif char.isprintable() or char == " ":
            out.append(char)
        elif char in "\n\t\r":
            out.append({"\n": "\\n", "\t": "\\t", "\r": "\\r"}[char])
        elif code < 0x100:
            out.append(f"\\x{code:02x}")
        else:
            out.append(f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    return "".join(out)


@dataclass(frozen=True)
class SourceFile:
    path: str
    text: str
    _line_starts: tuple[int, ...] = field(default=(), compare=False, repr=False)

    @staticmethod
    def from_path(path: str | Path) -> "SourceFile":
        return SourceFile.from_text(str(path), Path(path).read_text(encoding="utf-8"))

    @staticmethod
    def from_text(path: str, text: str) -> "SourceFile":
        # Lines end at "\n" only, as the grammar's line breaks do (a lone "\r", a form feed
        # or U+2028 is a character of its line).
        starts = [0]
        index = text.find("\n")
        while index >= 0:
            starts.append(index + 1)
            index = text.find("\n", index + 1)
        return SourceFile(display_path(path), text, tuple(starts))

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based line and column of a character offset."""
        line = bisect.bisect_right(self._line_starts, offset) - 1
        return line + 1, offset - self._line_starts[line] + 1

    def line_text(self, line: int) -> str:
        if not 1 <= line <= len(self._line_starts):
            return ""
        start = self._line_starts[line - 1]
        end = self.text.find("\n", start)
        return (self.text[start:] if end < 0 else self.text[start:end]).rstrip("\r")


@dataclass(frozen=True)
class Span:
    """A half-open character range [start, end) of one source file."""

    source: SourceFile = field(compare=False, repr=False)
    start: int
    end: int

    @property
    def line(self) -> int:
        return self.source.line_col(self.start)[0]

    @property
    def column(self) -> int:
        return self.source.line_col(self.start)[1]

    def location(self) -> str:
        line, column = self.source.line_col(self.start)
        return f"{self.source.path}:{line}:{column}"

    @property
    def text(self) -> str:
        """The source text under the span."""
        return self.source.text[self.start:self.end]

    def join(self, other: "Span | None") -> "Span":
        if other is None:
            return self
        return Span(self.source, min(self.start, other.start), max(self.end, other.end))


def char_width(char: str) -> int:
    """Columns a terminal gives ``char`` as diagnostics show it (see ``display_char``)."""
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def display_char(char: str) -> str:
    """``char`` as a diagnostic's source line shows it: a tab as four spaces, other
    whitespace and control characters (form feed, U+2028, a lone carriage return...) as
    one space or U+FFFD, so that the caret line below stays aligned."""
    if char == "\t":
        return "    "
    if char.isprintable():
        return char
    if char.isspace():
        return " "
    return "\ufffd"
