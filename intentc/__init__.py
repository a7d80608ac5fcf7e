"""intentc — the ahead-of-time compiler for the Intent kernel language."""
from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "load", "interpret", "KernelError", "CompileError"]


def __getattr__(name):
    # Lazy so that `import intentc` stays cheap and no stage imports a later one.
    if name in ("load", "KernelError"):
        from intentc import loader

        return getattr(loader, name)
    if name == "interpret":
        from intentc.kir.interp import interpret

        return interpret
    if name == "CompileError":
        from intentc.diagnostics import CompileError

        return CompileError
    raise AttributeError(name)
