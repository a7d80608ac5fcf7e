"""From source to artifacts (parse -> sema -> KIR -> lower -> LLVM -> files), and from
source to the reference interpreter (``interpret``)."""
from __future__ import annotations

import functools
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from intentc.diagnostics import CompileError, error
from intentc.kir.core import Module


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
    except RecursionError:
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
    return error("the program nests too deeply for the compiler (expressions or blocks)",
                 hint="split a deeply nested expression or block into several statements or helpers")


def read_source(path: str | Path) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"no such file: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"cannot read {path}: {exc}") from None


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
    manifest = module_manifest(module, Path(path).name)
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
    """Compile ``source`` into ``output`` (.so, .o, .a, .h or .ptx by extension); return the files written."""
    from intentc.codegen import link
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
        raise error(f"cannot tell what to build from '{output.name}'",
                    hint="name the output .so (shared library), .o (object), .a (archive) or .h (header)")
    compiled = compile_source(read_source(source), str(source), target, cpu, sanitize=tuple(sanitize))
    written: list[Path] = []
    header_path = output if kind == ".h" else output.with_suffix(".h")
    try:
        if kind != ".h":
            obj = emit_object(compiled.optimized, compiled.spec)
            if kind == ".so":
                link.link_shared(obj, output, compiled.spec)
            elif kind == ".o":
                link.link_relocatable(obj, output, compiled.spec)
            else:
                link.archive(obj, output, compiled.spec)
            written.append(output)
    except link.LinkError as exc:
        raise error(str(exc)) from None
    if kind == ".h" or emit_header is not False and (emit_header or kind == ".so"):
        header_path.parent.mkdir(parents=True, exist_ok=True)
        header_path.write_text(render_header(compiled.manifest, module_name(str(source))))
        shutil.copyfile(runtime_dir() / "intent_runtime.h", header_path.parent / "intent_runtime.h")
        written += [header_path, header_path.parent / "intent_runtime.h"]
    if depfile is not None:
        from intentc.codegen.depfile import write_depfile

        written.append(write_depfile(depfile, output, [source, *link.runtime_dependencies(kind)]))
    return written


def _laws_on_gpu():
    return error("--sanitize=laws is not supported on GPU targets", rule="T7",
                 hint="run the laws sanitizer on a CPU build of the same source (x86-64 or AArch64)")


def _build_ptx(source: Path, output: Path, target: str | None, depfile) -> list[Path]:
    """``K.ptx`` and its manifest ``K.ptx.json`` for a GPU target (docs/ptx-abi.md)."""
    from intentc.codegen.emit_llvm import UnsupportedError
    from intentc.codegen.emit_nvptx import write_ptx

    if not str(target or "").startswith("sm_"):
        raise error(f"'{output.name}' is PTX, which needs a GPU target",
                    hint="add --target sm_80 (or sm_86, sm_89, sm_90)")
    if output.suffix != ".ptx":
        raise error(f"target {target} produces PTX, not '{output.name}'", hint="name the output .ptx")
    compiled = compile_source(read_source(source), str(source), target)
    try:
        written = write_ptx(compiled, output)
    except UnsupportedError as exc:
        raise error(f"not supported on target {target}: {exc}", rule="T7") from None
    if depfile is not None:
        from intentc.codegen.depfile import write_depfile

        written.append(write_depfile(depfile, output, [source]))
    return written
