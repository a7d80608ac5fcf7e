"""Type annotations of parameters, results and locals: ``f32``, ``f32[N, 4]``, ``(f32, i32)``."""
from __future__ import annotations

import difflib
from dataclasses import dataclass

from intentc.diagnostics import error
from intentc.kir.types import DTYPES, DType, TensorType
from intentc.parse import ast
from intentc.sema.shapes import static_shape


@dataclass(frozen=True)
class Annotated:
    """A parameter or result type with its extents as written (names or literals, S1)."""

    type: DType | TensorType | None  # None for a tuple of items (helper parameters only)
    extents: tuple[str | int, ...] = ()
    items: tuple["Annotated", ...] = ()
    optional: bool = False  # `f32[C] | None`: the argument may be absent (kernel parameters only)


def dtype_of(expr: ast.Expr) -> DType:
    if isinstance(expr, ast.Name) and expr.id in DTYPES:
        return DTYPES[expr.id]
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "I" \
            and expr.attr in DTYPES:
        return DTYPES[expr.attr]
    name = expr.id if isinstance(expr, ast.Name) else expr.attr if isinstance(expr, ast.Attribute) else None
    close = difflib.get_close_matches(name, list(DTYPES), n=1) if name else []
    raise error(f"unknown dtype '{name}'" if name else "expected a dtype", expr.span,
                hint=(f"did you mean '{close[0]}'? " if close else "") + "dtypes are " + ", ".join(sorted(DTYPES)))


def _extent_text(node: ast.Expr) -> str | None:
    """``2 * N``-style result extents as canonical text, or None if the node is not one."""
    if isinstance(node, ast.Name) and node.id not in DTYPES:
        return node.id
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return str(node.value)
    if isinstance(node, ast.BinOp) and node.op in ("+", "-", "*", "//"):
        left, right = _extent_text(node.left), _extent_text(node.right)
        if left is not None and right is not None:
            return f"({left}{node.op}{right})"
    return None


def annotation(expr: ast.Expr, result: bool = False) -> Annotated:
    if isinstance(expr, ast.BinOp) and expr.op == "|" and _is_none(expr.right):
        if result:
            raise error("a result cannot be None", expr.span,
                        hint="return a tensor always; an empty one (extent 0) says 'nothing'")
        inner = annotation(expr.left)
        if not isinstance(inner.type, TensorType):
            raise error(f"only tensor parameters can be optional; '{expr.left.span.text}' is a scalar", expr.span,
                        hint="give the scalar a default instead, e.g. `eps: f32 = 1e-5`")
        return Annotated(inner.type, inner.extents, optional=True)
    if isinstance(expr, ast.TupleExpr) and not result:
        if not expr.elts:
            raise error("a tuple type needs at least one item", expr.span)
        return Annotated(None, (), tuple(annotation(e) for e in expr.elts))
    if isinstance(expr, ast.Subscript):
        dtype = dtype_of(expr.value)
        extents: list[str | int] = []
        for item in expr.indices:
            if isinstance(item, ast.Name):
                if item.id in DTYPES:
                    raise error(f"'{item.id}' is a dtype, not an extent name", item.span)
                extents.append(item.id)
            elif isinstance(item, ast.Constant) and isinstance(item.value, int) and not isinstance(item.value, bool):
                if item.value < 0:
                    raise error("an extent cannot be negative", item.span, rule="S1")
                extents.append(item.value)
            elif isinstance(item, ast.BinOp) and _extent_text(item) is not None:
                extents.append(_extent_text(item)[1:-1])  # checked on entry (to_kir.py)
            else:
                raise error("an extent is a name, a non-negative integer literal or an expression of them",
                            item.span, rule="S1", hint="write e.g. f32[N, 4] or f32[B, T, 3 * C]")
        return Annotated(TensorType(dtype, static_shape(extents)), tuple(extents))
    return Annotated(dtype_of(expr))


def _is_none(expr: ast.Expr) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is None


def result_annotations(expr: ast.Expr | None) -> list[Annotated]:
    if expr is None:
        return []
    if isinstance(expr, ast.TupleExpr):
        return [annotation(e, result=True) for e in expr.elts]
    return [annotation(expr, result=True)]
