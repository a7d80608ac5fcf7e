"""Physical expressions -> LLVM values: one handler per expression class, found by its type.

Constants wrap to their type's bits; loads and stores of bool go through a byte; a ``Binary``
marked ``fast`` (a reduction's combine, T1) lets LLVM regroup float additions and
multiplications; ``MulAdd`` may fuse on floats (a contraction grants it, T3/T7); packed f4
elements and Microscaling casts are ``mx_llvm``'s; atomics are ``atomics``'s (M6).
"""
from __future__ import annotations

from llvmlite import ir

from intentc.codegen import bf16_llvm, mx_llvm
from intentc.codegen.atomics import emit_atomic
from intentc.codegen.llvm_types import I1, I8, I32, mem_type, reg_type, type_suffix
from intentc.lower import program as P


class ExpressionEmitter:
    """``expr(e)``, for a function emitter (``llvm_function.FunctionEmitter``: ``builder``,
    ``mod``, ``slot``, ``field``, ``data_ptr`` and the arithmetic of ``llvm_arith``)."""

    def address(self, tensor: P.TensorSym, offset: P.Expr) -> ir.Value:
        return self.builder.gep(self.data_ptr(tensor.name), [self.expr(offset)], source_etype=mem_type(tensor.dtype))

    def expr(self, e: P.Expr) -> ir.Value:
        name = _HANDLERS.get(type(e))
        if name is None:
            raise TypeError(e)
        return getattr(self, name)(e)

    def const(self, e: P.Const) -> ir.Value:
        t = reg_type(e.dtype)
        if e.dtype.is_bool:
            return ir.Constant(I1, int(bool(e.value)))
        if e.dtype.kind == "bfloat":
            return ir.Constant(t, bf16_llvm.constant_bits(e.value))
        if e.dtype.is_float:
            return ir.Constant(t, float(e.value))
        return ir.Constant(t, int(e.value) & ((1 << e.dtype.bits) - 1))

    def read(self, e: P.Read) -> ir.Value:
        return self.builder.load(self.slot(e.var))

    def field_expr(self, e: P.Field) -> ir.Value:
        return self.field(e.tensor.name, e.kind, e.axis)

    def atomic(self, e: P.Atomic) -> ir.Value:  # M6
        return emit_atomic(self, e)

    def load(self, e: P.Load) -> ir.Value:
        if e.tensor.dtype.kind == "mx" and e.tensor.dtype.bits == 4:  # packed f4e2m1
            lanes = e.dtype.lanes if isinstance(e.dtype, P.VectorType) else None
            return mx_llvm.load_f4(self, e.tensor, self.expr(e.offset), lanes)
        ptr = self.address(e.tensor, e.offset)
        value = self.builder.load(ptr, align=e.tensor.dtype.itemsize, typ=mem_type(e.dtype))
        if e.tensor.dtype.is_bool:
            value = self.builder.icmp_unsigned("!=", value, ir.Constant(I8, 0))
        return value

    def binary_expr(self, e: P.Binary) -> ir.Value:
        value = self.binary(e.op, self.expr(e.a), self.expr(e.b), e.a.dtype)
        if e.fast and e.a.dtype.is_float and hasattr(value, "flags") and value.opname in (
                "fadd", "fsub", "fmul", "fdiv"):
            value.flags += ["reassoc", "nsz"]
        return value

    def unary_expr(self, e: P.Unary) -> ir.Value:
        return self.unary(e.op, self.expr(e.a), e.a.dtype)

    def splat(self, e: P.Splat) -> ir.Value:
        b = self.builder
        t = reg_type(e.dtype)
        one = b.insert_element(ir.Constant(t, ir.Undefined), self.expr(e.a), ir.Constant(I32, 0))
        return b.shuffle_vector(one, ir.Constant(t, ir.Undefined), ir.Constant(ir.VectorType(I32, t.count), None))

    def pack(self, e: P.Pack) -> ir.Value:
        vector = ir.Constant(reg_type(e.dtype), ir.Undefined)
        for j, elem in enumerate(e.elems):
            vector = self.builder.insert_element(vector, self.expr(elem), ir.Constant(I32, j))
        return vector

    def lane(self, e: P.Lane) -> ir.Value:
        return self.builder.extract_element(self.expr(e.a), ir.Constant(I32, e.index))

    def shuffle(self, e: P.Shuffle) -> ir.Value:
        mask = ir.Constant(ir.VectorType(I32, len(e.mask)), [ir.Constant(I32, m) for m in e.mask])
        return self.builder.shuffle_vector(self.expr(e.a), self.expr(e.b), mask)

    def muladd(self, e: P.MulAdd) -> ir.Value:  # a contraction grants the fused multiply-add (T3, T7)
        b = self.builder
        x, y, z = self.expr(e.a), self.expr(e.b), self.expr(e.c)
        if e.dtype.kind == "bfloat":  # in f32 (fused: rounded to f32, then to bf16, as the interpreter)
            x, y, z = (bf16_llvm.widen(b, v) for v in (x, y, z))
            kind = "fma" if e.fused else "fmuladd"
            return bf16_llvm.narrow(b, b.call(self.mod.intrinsic(f"llvm.{kind}.{type_suffix(x.type)}", x.type,
                                                                 [x.type] * 3), [x, y, z]))
        if e.dtype.is_float and e.fused:  # I.fma: one rounding (f16: to f32, then to f16, as the interpreter)
            if isinstance(x.type, ir.HalfType) or (isinstance(x.type, ir.VectorType)
                                                   and isinstance(x.type.element, ir.HalfType)):
                wide = ir.FloatType() if not isinstance(x.type, ir.VectorType) else ir.VectorType(ir.FloatType(),
                                                                                                 x.type.count)
                args = [b.fpext(v, wide) for v in (x, y, z)]
                fused = b.call(self.mod.intrinsic(f"llvm.fma.{type_suffix(wide)}", wide, [wide] * 3), args)
                return b.fptrunc(fused, x.type)
            return b.call(self.mod.intrinsic(f"llvm.fma.{type_suffix(x.type)}", x.type, [x.type] * 3), [x, y, z])
        if e.dtype.is_float:
            return b.call(self.mod.intrinsic(f"llvm.fmuladd.{type_suffix(x.type)}", x.type, [x.type] * 3), [x, y, z])
        return b.add(b.mul(x, y), z)

    def compare_expr(self, e: P.Compare) -> ir.Value:
        return self.compare(e.pred, self.expr(e.a), self.expr(e.b), e.a.dtype)

    def select(self, e: P.Select) -> ir.Value:
        return self.builder.select(self.expr(e.cond), self.expr(e.a), self.expr(e.b))

    def cast_expr(self, e: P.Cast) -> ir.Value:
        if e.in_range and e.a.dtype.is_float and e.a.dtype.kind != "bfloat" and e.dtype.is_int:  # no saturation
            convert = self.builder.fptosi if e.dtype.is_signed else self.builder.fptoui
            return convert(self.expr(e.a), reg_type(e.dtype))
        return self.cast(self.expr(e.a), e.a.dtype, e.dtype)


# The method for each expression class, looked up on the emitter (a target may override one).
_HANDLERS = {P.Const: "const", P.Read: "read", P.Field: "field_expr", P.Atomic: "atomic", P.Load: "load",
             P.Binary: "binary_expr", P.Unary: "unary_expr", P.Splat: "splat", P.Pack: "pack", P.Lane: "lane",
             P.Shuffle: "shuffle", P.MulAdd: "muladd", P.Compare: "compare_expr", P.Select: "select",
             P.Cast: "cast_expr"}
