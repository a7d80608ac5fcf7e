"""Result extents written as expressions of parameter extents: ``f32[2 * N]``, ``f32[R * C]``.

An extent is an int literal, a name, or ``+ - * //`` over those. The text form
(``"2*N"``) travels in KIR, the manifest and the header; the loader evaluates it with
``evaluate`` to size returned tensors, and lowering turns it into index ops with ``build``.
"""
from __future__ import annotations

import ast as pyast
import re

_OPS = {pyast.Add: "add", pyast.Sub: "sub", pyast.Mult: "mul", pyast.FloorDiv: "floordiv"}


_NAME = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


def _parse(text: str) -> pyast.expr:
    # Names are swapped for placeholders while Python parses the arithmetic, so an extent
    # may be called anything the Intent grammar allows (``import``, ``None``, ``if``).
    originals: list[str] = []

    def placeholder(match: re.Match) -> str:
        originals.append(match.group(0))
        return f"_extent_{len(originals) - 1}"

    try:
        tree = pyast.parse(_NAME.sub(placeholder, text), mode="eval").body
    except SyntaxError:
        raise ValueError(f"not an extent expression: {text!r}") from None
    for node in pyast.walk(tree):
        if isinstance(node, pyast.Name):
            node.id = originals[int(node.id.rsplit("_", 1)[1])]
    for node in pyast.walk(tree):
        if not isinstance(node, (pyast.BinOp, pyast.Name, pyast.Constant, pyast.Load) + tuple(_OPS)):
            raise ValueError(f"not an extent expression: {text!r}")
        if isinstance(node, pyast.Constant) and not isinstance(node.value, int):
            raise ValueError(f"not an extent expression: {text!r}")
    return tree


def names(text: str) -> list[str]:
    return sorted({n.id for n in pyast.walk(_parse(text)) if isinstance(n, pyast.Name)})


def evaluate(text: str, env: dict[str, int]) -> int:
    def ev(node):
        if isinstance(node, pyast.Constant):
            return node.value
        if isinstance(node, pyast.Name):
            return env[node.id]
        a, b = ev(node.left), ev(node.right)
        op = _OPS[type(node.op)]
        if op == "floordiv":
            return a // b if b else 0
        return {"add": a + b, "sub": a - b, "mul": a * b}[op]

    return ev(_parse(text))


def build(text: str, lookup, const, binary):
    """Build the extent with callbacks: ``lookup(name)``, ``const(int)``, ``binary(op, a, b)``."""
    def ev(node):
        if isinstance(node, pyast.Constant):
            return const(node.value)
        if isinstance(node, pyast.Name):
            return lookup(node.id)
        return binary(_OPS[type(node.op)], ev(node.left), ev(node.right))

    return ev(_parse(text))


def affine(text: str) -> tuple[dict[str, int], int] | None:
    """``text`` as ``sum(c * name) + k`` with integer coefficients, or None (a product of two
    names, a floor division)."""
    def ev(node):
        if isinstance(node, pyast.Constant):
            return {}, node.value
        if isinstance(node, pyast.Name):
            return {node.id: 1}, 0
        a, b = ev(node.left), ev(node.right)
        if a is None or b is None:
            return None
        op = _OPS[type(node.op)]
        if op in ("add", "sub"):
            sign = 1 if op == "add" else -1
            terms = dict(a[0])
            for name, c in b[0].items():
                terms[name] = terms.get(name, 0) + sign * c
            return {n: c for n, c in terms.items() if c}, a[1] + sign * b[1]
        if op == "mul" and (not a[0] or not b[0]):
            (terms, k), factor = (b, a[1]) if not a[0] else (a, b[1])
            return {n: c * factor for n, c in terms.items() if c * factor}, k * factor
        return None

    return ev(_parse(text))


def solvable(text: str) -> tuple[str, int, int] | None:
    """``(name, c, k)`` when ``text`` is ``c * name + k`` with ``c > 0``: the name is the extent
    ``(value - k) / c`` of an axis whose extent is ``text``."""
    form = affine(text) if is_expression(text) else None
    if form is None or len(form[0]) != 1:
        return None
    (name, c), = form[0].items()
    return (name, c, form[1]) if c > 0 else None


def is_expression(extent) -> bool:
    return isinstance(extent, str) and not extent.isidentifier()
