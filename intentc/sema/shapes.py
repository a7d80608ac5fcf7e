"""Shape relations of tensor values: extents (S1) and canonical broadcasting (S2, S3).

An extent is an ``int`` (static) or an index ``Value`` (a runtime shape value with its
own identity, S1). Two runtime extents are equal only when they are the same value.
Broadcasting aligns trailing axes; statically incompatible extents are a diagnostic,
dynamic ones become a ``bcast_extent`` runtime check (S3); every operand whose shape
differs from the result gets an explicit ``broadcast`` op with its axis map (S2, C4).
"""
from __future__ import annotations

from intentc.diagnostics import error, quote
from intentc.kir.core import Value
from intentc.kir.types import INDEX, TensorType

Extent = int | Value


def same_extent(a: Extent, b: Extent) -> bool:
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    return a is b


def static_shape(extents) -> tuple:
    """The static part of a shape, as a ``TensorType`` holds it: ints kept, runtime extents None."""
    return tuple(e if isinstance(e, int) else None for e in extents)


def describe(extent: Extent) -> str:
    if isinstance(extent, int):
        return str(extent)
    return extent.hint or "a runtime extent"


def broadcast_extents(builder, shapes: list[list[Extent]], spans) -> list[Extent]:
    """The broadcast result shape of several operand shapes (rank-0 for scalars)."""
    rank = max((len(s) for s in shapes), default=0)
    result: list[Extent] = []
    for axis in range(rank):
        current: Extent | None = None
        current_span = None
        for shape, span in zip(shapes, spans):
            offset = axis - (rank - len(shape))
            if offset < 0:
                continue
            extent = shape[offset]
            if current is None:
                current, current_span = extent, span
            else:
                current = _combine(builder, current, extent, current_span, span, axis - rank)
        result.append(current)
    return result


def _combine(builder, a: Extent, b: Extent, span_a, span_b, axis_from_end: int) -> Extent:
    if same_extent(a, b):
        return a
    if isinstance(a, int) and isinstance(b, int):
        if a == 1:
            return b
        if b == 1:
            return a
        left, right = quote(span_a) or "the left operand", quote(span_b) or "the right operand"
        raise error(f"incompatible broadcast: {left} has extent {a} but {right} has extent {b} on axis "
                    f"{axis_from_end} (counted from the end); extents must be equal or one of them 1",
                    span_b.join(span_a), rule="S2",
                    hint="make the extents equal, or give one of them the extent 1")
    if isinstance(a, int) and a == 1:
        return b
    if isinstance(b, int) and b == 1:
        return a
    # A runtime check decides: equal, or one of them 1; 0 with 1 gives 0 (S2, S3).
    va = builder.index_value(a, span_a)
    vb = builder.index_value(b, span_b)
    op = builder.emit("bcast_extent", [va, vb], [INDEX], span=span_b.join(span_a),
                      attrs={"what": f"broadcast of {describe(a)} and {describe(b)}"}, hint="bext")
    static = a if isinstance(a, int) else b if isinstance(b, int) else None
    return static if static is not None else op.result


def broadcast_to(builder, value: Value, shape: list[Extent], result_shape: list[Extent], span) -> Value:
    """Make ``value`` (of ``shape``) have ``result_shape`` with an explicit broadcast op."""
    if len(shape) == len(result_shape) and all(same_extent(a, b) for a, b in zip(shape, result_shape)):
        return value
    dtype = value.type.dtype if isinstance(value.type, TensorType) else value.type
    offset = len(result_shape) - len(shape)
    mapping = [offset + k for k in range(len(shape))]
    extents = [builder.index_value(e, span) for e in result_shape]
    op = builder.emit("broadcast", [value] + extents, [TensorType(dtype, static_shape(result_shape))], span=span,
                      attrs={"map": mapping})
    builder.shapes[id(op.result)] = list(result_shape)
    return op.result
