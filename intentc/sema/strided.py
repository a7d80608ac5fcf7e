"""Tensor slices with a step (``x[::-1]``, ``r[k - 1:0:-1]``, ``x[1:N:2]``): gathers, not views.

A step other than 1 selects members that are not contiguous (or not in order): an indexed
relation, never a subregion (D7). So ``x[a:b:s]`` reads as the gather of ``x`` at the index
tensor ``a + s * k`` for ``k`` in ``[0, count)`` (one per sliced axis, laid out on its own
result axis by an explicit broadcast, C4), with the meaning NumPy gives the slice where both
are defined:

- ``s`` is a constant non-zero integer (a literal or a module constant);
- ``s > 0``: ``a`` defaults to 0 and ``b`` to the extent; ``0 <= a <= b <= extent`` is checked
  at run time, as for a contiguous slice (D5: never clamped); ``count = ceil((b - a) / s)``;
- ``s < 0``: ``a`` defaults to ``extent - 1`` and ``b`` to "past the first element"; written
  bounds must not be negative (NumPy would count them from the end) and a non-empty slice
  must start inside the axis (``a < extent``); ``count = max(0, ceil((a - b) / -s))``.

The gather fuses into the expression that reads it, like any other (P6); its lanes' indices
are affine in the lane coordinates, so the M4/P3 proofs can read them. Writing through such a
slice is refused with the spellings that do it (relations.py).
"""
from __future__ import annotations

from intentc.diagnostics import error
from intentc.kir.core import Value
from intentc.kir.types import BOOL, DOMAIN, INDEX, TensorType
from intentc.parse import ast
from intentc.sema.memory import gather
from intentc.sema.relations import cmp
from intentc.sema.shapes import static_shape
from intentc.sema.values import Literal


def has_step(node: ast.Subscript) -> bool:
    return any(isinstance(item, ast.Slice) and item.step is not None for item in node.indices)


def constant_step(b, item: ast.Slice) -> int:
    """The step of a slice: a constant non-zero integer."""
    value = b.expr(item.step)
    if not isinstance(value, Literal) or isinstance(value.value, bool) or not isinstance(value.value, int):
        raise error("the step of a tensor slice must be a constant integer", item.step.span, rule="D7",
                    hint="write a literal such as x[::2] or x[::-1] (or a module-level constant); for a run-time "
                         "step gather with an index tensor: x[I.indices(I.domain(begin, end, step))]")
    if value.value == 0:
        raise error("a slice step cannot be zero", item.step.span, rule="D7",
                    hint="use a positive step to go forward or a negative one (e.g. -1) to go backward")
    return value.value


def strided_read(b, tensor: Value, node: ast.Subscript) -> Value:
    """``x[i, a:b:s, :]`` as a gather (see the module docstring)."""
    rank = tensor.type.rank
    if len(node.indices) != rank:
        raise error(f"this tensor has {rank} axes but {len(node.indices)} indices are given", node.span,
                    hint="give one index or range per axis; `:` keeps a whole axis")
    shape = b.shape_of(tensor)
    ranges = []  # (axis, first index, step, count) of each sliced axis
    indices: list = [None] * rank
    for axis, item in enumerate(node.indices):
        extent = b.index_value(shape[axis], item.span)
        if not isinstance(item, ast.Slice):
            index = b.as_index(b.expr(item), item.span)
            ok = b.emit("and", [cmp(b, "le", b.const(0, INDEX, item.span), index, item.span),
                                cmp(b, "lt", index, extent, item.span)], [BOOL]).result
            b.emit("assert_true", [ok, index, extent], span=item.span, attrs={
                "what": f"index %lld is out of range [0, %lld) on axis {axis}", "rule": "D5", "code": "bounds"})
            indices[axis] = index
            continue
        step = constant_step(b, item) if item.step is not None else 1
        ranges.append((axis, *_range(b, item, step, extent, axis)))
    counts = [count for _, _, _, count in ranges]
    for position, (axis, first, step, count) in enumerate(ranges):
        span = node.indices[axis].span
        zero, one = b.const(0, INDEX, span), b.const(1, INDEX, span)
        domain = b.emit("domain", [zero, count, one], [DOMAIN], span=span).result
        iota = b.emit("indices", [domain], [TensorType(INDEX, (None,))], span=span).result
        b.shapes[id(iota)] = [count]
        steps = _splat(b, b.const(step, INDEX, span), [count], span)
        starts = _splat(b, first, [count], span)
        scaled = b.emit("mul", [iota, steps], [iota.type], span=span).result
        lane = b.emit("add", [starts, scaled], [iota.type], span=span).result
        b.shapes[id(scaled)] = b.shapes[id(lane)] = [count]
        if len(ranges) > 1:  # each sliced axis on its own result axis: an explicit broadcast (C4)
            op = b.emit("broadcast", [lane] + counts, [TensorType(INDEX, static_shape(counts))], span=span,
                        attrs={"map": [position]})
            b.shapes[id(op.result)] = list(counts)
            lane = op.result
        indices[axis] = lane
    return gather(b, tensor, indices, [item.span for item in node.indices], None, None, node.span)


def _splat(b, scalar: Value, extents: list, span) -> Value:
    op = b.emit("broadcast", [scalar] + extents, [TensorType(INDEX, static_shape(extents))], span=span,
                attrs={"map": []})
    b.shapes[id(op.result)] = list(extents)
    return op.result


def _range(b, item: ast.Slice, step: int, extent: Value, axis: int) -> tuple[Value, int, Value]:
    """(first index, step, member count) of one sliced axis, its bounds checked (D5)."""
    span = item.span
    zero = b.const(0, INDEX, span)
    begin = b.as_index(b.expr(item.lower), item.lower.span) if item.lower is not None else None
    end = b.as_index(b.expr(item.upper), item.upper.span) if item.upper is not None else None
    if step > 0:
        begin = begin if begin is not None else zero
        end = end if end is not None else extent
        ok = b.emit("and", [b.emit("and", [cmp(b, "le", zero, begin, span), cmp(b, "le", begin, end, span)],
                                   [BOOL]).result, cmp(b, "le", end, extent, span)], [BOOL]).result
        b.emit("assert_true", [ok, begin, end, extent], span=span, attrs={
            "what": f"slice [%lld:%lld:{step}] is not within [0, %lld) on axis {axis}; bounds are never clamped",
            "rule": "D5", "code": "bounds"})
        distance = b.emit("sub", [end, begin], [INDEX], span=span).result
    else:
        checks = []
        for bound in (begin, end):
            if bound is not None:  # NumPy would count a negative bound from the end
                checks.append(cmp(b, "le", zero, bound, span))
        begin = begin if begin is not None else b.emit("sub", [extent, b.const(1, INDEX, span)], [INDEX],
                                                      span=span).result
        end = end if end is not None else b.const(-1, INDEX, span)
        # a non-empty slice starts inside the axis
        checks.append(b.emit("or", [cmp(b, "le", begin, end, span), cmp(b, "lt", begin, extent, span)],
                             [BOOL]).result)
        ok = checks[0]
        for more in checks[1:]:
            ok = b.emit("and", [ok, more], [BOOL]).result
        b.emit("assert_true", [ok, begin, end, extent], span=span, attrs={
            "what": f"slice [%lld:%lld:{step}] is not within [0, %lld) on axis {axis} (bounds are never clamped "
                    "and never count from the end)", "rule": "D5", "code": "bounds"})
        distance = b.emit("sub", [begin, end], [INDEX], span=span).result
    size = abs(step)
    rounded = b.emit("add", [distance, b.const(size - 1, INDEX, span)], [INDEX], span=span).result
    count = b.emit("floordiv", [rounded, b.const(size, INDEX, span)], [INDEX], span=span).result
    count = b.emit("max", [count, zero], [INDEX], span=span).result
    return begin, step, count
