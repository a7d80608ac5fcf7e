"""A program and the modules it imports: every file parsed once, cycles and missing modules refused.

``load_program`` parses the main source, then each module its ``from M import ...`` and
``import M`` statements name, found by ``intentc.base.module_search`` (beside the importing
file, then on the include folders), then theirs, breadth first in source order. It
guarantees:

- every file is parsed once however often it is imported; a module's ``Unit.imports`` says
  which unit each of its import statements reached;
- a module that no candidate file holds is a diagnostic at the import naming every place
  searched; an import that reaches a file already on the chain of imports that led to it is
  an import cycle, shown as that chain;
- an error in an imported file is reported at that file's line, with a note saying where it
  was imported (``imported_at``), up to the main file.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from intentc.base.module_search import BUILTIN_MODULE, SearchPath, candidates, find_module, same_file
from intentc.diagnostics import CompileError, error
from intentc.parse import ast
from intentc.parse.parser import parse_source
from intentc.parse.reader import read_source
from intentc.source import Span, display_path


@dataclass(frozen=True)
class Unit:
    """One source file of a program."""

    name: str  # the prefix of its helpers' KIR names ("" for the main file; "common", "lib.common")
    tree: ast.Module
    path: str  # where it was read, as given
    shown: str  # as messages show it
    site: Span | None  # the import that first reached it (None: the main file)
    parent: int | None  # the unit holding that import
    imports: dict = field(default_factory=dict)  # dotted module name -> unit index


@dataclass(frozen=True)
class Program:
    units: tuple[Unit, ...]  # units[0] is the main file

    @property
    def main(self) -> ast.Module:
        return self.units[0].tree

    def imported_at(self, index: int) -> tuple[str, ...]:
        """Notes for a diagnostic inside unit ``index``: where it was imported, up to the main file."""
        notes = []
        while index and self.units[index].site is not None:
            unit = self.units[index]
            notes.append(f"{unit.shown} is imported at {unit.site.location()}")
            index = unit.parent
        return tuple(notes)

    def with_notes(self, index: int, exc: CompileError) -> CompileError:
        """``exc`` with the import chain of unit ``index`` added to each diagnostic."""
        notes = self.imported_at(index)
        if not notes:
            return exc
        return CompileError([dataclasses.replace(d, notes=d.notes + notes) for d in exc.diagnostics])

    @property
    def files(self) -> list[str]:
        """The paths of the imported files (not the main one), in the order they were loaded."""
        return [u.path for u in self.units[1:]]


def single(tree: ast.Module) -> Program:
    """A program of one parsed file that imports nothing but ``intent``."""
    return Program((Unit("", tree, "", "", None, None),))


def load_program(text: str, shown: str, path: str | None = None, search: SearchPath = SearchPath()) -> Program:
    """Parse ``text`` (messages name it ``shown``; it lies at ``path``, default ``shown``, which
    says where modules beside it are) and every module it imports."""
    main_path = shown if path is None else path
    units = [Unit("", parse_source(text, shown), main_path, shown, None, None)]
    taken = {""}
    index = 0
    while index < len(units):
        unit = units[index]
        for stmt in unit.tree.imports:
            if stmt.module == BUILTIN_MODULE or stmt.module in unit.imports:
                continue
            unit.imports[stmt.module] = _load(units, index, stmt, search, taken)
        index += 1
    return Program(tuple(units))


def _load(units: list[Unit], importer: int, stmt, search: SearchPath, taken: set) -> int:
    program = Program(tuple(units))
    unit = units[importer]
    found = find_module(stmt.module, unit.path, search)
    if found is None:
        raise program.with_notes(importer, _missing(stmt, unit.path, search))
    chain = _chain(units, importer)
    for position, ancestor in enumerate(chain):
        if same_file(found, units[ancestor].path):
            raise program.with_notes(importer, _cycle(units, chain[position:], stmt))
    for other, loaded in enumerate(units):
        if other and same_file(found, loaded.path):
            return other
    shown = search.shown(found)
    try:
        tree = parse_source(read_source(found), shown)
    except CompileError as exc:
        exc = _at_import(exc, stmt, display_path(found))
        here = f"{display_path(shown)} is imported at {stmt.span.location()}"
        exc = CompileError([d if d.span is not None and d.span.source is stmt.span.source else
                            dataclasses.replace(d, notes=d.notes + (here,)) for d in exc.diagnostics])
        raise program.with_notes(importer, exc) from None
    name, suffix = stmt.module, 2
    while name in taken:  # two files imported as `util` from different folders
        name, suffix = f"{stmt.module}_{suffix}", suffix + 1
    taken.add(name)
    units.append(Unit(name, tree, found, shown, stmt.span, importer))
    return len(units) - 1


def _chain(units: list[Unit], index: int) -> list[int]:
    """The units from the main file down to ``index`` along the first imports."""
    chain = [index]
    while units[chain[-1]].parent is not None:
        chain.append(units[chain[-1]].parent)
    return chain[::-1]


def _missing(stmt, importer: str, search: SearchPath) -> CompileError:
    places = candidates(stmt.module, importer, search)
    searched = ", ".join(display_path(path) for _, path in places)
    hint = "put the file beside the importing one, or add its folder with -I DIR"
    if stmt.module.split(".")[0] in PYTHON_MODULES:
        hint = (f"'{stmt.module}' is a Python module; an Intent program imports only Intent modules (.intent files) "
                "and the builtins, `import intent as I` (I.exp, I.sum, I.where, ...)")
    elif "." in stmt.module:
        hint += f" (a dotted module name is a path below a searched folder: {'/'.join(stmt.module.split('.'))}.intent)"
    return error(f"no module named '{stmt.module}'", stmt.span, notes=(f"searched: {searched}",), hint=hint)


# Python modules a newcomer may import out of habit: the hint names the builtins instead.
PYTHON_MODULES = frozenset({"numpy", "math", "torch", "jax", "scipy", "cupy", "numba", "triton", "cmath", "random",
                            "typing", "dataclasses", "functools", "itertools", "ml_dtypes", "intentc"})


def _cycle(units: list[Unit], chain: list[int], stmt) -> CompileError:
    names = [units[i].shown for i in chain] + [units[chain[0]].shown]
    return error(f"import cycle: {' -> '.join(names)}", stmt.span,
                 hint="modules may not import each other in a circle; move what both need into a third module "
                      "that imports neither")


def _at_import(exc: CompileError, stmt, found: str) -> CompileError:
    """A diagnostic without a location (the file cannot be read) placed at the import."""
    out = []
    for diag in exc.diagnostics:
        if diag.span is None:
            diag = dataclasses.replace(diag, span=stmt.span, notes=diag.notes + (f"module '{stmt.module}' is "
                                                                                 f"{found}",),
                                       hint=diag.hint or "make the module a readable UTF-8 text file")
        out.append(diag)
    return CompileError(out)
