"""Source files and spans: every AST node and KIR op points back at the text it came from."""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from pathlib import Path


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
        starts = [0]
        for index, char in enumerate(text):
            if char == "\n":
                starts.append(index + 1)
        return SourceFile(path, text, tuple(starts))

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
