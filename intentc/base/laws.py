"""How closely the two sides of a region law must agree (R2, R6): the one definition for
the interpreter's ``sanitize="laws"`` (``intentc/interp/structured.py``) and for compiled
``--sanitize=laws`` builds (``intentc/lower/region_laws.py``).

Laws hold only up to rounding, so floats compare as ``|a - b| <= tolerance * scale`` for
finite values, the tolerance by dtype, the scale the largest finite magnitude among the
float values of the law's instance (both sides and the summaries and states it combines;
at least 1), since rounding errors grow with the terms of a computation, not with its
result; NaN equals NaN, an infinity only itself; integers and bools compare exactly.
"""
from __future__ import annotations

LAW_TOLERANCE = {"f16": 1e-2}
LAW_TOLERANCE_DEFAULT = 1e-4


def law_tolerance(dtype_name: str) -> float:
    """The relative tolerance of a law on floats of ``dtype_name`` (e.g. "f32")."""
    return LAW_TOLERANCE.get(dtype_name, LAW_TOLERANCE_DEFAULT)
