"""MX (OCP Microscaling) values are storage: the rules sema applies to every op it emits (T4).

MX values (``f8e4m3``, ``f8e5m2``, ``f6e2m3``, ``f6e3m2``, ``f4e2m1`` and the ``e8m0``
scales) are read, written, moved (views, selects, gathers) and converted with
``I.cast`` to f32 (or f64) and from f32; any arithmetic on them is an error naming the
cast to write, and a literal is never an MX value. ``I.scaled_contract`` (scaled.py)
multiplies MX blocks directly.
"""
from __future__ import annotations

from intentc.diagnostics import CompileError, error
from intentc.kir.types import DType, element_dtype

MX_ELEMENTS = ("f8e4m3", "f8e5m2", "f6e2m3", "f6e3m2", "f4e2m1")

# Ops that compute with their operands' values: not defined on MX codes.
_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floordiv": "//", "mod": "%", "pow": "**",
            "and": "&", "or": "|", "xor": "^", "shl": "<<", "shr": ">>", "neg": "unary -", "not": "~",
            "cmp": "a comparison", "min": "I.minimum", "max": "I.maximum", "abs": "I.abs", "exp": "I.exp",
            "log": "I.log", "tanh": "I.tanh", "sqrt": "I.sqrt", "reduce": "a reduction", "scan": "a scan",
            "contract": "I.contract", "histogram": "I.histogram", "region_fold": "I.region_fold",
            "region_scan": "I.region_scan", "scatter_reduce": "I.scatter_reduce", "atomic_rmw": "an atomic",
            "atomic_cas": "an atomic", "atomic_load": "an atomic", "atomic_store": "an atomic"}


def check_mx(name: str, operands, result_types, span) -> None:
    """Called for every op sema emits: MX values take part only in data movement and casts."""
    if name == "cast":
        src = element_dtype(operands[0].type)
        dst = element_dtype(result_types[0])
        if src.kind != "mx" and dst.kind != "mx":
            return
        if src.kind == "mx" and dst.name in ("f32", "f64") or dst.kind == "mx" and src.name == "f32":
            return
        if src.kind == "mx":
            raise error(f"{src} values convert to f32 (or f64) only, not to {dst}", span,
                        hint=f"I.cast(I.cast(x, f32), {dst})")
        raise error(f"{dst} values are made from f32 only, not from {src}", span,
                    hint=f"I.cast(I.cast(x, f32), {dst})")
    if name not in _SYMBOLS:
        return
    for value in operands:
        dtype = element_dtype(getattr(value, "type", None))
        if dtype is not None and dtype.kind == "mx":
            raise error(f"{_SYMBOLS[name]} is not defined on {dtype} values: MX types are storage", span,
                        hint="convert first: I.cast(x, f32); I.scaled_contract multiplies MX blocks directly")


def mx_literal(dtype: DType, span) -> CompileError:
    """The diagnostic for a literal used as an MX value."""
    return error(f"a literal cannot be used as {dtype}", span,
                 hint=f"convert an f32: I.cast(1.0, {dtype})")
