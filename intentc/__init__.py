"""intentc — the ahead-of-time compiler for the Intent kernel language."""
from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "load", "interpret", "KernelError", "CompileError"]


def __getattr__(name):
    # Lazy so that `import intentc` stays cheap and no stage imports a later one.
    if name == "load":
        from intentc.loader import load

        return load
    if name == "KernelError":
        from intentc.base.status import KernelError

        return KernelError
    if name == "interpret":
        from intentc.driver import interpret

        return interpret
    if name == "CompileError":
        from intentc.diagnostics import CompileError

        return CompileError
    raise AttributeError(name)
