"""The catalogue of intentc's float math functions: which exist, how many operands each
takes, and in which format each is computed. Every stage reads its op names from here
(KIR's op declarations, the physical program, the interpreter, code generation), so a
function is added in one place; its algorithm is in the ``math_*`` modules beside this one.

A function is computed by an algorithm written once over an *arithmetic* ``A``
(``intentc/base/elementary.py`` describes the operations an arithmetic provides), run as
LLVM IR by ``intentc/codegen/mathlib.py`` and with NumPy by ``intentc/interp/mathfuncs.py``.

Formats
    ``NATIVE`` functions run in the operand's own format (f32 in f32, f64 in f64): exp, log
    and tanh, the exact ones that need no wider arithmetic (floor, ceil, round, trunc,
    copysign), and ``F32_ARITHMETIC``, whose f32 operands have algorithms in f32 arithmetic
    of their own (``math_f32_arith``, below 1 ulp). Every other function runs in f64: an f32 operand is widened exactly and the
    f64 result rounded once to f32. For most of them the f32 operand gets an algorithm of
    its own (``math_f32``: plain doubles, about 2^-45 relative error, no double words),
    the rest run the f64 double-word algorithm (``math_algorithms.algorithm`` picks); either
    way the f32 result is within 0.5 ulp but for the rare double-rounding case. f16 runs
    what f32 runs and is rounded to f32, then to f16 (both ways, so the bits agree).
"""
from __future__ import annotations

# The existing elementary functions (their own KIR ops, f32 algorithms of their own).
ELEMENTARY = ("exp", "log", "tanh")

# One-operand functions, each a KIR op of its own name.
UNARY = ("sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
         "exp2", "expm1", "log2", "log10", "log1p", "rsqrt", "cbrt", "erf", "erfc", "lgamma",
         "floor", "ceil", "round", "trunc", "sigmoid", "softplus")
# Two-operand functions (``pow`` is the KIR op of ``**`` and of ``I.pow``).
BINARY = ("atan2", "hypot", "fmod", "remainder", "copysign", "pow")
# The binary functions that are new KIR ops (``pow`` already is one).
NEW_BINARY = tuple(name for name in BINARY if name != "pow")

# f32 (f16, bf16) operands of these are computed in f32 arithmetic (``math_f32_arith``).
F32_ARITHMETIC = ("exp2", "log2", "log10", "atan", "atan2", "asin", "acos")
# Computed in the operand's own format (the rest: in f64, see the module docstring).
NATIVE = frozenset(ELEMENTARY + ("floor", "ceil", "round", "trunc", "copysign") + F32_ARITHMETIC)

ALL = ELEMENTARY + UNARY + BINARY


def arity(name: str) -> int:
    return 2 if name in BINARY else 1


def computed_in(name: str, bits: int) -> int:
    """The width (32 or 64) in which ``name`` on an operand of ``bits`` (16, 32, 64) runs."""
    if bits == 64:
        return 64
    return 32 if name in NATIVE else 64
