"""Argument checks shared by the builtins: arity, keyword arguments, tensor operands, flags.

One copy of each check, so that every builtin words the same mistake the same way.
"""
from __future__ import annotations

from intentc.diagnostics import error
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
