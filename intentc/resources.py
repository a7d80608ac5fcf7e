"""Locates the files intentc carries: the grammar, the C runtime sources, the Make and CMake
files, the documentation that messages name and the language spec it cites.

An installed package holds them under ``intentc/_data``; a source checkout keeps
them at the repository root (``grammar/``, ``runtime_c/``, ``make/``, ``cmake/``, ``docs/``, ``spec/``).
"""
from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """Return the folder ``name`` ("grammar", "runtime_c", "make", "cmake", "docs" or "spec")."""
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"intentc is missing its {name}/ folder; reinstall the package")


def grammar_path() -> Path:
    return data_dir("grammar") / "intent.lark"


def runtime_dir() -> Path:
    return data_dir("runtime_c")


def docs_dir() -> Path:
    """The folder of intentc's documentation (``docs/`` of a checkout, ``_data/docs`` installed)."""
    return data_dir("docs")


def doc_reference(name: str) -> str:
    """How a message names the document ``name`` (e.g. "targets.md"): ``docs/NAME`` where that
    is where it lies (a source checkout), else the path of the copy installed with the package,
    so that a hint always names a file that exists."""
    try:
        folder = docs_dir()
    except FileNotFoundError:
        return f"docs/{name}"
    if folder == _PACKAGE.parent / "docs":
        return f"docs/{name}"
    return str(folder / name)
