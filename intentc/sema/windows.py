"""Writable views ("windows") of a ``mut`` tensor or a logical buffer, and writes through them.

A view (``x[r, a:b]``), ``reshape``, ``transpose`` or ``permute`` of a tensor that may be
written is a *window* onto it: not a copy, but the tensor seen through the view's index
relation (M1, C4). Through a window

- ``w[i] = v`` stores into the tensor at the indices the relation composes: a view fixes
  its dropped axes and adds its begins, a permutation reorders the indices, a reshape goes
  through the logical row-major linear coordinate (S4, C4). The indices are checked against
  the window's own extents first (D5: a window never lets a write leave it); where an index
  is a point of the window's own axis (``for c in w.axis(0)``) the check is proven;
- ``w[i]`` reads the tensor at the same composed indices, so it sees every earlier write,
  like a parameter does; using ``w`` as a whole tensor value (``I.sum(w)``, ``w * 2.0``)
  takes its elements where that use stands (the relation is rebuilt there);
- ``w[a:b, :] = value`` (slice assignment) is one parallel store over the selected
  elements: the value broadcasts to them (S2; run-time extents checked, S3) and is read as
  a value, so a value that reads the tensor being written sees it as it was before the
  assignment. Where each point's element of the value reads the tensor only at the
  element that point writes (``y[:] = y * 2.0``), those reads are rebuilt inside the
  store's loop and nothing is copied; otherwise the lowering copies what the value reads
  first, because a write comes before that read's last use (P6, ``WriteWindows``).

Because every write reaches KIR as a ``store`` into the tensor itself, the unique-store
proof (M4) and the race check (P3) see the composed relation: a program is accepted or
refused the same whether written through a window or with full indices.
"""
from __future__ import annotations

from intentc.diagnostics import error, quote
from intentc.kir.core import Op, Value
from intentc.kir.ops import REGISTRY
from intentc.kir.relations import source_indices
from intentc.kir.types import BOOL, DOMAIN, INDEX, TensorType
from intentc.sema.shapes import broadcast_to, describe, same_extent

RELATIONS = ("view", "reshape", "permute")


def note_relation(b, op: Op) -> None:
    """Record a relation op: its result is a window when its source may be written, and it
    remembers its root for diagnostics either way."""
    source, result = op.operands[0], op.result
    b.relation_roots[id(result)] = b.relation_roots.get(id(source), source)
    if id(source) in b.mutable or id(source) in b.windows:
        b.windows[id(result)] = op


def is_window(b, value) -> bool:
    return isinstance(value, Value) and id(value) in b.windows


def root_of(b, value: Value) -> Value:
    """The tensor a relation (window or not) reads; the value itself when it is no relation."""
    return b.relation_roots.get(id(value), value)


def rebuilt(b, window: Value, span) -> Value:
    """The window's relation emitted again here, so that its elements are read where this use
    stands (after the writes before it). Its bounds were checked where it was defined."""
    op = b.windows[id(window)]
    source = op.operands[0]
    if id(source) in b.windows:
        source = rebuilt(b, source, span)
    fresh = b.emit(op.name, [source] + list(op.operands[1:]), [window.type], dict(op.attrs), span=span,
                   hint=window.hint or "")
    b.shapes[id(fresh.result)] = list(b.shape_of(window))
    note_relation(b, fresh)
    return fresh.result


def compose(b, window: Value, indices: list[Value], span, checked: bool = False) -> tuple[Value, list[Value]]:
    """The tensor a window stands for and the indices into it of the window's element at
    ``indices``. ``checked``: the indices range over the window's extents by construction."""
    op = b.windows.get(id(window))
    if op is None:
        return window, list(indices)
    if not checked:
        _check_indices(b, window, indices, span)
    source = op.operands[0]
    extents: list[Value] = []

    def source_extent(axis: int) -> Value:  # all of them, once, when a reshape first needs one
        if not extents:
            extents.extend(b.index_value(e, span) for e in b.shape_of(source))
        return extents[axis]

    mapped = source_indices(op, list(indices), lambda name, x, y: b.emit(name, [x, y], [INDEX], span=span).result,
                            lambda: b.const(0, INDEX, span), source_extent)  # kir/relations.py (S4, C4)
    return compose(b, source, mapped, span, checked=True)  # inside the source by the relation's checks


def _check_indices(b, window: Value, indices: list[Value], span) -> None:
    """0 <= index < extent on every axis of the window (D5), unless the index is a point of a
    domain over exactly that axis (``w.axis(k)``)."""
    for axis, (index, extent) in enumerate(zip(indices, b.shape_of(window))):
        domain = b.point_domains.get(id(index))
        if domain is not None and id(domain) in b.axis_extents and same_extent(b.axis_extents[id(domain)], extent):
            continue
        extent_v = b.index_value(extent, span)
        zero = b.const(0, INDEX, span)
        low = b.emit("cmp", [index, zero], [BOOL], {"pred": "ge"}, span=span).result
        high = b.emit("cmp", [index, extent_v], [BOOL], {"pred": "lt"}, span=span).result
        ok = b.emit("and", [low, high], [BOOL], span=span).result
        b.emit("assert_true", [ok, index, extent_v], span=span, attrs={
            "what": f"index %lld is out of range [0, %lld) on axis {axis} of a view", "rule": "D5", "code": "bounds"})


def load(b, window: Value, indices: list[Value], span) -> Value:
    """``w[i, j]`` with scalar indices: the tensor's current element (M2)."""
    root, mapped = compose(b, window, indices, span)
    return b.emit("load", [root] + mapped, [window.type.dtype], span=span).result


def store(b, window: Value, indices: list[Value], element: Value, span) -> None:
    """``w[i, j] = v``: a store into the tensor at the composed indices (M4 sees them)."""
    root, mapped = compose(b, window, indices, span)
    b.emit("store", [root] + mapped + [element], span=span)


def slice_assign(b, window: Value, value, value_span, span) -> None:
    """``w[...] = value`` over every element of the window ``w``: one parallel store, the
    value broadcast to the window (S2) and read as it was before the statement."""
    dtype = window.type.dtype
    extents = b.shape_of(window)
    if isinstance(value, Value) and isinstance(value.type, TensorType):
        if value.type.dtype != dtype:
            raise error(f"dtype mismatch: the slice holds {dtype} but the value is {value.type.dtype}", value_span,
                        hint=f"use I.cast(..., {dtype})")
        value = _fitted(b, value, extents, value_span)
    else:
        value = b.scalar_of(value, dtype, value_span, "an element of the slice")
    domains = []
    for extent in extents:
        zero, one = b.const(0, INDEX, span), b.const(1, INDEX, span)
        domains.append(b.emit("domain", [zero, b.index_value(extent, span), one], [DOMAIN], span=span).result)
    points = [Value(INDEX, f"s{k}") for k in range(len(extents))]
    if not points:  # every axis fixed: one element
        store(b, window, [], value if not isinstance(value.type, TensorType) else load_value(b, value, []), span)
        return
    in_place = _reads_in_place(b, window, value) if isinstance(value.type, TensorType) else []

    def body():
        element = value
        if isinstance(value.type, TensorType):
            element = load_value(b, _cloned(b, in_place, value, span) if in_place else value, points)
        root, mapped = compose(b, window, points, span, checked=True)
        b.emit("store", [root] + mapped + [element], span=span)
        b.block.ops.append(Op("yield", [], span=span))

    block, _ = b.region(points, b.scope, body)
    b.emit("parallel", domains, [], regions=[block], span=span)


# Ops computed element by element where their result is read (the pointwise ops and relations).
_POINTWISE = {name for name, d in REGISTRY.items() if d.family == "core" and name != "const"}
_LAZY = _POINTWISE | {"broadcast", "view", "reshape", "permute", "join", "indices", "gather", "philox"}


class _NotInPlace(Exception):
    pass


def _reads_in_place(b, window: Value, value: Value) -> list[Op] | None:
    """The ops of ``value`` that read the window's tensor where ``value`` is read, when each of
    them reads, at every point, exactly the element the assignment writes there: then computing
    them inside the store's loop reads every element before it is overwritten, and needs no copy.
    [] when ``value`` does not read the tensor that way at all; None when one reads another
    element (the lowering then copies what it reads first)."""
    target = _element_map(b, window)
    if target is None:
        return None
    root = target[0]
    needed: list[Op] = []
    known: dict[int, bool] = {}

    def reads(v) -> bool:
        if not isinstance(v, Value) or not isinstance(v.type, TensorType):
            return False
        if id(v) in known:
            return known[id(v)]
        op = b.defining_op.get(id(v))
        result = False
        if v is root or (op is not None and op.name in RELATIONS and root_of(b, v) is root):
            if _element_map(b, v) != target:
                raise _NotInPlace
            chain = []
            while op is not None and op.name in RELATIONS:
                chain.insert(0, op)
                op = b.defining_op.get(id(op.operands[0]))
            needed.extend(o for o in chain if o not in needed)
            result = True
        elif op is not None and op.name in _LAZY:
            if any(reads(operand) for operand in op.operands):
                if op.name not in _POINTWISE and not _same_shape_broadcast(b, op):
                    raise _NotInPlace  # a broadcast or gather of the tensor reads other elements
                needed.append(op)
                result = True
        known[id(v)] = result
        return result

    try:
        reads(value)
    except _NotInPlace:
        return None
    return needed


def _element_map(b, value: Value):
    """(tensor, per tensor axis: ("fix", value) or ("point", axis of ``value``, begins)) of a
    relation chain of views and permutations; None through a reshape."""
    coords = [("point", k, ()) for k in range(value.type.rank)]
    op = b.defining_op.get(id(value))
    while op is not None and op.name in RELATIONS:
        if op.name == "reshape":
            return None
        if op.name == "permute":
            mapped = [None] * len(coords)
            for k, axis in enumerate(op.attrs["perm"]):
                mapped[axis] = coords[k]
            coords = mapped
        else:
            mapped, position, k = [], 1, 0
            for kind in op.attrs["axes"]:
                if kind == "fix":
                    mapped.append(("fix", _key(b, op.operands[position])))
                    position += 1
                    continue
                tag, axis, begins = coords[k]
                begin = _key(b, op.operands[position])
                if begin != ("const", 0):
                    begins = tuple(sorted(begins + (begin,)))
                mapped.append((tag, axis, begins))
                position += 2
                k += 1
            coords = mapped
        value = op.operands[0]
        op = b.defining_op.get(id(value))
    return value, coords


def _same_shape_broadcast(b, op: Op) -> bool:
    """A broadcast that only restates its source's extents (each result extent computed the
    same way as the source's, e.g. both ``N - 1``): element ``p`` reads the source at ``p``."""
    if op.name != "broadcast":
        return False
    source = op.operands[0]
    if not isinstance(source.type, TensorType) or op.attrs["map"] != list(range(source.type.rank)) or \
            source.type.rank != op.result.type.rank:
        return False
    return all(_extent_key(b, e) == _extent_key(b, target) for e, target in zip(b.shape_of(source), op.operands[1:]))


def _extent_key(b, extent) -> tuple:
    """An extent by what it computes: a linear form over opaque values (constants by value,
    ``+``, ``-`` and constant multiples folded), so ``N - 1`` and ``(N - 1) - 0`` compare
    equal; a ``bcast_extent`` of two equal extents is that extent."""
    return tuple(sorted(_linear(b, extent, 8).items(), key=repr))


def _linear(b, extent, depth: int) -> dict:
    if isinstance(extent, int):
        return {"1": extent} if extent else {}
    op = b.defining_op.get(id(extent))
    if op is not None and depth:
        if op.name == "const":
            return {"1": op.attrs["value"]} if op.attrs["value"] else {}
        if op.name in ("add", "sub"):
            left, right = (_linear(b, v, depth - 1) for v in op.operands)
            sign = 1 if op.name == "add" else -1
            for key, coeff in right.items():
                left[key] = left.get(key, 0) + sign * coeff
            return {k: c for k, c in left.items() if c}
        if op.name == "bcast_extent":  # y[1:N] - h[0:N - 1]: two N - 1 broadcast to N - 1
            forms = [_linear(b, v, depth - 1) for v in op.operands]
            if forms[0] == forms[1]:
                return forms[0]
    return {("value", id(extent)): 1}


def _key(b, index: Value) -> tuple:
    """An index as the element maps compare it: a constant by its value, else by identity."""
    op = b.defining_op.get(id(index))
    if op is not None and op.name == "const":
        return "const", op.attrs["value"]
    if op is not None and op.name == "cast":  # dwte[ix, :] += row: each side converts ix to index
        return "cast", str(index.type), _key(b, op.operands[0])
    return "value", id(index)


def _cloned(b, ops: list[Op], value: Value, span) -> Value:
    """``ops`` emitted again here (their operands mapped onto the copies), and ``value``'s copy."""
    copies: dict[int, Value] = {}
    for op in ops:
        operands = [copies.get(id(v), v) for v in op.operands]
        fresh = b.emit(op.name, operands, [r.type for r in op.results], dict(op.attrs), span=op.span or span)
        for old, new in zip(op.results, fresh.results):
            copies[id(old)] = new
            if id(old) in b.shapes:
                b.shapes[id(new)] = list(b.shapes[id(old)])
            if id(old) in b.relation_roots:
                b.relation_roots[id(new)] = b.relation_roots[id(old)]
    return copies.get(id(value), value)


def load_value(b, value: Value, points: list[Value]) -> Value:
    return b.emit("load", [value] + list(points), [value.type.dtype], span=None).result


def _fitted(b, value: Value, extents: list, span) -> Value:
    """``value`` broadcast to the window's extents: trailing axes align, each extent equal to
    the window's or 1 (S2); the window itself never broadcasts. Run-time extents are checked
    before anything is written (S3)."""
    shape = b.shape_of(value)
    if len(shape) > len(extents):
        raise error(f"cannot assign a value with {len(shape)} axes to a slice with {len(extents)}", span, rule="S2",
                    hint="the value broadcasts to the slice: it has at most as many axes, each of the slice's "
                         "extent or 1")
    offset = len(extents) - len(shape)
    for k, extent in enumerate(shape):
        target = extents[offset + k]
        if same_extent(extent, target) or (isinstance(extent, int) and extent == 1):
            continue
        axis = k - len(shape)
        if isinstance(extent, int) and isinstance(target, int):
            raise error(f"incompatible broadcast: {quote(span) or 'the value'} has extent {extent} but the slice "
                        f"has extent {target} on axis {axis} (counted from the end)", span, rule="S2",
                        hint="the value must have the slice's extent on every axis, or 1 to repeat")
        e = b.index_value(extent, span)
        t = b.index_value(target, span)
        one = b.const(1, INDEX, span)
        equal = b.emit("cmp", [e, t], [BOOL], {"pred": "eq"}, span=span).result
        unit = b.emit("cmp", [e, one], [BOOL], {"pred": "eq"}, span=span).result
        ok = b.emit("or", [equal, unit], [BOOL], span=span).result
        b.emit("assert_true", [ok, e, t], span=span, attrs={
            "what": f"slice assignment: the value has extent %lld but the slice has %lld on axis {axis} (counted "
                    f"from the end; {describe(target)}); extents must be equal or the value's 1",
            "rule": "S2", "code": "shape"})
    return broadcast_to(b, value, shape, extents, span)


def readonly_store(b, tensor: Value, span, what: str = "store") -> None:
    """The M2 diagnostic for a write into something that cannot be written."""
    root = root_of(b, tensor)
    name = b.params.get(id(root))
    if name is not None and root is not tensor:
        raise error(f"cannot {what}: this is a view of parameter '{name}', which is read-only", span, rule="M2",
                    hint=f"declare the parameter as `mut` (`{name}: mut ...`) to write through its views")
    if name is not None:
        raise error(f"cannot {what}: parameter '{name}' is read-only", span, rule="M2",
                    hint="declare the parameter as `mut` to write into it")
    raise error(f"cannot {what}: this tensor is an immutable value", span, rule="M2",
                hint="a tensor expression is a value; write into a `mut` parameter, a logical buffer "
                     "(I.buffer), or a view of one of them")

