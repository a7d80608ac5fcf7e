"""The bounds sanitizer (``--sanitize=bounds``): no access is exempt from its run-time check.

Before: ``load``/``store`` ops may carry ``inbounds`` marks (from fusion or proofs).
After: no op carries ``inbounds``; every element access is checked against its extents
(D5), so a wrong proof or a wrong fusion cannot hide an out-of-range access.
"""
from __future__ import annotations

from intentc.kir.core import Module


def run(module: Module) -> Module:
    for func in module.kernels:
        for op in func.walk():
            op.attrs.pop("inbounds", None)
    return module
