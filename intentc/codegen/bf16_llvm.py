"""bf16 on targets without bf16 arithmetic: the value's 16 bits in an integer register, every
operation computed in f32 and rounded once back to bf16 (as f16 is; docs/language.md).

Conversions are integer operations on the bits, so they are the same on every CPU and
vectorise: a widening is a shift (every bf16 is exactly an f32); a narrowing from f32 rounds
to nearest, ties to even, and makes a NaN the quiet NaN of its sign (``0x7FC0``, as the
interpreter's bf16 does: payloads are not kept). Wider sources are
rounded to f32 *to odd* first (truncate, then set the last bit when inexact), which keeps
enough bits for the second rounding to be the one correct rounding of the original value:
f64 and 64-bit integers convert to bf16 as if in one step. LLVM's own ``bfloat`` is not used:
its conversions are selected per CPU (AVX512-BF16 flushes subnormals) or are library calls.
"""
from __future__ import annotations

import struct

from llvmlite import ir

I16, I32, I64 = ir.IntType(16), ir.IntType(32), ir.IntType(64)
F32, F64 = ir.FloatType(), ir.DoubleType()


def _like(model: ir.Type, scalar: ir.Type) -> ir.Type:
    """``scalar`` with the lane count of ``model`` (a vector type or a scalar)."""
    return ir.VectorType(scalar, model.count) if isinstance(model, ir.VectorType) else scalar


def _splat(model: ir.Type, scalar: ir.Type, value) -> ir.Constant:
    t = _like(model, scalar)
    if isinstance(t, ir.VectorType):
        return ir.Constant(t, [ir.Constant(scalar, value)] * t.count)
    return ir.Constant(t, value)


def widen(b: ir.IRBuilder, bits: ir.Value) -> ir.Value:
    """The f32 of a bf16 (exact): its bits in the top half of an f32's."""
    wide = b.shl(b.zext(bits, _like(bits.type, I32)), _splat(bits.type, I32, 16))
    return b.bitcast(wide, _like(bits.type, F32))


def narrow(b: ir.IRBuilder, value: ir.Value) -> ir.Value:
    """The bf16 nearest an f32 (ties to even); a NaN becomes the quiet NaN of its sign."""
    t = value.type
    bits = b.bitcast(value, _like(t, I32))
    odd = b.and_(b.lshr(bits, _splat(t, I32, 16)), _splat(t, I32, 1))
    rounded = b.lshr(b.add(b.add(bits, _splat(t, I32, 0x7FFF)), odd), _splat(t, I32, 16))
    quiet = b.or_(b.and_(b.lshr(bits, _splat(t, I32, 16)), _splat(t, I32, 0x8000)), _splat(t, I32, 0x7FC0))
    is_nan = b.fcmp_unordered("uno", value, value)
    return b.trunc(b.select(is_nan, quiet, rounded), _like(t, I16))


def _odd_f32(b: ir.IRBuilder, value: ir.Value) -> ir.Value:
    """An f64 rounded to f32 to odd: toward zero, with the last bit set when inexact."""
    t = value.type
    near = b.fptrunc(value, _like(t, F32))  # nearest, ties to even
    back = b.fpext(near, t)
    inexact = b.fcmp_ordered("!=", back, value)  # false for NaN and for exact results
    positive = b.fcmp_ordered(">", value, _splat(t, F64, 0.0))
    away = b.select(positive, b.fcmp_ordered(">", back, value), b.fcmp_ordered("<", back, value))
    return _to_odd(b, near, inexact, away, I32)


def _to_odd(b: ir.IRBuilder, near: ir.Value, inexact: ir.Value, away: ir.Value, bits_type: ir.IntType) -> ir.Value:
    """``near`` (a rounding to nearest) turned into the rounding to odd: when inexact, one step
    toward zero if it went ``away`` from the exact value, then the last bit set."""
    t = near.type
    bits = b.bitcast(near, _like(t, bits_type))
    toward_zero = b.select(away, b.sub(bits, _splat(t, bits_type, 1)), bits)  # the float just below in magnitude
    odd = b.select(inexact, b.or_(toward_zero, _splat(t, bits_type, 1)), bits)
    return b.bitcast(odd, t)


def from_f64(b: ir.IRBuilder, value: ir.Value) -> ir.Value:
    return narrow(b, _odd_f32(b, value))


def from_int(b: ir.IRBuilder, value: ir.Value, signed: bool) -> ir.Value:
    """An integer rounded once to bf16. Up to 32 bits every value is an exact f64; wider ones
    are rounded to f64 to odd (the remainder after the nearest f64 decides the last bit)."""
    t = value.type
    width = (t.element if isinstance(t, ir.VectorType) else t).width
    wide = _like(t, F64)
    convert = b.sitofp if signed else b.uitofp
    if width <= 32:
        return from_f64(b, convert(value, wide))
    near = convert(value, wide)
    # The f64 nearest a 64-bit integer is an integer; 2^63 (2^64 unsigned) only when the value
    # is above every representable one of its type, so it is then inexact and too far out.
    limit = float(2 ** 63 if signed else 2 ** 64)
    overflow = b.fcmp_ordered(">=", near, _splat(t, F64, limit))
    back = (b.fptosi if signed else b.fptoui)(near, t)
    rest = b.sub(value, back)  # exact: the rounding error, far below 2^63
    zero = _splat(t, I64, 0)
    inexact = b.or_(overflow, b.icmp_unsigned("!=", rest, zero))
    if signed:
        below = b.icmp_signed("<", rest, zero)  # the value lies below its nearest f64
        away = b.or_(overflow, b.xor(below, b.fcmp_ordered("<", near, _splat(t, F64, 0.0))))
    else:
        away = b.or_(overflow, b.icmp_signed("<", rest, zero))
    return from_f64(b, _to_odd(b, near, inexact, away, I64))


def constant_bits(value: float) -> int:
    """The bits of the bf16 nearest ``value`` (ties to even), computed the same way."""
    value = float(value)
    (raw,) = struct.unpack("<Q", struct.pack("<d", value))
    sign = raw >> 63
    if value != value:
        return (sign << 15) | 0x7FC0
    magnitude = abs(value)
    if magnitude == float("inf"):
        return (sign << 15) | 0x7F80
    # Exact rational rounding on the f64's integer significand and exponent.
    mantissa, exponent = (raw & ((1 << 52) - 1)), (raw >> 52) & 0x7FF
    if exponent == 0:
        significand, power = mantissa, -1074  # subnormal f64
    else:
        significand, power = mantissa | (1 << 52), exponent - 1075
    if significand == 0:
        return sign << 15
    # bf16: 8 significant bits, exponent range of f32 (normal from 2^-126, subnormal step 2^-133).
    top = significand.bit_length() + power - 1  # floor(log2 |value|)
    step = max(top - 7, -133)  # the exponent of the bf16 unit in the last place
    shift = step - power
    if shift <= 0:
        units = significand << -shift
    else:
        units, rest = significand >> shift, significand & ((1 << shift) - 1)
        half = 1 << (shift - 1)
        if rest > half or (rest == half and units & 1):
            units += 1
    # units * 2^step: encode (units may have grown to 2^8, moving up one binade).
    if units == 0:
        return sign << 15
    if step == -133 and units < (1 << 7):
        return (sign << 15) | units  # subnormal
    while units >= (1 << 8):
        units >>= 1
        step += 1
    biased = step + 7 + 127
    if biased >= 0xFF:
        return (sign << 15) | 0x7F80  # overflow: infinity
    return (sign << 15) | (biased << 7) | (units & 0x7F)
