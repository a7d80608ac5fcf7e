"""Python's spellings inside a kernel: the builtins a Python programmer calls without ``I.``,
and hints for the names that exist in Python or NumPy but not in Intent.

``range(stop)``, ``range(start, stop[, step])`` is ``I.domain(start, stop, step)`` (D1: the
step is positive); ``min``/``max`` of one tensor are the reductions ``I.min``/``I.max`` over
every axis, of two or more values the element-wise ``I.minimum``/``I.maximum`` (left to
right, S2 broadcasting); ``abs(x)`` is ``I.abs(x)``. ``len`` and ``x.shape[k]`` are handled
where they are read (``expressions.py``). A helper or local name of the same spelling wins:
these apply only to names the kernel does not define.
"""
from __future__ import annotations

from dataclasses import replace

from intentc.diagnostics import error
from intentc.kir.core import Value
from intentc.kir.types import TensorType
from intentc.parse import ast
from intentc.sema.builtins import call_builtin
from intentc.sema.values import Literal


def _call(node: ast.Call, name: str, args) -> ast.Call:
    """``I.name(args)`` at ``node``'s place (for the diagnostics of the builtin)."""
    func = ast.Attribute(node.func.span, ast.Name(node.func.span, "I"), name)
    return replace(node, func=func, args=tuple(args))


def _no_keywords(node: ast.Call, name: str) -> None:
    if node.keywords:
        hint = f"write the Intent builtin with its keywords, e.g. I.{name}(x, axis=0)" if name in ("min", "max") \
            else None
        raise error(f"{name}(...) takes no keyword arguments here", node.keywords[0].span, hint=hint)


def _range(b, node: ast.Call):
    _no_keywords(node, "range")
    if not 1 <= len(node.args) <= 3:
        raise error(f"range takes 1 to 3 arguments, got {len(node.args)}", node.span, rule="D1",
                    hint="range(stop), range(start, stop) or range(start, stop, step), as I.domain")
    args = list(node.args)
    if len(args) == 1:
        args.insert(0, ast.Constant(node.span, 0))
    return call_builtin(b, "domain", _call(node, "domain", args))


def _extremum(pairwise: str, reduction: str):
    def handler(b, node: ast.Call):
        name = "min" if pairwise == "minimum" else "max"
        _no_keywords(node, name)
        if not node.args:
            raise error(f"{name}() needs at least one argument", node.span)
        if len(node.args) == 1:
            value = b.expr(node.args[0])
            if isinstance(value, Value) and isinstance(value.type, TensorType):
                return call_builtin(b, reduction, _call(node, reduction, node.args))
            raise error(f"{name} of one value needs a tensor", node.args[0].span,
                        hint=f"{name}(a, b) compares values element-wise; I.{reduction}(x) reduces a tensor")
        values = [b.expr(arg) for arg in node.args]
        if all(isinstance(v, Literal) for v in values):
            return (min if name == "min" else max)(values, key=lambda v: v.value)
        # Left to right: each partial result is bound to a name no source can spell (".min1")
        # so that the builtin reads it as an argument like any other.
        so_far = node.args[0]
        for k, arg in enumerate(node.args[1:]):
            value = call_builtin(b, pairwise, _call(node, pairwise, (so_far, arg)))
            hidden = f".{name}{k}"
            b.scope[hidden] = value
            so_far = ast.Name(node.span, hidden)
        return value
    return handler


def _abs(b, node: ast.Call):
    _no_keywords(node, "abs")
    return call_builtin(b, "abs", _call(node, "abs", node.args))


CALLS = {"range": _range, "min": _extremum("minimum", "min"), "max": _extremum("maximum", "max"), "abs": _abs}

# Names of Python, NumPy or the math module that a kernel cannot use, and what to write.
_NAMESPACE = "the I namespace holds Intent's builtins: np.exp(x) is I.exp(x), np.sum(x, axis=0) is I.sum(x, axis=0)"
HINTS = {
    "np": _NAMESPACE, "numpy": _NAMESPACE, "math": _NAMESPACE, "torch": _NAMESPACE, "jnp": _NAMESPACE,
    "sum": "write I.sum(x) (axis=, keepdims= and acc= as in NumPy)",
    "mean": "write I.mean(x, axis=...)", "prod": "write I.prod(x)",
    "sqrt": "write I.sqrt(x)", "exp": "write I.exp(x)", "log": "write I.log(x)", "tanh": "write I.tanh(x)",
    "where": "write I.where(cond, a, b)", "cumsum": "write I.cumsum(x)",
    "argmax": "write I.argmax(x, axis=...)", "argmin": "write I.argmin(x, axis=...)",
    "float": "convert with I.cast(x, f32) (or f64)", "int": "convert with I.cast(x, i64)",
    "round": "write I.round(x) (half to even), I.floor, I.ceil or I.trunc",
    "sin": "write I.sin(x)", "cos": "write I.cos(x)", "floor": "write I.floor(x)", "ceil": "write I.ceil(x)",
    "pow": "write x ** y or I.pow(x, y)", "fmod": "write x % y or I.fmod(x, y)",
    "zeros": "a kernel-local tensor is I.buffer(dtype, extents); results are returned or written to mut parameters",
    "empty": "a kernel-local tensor is I.buffer(dtype, extents)",
    "ones": "a kernel-local tensor is I.buffer(dtype, extents)",
    "arange": "I.indices(I.domain(begin, end, step)) is the tensor of a domain's points",
    "print": "kernels have no side output: return the values, or write them to a mut parameter",
    "enumerate": "for k, i in enumerate(domain): is an ordered loop over a domain",
    "zip": "iterate a domain and index each tensor with its point",
    "list": "kernels hold tensors, scalars and tuples, not lists", "dict": "kernels hold no dicts",
}


def hint_for(name: str) -> str | None:
    """What to write instead of a Python or NumPy name, or None."""
    return HINTS.get(name)
