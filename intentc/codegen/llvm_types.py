"""LLVM types of physical-program values, shared by the CPU and GPU emitters.

A value in registers (``reg_type``: bool is ``i1``, a ``VectorType`` an LLVM vector), an element
in memory (``mem_type``: bool is one byte) and a scalar argument of an exported entry
(``arg_type``: bool a byte, f16/bf16 their 16 bits, as the C ABI passes them). A bf16 is its bits
in registers too: every operation on it widens to f32 first (``bf16_llvm.py``).
"""
from __future__ import annotations

from llvmlite import ir  # opaque pointers: the package's __init__ chooses them

from intentc.kir.types import DType
from intentc.lower import program as P

I1, I8, I16, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(16), ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType()


class UnsupportedError(Exception):
    """A construct this target cannot lower yet (reported as a diagnostic)."""


def reg_type(dtype: DType) -> ir.Type:
    """The LLVM type of a value in registers."""
    if isinstance(dtype, P.VectorType):
        return ir.VectorType(reg_type(dtype.elem), dtype.lanes)
    if dtype.is_bool:
        return I1
    if dtype.kind in ("int", "uint", "index"):
        return ir.IntType(dtype.bits)
    if dtype.name == "f16":
        return ir.HalfType()
    if dtype.name == "bf16":  # its bits: arithmetic runs in f32 (bf16_llvm.py)
        return I16
    if dtype.name == "f32":
        return ir.FloatType()
    if dtype.name == "f64":
        return ir.DoubleType()
    if dtype.kind == "mx":  # an OCP Microscaling code (mx_llvm.py)
        return I8
    raise UnsupportedError(f"dtype {dtype} is not supported in arithmetic on this target yet")


def mem_type(dtype: DType) -> ir.Type:
    """The LLVM type of an element in memory (bool is one byte)."""
    return I8 if dtype.is_bool else reg_type(dtype)


def arg_type(dtype: DType) -> ir.Type:
    if dtype.is_bool:
        return I8
    if dtype.name in ("f16", "bf16"):
        return I16
    return reg_type(dtype)


def type_suffix(t: ir.Type) -> str:
    """The type part of an overloaded intrinsic's name (``llvm.fabs.v8f32``)."""
    if isinstance(t, ir.VectorType):
        return f"v{t.count}{type_suffix(t.element)}"
    if isinstance(t, ir.HalfType):
        return "f16"
    if isinstance(t, ir.FloatType):
        return "f32"
    if isinstance(t, ir.DoubleType):
        return "f64"
    return f"i{t.width}"
