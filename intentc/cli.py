"""The ``intentc`` command line (click): build, check, explain."""
from __future__ import annotations

import sys
import time

import click

from intentc import __version__
from intentc.diagnostics import CompileError, Diagnostic, render_rich

STAGES = ("ast", "kir", "lowered", "physical", "schedule", "llvm", "llvm-opt", "asm")
REMARK_CHOICES = ("all", "applied", "missed", "analysis")


# --color: "auto" (colour when stderr is a terminal; NO_COLOR and FORCE_COLOR are honoured),
# "always" or "never". Set by the option of the group or of a command.
COLOR_CHOICES = ("auto", "always", "never")
_color = {"mode": "auto"}


def _console():
    from rich.console import Console

    mode = _color["mode"]
    if mode == "always":
        return Console(stderr=True, highlight=False, force_terminal=True, color_system="standard")
    if mode == "never":
        return Console(stderr=True, highlight=False, no_color=True, color_system=None)
    return Console(stderr=True, highlight=False)


def _set_color(ctx, param, value):
    if value is not None:
        _color["mode"] = value
    elif ctx.parent is None:  # the group runs first: each invocation starts from "auto"
        _color["mode"] = "auto"
    return value


def color_option(command):
    return click.option("--color", type=click.Choice(COLOR_CHOICES), default=None, expose_value=False,
                        callback=_set_color, is_eager=True,
                        help="Colour diagnostics: auto (when stderr is a terminal), always, never.")(command)


def _with_installed_docs(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """Diagnostics whose ``docs/NAME.md`` references name the copy installed with the package
    (``intentc.resources.doc_reference``) where intentc does not run from a source checkout."""
    import dataclasses
    import re

    from intentc.resources import doc_reference

    if doc_reference("cli.md") == "docs/cli.md":  # a checkout: docs/ is where the text says
        return diagnostics
    pattern = re.compile(r"(?<![\w/.])docs/([A-Za-z0-9_-]+\.md)")

    def fix(text):
        return pattern.sub(lambda m: doc_reference(m.group(1)), text) if text else text

    return [dataclasses.replace(d, message=fix(d.message), hint=fix(d.hint), notes=tuple(fix(n) for n in d.notes))
            for d in diagnostics]


def _fail(exc: CompileError) -> None:
    render_rich(_with_installed_docs(exc.diagnostics), _console())
    count = len(exc.diagnostics)
    _console().print(f"[bold red]{count} error{'s' if count != 1 else ''}[/]")
    sys.exit(1)


# Exit status of a failure that is the compiler's own fault (1: the program's errors, 2: usage).
INTERNAL_ERROR_EXIT = 3


def _diagnosed(command):
    """Run a command so that it ends in its output, diagnostics (exit 1) or, for a bug of the
    compiler, a one-paragraph internal-error report (exit 3) instead of a Python traceback
    (``INTENTC_TRACEBACK=1`` lets the traceback through, for debugging)."""
    import functools
    import os

    @functools.wraps(command)
    def run(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except CompileError as exc:
            _fail(exc)
        except (click.exceptions.Exit, click.ClickException, click.Abort, KeyboardInterrupt):
            raise
        except RecursionError:
            from intentc.parse.parser import too_deep

            _fail(too_deep(None))
        except MemoryError:
            _fail(CompileError([Diagnostic("out of memory", hint="the program is too large for this machine")]))
        except Exception as exc:  # noqa: BLE001 - the last line of defence against a traceback
            if os.environ.get("INTENTC_TRACEBACK"):
                raise
            from rich.markup import escape

            from intentc.source import display_path

            console = _console()
            console.print(f"[bold red]internal error:[/] {escape(display_path(f'{type(exc).__name__}: {exc}'))}",
                          highlight=False, soft_wrap=True)
            console.print("[cyan]  hint: this is a bug in intentc; please report it with the source file "
                          "(INTENTC_TRACEBACK=1 shows where it happened)[/]", highlight=False, soft_wrap=True)
            sys.exit(INTERNAL_ERROR_EXIT)

    return run


def _data_folder(name: str) -> str:
    from intentc.resources import data_dir

    return str(data_dir(name))


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, invoke_without_command=True)
@click.version_option(__version__, prog_name="intentc")
@click.option("--cmake-dir", is_flag=True, help="Print the folder of intentc's CMake package and exit.")
@click.option("--make-dir", is_flag=True, help="Print the folder of intentc.mk (Make rules) and exit.")
@click.option("--docs-dir", is_flag=True, help="Print the folder of intentc's documentation (the docs/*.md that "
                                                "hints name) and exit.")
@color_option
@click.pass_context
def main(ctx, cmake_dir, make_dir, docs_dir):
    """intentc: the ahead-of-time compiler for Intent kernels."""
    folder = "cmake" if cmake_dir else "make" if make_dir else "docs" if docs_dir else None
    if folder:
        try:
            click.echo(_data_folder(folder))
        except FileNotFoundError as exc:
            raise click.ClickException(str(exc))
        return
    if ctx.invoked_subcommand is None:  # a usage error, as for any missing argument
        click.echo(ctx.get_help(), err=True)
        ctx.exit(2)


def remarks_options(command):
    """``--remarks[=KIND]`` and ``--remarks-format``: the schedule remarks (docs/cli.md)."""
    command = click.option("--remarks-format", type=click.Choice(("text", "json")), default="text", show_default=True,
                           help="How --remarks prints: like diagnostics (text) or one JSON document (json).")(command)
    return click.option("--remarks", type=click.Choice(REMARK_CHOICES), is_flag=False, flag_value="all", default=None,
                        help="Print the schedule remarks on stderr: for each loop nest, whether and how it is "
                             "threaded and vectorised, the checks that stay and every missed opportunity with "
                             "its reason. --remarks=missed (or applied, analysis) prints one kind.")(command)


def _print_remarks(source, target, cpu, sanitize, which, form, include_dirs=(), out_err: bool = True) -> None:
    """Compute and print the schedule remarks of SOURCE (stderr, or stdout for explain)."""
    from intentc.driver import read_source, schedule_remarks, search_path
    from intentc.lower.remarks import render_json, render_text, select

    chosen = select(schedule_remarks(read_source(source), source, target, cpu, sanitize=tuple(sanitize),
                                     search=search_path(include_dirs)), which)
    if form == "json":
        click.echo(render_json(chosen), nl=False, err=out_err)
    elif out_err:
        for remark in chosen:
            render_rich(_with_installed_docs([remark.diagnostic()]), _console())
    else:
        click.echo(render_text(chosen), nl=False)


def include_option(command):
    return click.option("-I", "--include-dir", "include_dirs", multiple=True, metavar="DIR",
                        type=click.Path(file_okay=False),
                        help="Also look for imported modules in DIR, after the folder of the importing file "
                             "(repeatable, searched in order; docs/language.md, \"Imports\").")(command)


def _prefix_pair(ctx, param, values):
    pairs = []
    for value in values:
        old, sep, new = value.partition("=")
        if not sep or not old:
            raise click.BadParameter(f"'{value}' is not OLD=NEW", ctx=ctx, param=param)
        pairs.append((old, new))
    return tuple(pairs)


@main.command()
@click.argument("source", type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="Output file: .so (shared library + header), .o (object), .a (archive), .h (header), "
                   ".ll (optimised LLVM IR) or .ptx (PTX + .ptx.json manifest, with --target sm_XX).")
@click.option("--target", default="host", show_default=True,
              help="Target: host, x86_64-linux-gnu or aarch64-linux-gnu (also aarch64, arm64); "
                   "sm_80, sm_86, sm_89 or sm_90 (NVIDIA GPU, PTX).")
@click.option("--cpu", default="native", show_default=True,
              help="CPU to tune for (LLVM name); native: this machine's, or a cross target's baseline.")
@click.option("--emit-header/--no-emit-header", default=None,
              help="Also write OUTPUT's header (default: yes for .so).")
@click.option("--header", "header", type=click.Path(dir_okay=False), default=None,
              help="Write the header here (implies --emit-header; intent_runtime.h goes beside it). A header "
                   "whose content is unchanged is not rewritten.")
@click.option("--emit-llvm", is_flag=True, help="Also write the optimised LLVM IR (OUTPUT with suffix .ll).")
@click.option("--depfile", type=click.Path(dir_okay=False), help="Write Make-style dependencies here.")
@click.option("--file-prefix-map", "prefix_map", multiple=True, callback=_prefix_pair, metavar="OLD=NEW",
              help="In the source path that messages compiled into the artifacts show, replace a leading OLD "
                   "by NEW (as gcc's -ffile-prefix-map; the last matching one applies). Repeatable.")
@click.option("--prefix", default="", metavar="NAME",
              help="Export each kernel as the C symbol NAME + its name (e.g. --prefix mylib_ gives mylib_saxpy), "
                   "in the library and its header; Python still calls it by its name. See docs/abi.md, \"Names\".")
@click.option("--no-cache", is_flag=True,
              help="Do not use the build cache (also: INTENTC_NO_CACHE=1). See docs/cli.md.")
@click.option("-v", "--verbose", is_flag=True, help="Print the files written and the time of each stage.")
@click.option("--sanitize", multiple=True, type=click.Choice(["bounds", "order", "unique", "race", "laws"]),
              help="bounds: keep every bounds check; order: run each call with the parallel points in "
                   "increasing and decreasing order and fail (INTENT_E_SANITIZER) if the results differ; "
                   "unique: check every scatter asserted unique=True (M4); race: order and unique; "
                   "laws: evaluate every region_fold/region_scan under several segmentations and fail "
                   "(INTENT_E_SANITIZER, naming the law and helpers) if a helper law does not hold (R2, R6; "
                   "CPU targets). Repeatable.")
@click.option("--verify-each", is_flag=True, help="Verify the IR after every lowering pass (debugging).")
@remarks_options
@include_option
@color_option
@_diagnosed
def build(source, output, target, cpu, emit_header, header, emit_llvm, depfile, prefix_map, prefix, no_cache,
          verbose, sanitize, verify_each, remarks, remarks_format, include_dirs):
    """Compile SOURCE into OUTPUT."""
    from intentc import build_cache
    from intentc.driver import StageTimer, build as build_files

    if verify_each:
        _request_verify_each()
    start = time.perf_counter()
    progress = _Progress()
    timer = StageTimer(on_stage=progress.stage)
    try:
        written = build_files(source, output, target, cpu, emit_header, depfile, sanitize=tuple(sanitize),
                              header=header, emit_llvm=emit_llvm, file_prefix_map=prefix_map,
                              cache=not no_cache and build_cache.enabled(), timer=timer, prefix=prefix,
                              include_dirs=include_dirs)
    except CompileError as exc:
        progress.stop()
        _fail(exc)
    finally:
        progress.stop()
    if remarks:
        _print_remarks(source, target, cpu, sanitize, remarks, remarks_format, include_dirs)
    if verbose:
        from intentc.source import display_path

        for path in written:
            click.echo(f"wrote {display_path(path)}")
        for name, seconds in timer.times:
            click.echo(f"  {name:<16} {seconds * 1000:9.1f} ms")
        hit = any(name == "cache lookup" for name, _ in timer.times) and \
            not any(name == "cache store" for name, _ in timer.times)
        click.echo(f"built in {time.perf_counter() - start:.3f} s{' (from the build cache)' if hit else ''}")


class _Progress:
    """A spinner naming the current stage, on stderr, for a build that has taken over
    ``DELAY`` seconds, and only when stderr is a terminal (logs and pipes stay clean)."""

    DELAY = 2.0

    def __init__(self):
        import threading

        self._name = "starting"
        self._status = None
        self._lock = threading.Lock()
        self._timer = None
        if sys.stderr.isatty():
            self._timer = threading.Timer(self.DELAY, self._show)
            self._timer.daemon = True
            self._timer.start()

    def _show(self):
        with self._lock:
            if self._timer is None:
                return
            self._status = _console().status(f"intentc: {self._name}")
            self._status.start()

    def stage(self, name: str) -> None:
        with self._lock:
            self._name = name
            if self._status is not None:
                self._status.update(f"intentc: {name}")

    def stop(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if self._status is not None:
                self._status.stop()
                self._status = None


def _request_verify_each() -> None:
    """Turn on the lowering pipeline's verification after every pass, for this process."""
    import os

    from intentc.lower.pipeline import VERIFY_EACH_ENV

    os.environ[VERIFY_EACH_ENV] = "1"


@main.command()
@click.argument("source", type=click.Path(dir_okay=False))
@click.option("--target", default="host", show_default=True,
              help="The target whose lowering is checked too (what `build --target` would refuse).")
@click.option("--cpu", default="native", show_default=True)
@remarks_options
@include_option
@color_option
@_diagnosed
def check(source, target, cpu, remarks, remarks_format, include_dirs):
    """Check SOURCE and print its diagnostics (exit 1 on errors): every error `build` would
    report for the target, up to LLVM IR (no optimisation, no object code, nothing written).
    With --remarks, also the schedule remarks (which optimise, to know the vector widths)."""
    from intentc.driver import compile_source, read_source, search_path

    try:
        compiled = compile_source(read_source(source), source, target=target, cpu=cpu, optimize_ir=False,
                                  search=search_path(include_dirs))
    except CompileError as exc:
        _fail(exc)
    if remarks:
        _print_remarks(source, target, cpu, (), remarks, remarks_format, include_dirs)
    from intentc.source import display_path

    count = len(compiled.kir.kernels)
    click.echo(f"{display_path(source)}: ok ({count} kernel{'s' if count != 1 else ''})")


def _known_pass(ctx, param, value):
    """A usage error (exit 2) for a pass name that does not exist, listing those that do."""
    if value is None:
        return None
    from intentc.lower.pipeline import PASS_NAMES

    if value not in (*PASS_NAMES, "all"):
        raise click.BadParameter(f"no lowering pass is named '{value}'; the passes, in order: "
                                 + ", ".join(PASS_NAMES) + " (or 'all')", ctx=ctx, param=param)
    return value


@main.command()
@click.argument("source", type=click.Path(dir_okay=False))
@click.option("--stage", type=click.Choice(STAGES), default="kir", show_default=True,
              help="ast: syntax tree; kir: KIR from sema; lowered: KIR after the KIR passes; physical: the "
                   "loop program; schedule: the schedule remarks of every loop nest (as build --remarks); "
                   "llvm / llvm-opt: LLVM IR before / after optimisation; asm: assembly.")
@click.option("--print-after", type=str, default=None, callback=_known_pass, metavar="PASS",
              help="Print the IR after this lowering pass (or 'all'); docs/passes.md lists them.")
@click.option("--verify-each", is_flag=True, help="Verify the IR after every lowering pass (debugging).")
@click.option("--target", default="host", show_default=True)
@click.option("--cpu", default="native", show_default=True)
@click.option("--remarks-format", type=click.Choice(("text", "json")), default="text", show_default=True,
              help="With --stage schedule: text (like diagnostics) or one JSON document.")
@include_option
@color_option
@_diagnosed
def explain(source, stage, print_after, verify_each, target, cpu, remarks_format, include_dirs):
    """Show SOURCE at one stage of the pipeline."""
    if verify_each:
        _request_verify_each()
    from intentc.driver import compile_source, frontend, read_source, search_path

    search = search_path(include_dirs)
    try:
        text = read_source(source)
        if print_after:
            from intentc.lower.pipeline import lower

            lower(frontend(text, source, search=search), print_after=print_after,
                  log=lambda name, ir: click.echo(f"// ----- after {name} -----\n{ir}"))
            return
        if stage == "schedule":
            _print_remarks(source, target, cpu, (), "all", remarks_format, include_dirs, out_err=False)
        elif stage == "ast":
            from intentc.parse import parse_source

            click.echo(_format_ast(parse_source(text, source)))
        elif stage == "kir":
            from intentc.kir.printer import print_module
            from intentc.kir.provenance import annotate

            click.echo(print_module(frontend(text, source, search=search), annotate=annotate), nl=False)
        else:
            compiled = compile_source(text, source, target, cpu, optimize_ir=stage in ("llvm-opt", "asm"),
                                      search=search)
            if stage == "lowered":
                from intentc.kir.printer import print_module
                from intentc.kir.provenance import annotate

                click.echo(print_module(compiled.kir, annotate=annotate), nl=False)
            elif stage == "physical":
                from intentc.lower.program import format_program

                click.echo(format_program(compiled.program), nl=False)
            elif stage == "llvm":
                click.echo(compiled.llvm_ir)
            elif stage == "llvm-opt":
                click.echo(str(compiled.optimized))
            else:
                from intentc.codegen.optimize import emit_assembly

                click.echo(emit_assembly(compiled.optimized, compiled.spec))
    except CompileError as exc:
        _fail(exc)


def _format_ast(node, indent: str = "") -> str:
    from dataclasses import fields, is_dataclass

    if isinstance(node, tuple):
        return "\n".join(_format_ast(item, indent) for item in node)
    if not is_dataclass(node):
        return f"{indent}{node!r}"
    lines = [f"{indent}{type(node).__name__}"]
    for f in fields(node):
        if f.name in ("span", "name_span"):
            continue
        value = getattr(node, f.name)
        if is_dataclass(value) or (isinstance(value, tuple) and value and is_dataclass(value[0])):
            lines.append(f"{indent}  {f.name}:")
            lines.append(_format_ast(value, indent + "    "))
        else:
            lines.append(f"{indent}  {f.name}: {value!r}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
