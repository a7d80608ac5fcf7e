"""Tensor values carried by ordered loops (O2): ``for t in ...: A = 0.2 * A``.

A carried tensor keeps value semantics — each iteration sees the value the previous one
computed — and lives in one logical buffer of its shape, made before the loop:

- before the loop the initial value is written into the buffer (one parallel store);
- at the start of each iteration (and of a ``while`` condition) the name is the buffer's
  whole view, read where it is used;
- at the end of each iteration the body's final value is written back into the buffer (a
  slice assignment, windows.py): in place when each element of the update reads the
  carried value only at that element (``0.5 * A``); otherwise the lowering copies what it
  reads first (P6), so the buffer plus that copy are the double buffer;
- after the loop the name is the buffer's whole view again.

The carried value keeps its dtype and its shape: a different dtype, rank or static extent
is a diagnostic (O2), a different run-time extent fails the call (``INTENT_E_SHAPE``).
"""
from __future__ import annotations

from dataclasses import dataclass

from intentc.diagnostics import error
from intentc.kir.core import Value
from intentc.kir.types import INDEX, TensorType
from intentc.sema import windows
from intentc.sema.shapes import describe, same_extent, static_shape


@dataclass(frozen=True)
class TensorCarry:
    name: str
    buffer: Value
    extents: tuple


def begin(b, stmt, tensors: list[tuple[str, Value]]) -> list[TensorCarry]:
    """The buffers of a loop's carried tensors, holding their values before the loop (made
    once per loop statement, also when the loop is built again for a literal's dtype)."""
    made = b.tensor_carries.get(id(stmt))
    if made is not None:
        return made
    carries = []
    for name, initial in tensors:
        if windows.is_window(b, initial):
            raise error(f"'{name}' is a view of a writable tensor and cannot be carried by a loop", stmt.span,
                        rule="O2", hint="define the view inside the loop, where it is used")
        dtype = initial.type.dtype
        if dtype.kind == "bfloat":
            raise error(f"a bf16 tensor cannot be carried by a loop yet ('{name}')", stmt.span, rule="O2",
                        hint="carry it as f32 (I.cast) and convert after the loop")
        extents = list(b.shape_of(initial))
        operands = [b.index_value(e, stmt.span) for e in extents]
        buffer = b.emit("buffer", operands, [TensorType(dtype, static_shape(extents))], {"dtype": str(dtype)},
                        span=stmt.span, hint=name.lstrip(".")).result
        b.shapes[id(buffer)] = extents
        b.mutable.add(id(buffer))
        b.buffers.add(id(buffer))
        windows.slice_assign(b, buffer, initial, stmt.span, stmt.span)
        carries.append(TensorCarry(name, buffer, tuple(extents)))
    b.tensor_carries[id(stmt)] = carries
    return carries


def bind(b, carries: list[TensorCarry], span) -> None:
    """Each carried name as the whole view of its buffer, here (read where it is used)."""
    for carry in carries:
        b.scope[carry.name] = whole(b, carry, span)


def whole(b, carry: TensorCarry, span) -> Value:
    """A read-only view of every element of the carry's buffer."""
    operands, axes = [carry.buffer], []
    for extent in carry.extents:
        operands += [b.const(0, INDEX, span), b.index_value(extent, span)]
        axes.append("range")
    view = b.emit("view", operands, [carry.buffer.type], {"axes": axes}, span=span,
                  hint=carry.name.lstrip(".")).result
    b.shapes[id(view)] = list(carry.extents)
    b.relation_roots[id(view)] = carry.buffer  # not a window: the carried name is a value
    return view


def finish(b, carries: list[TensorCarry], scope: dict, start: dict, span) -> None:
    """Write each carried name's value at the end of an iteration back into its buffer."""
    for carry in carries:
        final = scope.get(carry.name)
        if final is start.get(carry.name) or not isinstance(final, Value):
            continue  # unchanged in this iteration
        want = carry.buffer.type
        if not isinstance(final.type, TensorType) or final.type.dtype != want.dtype or final.type.rank != want.rank:
            raise error(f"loop-carried '{carry.name}' changes type from {want} to {final.type}", span, rule="O2",
                        hint="a value updated in a loop keeps its dtype and shape; use I.cast or a new name")
        for axis, (got, extent) in enumerate(zip(b.shape_of(final), carry.extents)):
            if same_extent(got, extent):
                continue
            if isinstance(got, int) and isinstance(extent, int):
                raise error(f"loop-carried '{carry.name}' changes extent {extent} to {got} on axis {axis}", span,
                            rule="O2", hint="a value updated in a loop keeps its shape")
            b.emit("assert_eq", [b.index_value(got, span), b.index_value(extent, span)], span=span, attrs={
                "what": f"loop-carried '{carry.name}' changes extent on axis {axis}: %lld, was %lld "
                        f"({describe(extent)})", "rule": "O2"})
        windows.slice_assign(b, carry.buffer, final, span, span)
