"""The names each module of a program binds at its top level: helpers, constants, imports.

A program is its main file and the modules it imports (``intentc.parse.modules``). Each
module's namespace maps a name to what it denotes while its functions are built:

- a function it defines: a ``FunctionRef`` to its KIR name (the main file's functions keep
  their names; a helper of the module ``common`` is ``common.f`` in KIR, so two modules may
  define the same name);
- a constant it defines (``EPS = 1e-5``, ``EPS: f64 = 1e-5``): a ``ConstantRef``, folded
  here from literals, other constants and ``I.pi``/``I.e``/``I.inf``/``I.nan``;
- ``from M import a, b as c``: what ``a`` and ``b`` denote in M (a helper or a constant;
  a kernel is refused: kernels are entry points of the file that defines them);
- ``import M`` (or ``import M as m``): a ``ModuleRef``, so that ``M.f(x)`` and ``M.EPS`` work.

It guarantees a diagnostic, at the import or the definition, for a name imported that the
module does not bind (listing those it does), an imported kernel, and a name bound twice in
one module (an import and a definition, two imports, a constant and a function); and that
the builtin namespace is exactly ``import intent as I``.
"""
from __future__ import annotations

import difflib
import math

from intentc.base.module_search import BUILTIN_MODULE
from intentc.diagnostics import CompileError, error
from intentc.kir.types import DTYPES
from intentc.parse import ast
from intentc.parse.modules import Program
from intentc.sema.folding import fold_binary, fold_unary
from intentc.sema.values import ConstantRef, FunctionRef, Literal, ModuleRef, literal_as

_I_CONSTANTS = {"inf": math.inf, "nan": math.nan, "pi": math.pi, "e": math.e}


def kir_name(program: Program, unit: int, name: str) -> str:
    """The KIR name of function ``name`` of unit ``unit``."""
    prefix = program.units[unit].name
    return f"{prefix}.{name}" if prefix else name


def namespaces(program: Program) -> list[dict]:
    """Each unit's top-level names (see the module docstring), or a CompileError with every
    diagnostic found. Units are resolved imports first, so a module's namespace is complete
    before a module that imports it reads it."""
    spaces: list[dict | None] = [None] * len(program.units)
    diagnostics = []
    for index in _dependency_order(program):
        try:
            spaces[index] = _namespace(program, index, spaces)
        except CompileError as exc:
            diagnostics += program.with_notes(index, exc).diagnostics
            spaces[index] = {}
    if diagnostics:
        raise CompileError(diagnostics)
    return spaces


def _dependency_order(program: Program) -> list[int]:
    order, seen = [], set()

    def visit(index):  # the loader refused cycles, so this ends
        if index in seen:
            return
        seen.add(index)
        for dep in program.units[index].imports.values():
            visit(dep)
        order.append(index)

    for index in range(len(program.units)):
        visit(index)
    return order


def _namespace(program: Program, index: int, spaces: list) -> dict:
    unit = program.units[index]
    tree = unit.tree
    names: dict[str, object] = {}
    where: dict[str, tuple[str, object]] = {}  # name -> (what bound it, span)

    def bind(name: str, value, what: str, span) -> None:
        if name in where:
            first, first_span = where[name]
            raise error(f"'{name}' is bound twice in this module: {first} at line {first_span.line} and {what} "
                        "here", span, hint="rename one of the two, or import the name under another one with "
                                           "`from M import name as other`")
        where[name] = (what, span)
        names[name] = value

    for stmt in tree.imports:
        if isinstance(stmt, ast.Import):
            _check_builtin_import(stmt)
            if stmt.module == BUILTIN_MODULE:
                continue
            if stmt.alias is None and "." in stmt.module:
                raise error(f"`import {stmt.module}` needs a name to bind", stmt.span,
                            hint=f"write `import {stmt.module} as {stmt.module.rsplit('.', 1)[1]}` or "
                                 f"`from {stmt.module} import name`")
            alias = stmt.alias or stmt.module
            target = unit.imports[stmt.module]
            bind(alias, ModuleRef(stmt.module, spaces[target], program.units[target].shown), "an import", stmt.span)
            continue
        if stmt.module == BUILTIN_MODULE:
            raise error("the builtins are a namespace: import them with `import intent as I`", stmt.span,
                        hint="write `import intent as I` and call I.exp(x), I.sum(x), ...")
        target = unit.imports[stmt.module]
        module = ModuleRef(stmt.module, spaces[target], program.units[target].shown)
        for item in stmt.names:
            bind(item.alias, imported(module, item.name, item.span), "an import", item.span)
    for const in tree.constants:
        bind(const.name, _constant(const, names), "a constant", const.name_span)
    for fn in tree.functions:
        if fn.name in where and where[fn.name][0] != "a function":
            first, first_span = where[fn.name]
            raise error(f"'{fn.name}' is defined here and bound by {first} at line {first_span.line}",
                        fn.name_span, hint="rename the function, or import the other one under another name with "
                                           "`from M import name as other`")
        if fn.name not in where:  # a second definition is diagnosed with the signatures
            where[fn.name] = ("a function", fn.name_span)
            names[fn.name] = FunctionRef(kir_name(program, index, fn.name), fn.kind)
    return names


def imported(module: ModuleRef, name: str, span):
    """What ``name`` denotes in ``module`` (``from M import name`` or ``M.name``)."""
    if name not in module.names:
        known = sorted(n for n, v in module.names.items() if not (isinstance(v, FunctionRef) and v.kind == "kernel"))
        close = difflib.get_close_matches(name, known, n=1)
        listed = ", ".join(known) if known else "none"
        raise error(f"module '{module.name}' ({module.path}) has no helper or constant named '{name}'", span,
                    hint=(f"did you mean '{close[0]}'? " if close else "") + f"it defines: {listed}")
    value = module.names[name]
    if isinstance(value, FunctionRef) and value.kind == "kernel":
        raise error(f"'{name}' in module '{module.name}' is a kernel; only @intent.fn helpers and constants can be "
                    "imported", span, hint="kernels are the entry points of the file that defines them: move the "
                                           "shared code into an @intent.fn helper and import that")
    return value


def _check_builtin_import(stmt: ast.Import) -> None:
    if stmt.module == BUILTIN_MODULE and stmt.alias != "I":
        raise error(f"the builtins are imported as I, not {'as ' + stmt.alias if stmt.alias else 'by name'}",
                    stmt.span, hint="Intent programs begin with `import intent as I`")
    if stmt.module != BUILTIN_MODULE and stmt.alias == "I":
        raise error(f"the name I is the builtins' namespace; '{stmt.module}' cannot be imported as I", stmt.span,
                    hint=f"choose another name: `import {stmt.module} as {stmt.module.rsplit('.', 1)[-1]}`")


# ---- constants ------------------------------------------------------------------------------------------
def _constant(const: ast.ConstantDef, names: dict) -> ConstantRef:
    value = _fold(const.value, names)
    if const.annotation is None:
        return ConstantRef(value.value, None)
    annotation = const.annotation
    if not isinstance(annotation, ast.Name) or annotation.id not in DTYPES:
        raise error("a constant's type is a scalar dtype", annotation.span,
                    hint="write e.g. `EPS: f32 = 1e-5`; tensors are parameters or values inside functions")
    dtype = DTYPES[annotation.id]
    return ConstantRef(literal_as(value, dtype), dtype)


def _fold(node: ast.Expr, names: dict) -> Literal:
    if isinstance(node, ast.Constant) and not isinstance(node.value, str):
        return Literal(node.value, node.span)
    if isinstance(node, ast.Name) and isinstance(names.get(node.id), ConstantRef):
        return Literal(names[node.id].value, node.span)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        base = names.get(node.value.id)
        if node.value.id == "I" and base is None and node.attr in _I_CONSTANTS:
            return Literal(_I_CONSTANTS[node.attr], node.span)
        if isinstance(base, ModuleRef):
            value = imported(base, node.attr, node.span)
            if isinstance(value, ConstantRef):
                return Literal(value.value, node.span)
    if isinstance(node, ast.UnaryOp) and node.op in ("-", "+", "~", "not"):
        operand = _fold(node.operand, names)
        return operand if node.op == "+" else fold_unary(node.op, operand, node.span)
    if isinstance(node, ast.BinOp):
        return fold_binary(node.op, _fold(node.left, names), _fold(node.right, names), node.span)
    if isinstance(node, ast.Name):
        raise error(f"'{node.id}' is not a constant defined above", node.span,
                    hint="a module-level constant is built from literals, constants defined before it and "
                         "I.pi, I.e, I.inf, I.nan")
    raise error("a module-level constant must be a constant expression", node.span,
                hint="use literals, + - * / // % ** and constants defined before it; compute anything else "
                     "inside a function")
