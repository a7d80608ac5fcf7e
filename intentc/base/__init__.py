"""Foundations: facts and pure rules that several stages must agree on.

Nothing here imports a later stage of intentc (only ``intentc.source``,
``intentc.diagnostics`` and ``intentc.resources``, which are foundations too), so the
parser, KIR, the interpreter, the lowering and code generation can all depend on it:

- ``status``: the status codes of the C ABI and ``KernelError`` (docs/abi.md);
- ``blocking``: how a privatized ``scatter_reduce`` cuts its lanes into blocks (M5);
- ``philox``: the constants of the Philox4x32-10 generator (N1);
- ``laws``: how closely the two sides of a region law must agree (R2, R6);
- ``atomic_files``: artifacts written beside their final name and renamed into place;
- ``elementary``: intentc's own ``exp``, ``log`` and ``tanh``, written once over an
  abstract IEEE arithmetic that code generation runs as LLVM IR and the interpreter
  with NumPy; the rest of the math library in the same style: ``math_catalog`` (the
  functions, their arity and computing format), ``math_algorithms`` (name -> algorithm),
  ``math_dd`` (double-word arithmetic), ``math_constants`` (pi, ln 2, the bits of 2/pi),
  ``math_exact``, ``math_explog``, ``math_trig``, ``math_special``, ``math_gamma``.
"""
