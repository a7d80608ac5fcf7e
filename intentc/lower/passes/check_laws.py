"""The laws sanitizer (``--sanitize=laws``): region helpers are checked at run time (R2, R6).

Before: ``region_fold`` / ``region_scan`` ops whose regions each call one helper (as the
front end builds them), in kernels and in helpers.
After: every such op carries ``check_laws``: the names of its helpers by role
(``summarize``, ``combine`` and, for ``region_scan``, ``apply``, ``emit``), kept here
because ``inline_helpers`` erases the calls. ``expand_tensor_exprs`` then builds, ahead
of the op's own evaluation, the code that evaluates the helpers under several
segmentations and fails the call with ``INTENT_E_SANITIZER`` when a law does not hold
(``region_laws.py``). Ops inside helpers are marked too: they are checked wherever they
are inlined.
"""
from __future__ import annotations

from intentc.kir.core import Module

ROLES = {"region_fold": ("summarize", "combine"), "region_scan": ("summarize", "combine", "apply", "emit")}


def run(module: Module) -> Module:
    for func in module.functions:
        for op in func.walk():
            if op.name in ROLES and "check_laws" not in op.attrs:
                op.attrs["check_laws"] = {role: callee(region) for role, region in zip(ROLES[op.name], op.regions)}
    return module


def callee(region) -> str:
    """The helper a region calls (as the interpreter's ``structured._callee`` names it)."""
    calls = [o.attrs["callee"] for o in region.ops if o.name == "call"]
    return calls[0] if calls else "(builtin)"
