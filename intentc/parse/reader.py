"""Reading a source file: text or a located diagnostic, never an exception of the OS layer.

Guarantees: only a regular file is read (a directory, device, FIFO or socket is refused
from its ``stat`` before any read, so ``/dev/zero`` or a FIFO cannot block or exhaust
memory); a file over ``MAX_SOURCE_BYTES`` is refused; the bytes must be UTF-8, and the
first one that is not is reported at its line and column with the line shown. File names
may hold any bytes: messages show them through ``display_path``.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from intentc.diagnostics import CompileError, error
from intentc.source import SourceFile, Span, display_path

# Far above any real program (the samples are a few KiB); it bounds the memory one read takes.
MAX_SOURCE_BYTES = 32 * 1024 * 1024


def read_source(path: str | os.PathLike) -> str:
    """The text of the source file ``path`` (raises ``CompileError``)."""
    shown = display_path(path)
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; the fstat below refuses it.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise error(f"no such file: {shown}") from None
    except IsADirectoryError:
        raise _not_regular(shown, "a directory") from None
    except OSError as exc:
        raise error(f"cannot read {shown}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _not_regular(shown, _kind(info.st_mode))
        if info.st_size > MAX_SOURCE_BYTES:
            raise error(f"cannot read {shown}: the file has {info.st_size} bytes, more than a source may have "
                        f"({MAX_SOURCE_BYTES} bytes)", hint="an Intent source is a text file of kernels")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if total > MAX_SOURCE_BYTES:  # the file grew while it was read
                raise error(f"cannot read {shown}: the file has more than {MAX_SOURCE_BYTES} bytes")
            chunks.append(chunk)
    except CompileError:
        raise
    except OSError as exc:
        raise error(f"cannot read {shown}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    return decode_source(b"".join(chunks), os.fsdecode(os.fspath(path)))


def decode_source(data: bytes, path: str) -> str:
    """``data`` as UTF-8 text, or a diagnostic at the first byte that is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # Everything before the bad byte decoded; show the line with U+FFFD for bad bytes.
        offset = len(data[:exc.start].decode("utf-8"))
        text = data.decode("utf-8", "replace")
        source = SourceFile.from_text(path, text)
        byte = data[exc.start]
        raise error(f"the source is not UTF-8: byte 0x{byte:02x} here is not valid UTF-8", Span(source, offset, offset + 1),
                    hint="save the file as UTF-8 (Intent source is UTF-8 text)") from None


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def _not_regular(shown: str, kind: str) -> CompileError:
    return error(f"cannot read {shown}: it is {kind}, not a regular file", hint="give the path of a .intent file")

