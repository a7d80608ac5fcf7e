"""Mark element accesses whose indices are proven in bounds, so they need no run-time check.

Before: ``load``/``store`` ops (and atomic accesses) may carry ``inbounds`` (set by earlier passes that built
them in bounds); the others are checked at run time (D5: never clamped).
After: an axis is marked in bounds when the provenance analysis
(``intentc.kir.provenance``) proves ``0 <= index`` and ``index < extent`` from the
domains of the loop points the index is an affine function of, and from extents known
equal (same value, same tensor axis, or an earlier ``assert_eq``, S1). Data-derived or
non-affine indices stay checked (C6).

With a remark sink it says which accesses keep a run-time bounds check and why, which lost
theirs, and which extent checks run once per call (``check_remarks.bounds_remarks``).
"""
from __future__ import annotations

from intentc.kir.core import Module
from intentc.kir.provenance import Provenance
from intentc.kir.types import TensorType
from intentc.lower.check_remarks import ACCESSES as _ACCESSES, bounds_remarks


def run(module: Module, remarks=None) -> Module:
    for func in module.kernels:
        prov = Provenance(func)
        built_in_bounds = {id(op): list(op.attrs.get("inbounds", ())) for op in func.walk()} if remarks else {}
        for op in func.walk():
            if op.name not in _ACCESSES or not isinstance(op.operands[0].type, TensorType):
                continue
            rank = op.operands[0].type.rank
            proven = list(op.attrs.get("inbounds", [False] * rank))
            for axis in range(rank):
                if not proven[axis] and prov.in_bounds(op, axis):
                    proven[axis] = True
            if any(proven):
                op.attrs["inbounds"] = proven
        if remarks is not None:
            bounds_remarks(func, remarks, "prove_bounds", built_in_bounds,
                           lambda op, axis: prov.representable(op.operands[1 + axis]))
    return module
