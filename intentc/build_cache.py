"""The build cache: the artifacts of earlier builds, found by a digest of everything a build
depends on, so that rebuilding an unchanged source costs a lookup and a copy.

What this module guarantees:

* An entry's key is the SHA-256 of a canonical list of named inputs (``Key``): the caller adds
  the source bytes, the path its messages show, the flags, the target, the CPU and the output
  names; ``Key`` itself adds the compiler's identity (intentc's version and a fingerprint of its
  own files, llvmlite's version, which fixes LLVM's, the files intentc carries: grammar and C
  runtime), the C compiler that links, this CPU's identity when the CPU is ``native``, and every
  ``INTENTC_*`` variable and ``CC`` of the environment. Anything that may change the bytes of an
  artifact is in the key; a change of any of them is a miss.
* An entry is a folder ``<root>/builds/<key[:2]>/<key>/`` holding one file per artifact and an
  ``index.json`` with the SHA-256 of each. It is written in a temporary folder and renamed into
  place, so a reader sees a whole entry or none; ``lookup`` checks every file against the index
  and removes an entry that does not match (a truncated or corrupted file is a miss, never a
  wrong artifact).
* ``root()`` is ``$INTENTC_CACHE_DIR``, else ``$XDG_CACHE_HOME/intentc``, else
  ``~/.cache/intentc`` (the folder that also holds the compiled C runtime). ``INTENTC_NO_CACHE``
  set to anything but ``""`` or ``"0"`` turns the cache off (``enabled()``).
* The cache holds at most ``MAX_ENTRIES`` builds; ``store`` removes the least recently used.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import secrets
import shutil
import sys
from pathlib import Path

FORMAT = "intentc-build-cache-1"  # changes when the entry layout or the key's inputs change
MAX_ENTRIES = 512
# Variables that say how to run intentc, not what it builds.
_NEUTRAL_ENV = {"INTENTC_NO_CACHE", "INTENTC_TRACEBACK", "INTENTC_CACHE_DIR"}


def root() -> Path:
    base = os.environ.get("INTENTC_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "intentc")
    return Path(base)


def enabled() -> bool:
    return os.environ.get("INTENTC_NO_CACHE", "") in ("", "0")


class Key:
    """Named inputs of one build, hashed in the order they are added (names are part of the hash,
    and every value is length-prefixed, so no two lists of inputs give the same bytes)."""

    def __init__(self):
        self._hash = hashlib.sha256(FORMAT.encode())

    def add(self, name: str, value: bytes | str) -> "Key":
        data = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else value
        self._hash.update(f"\0{name}\0{len(data)}\0".encode())
        self._hash.update(data)
        return self

    def add_toolchain(self, cpu: str) -> "Key":
        """The compiler's and the machine's part of the key."""
        for name, value in _toolchain_identity():
            self.add(name, value)
        if cpu == "native":
            self.add("host-cpu", _host_cpu())
        for name in sorted(os.environ):
            if (name.startswith("INTENTC_") and name not in _NEUTRAL_ENV) or name == "CC":
                self.add(f"env:{name}", os.environ[name])
        return self

    def hexdigest(self) -> str:
        return self._hash.hexdigest()


@functools.lru_cache(maxsize=1)
def _toolchain_identity() -> tuple[tuple[str, bytes], ...]:
    from intentc.resources import data_dir

    import llvmlite  # its version fixes LLVM's (the package holds its own LLVM); not llvmlite.binding

    llvmlite_version = llvmlite.__version__
    version = sys.modules["intentc"].__version__  # the package, imported before any of its modules
    parts = [("intentc", version.encode()), ("llvmlite", llvmlite_version.encode()),
             ("python", sys.version.encode()), ("machine", _machine().encode()),
             ("intentc-files", _package_fingerprint())]
    for folder in ("grammar", "runtime_c"):
        try:
            where = data_dir(folder)
        except FileNotFoundError:
            continue
        for path in sorted(where.iterdir()):
            if path.is_file():
                parts.append((f"{folder}/{path.name}", path.read_bytes()))
    for cc in (os.environ.get("CC"), "cc", "gcc", "clang"):
        found = cc and shutil.which(cc)
        if found:  # the compiler that builds the runtime and links (its file, not its output)
            info = os.stat(found)
            parts.append(("cc", f"{os.path.realpath(found)} {info.st_size} {info.st_mtime_ns}".encode()))
            break
    return tuple(parts)


def _package_fingerprint() -> bytes:
    """Name, size and modification time of every file of the intentc package: a source
    checkout changes without a new version number, and a changed compiler must miss."""
    package = Path(__file__).resolve().parent
    rows = []
    for folder, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".pyc", ".tmp")):
                continue
            info = os.stat(os.path.join(folder, name))
            rows.append(f"{os.path.relpath(os.path.join(folder, name), package)} {info.st_size} {info.st_mtime_ns}")
    return "\n".join(rows).encode("utf-8", "surrogateescape")


@functools.lru_cache(maxsize=1)
def _host_cpu() -> bytes:
    """What identifies this machine's CPU for ``--cpu native`` (the model and its features),
    read without loading LLVM so that a cache hit stays cheap."""
    try:
        with open("/proc/cpuinfo", "rb") as f:
            text = f.read().split(b"\n\n")[0]
        keep = [line for line in text.splitlines()
                if line.split(b":")[0].strip() in (b"model name", b"flags", b"Features", b"CPU implementer",
                                                   b"CPU part", b"CPU variant", b"cpu family", b"model")]
        return b"\n".join(keep)
    except OSError:
        import platform

        return f"{_machine()} {platform.processor()}".encode()


def _machine() -> str:
    return os.uname().machine if hasattr(os, "uname") else os.environ.get("PROCESSOR_ARCHITECTURE", "")


def _entry(key: str) -> Path:
    return root() / "builds" / key[:2] / key


def lookup(key: str) -> dict[str, Path] | None:
    """The files of entry ``key`` by role, each checked against the index; None on a miss."""
    entry = _entry(key)
    try:
        index = json.loads((entry / "index.json").read_text(encoding="utf-8"))
        files = {}
        for role, digest in index["files"].items():
            path = entry / role
            if hashlib.sha256(path.read_bytes()).hexdigest() != digest:
                raise ValueError(f"{role} does not match its digest")
            files[role] = path
    except (OSError, ValueError, KeyError, TypeError, AttributeError):  # none, or a damaged one: rebuild it
        if entry.exists():
            shutil.rmtree(entry, ignore_errors=True)
        return None
    try:
        os.utime(entry)  # most recently used
    except OSError:
        pass
    return files


def store(key: str, files: dict[str, bytes]) -> dict[str, Path] | None:
    """Record ``files`` (role -> bytes) under ``key``; return their paths in the cache, or None
    when the cache cannot be written (a full disk or a read-only home is not a build error)."""
    entry = _entry(key)
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        staging = entry.parent / f".{key[:16]}.{secrets.token_hex(4)}.tmp"
        staging.mkdir()
    except OSError:
        return None
    try:
        for role, data in files.items():
            (staging / role).write_bytes(data)
        index = {"format": FORMAT, "files": {role: hashlib.sha256(data).hexdigest() for role, data in files.items()}}
        (staging / "index.json").write_text(json.dumps(index, sort_keys=True), encoding="utf-8")
        try:
            staging.rename(entry)
        except OSError:  # another build stored the same key first; its files are the same
            pass
    except OSError:
        return None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    _evict()
    return {role: entry / role for role in files} if (entry / "index.json").exists() else None


# A staging folder this old belongs to a build that was killed before it renamed it.
_STALE_STAGING_S = 3600


def _evict() -> None:
    import time

    builds = root() / "builds"
    try:
        entries, now = [], time.time()
        for shard in builds.iterdir():
            if not shard.is_dir():
                continue
            for e in shard.iterdir():
                if not e.name.startswith("."):
                    entries.append(e)
                elif now - e.stat().st_mtime > _STALE_STAGING_S:
                    shutil.rmtree(e, ignore_errors=True)
        if len(entries) <= MAX_ENTRIES:
            return
        entries.sort(key=lambda e: e.stat().st_mtime)
    except OSError:
        return
    for old in entries[:len(entries) - MAX_ENTRIES]:
        shutil.rmtree(old, ignore_errors=True)
