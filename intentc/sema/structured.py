"""Reductions and scans (T1, T2): the surface forms and the KIR ops they build.

``I.sum / I.prod / I.max / I.min / I.any / I.all / I.argmax / I.argmin`` and
``I.reduce(x or (x, y, ...), combine=helper, identity=..., axis=..., keepdims=...)``
build one ``reduce`` op; ``I.mean / I.var / I.std`` are sums divided by the member count
(NumPy's definitions, ``ddof`` included); ``I.cumsum / I.cumprod`` and ``I.scan(...)`` build one ``scan``
op. The combine is a typed pure region (for a helper: a ``call`` in the region, inlined
later), the identity is explicit, the axes are kept — exactly what T1/T2 keep.

Every function takes the function builder ``b``; ``BUILTINS`` holds this module's
handlers for the builtin table (builtins.py); memory.py reuses ``combine_region`` and
``identity_of`` for ``I.scatter_reduce``.
"""
from __future__ import annotations

import math

from intentc.diagnostics import error
from intentc.kir.core import Block, Op, Value
from intentc.kir.types import BOOL, DOMAIN, INDEX, DType, TensorType
from intentc.parse import ast
from intentc.sema.annotations import dtype_of
from intentc.sema.arguments import flag, keywords
from intentc.sema.pointwise import convert
from intentc.sema.shapes import broadcast_extents, broadcast_to, static_shape
from intentc.sema.values import FunctionRef, TupleValue, int_range, items_of

REDUCTIONS = {"sum": "add", "prod": "mul", "max": "max", "min": "min", "any": "or", "all": "and"}
SCANS = {"cumsum": "add", "cumprod": "mul"}
_INDEX_MAX = (1 << 63) - 1


def identity_of(combine: str, dtype: DType):
    """The value a builtin combine leaves unchanged, in ``dtype`` (the lowest / highest for max / min)."""
    if combine == "add":
        return False if dtype.is_bool else 0
    if combine == "mul":
        return 1
    if combine == "or":
        return False
    if combine == "and":
        return True
    low, high = int_range(dtype) if dtype.is_int else (-math.inf, math.inf)
    return low if combine == "max" else high


# -- arguments -------------------------------------------------------------------------------
def _axes(node_axis, rank: int, span, single: bool = False) -> list[int]:
    if node_axis is None or (isinstance(node_axis, ast.Constant) and node_axis.value is None):
        if single and rank != 1:
            raise error("this operation needs one axis for a tensor of rank > 1", span, hint="pass axis=k")
        return list(range(rank))
    items = node_axis.elts if isinstance(node_axis, ast.TupleExpr) else (node_axis,)
    axes = []
    for item in items:
        value = item.value if isinstance(item, ast.Constant) else None
        if isinstance(item, ast.UnaryOp) and item.op == "-" and isinstance(item.operand, ast.Constant):
            value = -item.operand.value
        if not isinstance(value, int) or isinstance(value, bool) or not -rank <= value < rank:
            raise error(f"axis must be an integer literal in [-{rank}, {rank})", item.span)
        axes.append(value % rank)
    if len(set(axes)) != len(axes):
        raise error("an axis appears twice", node_axis.span)
    if single and len(axes) != 1:
        raise error("this operation takes one axis", node_axis.span)
    return sorted(axes)


def _tensor(value, span) -> Value:
    if isinstance(value, Value) and isinstance(value.type, TensorType):
        return value
    raise error("expected a tensor", span, hint="reductions and scans apply to tensors")


def combine_region(b, combine, types: list[DType], span) -> Block:
    """A region (acc..., item...) -> acc... for a builtin op name or a helper."""
    accs = [Value(t, f"a{k}") for k, t in enumerate(types)]
    items = [Value(t, f"b{k}") for k, t in enumerate(types)]
    block = Block(accs + items)
    saved = b.block
    b.block = block
    try:
        if isinstance(combine, str):
            if combine in ("argmax", "argmin"):
                results = _arg_combine(b, combine, accs, items, span)
            else:
                results = [b.emit(combine, [accs[0], items[0]], [types[0]], span=span).result]
        else:
            sig = b.signatures[combine.name]
            if sig.results and [a.type for a in sig.results] != types:
                raise error(f"combine '{combine.name}' returns "
                            f"({', '.join(str(a.type) for a in sig.results)}) but the accumulator is "
                            f"({', '.join(map(str, types))})", span, rule="T1",
                            hint="combine takes two accumulators and returns one")
            operands = _combine_operands(sig, accs, items, span, combine.name)
            op = b.emit("call", operands, types, {"callee": combine.name}, span=span)
            results = op.results
        block.ops.append(Op("yield", results, span=span))
    finally:
        b.block = saved
    return block


def _combine_operands(sig, accs, items, span, name) -> list[Value]:
    k = len(accs)
    shapes = [a.items for a in sig.params]
    if k == 1 and len(sig.params) == 2 and not any(shapes):
        want = [sig.params[0].type, sig.params[1].type]
        got = [accs[0].type, items[0].type]
    elif len(sig.params) == 2 and all(len(s) == k for s in shapes):
        want = [i.type for i in sig.params[0].items] + [i.type for i in sig.params[1].items]
        got = [v.type for v in accs + items]
    else:
        raise error(f"combine '{name}' must take two accumulators of {k} item(s) each", span, rule="T1")
    if want != got:
        raise error(f"combine '{name}' takes ({', '.join(map(str, want))}) but the accumulators are "
                    f"({', '.join(map(str, got))})", span, rule="T1")
    return accs + items


def _arg_combine(b, kind: str, accs, items, span) -> list[Value]:
    """(value, index) pairs: the greater (smaller) value wins, NaN counts as the greatest
    (smallest), ties go to the smaller index — associative and commutative."""
    (v1, i1), (v2, i2) = accs, items
    pred = "gt" if kind == "argmax" else "lt"

    def cmp(p, x, y):
        return b.emit("cmp", [x, y], [BOOL], {"pred": p}, span=span).result

    def both(op, x, y):
        return b.emit(op, [x, y], [BOOL], span=span).result

    better = cmp(pred, v2, v1)
    equal = cmp("eq", v2, v1)
    if v1.type.is_float:
        nan1, nan2 = cmp("ne", v1, v1), cmp("ne", v2, v2)
        not_nan1 = b.emit("not", [nan1], [BOOL], span=span).result
        better = both("and", both("or", better, nan2), not_nan1)
        equal = both("or", equal, both("and", nan1, nan2))
    take = both("or", better, both("and", equal, cmp("lt", i2, i1)))
    return [b.emit("select", [take, v2, v1], [v1.type], span=span).result,
            b.emit("select", [take, i2, i1], [INDEX], span=span).result]


def _along_axis_indices(b, tensor: Value, axis: int, span) -> Value:
    shape = b.shape_of(tensor)
    zero, one = b.const(0, INDEX, span), b.const(1, INDEX, span)
    domain = b.emit("domain", [zero, b.index_value(shape[axis], span), one], [DOMAIN],
                       span=span).result
    ids = b.emit("indices", [domain], [TensorType(INDEX, (None,))], span=span).result
    b.shapes[id(ids)] = [shape[axis]]
    extents = [b.index_value(e, span) for e in shape]
    op = b.emit("broadcast", [ids] + extents, [TensorType(INDEX, tensor.type.shape)], {"map": [axis]},
                   span=span)
    b.shapes[id(op.result)] = list(shape)
    return op.result


# -- reductions ------------------------------------------------------------------------------
def reduction(b, name: str, node: ast.Call):
    args = node.args
    if name in REDUCTIONS or name in ("argmax", "argmin"):
        kwargs = keywords(node, ("acc", "axis", "keepdims") if name not in ("argmax", "argmin")
                          else ("axis", "keepdims"), None)
        if len(args) != 1:
            raise error(f"I.{name} takes one tensor (and keyword arguments)", node.span)
        x = _tensor(b.expr(args[0]), args[0].span)
        if "acc" in kwargs:
            acc = dtype_of(kwargs["acc"])
            if x.type.dtype != acc:
                x = convert(b, x, acc, node.span)
        dtype = x.type.dtype
        if name in ("any", "all") and not dtype.is_bool:
            raise error(f"I.{name} needs a bool tensor, got {dtype}", args[0].span, hint="compare first, e.g. x > 0")
        if name in ("sum", "prod", "max", "min") and dtype.is_bool:
            raise error(f"I.{name} is not defined on bool", args[0].span, hint="use I.any / I.all, or I.cast")
        single = name in ("argmax", "argmin")
        axes = _axes(kwargs.get("axis"), x.type.rank, node.span, single=single)
        keepdims = flag(kwargs.get("keepdims"), False)
        if single:
            ids = _along_axis_indices(b, x, axes[0], node.span)
            identity = [b.const(identity_of("max" if name == "argmax" else "min", dtype), dtype, node.span),
                        b.const(_INDEX_MAX, INDEX, node.span)]
            if dtype.is_float:
                identity[0] = b.const(-math.inf if name == "argmax" else math.inf, dtype, node.span)
            results = _reduce(b, [x, ids], identity, name, axes, keepdims, node.span)
            return results[1]
        combine = REDUCTIONS[name]
        identity = [b.const(identity_of(combine, dtype), dtype, node.span)]
        return _reduce(b, [x], identity, combine, axes, keepdims, node.span)[0]
    # I.reduce(x or (x, y), combine=fn, identity=..., axis=..., keepdims=...)
    kwargs = keywords(node, ("axis", "combine", "identity", "keepdims", "ordered"), None)
    if len(args) != 1 or "combine" not in kwargs or "identity" not in kwargs:
        raise error("I.reduce(x, combine=helper, identity=value, axis=..., keepdims=...)", node.span, rule="T1")
    inputs, identity, combine = _custom(b, args[0], kwargs, node.span)
    x0 = inputs[0]
    axes = _axes(kwargs.get("axis"), x0.type.rank, node.span)
    results = _reduce(b, inputs, identity, combine, axes, flag(kwargs.get("keepdims"), False), node.span,
                           ordered=flag(kwargs.get("ordered"), False))
    return results[0] if len(results) == 1 else TupleValue(tuple(results))


def _custom(b, inputs_node, kwargs, span):
    value = b.expr(inputs_node)
    items = items_of(value)
    inputs = [_tensor(v, inputs_node.span) for v in items]
    shapes = [b.shape_of(v) for v in inputs]
    result = broadcast_extents(b, shapes, [inputs_node.span] * len(inputs))
    inputs = [broadcast_to(b, v, s, result, inputs_node.span) for v, s in zip(inputs, shapes)]
    combine = b.expr(kwargs["combine"])
    if not isinstance(combine, FunctionRef) or b.signatures[combine.name].kind != "fn":
        raise error("combine must name an @intent.fn helper", kwargs["combine"].span, rule="T1")
    ident = b.expr(kwargs["identity"])
    ident_items = items_of(ident)
    if len(ident_items) != len(inputs):
        raise error(f"the identity has {len(ident_items)} item(s) but there are {len(inputs)} input(s)",
                    kwargs["identity"].span, rule="T1")
    identity = [b.scalar_of(v, x.type.dtype, kwargs["identity"].span, "the identity")
                for v, x in zip(ident_items, inputs)]
    return inputs, identity, combine


def _reduce(b, inputs: list[Value], identity: list[Value], combine, axes, keepdims, span,
            ordered: bool = False) -> list:
    """``ordered``: the combine is associative but not commutative; members are combined
    in row-major order of the reduced axes, regrouped but never permuted."""
    shape = b.shape_of(inputs[0])
    types = [v.type.dtype for v in inputs]
    region = combine_region(b, combine, types, span)
    kept = [e for k, e in enumerate(shape) if k not in axes]
    out_shape = [1 if k in axes else e for k, e in enumerate(shape)] if keepdims else kept
    if out_shape or keepdims:
        static = static_shape(out_shape)
        result_types = [TensorType(t, static) for t in types]
    else:
        result_types = list(types)
    attrs = {"axes": axes, "keepdims": keepdims, "arity": len(inputs)}
    if ordered:
        attrs["ordered"] = True
    op = b.emit("reduce", inputs + identity, result_types, attrs, [region], span=span)
    for result in op.results:
        if isinstance(result.type, TensorType):
            b.shapes[id(result)] = list(out_shape)
    return list(op.results)


# -- statistics: mean, variance, standard deviation ---------------------------------------------
def statistic(b, name: str, node: ast.Call):
    """``I.mean(x, axis=..., keepdims=..., acc=...)``, ``I.var`` and ``I.std`` (also ``ddof=``):
    ``sum(x) / n``, ``sum((x - mean(x))**2) / (n - ddof)`` and its square root, over the
    reduced axes (all by default), each sum a ``reduce`` (T1) and each operation rounded once
    in the float dtype (``x``'s, or ``acc``, into which ``x`` is converted first)."""
    kwargs = keywords(node, ("acc", "axis", "keepdims") + (("ddof",) if name != "mean" else ()), None)
    if len(node.args) != 1:
        raise error(f"I.{name} takes one tensor (and keyword arguments)", node.span)
    x = _tensor(b.expr(node.args[0]), node.args[0].span)
    if "acc" in kwargs:
        acc = dtype_of(kwargs["acc"])
        if x.type.dtype != acc:
            x = convert(b, x, acc, node.span)
    dtype = x.type.dtype
    if not dtype.is_float:
        raise error(f"I.{name} needs a float tensor, got {dtype}", node.args[0].span,
                    hint=f"compute it in a float dtype with acc=, e.g. I.{name}(x, acc=f64)")
    axes = _axes(kwargs.get("axis"), x.type.rank, node.span)
    keepdims = flag(kwargs.get("keepdims"), False)
    ddof = _ddof(kwargs.get("ddof"))
    shape = b.shape_of(x)
    span = node.span

    def average(values: Value, keep: bool, less: int) -> Value:
        zero = b.const(identity_of("add", dtype), dtype, span)
        total = _reduce(b, [values], [zero], "add", axes, keep, span)[0]
        count = b.const(1, INDEX, span)
        for axis in axes:
            count = b.emit("mul", [count, b.index_value(shape[axis], span)], [INDEX], span=span).result
        if less:
            count = b.emit("sub", [count, b.const(less, INDEX, span)], [INDEX], span=span).result
        members = b.emit("cast", [count], [dtype], span=span).result
        return b.binary("/", total, members, span, span, span)

    if name == "mean":
        return average(x, keepdims, 0)
    deviation = b.binary("-", x, average(x, True, 0), span, span, span)
    variance = average(b.binary("*", deviation, deviation, span, span, span), keepdims, ddof)
    if name == "var":
        return variance
    return b.shaped_like(b.emit("sqrt", [variance], [variance.type], span=span).result, variance)


def _ddof(node) -> int:
    if node is None:
        return 0
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool) \
            and node.value >= 0:
        return node.value
    raise error("ddof must be a non-negative integer literal", node.span,
                hint="ddof=0 divides by n (the population variance), ddof=1 by n - 1 (the sample variance)")


# -- scans ---------------------------------------------------------------------------------------
def scan(b, name: str, node: ast.Call):
    args = node.args
    if name in SCANS:
        kwargs = keywords(node, ("acc", "axis", "exclusive", "reverse"), None)
        if len(args) != 1:
            raise error(f"I.{name} takes one tensor", node.span)
        x = _tensor(b.expr(args[0]), args[0].span)
        if "acc" in kwargs:
            x = convert(b, x, dtype_of(kwargs["acc"]), node.span)
        if x.type.dtype.is_bool:
            raise error(f"I.{name} is not defined on bool", args[0].span)
        combine = SCANS[name]
        inputs = [x]
        identity = [b.const(identity_of(combine, x.type.dtype), x.type.dtype, node.span)]
    else:
        kwargs = keywords(node, ("axis", "combine", "exclusive", "identity", "init", "reverse"), None)
        if len(args) != 1 or "combine" not in kwargs or "identity" not in kwargs:
            raise error("I.scan(x, combine=helper, identity=value, axis=-1, exclusive=False, reverse=False)",
                        node.span, rule="T2")
        inputs, identity, combine = _custom(b, args[0], kwargs, node.span)
    axis_node = kwargs.get("axis")
    rank = inputs[0].type.rank
    axis = _axes(axis_node, rank, node.span, single=True)[0] if axis_node is not None else rank - 1
    region = combine_region(b, combine, [v.type.dtype for v in inputs], node.span)
    attrs = {"axis": axis, "exclusive": flag(kwargs.get("exclusive"), False),
             "reverse": flag(kwargs.get("reverse"), False), "arity": len(inputs)}
    init = []
    if "init" in kwargs:  # the running value starts from init instead of the identity
        value = b.expr(kwargs["init"])
        items = items_of(value)
        if len(items) != len(inputs):
            raise error(f"init has {len(items)} item(s) but the scan has {len(inputs)} input(s)",
                        kwargs["init"].span, rule="T2")
        init = [b.scalar_of(v, x.type.dtype, kwargs["init"].span, "the initial value")
                for v, x in zip(items, inputs)]
        attrs["has_init"] = True
    op = b.emit("scan", inputs + identity + init, [v.type for v in inputs], attrs, [region], span=node.span)
    for result in op.results:
        b.shapes[id(result)] = b.shape_of(inputs[0])
    return op.results[0] if len(op.results) == 1 else TupleValue(tuple(op.results))


BUILTINS = {**{name: reduction for name in (*REDUCTIONS, "argmax", "argmin", "reduce")},
            **{name: statistic for name in ("mean", "var", "std")},
            **{name: scan for name in (*SCANS, "scan")}}
