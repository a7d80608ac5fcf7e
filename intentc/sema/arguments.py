"""Argument checks shared by the builtins: arity, keyword arguments, tensor operands, flags.

One copy of each check, so that every builtin words the same mistake the same way.
"""
from __future__ import annotations

from intentc.diagnostics import error
from intentc.kir.core import Value
from intentc.kir.types import TensorType
from intentc.parse import ast


def arity(node: ast.Call, count: int) -> None:
    """``node`` passes exactly ``count`` positional arguments."""
    if len(node.args) != count:
        name = node.func.attr if isinstance(node.func, ast.Attribute) else "this function"
        raise error(f"I.{name} takes {count} arguments, got {len(node.args)}", node.span)


def no_keywords(name: str, node: ast.Call) -> None:
    """``I.name`` takes positional arguments only."""
    if node.keywords:
        raise error(f"I.{name} takes no keyword arguments", node.span)


def keywords(node: ast.Call, allowed: tuple[str, ...], what: str | None, rule: str | None = None) -> dict:
    """The keyword arguments of ``node`` by name. Any other name is a diagnostic saying that
    ``I.what`` has no such argument (with ``what=None``: that the argument is unexpected)
    and listing ``allowed`` in its order."""
    kwargs = {}
    for kw in node.keywords:
        if kw.name not in allowed:
            message = f"I.{what} has no argument '{kw.name}'" if what else f"unexpected argument '{kw.name}'"
            raise error(message, kw.span, rule=rule,
                        hint="accepted: " + (", ".join(allowed) if allowed else "no keyword arguments"))
        kwargs[kw.name] = kw.value
    return kwargs


def is_tensor(value) -> bool:
    """``value`` is a tensor-typed KIR value."""
    return isinstance(value, Value) and isinstance(value.type, TensorType)


def tensor_arg(b, node: ast.Expr, what: str, rule: str, hint: str | None = None) -> Value:
    """``node`` evaluated by the builder ``b``; it must be a tensor ("<what> must be a tensor")."""
    value = b.expr(node)
    if not is_tensor(value):
        raise error(f"{what} must be a tensor", node.span, rule=rule, hint=hint)
    return value


def flag(node: ast.Expr | None, default: bool, hint: str | None = None) -> bool:
    """A ``True`` / ``False`` literal argument, ``default`` when absent."""
    if node is None:
        return default
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        return node.value
    raise error("expected True or False", node.span, hint=hint)
