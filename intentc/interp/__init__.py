"""The reference interpreter: runs KIR as the front end builds it (before lowering).

This package is the living definition of what every KIR op means. When the compiled code
and the interpreter disagree, one of them has a bug, and the differential tests
(``tests/e2e``, ``tests/property``) exist to find out which. It depends only on
``intentc.base`` and ``intentc.kir``; ``intentc.interpret`` (``intentc/driver.py``) parses
a source and calls ``interpret_module``.

Modules
    ``numeric.py``        the numeric rules: integers, floats, casts, domains (values are
                          Python bools and ints, NumPy float scalars, NumPy arrays)
    ``mathfuncs.py``      ``exp``, ``log``, ``tanh``: intentc's own algorithms run with NumPy
    ``core_ops.py``       the core ops: arithmetic, domains, relations, loads and stores,
                          control flow, calls, ``contract``, ``histogram``
    ``structured.py``     reduce, scan, fold, buffer, region ops and the laws sanitizer
    ``memory.py``         gather, scatter, scatter_reduce, atomics, philox and the race and
                          unique sanitizers
    ``scaled.py``         scaled_contract and sparse_contract
    ``lowered.py``        the ops only lowering builds (contract_tiles, lane_chains, the
                          scaled, 2:4 and CSR tiles), so lowered KIR runs too
    ``registry.py``       the one table op name -> handler, collected from the families
                          (it says how a new family module is added)
    ``machine.py``        ``Interpreter``: runs functions and blocks through the table
    ``calling.py``        a kernel call: the loader's and the runtime's checks, in order
    ``order_sanitizer.py`` ``sanitize="order"``: every point order, compared
    ``entry.py``          ``interpret_module``
"""
from __future__ import annotations

from intentc.interp.entry import interpret_module
from intentc.interp.machine import PARALLEL_ORDERS, SANITIZERS, Interpreter
from intentc.interp.memory import RaceError, SanitizerError, UniqueViolation
from intentc.interp.structured import LawViolation

__all__ = ["interpret_module", "Interpreter", "PARALLEL_ORDERS", "SANITIZERS", "LawViolation", "RaceError",
           "SanitizerError", "UniqueViolation"]
