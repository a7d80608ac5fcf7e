"""Make-style dependency files (``--depfile``), as ``gcc -MD -MP`` writes them.

One rule ``output: source runtime-files...`` and an empty rule per file after the
source, so that Make (and CMake's and Ninja's depfile readers) keep working when
one of them disappears. File names are escaped the way GNU Make and Ninja both read
them: a blank as ``\\ `` (backslashes just before it doubled), ``#`` as ``\\#``, ``$`` as
``$$``, ``:`` as ``\\:``. Glob characters (``* ? [``) stay as they are, as gcc writes
them: Ninja would keep a backslash before them, and Make's glob of an existing file
matches the file itself. A name Make cannot express is refused with a diagnostic: a
line break, ``;`` (a recipe), ``=`` (a variable), ``|`` (order-only prerequisites), a
control character, or a trailing backslash (it would escape the separating blank). A
name with ``%`` gets no empty rule, which Make would read as a pattern rule.
The file's bytes are the names' bytes (a name that is not UTF-8 is written as it is).
"""
from __future__ import annotations

import os
from pathlib import Path

from intentc.base.atomic_files import write_atomically
from intentc.diagnostics import error
from intentc.source import display_path

_INEXPRESSIBLE = {";": "a ';' (Make reads a recipe after it)", "=": "a '=' (Make reads a variable assignment)",
                  "|": "a '|' (Make reads order-only prerequisites after it)"}


def make_escape(path: str | os.PathLike) -> str:
    text = os.fspath(path)
    _check_expressible(text)
    out = []
    for k, ch in enumerate(text):
        if ch in " \t":
            # Backslashes just before a blank are doubled so that they stay backslashes.
            run = len(text[:k]) - len(text[:k].rstrip("\\"))
            out.append("\\" * run + "\\" + ch)
        elif ch in "#:":
            out.append("\\" + ch)
        elif ch == "$":
            out.append("$$")
        else:
            out.append(ch)
    return "".join(out)


def _check_expressible(text: str) -> None:
    why = None
    if any(ch in "\n\r" for ch in text):
        why = "a line break"
    elif any(ord(ch) < 0x20 and ch != "\t" or ord(ch) == 0x7F for ch in text):
        why = "a control character"
    elif text.endswith("\\"):
        why = "a trailing backslash"
    else:
        why = next((reason for ch, reason in _INEXPRESSIBLE.items() if ch in text), None)
    if why is not None:
        raise error(f"cannot write a depfile naming '{display_path(text)}': Make cannot express a file name with {why}",
                    hint="rename the file, or build without --depfile")


def render_depfile(output: str | os.PathLike, prerequisites: list[str | os.PathLike]) -> str:
    deps = [make_escape(p) for p in prerequisites]
    lines = [f"{make_escape(output)}: " + " \\\n  ".join(deps), ""]
    lines += [f"{dep}:\n" for dep in deps[1:] if "%" not in dep]
    return "\n".join(lines)


def depfile_bytes(output: str | os.PathLike, prerequisites: list[str | os.PathLike]) -> bytes:
    """The depfile's bytes: the names' own bytes, whatever their encoding."""
    return render_depfile(output, prerequisites).encode("utf-8", "surrogateescape")


def write_depfile(path: str | Path, output: str | Path, prerequisites: list[str | Path]) -> Path:
    """Write the depfile at ``path`` atomically (a temporary file renamed into place)."""
    return write_atomically(Path(path), depfile_bytes(output, prerequisites))
