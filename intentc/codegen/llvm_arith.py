"""Arithmetic on LLVM values with intentc's one meaning on every target (docs/language.md).

Integers wrap; ``//`` and ``%`` round toward negative infinity and ``x // 0 == 0``,
``x % 0 == x``; shifts by an amount outside ``[0, bits)`` give 0 (or the sign for ``>>`` of a
negative value); float-to-int casts saturate and map NaN to 0; pointwise float arithmetic is
plain IEEE (no fast-math flags); ``minimum``/``maximum`` propagate NaN. ``exp``, ``log`` and
``tanh`` are intentc's own branch-free functions (``mathlib.py``), inlined so that loops calling
them vectorise; ``sqrt`` is the correctly rounded intrinsic.
"""
from __future__ import annotations

from llvmlite import ir

from intentc.codegen import bf16_llvm, mathlib, mx_llvm
from intentc.codegen.llvm_types import UnsupportedError, type_suffix, reg_type
from intentc.kir.types import DTYPES, DType

F32 = DTYPES["f32"]


class ArithmeticEmitter:
    """The operations of ``Binary``, ``Unary``, ``Compare`` and ``Cast``, for a function emitter
    (``llvm_function.FunctionEmitter``: ``builder``, ``mod``, ``func``, ``entry_alloca``). The GPU
    emitter overrides ``binary`` for the operations it takes from libdevice."""

    def binary(self, op: str, a: ir.Value, c: ir.Value, dtype: DType) -> ir.Value:
        b = self.builder
        if dtype.kind == "bfloat":  # in f32, rounded once
            return bf16_llvm.narrow(b, self.binary(op, bf16_llvm.widen(b, a), bf16_llvm.widen(b, c), F32))
        if dtype.is_float:
            if op == "add":
                return b.fadd(a, c)
            if op == "sub":
                return b.fsub(a, c)
            if op == "mul":
                return b.fmul(a, c)
            if op == "div":
                return b.fdiv(a, c)
            if op in ("min", "max"):
                name = "llvm.minimum" if op == "min" else "llvm.maximum"
                return b.call(self.mod.intrinsic(f"{name}.{type_suffix(a.type)}", a.type, [a.type, a.type]), [a, c])
            if op in mathlib.FUNCTIONS:  # pow and the binary functions: intentc's own, every target
                return mathlib.call(b, self.mod.module, op, a, c)
            if op == "pow":
                return b.call(self.mod.intrinsic(f"llvm.pow.{type_suffix(a.type)}", a.type, [a.type, a.type]), [a, c])
            if op == "floordiv":
                floor = self.mod.intrinsic(f"llvm.floor.{type_suffix(a.type)}", a.type, [a.type])
                return b.call(floor, [b.fdiv(a, c)])
            if op == "mod":
                # Python: the remainder takes the divisor's sign, a zero remainder too. fmod is
                # intentc's own (exact, branch-free), not frem's C library call.
                r = mathlib.call(b, self.mod.module, "fmod", a, c)
                zero = ir.Constant(a.type, 0.0)
                fix = b.and_(b.fcmp_ordered("!=", r, zero),
                             b.xor(b.fcmp_ordered("<", r, zero), b.fcmp_ordered("<", c, zero)))
                r = b.select(fix, b.fadd(r, c), r)
                copysign = self.mod.intrinsic(f"llvm.copysign.{type_suffix(a.type)}", a.type, [a.type, a.type])
                return b.select(b.fcmp_ordered("==", r, zero), b.call(copysign, [zero, c]), r)
            raise UnsupportedError(f"'{op}' on {dtype}")
        signed = dtype.is_signed
        if op == "add":
            return b.add(a, c)
        if op == "sub":
            return b.sub(a, c)
        if op == "mul":
            return b.mul(a, c)
        if op == "and":
            return b.and_(a, c)
        if op == "or":
            return b.or_(a, c)
        if op == "xor":
            return b.xor(a, c)
        if op in ("min", "max"):
            pred = "<" if op == "min" else ">"
            cmp = b.icmp_signed(pred, a, c) if signed else b.icmp_unsigned(pred, a, c)
            return b.select(cmp, a, c)
        if op in ("floordiv", "mod"):
            return self.int_divmod(op, a, c, signed)
        if op in ("shl", "shr"):
            bits = ir.Constant(a.type, a.type.width)
            in_range = b.icmp_unsigned("<", c, bits)
            if op == "shl":
                return b.select(in_range, b.shl(a, c), ir.Constant(a.type, 0))
            if signed:
                return b.ashr(a, b.select(in_range, c, ir.Constant(a.type, a.type.width - 1)))
            return b.select(in_range, b.lshr(a, c), ir.Constant(a.type, 0))
        if op == "pow":
            return self.int_pow(a, c, signed)
        raise UnsupportedError(f"'{op}' on {dtype}")

    def int_divmod(self, op: str, a: ir.Value, c: ir.Value, signed: bool) -> ir.Value:
        b = self.builder
        t = a.type
        zero, one = ir.Constant(t, 0), ir.Constant(t, 1)
        is_zero = b.icmp_unsigned("==", c, zero)
        if not signed:
            safe = b.select(is_zero, one, c)
            if op == "floordiv":
                return b.select(is_zero, zero, b.udiv(a, safe))
            return b.select(is_zero, a, b.urem(a, safe))
        # Avoid the two undefined cases: x / 0 and MIN / -1 (which wraps to MIN, remainder 0).
        minus_one = ir.Constant(t, -1)
        overflow = b.and_(b.icmp_signed("==", a, ir.Constant(t, -(1 << (t.width - 1)))),
                          b.icmp_signed("==", c, minus_one))
        safe = b.select(b.or_(is_zero, overflow), one, c)
        q = b.sdiv(a, safe)
        r = b.srem(a, safe)
        # Round toward negative infinity: adjust when the remainder and divisor differ in sign.
        adjust = b.and_(b.icmp_signed("!=", r, zero), b.icmp_signed("<", b.xor(r, safe), zero))
        if op == "floordiv":
            q = b.select(adjust, b.sub(q, one), q)
            return b.select(is_zero, zero, q)
        r = b.select(adjust, b.add(r, safe), r)
        return b.select(is_zero, a, r)

    def int_pow(self, a: ir.Value, c: ir.Value, signed: bool) -> ir.Value:
        """Exponentiation by squaring with wrap-around; a negative exponent gives 0
        (1 for a base of 1, ±1 for a base of -1), as integer division would."""
        b = self.builder
        t = a.type
        result, base, exp = self.entry_alloca(t), self.entry_alloca(t), self.entry_alloca(t)
        b.store(ir.Constant(t, 1), result)
        b.store(a, base)
        b.store(c, exp)
        head = self.func.append_basic_block("pow.head")
        body = self.func.append_basic_block("pow.body")
        done = self.func.append_basic_block("pow.done")
        b.branch(head)
        b.position_at_end(head)
        e = b.load(exp)
        b.cbranch(b.icmp_signed(">", e, ir.Constant(t, 0)) if signed else b.icmp_unsigned(">", e, ir.Constant(t, 0)),
                  body, done)
        b.position_at_end(body)
        odd = b.icmp_unsigned("!=", b.and_(e, ir.Constant(t, 1)), ir.Constant(t, 0))
        r = b.load(result)
        bv = b.load(base)
        b.store(b.select(odd, b.mul(r, bv), r), result)
        b.store(b.mul(bv, bv), base)
        b.store(b.lshr(e, ir.Constant(t, 1)), exp)
        b.branch(head)
        b.position_at_end(done)
        value = b.load(result)
        if not signed:
            return value
        negative = b.icmp_signed("<", c, ir.Constant(t, 0))
        one = ir.Constant(t, 1)
        is_one = b.icmp_signed("==", a, one)
        is_minus_one = b.icmp_signed("==", a, ir.Constant(t, -1))
        odd_exp = b.icmp_unsigned("!=", b.and_(c, one), ir.Constant(t, 0))
        neg_value = b.select(is_one, one, b.select(is_minus_one, b.select(odd_exp, ir.Constant(t, -1), one),
                                                   ir.Constant(t, 0)))
        return b.select(negative, neg_value, value)

    def unary(self, op: str, a: ir.Value, dtype: DType) -> ir.Value:
        b = self.builder
        if dtype.kind == "bfloat":  # in f32, rounded once
            return bf16_llvm.narrow(b, self.unary(op, bf16_llvm.widen(b, a), F32))
        if op == "neg":
            return b.fneg(a) if dtype.is_float else b.sub(ir.Constant(a.type, 0), a)
        if op == "not":
            return b.xor(a, ir.Constant(a.type, -1 if not dtype.is_bool else 1))
        if op == "abs":
            if dtype.is_float:
                return b.call(self.mod.intrinsic(f"llvm.fabs.{type_suffix(a.type)}", a.type, [a.type]), [a])
            if not dtype.is_signed:
                return a
            return b.select(b.icmp_signed("<", a, ir.Constant(a.type, 0)), b.sub(ir.Constant(a.type, 0), a), a)
        if op in mathlib.FUNCTIONS and dtype.is_float:  # intentc's own: vectorisable, the same bits everywhere
            return mathlib.call(b, self.mod.module, op, a)
        if op == "sqrt":  # IEEE, correctly rounded everywhere
            return b.call(self.mod.intrinsic(f"llvm.sqrt.{type_suffix(a.type)}", a.type, [a.type]), [a])
        raise UnsupportedError(f"'{op}' on {dtype}")

    def compare(self, pred: str, a: ir.Value, c: ir.Value, dtype: DType) -> ir.Value:
        b = self.builder
        symbol = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}[pred]
        if dtype.kind == "bfloat":  # exact in f32
            a, c, dtype = bf16_llvm.widen(b, a), bf16_llvm.widen(b, c), F32
        if dtype.is_float:
            # Every comparison with NaN is false except !=, as in IEEE and Python.
            return b.fcmp_unordered(symbol, a, c) if pred == "ne" else b.fcmp_ordered(symbol, a, c)
        if dtype.is_signed:
            return b.icmp_signed(symbol, a, c)
        return b.icmp_unsigned(symbol, a, c)

    def cast(self, a: ir.Value, src: DType, dst: DType) -> ir.Value:
        b = self.builder
        to = reg_type(dst)
        if src == dst:
            return a
        if src.kind == "bfloat":  # every bf16 is an f32: convert from that
            a, src = bf16_llvm.widen(b, a), F32
            if dst == F32:
                return a
        if dst.kind == "bfloat":
            return self.to_bf16(a, src)
        if src.kind == "mx" or dst.kind == "mx":  # OCP Microscaling conversions
            return mx_llvm.cast(b, a, src, dst, reg_type)
        if dst.is_bool:
            if src.is_float:
                return b.fcmp_unordered("!=", a, ir.Constant(a.type, 0.0))
            return b.icmp_unsigned("!=", a, ir.Constant(a.type, 0))
        if src.is_bool:
            return b.uitofp(a, to) if dst.is_float else b.zext(a, to)
        if src.is_float and dst.is_float:
            if src.bits < dst.bits:
                return b.fpext(a, to)
            return b.fptrunc(a, to) if src.bits > dst.bits else a
        if src.is_float:
            if isinstance(getattr(a.type, "element", a.type), ir.HalfType):
                # Every f16 is exactly an f32, so converting from f32 gives the same value; but
                # a direct f16 conversion is selected per CPU (AVX512-FP16's vcvttsh2si makes NaN
                # -32768 where the rule says 0), so it is never emitted.
                wide = ir.FloatType()
                a = b.fpext(a, ir.VectorType(wide, a.type.count) if isinstance(a.type, ir.VectorType) else wide)
            name = "llvm.fptosi.sat" if dst.is_signed else "llvm.fptoui.sat"
            return b.call(self.mod.intrinsic(f"{name}.{type_suffix(to)}.{type_suffix(a.type)}", to, [a.type]), [a])
        if dst.is_float:
            return b.sitofp(a, to) if src.is_signed else b.uitofp(a, to)
        if src.bits == dst.bits:
            return a
        if src.bits > dst.bits:
            return b.trunc(a, to)
        return b.sext(a, to) if src.is_signed else b.zext(a, to)

    def to_bf16(self, a: ir.Value, src: DType) -> ir.Value:
        """``a`` rounded once to bf16 (nearest, ties to even), from any dtype."""
        b = self.builder
        if src.is_bool or src.kind == "mx" or (src.is_float and src.bits < 32):  # exact in f32
            return bf16_llvm.narrow(b, self.cast(a, src, F32))
        if src == F32:
            return bf16_llvm.narrow(b, a)
        if src.is_float:
            return bf16_llvm.from_f64(b, a)
        return bf16_llvm.from_int(b, a, src.is_signed)
