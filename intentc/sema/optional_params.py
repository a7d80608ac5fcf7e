"""Optional and default parameters of kernels: ``bias: f32[C] | None = None``, ``eps: f32 = 1e-5``.

A default is a literal of the parameter's dtype (checked here, once); the calling
convention fills it in when the argument is missing (``kir/calling.py``: Python and the
interpreter; a C caller passes every scalar). An optional tensor may be absent: a NULL
descriptor in C, a missing keyword or ``None`` in Python. The kernel is compiled once and
tests presence at run time: ``bias is not None`` is a scalar bool (the KIR op ``present``),
and inside ``if bias is not None:`` (or the ``else`` of ``if bias is None:``) ``bias`` is
an ordinary tensor. Anywhere else a use is a diagnostic, so no path reads an absent
tensor. Its extents must be named by required parameters (or be literals), so that the
caller's other arguments size everything; they are checked against the tensor only when
it is present (``bind_optional``).
"""
from __future__ import annotations

from dataclasses import dataclass

from intentc.diagnostics import error
from intentc.kir.core import Value
from intentc.kir.extents import build as build_extent
from intentc.kir.extents import names as extent_names
from intentc.kir.types import BOOL, INDEX, TensorType
from intentc.parse import ast
from intentc.sema.values import Literal, literal_as
from intentc.source import Span


@dataclass(frozen=True)
class OptionalTensor:
    """An optional tensor parameter in scope: its value (usable where presence is known) and
    its presence (a bool value)."""

    name: str
    value: Value
    present: Value
    span: Span


def check_defaults(fn: ast.FunctionDef, params) -> tuple[tuple, ...]:
    """Per parameter () or (default,): literals of the parameter's dtype, None for optional
    tensors; defaults only at the end (as in Python), kernels only."""
    defaults = []
    seen_default = None
    for param, ann in zip(fn.params, params):
        if ann.optional and fn.kind != "kernel" or param.default is not None and fn.kind != "kernel":
            raise error(f"helper parameter '{param.name}' is optional or has a default; only kernels take those",
                        param.span, hint="pass the value at every call of the helper")
        if ann.optional and param.mutable:
            raise error(f"'mut' parameter '{param.name}' cannot be optional", param.span,
                        hint="a written tensor is always given; make it required")
        if param.default is None:
            if seen_default is not None:
                raise error(f"parameter '{param.name}' has no default but follows '{seen_default}', which has one",
                            param.span, hint="put the parameters with defaults last, as in Python")
            defaults.append(())
            continue
        seen_default = param.name
        default = param.default
        if isinstance(ann.type, TensorType):
            if not ann.optional or not (isinstance(default, ast.Constant) and default.value is None):
                raise error(f"the default of tensor parameter '{param.name}' can only be None", default.span,
                            hint=f"declare it optional: `{param.name}: {_written(ann)} | None = None`")
            defaults.append((None,))
            continue
        literal = _literal(default)
        if literal is None:
            raise error(f"the default of '{param.name}' must be a literal", default.span,
                        hint=f"write a number, e.g. `{param.name}: {ann.type} = 1`")
        value = literal_as(literal, ann.type)
        defaults.append((value,))
    return tuple(defaults)


def _written(ann) -> str:
    return f"{ann.type.dtype}[{', '.join(str(e) for e in ann.extents)}]"


def _literal(node: ast.Expr) -> Literal | None:
    sign = 1
    if isinstance(node, ast.UnaryOp) and node.op in ("-", "+"):
        sign = -1 if node.op == "-" else 1
        node = node.operand
    if isinstance(node, ast.Constant) and isinstance(node.value, (bool, int, float)) and node.value is not None:
        if isinstance(node.value, bool):
            return Literal(node.value, node.span) if sign == 1 else None
        return Literal(sign * node.value, node.span)
    return None


def check_optional_extents(fn: ast.FunctionDef, params, bound: set[str]) -> None:
    """An optional tensor's extent names are bound by required parameters."""
    for param, ann in zip(fn.params, params):
        if not ann.optional:
            continue
        for extent in ann.extents:
            unknown = [n for n in extent_names(extent) if n not in bound] if isinstance(extent, str) else []
            if unknown:
                raise error(f"the extent '{unknown[0]}' of optional parameter '{param.name}' is not named by a "
                            "required parameter", param.span, rule="S1",
                            hint="an absent tensor has no extents: name them on a required parameter too")


def bind_optional(b, ast_param: ast.Param, ann, value: Value) -> OptionalTensor:
    """The presence test and the guarded extent checks of one optional tensor parameter
    (``b``: the function builder, its required parameters' extents already bound)."""
    span = ast_param.span
    present = b.emit("present", [value], [BOOL], span=span).result
    shape = []
    for axis, extent in enumerate(ann.extents):
        if isinstance(extent, int):
            want = b.const(extent, INDEX, span)
        else:
            want = build_extent(extent, lambda name: b.named_extents[name][0], lambda c: b.const(c, INDEX, span),
                                lambda op, x, y: b.emit(op, [x, y], [INDEX], span=span).result)
        dim = b.emit("dim", [value], [INDEX], {"axis": axis}, span=span).result
        checked = b.emit("select", [present, dim, want], [INDEX], span=span).result  # absent: nothing to check
        b.emit("assert_eq", [checked, want], span=span, attrs={
            "what": f"extent {extent}: {ast_param.name}.shape[{axis}] = %lld but the kernel expects %lld",
            "rule": "S1"})
        shape.append(want if not isinstance(extent, int) else extent)
    b.shapes[id(value)] = shape
    return OptionalTensor(ast_param.name, value, present, span)


def presence_test(b, node: ast.Compare):
    """``x is None`` / ``x is not None`` of an optional tensor: a scalar bool."""
    target = b.scope.get(node.left.id) if isinstance(node.left, ast.Name) else None
    if not isinstance(node.right, ast.Constant) or node.right.value is not None or \
            not isinstance(target, OptionalTensor):
        raise error(f"'{node.op}' compares an optional tensor parameter with None only", node.span,
                    hint="write `bias is not None` for a parameter declared `bias: f32[C] | None = None`")
    if node.op == "is not":
        return target.present
    false = b.const(False, BOOL, node.span)
    return b.emit("cmp", [target.present, false], [BOOL], {"pred": "eq"}, span=node.span).result


def guarded_name(b, cond: ast.Expr) -> tuple[str | None, bool]:
    """(name, True) when ``cond`` is ``name is not None`` (the then-branch knows it present),
    (name, False) for ``name is None`` (the else-branch does), else (None, False)."""
    if isinstance(cond, ast.Compare) and cond.op in ("is", "is not") and isinstance(cond.left, ast.Name) \
            and isinstance(b.scope.get(cond.left.id), OptionalTensor):
        return cond.left.id, cond.op == "is not"
    return None, False


def refuse_unchecked_use(name: str, target: OptionalTensor, span: Span):
    raise error(f"'{name}' may be None here: it is an optional parameter", span,
                hint=f"use it inside `if {name} is not None:`, where it is a tensor")

