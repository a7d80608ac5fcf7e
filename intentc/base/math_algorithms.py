"""One table from every math function's name to its algorithm (``ALGORITHMS``), merged
from the modules that describe them; ``intentc/codegen/mathlib.py`` and
``intentc/interp/mathfuncs.py`` run these and only these.

An algorithm is ``algorithm(A, *operands)`` over an arithmetic ``A`` in the format
``math_catalog.computed_in`` names (``A.fmt``), with ``A.source`` the width of the operands'
own format (32 for f32 and f16, 64 for f64) so that an algorithm may do less work for a
narrower result. ``F32_ALGORITHMS`` (``math_f32``) replace some of them for ``f32`` operands
(``A.source == 32``; f16 and bf16 too, computed as f32 is): the same f64 arithmetic,
plain doubles instead of double words; ``F32_ARITHMETIC_ALGORITHMS`` (``math_f32_arith``)
compute others in f32 arithmetic (``A.fmt`` is f32). ``algorithm(name, source)`` picks.
"""
from __future__ import annotations

from intentc.base import (elementary, math_catalog, math_exact, math_explog, math_f32, math_f32_arith, math_gamma,
                         math_special, math_trig)

ALGORITHMS = {
    **elementary.ALGORITHMS,
    "floor": math_exact.floor, "ceil": math_exact.ceil, "round": math_exact.round_, "trunc": math_exact.trunc,
    "copysign": math_exact.copysign, "fmod": math_exact.fmod, "remainder": math_exact.remainder,
    **math_explog.ALGORITHMS,
    **math_trig.ALGORITHMS,
    **math_special.ALGORITHMS,
    **math_gamma.ALGORITHMS,
}

F32_ALGORITHMS = math_f32.ALGORITHMS
F32_ARITHMETIC_ALGORITHMS = math_f32_arith.ALGORITHMS
assert set(F32_ARITHMETIC_ALGORITHMS) == set(math_catalog.F32_ARITHMETIC)


def algorithm(name: str, source: int):
    """The algorithm computing ``name`` for operands of ``source`` bits (32 or 64)."""
    if source == 32 and name in F32_ARITHMETIC_ALGORITHMS:
        return F32_ARITHMETIC_ALGORITHMS[name]
    if source == 32 and name in F32_ALGORITHMS:
        return F32_ALGORITHMS[name]
    return ALGORITHMS[name]


IMPLEMENTED = tuple(name for name in math_catalog.ALL if name in ALGORITHMS)
