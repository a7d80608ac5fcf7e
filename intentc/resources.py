"""Locates the files intentc carries: the grammar and the C runtime sources.

An installed package holds them under ``intentc/_data``; a source checkout keeps
them at the repository root (``grammar/``, ``runtime_c/``).
"""
from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """Return the folder ``name`` ("grammar" or "runtime_c")."""
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"intentc is missing its {name}/ folder; reinstall the package")


def grammar_path() -> Path:
    return data_dir("grammar") / "intent.lark"


def runtime_dir() -> Path:
    return data_dir("runtime_c")
