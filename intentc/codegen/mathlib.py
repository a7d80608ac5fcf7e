"""intentc's own ``exp``, ``log`` and ``tanh`` as LLVM IR.

The algorithms, their coefficients and their error bounds are described once in
``intentc/base/elementary.py``; this module runs that description with an arithmetic
whose operations are LLVM instructions: an ``internal alwaysinline`` function
``intent.<op>.<f32|f64>`` per operation and format, no memory access, no branches (every
special case is a ``select``) and no calls, so that once it is inlined the loop
vectoriser widens it like any other arithmetic. No fast-math flags and no fused
multiply-add: LLVM keeps every operation as written on x86-64, AArch64 and NVPTX alike,
so the result is the same bits on every target, and the same bits as the reference
interpreter's NumPy run of the same description (``intentc/interp/mathfuncs.py``).
f16 is computed in f32 and rounded once to f16.
"""
from __future__ import annotations

import llvmlite

llvmlite.ir_layer_typed_pointers_enabled = False
from llvmlite import ir  # noqa: E402

from intentc.base.elementary import ALGORITHMS, F32, F64, FORMATS, OPS, Format  # noqa: E402

__all__ = ["OPS", "FORMATS", "function", "call"]


# ---- LLVM IR -------------------------------------------------------------------------------------
class _IR:
    """The arithmetic of ``base/elementary.py`` as LLVM instructions in one float format."""

    def __init__(self, builder: ir.IRBuilder, fmt: Format):
        self.b = builder
        self.fmt = fmt
        self.ft = ir.FloatType() if fmt.bits == 32 else ir.DoubleType()
        self.it = ir.IntType(fmt.bits)

    def c(self, v):
        return ir.Constant(self.ft, v)

    def ic(self, v):
        return ir.Constant(self.it, v)

    def add(self, a, b):
        return self.b.fadd(a, b)

    def sub(self, a, b):
        return self.b.fsub(a, b)

    def mul(self, a, b):
        return self.b.fmul(a, b)

    def div(self, a, b):
        return self.b.fdiv(a, b)

    def neg(self, a):
        return self.b.fneg(a)

    def lt(self, a, b):
        return self.b.fcmp_ordered("<", a, b)

    def gt(self, a, b):
        return self.b.fcmp_ordered(">", a, b)

    def eq(self, a, b):
        return self.b.fcmp_ordered("==", a, b)

    def uge(self, a, b):
        return self.b.fcmp_unordered(">=", a, b)

    def select(self, cond, a, b):
        return self.b.select(cond, a, b)

    def bits(self, a):
        return self.b.bitcast(a, self.it)

    def from_bits(self, i):
        return self.b.bitcast(i, self.ft)

    def fabs(self, a):
        return self.from_bits(self.b.and_(self.bits(a), self.ic((1 << (self.fmt.bits - 1)) - 1)))

    def iadd(self, a, b):
        return self.b.add(a, b)

    def iand(self, a, b):
        return self.b.and_(a, b)

    def ior(self, a, b):
        return self.b.or_(a, b)

    def isub(self, a, b):
        return self.b.sub(a, b)

    def shl(self, a, n: int):
        return self.b.shl(a, self.ic(n))

    def ashr(self, a, n: int):
        return self.b.ashr(a, self.ic(n))

    def itof(self, i):
        return self.b.sitofp(i, self.ft)


def _format_of(type_: ir.Type) -> Format:
    if isinstance(type_, ir.FloatType):
        return F32
    if isinstance(type_, ir.DoubleType):
        return F64
    raise TypeError(f"no math library function for {type_}")


def function(module: ir.Module, op: str, type_: ir.Type) -> ir.Function:
    """The function ``intent.<op>.<f32|f64>`` of ``module`` (added on first use)."""
    fmt = _format_of(type_)
    name = f"intent.{op}.{fmt.name}"
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    func = ir.Function(module, ir.FunctionType(type_, [type_]), name)
    func.linkage = "internal"
    for attribute in ("alwaysinline", "nounwind", "readnone"):
        func.attributes.add(attribute)
    builder = ir.IRBuilder(func.append_basic_block("entry"))
    builder.ret(ALGORITHMS[op](_IR(builder, fmt), func.args[0]))
    return func


def call(builder: ir.IRBuilder, module: ir.Module, op: str, value: ir.Value) -> ir.Value:
    """``op(value)`` for a float ``value``; f16 is computed in f32 and rounded once. A
    vector is computed lane by lane (the vectoriser widens the inlined lanes again)."""
    if isinstance(value.type, ir.VectorType):
        result = ir.Constant(value.type, ir.Undefined)
        for lane in range(value.type.count):
            index = ir.Constant(ir.IntType(32), lane)
            item = call(builder, module, op, builder.extract_element(value, index))
            result = builder.insert_element(result, item, index)
        return result
    if isinstance(value.type, ir.HalfType):
        wide = builder.call(function(module, op, ir.FloatType()), [builder.fpext(value, ir.FloatType())])
        return builder.fptrunc(wide, ir.HalfType())
    return builder.call(function(module, op, value.type), [value])
