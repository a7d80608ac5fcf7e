"""Where an element of a relation's result lies in its source (S4, C4).

``source_indices(op, indices, arith, zero, source_extent)``: for a ``view``, ``permute`` or
``reshape`` op, the indices into its source (operand 0) of the element of its result at
``indices``. A view fixes its dropped axes and adds its begins, a permutation reorders the
indices, a reshape goes through the row-major linear coordinate. The caller says how index
arithmetic is emitted (``arith(name, a, b)``, ``zero()``) and gives the source's extents
(``source_extent(axis)``, asked from the last axis down, when first needed), so the front
end (writes through windows, ``sema/windows.py``) and the lowering (reads of tensor values,
``lower/kir_builder.py``) compose indices the same way.
"""
from __future__ import annotations

from typing import Callable

from intentc.kir.core import Op, Value

RELATIONS = ("view", "permute", "reshape")


def source_indices(op: Op, indices: list[Value], arith: Callable[[str, Value, Value], Value],
                   zero: Callable[[], Value], source_extent: Callable[[int], Value]) -> list[Value]:
    if op.name == "view":
        mapped, position, k = [], 1, 0
        for kind in op.attrs["axes"]:
            if kind == "fix":
                mapped.append(op.operands[position])
                position += 1
            else:
                mapped.append(arith("add", op.operands[position], indices[k]))
                position += 2
                k += 1
        return mapped
    if op.name == "permute":
        mapped = [None] * len(indices)
        for k, axis in enumerate(op.attrs["perm"]):
            mapped[axis] = indices[k]
        return mapped
    assert op.name == "reshape", f"'{op.name}' is not a relation"
    linear = None
    for k, index in enumerate(indices):  # the result's extents are the reshape's operands
        linear = index if linear is None else arith("add", arith("mul", linear, op.operands[1 + k]), index)
    if linear is None:
        linear = zero()
    rank = op.operands[0].type.rank
    mapped = [None] * rank
    for axis in reversed(range(rank)):
        extent = source_extent(axis)
        if axis == 0:
            mapped[0] = linear
            break
        mapped[axis] = arith("mod", linear, extent)
        linear = arith("floordiv", linear, extent)
    return mapped
