"""Files written so that no reader ever sees a partial one.

``staged(final)`` creates an empty file beside ``final`` (same folder, so a rename is
atomic; a hidden name no build rule matches; permissions from the umask, as a plain
``open`` would give) and returns its path; ``os.replace`` moves it into place once it
is complete. A build that fails, or is interrupted, leaves at most such a temporary file,
never a truncated artifact under the final name, and a process that loads the old
artifact keeps its copy while the new one replaces it.
"""
from __future__ import annotations

import os
import secrets
from pathlib import Path


def staged(final: Path) -> Path:
    """A new empty file in ``final``'s folder, to be renamed onto ``final`` when written."""
    final.parent.mkdir(parents=True, exist_ok=True)
    while True:
        # The name keeps a short head of the final name: a long name plus the suffix must
        # still fit the file system's limit.
        temporary = final.with_name(f".{final.name[:40]}.{secrets.token_hex(4)}.tmp")
        try:
            os.close(os.open(temporary, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
            return temporary
        except FileExistsError:
            continue


def write_atomically(final: Path, data: bytes) -> Path:
    """Write ``data`` to ``final`` through a staged file."""
    temporary = staged(final)
    try:
        temporary.write_bytes(data)
        os.replace(temporary, final)
    finally:
        if temporary.exists():
            temporary.unlink()
    return final
