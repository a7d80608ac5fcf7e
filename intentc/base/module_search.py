"""Where an imported Intent module is found, and which files a source imports (docs/language.md, "Imports").

``from common import f`` names the module ``common``; ``from lib.common import f`` the module
``lib.common``, i.e. the file ``lib/common.intent``. A module is looked for first beside the
file that imports it, then in each include folder (``-I DIR``) in the order given; the first
regular file found is the module. Paths keep the spelling they were given (a relative folder
stays relative), so messages and artifacts do not depend on the working directory.

``scan_imports`` reads only the import lines of a text (no parser), so that a build-cache
lookup can hash every imported file without loading the compiler: ``imported_files`` follows
them from a main file. The parser's own list of imports is what compiles; the driver stores a
build in the cache only when the two agree.
"""
from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass

SUFFIX = ".intent"
# The builtin namespace: `import intent as I` names no file.
BUILTIN_MODULE = "intent"

_DOTTED = r"[A-Za-z_][A-Za-z0-9_]*(?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)*"
_IMPORT_LINE = re.compile(rf"^(?:from\s+({_DOTTED})\s+import\b|import\s+({_DOTTED}))", re.MULTILINE)


@dataclass(frozen=True)
class SearchPath:
    """The include folders of one build, as given, and the ``--file-prefix-map`` pairs that
    say how messages show a path."""

    include_dirs: tuple[str, ...] = ()
    prefix_map: tuple[tuple[str, str], ...] = ()

    def shown(self, path: str) -> str:
        return map_prefix(path, self.prefix_map)


def map_prefix(path: str, prefix_map: tuple[tuple[str, str], ...] = ()) -> str:
    """``path`` as artifacts and messages show it: the path as given (a relative path stays
    relative), with the last ``(OLD, NEW)`` of ``prefix_map`` whose OLD begins it replaced by NEW,
    as gcc's ``-ffile-prefix-map`` does."""
    for old, new in reversed(prefix_map):
        if old and path.startswith(old):
            return new + path[len(old):]
    return path


def module_file(dotted: str) -> str:
    """The relative file name of a module: ``lib.common`` -> ``lib/common.intent``."""
    return "/".join(dotted.split(".")) + SUFFIX


def folder_of(path: str) -> str:
    """The folder of a file as given ("" for a bare name: the working directory)."""
    return os.path.dirname(path)


def candidates(dotted: str, importer: str, search: SearchPath) -> list[tuple[str, str]]:
    """(folder as given, file path) for each place ``dotted`` is looked for, in order: beside
    ``importer`` (the importing file's path), then each include folder."""
    name = module_file(dotted)
    folders = [folder_of(importer), *search.include_dirs]
    out, seen = [], set()
    for folder in folders:
        path = os.path.join(folder, name) if folder else name
        if path not in seen:
            seen.add(path)
            out.append((folder or ".", path))
    return out


def find_module(dotted: str, importer: str, search: SearchPath) -> str | None:
    """The path of the file ``dotted`` names, or None when no candidate is a regular file."""
    for _, path in candidates(dotted, importer, search):
        if is_regular_file(path):
            return path
    return None


def is_regular_file(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return os.path.abspath(a) == os.path.abspath(b)


def scan_imports(text: str) -> list[str]:
    """The modules ``text`` imports at its top level, in order, without parsing it (the builtin
    ``intent`` left out)."""
    found = []
    for match in _IMPORT_LINE.finditer(text):
        dotted = re.sub(r"\s+", "", match.group(1) or match.group(2))
        if dotted != BUILTIN_MODULE and dotted not in found:
            found.append(dotted)
    return found


def imported_files(text: str, path: str, search: SearchPath, read) -> list[tuple[str, str]] | None:
    """(path, text) of every file that ``text`` (the file ``path``) imports, directly or not, in
    the order first met; ``read(path)`` gives a file's text. None when some module is not found
    or cannot be read: the build then reports it, and nothing is cached."""
    out: list[tuple[str, str]] = []
    pending = [(text, path)]
    visited = [path]
    while pending:
        current_text, current = pending.pop(0)
        for dotted in scan_imports(current_text):
            found = find_module(dotted, current, search)
            if found is None:
                return None
            if any(found == seen or same_file(found, seen) for seen in visited):
                continue
            try:
                found_text = read(found)
            except Exception:  # noqa: BLE001 - the build reports it with a location
                return None
            visited.append(found)
            out.append((found, found_text))
            pending.append((found_text, found))
    return out
