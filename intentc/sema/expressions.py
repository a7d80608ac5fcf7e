"""Expressions: names, literals, operators, comparisons, conditionals, calls, and their typing.

``ExpressionBuilder.expr(node)`` evaluates an AST expression to a KIR ``Value``, an untyped
``Literal`` (folded with other literals, folding.py), a ``TupleValue`` or a compile-time
reference (values.py). Typing rules:

- dtypes never convert implicitly: the two sides of an operator have one dtype, a
  literal adopts its partner's (``scalar_of``, ``literal_as``); ``I.cast`` converts;
- tensor operands broadcast to one shape with explicit ops (S2, S3, shapes.py);
- a condition is a scalar bool (O1); ``and`` / ``or`` short-circuit (the right side may
  read memory); indices are integer scalars converted to ``index`` (D3);
- ``I.name(...)`` dispatches through the builtin table (builtins.py); a call of an
  ``@intent.fn`` helper becomes a ``call`` op, inlined later.
"""
from __future__ import annotations

import math

from intentc.diagnostics import error, quote
from intentc.kir.core import Block, Op, Value
from intentc.kir.types import BOOL, DOMAIN, DTYPES, INDEX, DType, TensorType, element_dtype
from intentc.parse import ast
from intentc.sema.optional_params import OptionalTensor, presence_test, refuse_unchecked_use
from intentc.sema import conversions, strided, windows
from intentc.sema.conversions import CarryTypeChange, literal_fits
from intentc.sema.builtins import call_builtin
from intentc.sema.folding import fold_binary, fold_compare, fold_unary
from intentc.sema.imports import imported
from intentc.sema.memory import subscript_read
from intentc.sema.pointwise import convert
from intentc.sema.python_names import CALLS as PYTHON_CALLS, hint_for
from intentc.sema.relations import subregion, tensor_method, view
from intentc.sema.shapes import broadcast_extents, broadcast_to
from intentc.sema.state import BuilderState
from intentc.sema.values import (ConstantRef, DTypeRef, FunctionRef, Literal, ModuleRef, NamespaceRef, TupleValue,
                                 literal_as)

_BINARY = {"+": "add", "-": "sub", "*": "mul", "/": "div", "//": "floordiv", "%": "mod", "**": "pow",
           "&": "and", "|": "or", "^": "xor", "<<": "shl", ">>": "shr"}
_COMPARE = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne"}


class ExpressionBuilder(BuilderState):
    """Evaluation and typing of expressions, on top of the builder's state."""

    def condition(self, expr) -> Value:
        """``expr`` as a scalar bool value (O1); a bool literal becomes a constant."""
        value = self.expr(expr)
        if isinstance(value, Literal) and isinstance(value.value, bool):
            return self.const(value.value, BOOL, expr.span)
        if not isinstance(value, Value) or value.type != BOOL:
            got = value.type if isinstance(value, Value) else "a literal"
            raise error(f"a condition must be a scalar bool, got {got}", expr.span, rule="O1",
                        hint=f"compare explicitly, e.g. `{expr.span.text if quote(expr.span) else 'x'} != 0`")
        return value

    def expr(self, node):
        """Evaluate an expression node (dispatch on its class: ``expr_<Class>``)."""
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            raise error("this expression is not supported here", node.span)
        return method(node)

    def expr_Constant(self, node: ast.Constant):
        if node.value is None:
            raise error("None is only the default of an optional parameter or what `x is None` tests", node.span,
                        hint="declare `x: f32[N] | None = None` and test `if x is not None:`")
        if isinstance(node.value, str):
            raise error("strings are only allowed as arguments of builtins", node.span)
        return Literal(node.value, node.span)

    def expr_Name(self, node: ast.Name):
        if node.id in self.scope:
            value = self.scope[node.id]
            if isinstance(value, OptionalTensor):  # usable only where its presence is known
                refuse_unchecked_use(node.id, value, node.span)
            if windows.is_window(self, value):  # read where this use stands (windows.py)
                return windows.rebuilt(self, value, node.span)
            if isinstance(value, ConstantRef):
                return self.constant(value, node.span)
            return value
        if node.id in DTYPES:
            return DTypeRef(DTYPES[node.id])
        if node.id.startswith(".dom_"):
            raise error("internal builtin used without arguments", node.span)
        hint = hint_for(node.id) if node.id not in self.signatures else None
        raise error(f"undefined name '{node.id}'", node.span,
                    hint=hint or "define it before use; names defined inside a loop or one branch are local to it")

    def constant(self, ref: ConstantRef, span):
        """A module-level constant where it is used: an untyped literal, or a value of its dtype."""
        if ref.dtype is None:
            return Literal(ref.value, span)
        return self.const(ref.value, ref.dtype, span)

    def tensor_operand(self, node):
        """``node`` evaluated as the tensor a subscript or a write addresses: a name bound to a
        window is the window itself (its relation composes into the access, windows.py)."""
        if isinstance(node, ast.Name) and node.id in self.scope and windows.is_window(self, self.scope[node.id]):
            return self.scope[node.id]
        return self.expr(node)

    def expr_TupleExpr(self, node: ast.TupleExpr):
        return TupleValue(tuple(self.expr(e) for e in node.elts))

    def expr_Attribute(self, node: ast.Attribute):
        base = self.tensor_operand(node.value)  # .shape of a window reads no element
        if isinstance(base, NamespaceRef):
            if node.attr in DTYPES:
                return DTypeRef(DTYPES[node.attr])
            if node.attr in ("inf", "nan", "pi", "e"):
                return Literal({"inf": math.inf, "nan": math.nan, "pi": math.pi, "e": math.e}[node.attr], node.span)
            raise error(f"I.{node.attr} is not a value", node.span, hint="call it, e.g. I.exp(x)")
        if isinstance(base, ModuleRef):
            value = imported(base, node.attr, node.span)
            return self.constant(value, node.span) if isinstance(value, ConstantRef) else value
        if isinstance(base, Value) and isinstance(base.type, TensorType) and node.attr == "shape":
            return TupleValue(tuple(self.index_value(e, node.span) for e in self.shape_of(base)))
        raise error(f"unknown attribute '.{node.attr}'", node.span)

    def expr_UnaryOp(self, node: ast.UnaryOp):
        operand = self.expr(node.operand)
        if node.op == "+":
            self.numeric(operand, node.operand.span)
            return operand
        if isinstance(operand, Literal):
            return fold_unary(node.op, operand, node.span)
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
            return fold_binary(op, left, right, span)
        dtype = self.common_dtype(left, right, lspan, rspan, span)
        kind = _BINARY[op]
        self.check_operator(kind, op, dtype, span)
        a, b = self.pointwise_operands([left, right], dtype, [lspan, rspan], span)
        return self.shaped_like(self.emit(kind, [a, b], [a.type], span=span).result, a)

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

    def common_dtype(self, left, right, lspan, rspan, span) -> DType:
        types = [element_dtype(v.type) for v in (left, right) if isinstance(v, Value)]
        if len(types) == 2 and types[0] != types[1]:
            implicit = conversions.common(left, right)
            if implicit is not None:
                return implicit
            adopted = self.adopt_literal(left, types[1], span) or self.adopt_literal(right, types[0], span)
            if adopted is not None:
                return adopted
            a, b = quote(lspan) or "the left operand", quote(rspan) or "the right operand"
            hint = "only integer scalars convert to a float operand's dtype (and index to i64); cast one side explicitly"
            if quote(lspan) and quote(rspan):
                hint += f", e.g. I.cast({b[1:-1]}, {types[0]}) or I.cast({a[1:-1]}, {types[1]})"
            raise error(f"dtype mismatch: {a} is {types[0]} but {b} is {types[1]}", span, hint=hint)
        return types[0]

    def adopt_literal(self, value, dtype: DType, span) -> DType | None:
        """``dtype`` when ``value`` is a name holding a literal that can take it (its dtype was
        only the literal's default); a loop-carried one has its loop built again with the literal
        in ``dtype`` (statements.py)."""
        if not isinstance(value, Value) or isinstance(value.type, TensorType):
            return None
        carried = self.literal_carries.get(id(value))
        if carried is not None and literal_fits(carried[1], dtype):
            raise CarryTypeChange(error(f"loop-carried '{carried[0]}' holds a literal of dtype {value.type} and "
                                        f"meets {dtype}", span, rule="O2").diagnostics, carried[0], dtype)
        literal = self.literal_values.get(id(value))
        if literal is None and id(value) in self.literal_choices:
            _, a, b = self.literal_choices[id(value)]
            return dtype if literal_fits(a, dtype) and literal_fits(b, dtype) else None
        return dtype if literal is not None and literal_fits(literal, dtype) else None

    def converted(self, value: Value, dtype: DType, span) -> Value:
        """``value`` in ``dtype`` by an implicit conversion: a name holding a literal is that
        literal in ``dtype`` (exact: ``t = 0.1`` meeting f64 is f64's 0.1), anything else a cast."""
        literal = self.literal_values.get(id(value))
        if literal is not None:
            return self.const(literal_as(literal, dtype), dtype, span)
        if id(value) in self.literal_choices:  # `1 if c else 0` meeting i32: the choice of two i32s
            cond, a, b = self.literal_choices[id(value)]
            choices = [self.const(literal_as(v, dtype), dtype, v.span) for v in (a, b)]
            return self.emit("select", [cond] + choices, [dtype], span=span).result
        return convert(self, value, dtype, span)

    def pointwise_operands(self, operands, dtype: DType, spans, span) -> list[Value]:
        """Give literals the dtype, then broadcast every operand to the common shape (S2)."""
        values = [self.scalar_of(v, dtype, s, "this operand") if isinstance(v, Literal) else
                  self.converted(v, dtype, s) if element_dtype(v.type) != dtype else v  # conversions.py
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
        if conversions.converts_to(value, dtype) or (isinstance(value, Value) and self.adopt_literal(value, dtype, span)):
            return self.converted(value, dtype, span)
        if isinstance(value, Value) and isinstance(value.type, DType):
            raise error(f"dtype mismatch: {what} is {dtype} but the value is {value.type}", span,
                        hint=f"use I.cast(..., {dtype})")
        if isinstance(value, Value) and isinstance(value.type, TensorType):
            raise error(f"expected a scalar {dtype}, got a tensor {value.type}", span,
                        hint="index the tensor to get an element")
        raise error(f"expected a scalar {dtype}", span)

    def expr_Compare(self, node: ast.Compare):
        if node.op in ("is", "is not"):  # `bias is not None` (optional_params.py)
            return presence_test(self, node)
        left, right = self.numeric(self.expr(node.left), node.left.span), self.numeric(self.expr(node.right),
                                                                                       node.right.span)
        if isinstance(left, Literal) and isinstance(right, Literal):
            return fold_compare(node.op, left, right, node.span)
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
        result = self.emit("if", [cond], [dtype], regions=[then_block, else_block], span=node.span).result
        if isinstance(a, Literal) and isinstance(b, Literal):
            self.literal_choices[id(result)] = (cond, a, b)
        return result

    def expr_Subscript(self, node: ast.Subscript):
        base = self.tensor_operand(node.value)
        if windows.is_window(self, base):
            if not any(isinstance(item, ast.Slice) for item in node.indices) and len(node.indices) == base.type.rank:
                values = [self.expr(item) for item in node.indices]
                if not any(isinstance(v, Value) and isinstance(v.type, TensorType) for v in values):
                    indices = [self.as_index(v, item.span) for v, item in zip(values, node.indices)]
                    return windows.load(self, base, indices, node.span)  # the element as it is now
            base = windows.rebuilt(self, base, node.value.span)
        if isinstance(base, TupleValue):
            if len(node.indices) != 1 or not isinstance(node.indices[0], ast.Constant) or \
                    not isinstance(node.indices[0].value, int):
                raise error("a tuple is indexed by one integer literal", node.span)
            k = node.indices[0].value
            if not -len(base.items) <= k < len(base.items):
                raise error(f"tuple index {k} out of range for {len(base.items)} items", node.span)
            return base.items[k]
        if isinstance(base, Value) and base.type == DOMAIN:
            return subregion(self, base, node)
        if not isinstance(base, Value) or not isinstance(base.type, TensorType):
            raise error("only tensors, domains and tuples can be indexed", node.value.span)
        if strided.has_step(node):  # an indexed relation, read as a gather (D7)
            return strided.strided_read(self, base, node)
        if any(isinstance(item, ast.Slice) for item in node.indices):
            return view(self, base, node)
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
            # .axis(k) reads only the shape: a window is not rebuilt for it
            base = self.tensor_operand(func.value) if func.attr == "axis" else self.expr(func.value)
            if isinstance(base, NamespaceRef):
                return call_builtin(self, func.attr, node)
            if isinstance(base, ModuleRef):
                target = imported(base, func.attr, func.span)
                if isinstance(target, FunctionRef):
                    return self.call_helper(target.name, node)
                raise error(f"'{base.name}.{func.attr}' is a constant, not a helper", func.span,
                            hint=f"use it as a value: {base.name}.{func.attr}")
            if isinstance(base, Value) and isinstance(base.type, TensorType):
                return tensor_method(self, base, func.attr, node)
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
        if isinstance(func, ast.Name) and func.id in PYTHON_CALLS and func.id not in self.scope \
                and func.id not in self.signatures:
            return PYTHON_CALLS[func.id](self, node)
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
