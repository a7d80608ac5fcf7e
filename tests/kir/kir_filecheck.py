"""A small FileCheck: check lines in a test file against a tool's output.

Supported directives, for a prefix P (default ``CHECK``), written after ``#`` (Intent
source) or ``//`` (KIR text) in the test file:

- ``P: pattern``       the next line at or after the current position that contains the
                       pattern; the position moves past it;
- ``P-LABEL: pattern`` the same as ``P:`` (kept for readability of function headers);
- ``P-NEXT: pattern``  the line right after the previous match contains the pattern;
- ``P-SAME: pattern``  the previous matched line contains the pattern after the previous match;
- ``P-NOT: pattern``   no line between the previous match (or the start) and the next
                       positive match (or the end of the output) contains the pattern.

A pattern is literal text with optional ``{{regex}}`` parts; surrounding spaces are
ignored. Failures raise ``CheckFailure`` with the directive, its line and the output.
"""
from __future__ import annotations

import re
from dataclasses import dataclass


class CheckFailure(AssertionError):
    pass


@dataclass(frozen=True)
class Directive:
    kind: str  # "", "NEXT", "SAME", "NOT", "LABEL"
    pattern: str
    line: int  # line in the test file

    def regex(self) -> re.Pattern:
        parts = re.split(r"\{\{(.*?)\}\}", self.pattern.strip())
        return re.compile("".join(re.escape(p) if k % 2 == 0 else f"(?:{p})" for k, p in enumerate(parts)))


def directives(text: str, prefix: str = "CHECK") -> list[Directive]:
    found = []
    pattern = re.compile(rf"(?:#|//)\s*{re.escape(prefix)}(?:-(NEXT|SAME|NOT|LABEL))?:(.*)$")
    for number, line in enumerate(text.splitlines(), 1):
        match = pattern.search(line)
        if match:
            found.append(Directive(match.group(1) or "", match.group(2), number))
    return found


def check(output: str, checks: list[Directive], name: str = "output") -> None:
    if not checks:
        raise CheckFailure(f"{name}: no check directives")
    lines = output.splitlines()
    pos = 0  # the next line a positive directive may match
    last: tuple[int, int] | None = None  # (line index, end column) of the previous match
    pending_not: list[Directive] = []

    def fail(directive: Directive, why: str) -> None:
        raise CheckFailure(f"{name}: line {directive.line}: {directive.kind or 'CHECK'}: "
                           f"{directive.pattern.strip()!r}: {why}\n--- output ---\n{output}")

    def settle_nots(end: int) -> None:
        start = last[0] + 1 if last else 0
        for directive in pending_not:
            for index in range(start, end):
                if directive.regex().search(lines[index]):
                    fail(directive, f"found on output line {index + 1}: {lines[index]!r}")
        pending_not.clear()

    for directive in checks:
        regex = directive.regex()
        if directive.kind == "NOT":
            pending_not.append(directive)
            continue
        if directive.kind == "NEXT":
            index = (last[0] + 1) if last else 0
            match = regex.search(lines[index]) if index < len(lines) else None
            if not match:
                fail(directive, f"not on the next line ({lines[index]!r})" if index < len(lines) else
                     "no next line")
        elif directive.kind == "SAME":
            if last is None:
                fail(directive, "no previous match")
            index = last[0]
            match = regex.search(lines[index], last[1])
            if not match:
                fail(directive, f"not on the same line ({lines[index]!r})")
        else:
            index, match = pos, None
            while index < len(lines):
                match = regex.search(lines[index])
                if match:
                    break
                index += 1
            if not match:
                fail(directive, f"not found after output line {pos}")
        settle_nots(index)
        last = (index, match.end())
        pos = index + 1
    settle_nots(len(lines))
