"""AST -> KIR: name resolution, typing, shapes and legality, in one walk per function.

Guarantees of the KIR it builds (checked by ``intentc.kir.verifier``):
- every value is typed; mixed dtypes are diagnostics, literals adopt their partner's dtype;
- broadcasting is explicit (``broadcast``/``bcast_extent`` ops, S2/S3);
- named extents are one shape value per name; later uses are ``assert_eq`` checks (S1);
- ordered control is structured SSA: ``if``/``for``/``while`` yield the variables they
  change (O1, O2); break/continue/return were normalised before (O3, ``normalize.py``);
- ``parallel`` bodies carry nothing across points (P2) and never break (P4).
"""
from __future__ import annotations

from dataclasses import dataclass

from intentc.diagnostics import CompileError, error, quote
from intentc.kir.extents import build as build_extent
from intentc.kir.extents import is_expression
from intentc.kir.extents import names as extent_names
from intentc.kir.core import Block, Function, Module, Op, Param, Value
from intentc.kir.types import BOOL, DOMAIN, DTYPES, INDEX, DType, TensorType, element_dtype
from intentc.parse import ast
from intentc.sema.annotations import annotation, dtype_of, result_annotations
from intentc.sema import relations
from intentc.sema.builtins import call_builtin
from intentc.sema.memory import subscript_read, subscript_write
from intentc.sema.memory_checks import check_memory
from intentc.sema.normalize import is_parallel_loop, normalize_function
from intentc.sema.regions import check_region_helpers
from intentc.sema.scaled import check_mx
from intentc.sema.shapes import Extent, broadcast_extents, broadcast_to, same_extent
from intentc.sema.values import DTypeRef, FunctionRef, Literal, NamespaceRef, TupleValue, literal_as

_BINARY = {"+": "add", "-": "sub", "*": "mul", "/": "div", "//": "floordiv", "%": "mod", "**": "pow",
           "&": "and", "|": "or", "^": "xor", "<<": "shl", ">>": "shr"}
_COMPARE = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne"}
_MAX_CONST_BITS = 4096  # constant folding stops here: no dtype holds more than 64 bits


@dataclass
class _Signature:
    name: str
    kind: str
    params: list  # Annotated per parameter
    param_names: list[str]
    results: list  # Annotated per result
    span: object


def build_module(tree: ast.Module, name: str) -> Module:
    """Build the KIR module of a parsed file; raises CompileError with every diagnostic found."""
    _check_imports(tree)
    signatures: dict[str, _Signature] = {}
    diagnostics = []
    for fn in tree.functions:
        if fn.name in signatures:
            diagnostics.append(error(f"'{fn.name}' is defined twice (first at line {signatures[fn.name].span.line})",
                                     fn.name_span, hint="rename one of the two functions").diagnostics[0])
            continue
        try:
            signatures[fn.name] = _signature(fn)
        except CompileError as exc:
            diagnostics += exc.diagnostics
    module = Module(name)
    for fn in tree.functions:
        if fn.name not in signatures or signatures[fn.name].span is not fn.name_span:
            continue  # a signature error or a second definition, diagnosed above
        try:
            module.functions.append(FunctionBuilder(signatures, fn).build())
        except CompileError as exc:
            diagnostics += exc.diagnostics
    if diagnostics:
        raise CompileError(diagnostics)
    if not module.kernels:
        raise error("the module defines no @intent.kernel", tree.functions[0].name_span if tree.functions else None,
                    hint="decorate an entry point with @intent.kernel; @intent.fn helpers are not exported")
    _check_recursion(module)
    check_region_helpers(module)
    check_memory(module)  # M4 unique stores, P3/A3 provable races, M2 spaces
    return module


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


def _check_imports(tree: ast.Module) -> None:
    for imp in tree.imports:
        if imp.module != "intent" or imp.alias != "I":
            raise error(f"unknown import '{imp.module} as {imp.alias}'", imp.span,
                        hint="Intent programs begin with `import intent as I`")


def _signature(fn: ast.FunctionDef) -> _Signature:
    params, names = [], []
    for param in fn.params:
        if param.name in names:
            raise error(f"parameter '{param.name}' appears twice", param.span)
        ann = annotation(param.annotation)
        if ann.items and fn.kind == "kernel":
            raise error(f"kernel parameter '{param.name}' has a tuple type; kernels take scalars and tensors",
                        param.span, hint="pass the items as separate parameters")
        if any(item.items for item in ann.items):
            raise error("tuple types do not nest", param.span)
        if param.mutable and not isinstance(ann.type, TensorType):
            raise error(f"'mut' applies to tensors; '{param.name}' is a scalar", param.span,
                        hint="scalars are passed by value; return a tensor instead")
        if fn.kind == "fn" and param.mutable:
            raise error("helpers are pure: a @intent.fn cannot take a 'mut' parameter", param.span, rule="R4")
        params.append(ann)
        names.append(param.name)
    results = result_annotations(fn.returns)
    if fn.kind == "kernel" and results:
        # Returned tensors travel as trailing parameters named out (one) or out0, out1, ...
        reserved = {"out"} if len(results) == 1 else {f"out{k}" for k in range(len(results))}
        for param in fn.params:
            if param.name in reserved:
                raise error(f"parameter '{param.name}' has the name of the kernel's returned tensor, which the C "
                            f"header, the manifest and out= call '{param.name}'", param.span,
                            hint="rename the parameter, e.g. to 'dst'")
    if fn.kind == "kernel":
        for ann, expr in zip(results, _result_exprs(fn.returns)):
            if not isinstance(ann.type, TensorType):
                raise error(f"kernel '{fn.name}' declares the scalar result {ann.type}, but a kernel returns "
                            "tensors only", expr.span,
                            hint=f"return a tensor such as {ann.type}[1], or write into a 'mut' parameter")
            known = {e for p in params for e in p.extents if isinstance(e, str)}
            for extent in ann.extents:
                unknown = [n for n in extent_names(extent) if n not in known] if isinstance(extent, str) else []
                if unknown:
                    named = ", ".join(sorted(known)) or "none"
                    raise error(f"result extent '{unknown[0]}' is not an extent of any parameter", expr.span, rule="S1",
                                hint="name result extents after parameter extents so the caller can size them "
                                     f"(parameter extents: {named}), or use an integer literal")
    return _Signature(fn.name, fn.kind, params, names, results, fn.name_span)


def _result_exprs(expr):
    if expr is None:
        return []
    return list(expr.elts) if isinstance(expr, ast.TupleExpr) else [expr]


def _assigned_names(stmts) -> list[str]:
    """Names assigned anywhere in ``stmts`` (in first-assignment order)."""
    found: list[str] = []

    def add(name):
        if name not in found:
            found.append(name)

    def visit(stmt):
        if isinstance(stmt, (ast.Assign, ast.AugAssign)):
            targets = stmt.target.elts if isinstance(stmt.target, ast.TupleExpr) else (stmt.target,)
            for target in targets:
                if isinstance(target, ast.Name):
                    add(target.id)
        elif isinstance(stmt, ast.AnnAssign):
            add(stmt.target.id)
        elif isinstance(stmt, ast.If):
            for s in stmt.body + stmt.orelse:
                visit(s)
        elif isinstance(stmt, (ast.For, ast.While)):
            for s in stmt.body:
                visit(s)

    for stmt in stmts:
        visit(stmt)
    return found


class FunctionBuilder:
    def __init__(self, signatures: dict[str, _Signature], fn: ast.FunctionDef):
        self.signatures = signatures
        self.fn = normalize_function(fn)
        self.sig = signatures[fn.name]
        self.block = Block()
        self.scope: dict[str, object] = {}
        self.readonly: dict[str, str] = {}  # name -> why it cannot be assigned
        self.shapes: dict[int, list[Extent]] = {}
        self.params: dict[int, str] = {}  # tensor parameter value id -> name
        self.mutable: set[int] = set()
        self.parallel_depth = 0
        self.parallel_outer: set[str] | None = None
        self.carry_args: set[int] = set()  # ids of loop-carried region arguments (O2)

    # -- emission helpers -----------------------------------------------------------------
    def emit(self, name, operands, result_types=(), attrs=None, regions=None, span=None, hint="") -> Op:
        check_mx(name, operands, result_types, span)  # MX values are storage (sema/scaled.py)
        op = Op(name, operands, list(result_types), attrs, regions, span,
                [hint] * len(result_types) if hint else None)
        self.block.ops.append(op)
        return op

    def const(self, value, dtype: DType, span=None) -> Value:
        return self.emit("const", [], [dtype], {"value": value}, span=span).result

    def index_value(self, extent: Extent, span=None) -> Value:
        if isinstance(extent, int):
            return self.const(extent, INDEX, span)
        return extent

    def shape_of(self, value: Value) -> list[Extent]:
        if isinstance(value.type, TensorType):
            shape = self.shapes.get(id(value))
            if shape is None:
                shape = [self.emit("dim", [value], [INDEX], {"axis": k}).result if e is None else e
                         for k, e in enumerate(value.type.shape)]
                self.shapes[id(value)] = shape
            return shape
        return []

    # -- function ---------------------------------------------------------------------------
    def build(self) -> Function:
        fn, sig = self.fn, self.sig
        self.scope["I"] = NamespaceRef("I")
        for name, other in self.signatures.items():
            self.scope.setdefault(name, FunctionRef(name))
        args, params = [], []
        extent_values: dict[str, tuple[Value, str]] = {}
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
            params.append(Param(ast_param.name, ast_param.mutable, ann.extents))
        self.block.args = args
        plain = [(p, a) for p, a in zip(fn.params, sig.params) if not a.items]
        plain_args = [v for v in args if not any(v in self.scope[p.name].items for p, a in
                                                  zip(fn.params, sig.params) if a.items)]
        for (ast_param, ann), value in zip(plain, plain_args):
            self.scope[ast_param.name] = value
            self.readonly[ast_param.name] = "a parameter"
            if not isinstance(ann.type, TensorType):
                continue
            self.params[id(value)] = ast_param.name
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
                    if extent in self.scope and not isinstance(self.scope[extent], FunctionRef):
                        raise error(f"extent name '{extent}' is also a parameter name", ast_param.span, rule="S1")
                    self.scope[extent] = dim
                    self.readonly[extent] = "an extent"
            self.shapes[id(value)] = shape
        self.result_extents = extent_values
        body = list(fn.body)
        ret = body.pop() if body and isinstance(body[-1], ast.Return) else None
        self.statements(body)
        results = self.return_values(ret)
        self.emit("return", results, span=ret.span if ret else fn.span)
        return Function(fn.name, fn.kind, params, [a.type for a in sig.results], self.block,
                        [a.extents for a in sig.results], fn.span)

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
        items = list(value.items) if isinstance(value, TupleValue) else [value]
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
        if self.sig.kind == "fn":
            return item
        shape = self.shape_of(item)
        declared = [self.extent_for_result(e, span) for e in ann.extents]
        for axis, (have, expect) in enumerate(zip(shape, declared)):
            if same_extent(have, expect):
                continue
            if isinstance(have, int) and isinstance(expect, int):
                raise error(f"result extent mismatch on axis {axis}: {have} but the signature declares {expect}",
                            span, rule="S1")
            self.emit("assert_eq", [self.index_value(have, span), self.index_value(expect, span)], span=span,
                      attrs={"what": f"result axis {axis} has extent %lld but the signature declares "
                                     f"{ann.extents[axis]} = %lld", "rule": "S3"})
        return item

    def extent_for_result(self, extent, span) -> Extent:
        if isinstance(extent, int):
            return extent
        if not is_expression(extent):
            return self.result_extents[extent][0]
        return build_extent(
            extent, lambda name: self.result_extents[name][0], lambda c: self.const(c, INDEX, span),
            lambda op, a, b: self.emit(op, [a, b], [INDEX], span=span).result)

    # -- statements ---------------------------------------------------------------------------
    def statements(self, stmts) -> None:
        for stmt in stmts:
            self.statement(stmt)

    def statement(self, stmt) -> None:
        if isinstance(stmt, ast.Assign):
            self.assign(stmt.target, self.expr(stmt.value), stmt.span)
        elif isinstance(stmt, ast.AnnAssign):
            dtype = dtype_of(stmt.annotation) if not isinstance(stmt.annotation, ast.Subscript) else None
            if dtype is None:
                raise error("a local annotation names a scalar dtype", stmt.annotation.span,
                            hint="write e.g. `count: i32 = 0`")
            value = self.scalar_of(self.expr(stmt.value), dtype, stmt.value.span, f"'{stmt.target.id}'")
            self.bind(stmt.target, value)
        elif isinstance(stmt, ast.AugAssign):
            current = self.expr(stmt.target)
            value = self.binary(stmt.op, current, self.expr(stmt.value), stmt.target.span, stmt.value.span, stmt.span)
            self.assign(stmt.target, value, stmt.span)
        elif isinstance(stmt, ast.ExprStmt):
            self.expr(stmt.value)
        elif isinstance(stmt, ast.Pass):
            pass
        elif isinstance(stmt, ast.If):
            self.if_stmt(stmt)
        elif isinstance(stmt, ast.For):
            if is_parallel_loop(stmt):
                self.parallel_stmt(stmt)
            else:
                self.for_stmt(stmt)
        elif isinstance(stmt, ast.While):
            self.while_stmt(stmt)
        elif isinstance(stmt, ast.Return):
            raise error("'return' must be the last statement of a function", stmt.span, rule="O3")
        else:
            raise error("this statement is not supported here", stmt.span)

    def assign(self, target, value, span) -> None:
        if isinstance(target, ast.Name):
            if isinstance(value, Literal):
                dtype, previous = value.default_dtype, self.scope.get(target.id)
                if target.id.startswith(".") and isinstance(previous, Value) and isinstance(previous.type, DType):
                    dtype = previous.type  # a returned literal takes the declared result dtype (normalize.py)
                value = self.scalar_of(value, dtype, value.span, f"'{target.id}'")
            self.bind(target, value)
        elif isinstance(target, ast.TupleExpr):
            items = value.items if isinstance(value, TupleValue) else None
            if items is None or len(items) != len(target.elts):
                raise error(f"cannot unpack into {len(target.elts)} names", span)
            for name, item in zip(target.elts, items):
                self.assign(name, item, span)
        elif isinstance(target, ast.Subscript):
            self.store(target, value, span)
        else:
            raise error("cannot assign to this expression", target.span,
                        hint="assign to a name, a tuple of names, or an element like out[i]")

    def bind(self, target: ast.Name, value) -> None:
        name = target.id
        if name in self.readonly:
            raise error(f"cannot assign to '{name}': it is {self.readonly[name]}", target.span,
                        hint="assign to a new local name")
        if self.parallel_outer is not None and name in self.parallel_outer:
            raise error(f"'{name}' is defined outside I.parallel and assigned inside it: a loop-carried value",
                        target.span, rule="P2",
                        hint="parallel points carry nothing across iterations; assign a new local name inside "
                             "the loop, or combine the points with a reduction (I.sum, I.reduce) or an ordered "
                             "`for` loop")
        if isinstance(value, (NamespaceRef, FunctionRef, DTypeRef)):
            raise error("only values can be assigned to names", target.span)
        previous = self.scope.get(name)
        if isinstance(previous, Value) and isinstance(value, Value) and previous.type != value.type:
            if name.startswith(".retval"):  # an early return, normalised into an assignment (normalize.py)
                raise error(f"dtype mismatch: '{self.sig.name}' declares the result {previous.type} but this "
                            f"returns {value.type}", target.span, hint=f"use I.cast(..., {previous.type})")
            if id(previous) in self.carry_args and isinstance(value.type, DType):
                raise error(f"loop-carried '{name}' changes type from {previous.type} to {value.type}", target.span,
                            rule="O2", hint=f"a value updated in a loop keeps one dtype; give it that dtype "
                                            f"before the loop, e.g. `{name}: {value.type} = ...`")
            if not (isinstance(previous.type, TensorType) and isinstance(value.type, TensorType)):
                raise error(f"'{name}' changes type from {previous.type} to {value.type}", target.span,
                            hint=f"use a new name, or I.cast(..., {element_dtype(previous.type)})")
        if isinstance(value, Value) and not value.hint:
            value.hint = name
        self.scope[name] = value

    def store(self, target: ast.Subscript, value, span) -> None:
        tensor = self.expr(target.value)
        if not isinstance(tensor, Value) or not isinstance(tensor.type, TensorType):
            raise error("only tensor elements can be assigned", target.value.span)
        if self.sig.kind == "fn":
            raise error(f"helper '{self.sig.name}' writes memory: helpers are pure", target.span, rule="R4",
                        hint="return the value instead; only kernels write into `mut` tensors")
        if id(tensor) not in self.mutable:
            name = self.params.get(id(tensor))
            what = f"parameter '{name}' is read-only" if name else "this tensor is an immutable value"
            raise error(f"cannot store: {what}", target.value.span, rule="M2",
                        hint="declare the parameter as `mut` to write into it" if name else None)
        subscript_write(self, target, tensor, value, span)  # a store, or a scatter for tensor indices (M4)

    # -- structured control -------------------------------------------------------------------
    def condition(self, expr) -> Value:
        value = self.expr(expr)
        if isinstance(value, Literal) and isinstance(value.value, bool):
            return self.const(value.value, BOOL, expr.span)
        if not isinstance(value, Value) or value.type != BOOL:
            got = value.type if isinstance(value, Value) else "a literal"
            raise error(f"a condition must be a scalar bool, got {got}", expr.span, rule="O1",
                        hint=f"compare explicitly, e.g. `{expr.span.text if quote(expr.span) else 'x'} != 0`")
        return value

    def region(self, args: list[Value], scope: dict, build) -> tuple[Block, dict]:
        """Build a region body with ``scope`` as its starting scope; return it and the final scope."""
        saved_block, saved_scope = self.block, self.scope
        self.block, self.scope = Block(args), dict(scope)
        try:
            build()
            return self.block, self.scope
        finally:
            self.block, self.scope = saved_block, saved_scope

    def if_stmt(self, stmt: ast.If) -> None:
        cond = self.condition(stmt.cond)
        before = self.scope
        then_block, then_scope = self.region([], before, lambda: self.statements(stmt.body))
        else_block, else_scope = self.region([], before, lambda: self.statements(stmt.orelse))
        merged = []
        for name in _assigned_names(stmt.body + stmt.orelse):
            a, b = then_scope.get(name), else_scope.get(name)
            if not isinstance(a, Value) or not isinstance(b, Value):
                continue  # defined on one path only: not visible after the if
            if a is b:
                continue
            if a.type != b.type:
                raise error(f"'{name}' has type {a.type} on one branch and {b.type} on the other", stmt.span,
                            rule="O1", hint="give both branches the same dtype")
            merged.append((name, a, b))
        then_block.ops.append(Op("yield", [a for _, a, _ in merged], span=stmt.span))
        else_block.ops.append(Op("yield", [b for _, _, b in merged], span=stmt.span))
        op = self.emit("if", [cond], [a.type for _, a, _ in merged], regions=[then_block, else_block],
                       span=stmt.span)
        self.scope = dict(before)
        for (name, _, _), result in zip(merged, op.results):
            result.hint = name.lstrip(".")
            self.scope[name] = result

    def carried(self, body) -> list[tuple[str, Value]]:
        carried = []
        for name in _assigned_names(body):
            value = self.scope.get(name)
            if isinstance(value, Value):
                if isinstance(value.type, TensorType):
                    raise error(f"tensor value '{name}' cannot be carried by a loop yet", body[0].span,
                                hint="store into a `mut` tensor element by element instead")
                carried.append((name, value))
        return carried

    def check_carries(self, carried, scope, span) -> list[Value]:
        out = []
        for name, initial in carried:
            final = scope.get(name)
            if not isinstance(final, Value):
                final = initial
            if final.type != initial.type:
                raise error(f"loop-carried '{name}' changes type from {initial.type} to {final.type}", span,
                            rule="O2", hint=f"annotate it before the loop, e.g. `{name}: {final.type} = ...`")
            out.append(final)
        return out

    def for_stmt(self, stmt: ast.For) -> None:
        iterable = stmt.iter
        enumerated = (isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name)
                      and iterable.func.id == "enumerate" and "enumerate" not in self.scope)
        if enumerated:
            if len(iterable.args) != 1 or iterable.keywords:
                raise error("enumerate takes one domain", iterable.span, rule="D6")
            iterable = iterable.args[0]
            if len(stmt.targets) != 2:
                raise error("`for k, i in enumerate(domain)` binds an ordinal and a coordinate", stmt.span, rule="D6")
        elif len(stmt.targets) != 1:
            raise error("an ordered for loop binds one index name", stmt.span, rule="O2")
        domain = self.domain_of(self.expr(iterable), iterable.span)
        carried = self.carried(stmt.body)
        point_name = stmt.targets[-1].id
        index = Value(INDEX, point_name)
        args = [index] + [Value(v.type, n.lstrip(".")) for n, v in carried]
        self.carry_args.update(id(a) for a in args[1:])
        scope = dict(self.scope)
        scope[point_name] = index
        for (name, _), arg in zip(carried, args[1:]):
            scope[name] = arg

        def build_body():
            if enumerated:  # the local ordinal: (i - begin) // step (D6)
                begin = self.emit("dom_begin", [domain], [INDEX], span=stmt.span).result
                step = self.emit("dom_step", [domain], [INDEX], span=stmt.span).result
                offset = self.emit("sub", [index, begin], [INDEX], span=stmt.span).result
                ordinal = self.emit("floordiv", [offset, step], [INDEX], span=stmt.span,
                                    hint=stmt.targets[0].id).result
                self.scope[stmt.targets[0].id] = ordinal
            self.statements(stmt.body)

        body, final = self.region(args, scope, build_body)
        body.ops.append(Op("yield", self.check_carries(carried, final, stmt.span), span=stmt.span))
        op = self.emit("for", [domain] + [v for _, v in carried], [v.type for _, v in carried],
                       regions=[body], span=stmt.span)
        for (name, _), result in zip(carried, op.results):
            result.hint = name.lstrip(".")
            self.scope[name] = result

    def while_stmt(self, stmt: ast.While) -> None:
        carried = self.carried(stmt.body)
        cond_args = [Value(v.type, n.lstrip(".")) for n, v in carried]
        body_args = [Value(v.type, n.lstrip(".")) for n, v in carried]
        self.carry_args.update(id(a) for a in cond_args + body_args)
        cond_scope = dict(self.scope)
        body_scope = dict(self.scope)
        for (name, _), c, b in zip(carried, cond_args, body_args):
            cond_scope[name] = c
            body_scope[name] = b

        def build_cond():
            self.emit("condition", [self.condition(stmt.cond)], span=stmt.cond.span)

        cond_block, _ = self.region(cond_args, cond_scope, build_cond)
        body, final = self.region(body_args, body_scope, lambda: self.statements(stmt.body))
        body.ops.append(Op("yield", self.check_carries(carried, final, stmt.span), span=stmt.span))
        op = self.emit("while", [v for _, v in carried], [v.type for _, v in carried],
                       regions=[cond_block, body], span=stmt.span)
        for (name, _), result in zip(carried, op.results):
            result.hint = name.lstrip(".")
            self.scope[name] = result

    def parallel_stmt(self, stmt: ast.For) -> None:
        call = stmt.iter
        if call.keywords or not call.args:
            raise error("I.parallel takes one or more domains", call.span, rule="P1")
        domains = [self.domain_of(self.expr(arg), arg.span) for arg in call.args]
        indices = [Value(INDEX, "") for _ in domains]
        scope = dict(self.scope)
        if len(stmt.targets) == 1:
            if len(indices) == 1:
                indices[0].hint = stmt.targets[0].id
                scope[stmt.targets[0].id] = indices[0]
            else:
                for k, value in enumerate(indices):
                    value.hint = f"{stmt.targets[0].id}{k}"
                scope[stmt.targets[0].id] = TupleValue(tuple(indices))
        elif len(stmt.targets) == len(indices):
            for target, value in zip(stmt.targets, indices):
                value.hint = target.id
                scope[target.id] = value
        else:
            raise error(f"I.parallel over {len(indices)} domains binds 1 or {len(indices)} names, "
                        f"not {len(stmt.targets)}", stmt.span, rule="P1")
        saved_outer = self.parallel_outer
        self.parallel_outer = {n for n, v in self.scope.items() if isinstance(v, (Value, TupleValue, Literal))}
        try:
            body, _ = self.region(indices, scope, lambda: self.statements(stmt.body))
        finally:
            self.parallel_outer = saved_outer
        body.ops.append(Op("yield", [], span=stmt.span))
        self.emit("parallel", domains, [], regions=[body], span=stmt.span)

    def domain_of(self, value, span) -> Value:
        if isinstance(value, Value) and value.type == DOMAIN:
            return value
        raise error("expected a domain", span, rule="D1",
                    hint="iterate I.domain(begin, end, step), x.axis(k), or I.parallel(...)")

    # -- expressions ---------------------------------------------------------------------------
    def expr(self, node):
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            raise error("this expression is not supported here", node.span)
        return method(node)

    def expr_Constant(self, node: ast.Constant):
        if isinstance(node.value, str):
            raise error("strings are only allowed as arguments of builtins", node.span)
        return Literal(node.value, node.span)

    def expr_Name(self, node: ast.Name):
        if node.id in self.scope:
            return self.scope[node.id]
        if node.id in DTYPES:
            return DTypeRef(DTYPES[node.id])
        if node.id.startswith(".dom_"):
            raise error("internal builtin used without arguments", node.span)
        raise error(f"undefined name '{node.id}'", node.span,
                    hint="define it before use; names defined inside a loop or one branch are local to it")

    def expr_TupleExpr(self, node: ast.TupleExpr):
        return TupleValue(tuple(self.expr(e) for e in node.elts))

    def expr_Attribute(self, node: ast.Attribute):
        base = self.expr(node.value)
        if isinstance(base, NamespaceRef):
            if node.attr in DTYPES:
                return DTypeRef(DTYPES[node.attr])
            if node.attr in ("inf", "nan", "pi", "e"):
                import math
                return Literal({"inf": math.inf, "nan": math.nan, "pi": math.pi, "e": math.e}[node.attr], node.span)
            raise error(f"I.{node.attr} is not a value", node.span, hint="call it, e.g. I.exp(x)")
        if isinstance(base, Value) and isinstance(base.type, TensorType) and node.attr == "shape":
            return TupleValue(tuple(self.index_value(e, node.span) for e in self.shape_of(base)))
        raise error(f"unknown attribute '.{node.attr}'", node.span)

    def expr_UnaryOp(self, node: ast.UnaryOp):
        operand = self.expr(node.operand)
        if node.op == "+":
            self.numeric(operand, node.operand.span)
            return operand
        if isinstance(operand, Literal):
            return self.fold_unary(node, operand)
        value = self.numeric(operand, node.operand.span)
        dtype = element_dtype(value.type)
        if node.op == "not":
            if value.type != BOOL:
                raise error(f"'not' needs a scalar bool, got {value.type}", node.span, rule="O1",
                            hint="use ~ for element-wise negation of bool tensors")
            return self.emit("not", [value], [value.type], span=node.span).result
        if node.op == "~":
            if not (dtype.is_int or dtype.is_bool):
                raise error(f"'~' needs an integer or bool operand, got {dtype}", node.span)
            return self.shaped_like(self.emit("not", [value], [value.type], span=node.span).result, value)
        if dtype.is_bool:
            raise error("cannot negate a bool", node.span, hint="use `not` or ~")
        return self.shaped_like(self.emit("neg", [value], [value.type], span=node.span).result, value)

    def fold_unary(self, node, lit: Literal):
        v = lit.value
        if node.op == "not":
            if not isinstance(v, bool):
                raise error("'not' needs a bool", node.span, rule="O1")
            return Literal(not v, node.span)
        if node.op == "~":
            if isinstance(v, float):
                raise error("'~' needs an integer", node.span)
            return Literal(~v if not isinstance(v, bool) else not v, node.span)
        if isinstance(v, bool):
            raise error("cannot negate a bool", node.span)
        return Literal(-v, node.span)

    def numeric(self, value, span) -> Value | Literal:
        if isinstance(value, (Value, Literal)):
            if isinstance(value, Value) and value.type == DOMAIN:
                raise error("a domain is not a number", span, hint="iterate it, or use its bounds")
            return value
        raise error("expected a number or tensor", span)

    def expr_BinOp(self, node: ast.BinOp):
        return self.binary(node.op, self.expr(node.left), self.expr(node.right), node.left.span,
                           node.right.span, node.span)

    def binary(self, op, left, right, lspan, rspan, span):
        left, right = self.numeric(left, lspan), self.numeric(right, rspan)
        if isinstance(left, Literal) and isinstance(right, Literal):
            return self.fold_binary(op, left, right, span)
        dtype = self.common_dtype(left, right, lspan, rspan, span)
        kind = _BINARY[op]
        self.check_operator(kind, op, dtype, span)
        a, b = self.pointwise_operands([left, right], dtype, [lspan, rspan], span)
        return self.shaped_like(self.emit(kind, [a, b], [a.type], span=span).result, a)

    def shaped_like(self, result: Value, operand: Value) -> Value:
        """Record that a pointwise result has its (already broadcast) operand's extents."""
        if isinstance(operand.type, TensorType):
            self.shapes[id(result)] = self.shape_of(operand)
        return result

    def check_operator(self, kind, op, dtype: DType, span) -> None:
        if kind == "div" and not dtype.is_float:
            raise error(f"'/' is true division and needs float operands, got {dtype}", span,
                        hint="use // for integer floor division, or I.cast to a float dtype")
        if kind in ("and", "or", "xor") and dtype.is_float:
            raise error(f"'{op}' needs integer or bool operands, got {dtype}", span)
        if kind in ("shl", "shr") and not dtype.is_int:
            raise error(f"'{op}' needs integer operands, got {dtype}", span)
        if kind in ("add", "sub", "mul", "floordiv", "mod", "pow", "min", "max") and dtype.is_bool:
            raise error(f"'{op}' is not defined on bool", span, hint="use &, |, ^ or I.cast to an integer")

    def fold_binary(self, op, a: Literal, b: Literal, span) -> Literal:
        x, y = a.value, b.value
        if isinstance(x, bool) or isinstance(y, bool):
            if op in "&|^" and isinstance(x, bool) and isinstance(y, bool):
                return Literal({"&": x and y, "|": x or y, "^": x != y}[op], span)
            raise error(f"'{op}' is not defined on bool literals", span)
        if isinstance(x, int) and isinstance(y, int) and y > 0 and (
                (op == "**" and abs(x) > 1 and (abs(x).bit_length() - 1) * y > _MAX_CONST_BITS)
                or (op == "<<" and x and y > _MAX_CONST_BITS)):
            raise error(f"the constant expression '{op}' is too large for any dtype", span,
                        hint="integer dtypes hold at most 64 bits")
        try:
            if op == "/":
                return Literal(float(x) / float(y), span)
            if op in ("&", "|", "^", "<<", ">>") and (isinstance(x, float) or isinstance(y, float)):
                raise error(f"'{op}' needs integer operands", span)
            result = {"+": lambda: x + y, "-": lambda: x - y, "*": lambda: x * y, "//": lambda: x // y,
                      "%": lambda: x % y, "**": lambda: x ** y, "&": lambda: x & y, "|": lambda: x | y,
                      "^": lambda: x ^ y, "<<": lambda: x << y, ">>": lambda: x >> y}[op]()
        except ZeroDivisionError:
            raise error("division by zero in a constant expression", span) from None
        except (OverflowError, ValueError):
            raise error("this constant expression has no finite value", span) from None
        if isinstance(result, int) and result.bit_length() > _MAX_CONST_BITS:
            raise error(f"the constant expression '{op}' is too large for any dtype", span,
                        hint="integer dtypes hold at most 64 bits")
        return Literal(result, span)

    def common_dtype(self, left, right, lspan, rspan, span) -> DType:
        types = [element_dtype(v.type) for v in (left, right) if isinstance(v, Value)]
        if len(types) == 2 and types[0] != types[1]:
            a, b = quote(lspan) or "the left operand", quote(rspan) or "the right operand"
            hint = "dtypes never convert implicitly; cast one side explicitly"
            if quote(lspan) and quote(rspan):
                hint += f", e.g. I.cast({b[1:-1]}, {types[0]}) or I.cast({a[1:-1]}, {types[1]})"
            raise error(f"dtype mismatch: {a} is {types[0]} but {b} is {types[1]}", span, hint=hint)
        return types[0]

    def pointwise_operands(self, operands, dtype: DType, spans, span) -> list[Value]:
        """Give literals the dtype, then broadcast every operand to the common shape (S2)."""
        values = [self.scalar_of(v, dtype, s, "this operand") if isinstance(v, Literal) else v
                  for v, s in zip(operands, spans)]
        shapes = [self.shape_of(v) for v in values]
        if all(not s for s in shapes):
            return values
        result = broadcast_extents(self, shapes, spans)
        return [broadcast_to(self, v, s, result, sp) for v, s, sp in zip(values, shapes, spans)]

    def scalar_of(self, value, dtype: DType, span, what: str) -> Value:
        """``value`` as a scalar of ``dtype``: literals convert, values must already match."""
        if isinstance(value, Literal):
            return self.const(literal_as(value, dtype), dtype, value.span)
        if isinstance(value, Value) and value.type == dtype:
            return value
        if isinstance(value, Value) and isinstance(value.type, DType):
            raise error(f"dtype mismatch: {what} is {dtype} but the value is {value.type}", span,
                        hint=f"use I.cast(..., {dtype})")
        if isinstance(value, Value) and isinstance(value.type, TensorType):
            raise error(f"expected a scalar {dtype}, got a tensor {value.type}", span,
                        hint="index the tensor to get an element")
        raise error(f"expected a scalar {dtype}", span)

    def expr_Compare(self, node: ast.Compare):
        left, right = self.numeric(self.expr(node.left), node.left.span), self.numeric(self.expr(node.right),
                                                                                       node.right.span)
        if isinstance(left, Literal) and isinstance(right, Literal):
            x, y = left.value, right.value
            return Literal({"<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y, "==": x == y, "!=": x != y}[node.op],
                           node.span)
        dtype = self.common_dtype(left, right, node.left.span, node.right.span, node.span)
        if dtype.is_bool and node.op not in ("==", "!="):
            raise error(f"'{node.op}' is not defined on bool", node.span)
        a, b = self.pointwise_operands([left, right], dtype, [node.left.span, node.right.span], node.span)
        result_type = TensorType(BOOL, a.type.shape) if isinstance(a.type, TensorType) else BOOL
        op = self.emit("cmp", [a, b], [result_type], {"pred": _COMPARE[node.op]}, span=node.span)
        if isinstance(a.type, TensorType):
            self.shapes[id(op.result)] = self.shape_of(a)
        return op.result

    def expr_Membership(self, node: ast.Membership):
        """``i in d``: begin <= i < end and (i - begin) % step == 0."""
        element = self.as_index(self.expr(node.element), node.element.span)
        domain = self.domain_of(self.expr(node.domain), node.domain.span)
        span = node.span
        begin, end, step = (self.emit(q, [domain], [INDEX], span=span).result
                            for q in ("dom_begin", "dom_end", "dom_step"))
        lo = self.emit("cmp", [begin, element], [BOOL], {"pred": "le"}, span=span).result
        hi = self.emit("cmp", [element, end], [BOOL], {"pred": "lt"}, span=span).result
        offset = self.emit("sub", [element, begin], [INDEX], span=span).result
        rem = self.emit("mod", [offset, step], [INDEX], span=span).result
        zero = self.const(0, INDEX, span)
        on_step = self.emit("cmp", [rem, zero], [BOOL], {"pred": "eq"}, span=span).result
        inside = self.emit("and", [self.emit("and", [lo, hi], [BOOL], span=span).result, on_step], [BOOL],
                           span=span).result
        return self.emit("not", [inside], [BOOL], span=span).result if node.negated else inside

    def expr_BoolOp(self, node: ast.BoolOp):
        # Short-circuit: the right side runs only when needed (it may read memory).
        left = self.condition(node.left)
        then_block, _ = self.region([], self.scope, lambda: None)
        else_block, _ = self.region([], self.scope, lambda: None)
        if node.op == "and":
            rhs_block, value = self.cond_region(node.right)
            const_block = Block([], [])
            saved = self.block
            self.block = const_block
            false = self.const(False, BOOL, node.span)
            self.block = saved
            const_block.ops.append(Op("yield", [false]))
            regions = [rhs_block, const_block]
        else:
            rhs_block, value = self.cond_region(node.right)
            const_block = Block([], [])
            saved = self.block
            self.block = const_block
            true = self.const(True, BOOL, node.span)
            self.block = saved
            const_block.ops.append(Op("yield", [true]))
            regions = [const_block, rhs_block]
        return self.emit("if", [left], [BOOL], regions=regions, span=node.span).result

    def cond_region(self, expr) -> tuple[Block, Value]:
        holder = {}

        def build():
            holder["v"] = self.condition(expr)
            self.block.ops.append(Op("yield", [holder["v"]]))

        block, _ = self.region([], self.scope, build)
        return block, holder["v"]

    def expr_Conditional(self, node: ast.Conditional):
        cond = self.condition(node.cond)
        holder = {}

        def branch(expr, key):
            def build():
                holder[key] = self.expr(expr)
            return build

        then_block, _ = self.region([], self.scope, branch(node.then, "a"))
        else_block, _ = self.region([], self.scope, branch(node.orelse, "b"))
        a, b = holder["a"], holder["b"]
        if isinstance(a, Literal) and isinstance(b, Literal):
            dtype = a.default_dtype if not isinstance(a.value, float) else b.default_dtype
            if isinstance(b.value, float):
                dtype = b.default_dtype
        else:
            dtype = self.common_dtype(a, b, node.then.span, node.orelse.span, node.span)
        for block, value, span in ((then_block, a, node.then.span), (else_block, b, node.orelse.span)):
            saved = self.block
            self.block = block
            scalar = self.scalar_of(value, dtype, span, "a branch of the conditional")
            self.block = saved
            block.ops.append(Op("yield", [scalar]))
        return self.emit("if", [cond], [dtype], regions=[then_block, else_block], span=node.span).result

    def expr_Subscript(self, node: ast.Subscript):
        base = self.expr(node.value)
        if isinstance(base, TupleValue):
            if len(node.indices) != 1 or not isinstance(node.indices[0], ast.Constant) or \
                    not isinstance(node.indices[0].value, int):
                raise error("a tuple is indexed by one integer literal", node.span)
            k = node.indices[0].value
            if not -len(base.items) <= k < len(base.items):
                raise error(f"tuple index {k} out of range for {len(base.items)} items", node.span)
            return base.items[k]
        if isinstance(base, Value) and base.type == DOMAIN:
            return relations.subregion(self, base, node)
        if not isinstance(base, Value) or not isinstance(base.type, TensorType):
            raise error("only tensors, domains and tuples can be indexed", node.value.span)
        if any(isinstance(item, ast.Slice) for item in node.indices):
            return relations.view(self, base, node)
        return subscript_read(self, base, node)  # a load, or a gather for tensor indices (M1)

    def as_index(self, value, span) -> Value:
        if isinstance(value, Literal):
            return self.const(literal_as(value, INDEX), INDEX, span)
        if isinstance(value, Value) and value.type == INDEX:
            return value
        if isinstance(value, Value) and isinstance(value.type, DType) and value.type.is_int:
            return self.emit("cast", [value], [INDEX], span=span).result
        got = value.type if isinstance(value, Value) else "this value"
        raise error(f"an index must be an integer scalar, got {got}", span, rule="D3")

    def expr_Call(self, node: ast.Call):
        func = node.func
        if isinstance(func, ast.Name) and func.id.startswith(".dom_"):
            domain = self.expr(node.args[0])
            return self.emit(func.id[1:], [domain], [INDEX], span=node.span).result
        if isinstance(func, ast.Attribute):
            base = self.expr(func.value)
            if isinstance(base, NamespaceRef):
                return call_builtin(self, func.attr, node)
            if isinstance(base, Value) and isinstance(base.type, TensorType):
                return relations.tensor_method(self, base, func.attr, node)
            raise error(f"'.{func.attr}(...)' is not defined here", func.span)
        if isinstance(func, ast.Name) and func.id == "len" and func.id not in self.scope:
            if len(node.args) != 1 or node.keywords:
                raise error("len takes one domain or tensor", node.span)
            value = self.expr(node.args[0])
            if isinstance(value, Value) and value.type == DOMAIN:
                return self.emit("dom_len", [value], [INDEX], span=node.span).result
            if isinstance(value, Value) and isinstance(value.type, TensorType) and value.type.rank > 0:
                return self.index_value(self.shape_of(value)[0], node.span)
            raise error("len takes a domain or a tensor with at least one axis", node.args[0].span)
        if isinstance(func, ast.Name) and func.id == "enumerate" and func.id not in self.scope:
            raise error("enumerate(domain) is only iterated by an ordered for loop", node.span, rule="D6",
                        hint="write `for k, i in enumerate(domain):`")
        target = self.expr(func)
        if isinstance(target, FunctionRef):
            return self.call_helper(target.name, node)
        raise error("this is not callable", func.span)

    def call_helper(self, name: str, node: ast.Call):
        sig = self.signatures[name]
        if sig.kind != "fn":
            raise error(f"'{name}' is a kernel; only @intent.fn helpers can be called", node.func.span,
                        hint="move the shared code into an @intent.fn helper")
        if node.keywords:
            raise error("helpers take positional arguments", node.span)
        if len(node.args) != len(sig.params):
            raise error(f"'{name}' takes {len(sig.params)} argument{'s' if len(sig.params) != 1 else ''}, "
                        f"got {len(node.args)}", node.span,
                        hint=f"call it as {name}({', '.join(sig.param_names)}), as declared at line {sig.span.line}")
        operands = []
        for arg, ann, pname in zip(node.args, sig.params, sig.param_names):
            value = self.expr(arg)
            if ann.items:
                if not isinstance(value, TupleValue) or len(value.items) != len(ann.items):
                    raise error(f"parameter '{pname}' of '{name}' expects a tuple of {len(ann.items)} items",
                                arg.span)
                for item, item_ann in zip(value.items, ann.items):
                    operands.append(self.helper_operand(item, item_ann, arg.span, pname, name))
                continue
            operands.append(self.helper_operand(value, ann, arg.span, pname, name))
        return self.finish_call(name, operands, node.span)

    def helper_operand(self, value, ann, span, pname: str, name: str) -> Value:
        want = ann.type
        if isinstance(want, DType):
            return self.scalar_of(value, want, span, f"parameter '{pname}' of '{name}'")
        if not isinstance(value, Value) or not isinstance(value.type, TensorType) or \
                value.type.dtype != want.dtype or value.type.rank != want.rank:
            got = value.type if isinstance(value, Value) else "a literal"
            raise error(f"parameter '{pname}' of '{name}' expects {want}, got {got}", span)
        return value

    def finish_call(self, name: str, operands: list[Value], span):
        sig = self.signatures[name]
        result_types = [a.type for a in sig.results]
        op = self.emit("call", operands, result_types, {"callee": name}, span=span)
        if not op.results:
            return TupleValue(())
        return op.results[0] if len(op.results) == 1 else TupleValue(tuple(op.results))
