"""Statements: assignments, stores, ``if``, ordered ``for`` / ``while`` and ``I.parallel`` loops.

Each function takes the function builder ``b`` (expressions.py) and appends KIR to its
current block. Ordered control is structured SSA: an ``if`` yields the variables its
branches change (O1), a ``for`` / ``while`` carries the variables its body changes and
keeps their dtypes (O2); ``break`` / ``continue`` / ``return`` were normalised before
(O3, normalize.py). An ``I.parallel`` body carries nothing across points: assigning a
name defined outside it is a diagnostic (P2); it never breaks (P4, normalize.py).
Names are single-assignment values: parameters and extents are read-only, a name keeps
its type, and ``x[i] = v`` writes a ``mut`` tensor or a buffer (M2, M4; memory.py), or a
view of one through its relation; ``x[a:b, :] = value`` is a slice assignment (windows.py).
A loop may carry tensors too; they live in buffers (tensor_carries.py).
"""
from __future__ import annotations

from intentc.diagnostics import CompileError, error
from intentc.kir.core import Op, Value
from intentc.kir.types import INDEX, DType, TensorType, element_dtype
from intentc.parse import ast
from intentc.sema.optional_params import guarded_name
from intentc.sema.annotations import dtype_of
from intentc.sema.conversions import CarryTypeChange, literal_fits
from intentc.sema import tensor_carries, windows
from intentc.sema.memory import subscript_write
from intentc.sema.normalize import is_parallel_loop
from intentc.sema.relations import element_indices, view
from intentc.sema.values import DTypeRef, FunctionRef, Literal, NamespaceRef, TupleValue, literal_as


def assigned_names(stmts) -> list[str]:
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


def statements(b, stmts) -> None:
    """Build ``stmts`` in order into the current block of ``b``."""
    for stmt in stmts:
        statement(b, stmt)


def statement(b, stmt) -> None:
    if isinstance(stmt, ast.Assign):
        assign(b, stmt.target, b.expr(stmt.value), stmt.span, stmt.value.span)
    elif isinstance(stmt, ast.AnnAssign):
        dtype = dtype_of(stmt.annotation) if not isinstance(stmt.annotation, ast.Subscript) else None
        if dtype is None:
            raise error("a local annotation names a scalar dtype", stmt.annotation.span,
                        hint="write e.g. `count: i32 = 0`")
        value = b.scalar_of(b.expr(stmt.value), dtype, stmt.value.span, f"'{stmt.target.id}'")
        bind(b, stmt.target, value)
    elif isinstance(stmt, ast.AugAssign):
        current = b.expr(stmt.target)
        value = b.binary(stmt.op, current, b.expr(stmt.value), stmt.target.span, stmt.value.span, stmt.span)
        assign(b, stmt.target, value, stmt.span, stmt.value.span)
    elif isinstance(stmt, ast.ExprStmt):
        b.expr(stmt.value)
    elif isinstance(stmt, ast.Pass):
        pass
    elif isinstance(stmt, ast.If):
        if_stmt(b, stmt)
    elif isinstance(stmt, ast.For):
        if is_parallel_loop(stmt):
            parallel_stmt(b, stmt)
        else:
            for_stmt(b, stmt)
    elif isinstance(stmt, ast.While):
        while_stmt(b, stmt)
    elif isinstance(stmt, ast.Return):
        raise error("'return' must be the last statement of a function", stmt.span, rule="O3")
    elif isinstance(stmt, (ast.Import, ast.FromImport)):
        raise error("imports belong at the top level of a module", stmt.span,
                    hint="move the import above the functions, as the first lines of the file")
    else:
        raise error("this statement is not supported here", stmt.span)


def assign(b, target, value, span, value_span=None) -> None:
    if isinstance(target, ast.Name):
        if isinstance(value, Literal):
            dtype, previous = value.default_dtype, b.scope.get(target.id)
            if target.id.startswith(".") and isinstance(previous, Value) and isinstance(previous.type, DType):
                dtype = previous.type  # a returned literal takes the declared result dtype (normalize.py)
            elif isinstance(previous, Value) and isinstance(previous.type, DType) and literal_fits(value, previous.type):
                dtype = previous.type  # `m: i32 = 0` then `m = 1`: the literal takes the name's dtype
            literal = value
            value = b.scalar_of(value, dtype, value.span, f"'{target.id}'")
            if dtype == literal.default_dtype or id(previous) in b.literal_values:
                b.literal_values[id(value)] = literal  # the dtype is the literal's until it meets another
        bind(b, target, value)
    elif isinstance(target, ast.TupleExpr):
        items = value.items if isinstance(value, TupleValue) else None
        if items is None or len(items) != len(target.elts):
            raise error(f"cannot unpack into {len(target.elts)} names", span)
        for name, item in zip(target.elts, items):
            assign(b, name, item, span)
    elif isinstance(target, ast.Subscript):
        store(b, target, value, span, value_span)
    else:
        raise error("cannot assign to this expression", target.span,
                    hint="assign to a name, a tuple of names, or an element like out[i]")


def bind(b, target: ast.Name, value) -> None:
    name = target.id
    if name in b.readonly:
        raise error(f"cannot assign to '{name}': it is {b.readonly[name]}", target.span,
                    hint="assign to a new local name")
    if b.parallel_outer is not None and name in b.parallel_outer:
        raise error(f"'{name}' is defined outside I.parallel and assigned inside it: a loop-carried value",
                    target.span, rule="P2",
                    hint="parallel points carry nothing across iterations; assign a new local name inside "
                         "the loop, or combine the points with a reduction (I.sum, I.reduce) or an ordered "
                         "`for` loop")
    if isinstance(value, (NamespaceRef, FunctionRef, DTypeRef)):
        raise error("only values can be assigned to names", target.span)
    previous = b.scope.get(name)
    if isinstance(previous, Value) and isinstance(value, Value) and previous.type != value.type:
        if name.startswith(".retval"):  # an early return, normalised into an assignment (normalize.py)
            raise error(f"dtype mismatch: '{b.sig.name}' declares the result {previous.type} but this "
                        f"returns {value.type}", target.span, hint=f"use I.cast(..., {previous.type})")
        if id(previous) in b.carry_args and isinstance(value.type, DType):
            raise CarryTypeChange(error(
                f"loop-carried '{name}' changes type from {previous.type} to {value.type}", target.span,
                rule="O2", hint=f"a value updated in a loop keeps one dtype; give it that dtype "
                                f"before the loop, e.g. `{name}: {value.type} = ...`").diagnostics, name, value.type)
        if not (isinstance(previous.type, TensorType) and isinstance(value.type, TensorType)):
            raise error(f"'{name}' changes type from {previous.type} to {value.type}", target.span,
                        hint=f"use a new name, or I.cast(..., {element_dtype(previous.type)})")
    if isinstance(value, Value) and not value.hint:
        value.hint = name
    b.scope[name] = value


def store(b, target: ast.Subscript, value, span, value_span=None) -> None:
    tensor = b.tensor_operand(target.value)
    if not isinstance(tensor, Value) or not isinstance(tensor.type, TensorType):
        raise error("only tensor elements can be assigned", target.value.span)
    if b.sig.kind == "fn":
        raise error(f"helper '{b.sig.name}' writes memory: helpers are pure", target.span, rule="R4",
                    hint="return the value instead; only kernels write into `mut` tensors")
    if id(tensor) not in b.mutable and not windows.is_window(b, tensor):
        windows.readonly_store(b, tensor, target.value.span)
    if any(isinstance(item, ast.Slice) for item in target.indices):  # slice assignment (windows.py)
        windows.slice_assign(b, view(b, tensor, target), value, value_span or span, span)
        return
    if windows.is_window(b, tensor):
        if len(target.indices) != tensor.type.rank:
            element_indices(b, target, tensor)  # the rank diagnostic
        indices = []
        for item in target.indices:
            index = b.expr(item)
            if isinstance(index, Value) and isinstance(index.type, TensorType):
                raise error("a write through a view takes scalar indices", item.span, rule="M1",
                            hint="scatter into the tensor itself with its full indices, e.g. "
                                 "I.scatter(out, (rows, cols), vals)")
            indices.append(b.as_index(index, item.span))
        element = b.scalar_of(value, tensor.type.dtype, span, "an element of the view")
        windows.store(b, tensor, indices, element, span)
        return
    subscript_write(b, target, tensor, value, span)  # a store, or a scatter for tensor indices (M4)


def if_stmt(b, stmt: ast.If) -> None:
    cond = b.condition(stmt.cond)
    before = b.scope
    then_start, else_start = before, before
    guarded, present = guarded_name(b, stmt.cond)
    if guarded is not None:  # `if bias is not None:`: the branch that knows it present sees the tensor
        known = dict(before)
        known[guarded] = before[guarded].value
        then_start, else_start = (known, before) if present else (before, known)
    # A tensor defined before and assigned in a branch lives in one buffer (as a loop carries
    # it, tensor_carries.py): each branch writes its final value there, so the lowering never
    # meets a tensor-valued ``if`` (``if bias is not None: y = y + bias``).
    tensors = [(name, before[name]) for name in assigned_names(stmt.body + stmt.orelse)
               if isinstance(before.get(name), Value) and isinstance(before[name].type, TensorType)]
    carries = tensor_carries.begin(b, stmt, tensors) if tensors else []

    def branch(body):
        def build():
            tensor_carries.bind(b, carries, stmt.span)
            start = dict(b.scope)
            statements(b, body)
            tensor_carries.finish(b, carries, b.scope, start, stmt.span)
        return build

    then_block, then_scope = b.region([], then_start, branch(stmt.body))
    else_block, else_scope = b.region([], else_start, branch(stmt.orelse))
    carried_names = {name for name, _ in tensors}
    merged = []
    for name in assigned_names(stmt.body + stmt.orelse):
        if name in carried_names:
            continue
        then_value, else_value = then_scope.get(name), else_scope.get(name)
        if not isinstance(then_value, Value) or not isinstance(else_value, Value):
            continue  # defined on one path only: not visible after the if
        if then_value is else_value:
            continue
        if then_value.type != else_value.type:
            raise error(f"'{name}' has type {then_value.type} on one branch and {else_value.type} on the other",
                        stmt.span, rule="O1", hint="give both branches the same dtype")
        merged.append((name, then_value, else_value))
    then_block.ops.append(Op("yield", [value for _, value, _ in merged], span=stmt.span))
    else_block.ops.append(Op("yield", [value for _, _, value in merged], span=stmt.span))
    op = b.emit("if", [cond], [value.type for _, value, _ in merged], regions=[then_block, else_block],
                   span=stmt.span)
    b.scope = dict(before)
    for (name, _, _), result in zip(merged, op.results):
        result.hint = name.lstrip(".")
        b.scope[name] = result
    tensor_carries.bind(b, carries, stmt.span)


def loop_carried(b, body) -> tuple[list[tuple[str, Value]], list[tuple[str, Value]]]:
    """The variables a loop body assigns that are defined before it, (name, value before the
    loop): the scalars (region arguments) and the tensors (buffers, tensor_carries.py)."""
    carried, tensors = [], []
    for name in assigned_names(body):
        value = b.scope.get(name)
        if isinstance(value, Value):
            (tensors if isinstance(value.type, TensorType) else carried).append((name, value))
    return carried, tensors


def check_carries(b, carried, scope, span) -> list[Value]:
    out = []
    for name, initial in carried:
        final = scope.get(name)
        if not isinstance(final, Value):
            final = initial
        if final.type != initial.type:
            raise CarryTypeChange(error(
                f"loop-carried '{name}' changes type from {initial.type} to {final.type}", span, rule="O2",
                hint=f"annotate it before the loop, e.g. `{name}: {final.type} = ...`").diagnostics, name, final.type)
        out.append(final)
    return out


def _adopting_literals(build_loop):
    """Build a loop; when its body gives a carried name another dtype and that name holds a
    literal assigned before the loop (``acc = 0.0`` then ``acc = acc + x[i]`` with f64 ``x``),
    the literal takes the body's dtype and the loop is built again: a literal's dtype is the
    one of the context that receives it. A literal that cannot hold the dtype (a float
    literal for an integer, a bool for a number) keeps the O2 error."""
    def build(b, stmt) -> None:
        adopted: set[str] = set()
        while True:
            try:
                return build_loop(b, stmt)
            except CarryTypeChange as change:
                before = b.scope.get(change.name)
                literal = b.literal_values.get(id(before)) if isinstance(before, Value) else None
                if literal is None and isinstance(before, Value) and id(before) in b.literal_carries:
                    raise  # carried by an enclosing loop too: that loop adopts it
                if literal is None or change.name in adopted or not literal_fits(literal, change.dtype):
                    raise CompileError(change.diagnostics) from None
                adopted.add(change.name)
                value = b.const(literal_as(literal, change.dtype), change.dtype, literal.span)
                b.literal_values[id(value)] = literal
                b.scope[change.name] = value
    return build


def _note_literal_carries(b, carried, args) -> None:
    for (name, initial), arg in zip(carried, args):
        literal = b.literal_values.get(id(initial))
        if literal is not None:
            b.literal_carries[id(arg)] = (name, literal)
        elif id(initial) in b.literal_carries:  # an enclosing loop's carry that held a literal
            b.literal_carries[id(arg)] = b.literal_carries[id(initial)]


@_adopting_literals
def for_stmt(b, stmt: ast.For) -> None:
    iterable = stmt.iter
    enumerated = (isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name)
                  and iterable.func.id == "enumerate" and "enumerate" not in b.scope)
    if enumerated:
        if len(iterable.args) != 1 or iterable.keywords:
            raise error("enumerate takes one domain", iterable.span, rule="D6")
        iterable = iterable.args[0]
        if len(stmt.targets) != 2:
            raise error("`for k, i in enumerate(domain)` binds an ordinal and a coordinate", stmt.span, rule="D6")
    elif len(stmt.targets) != 1:
        raise error("an ordered for loop binds one index name", stmt.span, rule="O2")
    domain = b.domain_of(b.expr(iterable), iterable.span)
    carried, tensors = loop_carried(b, stmt.body)
    carries = tensor_carries.begin(b, stmt, tensors)
    point_name = stmt.targets[-1].id
    index = Value(INDEX, point_name)
    b.point_domains[id(index)] = domain
    args = [index] + [Value(v.type, n.lstrip(".")) for n, v in carried]
    b.carry_args.update(id(a) for a in args[1:])
    _note_literal_carries(b, carried, args[1:])
    scope = dict(b.scope)
    scope[point_name] = index
    for (name, _), arg in zip(carried, args[1:]):
        scope[name] = arg

    def build_body():
        tensor_carries.bind(b, carries, stmt.span)
        start = dict(b.scope)
        if enumerated:  # the local ordinal: (i - begin) // step (D6)
            begin = b.emit("dom_begin", [domain], [INDEX], span=stmt.span).result
            step = b.emit("dom_step", [domain], [INDEX], span=stmt.span).result
            offset = b.emit("sub", [index, begin], [INDEX], span=stmt.span).result
            ordinal = b.emit("floordiv", [offset, step], [INDEX], span=stmt.span,
                                hint=stmt.targets[0].id).result
            b.scope[stmt.targets[0].id] = ordinal
        statements(b, stmt.body)
        tensor_carries.finish(b, carries, b.scope, start, stmt.span)

    body, final = b.region(args, scope, build_body)
    body.ops.append(Op("yield", check_carries(b, carried, final, stmt.span), span=stmt.span))
    op = b.emit("for", [domain] + [v for _, v in carried], [v.type for _, v in carried],
                   regions=[body], span=stmt.span)
    for (name, _), result in zip(carried, op.results):
        result.hint = name.lstrip(".")
        b.scope[name] = result
    tensor_carries.bind(b, carries, stmt.span)


@_adopting_literals
def while_stmt(b, stmt: ast.While) -> None:
    carried, tensors = loop_carried(b, stmt.body)
    carries = tensor_carries.begin(b, stmt, tensors)
    cond_args = [Value(v.type, n.lstrip(".")) for n, v in carried]
    body_args = [Value(v.type, n.lstrip(".")) for n, v in carried]
    b.carry_args.update(id(a) for a in cond_args + body_args)
    _note_literal_carries(b, carried, cond_args)
    _note_literal_carries(b, carried, body_args)
    cond_scope = dict(b.scope)
    body_scope = dict(b.scope)
    for (name, _), cond_arg, body_arg in zip(carried, cond_args, body_args):
        cond_scope[name] = cond_arg
        body_scope[name] = body_arg

    def build_cond():
        tensor_carries.bind(b, carries, stmt.span)
        b.emit("condition", [b.condition(stmt.cond)], span=stmt.cond.span)

    def build_body():
        tensor_carries.bind(b, carries, stmt.span)
        start = dict(b.scope)
        statements(b, stmt.body)
        tensor_carries.finish(b, carries, b.scope, start, stmt.span)

    cond_block, _ = b.region(cond_args, cond_scope, build_cond)
    body, final = b.region(body_args, body_scope, build_body)
    body.ops.append(Op("yield", check_carries(b, carried, final, stmt.span), span=stmt.span))
    op = b.emit("while", [v for _, v in carried], [v.type for _, v in carried],
                   regions=[cond_block, body], span=stmt.span)
    for (name, _), result in zip(carried, op.results):
        result.hint = name.lstrip(".")
        b.scope[name] = result
    tensor_carries.bind(b, carries, stmt.span)


def parallel_stmt(b, stmt: ast.For) -> None:
    call = stmt.iter
    if call.keywords or not call.args:
        raise error("I.parallel takes one or more domains", call.span, rule="P1")
    domains = [b.domain_of(b.expr(arg), arg.span) for arg in call.args]
    indices = [Value(INDEX, "") for _ in domains]
    b.point_domains.update((id(index), domain) for index, domain in zip(indices, domains))
    scope = dict(b.scope)
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
    saved_outer = b.parallel_outer
    b.parallel_outer = {n for n, v in b.scope.items() if isinstance(v, (Value, TupleValue, Literal))}
    try:
        body, _ = b.region(indices, scope, lambda: statements(b, stmt.body))
    finally:
        b.parallel_outer = saved_outer
    body.ops.append(Op("yield", [], span=stmt.span))
    b.emit("parallel", domains, [], regions=[body], span=stmt.span)
