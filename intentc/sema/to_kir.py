"""AST -> KIR: the module and its functions, one walk per function.

Guarantees of the KIR it builds (checked by ``intentc.kir.verifier``):
- every value is typed; mixed dtypes are diagnostics, literals adopt their partner's dtype;
- broadcasting is explicit (``broadcast``/``bcast_extent`` ops, S2/S3);
- named extents are one shape value per name; later uses are ``assert_eq`` checks (S1);
- ordered control is structured SSA: ``if``/``for``/``while`` yield the variables they
  change (O1, O2); break/continue/return were normalised before (O3, ``normalize.py``);
- ``parallel`` bodies carry nothing across points (P2) and never break (P4).

This module reads the signatures (signatures.py), builds each function (parameters,
extents, results here; statements in statements.py; expressions in expressions.py on the
state of state.py) and then checks the module: no helper recursion, pure region helpers
(R4, R5: regions.py), unique stores and races (M4, P3, A3: memory_checks.py).
"""
from __future__ import annotations

import dataclasses

from intentc.diagnostics import CompileError, error
from intentc.kir.core import Function, Module, Param, Value
from intentc.kir.extents import build as build_extent
from intentc.kir.extents import is_expression, solvable
from intentc.kir.types import BOOL, INDEX, DType, TensorType
from intentc.parse import ast
from intentc.parse.modules import Program, single
from intentc.sema.imports import kir_name, namespaces
from intentc.sema.expressions import ExpressionBuilder
from intentc.sema.memory_checks import check_memory
from intentc.sema.normalize import normalize_function
from intentc.sema.optional_params import bind_optional
from intentc.sema.regions import check_region_helpers
from intentc.sema.shapes import Extent, broadcast_to, same_extent
from intentc.sema.signatures import Signature, signature
from intentc.sema.statements import statements
from intentc.sema.values import ConstantRef, FunctionRef, Literal, ModuleRef, NamespaceRef, TupleValue, items_of


def build_module(tree: ast.Module | Program, name: str) -> Module:
    """Build the KIR module of a parsed file, or of a program with the modules it imports
    (their helpers join the module under qualified names, sema/imports.py); raises
    CompileError with every diagnostic found."""
    program = tree if isinstance(tree, Program) else single(tree)
    spaces = namespaces(program)
    signatures: dict[str, Signature] = {}
    functions: list[tuple[int, ast.FunctionDef]] = []  # (unit, function under its KIR name)
    diagnostics = []
    for unit_index, unit in enumerate(program.units):
        for fn in unit.tree.functions:
            if unit_index and fn.kind != "fn":
                continue  # an imported module's kernels are its own entry points, never built here
            qualified = kir_name(program, unit_index, fn.name)
            fn = fn if qualified == fn.name else dataclasses.replace(fn, name=qualified)
            try:
                if fn.name in signatures:
                    raise error(f"'{fn.name}' is defined twice (first at line {signatures[fn.name].span.line})",
                                fn.name_span, hint="rename one of the two functions")
                signatures[fn.name] = signature(fn)
                functions.append((unit_index, fn))
            except CompileError as exc:
                diagnostics += program.with_notes(unit_index, exc).diagnostics
    module = Module(name)
    for unit_index, fn in functions:
        try:
            module.functions.append(FunctionBuilder(signatures, normalize_function(fn), spaces[unit_index]).build())
        except CompileError as exc:
            diagnostics += program.with_notes(unit_index, exc).diagnostics
    if diagnostics:
        raise CompileError(diagnostics)
    main = program.main
    if not module.kernels:
        raise error("the module defines no @intent.kernel", main.functions[0].name_span if main.functions else main.span,
                    hint="decorate an entry point with @intent.kernel; @intent.fn helpers are not exported")
    _drop_unused_imports(module, {kir_name(program, 0, fn.name) for fn in main.functions})
    _check_recursion(module)
    check_region_helpers(module)
    check_memory(module)  # M4 unique stores, P3/A3 provable races, M2 spaces
    return module


def _drop_unused_imports(module: Module, own: set[str]) -> None:
    """Keep the imported helpers that the file's own functions reach through calls (a module
    imported for one helper adds no other to the KIR)."""
    if len(own) == len(module.functions):
        return
    by_name = {f.name: f for f in module.functions}
    reached, pending = set(own), list(own)
    while pending:
        for op in by_name[pending.pop()].walk():
            callee = op.attrs.get("callee") if op.name == "call" else None
            if callee is not None and callee not in reached:
                reached.add(callee)
                pending.append(callee)
    module.functions[:] = [f for f in module.functions if f.name in reached]


def _check_recursion(module: Module) -> None:
    """Helpers are inlined into their callers, so no helper may reach a call of itself."""
    calls = {f.name: [op for op in f.walk() if op.name == "call"] for f in module.functions}
    state: dict[str, str] = {}

    def visit(name: str, path: list[str]) -> None:
        state[name] = "active"
        for op in calls.get(name, []):
            callee = op.attrs["callee"]
            if state.get(callee) == "active":
                cycle = " -> ".join(path[path.index(callee):] + [callee])
                raise error(f"helper '{callee}' calls itself ({cycle}); recursion is not supported", op.span,
                            hint="helpers are inlined into their callers; write the repetition as an ordered "
                                 "for or while loop")
            if callee not in state:
                visit(callee, path + [callee])
        state[name] = "done"

    for func in module.functions:
        if func.name not in state:
            visit(func.name, [func.name])


class FunctionBuilder(ExpressionBuilder):
    """One function: its parameters and named extents (S1), its body, its checked results (S1, S3)."""

    def build(self) -> Function:
        fn, sig = self.fn, self.sig
        self.scope["I"] = NamespaceRef("I")
        for name, value in self.module_scope.items():  # helpers, constants and imports (sema/imports.py)
            self.scope.setdefault(name, value)
        args, params = [], []
        extent_values = self.named_extents
        for ast_param, ann in zip(fn.params, sig.params):
            if ann.items:  # a tuple parameter is one KIR argument per item (C3: items keep their relations)
                items = tuple(Value(item.type, f"{ast_param.name}{k}") for k, item in enumerate(ann.items))
                args += items
                params += [Param(f"{ast_param.name}{k}", False, item.extents) for k, item in enumerate(ann.items)]
                self.scope[ast_param.name] = TupleValue(items)
                self.readonly[ast_param.name] = "a parameter"
                continue
            value = Value(ann.type, ast_param.name)
            args.append(value)
            params.append(Param(ast_param.name, ast_param.mutable, ann.extents, optional=ann.optional,
                                default=sig.defaults[fn.params.index(ast_param)] if sig.defaults else ()))
        self.block.args = args
        plain = [(p, a) for p, a in zip(fn.params, sig.params) if not a.items]
        plain_args = [v for v in args if not any(v in self.scope[p.name].items for p, a in
                                                  zip(fn.params, sig.params) if a.items)]
        expressions = []  # (value, axis, extent, ast_param): checked once every name is bound
        optional = []  # (ast_param, ann, value) of the optional tensors (optional_params.py)
        for (ast_param, ann), value in zip(plain, plain_args):
            self.scope[ast_param.name] = value
            self.readonly[ast_param.name] = "a parameter"
            if not isinstance(ann.type, TensorType):
                continue
            self.params[id(value)] = ast_param.name
            if ann.optional:  # bound below, once the required parameters name its extents
                optional.append((ast_param, ann, value))
                continue
            if ast_param.mutable:
                self.mutable.add(id(value))
            shape: list[Extent] = []
            for axis, extent in enumerate(ann.extents):
                if isinstance(extent, int):  # a literal extent is checked at the call boundary too
                    dim = self.emit("dim", [value], [INDEX], {"axis": axis}, span=ast_param.span).result
                    self.emit("assert_eq", [dim, self.const(extent, INDEX, ast_param.span)], span=ast_param.span,
                              attrs={"what": f"{ast_param.name}.shape[{axis}] = %lld but the signature declares "
                                             "%lld", "rule": "S1"})
                    shape.append(extent)
                    continue
                if is_expression(extent):  # e.g. 3 * C: checked below, after the names
                    expressions.append((value, axis, extent, ast_param))
                    shape.append(None)
                    continue
                if extent in extent_values:
                    canonical, where = extent_values[extent]
                    dim = self.emit("dim", [value], [INDEX], {"axis": axis}, span=ast_param.span).result
                    self.emit("assert_eq", [dim, canonical], span=ast_param.span, attrs={
                        "what": f"extent {extent}: {ast_param.name}.shape[{axis}] = %lld but {where} = %lld",
                        "rule": "S1"})
                    shape.append(canonical)
                else:
                    dim = self.emit("dim", [value], [INDEX], {"axis": axis}, span=ast_param.span,
                                    hint=extent).result
                    extent_values[extent] = (dim, f"{ast_param.name}.shape[{axis}]")
                    shape.append(dim)
                    if isinstance(self.scope.get(extent), (ConstantRef, ModuleRef)):
                        raise error(f"extent name '{extent}' is also the name of a module-level "
                                    f"{'constant' if isinstance(self.scope[extent], ConstantRef) else 'import'}",
                                    ast_param.span, rule="S1",
                                    hint="an extent name is bound by the tensor's shape; rename the extent or the "
                                         "module-level name")
                    if extent in self.scope and not isinstance(self.scope[extent], FunctionRef):
                        raise error(f"extent name '{extent}' is also a parameter name", ast_param.span, rule="S1")
                    self.scope[extent] = dim
                    self.readonly[extent] = "an extent"
            self.shapes[id(value)] = shape
        for value, axis, extent, ast_param in expressions:  # names only these axes give: solved (S1)
            solved = solvable(extent)
            if solved is not None and solved[0] not in extent_values:
                self.solve_extent(value, axis, extent, ast_param, *solved)
        for value, axis, extent, ast_param in expressions:
            span = ast_param.span
            want = build_extent(extent, lambda name: extent_values[name][0], lambda c: self.const(c, INDEX, span),
                                lambda op, a, b: self.emit(op, [a, b], [INDEX], span=span).result)
            dim = self.emit("dim", [value], [INDEX], {"axis": axis}, span=span).result
            self.emit("assert_eq", [dim, want], span=span, attrs={
                "what": f"extent {extent}: {ast_param.name}.shape[{axis}] = %lld but {extent} = %lld", "rule": "S1"})
            self.shapes[id(value)][axis] = dim
        for ast_param, ann, value in optional:
            self.scope[ast_param.name] = bind_optional(self, ast_param, ann, value)
        body = list(fn.body)
        ret = body.pop() if body and isinstance(body[-1], ast.Return) else None
        statements(self, body)
        results = self.return_values(ret)
        self.emit("return", results, span=ret.span if ret else fn.span)
        return Function(fn.name, fn.kind, params, [a.type for a in sig.results], self.block,
                        [a.extents for a in sig.results], fn.span)

    def solve_extent(self, value: Value, axis: int, extent: str, ast_param, name: str, c: int, k: int) -> None:
        """Bind ``name`` from the axis whose extent is ``c * name + k``: ``(dim - k) / c``, checked
        on entry to be a whole, non-negative number (S1)."""
        span = ast_param.span
        where = f"{ast_param.name}.shape[{axis}]"
        if isinstance(self.scope.get(name), (ConstantRef, ModuleRef)) or \
                (name in self.scope and not isinstance(self.scope[name], FunctionRef)):
            raise error(f"extent name '{name}' is also a parameter or module-level name", span, rule="S1",
                        hint="rename the extent")
        dim = self.emit("dim", [value], [INDEX], {"axis": axis}, span=span).result
        rest = self.emit("sub", [dim, self.const(k, INDEX, span)], [INDEX], span=span).result if k else dim
        zero = self.const(0, INDEX, span)
        ok = self.emit("cmp", [zero, rest], [BOOL], {"pred": "le"}, span=span).result
        if c != 1:
            remainder = self.emit("mod", [rest, self.const(c, INDEX, span)], [INDEX], span=span).result
            whole = self.emit("cmp", [remainder, zero], [BOOL], {"pred": "eq"}, span=span).result
            ok = self.emit("and", [ok, whole], [BOOL], span=span).result
        if k > 0 or c != 1:
            self.emit("assert_true", [ok, dim], span=span, attrs={
                "what": f"extent {extent}: {where} = %lld is not {extent} for any extent {name} >= 0", "rule": "S1"})
        solved = rest if c == 1 else self.emit("floordiv", [rest, self.const(c, INDEX, span)], [INDEX], span=span,
                                               hint=name).result
        self.named_extents[name] = (solved, f"({where} - {k}) / {c}" if c != 1 else f"{where} - {k}")
        self.scope[name] = solved
        self.readonly[name] = "an extent"

    def return_values(self, ret: ast.Return | None) -> list[Value]:
        sig = self.sig
        if ret is None or ret.value is None:
            if sig.results:
                raise error(f"'{sig.name}' declares a result but does not return one", self.fn.name_span,
                            hint="end the function with `return <value>`")
            return []
        if not sig.results:
            raise error(f"'{sig.name}' returns a value but declares no result type", ret.span,
                        hint="add `-> type` to the signature")
        value = self.expr(ret.value)
        items = items_of(value)
        if len(items) != len(sig.results):
            raise error(f"'{sig.name}' returns {len(items)} values but declares {len(sig.results)}", ret.span)
        out = []
        for item, ann in zip(items, sig.results):
            out.append(self.coerce_to(item, ann, ret.value.span))
        return out

    def coerce_to(self, item, ann, span) -> Value:
        """Check a returned value against a declared result type (dtype, rank, extents)."""
        want = ann.type
        if isinstance(want, DType):
            return self.scalar_of(item, want, span, "the declared result")
        if isinstance(item, Literal) or (isinstance(item, Value) and isinstance(item.type, DType)):
            scalar = self.scalar_of(item, want.dtype, span, "the declared result")
            shape = [self.extent_for_result(e, span) for e in ann.extents]
            return broadcast_to(self, scalar, [], shape, span)
        if not isinstance(item, Value) or not isinstance(item.type, TensorType):
            raise error(f"expected a tensor of {want}", span)
        if item.type.dtype != want.dtype:
            raise error(f"dtype mismatch: the result is {item.type.dtype} but the signature declares {want.dtype}",
                        span, hint=f"use I.cast(..., {want.dtype})")
        if item.type.rank != want.rank:
            raise error(f"rank mismatch: the result has {item.type.rank} axes but the signature declares "
                        f"{want.rank}", span)
        shape = self.shape_of(item)
        declared = [self.extent_for_result(e, span) for e in ann.extents]
        differs = False
        for axis, (have, expect) in enumerate(zip(shape, declared)):
            if same_extent(have, expect):
                continue
            if isinstance(have, int) and isinstance(expect, int):
                raise error(f"result extent mismatch on axis {axis}: {have} but the signature declares {expect}",
                            span, rule="S1")
            self.emit("assert_eq", [self.index_value(have, span), self.index_value(expect, span)], span=span,
                      attrs={"what": f"result axis {axis} has extent %lld but the signature declares "
                                     f"{ann.extents[axis]} = %lld", "rule": "S3"})
            differs = True
        if differs and self.sig.kind == "fn":
            # A helper's caller types the call by the declared extents (a size-one axis
            # returned for a declared ``T``, say): once checked equal, the value takes that shape.
            return broadcast_to(self, item, shape, declared, span)
        return item

    def extent_for_result(self, extent, span) -> Extent:
        if isinstance(extent, int):
            return extent
        if not is_expression(extent):
            return self.extent_name_value(extent, span)
        return build_extent(
            extent, lambda name: self.extent_name_value(name, span), lambda c: self.const(c, INDEX, span),
            lambda op, a, b: self.emit(op, [a, b], [INDEX], span=span).result)

    def extent_name_value(self, name: str, span) -> Value:
        """A name in a result extent: a parameter extent, or an integer scalar parameter as an
        index (``-> i64[b - a]``, S1)."""
        if name in self.named_extents:
            return self.named_extents[name][0]
        value = self.scope[name]
        return value if value.type == INDEX else self.emit("cast", [value], [INDEX], span=span).result
