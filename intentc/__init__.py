"""intentc — the ahead-of-time compiler for the Intent kernel language.

``intentc.load(path)`` loads a library built by ``intentc build``; ``intentc.load_source(text)``
compiles source text (through the build cache) and loads it, as a notebook does:
a changed text gives a new library at a path of its own, loaded beside the earlier ones,
which keep working.
"""
from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "load", "load_source", "compile", "interpret", "KernelError", "CompileError"]


def compile(source_text: str, *, name: str = "kernels", target: str | None = None, cpu: str = "native",
            sanitize: tuple[str, ...] = (), cache: bool | None = None, include_dirs=()):
    """Compile Intent source text into a shared library and return its path.

    Messages name the source ``<name>.intent``. The library lies in the build cache
    (``intentc.build_cache``; ``cache=False`` or ``INTENTC_NO_CACHE=1``: in a new temporary
    folder), at a path of its own for each text and flags, so ``intentc.load`` of it never
    returns a library loaded from another text. Modules the text imports (``from common import f``)
    are found in the working directory, then in ``include_dirs`` (a folder or a list, as ``-I``).
    Raises ``CompileError`` for a bad program."""
    from intentc.driver import compile_text

    return compile_text(source_text, name=name, target=target, cpu=cpu, sanitize=tuple(sanitize), cache=cache,
                        include_dirs=include_dirs)


def load_source(source_text: str, **options):
    """``intentc.load(intentc.compile(source_text, **options))``: the kernels of ``source_text``."""
    from intentc.loader import load as load_library

    return load_library(compile(source_text, **options))


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
