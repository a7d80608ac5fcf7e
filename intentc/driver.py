"""From source to artifacts (parse -> sema -> KIR -> lower -> LLVM -> files), and from
source to the reference interpreter (``interpret``)."""
from __future__ import annotations

import contextlib
import functools
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from intentc import build_cache
from intentc.base.atomic_files import staged
from intentc.base.module_search import SearchPath, map_prefix  # noqa: F401 - map_prefix is public here
from intentc.diagnostics import CompileError, error
from intentc.resources import doc_reference
from intentc.source import display_path

if TYPE_CHECKING:  # imported where needed: a cache hit loads no stage of the compiler
    from intentc.kir.core import Module


@dataclass
class Compiled:
    kir: Module  # after lowering passes (kernels with result parameters)
    program: object
    llvm_ir: str
    manifest: dict
    optimized: object = None  # llvmlite binding module
    spec: object = None
    imported: tuple = ()  # the paths of the files the source imports, as found


def module_name(path: str) -> str:
    stem = Path(path).stem
    return re.sub(r"[^A-Za-z0-9_]", "_", stem) or "module"


def frontend(text: str, path: str, module: str | None = None, search: SearchPath | None = None,
             origin: str | None = None) -> Module:
    """Parse and check a source; returns verified KIR (before lowering). ``path`` names the
    source in messages; ``module`` names the module (default: from ``path``'s stem). Imported
    modules are found beside ``origin`` (where the source lies; default ``path``), then on
    ``search``'s include folders (docs/language.md, "Imports")."""
    return _frontend(text, path, module, search, origin)[0]


def _frontend(text: str, path: str, module: str | None, search: SearchPath | None, origin: str | None):
    """(verified KIR, the paths of the imported files)."""
    from intentc.kir.ops import VerifyError
    from intentc.kir.verifier import verify_module
    from intentc.parse.modules import load_program
    from intentc.sema import build_module

    try:
        program = load_program(text, path, origin, search or SearchPath())
        kir = build_module(program, module or module_name(path))
    except RecursionError:  # a safety net: the parser's nesting limit keeps sema well inside the stack
        raise _too_deep() from None
    try:
        verify_module(kir)
    except VerifyError as exc:  # a compiler bug, reported as such rather than a traceback
        raise error(f"internal error: the compiler built invalid KIR: {exc}",
                    hint="please report this with the source file") from None
    return kir, tuple(program.files)


@functools.lru_cache(maxsize=128)
def _cached_frontend(text: str, path: str, search: SearchPath, imported: tuple) -> Module:
    # ``imported``: the texts of the files the source imports, so an edit of one is a new entry
    return frontend(text, path, search=search)


def load_module(source_or_path, include_dirs=()) -> Module:
    """A KIR module from source text, a ``.intent`` path, or a ``Module`` as is. Imports are
    found beside the file (for source text: in the working directory), then in ``include_dirs``."""
    from intentc.kir.core import Module

    if isinstance(source_or_path, Module):
        return source_or_path
    if isinstance(source_or_path, Path):
        source_or_path = str(source_or_path)
    if not isinstance(source_or_path, str):
        raise TypeError(f"expected Intent source text or a path, got {type(source_or_path).__name__}")
    search = search_path(include_dirs)
    if "\n" in source_or_path or not source_or_path.endswith(".intent"):
        text, path = source_or_path, "<source>.intent"
    else:
        text, path = read_source(source_or_path), source_or_path
    return _cached_frontend(text, path, search, _imported_texts(text, path, search))


def search_path(include_dirs=(), prefix_map: tuple[tuple[str, str], ...] = ()) -> SearchPath:
    """The include folders (``-I``) of a build as ``SearchPath`` (a single folder may be given alone)."""
    if isinstance(include_dirs, (str, os.PathLike)):
        include_dirs = (include_dirs,)
    return SearchPath(tuple(os.fspath(d) for d in include_dirs), tuple(prefix_map))


def _imported_texts(text: str, path: str, search: SearchPath) -> tuple | None:
    """(path, text) of every file ``text`` imports as the import lines say, or None when one is
    missing (``intentc.base.module_search.imported_files``)."""
    from intentc.base.module_search import imported_files

    found = imported_files(text, path, search, _read_quickly)
    return None if found is None else tuple(found)


def interpret(source_or_path, kernel: str, *args, out=None, parallel_order: str = "forward", seed: int = 0,
              sanitize: str | None = None, include_dirs=(), **kwargs):
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
    ``intentc.interp.Interpreter(module).call(...)``.) ``include_dirs``: the folders searched
    for imported modules after the one beside the source (``-I``).
    """
    from intentc.interp import interpret_module

    return interpret_module(load_module(source_or_path, include_dirs), kernel, *args, out=out, parallel_order=parallel_order,
                            seed=seed, sanitize=sanitize, **kwargs)


def _too_deep() -> CompileError:
    from intentc.parse.parser import too_deep

    return too_deep(None)


def _read_quickly(path: Path) -> str:
    """``read_source``'s text without importing the parser (a cache hit needs no parser): a
    regular UTF-8 file of at most ``MAX_SOURCE_BYTES`` is read here, anything else goes
    through ``read_source`` for its diagnostic."""
    import stat

    limit = 32 * 1024 * 1024  # intentc.parse.reader.MAX_SOURCE_BYTES (a test keeps them equal)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        try:
            info = os.fstat(fd)
            if stat.S_ISREG(info.st_mode) and info.st_size <= limit:
                data = os.read(fd, limit + 1)
                while len(data) <= limit:
                    more = os.read(fd, limit + 1 - len(data))
                    if not more:
                        return data.decode("utf-8")
                    data += more
        finally:
            os.close(fd)
    except (OSError, UnicodeDecodeError):
        pass
    return read_source(path)


def runtime_dependencies(kind: str) -> list[Path]:
    """The runtime files an artifact of ``kind`` is built from, for its depfile: what
    ``intentc.codegen.link.runtime_dependencies`` lists (a test keeps them equal), without
    importing LLVM, which a cache hit does not need."""
    from intentc.resources import runtime_dir

    source_dir = runtime_dir().resolve()
    header = source_dir / "intent_runtime.h"
    if kind in (".h", ".ll"):
        return [header]
    names = sorted(p.name for p in source_dir.iterdir() if p.suffix in (".c", ".h"))
    return [header] + [source_dir / n for n in names if n != "intent_runtime.h"]


def read_source(path: str | Path) -> str:
    """The text of a source file: only a regular file is read, and it must be UTF-8; anything
    else is a ``CompileError`` (``intentc/parse/reader.py``)."""
    from intentc.parse.reader import read_source as read

    return read(path)


class StageTimer:
    """The wall time of each stage of one build (``-v`` prints them), and an optional callback
    told when a stage starts (the CLI's progress display)."""

    def __init__(self, on_stage=None):
        self.times: list[tuple[str, float]] = []
        self._on_stage = on_stage

    @contextlib.contextmanager
    def stage(self, name: str):
        if self._on_stage is not None:
            self._on_stage(name)
        start = time.perf_counter()
        try:
            yield
        finally:
            self.times.append((name, time.perf_counter() - start))


def compile_source(text: str, path: str, target: str | None = None, cpu: str = "native",
                   optimize_ir: bool = True, sanitize: tuple[str, ...] = (), timer: StageTimer | None = None,
                   module: str | None = None, prefix: str = "", remarks=None, search: SearchPath | None = None,
                   origin: str | None = None) -> Compiled:
    """``path`` is the source's name as messages and the manifest show it; ``module`` the
    module's name (default: from ``path``'s stem); imports are found beside ``origin`` (where
    the source lies, default ``path``) and then on ``search``'s include folders.

    ``sanitize``: "bounds" keeps every bounds check; "order" runs each call twice with the
    points of every I.parallel loop in increasing and decreasing order and fails
    (INTENT_E_SANITIZER) when the written results differ (P1, P3); "unique" checks every
    scatter asserted ``unique=True`` (M4); "race" is "order" and "unique" together; "laws"
    checks the laws of every region_fold / region_scan's helpers under several segmentations
    (R2, R6) and a call it refuses leaves the tensors it may write as they were (CPU targets only).

    ``remarks``: a ``lower.remarks.RemarkSink`` that collects the schedule remarks of the passes
    and of code generation (the result is the same with or without it)."""
    from intentc.codegen.emit_llvm import UnsupportedError, emit_module
    from intentc.codegen.manifest import manifest_json, module_manifest
    from intentc.codegen.optimize import optimize
    from intentc.codegen.target import resolve_target
    from intentc.lower.pipeline import SANITIZERS, lower

    timer = timer or StageTimer()
    with timer.stage("parse and check"):
        module_kir, imported = _frontend(text, path, module, search, origin)
    try:
        spec = resolve_target(target, cpu)
    except ValueError as exc:
        raise error(str(exc), hint=f"{doc_reference('targets.md')} describes each target") from None
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
        with timer.stage("lower"):
            program = lower(module_kir, sanitize=checks, remarks=remarks, target="gpu" if spec.is_gpu else "cpu")
            if "order" in checks:
                if spec.is_gpu:
                    raise error("--sanitize=order is not supported on GPU targets", rule="T7",
                                hint="run the order sanitizer on the CPU build of the same source")
                order_check = tuple(lower(frontend(text, path, module, search, origin), sanitize=checks,
                                          point_order=order)
                                    for order in ("increasing", "decreasing"))
    except RecursionError:
        raise _too_deep() from None
    manifest = module_manifest(module_kir, display_path(Path(path).name))
    if prefix:  # every kernel's C symbol is PREFIX + its name (docs/abi.md, "Names")
        manifest["prefix"] = prefix
        for kernel in manifest["kernels"]:
            kernel["symbol"] = prefix + kernel["name"]
    if checks:
        manifest["sanitize"] = sorted(checks)
    try:
        with timer.stage("emit LLVM IR"):
            if spec.is_gpu:
                from intentc.codegen.emit_nvptx import emit_gpu_module, optimize_gpu as optimize

                llvm_ir, manifest = emit_gpu_module(program, spec, manifest)
            else:
                llvm_ir = emit_module(program, spec.triple, manifest_json(manifest), order_check,
                                      restore=next((s for s in ("laws", "unique") if s in checks), None))
    except UnsupportedError as exc:
        raise error(f"not supported on target {spec.name}: {exc}", rule="T7") from None
    compiled = Compiled(module_kir, program, llvm_ir, manifest, spec=spec, imported=imported)
    if optimize_ir:
        with timer.stage("optimize"):
            compiled.optimized = optimize(llvm_ir, spec)  # noqa: F811 - the GPU one where imported
        if not spec.is_gpu:  # the exported symbols as the ABI names them (kernels, a weak manifest)
            from intentc.codegen.link import prepare_exports

            prepare_exports(compiled.optimized, manifest)
    if remarks is not None:
        from intentc.codegen.schedule_remarks import codegen_remarks

        codegen_remarks(program, compiled.optimized, spec, remarks)
    return compiled


def schedule_remarks(text: str, path: str, target: str | None = None, cpu: str = "native",
                     sanitize: tuple[str, ...] = (), search: "SearchPath | None" = None) -> list:
    """The schedule remarks of a source (``lower.remarks.Remark``, in source order): what
    ``build`` decides about each loop nest for the target, and why an opportunity was missed.
    It compiles the source in memory (optimised, so that the vector widths are LLVM's) and
    writes nothing; a build's artifacts are the same with or without them."""
    from intentc.lower.remarks import RemarkSink

    sink = RemarkSink()
    compile_source(text, path, target, cpu, sanitize=sanitize, remarks=sink, search=search)
    return sink.sorted()


KINDS = (".so", ".o", ".a", ".h", ".ll")


@dataclass(frozen=True)
class _Plan:
    """What one build writes: each role's final path (roles name the files of a cache entry)."""

    kind: str
    finals: dict  # role -> Path
    module: str
    prefix: str = ""  # of the kernels' C symbols (--prefix)


def _plan(source: Path, output: Path, emit_header: bool | None, header: str | Path | None,
          emit_llvm: bool | str | Path | None, prefix: str = "") -> _Plan:
    kind = output.suffix
    finals = {}
    if kind not in (".h", ".ll"):
        finals[f"artifact{kind}"] = output
    if kind == ".ll":
        finals["module.ll"] = output
    elif emit_llvm:
        finals["module.ll"] = Path(emit_llvm) if isinstance(emit_llvm, (str, Path)) else output.with_suffix(".ll")
    if kind == ".h" or header is not None or (emit_header is not False and (emit_header or kind == ".so")):
        header_path = output if kind == ".h" else Path(header) if header is not None else output.with_suffix(".h")
        finals["header.h"] = header_path
        finals["intent_runtime.h"] = header_path.parent / "intent_runtime.h"
    return _Plan(kind, finals, module_name(str(source)), prefix)


# Roles whose file keeps its modification time when its content is unchanged: what includes a
# header is rebuilt only when the interface it declares changes.
_KEEP_WHEN_UNCHANGED = ("header.h", "intent_runtime.h")


def build(source: str | Path, output: str | Path, target: str | None = None, cpu: str = "native",
          emit_header: bool | None = None, depfile: str | Path | None = None,
          sanitize: tuple[str, ...] = (), *, header: str | Path | None = None,
          emit_llvm: bool | str | Path | None = None, file_prefix_map: tuple[tuple[str, str], ...] = (),
          cache: bool = False, timer: StageTimer | None = None, prefix: str = "",
          include_dirs=()) -> list[Path]:
    """Compile ``source`` into ``output`` (.so, .o, .a, .h, .ll or .ptx by extension); return
    the files written.

    ``header``: where the header goes (default: beside OUTPUT, for a .so or with
    ``emit_header``); a header (and ``intent_runtime.h``) whose content is unchanged is left
    as it is, so its modification time says when the interface last changed. ``emit_llvm``:
    also write the optimised LLVM IR (True: OUTPUT with ``.ll``, or a path). Messages compiled
    into the artifacts name the source as given, through ``file_prefix_map`` (``map_prefix``).
    ``cache``: use the build cache (``intentc.build_cache``). ``prefix``: the kernels' C symbols
    (and header declarations) are ``prefix`` + name; Python still calls them by name.
    ``include_dirs``: the folders searched for imported modules after the source's own (``-I``);
    the depfile lists every imported file and the cache key holds each one's content.

    Every file is written beside its final name and renamed into place once all of them are
    complete: a failed build leaves no artifact (old or partial) changed, and two builds of
    one output rename their sets one after the other (a lock per output), never interleaved."""
    from intentc.codegen.depfile import depfile_bytes

    timer = timer or StageTimer()
    source, output = Path(source), Path(output)
    shown = map_prefix(str(source), tuple(file_prefix_map))
    search = search_path(include_dirs, file_prefix_map)
    kind = output.suffix
    if kind == ".ptx" or str(target or "").startswith("sm_"):
        if "laws" in sanitize:
            raise _laws_on_gpu()
        if prefix:
            raise error("--prefix names C symbols; a PTX module has none",
                        hint="leave out --prefix for GPU targets (docs/ptx-abi.md)")
        return _build_ptx(source, output, target, depfile, shown, timer, cache, search)
    if kind not in KINDS:
        raise error(f"cannot tell what to build from '{display_path(output.name)}'",
                    hint="name the output .so (shared library), .o (object), .a (archive), .h (header) "
                         "or .ll (LLVM IR)")
    if prefix:
        _check_prefix(prefix)
    plan = _plan(source, output, emit_header, header, emit_llvm, prefix)
    with timer.stage("read"):
        text = _read_quickly(source)
        imported = _imported_texts(text, str(source), search)
    files, key = None, None
    if cache and imported is not None:
        with timer.stage("cache lookup"):
            key = _cache_key(text, shown, plan, output, target, cpu, sanitize, _shown_imports(imported, search))
            hit = build_cache.lookup(key)
            if hit is not None and set(hit) == set(plan.finals):
                files = {role: path.read_bytes() for role, path in hit.items()}
    imported_paths = [path for path, _ in imported or ()]
    if files is None:
        files, actual = _compile_files(text, shown, plan, target, cpu, sanitize, timer, search, str(source))
        # The import lines read without the parser must name what the parser found, or the
        # key would miss a file: a build they disagree on is not cached.
        agree = list(actual) == imported_paths
        imported_paths = list(actual)
        if cache and key is not None and agree:
            with timer.stage("cache store"):
                build_cache.store(key, files)
    deps = None
    if depfile is not None:
        from intentc.codegen.depfile import depfile_bytes

        deps = depfile_bytes(output, [source, *map(Path, imported_paths), *runtime_dependencies(kind)])
    with timer.stage("write"), _Artifacts() as artifacts:
        for role, final in plan.finals.items():
            # The output itself always gets a new modification time (what Make compares).
            artifacts.write(final, files[role], keep_unchanged=role in _KEEP_WHEN_UNCHANGED and final != output)
        if deps is not None:
            artifacts.write(Path(depfile), deps)
        return artifacts.commit(lock=output)


def _shown_imports(imported, search: SearchPath) -> tuple:
    """The imported files as the key holds them: the path messages show and the text."""
    return tuple((search.shown(path), text) for path, text in imported)


def _cache_key(text: str, shown: str, plan: _Plan, output: Path, target, cpu: str, sanitize,
               imported: tuple = ()) -> str:
    key = build_cache.Key().add("source", text).add("path", shown).add("module", plan.module)
    for path, imported_text in imported:  # (shown path, text) of each imported file
        key.add("import-path", path).add("import-source", imported_text)
    key.add("kind", plan.kind).add("output", output.name)
    for role, final in sorted(plan.finals.items()):  # names that may appear in the artifacts (a soname)
        key.add(f"role:{role}", final.name)
    key.add("target", str(target or "host")).add("cpu", cpu).add("sanitize", ",".join(sorted(set(sanitize))))
    if plan.prefix:
        key.add("prefix", plan.prefix)
    return key.add_toolchain(cpu).hexdigest()


def _compile_files(text: str, shown: str, plan: _Plan, target, cpu: str, sanitize, timer: StageTimer,
                   search: SearchPath | None = None, origin: str | None = None) -> tuple[dict, tuple]:
    """The bytes of every file of ``plan``, by role, and the paths of the files the source imports."""
    import tempfile

    from intentc.codegen import link
    from intentc.codegen.header import render_header
    from intentc.codegen.optimize import emit_object
    from intentc.resources import runtime_dir

    compiled = compile_source(text, shown, target, cpu, sanitize=tuple(sanitize), timer=timer, module=plan.module,
                              prefix=plan.prefix, search=search, origin=origin)
    files = {}
    if "module.ll" in plan.finals:  # before the object: emitting it lets LLVM's code generator change the module
        files["module.ll"] = str(compiled.optimized).encode("utf-8")
    for role in plan.finals:
        if role.startswith("artifact"):
            with timer.stage("emit object"):
                obj = emit_object(compiled.optimized, compiled.spec)
            make = {".so": link.link_shared, ".o": link.link_relocatable, ".a": link.archive}[plan.kind]
            with timer.stage("link"), tempfile.TemporaryDirectory(prefix="intentc-out-") as tmp:
                # Linked under the output's own name: what a linker records of it (a soname) is the same.
                linked = Path(tmp) / plan.finals[role].name
                try:
                    make(obj, linked, compiled.spec)
                except link.LinkError as exc:
                    raise error(str(exc)) from None
                files[role] = linked.read_bytes()
        elif role == "header.h":
            files[role] = render_header(compiled.manifest, plan.module).encode("utf-8")
        elif role == "intent_runtime.h":
            files[role] = (runtime_dir() / "intent_runtime.h").read_bytes()
    return files, compiled.imported


def compile_text(source_text: str, name: str = "kernels", target: str | None = None, cpu: str = "native",
                 sanitize: tuple[str, ...] = (), cache: bool | None = None, include_dirs=()) -> Path:
    """A shared library built from ``source_text`` (messages name it ``<name>.intent``), at a
    path of its own for each content and flags: the cache entry's file, or, with the cache
    off, a new temporary folder. Loading it never returns a library loaded from an older text.
    Imported modules are found in the working directory, then in ``include_dirs``; the key
    holds each imported file's content, so an edit of one gives a new library."""
    import tempfile

    if not isinstance(source_text, str):
        raise TypeError(f"expected Intent source text, got {type(source_text).__name__}")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name or ""):
        raise ValueError(f"name must be an identifier (it names the module), got {name!r}")
    if str(target or "").startswith("sm_"):
        raise ValueError("intentc.compile builds a shared library for a CPU target; for PTX run "
                         "`intentc build K.intent --target sm_90 -o K.ptx` (docs/ptx-abi.md)")
    use_cache = build_cache.enabled() if cache is None else cache
    shown = f"{name}.intent"
    output = Path(f"{name}.so")
    plan = _Plan(".so", {"artifact.so": output}, name)
    search = search_path(include_dirs)
    imported = _imported_texts(source_text, shown, search)
    use_cache = use_cache and imported is not None
    key = _cache_key(source_text, shown, plan, output, target, cpu, sanitize, _shown_imports(imported or (), search))
    if use_cache:
        hit = build_cache.lookup(key)
        if hit is not None and set(hit) == set(plan.finals):
            return hit["artifact.so"]
    files, actual = _compile_files(source_text, shown, plan, target, cpu, sanitize, StageTimer(), search, shown)
    if use_cache and list(actual) == [path for path, _ in imported]:
        stored = build_cache.store(key, files)
        if stored is not None:
            return stored["artifact.so"]
    folder = Path(tempfile.mkdtemp(prefix=f"intentc-{key[:12]}-"))
    (folder / output.name).write_bytes(files["artifact.so"])
    return folder / output.name


class _Artifacts:
    """The files of one build, staged beside their final names (``intentc.base.atomic_files``)
    and renamed into place together by ``commit``; on an exception every staged file is removed.
    A file system error (a folder that cannot be created, a full disk) is a diagnostic."""

    def __init__(self):
        self._staged: list[tuple[Path, Path]] = []  # (temporary, final)
        self._kept: list[Path] = []  # finals that already held their content

    def __enter__(self) -> "_Artifacts":
        return self

    def __exit__(self, kind, exc, tb) -> bool:
        for temporary, _ in self._staged:
            temporary.unlink(missing_ok=True)
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

    def write(self, final: Path, data: bytes, keep_unchanged: bool = False) -> None:
        """Stage ``data`` as ``final``'s content; with ``keep_unchanged``, a ``final`` that
        already holds these bytes is left as it is (its modification time too)."""
        if keep_unchanged and _holds(final, data):
            self._kept.append(final)
            return
        self.stage(final).write_bytes(data)

    def commit(self, lock: Path | None = None) -> list[Path]:
        """Rename every staged file into place; return the files written (those kept as
        they were are not among them). ``lock``: the output whose lock the renames hold, so
        that concurrent builds of one output replace the whole set one after the other."""
        with _output_lock(lock):
            done = []
            for temporary, final in self._staged:
                os.replace(temporary, final)
                done.append(final)
        self._staged = []
        return done


def _holds(path: Path, data: bytes) -> bool:
    try:
        return path.stat().st_size == len(data) and path.read_bytes() == data
    except OSError:
        return False


@contextlib.contextmanager
def _output_lock(output: Path | None):
    """An exclusive lock named after ``output``'s absolute path, in the cache folder (no lock
    file lands beside the artifacts). Where no lock can be taken the renames go ahead unlocked."""
    handle = None
    if output is not None:
        try:
            import fcntl
            import hashlib

            folder = build_cache.root() / "locks"
            folder.mkdir(parents=True, exist_ok=True)
            name = hashlib.sha256(os.fsencode(os.path.abspath(output))).hexdigest()[:32]
            handle = open(folder / name, "a")
            fcntl.flock(handle, fcntl.LOCK_EX)
        except (OSError, ImportError):
            if handle is not None:
                handle.close()
            handle = None
    try:
        yield
    finally:
        if handle is not None:
            handle.close()  # releases the lock


def _check_prefix(prefix: str) -> None:
    """A prefix makes C identifiers of the kernels' names: it must begin one, and not be the runtime's."""
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", prefix):
        raise error(f"--prefix '{prefix}' is not the start of a C identifier",
                    hint="use letters, digits and underscores, beginning with a letter, e.g. --prefix mylib_")
    if prefix.lower().startswith("intent"):
        raise error(f"--prefix '{prefix}' begins like the runtime's names (intent_*, INTENT_*, Intent*)",
                    hint="choose another prefix, e.g. your library's name and an underscore")
    from intentc.codegen.header import cxx_namespace
    from intentc.sema.c_names import C_KEYWORDS, CXX_KEYWORDS, MACROS, TYPE_NAMES

    namespace = cxx_namespace(prefix)
    if namespace in C_KEYWORDS or namespace in CXX_KEYWORDS or namespace in ("std", "posix") \
            or namespace in MACROS or namespace in TYPE_NAMES:
        raise error(f"--prefix '{prefix}' would name the header's C++ namespace '{namespace}', which is a "
                    f"keyword, a reserved namespace or a name of the C headers",
                    hint="choose another prefix, e.g. your library's name and an underscore")


def _cannot_write(path, exc: OSError) -> CompileError:
    where = f" {display_path(path)}" if path is not None else ""
    return error(f"cannot write{where}: {exc.strerror or exc}", hint="check that the output folder is writable")


def _laws_on_gpu():
    return error("--sanitize=laws is not supported on GPU targets", rule="T7",
                 hint="run the laws sanitizer on a CPU build of the same source (x86-64 or AArch64)")


def _build_ptx(source: Path, output: Path, target: str | None, depfile, shown: str, timer: StageTimer,
               cache: bool = False, search: SearchPath = SearchPath()) -> list[Path]:
    """``K.ptx`` and its manifest ``K.ptx.json`` for a GPU target (docs/ptx-abi.md)."""
    import tempfile

    from intentc.codegen.depfile import depfile_bytes
    from intentc.codegen.emit_llvm import UnsupportedError
    from intentc.codegen.emit_nvptx import write_ptx

    if not str(target or "").startswith("sm_"):
        raise error(f"'{display_path(output.name)}' is PTX, which needs a GPU target",
                    hint="add --target sm_80 (or sm_86, sm_89, sm_90)")
    if output.suffix != ".ptx":
        raise error(f"target {target} produces PTX, not '{display_path(output.name)}'", hint="name the output .ptx")
    with timer.stage("read"):
        text = _read_quickly(source)
        imported = _imported_texts(text, str(source), search)
    module = module_name(str(source))
    files, key = None, None
    if cache and imported is not None:
        with timer.stage("cache lookup"):
            key = build_cache.Key().add("source", text).add("path", shown).add("module", module)
            for path, imported_text in _shown_imports(imported, search):
                key.add("import-path", path).add("import-source", imported_text)
            key = key.add("kind", ".ptx").add("output", output.name).add("target", str(target))
            key = key.add_toolchain("native").hexdigest()
            hit = build_cache.lookup(key)
            if hit is not None and output.name in hit:
                files = {name: path.read_bytes() for name, path in hit.items()}
    imported_paths = [path for path, _ in imported or ()]
    if files is None:
        compiled = compile_source(text, shown, target, timer=timer, module=module, search=search, origin=str(source))
        # write_ptx names the PTX in its manifest: both are written under their final names
        # in a folder of their own.
        with timer.stage("emit PTX"), tempfile.TemporaryDirectory(prefix="intentc-ptx-") as tmp:
            try:
                written = write_ptx(compiled, Path(tmp) / output.name)
            except UnsupportedError as exc:
                raise error(f"not supported on target {target}: {exc}", rule="T7") from None
            files = {path.name: path.read_bytes() for path in written}
        agree = list(compiled.imported) == imported_paths
        imported_paths = list(compiled.imported)
        if cache and key is not None and agree:
            with timer.stage("cache store"):
                build_cache.store(key, files)
    deps = depfile_bytes(output, [source, *map(Path, imported_paths)]) if depfile is not None else None
    with timer.stage("write"), _Artifacts() as artifacts:
        for name, data in files.items():
            artifacts.write(output.parent / name, data)
        if deps is not None:
            artifacts.write(Path(depfile), deps)
        return artifacts.commit(lock=output)
