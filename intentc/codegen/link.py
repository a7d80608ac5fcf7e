"""Turns objects into shared libraries and archives with the system C compiler.

The C runtime is compiled once per (compiler, flags, sources) and cached, so that a
build costs one link. Commands run inside a private folder with relative file names,
so no temporary path ends up in an artifact (byte-identical outputs).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from intentc.resources import runtime_dir

RUNTIME_SOURCES = ("error.c", "tensor.c", "thread_pool.c", "alloc.c")
RUNTIME_FLAGS = ("-O2", "-fPIC", "-fvisibility=hidden", "-std=c11", "-D_GNU_SOURCE", "-pthread")


class LinkError(Exception):
    pass


def c_compiler() -> str:
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return name
    raise LinkError("no C compiler found (set CC, or install gcc or clang)")


def _run(cmd: list[str], cwd: Path) -> None:
    result = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        raise LinkError(f"command failed: {' '.join(cmd)}\n{result.stderr.strip()}")


def _cache_root() -> Path:
    base = os.environ.get("INTENTC_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "intentc")
    return Path(base)


def runtime_objects(cc: str | None = None) -> list[Path]:
    """Compiled runtime objects, from the cache when the sources have not changed."""
    cc = cc or c_compiler()
    source_dir = runtime_dir()
    digest = hashlib.sha256()
    digest.update(cc.encode())
    digest.update(" ".join(RUNTIME_FLAGS).encode())
    for name in sorted(p.name for p in source_dir.iterdir() if p.suffix in (".c", ".h")):
        digest.update(name.encode())
        digest.update((source_dir / name).read_bytes())
    cache = _cache_root() / f"runtime-{digest.hexdigest()[:16]}"
    objects = [cache / (Path(s).stem + ".o") for s in RUNTIME_SOURCES]
    if all(o.exists() for o in objects):
        return objects
    cache.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="runtime-", dir=cache.parent))
    try:
        for name in sorted(p.name for p in source_dir.iterdir() if p.suffix in (".c", ".h")):
            shutil.copy2(source_dir / name, staging / name)
        for source in RUNTIME_SOURCES:
            _run([cc, *RUNTIME_FLAGS, "-c", source, "-o", Path(source).stem + ".o"], staging)
        try:
            staging.rename(cache)
        except OSError:  # another process won the race; its objects are identical
            pass
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return objects


def link_shared(kernel_object: bytes, output: Path) -> None:
    cc = c_compiler()
    objects = runtime_objects(cc)
    with tempfile.TemporaryDirectory(prefix="intentc-link-") as tmp:
        work = Path(tmp)
        (work / "kernels.o").write_bytes(kernel_object)
        names = []
        for obj in objects:
            shutil.copy2(obj, work / obj.name)
            names.append(obj.name)
        # -Bsymbolic: each library calls its own runtime even when several are loaded.
        _run([cc, "-shared", "-pthread", "-Wl,-Bsymbolic", "-Wl,--build-id=sha1", "-o", "out.so", "kernels.o",
              *names, "-lm"], work)
        output.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(work / "out.so", output)


def archive(kernel_object: bytes, output: Path) -> None:
    """A static library holding the kernels and the runtime objects."""
    objects = runtime_objects()
    ar = shutil.which("ar") or shutil.which("gcc-ar")
    if ar is None:
        raise LinkError("no 'ar' found to build a static library")
    with tempfile.TemporaryDirectory(prefix="intentc-ar-") as tmp:
        work = Path(tmp)
        (work / "kernels.o").write_bytes(kernel_object)
        names = ["kernels.o"]
        for obj in objects:
            shutil.copy2(obj, work / ("intent_rt_" + obj.name))
            names.append("intent_rt_" + obj.name)
        _run([ar, "rcsD", "out.a", *names], work)
        output.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(work / "out.a", output)


def link_relocatable(kernel_object: bytes, output: Path) -> None:
    """One relocatable object holding the kernels and the runtime (``-r``)."""
    cc = c_compiler()
    objects = runtime_objects(cc)
    with tempfile.TemporaryDirectory(prefix="intentc-obj-") as tmp:
        work = Path(tmp)
        (work / "kernels.o").write_bytes(kernel_object)
        names = []
        for obj in objects:
            shutil.copy2(obj, work / obj.name)
            names.append(obj.name)
        _run([cc, "-r", "-nostdlib", "-o", "out.o", "kernels.o", *names], work)
        output.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(work / "out.o", output)
