"""Indexed memory, atomics, RNG and ragged relations (spec §8-§10): surface forms -> KIR.

Every indexed access is one index relation (M1): per source axis a scalar ``index`` or an
``index`` tensor, the tensors (and a mask, and written values) broadcast to one shape (S2):

- ``x[i, j]`` with scalar indices is an element ``load`` (or ``store``); with a tensor index
  (``x[idx]``, ``x[i, idx]``, ``x[rows, cols]``) a ``gather`` (or ``scatter``) whose result
  has the indices' shape and fuses into the surrounding tensor expression;
- ``I.gather(x, i..., mask=valid, fill=v)`` / ``I.load(...)``: masked reads (M3: an invalid
  lane reads nothing and yields ``fill``); ``I.store(dst, i..., value, mask=valid)``;
- ``I.scatter(dst, idx, vals, mask=None, unique=False)``: a unique store (M4); ``unique=True``
  is the author's assertion for what the compiler cannot prove (checked by
  ``sanitize="unique"``);
- ``I.scatter_reduce(dst, idx, vals, combine="add", mask=None, identity=None)`` (M5);
- ``I.atomic_add/sub/min/max/and/or/xor/exchange(t, i..., value, order=...)``,
  ``I.atomic_cas(t, i..., expected, desired, order=...)``, ``I.atomic_load(t, i..., order=)``,
  ``I.atomic_store(t, i..., value, order=)`` (M6, A1, A2), returning old values;
- ``I.buffer(dtype, [extents], fill=v)``: a logical buffer (kernel-local mutable storage);
- ``I.philox((k0, k1), (c0, c1, c2, c3))`` -> four u32 words (Philox4x32-10, N1) and
  ``I.uniform(key, counter, dtype=f32)`` -> floats in [0, 1): four f32 ``(w >> 8) * 2**-24``,
  or two f64 ``((w0 << 21) ^ (w1 >> 11)) * 2**-53`` from the word pairs (N1, N2);
- ``I.ragged(outer, member_source, offsets, mapping=None)`` and ``I.members(r, g)``: surface
  helpers only (G3). ``I.ragged`` checks the offsets at run time (monotone, inside the
  member domain, G2) where it stands, so a bad relation fails before anything is written;
  ``I.members(r, g)`` is the subregion ``member_source[offsets[g]:offsets[g+1]]`` (a
  domain) or, with a mapping, the index tensor ``mapping[indices(that subregion)]``.
"""
from __future__ import annotations

from dataclasses import dataclass

from intentc.diagnostics import error
from intentc.kir.core import Block, Op, Value
from intentc.kir.types import BOOL, DOMAIN, DTYPES, INDEX, DType, TensorType, element_dtype
from intentc.parse import ast
from intentc.sema.annotations import dtype_of
from intentc.sema.arguments import flag, is_tensor, keywords, tensor_arg
from intentc.sema.pointwise import convert
from intentc.sema.relations import element_indices
from intentc.sema.shapes import broadcast_extents, broadcast_to, static_shape
from intentc.sema.structured import combine_region, identity_of
from intentc.sema.values import FunctionRef, Literal, TupleValue, literal_as

U32 = DTYPES["u32"]
U64 = DTYPES["u64"]
ORDERS = ("relaxed", "acquire", "release", "acq_rel")
_RMW = {"atomic_add": "add", "atomic_sub": "sub", "atomic_min": "min", "atomic_max": "max",
        "atomic_and": "and", "atomic_or": "or", "atomic_xor": "xor", "atomic_exchange": "exchange"}
_COMBINES = ("add", "mul", "min", "max", "and", "or", "xor")
_TENSOR_HINT = "pass a tensor parameter, a logical buffer (I.buffer) or a tensor expression"



@dataclass(frozen=True)
class RaggedRef:
    """``I.ragged(...)``: a compile-time record of the relations (G1); never a KIR value."""

    outer: Value
    source: Value
    offsets: Value
    mapping: Value | None


# ---- small helpers ---------------------------------------------------------------------------------
def _string(node, what: str, choices) -> str:
    if not isinstance(node, ast.Constant) or not isinstance(node.value, str) or node.value not in choices:
        raise error(f"{what} must be one of " + ", ".join(f'"{c}"' for c in choices), node.span,
                    hint=f'e.g. {what.split()[-1]}="{choices[0]}"')
    return node.value


def _writable(b, tensor: Value, span, what: str, rule: str = "M2") -> None:
    if b.sig.kind == "fn":
        raise error(f"helper '{b.sig.name}' {what}: helpers are pure", span, rule="R4",
                    hint="return values instead; only kernels write into `mut` tensors or buffers")
    if id(tensor) in b.windows:
        raise error("cannot write through a view here: this builtin takes the tensor itself with full indices",
                    span, rule=rule,
                    hint="write through the view with `view[i] = v`, or pass the tensor with its full indices")
    if id(tensor) not in b.mutable:
        name = b.params.get(id(tensor))
        desc = f"parameter '{name}' is read-only" if name else "this tensor is an immutable value"
        raise error(f"cannot write: {desc}", span, rule=rule,
                    hint="declare the parameter as `mut`, or write into a logical buffer (I.buffer)" if name else
                    "write into a `mut` parameter or a logical buffer (I.buffer)")


def _index(b, value, span):
    """An index operand: a scalar index (integers convert) or an index tensor."""
    if is_tensor(value):
        dtype = value.type.dtype
        if not dtype.is_int:
            raise error(f"an index tensor must hold integers, got {dtype}", span, rule="M1",
                        hint="cast it with I.cast(..., i64)")
        return value if dtype == INDEX else convert(b, value, INDEX, span)
    return b.as_index(value, span)


def _mask(b, node):
    value = b.expr(node)
    if isinstance(value, Literal):
        if not isinstance(value.value, bool):
            raise error("a mask is a bool (scalar or tensor)", node.span, rule="M3",
                        hint="write mask=True, or a comparison such as mask=(idx >= 0) & (idx < n)")
        return b.const(value.value, BOOL, node.span)
    if not isinstance(value, Value) or element_dtype(value.type) != BOOL:
        got = value.type if isinstance(value, Value) else "this value"
        raise error(f"a mask is a bool (scalar or tensor), got {got}", node.span, rule="M3",
                    hint="compare, e.g. mask=(idx >= 0) & (idx < n)")
    return value


def _relation(b, values: list, spans: list, span) -> tuple[list, list | None]:
    """Broadcast the tensors among ``values`` to one shape (S2); scalars stay scalars."""
    tensors = [(k, v) for k, v in enumerate(values) if is_tensor(v)]
    if not tensors:
        return list(values), None
    shapes = [b.shape_of(v) for _, v in tensors]
    result = broadcast_extents(b, shapes, [spans[k] for k, _ in tensors])
    out = list(values)
    for (k, v), shape in zip(tensors, shapes):
        out[k] = broadcast_to(b, v, shape, result, spans[k])
    return out, result


def _space(b, tensor: Value) -> str:
    if id(tensor) in b.params:
        return "external"
    if id(tensor) in b.buffers:
        return "buffer"
    return "value"  # refined from the relation's root by memory_checks.annotate_spaces


def _split_indices(b, tensor: Value, arg_nodes: list, what: str, span) -> list:
    """Index nodes from ``x, i, j`` or ``x, (i, j)``; exactly one per axis."""
    if len(arg_nodes) == 1 and isinstance(arg_nodes[0], ast.TupleExpr) and tensor.type.rank != 1:
        arg_nodes = list(arg_nodes[0].elts)
    rank = tensor.type.rank
    if len(arg_nodes) != rank:
        raise error(f"{what} needs one index per axis of the tensor: it has {rank} "
                    f"ax{'is' if rank == 1 else 'es'} but {len(arg_nodes)} ind{'ex is' if len(arg_nodes) == 1 else 'ices are'}"
                    " given", span, rule="M1", hint="give an index (scalar or index tensor) for every axis")
    return arg_nodes


# ---- reads (M1, M2, M3) ----------------------------------------------------------------------------
def subscript_read(b, base: Value, node: ast.Subscript):
    """``x[i, j]``: an element load, or a gather when an index is a tensor (M1)."""
    if len(node.indices) != base.type.rank:
        return element_indices(b, node, base)  # the rank diagnostic
    values = [b.expr(item) for item in node.indices]
    spans = [item.span for item in node.indices]
    if not any(is_tensor(v) for v in values):
        indices = [b.as_index(v, s) for v, s in zip(values, spans)]
        return b.emit("load", [base] + indices, [base.type.dtype], span=node.span).result
    return gather(b, base, values, spans, None, None, node.span)


def gather(b, src: Value, index_values: list, spans: list, mask, fill, span):
    indices = [_index(b, v, s) for v, s in zip(index_values, spans)]
    values = indices + ([mask] if mask is not None else [])
    values, shape = _relation(b, values, spans + ([span] if mask is not None else []), span)
    indices = values[:len(indices)]
    operands = [src] + indices
    attrs = {"space": _space(b, src), "masked": mask is not None}
    if mask is not None:
        operands += [values[-1], fill]
    if shape is None and mask is None:
        return b.emit("load", [src] + indices, [src.type.dtype], span=span).result
    result_type = TensorType(src.type.dtype, static_shape(shape)) if shape is not None else src.type.dtype
    op = b.emit("gather", operands, [result_type], attrs, span=span)
    if shape is not None:
        b.shapes[id(op.result)] = list(shape)
    return op.result


def _read_builtin(b, name: str, node: ast.Call):
    kwargs = keywords(node, ("mask", "fill"), name)
    if len(node.args) < 1:
        raise error(f"I.{name}(x, i..., mask=valid, fill=value) takes a tensor and its indices", node.span,
                    rule="M1", hint=f"e.g. I.{name}(x, idx, mask=idx < n, fill=0.0)")
    src = tensor_arg(b, node.args[0], f"the first argument of I.{name}", "M1", _TENSOR_HINT)
    nodes = _split_indices(b, src, list(node.args[1:]), f"I.{name}", node.span)
    if ("mask" in kwargs) != ("fill" in kwargs):
        missing = "fill" if "mask" in kwargs else "mask"
        raise error(f"a masked read needs both mask= and fill= (missing {missing}=)", node.span, rule="M3",
                    hint="an invalid lane reads nothing and yields the explicit fill, e.g. "
                         "I.gather(x, idx, mask=valid, fill=0.0)")
    mask = fill = None
    if "mask" in kwargs:
        mask = _mask(b, kwargs["mask"])
        fill = b.scalar_of(b.expr(kwargs["fill"]), src.type.dtype, kwargs["fill"].span, "the fill")
    values = [b.expr(n) for n in nodes]
    return gather(b, src, values, [n.span for n in nodes], mask, fill, node.span)


# ---- writes (M4, M5) --------------------------------------------------------------------------------------
def subscript_write(b, target: ast.Subscript, tensor: Value, value, span) -> None:
    """``out[i, j] = v``: an element store, or a scatter when an index is a tensor (M4)."""
    if len(target.indices) != tensor.type.rank:
        element_indices(b, target, tensor)  # the rank diagnostic
    values = [b.expr(item) for item in target.indices]
    spans = [item.span for item in target.indices]
    if not any(is_tensor(v) for v in values):  # one element: a tensor value is a type error
        indices = [b.as_index(v, s) for v, s in zip(values, spans)]
        name = b.params.get(id(tensor), "the buffer")
        element = b.scalar_of(value, tensor.type.dtype, span, f"an element of '{name}'")
        b.emit("store", [tensor] + indices + [element], span=span)
        return
    scatter(b, tensor, values, spans, value, span, None, unique=False)


def scatter(b, dst: Value, index_values: list, spans: list, vals, span, mask, unique: bool,
            reduce: tuple | None = None) -> None:
    indices = [_index(b, v, s) for v, s in zip(index_values, spans)]
    dtype = dst.type.dtype
    if isinstance(vals, Literal) or (isinstance(vals, Value) and not is_tensor(vals)):
        vals = b.scalar_of(vals, dtype, span, "a written value")
    elif not is_tensor(vals):
        raise error("the written values must be a scalar or a tensor", span, rule="M1")
    elif vals.type.dtype != dtype:
        raise error(f"dtype mismatch: the destination holds {dtype} but the values are {vals.type.dtype}", span,
                    hint=f"use I.cast(..., {dtype})")
    values = indices + [vals] + ([mask] if mask is not None else [])
    values, shape = _relation(b, values, spans + [span] * (len(values) - len(indices)), span)
    indices, vals = values[:len(indices)], values[len(indices)]
    if shape is not None and not is_tensor(vals):
        vals = broadcast_to(b, vals, [], shape, span)
    operands = [dst] + indices + [vals]
    attrs = {"space": _space(b, dst), "masked": mask is not None}
    regions = []
    if reduce is not None:
        combine_name, identity, region = reduce
        operands.append(identity)
        attrs["combine"] = combine_name
        regions = [region]
    else:
        attrs["unique"] = unique
    if mask is not None:
        operands.append(values[-1])
    if reduce is None and shape is None and mask is None and not unique:
        b.emit("store", operands, span=span)
        return
    b.emit("scatter_reduce" if reduce is not None else "scatter", operands, [], attrs, regions, span=span)


def _store_builtin(b, name: str, node: ast.Call):
    kwargs = keywords(node, ("mask",), "store")
    if len(node.args) < 2:
        raise error("I.store(dst, i..., value, mask=valid) takes a tensor, its indices and a value", node.span,
                    rule="M1")
    dst = tensor_arg(b, node.args[0], "the destination of I.store", "M1", _TENSOR_HINT)
    _writable(b, dst, node.args[0].span, "writes memory")
    nodes = _split_indices(b, dst, list(node.args[1:-1]), "I.store", node.span)
    mask = _mask(b, kwargs["mask"]) if "mask" in kwargs else None
    values = [b.expr(n) for n in nodes]
    scatter(b, dst, values, [n.span for n in nodes], b.expr(node.args[-1]), node.span, mask, unique=False)
    return TupleValue(())


def _scatter_args(b, node: ast.Call, what: str):
    if len(node.args) != 3:
        raise error(f"I.{what}(dst, idx, vals, ...) takes a destination, indices and values", node.span,
                    rule="M4" if what == "scatter" else "M5",
                    hint="for several destination axes pass a tuple of indices: (rows, cols)")
    dst = tensor_arg(b, node.args[0], f"the destination of I.{what}", "M1", _TENSOR_HINT)
    _writable(b, dst, node.args[0].span, "writes memory")
    idx_node = node.args[1]
    nodes = list(idx_node.elts) if isinstance(idx_node, ast.TupleExpr) else [idx_node]
    nodes = _split_indices(b, dst, nodes, f"I.{what}", node.span)
    return dst, nodes


def _scatter_builtin(b, name: str, node: ast.Call):
    kwargs = keywords(node, ("mask", "unique"), "scatter")
    dst, nodes = _scatter_args(b, node, "scatter")
    mask = _mask(b, kwargs["mask"]) if "mask" in kwargs else None
    values = [b.expr(n) for n in nodes]
    scatter(b, dst, values, [n.span for n in nodes], b.expr(node.args[2]), node.span, mask,
            unique=flag(kwargs.get("unique"), False, hint="write e.g. unique=True"))
    return TupleValue(())


def _scatter_reduce_builtin(b, name: str, node: ast.Call):
    kwargs = keywords(node, ("combine", "mask", "identity"), "scatter_reduce")
    dst, nodes = _scatter_args(b, node, "scatter_reduce")
    dtype = dst.type.dtype
    combine_node = kwargs.get("combine")
    if combine_node is None or isinstance(combine_node, ast.Constant):
        combine = "add" if combine_node is None else _string(combine_node, "combine", _COMBINES)
        if dtype.is_bool or (dtype.is_float and combine in ("and", "or", "xor")):
            raise error(f'combine="{combine}" is not defined on {dtype}', combine_node.span if combine_node else
                        node.span, rule="M5", hint="use an integer destination, or another combine")
        identity = b.const(_identity(combine, dtype), dtype, node.span)
        if "identity" in kwargs:
            raise error(f'combine="{combine}" has its own identity', kwargs["identity"].span, rule="M5",
                        hint="identity= is only for helper combines")
        name, region_combine = combine, combine
    else:
        helper = b.expr(combine_node)
        if not isinstance(helper, FunctionRef) or b.signatures[helper.name].kind != "fn":
            raise error("combine is one of \"add\", \"mul\", \"min\", \"max\", \"and\", \"or\", \"xor\" or an "
                        "@intent.fn helper", combine_node.span, rule="M5",
                        hint="name a helper `def f(a: T, b: T) -> T` and give identity=, or a builtin combine")
        if "identity" not in kwargs:
            raise error(f"a helper combine needs identity= (the value combine('{helper.name}') leaves "
                        "unchanged)", node.span, rule="M5", hint="e.g. identity=0.0")
        identity = b.scalar_of(b.expr(kwargs["identity"]), dtype, kwargs["identity"].span, "the identity")
        name, region_combine = "helper", helper
    region = combine_region(b, region_combine, [dtype], node.span)
    mask = _mask(b, kwargs["mask"]) if "mask" in kwargs else None
    values = [b.expr(n) for n in nodes]
    scatter(b, dst, values, [n.span for n in nodes], b.expr(node.args[2]), node.span, mask, unique=False,
            reduce=(name, identity, region))
    return TupleValue(())


def _identity(combine: str, dtype: DType):
    """The value ``combine`` leaves unchanged: xor and or 0, and all ones, else as reductions."""
    if combine in ("xor", "or"):
        return False if dtype.is_bool else 0
    if combine == "and":
        return True if dtype.is_bool else (-1 if dtype.is_signed else (1 << dtype.bits) - 1)
    return identity_of(combine, dtype)


# ---- atomics (M6, A1, A2) -------------------------------------------------------------------------------
def _atomic(b, name: str, node: ast.Call):
    kwargs = keywords(node, ("order",), name)
    values = {"atomic_cas": 2, "atomic_load": 0, "atomic_store": 1}.get(name, 1)
    if len(node.args) < 1 + values:
        shape = {"atomic_cas": "t, i..., expected, desired", "atomic_load": "t, i...",
                 "atomic_store": "t, i..., value"}.get(name, "t, i..., value")
        raise error(f"I.{name}({shape}, order=\"relaxed\") takes a tensor, one index per axis and "
                    f"{values} value{'s' if values != 1 else ''}", node.span, rule="M6")
    t = tensor_arg(b, node.args[0], f"the atomic object of I.{name}", "M6", _TENSOR_HINT)
    _writable(b, t, node.args[0].span, "uses an atomic", "M6")
    if t.type.dtype.is_bool or t.type.dtype.kind == "bfloat":
        raise error(f"atomics on {t.type.dtype} are not supported", node.args[0].span, rule="M6",
                    hint="use an integer or float tensor")
    op_name = _RMW.get(name)
    if op_name in ("and", "or", "xor") and not t.type.dtype.is_int:
        raise error(f"I.{name} needs an integer tensor, got {t.type.dtype}", node.args[0].span, rule="M6",
                    hint="bitwise atomics work on integer tensors; floats have atomic add, sub, min, max, exchange, cas")
    index_nodes = list(node.args[1:len(node.args) - values])
    index_nodes = _split_indices(b, t, index_nodes, f"I.{name}", node.span)
    order = _string(kwargs["order"], "order", ORDERS) if "order" in kwargs else "relaxed"
    if name == "atomic_load" and order not in ("relaxed", "acquire"):
        raise error(f'an atomic load cannot be "{order}"', kwargs["order"].span, rule="A2",
                    hint='use "relaxed" or "acquire"')
    if name == "atomic_store" and order not in ("relaxed", "release"):
        raise error(f'an atomic store cannot be "{order}"', kwargs["order"].span, rule="A2",
                    hint='use "relaxed" or "release"')
    indices = []
    for n in index_nodes:
        value = b.expr(n)
        if is_tensor(value):
            raise error("atomics act on one element: indices are scalars", n.span, rule="M6",
                        hint="call the atomic inside I.parallel, once per point")
        indices.append(b.as_index(value, n.span))
    operands = [t] + indices
    for n in node.args[len(node.args) - values:]:
        operands.append(b.scalar_of(b.expr(n), t.type.dtype, n.span, "the atomic's value"))
    dtype = t.type.dtype
    if name == "atomic_store":
        b.emit("atomic_store", operands, [], {"order": order}, span=node.span)
        return TupleValue(())
    if name == "atomic_load":
        return b.emit("atomic_load", operands, [dtype], {"order": order}, span=node.span).result
    if name == "atomic_cas":
        return b.emit("atomic_cas", operands, [dtype], {"order": order}, span=node.span).result
    return b.emit("atomic_rmw", operands, [dtype], {"op": op_name, "order": order}, span=node.span).result


# ---- logical buffers -----------------------------------------------------------------------------------------
def _buffer(b, name: str, node: ast.Call):
    kwargs = keywords(node, ("fill",), "buffer")
    if len(node.args) != 2 or "fill" not in kwargs:
        raise error("I.buffer(dtype, [extents], fill=value) takes a dtype, a list of extents and a fill",
                    node.span, rule="M2", hint="e.g. I.buffer(f32, [n], fill=0.0): every element starts as fill")
    dtype_node = node.args[0]
    dtype = dtype_of(dtype_node)
    if not isinstance(node.args[1], ast.TupleExpr):
        raise error("the extents of I.buffer are a list, e.g. [n, 4]", node.args[1].span, rule="M2",
                    hint="write I.buffer(f32, [n], fill=0.0)")
    extents = []
    for e in node.args[1].elts:
        value = b.expr(e)
        if isinstance(value, Literal):
            n = literal_as(value, INDEX, "M2")
            if n < 0:
                raise error(f"an extent cannot be negative ({n})", e.span, rule="M2", hint="use an extent >= 0")
            extents.append(n)
        else:
            extent = b.as_index(value, e.span)
            _check_no_wrap(b, extent, e.span)
            # A run-time extent is checked where the buffer is made: a negative one would otherwise
            # reach the allocator as a huge unsigned size (M2).
            ok = b.emit("cmp", [extent, b.const(0, INDEX, e.span)], [BOOL], {"pred": "ge"}, span=e.span).result
            b.emit("assert_true", [ok, extent], span=e.span, attrs={
                "what": f"I.buffer: extent %lld on axis {len(extents)} is negative", "rule": "M2", "code": "shape"})
            extents.append(extent)
    if not extents:
        raise error("a buffer has at least one axis", node.args[1].span, rule="M2", hint="use I.buffer(f32, [1], ...)")
    fill = b.scalar_of(b.expr(kwargs["fill"]), dtype, kwargs["fill"].span, "the fill")
    operands = [b.index_value(e, node.span) for e in extents]
    op = b.emit("buffer", operands, [TensorType(dtype, static_shape(extents))], {"dtype": str(dtype)}, span=node.span)
    buf = op.result
    b.shapes[id(buf)] = list(extents)
    b.mutable.add(id(buf))
    b.buffers.add(id(buf))
    _fill(b, buf, operands, fill, node.span)
    return buf


_I64 = DTYPES["i64"]


def _check_no_wrap(b, value: Value, span) -> None:
    """An extent computed with ``+ - *`` of 64-bit integers (``I.buffer(u8, [R * C])``) is
    checked not to wrap, operation by operation where the buffer is made: integers wrap by
    definition, but a wrapped extent would make a buffer of the wrong size (INTENT_E_SHAPE)."""
    op = b.defining_op.get(id(value))
    if op is None or not op.results or op.results[0].type not in (INDEX, _I64):
        return
    if op.name == "cast" and op.operands[0].type in (INDEX, _I64):
        _check_no_wrap(b, op.operands[0], span)
        return
    if op.name not in ("add", "sub", "mul"):
        return
    x, y = op.operands
    _check_no_wrap(b, x, span)
    _check_no_wrap(b, y, span)
    t = op.results[0].type
    c = op.results[0]

    def cmp(pred, u, v):
        return b.emit("cmp", [u, v], [BOOL], {"pred": pred}, span=span).result

    def both(name, u, v):
        return b.emit(name, [u, v], [BOOL], span=span).result

    zero = b.const(0, t, span)
    if op.name == "mul":  # exact iff x == 0 or c // x == y (and not MIN * -1)
        exact = both("or", cmp("eq", x, zero), both("and", cmp("eq", b.emit("floordiv", [c, x], [t], span=span).result, y),
                                                    both("or", cmp("ne", x, b.const(-1, t, span)),
                                                         cmp("ne", y, b.const(-2 ** 63, t, span)))))
    else:  # wraps only when x and y (for sub: x and -y) share a sign that the result lacks
        true = b.const(True, BOOL, span)
        sign_x, sign_y, sign_c = cmp("lt", x, zero), cmp("lt", y, zero), cmp("lt", c, zero)
        differ = both("xor", sign_x, sign_y)
        risky = both("xor", differ, true) if op.name == "add" else differ
        exact = both("or", both("xor", risky, true), both("xor", both("xor", sign_c, sign_x), true))
    args = [v if v.type == INDEX else b.emit("cast", [v], [INDEX], span=span).result for v in (x, y)]
    symbol = {"add": "+", "sub": "-", "mul": "*"}[op.name]
    b.emit("assert_true", [exact] + args, span=span, attrs={
        "what": f"I.buffer: the extent %lld {symbol} %lld does not fit in 64 bits", "rule": "M2", "code": "shape"})


def _fill(b, buf: Value, extents: list[Value], fill: Value, span) -> None:
    """Every element of a new buffer gets ``fill``: a parallel nest of unique stores."""
    zero, one = b.const(0, INDEX, span), b.const(1, INDEX, span)
    domains = [b.emit("domain", [zero, e, one], [DOMAIN], span=span).result for e in extents]
    points = [Value(INDEX, f"f{k}") for k in range(len(extents))]
    body = Block(points, [Op("store", [buf] + points + [fill], span=span, attrs={"inbounds": [True] * len(points)}),
                          Op("yield", [], span=span)])
    b.emit("parallel", domains, [], regions=[body], span=span)


# ---- RNG (N1, N2) -------------------------------------------------------------------------------------------------
def _words(b, node, count: int, what: str) -> list:
    value = b.expr(node)
    items = list(value.items) if isinstance(value, TupleValue) else None
    if items is None or len(items) != count:
        raise error(f"the {what} is a tuple of {count} u32 words", node.span, rule="N1",
                    hint=f"e.g. ({', '.join(['seed'] + ['0'] * (count - 1))})" if what == "key" else
                    "e.g. (I.cast(i, u32), 0, 0, 0)")
    words = []
    for item in items:
        if isinstance(item, Literal):
            words.append(b.const(literal_as(item, U32, "N1"), U32, node.span))
        elif isinstance(item, Value) and element_dtype(item.type) == U32:
            words.append(item)
        else:
            got = element_dtype(item.type) if isinstance(item, Value) else "this value"
            raise error(f"the {what} words are u32, got {got}", node.span, rule="N1",
                        hint="convert with I.cast(x, u32) (integers keep their low 32 bits)")
    return words


def philox_words(b, node: ast.Call, what: str) -> list:
    keywords(node, ("dtype",) if what == "uniform" else (), what)
    if len(node.args) != 2:
        raise error(f"I.{what}(key, counter) takes a key (k0, k1) and a counter (c0, c1, c2, c3)", node.span,
                    rule="N1", hint="the words are u32; a counter names the random numbers, e.g. (I.cast(i, u32), "
                                    "0, 0, 0)")
    words = _words(b, node.args[0], 2, "key") + _words(b, node.args[1], 4, "counter")
    words, shape = _relation(b, words, [node.span] * 6, node.span)
    words = [broadcast_to(b, w, [], shape, node.span) if shape is not None and not is_tensor(w) else w
             for w in words]
    rtype = TensorType(U32, static_shape(shape)) if shape is not None else U32
    op = b.emit("philox", words, [rtype] * 4, span=node.span)
    if shape is not None:
        for r in op.results:
            b.shapes[id(r)] = list(shape)
    return list(op.results)


def _philox(b, name: str, node: ast.Call):
    return TupleValue(tuple(philox_words(b, node, "philox")))


def _uniform(b, name: str, node: ast.Call):
    dtype = DTYPES["f32"]
    for kw in node.keywords:
        if kw.name == "dtype":
            dtype = dtype_of(kw.value)
    if dtype.name not in ("f32", "f64"):
        raise error(f"I.uniform gives f32 or f64, not {dtype}", node.span, rule="N1",
                    hint="use dtype=f32 or dtype=f64, or I.philox for the raw u32 words")
    words = philox_words(b, node, "uniform")
    span = node.span
    if dtype.name == "f32":  # 24 random bits per word: exactly representable, in [0, 1)
        out = []
        for w in words:
            top = b.binary(">>", w, Literal(8, span), span, span, span)
            out.append(b.binary("*", convert(b, top, dtype, span), Literal(2.0 ** -24, span), span, span, span))
        return TupleValue(tuple(out))
    out = []
    for hi, lo in ((words[0], words[1]), (words[2], words[3])):  # 53 random bits per pair
        h = b.binary("<<", convert(b, hi, U64, span), Literal(21, span), span, span, span)
        l = b.binary(">>", convert(b, lo, U64, span), Literal(11, span), span, span, span)
        bits = b.binary("^", h, l, span, span, span)
        out.append(b.binary("*", convert(b, bits, dtype, span), Literal(2.0 ** -53, span), span, span, span))
    return TupleValue(tuple(out))


# ---- ragged relations (G1-G3) ----------------------------------------------------------------------------------
def _domain(b, node, what: str) -> Value:
    value = b.expr(node)
    if isinstance(value, Value) and value.type == DOMAIN:
        return value
    raise error(f"{what} must be a domain", node.span, rule="G1",
                hint="e.g. I.domain(0, n) or x.axis(0)")


def _ragged(b, name: str, node: ast.Call):
    kwargs = keywords(node, ("mapping",), "ragged")
    if len(node.args) != 3:
        raise error("I.ragged(outer, member_source, offsets, mapping=None) takes an outer domain, a member "
                    "domain and an offsets tensor", node.span, rule="G1",
                    hint="members of g are member_source[offsets[g]:offsets[g+1]]")
    outer = _domain(b, node.args[0], "the outer relation of I.ragged")
    source = _domain(b, node.args[1], "the member source of I.ragged")
    offsets = tensor_arg(b, node.args[2], "the offsets of I.ragged", "G1", _TENSOR_HINT)
    if offsets.type.rank != 1 or not offsets.type.dtype.is_int:
        raise error(f"the offsets are a 1-D integer tensor, got {offsets.type}", node.args[2].span, rule="G1",
                    hint="offsets[g] and offsets[g + 1] bound the members of g; use i64 or i32")
    mapping = None
    if "mapping" in kwargs:
        mapping = tensor_arg(b, kwargs["mapping"], "the mapping of I.ragged", "G2", _TENSOR_HINT)
        if mapping.type.rank != 1 or not mapping.type.dtype.is_int:
            raise error(f"the mapping is a 1-D integer tensor, got {mapping.type}", kwargs["mapping"].span,
                        rule="G2", hint="mapping[j] is the coordinate of member j, e.g. a CSR column index")
    _check_offsets(b, outer, source, offsets, node.span)
    return RaggedRef(outer, source, offsets, mapping)


def _check_offsets(b, outer: Value, source: Value, offsets: Value, span) -> None:
    """For every g of the outer domain, in order: source.begin <= offsets[g] <= offsets[g+1]
    <= source.end (G2), checked before anything that follows can write."""
    g = Value(INDEX, "g")
    mbegin = b.emit("dom_begin", [source], [INDEX], span=span).result
    mend = b.emit("dom_end", [source], [INDEX], span=span).result

    def body():
        a, c = _bounds(b, offsets, g, span)
        for cond, args, what in (
                ((a, c), (g, a, c), "ragged offsets (G2): segment %lld runs backwards: offsets[g] = %lld > "
                                    "offsets[g + 1] = %lld"),
                ((mbegin, a), (g, a, mbegin), "ragged offsets (G2): segment %lld begins at %lld, before the member "
                                              "domain's begin %lld"),
                ((c, mend), (g, c, mend), "ragged offsets (G2): segment %lld ends at %lld, past the member "
                                          "domain's end %lld")):
            ok = b.emit("cmp", list(cond), [BOOL], {"pred": "le"}, span=span).result
            b.emit("assert_true", [ok] + list(args), span=span, attrs={"what": what, "rule": "G2", "code": "bounds"})
        b.block.ops.append(Op("yield", [], span=span))

    block, _ = b.region([g], b.scope, body)
    b.emit("for", [outer], [], regions=[block], span=span)


def _bounds(b, offsets: Value, g: Value, span) -> tuple[Value, Value]:
    one = b.const(1, INDEX, span)
    g1 = b.emit("add", [g, one], [INDEX], span=span).result
    out = []
    for at in (g, g1):
        v = b.emit("load", [offsets, at], [offsets.type.dtype], span=span).result
        out.append(v if offsets.type.dtype == INDEX else b.emit("cast", [v], [INDEX], span=span).result)
    return out[0], out[1]


def _members(b, name: str, node: ast.Call):
    keywords(node, (), "members")
    if len(node.args) != 2:
        raise error("I.members(r, g) takes a ragged relation and an outer coordinate", node.span, rule="G2")
    ragged = b.expr(node.args[0])
    if not isinstance(ragged, RaggedRef):
        raise error("the first argument of I.members is a relation made by I.ragged(...)", node.args[0].span,
                    rule="G2", hint="r = I.ragged(outer, member_source, offsets)")
    g = b.as_index(b.expr(node.args[1]), node.args[1].span)
    a, c = _bounds(b, ragged.offsets, g, node.span)
    sub = b.emit("subregion", [ragged.source, a, c], [DOMAIN], span=node.span).result
    if ragged.mapping is None:
        return sub
    ids = b.emit("indices", [sub], [TensorType(INDEX, (None,))], span=node.span).result
    b.shapes[id(ids)] = [b.emit("dom_len", [sub], [INDEX], span=node.span).result]
    mapped = gather(b, ragged.mapping, [ids], [node.span], None, None, node.span)
    return _index(b, mapped, node.span)


BUILTINS = {"gather": _read_builtin, "load": _read_builtin, "store": _store_builtin, "scatter": _scatter_builtin,
            "scatter_reduce": _scatter_reduce_builtin, "buffer": _buffer, "philox": _philox, "uniform": _uniform,
            "ragged": _ragged, "members": _members, "atomic_cas": _atomic, "atomic_load": _atomic,
            "atomic_store": _atomic, **{name: _atomic for name in _RMW}}
