"""Make-style dependency files (``--depfile``), as ``gcc -MD -MP`` writes them.

One rule ``output: source runtime-files...`` and an empty rule per file after the
source, so that Make (and CMake's and Ninja's depfile readers) keep working when
one of them disappears. File names are escaped the way Make reads them: a space
as ``\\ ``, ``#`` as ``\\#``, ``$`` as ``$$``.
"""
from __future__ import annotations

from pathlib import Path


def make_escape(path: str | Path) -> str:
    out = []
    text = str(path)
    for k, ch in enumerate(text):
        if ch in " \t":
            # Backslashes just before a blank are doubled so that they stay backslashes.
            run = len(text[:k]) - len(text[:k].rstrip("\\"))
            out.append("\\" * run + "\\" + ch)
        elif ch == "#":
            out.append("\\#")
        elif ch == "$":
            out.append("$$")
        else:
            out.append(ch)
    return "".join(out)


def render_depfile(output: str | Path, prerequisites: list[str | Path]) -> str:
    deps = [make_escape(p) for p in prerequisites]
    lines = [f"{make_escape(output)}: " + " \\\n  ".join(deps), ""]
    lines += [f"{dep}:\n" for dep in deps[1:]]
    return "\n".join(lines)


def write_depfile(path: str | Path, output: str | Path, prerequisites: list[str | Path]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_depfile(output, prerequisites))
    return path
