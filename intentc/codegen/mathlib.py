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

from intentc.base import math_catalog  # noqa: E402
from intentc.base.elementary import F32, F64, FORMATS, OPS, Format  # noqa: E402
from intentc.base.math_algorithms import algorithm  # noqa: E402

__all__ = ["OPS", "FUNCTIONS", "FORMATS", "function", "call"]
FUNCTIONS = math_catalog.ALL  # every function call() computes


# ---- LLVM IR -------------------------------------------------------------------------------------
class _IR:
    """The arithmetic of ``base/elementary.py`` as LLVM instructions in one float format."""

    def __init__(self, builder: ir.IRBuilder, fmt: Format, source: int | None = None):
        self.b = builder
        self.fmt = fmt
        self.source = source or fmt.bits
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

    def le(self, a, b):
        return self.b.fcmp_ordered("<=", a, b)

    def uno(self, a, b):
        return self.b.fcmp_unordered("uno", a, b)

    def or_(self, p, q):
        return self.b.or_(p, q)

    def and_(self, p, q):
        return self.b.and_(p, q)

    def not_(self, p):
        return self.b.not_(p)

    def sqrt(self, a):  # IEEE, correctly rounded: one instruction on every target
        fn = self.b.module.declare_intrinsic("llvm.sqrt", [self.ft])
        return self.b.call(fn, [a])

    def ftoi(self, a):  # an integral float in the integer range
        return self.b.fptosi(a, self.it)

    def ixor(self, a, b):
        return self.b.xor(a, b)

    def ilt(self, a, b):
        return self.b.icmp_signed("<", a, b)

    def lshr(self, a, n: int):
        return self.b.lshr(a, self.ic(n))

    def table(self, name: str, values: tuple, index):
        """``values[index]`` from a constant table ``intent.table.<name>`` of the module."""
        module = self.b.module
        gname = f"intent.table.{name}"
        table = module.globals.get(gname)
        if table is None:
            array = ir.ArrayType(self.ft, len(values))
            table = ir.GlobalVariable(module, array, gname)
            table.initializer = ir.Constant(array, [ir.Constant(self.ft, v) for v in values])
            table.global_constant = True
            table.linkage = "internal"
            table.unnamed_addr = True
        ptr = self.b.gep(table, [ir.Constant(ir.IntType(64), 0), index], inbounds=True)
        return self.b.load(ptr)

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

    def wide(self) -> "_IR":
        """The f64 arithmetic on the same builder (for an f32 algorithm's wider steps)."""
        return _IR(self.b, F64, self.source)

    def narrow(self) -> "_IR":
        return _IR(self.b, F32, self.source)

    def widen(self, a):  # f32 -> f64, exact
        return self.b.fpext(a, ir.DoubleType())

    def round_f32(self, a):  # f64 -> f32, one rounding
        return self.b.fptrunc(a, ir.FloatType())


def _format_of(type_: ir.Type) -> Format:
    if isinstance(type_, ir.FloatType):
        return F32
    if isinstance(type_, ir.DoubleType):
        return F64
    raise TypeError(f"no math library function for {type_}")


_TYPES = {16: ir.HalfType(), 32: ir.FloatType(), 64: ir.DoubleType()}


def function(module: ir.Module, op: str, type_: ir.Type, source: int | None = None) -> ir.Function:
    """The function ``intent.<op>.<f32|f64>`` of ``module`` (added on first use) computing ``op``
    in ``type_``'s format for operands of ``source`` bits (the format's own by default)."""
    fmt = _format_of(type_)
    source = source or fmt.bits
    name = f"intent.{op}.{fmt.name}" if source == fmt.bits else f"intent.{op}.f{source}.{fmt.name}"
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    arity = math_catalog.arity(op)
    func = ir.Function(module, ir.FunctionType(type_, [type_] * arity), name)
    func.linkage = "internal"
    for attribute in ("alwaysinline", "nounwind", "readnone"):
        func.attributes.add(attribute)
    builder = ir.IRBuilder(func.append_basic_block("entry"))
    builder.ret(algorithm(op, source)(_IR(builder, fmt, source), *func.args))
    return func


def _bits(type_: ir.Type) -> int:
    if isinstance(type_, ir.HalfType):
        return 16
    if isinstance(type_, ir.FloatType):
        return 32
    if isinstance(type_, ir.DoubleType):
        return 64
    raise TypeError(f"no math library function for {type_}")


def call(builder: ir.IRBuilder, module: ir.Module, op: str, *values: ir.Value) -> ir.Value:
    """``op(*values)`` for float operands of one type: widened to the computing format and the
    result rounded back (f16 through f32). A vector is computed lane by lane (the
    vectoriser widens the inlined lanes again)."""
    first = values[0]
    if isinstance(first.type, ir.VectorType):
        result = ir.Constant(first.type, ir.Undefined)
        for lane in range(first.type.count):
            index = ir.Constant(ir.IntType(32), lane)
            item = call(builder, module, op, *(builder.extract_element(v, index) for v in values))
            result = builder.insert_element(result, item, index)
        return result
    bits = _bits(first.type)
    wide = math_catalog.computed_in(op, bits)
    if wide == bits:
        return builder.call(function(module, op, first.type), list(values))
    source = max(bits, 32)
    args = [builder.fpext(v, _TYPES[wide]) for v in values]
    result = builder.call(function(module, op, _TYPES[wide], source), args)
    if source != wide:
        result = builder.fptrunc(result, _TYPES[source])
    return result if bits == source else builder.fptrunc(result, first.type)
