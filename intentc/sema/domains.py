"""Domain builtins: ``I.domain(begin, end, step=1)`` (D1, D2) and ``I.indices(domain)`` (C1, D6).

A domain is the ordered coordinates ``begin, begin + step, ...`` below ``end`` with a
positive step (D1); the bounds may be runtime scalars and the domain may be empty (D2).
A literal step that is zero or negative is a diagnostic here. ``I.indices`` is the
domain's own (source) coordinates as a 1-D ``index`` tensor whose extent is the domain's
length (C1, D6).
"""
from __future__ import annotations

from intentc.diagnostics import error
from intentc.kir.types import DOMAIN, INDEX, TensorType
from intentc.parse import ast
from intentc.sema.arguments import arity, no_keywords


def _domain(b, name: str, node: ast.Call):
    args = node.args
    kwargs = {k.name: k.value for k in node.keywords}
    params = ["begin", "end", "step"]
    values = list(args) + [None] * (3 - len(args))
    for key, value in kwargs.items():
        if key not in params or values[params.index(key)] is not None:
            raise error(f"unexpected argument '{key}'", node.span)
        values[params.index(key)] = value
    if values[0] is None or values[1] is None or len(args) > 3:
        raise error("I.domain(begin, end, step=1) needs a begin and an end", node.span, rule="D1")
    step_node = values[2]
    literal = step_node.operand if isinstance(step_node, ast.UnaryOp) and step_node.op == "-" else step_node
    if isinstance(literal, ast.Constant) and isinstance(literal.value, int) and \
            not isinstance(literal.value, bool) and (literal.value <= 0 or literal is not step_node):
        value = literal.value if literal is step_node else -literal.value
        if value <= 0:
            raise error(f"a domain step must be positive, got {value}", step_node.span, rule="D1",
                        hint="a domain runs upward from begin to end; use a step of 1 or more")
    operands = [b.as_index(b.expr(v), v.span) if v is not None else b.const(1, INDEX, node.span)
                for v in values]
    return b.emit("domain", operands, [DOMAIN], span=node.span).result


def _indices(b, name: str, node: ast.Call):
    no_keywords(name, node)
    arity(node, 1)
    domain = b.domain_of(b.expr(node.args[0]), node.args[0].span)
    op = b.emit("indices", [domain], [TensorType(INDEX, (None,))], span=node.span)
    b.shapes[id(op.result)] = [b.emit("dom_len", [domain], [INDEX], span=node.span).result]
    return op.result


BUILTINS = {"domain": _domain, "indices": _indices}
