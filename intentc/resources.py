"""Locates the files intentc carries: the grammar, the C runtime sources, the Make and CMake files.

An installed package holds them under ``intentc/_data``; a source checkout keeps
them at the repository root (``grammar/``, ``runtime_c/``, ``make/``, ``cmake/``).
"""
from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """Return the folder ``name`` ("grammar", "runtime_c", "make" or "cmake")."""
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"intentc is missing its {name}/ folder; reinstall the package")


def grammar_path() -> Path:
    return data_dir("grammar") / "intent.lark"


def runtime_dir() -> Path:
    return data_dir("runtime_c")
