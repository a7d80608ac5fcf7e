"""Turns objects into shared libraries, relocatable objects and archives with a C toolchain.

The host target uses the system C compiler (``$CC``, else ``cc``/``gcc``/``clang``).
A cross target (``TargetSpec.toolchain_triple``) uses, in this order, the installed
cross compiler ``<triple>-gcc`` (Debian: ``gcc-aarch64-linux-gnu``), else the
hermetic ``python -m ziglang cc -target <triple>`` (PyPI: ``ziglang``, the ``cross``
extra), which needs no system toolchain. ``INTENTC_CROSS_TOOLCHAIN=gcc|zig`` forces
one of them.

The C runtime is compiled once per (target, compiler, flags, sources) and cached, so
that a build costs one link. Commands run inside a private folder with relative file
names, and cross builds carry no debug information, so no temporary path ends up in
an artifact (byte-identical outputs).
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from intentc.codegen.target import TargetSpec
from intentc.resources import runtime_dir

RUNTIME_SOURCES = ("error.c", "tensor.c", "thread_pool.c", "alloc.c", "sanitize.c", "process_state.c")
RUNTIME_HEADER = "intent_runtime.h"
RUNTIME_FLAGS = ("-O2", "-fPIC", "-fvisibility=hidden", "-std=c11", "-D_GNU_SOURCE", "-pthread")
CROSS_TOOLCHAINS = ("gcc", "zig")
# How a shared library is linked (docs/abi.md, "Many libraries in one program"):
# -z nodelete: dlclose leaves it mapped, since the process's one thread pool may run its code;
# -soname (added per output): its file name, what a program that links it records;
# -Bsymbolic-functions (where the linker takes it; zig's does not): its calls to its own
#   kernels and runtime functions stay inside it, whatever else the process holds (while the
#   one data symbol that the runtime copies share, intent_runtime_process_state_v1, still
#   resolves process-wide). Without it the calls may bind to another intentc library's copy
#   of a runtime function, which serves as well: all copies share one state.
SHARED_LIBRARY_FLAGS = ("-Wl,-z,nodelete", "-Wl,--build-id=sha1")
SYMBOLIC_FUNCTIONS = "-Wl,-Bsymbolic-functions"


class LinkError(Exception):
    pass


@dataclass(frozen=True)
class Toolchain:
    """The commands that build C code for one target."""

    cc: tuple[str, ...]
    ar: tuple[str, ...]  # empty: the host's ar (archives are the same format everywhere)
    cflags: tuple[str, ...] = ()  # added to RUNTIME_FLAGS
    ldflags: tuple[str, ...] = ()  # added when linking a shared library
    key: str = ""  # what identifies the compiler in the runtime cache (besides cc)
    symbolic_functions: bool = True  # the linker takes -Bsymbolic-functions (zig's does not)


def c_compiler() -> str:
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return name
    raise LinkError("no C compiler found (set CC, or install gcc or clang)")


def _host_ar() -> str:
    ar = shutil.which("ar") or shutil.which("gcc-ar")
    if ar is None:
        raise LinkError("no 'ar' found to build a static library")
    return ar


def _has_ziglang() -> bool:
    return importlib.util.find_spec("ziglang") is not None


def _ziglang_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ziglang")
    except PackageNotFoundError:
        return "unknown"


def toolchain(spec: TargetSpec | None = None) -> Toolchain:
    """The toolchain for ``spec`` (None: the host)."""
    if spec is None or spec.toolchain_triple is None:
        return Toolchain((c_compiler(),), ())
    triple = spec.toolchain_triple
    forced = os.environ.get("INTENTC_CROSS_TOOLCHAIN", "").strip().lower()
    if forced and forced not in CROSS_TOOLCHAINS:
        raise LinkError(f"INTENTC_CROSS_TOOLCHAIN is '{forced}'; use one of: {', '.join(CROSS_TOOLCHAINS)}")
    # Cross builds: no debug information (it would record build folders), none linked in either.
    cflags, ldflags = ("-g0",), ("-Wl,--strip-debug",)
    gcc = shutil.which(f"{triple}-gcc")
    if gcc and forced in ("", "gcc"):
        ar = shutil.which(f"{triple}-ar")
        return Toolchain((gcc,), (ar,) if ar else (), cflags, ldflags, key=f"gcc {triple}")
    if _has_ziglang() and forced in ("", "zig"):
        zig = (sys.executable, "-m", "ziglang")
        return Toolchain((*zig, "cc", "-target", spec.zig_target or triple), (*zig, "ar"), cflags, ldflags,
                         key=f"ziglang {_ziglang_version()} {spec.zig_target or triple}", symbolic_functions=False)
    wanted = {"gcc": f"'{triple}-gcc'", "zig": "the Python package 'ziglang'"}.get(
        forced, f"'{triple}-gcc' or the Python package 'ziglang'")
    raise LinkError(f"no C toolchain for {spec.name}: found no {wanted} (install gcc-{triple} with apt, "
                    f"or `pip install ziglang`, i.e. intentc[cross])")


def _run(cmd: list[str], cwd: Path) -> None:
    try:
        result = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    except OSError as exc:
        raise LinkError(f"cannot run {cmd[0]}: {exc}") from None
    if result.returncode != 0:
        raise LinkError(f"command failed: {' '.join(cmd)}\n{result.stderr.strip()}")


def _cache_root() -> Path:
    base = os.environ.get("INTENTC_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "intentc")
    return Path(base)


def runtime_objects(cc: str | Toolchain | None = None) -> list[Path]:
    """Compiled runtime objects, from the cache when the sources have not changed.

    ``cc`` is a toolchain, a host C compiler's name, or None for the host's compiler."""
    tools = cc if isinstance(cc, Toolchain) else Toolchain((cc or c_compiler(),), ())
    flags = (*RUNTIME_FLAGS, *tools.cflags)
    source_dir = runtime_dir()
    digest = hashlib.sha256()
    digest.update(" ".join(tools.cc).encode())
    if tools.key:  # a cross toolchain (the host's key stays what it always was)
        digest.update(b"\0" + tools.key.encode())
    digest.update(" ".join(flags).encode())
    for name in sorted(p.name for p in source_dir.iterdir() if p.suffix in (".c", ".h")):
        digest.update(name.encode())
        digest.update((source_dir / name).read_bytes())
    digest.update(" ".join(RUNTIME_SOURCES).encode())  # a cache from another list of objects is not ours
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
            _run([*tools.cc, *flags, "-c", source, "-o", Path(source).stem + ".o"], staging)
        try:
            staging.rename(cache)
        except OSError:  # another process won the race; its objects are identical
            pass
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return objects


def runtime_dependencies(kind: str) -> list[Path]:
    """The runtime files an artifact of ``kind`` (".so", ".o", ".a", ".h") is built from (for depfiles)."""
    source_dir = runtime_dir().resolve()
    if kind == ".h":
        return [source_dir / RUNTIME_HEADER]
    names = sorted(p.name for p in source_dir.iterdir() if p.suffix in (".c", ".h"))
    return [source_dir / RUNTIME_HEADER] + [source_dir / n for n in names if n != RUNTIME_HEADER]


def prepare_exports(module, manifest: dict) -> None:
    """Name the module's exported symbols as the ABI says (an llvmlite module, before any of
    its text or object is emitted): each kernel's function is its manifest ``symbol`` (the
    name, or ``--prefix`` + name), and the manifest symbol is weak: every artifact holds an
    ``intent_module_manifest``, and a program that links several static ones keeps one
    instead of failing on a duplicate. A shared library's own copy is what ``intentc.load``
    reads (its lookup starts in that library)."""
    symbols = {k["name"]: k["symbol"] for k in manifest.get("kernels", ()) if k.get("symbol", k["name"]) != k["name"]}
    for function in module.functions:
        if function.name in symbols and not function.is_declaration:
            function.name = symbols[function.name]
    for variable in module.global_variables:
        if variable.name == "intent_module_manifest" and not variable.is_declaration:
            variable.linkage = "weak_any"


def _stage(work: Path, kernel_object: bytes, objects: list[Path], prefix: str = "") -> list[str]:
    (work / "kernels.o").write_bytes(kernel_object)
    names = []
    for obj in objects:
        shutil.copy2(obj, work / (prefix + obj.name))
        names.append(prefix + obj.name)
    return names


def link_shared(kernel_object: bytes, output: Path, spec: TargetSpec | None = None) -> None:
    tools = toolchain(spec)
    objects = runtime_objects(tools)
    with tempfile.TemporaryDirectory(prefix="intentc-link-") as tmp:
        work = Path(tmp)
        names = _stage(work, kernel_object, objects)
        symbolic = (SYMBOLIC_FUNCTIONS,) if tools.symbolic_functions else ()
        _run([*tools.cc, "-shared", "-pthread", *symbolic, *SHARED_LIBRARY_FLAGS, f"-Wl,-soname,{output.name}",
              *tools.ldflags, "-o", "out.so", "kernels.o", *names, "-lm"], work)
        output.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(work / "out.so", output)


def archive(kernel_object: bytes, output: Path, spec: TargetSpec | None = None) -> None:
    """A static library holding the kernels and the runtime objects."""
    tools = toolchain(spec)
    objects = runtime_objects(tools)
    with tempfile.TemporaryDirectory(prefix="intentc-ar-") as tmp:
        work = Path(tmp)
        names = ["kernels.o", *_stage(work, kernel_object, objects, prefix="intent_rt_")]
        _run([*(tools.ar or (_host_ar(),)), "rcsD", "out.a", *names], work)
        output.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(work / "out.a", output)


def link_relocatable(kernel_object: bytes, output: Path, spec: TargetSpec | None = None) -> None:
    """One relocatable object holding the kernels and the runtime (``-r``)."""
    tools = toolchain(spec)
    objects = runtime_objects(tools)
    with tempfile.TemporaryDirectory(prefix="intentc-obj-") as tmp:
        work = Path(tmp)
        names = _stage(work, kernel_object, objects)
        _run([*tools.cc, "-r", "-nostdlib", "-o", "out.o", "kernels.o", *names], work)
        output.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(work / "out.o", output)
