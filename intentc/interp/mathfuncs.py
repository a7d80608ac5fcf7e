"""intentc's own ``exp``, ``log`` and ``tanh`` run with NumPy, one IEEE operation at a time.

The algorithms are described once in ``intentc/base/elementary.py``; code generation runs
that description as LLVM IR (``intentc/codegen/mathlib.py``), and this module runs it
with an arithmetic whose operations are NumPy ufuncs in the operand dtype (no fused
multiply-add, no excess precision), so that the interpreter gives the compiled code's
bits on every target. f16 goes through f32 and is rounded once.
"""
from __future__ import annotations

import numpy as np

from intentc.base.elementary import ALGORITHMS, F32, F64, Format


class _NumPy:
    """The arithmetic of ``base/elementary.py`` as NumPy operations in one float dtype."""

    def __init__(self, fmt: Format):
        self.np = np
        self.fmt = fmt
        self.ft = np.float32 if fmt.bits == 32 else np.float64
        self.it = np.int32 if fmt.bits == 32 else np.int64

    def c(self, v):
        return self.ft(v)

    def ic(self, v):
        return self.it(v)

    def add(self, a, b):
        return self.np.add(a, b, dtype=self.ft)

    def sub(self, a, b):
        return self.np.subtract(a, b, dtype=self.ft)

    def mul(self, a, b):
        return self.np.multiply(a, b, dtype=self.ft)

    def div(self, a, b):
        return self.np.divide(a, b, dtype=self.ft)

    def neg(self, a):
        return self.np.negative(a)

    def lt(self, a, b):
        return self.np.less(a, b)

    def gt(self, a, b):
        return self.np.greater(a, b)

    def eq(self, a, b):
        return self.np.equal(a, b)

    def uge(self, a, b):
        return ~self.np.less(a, b)

    def select(self, cond, a, b):
        return self.np.where(cond, a, b)

    def bits(self, a):
        return self.np.asarray(a, self.ft).view(self.it)

    def from_bits(self, i):
        return self.np.asarray(i, self.it).view(self.ft)

    def fabs(self, a):
        return self.np.abs(a)

    def iadd(self, a, b):
        return self.np.add(a, b, dtype=self.it)

    def iand(self, a, b):
        return self.np.bitwise_and(a, b, dtype=self.it)

    def ior(self, a, b):
        return self.np.bitwise_or(a, b, dtype=self.it)

    def isub(self, a, b):
        return self.np.subtract(a, b, dtype=self.it)

    def shl(self, a, n: int):
        return self.np.left_shift(a, self.it(n), dtype=self.it)

    def ashr(self, a, n: int):
        return self.np.right_shift(a, self.it(n), dtype=self.it)

    def itof(self, i):
        return self.np.asarray(i).astype(self.ft)


def evaluate(op: str, x, dtype=None):
    """``op(x)`` computed exactly as the compiled code computes it: an array of ``x``'s
    float dtype (or ``dtype``) and shape; f16 goes through f32 and is rounded once."""
    nd = np.dtype(dtype) if dtype is not None else np.asarray(x).dtype
    x = np.asarray(x, nd)
    if nd == np.float16:
        with np.errstate(all="ignore"):  # the f32 result rounded once: overflow to inf is expected
            return evaluate(op, x.astype(np.float32)).astype(np.float16)
    fmt = {np.dtype(np.float32): F32, np.dtype(np.float64): F64}.get(nd)
    if fmt is None:
        raise TypeError(f"no math library function for {nd}")
    with np.errstate(all="ignore"):
        return np.asarray(ALGORITHMS[op](_NumPy(fmt), x), nd)
