"""The bounds sanitizer (``--sanitize=bounds``): no access is exempt from its run-time check.

Before: ``load``/``store`` ops may carry ``inbounds`` marks (from fusion or proofs).
After: no op carries ``inbounds``; every element access is checked against its extents
(D5), so a wrong proof or a wrong fusion cannot hide an out-of-range access. With a remark
sink it says so for each access.
"""
from __future__ import annotations

from intentc.kir.core import Module
from intentc.lower.check_remarks import bounds_remarks


def run(module: Module, remarks=None) -> Module:
    for func in module.kernels:
        for op in func.walk():
            op.attrs.pop("inbounds", None)
        if remarks is not None:
            bounds_remarks(func, remarks, "keep_all_checks", {})
    return module
