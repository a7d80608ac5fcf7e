"""Signatures: the parameter and result types every function declares (S1, R4).

A kernel takes scalars and tensors (``mut`` tensors are written in place) and returns
scalars and tensors whose extents are expressions of parameter extents and integer scalar
parameters, so the caller can size them (S1); a helper (``@intent.fn``) may take tuples and never a ``mut`` parameter (R4).
"""
from __future__ import annotations

from dataclasses import dataclass

from intentc.diagnostics import error
from intentc.kir.extents import is_expression
from intentc.kir.extents import names as extent_names
from intentc.kir.extents import solvable
from intentc.kir.types import DType, TensorType
from intentc.parse import ast
from intentc.sema.annotations import Annotated, annotation, result_annotations
from intentc.sema.c_names import check_exported_names
from intentc.sema.optional_params import check_defaults, check_optional_extents
from intentc.source import Span


@dataclass(frozen=True)
class Signature:
    """A function's declared interface, read before any body is built (calls may precede definitions)."""

    name: str
    kind: str  # "kernel" or "fn"
    params: tuple[Annotated, ...]
    param_names: tuple[str, ...]
    results: tuple[Annotated, ...]
    span: Span  # the function's name
    defaults: tuple[tuple, ...] = ()  # per parameter: () or (its default value,), None for an optional tensor


def signature(fn: ast.FunctionDef) -> Signature:
    """The signature of ``fn``, or the first diagnostic about its parameters and results (S1, R4)."""
    if fn.kind == "kernel":
        check_exported_names(fn)  # names a C header and linker can take (c_names.py)
    params, names = [], []
    for param in fn.params:
        if param.name in names:
            raise error(f"parameter '{param.name}' appears twice", param.span)
        ann = annotation(param.annotation)
        if ann.items and fn.kind == "kernel":
            raise error(f"kernel parameter '{param.name}' has a tuple type; kernels take scalars and tensors",
                        param.span, hint="pass the items as separate parameters")
        if any(item.items for item in ann.items):
            raise error("tuple types do not nest", param.span)
        if param.mutable and not isinstance(ann.type, TensorType):
            raise error(f"'mut' applies to tensors; '{param.name}' is a scalar", param.span,
                        hint="scalars are passed by value; return a tensor instead")
        if fn.kind == "fn" and param.mutable:
            raise error("helpers are pure: a @intent.fn cannot take a 'mut' parameter", param.span, rule="R4")
        params.append(ann)
        names.append(param.name)
    defaults = check_defaults(fn, params)
    _check_extent_expressions(fn, params)
    check_optional_extents(fn, params, _plain_extents(params))
    results = result_annotations(fn.returns)
    if fn.kind == "kernel" and results:
        # Returned tensors travel as trailing parameters named out (one) or out0, out1, ...
        reserved = {"out"} if len(results) == 1 else {f"out{k}" for k in range(len(results))}
        for param in fn.params:
            if param.name in reserved:
                raise error(f"parameter '{param.name}' has the name of the kernel's returned value, which the C "
                            f"header, the manifest and out= call '{param.name}'", param.span,
                            hint="rename the parameter, e.g. to 'dst'")
    if fn.kind == "kernel":
        known = _plain_extents(params) | set(extent_scalars(fn, params))
        for ann, expr in zip(results, _result_exprs(fn.returns)):
            if not isinstance(ann.type, TensorType):
                continue  # a scalar result: one trailing pointer in C, a NumPy scalar in Python (docs/abi.md)
            for extent in ann.extents:
                unknown = [n for n in extent_names(extent) if n not in known] if isinstance(extent, str) else []
                scalar = next((a.type for q, a in zip(fn.params, params) if unknown and q.name == unknown[0]), None)
                if scalar is not None:
                    raise error(f"result extent '{unknown[0]}' names a scalar parameter of dtype {scalar}, but extents are "
                                "integers",
                                expr.span, rule="S1", hint=f"declare it as an integer, e.g. `{unknown[0]}: index`")
                if unknown:
                    named = ", ".join(sorted(known)) or "none"
                    raise error(f"result extent '{unknown[0]}' is neither an extent of a parameter nor an integer "
                                "scalar parameter", expr.span, rule="S1",
                                hint="write result extents with parameter extents and integer or index scalar "
                                     f"parameters so the caller can size them (here: {named}), or integer literals")
    return Signature(fn.name, fn.kind, tuple(params), tuple(names), tuple(results), fn.name_span, defaults)


def _result_exprs(expr):
    if expr is None:
        return []
    return list(expr.elts) if isinstance(expr, ast.TupleExpr) else [expr]


def extent_scalars(fn: ast.FunctionDef, params) -> dict[str, DType]:
    """The integer and ``index`` scalar parameters by name: a result extent may use them
    (``-> i64[b - a]``), evaluated on entry before anything is written (S1)."""
    return {p.name: ann.type for p, ann in zip(fn.params, params)
            if isinstance(ann.type, DType) and ann.type.kind in ("int", "uint", "index")}


def _plain_extents(params) -> set[str]:
    """The extent names some parameter axis has by itself (they bind the name, S1); an
    optional tensor binds none (it may be absent)."""
    items = [i for p in params for i in (p.items or (p,)) if not p.optional]
    return {e for p in items for e in p.extents if isinstance(e, str) and not is_expression(e)}


def _solvable_extents(params) -> set[str]:
    """Extent names an axis gives as ``c * N + k`` (``f32[N + 1]``, ``f32[2 * N]``): the body
    binds them by solving (sema/to_kir.py)."""
    items = [i for p in params for i in (p.items or (p,))]
    return {solved[0] for p in items for e in p.extents if (solved := solvable(e)) is not None}


def _check_extent_expressions(fn: ast.FunctionDef, params) -> None:
    """A parameter extent written as an expression (``f32[B, T, 3 * C]``) is checked on entry
    against the names it uses, so each of them must name some axis by itself."""
    known = _plain_extents(params) | _solvable_extents(params)
    for param, ann in zip(fn.params, params):
        for item in (ann.items or (ann,)):
            for extent in item.extents:
                if not is_expression(extent):
                    continue
                unknown = [n for n in extent_names(extent) if n not in known]
                if unknown:
                    raise error(f"the extent '{extent}' of '{param.name}' uses '{unknown[0]}', which no axis is "
                                f"named by itself", param.span, rule="S1",
                                hint=f"give '{unknown[0]}' its own axis somewhere (e.g. a parameter f32[..., "
                                     f"{unknown[0]}]), or an axis c * {unknown[0]} + k from which it can be solved, "
                                     "so that the expression can be checked on entry")
