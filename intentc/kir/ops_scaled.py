"""The messages of the run-time checks of sparse metadata (``CHECKS``), under the module
name that ``intentc/lower/sparse_lowering.py`` and ``interp_scaled.py`` import; the table and
the op declarations live in ``intentc.kir.ops.scaled``. Remove once both import it there."""
from intentc.kir.ops.scaled import CHECKS

__all__ = ["CHECKS"]
