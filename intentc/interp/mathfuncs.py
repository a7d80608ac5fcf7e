"""intentc's own math functions run with NumPy, one IEEE operation at a time.

The algorithms are described once in ``intentc/base/`` (``math_algorithms.ALGORITHMS``);
code generation runs that description as LLVM IR (``intentc/codegen/mathlib.py``), and
this module runs it with an arithmetic whose operations are NumPy ufuncs in the computing
dtype (no fused multiply-add, no excess precision), widening and rounding exactly as the
compiled code does (``math_catalog.computed_in``; f16 through f32), so that the
interpreter gives the compiled code's bits on every target. bf16 is computed as f32 is
and rounded once to bf16.
"""
from __future__ import annotations

import numpy as np

from intentc.base import math_catalog
from intentc.base.elementary import F32, F64, Format
from intentc.base.math_algorithms import algorithm


class _NumPy:
    """The arithmetic of ``base/elementary.py`` as NumPy operations in one float dtype."""

    def __init__(self, fmt: Format, source: int | None = None):
        self.np = np
        self.fmt = fmt
        self.source = source or fmt.bits
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

    def le(self, a, b):
        return self.np.less_equal(a, b)

    def uno(self, a, b):
        return self.np.isnan(a) | self.np.isnan(b)

    def or_(self, p, q):
        return self.np.logical_or(p, q)

    def and_(self, p, q):
        return self.np.logical_and(p, q)

    def not_(self, p):
        return self.np.logical_not(p)

    def sqrt(self, a):
        return self.np.sqrt(a, dtype=self.ft)

    def ftoi(self, a):
        return self.np.asarray(a).astype(self.it)

    def ixor(self, a, b):
        return self.np.bitwise_xor(a, b, dtype=self.it)

    def ilt(self, a, b):
        return self.np.less(a, b)

    def lshr(self, a, n: int):
        unsigned = self.np.uint32 if self.fmt.bits == 32 else self.np.uint64
        return self.np.right_shift(self.np.asarray(a, self.it).view(unsigned), unsigned(n)).view(self.it)

    def table(self, name: str, values: tuple, index):
        return self.np.asarray(values, self.ft)[index]

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

    def wide(self) -> "_NumPy":
        """The f64 arithmetic (for an f32 algorithm's wider steps)."""
        return _NumPy(F64, self.source)

    def narrow(self) -> "_NumPy":
        return _NumPy(F32, self.source)

    def widen(self, a):  # f32 -> f64, exact
        return self.np.asarray(a, self.np.float32).astype(self.np.float64)

    def round_f32(self, a):  # f64 -> f32, one rounding
        return self.np.asarray(a, self.np.float64).astype(self.np.float32)


FUNCTIONS = frozenset(math_catalog.ALL)
_FORMATS = {32: F32, 64: F64}
_DTYPES = {16: np.dtype(np.float16), 32: np.dtype(np.float32), 64: np.dtype(np.float64)}


def evaluate(op: str, *operands, dtype=None):
    """``op(*operands)`` computed exactly as the compiled code computes it: an array of the
    operands' float dtype (or ``dtype``) and their broadcast shape."""
    nd = np.dtype(dtype) if dtype is not None else np.asarray(operands[0]).dtype
    xs = [np.asarray(x, nd) for x in operands]
    if nd.name == "bfloat16":  # computed as f32 is, rounded once
        with np.errstate(all="ignore"):
            return evaluate(op, *(x.astype(np.float32) for x in xs)).astype(nd)
    bits = {np.dtype(np.float16): 16, np.dtype(np.float32): 32, np.dtype(np.float64): 64}.get(nd)
    if bits is None:
        raise TypeError(f"no math library function for {nd}")
    wide = math_catalog.computed_in(op, bits)
    source = max(bits, 32)
    with np.errstate(all="ignore"):  # the wide result rounded: overflow to inf is expected
        result = np.asarray(algorithm(op, source)(_NumPy(_FORMATS[wide], source), *(x.astype(_DTYPES[wide]) for x in xs)),
                            _DTYPES[wide])
        return result.astype(_DTYPES[source]).astype(nd)
