"""From source to artifacts (parse -> sema -> KIR -> lower -> LLVM -> files), and from
source to the reference interpreter (``interpret``)."""
from __future__ import annotations

import functools
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from intentc.base.atomic_files import staged
from intentc.diagnostics import CompileError, error
from intentc.kir.core import Module
from intentc.source import display_path


@dataclass
class Compiled:
    kir: Module  # after lowering passes (kernels with result parameters)
    program: object
    llvm_ir: str
    manifest: dict
    optimized: object = None  # llvmlite binding module
    spec: object = None


def module_name(path: str) -> str:
    stem = Path(path).stem
    return re.sub(r"[^A-Za-z0-9_]", "_", stem) or "module"


def frontend(text: str, path: str) -> Module:
    """Parse and check a source; returns verified KIR (before lowering)."""
    from intentc.kir.ops import VerifyError
    from intentc.kir.verifier import verify_module
    from intentc.parse import parse_source
    from intentc.sema import build_module

    try:
        module = build_module(parse_source(text, path), module_name(path))
    except RecursionError:  # a safety net: the parser's nesting limit keeps sema well inside the stack
        raise _too_deep() from None
    try:
        verify_module(module)
    except VerifyError as exc:  # a compiler bug, reported as such rather than a traceback
        raise error(f"internal error: the compiler built invalid KIR: {exc}",
                    hint="please report this with the source file") from None
    return module


@functools.lru_cache(maxsize=128)
def _cached_frontend(text: str, path: str) -> Module:
    return frontend(text, path)


def load_module(source_or_path) -> Module:
    """A KIR module from source text, a ``.intent`` path, or a ``Module`` as is."""
    if isinstance(source_or_path, Module):
        return source_or_path
    if isinstance(source_or_path, Path):
        source_or_path = str(source_or_path)
    if not isinstance(source_or_path, str):
        raise TypeError(f"expected Intent source text or a path, got {type(source_or_path).__name__}")
    if "\n" in source_or_path or not source_or_path.endswith(".intent"):
        return _cached_frontend(source_or_path, "<source>.intent")
    return _cached_frontend(read_source(source_or_path), source_or_path)


def interpret(source_or_path, kernel: str, *args, out=None, parallel_order: str = "forward", seed: int = 0,
              sanitize: str | None = None, **kwargs):
    """Run ``kernel`` of an Intent program in the reference interpreter (``intentc/interp/``).

    ``source_or_path`` is source text (a string with a newline, or not ending in
    ``.intent``), a path to a ``.intent`` file, or a KIR ``Module``. Arguments, ``out=``,
    returned tensors and ``KernelError``s follow the calling convention of a kernel loaded
    with ``intentc.load``: read-only inputs are never written, ``mut`` parameters are
    written in place, returned tensors are new arrays shaped by the declared extents.
    ``parallel_order`` ("forward", "reverse" or "shuffle" with ``seed``) picks the order in
    which ``parallel`` points run. ``sanitize="laws"`` checks the laws of every region op
    under random segmentations (``intentc.interp.LawViolation``); ``sanitize="order"``
    compares every order of points (INTENT_E_SANITIZER); ``sanitize="race"`` reports
    conflicting accesses of two parallel points (``intentc.interp.RaceError``, P3) and
    ``sanitize="unique"`` a ``unique=True`` scatter that writes one element twice
    (``intentc.interp.UniqueViolation``, M4); ``"race,unique"`` does both. (A kernel whose
    parameters are named ``parallel_order``, ``seed`` or ``sanitize`` can be run with
    ``intentc.interp.Interpreter(module).call(...)``.)
    """
    from intentc.interp import interpret_module

    return interpret_module(load_module(source_or_path), kernel, *args, out=out, parallel_order=parallel_order,
                            seed=seed, sanitize=sanitize, **kwargs)


def _too_deep() -> CompileError:
    from intentc.parse.parser import too_deep

    return too_deep(None)


def read_source(path: str | Path) -> str:
    """The text of a source file: only a regular file is read, and it must be UTF-8; anything
    else is a ``CompileError`` (``intentc/parse/reader.py``)."""
    from intentc.parse.reader import read_source as read

    return read(path)


def compile_source(text: str, path: str, target: str | None = None, cpu: str = "native",
                   optimize_ir: bool = True, sanitize: tuple[str, ...] = ()) -> Compiled:
    """``sanitize``: "bounds" keeps every bounds check; "order" runs each call twice with the
    points of every I.parallel loop in increasing and decreasing order and fails
    (INTENT_E_SANITIZER) when the written results differ (P1, P3); "unique" checks every
    scatter asserted ``unique=True`` (M4); "race" is "order" and "unique" together; "laws"
    checks the laws of every region_fold / region_scan's helpers under several segmentations
    (R2, R6) and a call it refuses leaves the tensors it may write as they were (CPU targets only)."""
    from intentc.codegen.emit_llvm import UnsupportedError, emit_module
    from intentc.codegen.manifest import manifest_json, module_manifest
    from intentc.codegen.optimize import optimize
    from intentc.codegen.target import resolve_target
    from intentc.lower.pipeline import SANITIZERS, lower

    module = frontend(text, path)
    try:
        spec = resolve_target(target, cpu)
    except ValueError as exc:
        raise error(str(exc), hint="docs/targets.md describes each target") from None
    unknown = [name for name in sanitize if name not in SANITIZERS]
    if unknown:
        raise error(f"unknown sanitizer '{unknown[0]}'", hint="available: " + ", ".join(SANITIZERS))
    checks = frozenset(sanitize)
    if "race" in checks:  # a compiled build detects races by their effect: order dependence, unique writes
        checks |= {"order", "unique"}
    order_check = None
    if "laws" in checks and spec.is_gpu:
        raise _laws_on_gpu()
    try:
        program = lower(module, sanitize=checks)
        if "order" in checks:
            if spec.is_gpu:
                raise error("--sanitize=order is not supported on GPU targets", rule="T7",
                            hint="run the order sanitizer on the CPU build of the same source")
            order_check = tuple(lower(frontend(text, path), sanitize=checks, point_order=order)
                                for order in ("increasing", "decreasing"))
    except RecursionError:
        raise _too_deep() from None
    manifest = module_manifest(module, display_path(Path(path).name))
    if checks:
        manifest["sanitize"] = sorted(checks)
    try:
        if spec.is_gpu:
            from intentc.codegen.emit_nvptx import emit_gpu_module, optimize_gpu as optimize

            llvm_ir, manifest = emit_gpu_module(program, spec, manifest)
        else:
            llvm_ir = emit_module(program, spec.triple, manifest_json(manifest), order_check,
                                  restore=next((s for s in ("laws", "unique") if s in checks), None))
    except UnsupportedError as exc:
        raise error(f"not supported on target {spec.name}: {exc}", rule="T7") from None
    compiled = Compiled(module, program, llvm_ir, manifest, spec=spec)
    if optimize_ir:
        compiled.optimized = optimize(llvm_ir, spec)
    return compiled


def build(source: str | Path, output: str | Path, target: str | None = None, cpu: str = "native",
          emit_header: bool | None = None, depfile: str | Path | None = None,
          sanitize: tuple[str, ...] = ()) -> list[Path]:
    """Compile ``source`` into ``output`` (.so, .o, .a, .h or .ptx by extension); return the files written.

    Every file is written beside its final name and renamed into place once all of them are
    complete: a failed build leaves no artifact (old or partial) changed."""
    from intentc.codegen import link
    from intentc.codegen.depfile import depfile_bytes
    from intentc.codegen.header import render_header
    from intentc.codegen.optimize import emit_object
    from intentc.resources import runtime_dir

    source, output = Path(source), Path(output)
    kind = output.suffix
    if kind == ".ptx" or str(target or "").startswith("sm_"):
        if "laws" in sanitize:
            raise _laws_on_gpu()
        return _build_ptx(source, output, target, depfile)
    if kind not in (".so", ".o", ".a", ".h"):
        raise error(f"cannot tell what to build from '{display_path(output.name)}'",
                    hint="name the output .so (shared library), .o (object), .a (archive) or .h (header)")
    deps = depfile_bytes(output, [source, *link.runtime_dependencies(kind)]) if depfile is not None else None
    compiled = compile_source(read_source(source), str(source), target, cpu, sanitize=tuple(sanitize))
    header_path = output if kind == ".h" else output.with_suffix(".h")
    with _Artifacts() as artifacts:
        if kind != ".h":
            obj = emit_object(compiled.optimized, compiled.spec)
            make = {".so": link.link_shared, ".o": link.link_relocatable, ".a": link.archive}[kind]
            try:
                make(obj, artifacts.stage(output), compiled.spec)
            except link.LinkError as exc:
                raise error(str(exc)) from None
        if kind == ".h" or emit_header is not False and (emit_header or kind == ".so"):
            header = render_header(compiled.manifest, module_name(str(source)))
            artifacts.write(header_path, header.encode("utf-8"))
            artifacts.write(header_path.parent / "intent_runtime.h",
                            (runtime_dir() / "intent_runtime.h").read_bytes())
        if deps is not None:
            artifacts.write(Path(depfile), deps)
        return artifacts.commit()


class _Artifacts:
    """The files of one build, staged beside their final names (``intentc.base.atomic_files``)
    and renamed into place together by ``commit``; on an exception every staged file is removed.
    A file system error (a folder that cannot be created, a full disk) is a diagnostic."""

    def __init__(self):
        self._staged: list[tuple[Path, Path]] = []  # (temporary, final)
        self._folders: list[Path] = []

    def __enter__(self) -> "_Artifacts":
        return self

    def __exit__(self, kind, exc, tb) -> bool:
        for temporary, _ in self._staged:
            temporary.unlink(missing_ok=True)
        for folder in self._folders:
            shutil.rmtree(folder, ignore_errors=True)
        if isinstance(exc, OSError):
            raise _cannot_write(getattr(exc, "filename", None), exc) from None
        return False

    def stage(self, final: Path) -> Path:
        """An empty file to write ``final``'s content into."""
        try:
            temporary = staged(final)
        except OSError as exc:
            raise _cannot_write(final, exc) from None
        self._staged.append((temporary, final))
        return temporary

    def write(self, final: Path, data: bytes) -> None:
        self.stage(final).write_bytes(data)

    def adopt(self, written: Path, final: Path) -> None:
        """A file already written (in a folder of ``stage_folder``) that becomes ``final``."""
        self._staged.append((written, final))

    def stage_folder(self, near: Path) -> Path:
        """A new empty folder beside ``near``, removed with the build's other temporary files."""
        import tempfile

        try:
            near.parent.mkdir(parents=True, exist_ok=True)
            folder = Path(tempfile.mkdtemp(prefix=f".{near.name[:40]}.", suffix=".tmp", dir=near.parent))
        except OSError as exc:
            raise _cannot_write(near, exc) from None
        self._folders.append(folder)
        return folder

    def commit(self) -> list[Path]:
        done = []
        for temporary, final in self._staged:
            os.replace(temporary, final)
            done.append(final)
        self._staged = []
        return done


def _cannot_write(path, exc: OSError) -> CompileError:
    where = f" {display_path(path)}" if path is not None else ""
    return error(f"cannot write{where}: {exc.strerror or exc}", hint="check that the output folder is writable")


def _laws_on_gpu():
    return error("--sanitize=laws is not supported on GPU targets", rule="T7",
                 hint="run the laws sanitizer on a CPU build of the same source (x86-64 or AArch64)")


def _build_ptx(source: Path, output: Path, target: str | None, depfile) -> list[Path]:
    """``K.ptx`` and its manifest ``K.ptx.json`` for a GPU target (docs/ptx-abi.md)."""
    from intentc.codegen.depfile import depfile_bytes
    from intentc.codegen.emit_llvm import UnsupportedError
    from intentc.codegen.emit_nvptx import write_ptx

    if not str(target or "").startswith("sm_"):
        raise error(f"'{display_path(output.name)}' is PTX, which needs a GPU target",
                    hint="add --target sm_80 (or sm_86, sm_89, sm_90)")
    if output.suffix != ".ptx":
        raise error(f"target {target} produces PTX, not '{display_path(output.name)}'", hint="name the output .ptx")
    deps = depfile_bytes(output, [source]) if depfile is not None else None
    compiled = compile_source(read_source(source), str(source), target)
    with _Artifacts() as artifacts:
        # write_ptx names the PTX in its manifest: write both under their final names in a
        # folder of their own, then rename them beside each other.
        folder = artifacts.stage_folder(output)
        try:
            written = write_ptx(compiled, folder / output.name)
        except UnsupportedError as exc:
            raise error(f"not supported on target {target}: {exc}", rule="T7") from None
        for path in written:
            artifacts.adopt(path, output.parent / path.name)
        if deps is not None:
            artifacts.write(Path(depfile), deps)
        return artifacts.commit()
