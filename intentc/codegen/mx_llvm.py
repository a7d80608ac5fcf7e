"""LLVM IR for the OCP Microscaling types (rules and storage: ``intentc/kir/mx.py``).

An MX value in registers is its code in an ``i8`` (a vector of them for ``VectorType``).
Conversions are branch-free integer and float arithmetic, so loops over them vectorise
and the CPU and GPU targets compute the same bits:

- decode: the code's exponent and mantissa fields are placed in an f32's exponent and
  mantissa fields and the float is multiplied by ``2^(127 - bias)`` — one exact multiply
  that also turns the f32 subnormals this makes into the format's subnormals; the sign
  is ORed in, specials (NaN, infinities) are selected;
- encode: round to nearest even by integer addition on the f32's bits for normal
  results; for results below the smallest normal, adding a power of two whose ulp is the
  format's subnormal quantum makes the float adder do the rounding; overflow, NaN and
  the sign are selected afterwards;
- ``f4e2m1`` is packed two per byte (low nibble first): a load reads the byte at
  ``offset >> 1`` and shifts by ``4 * (offset & 1)``; a store clears and sets its nibble
  with two atomic read-modify-writes on the byte, so that two threads writing the two
  nibbles of one byte never lose each other's element.
"""
from __future__ import annotations

from llvmlite import ir

from intentc.kir.mx import FORMATS

I8, I32 = ir.IntType(8), ir.IntType(32)
F32 = ir.FloatType()


def _name(dtype) -> str:
    return getattr(dtype, "elem", dtype).name


def _like(t: ir.Type, scalar: ir.Type) -> ir.Type:
    return ir.VectorType(scalar, t.count) if isinstance(t, ir.VectorType) else scalar


def _const(t: ir.Type, value) -> ir.Constant:
    if isinstance(t, ir.VectorType):
        return ir.Constant(t, [ir.Constant(t.element, value)] * t.count)
    return ir.Constant(t, value)


def _f32_bits(b: ir.IRBuilder, bits: int, like: ir.Type) -> ir.Value:
    """The f32 constant with these bits (of ``like``'s shape)."""
    return b.bitcast(_const(_like(like, I32), bits), _like(like, F32))


def decode(b: ir.IRBuilder, code: ir.Value, dtype) -> ir.Value:
    """f32 value(s) of MX code(s) (i8 or a vector of i8)."""
    f = FORMATS[_name(dtype)]
    i32, f32 = _like(code.type, I32), _like(code.type, F32)
    t = b.and_(b.zext(code, i32), _const(i32, f.mask))
    if f.is_scale:  # 2^(e - 127): e << 23, except e = 0 (the f32 subnormal 2^-127) and 0xFF (NaN)
        bits = b.shl(t, _const(i32, 23))
        bits = b.select(b.icmp_unsigned("==", t, _const(i32, 0)), _const(i32, 0x00400000), bits)
        bits = b.select(b.icmp_unsigned("==", t, _const(i32, 0xFF)), _const(i32, 0x7FC00000), bits)
        return b.bitcast(bits, f32)
    width = f.exp + f.man
    field = b.and_(t, _const(i32, (1 << width) - 1))
    placed = b.bitcast(b.shl(field, _const(i32, 23 - f.man)), f32)
    magnitude = b.fmul(placed, _f32_bits(b, (127 + 127 - f.bias) << 23, code.type))  # * 2^(127 - bias)
    if f.inf:
        top = ((1 << f.exp) - 1) << f.man
        special = b.select(b.icmp_unsigned("==", field, _const(i32, top)), _f32_bits(b, 0x7F800000, code.type),
                           _f32_bits(b, 0x7FC00000, code.type))
        magnitude = b.select(b.icmp_unsigned(">=", field, _const(i32, top)), special, magnitude)
    elif f.nan is not None:
        magnitude = b.select(b.icmp_unsigned("==", field, _const(i32, f.nan)), _f32_bits(b, 0x7FC00000, code.type),
                             magnitude)
    sign = b.shl(b.lshr(t, _const(i32, width)), _const(i32, 31))
    return b.bitcast(b.or_(b.bitcast(magnitude, i32), sign), f32)


def encode(b: ir.IRBuilder, x: ir.Value, dtype) -> ir.Value:
    """MX code(s) (i8) of f32 value(s), rounded to nearest even (kir/mx.py's rules)."""
    f = FORMATS[_name(dtype)]
    i32, i8 = _like(x.type, I32), _like(x.type, I8)
    bits = b.bitcast(x, i32)
    if f.is_scale:
        return b.trunc(_encode_scale(b, x, bits, i32), i8)
    a = b.and_(bits, _const(i32, 0x7FFFFFFF))
    shift = 23 - f.man
    # Normal results: add half an ulp minus one, plus the kept lsb (ties to even), then drop the bits.
    rounded = b.add(b.add(a, _const(i32, (1 << (shift - 1)) - 1)), b.and_(b.lshr(a, _const(i32, shift)),
                                                                           _const(i32, 1)))
    normal = b.sub(b.lshr(rounded, _const(i32, shift)), _const(i32, (127 - f.bias) << f.man))
    # Results below the smallest normal: the adder rounds at the subnormal quantum.
    magic_bits = ((127 - f.bias) + (23 - f.man) + 1) << 23
    magic = _f32_bits(b, magic_bits, x.type)
    small = b.sub(b.bitcast(b.fadd(b.bitcast(a, _like(x.type, F32)), magic), i32), _const(i32, magic_bits))
    min_normal = (127 + 1 - f.bias) << 23
    code = b.select(b.icmp_unsigned("<", a, _const(i32, min_normal)), small, normal)
    overflow = (((1 << f.exp) - 1) << f.man) if f.inf else f.max_code
    code = b.select(b.icmp_unsigned(">", code, _const(i32, f.max_code)), _const(i32, overflow), code)
    code = b.select(b.icmp_unsigned(">", a, _const(i32, 0x7F800000)), _const(i32, f.nan if f.nan is not None else 0),
                    code)
    sign = b.shl(b.lshr(bits, _const(i32, 31)), _const(i32, f.exp + f.man))
    return b.trunc(b.or_(code, sign), i8)


def _encode_scale(b: ir.IRBuilder, x: ir.Value, bits: ir.Value, i32: ir.Type) -> ir.Value:
    """f32 -> e8m0: the nearest power of two, ties to the even code; saturating; NaN for
    NaN, zeros and negative values."""
    e = b.lshr(bits, _const(i32, 23))
    man = b.and_(bits, _const(i32, 0x7FFFFF))
    half = _const(i32, 0x400000)
    odd = b.icmp_unsigned("!=", b.and_(e, _const(i32, 1)), _const(i32, 0))
    up = b.or_(b.icmp_unsigned(">", man, half), b.and_(b.icmp_unsigned("==", man, half), odd))
    code = b.add(e, b.zext(up, i32))
    # f32 subnormals: 2^-127 (code 0) or 2^-126 (code 1); 1.5 * 2^-127 ties to code 0.
    sub = b.zext(b.icmp_unsigned(">", man, _const(i32, 0x600000)), i32)
    code = b.select(b.icmp_unsigned("==", e, _const(i32, 0)), sub, code)
    code = b.select(b.icmp_unsigned(">", code, _const(i32, 254)), _const(i32, 254), code)
    bad = b.fcmp_unordered("<=", x, _const(x.type, 0.0))  # NaN, +-0 and negative values
    return b.select(bad, _const(i32, 0xFF), code)


def cast(b: ir.IRBuilder, value: ir.Value, src, dst, reg_type) -> ir.Value:
    """``I.cast`` between an MX type and f32 (the pairs sema allows), and, for the lowering's
    own tables, between a code and an integer (the code's bits, zero-extended)."""
    if src.is_int and dst.kind == "mx":
        return value if value.type == I8 or isinstance(value.type, ir.VectorType) else b.trunc(value, I8)
    if src.kind == "mx" and dst.is_int:
        return b.zext(value, reg_type(dst))
    if src.kind == "mx" and dst.kind == "mx":
        return encode(b, decode(b, value, src), dst)
    if src.kind == "mx":
        f = decode(b, value, src)
        return f if _name(dst) == "f32" else b.fpext(f, reg_type(dst))
    if _name(src) != "f32":
        raise ValueError(f"no conversion from {_name(src)} to {_name(dst)}")
    return encode(b, value, dst)


# ---- packed f4e2m1 storage --------------------------------------------------------------------------------
def load_f4(emitter, tensor, offset: ir.Value, lanes: int | None = None) -> ir.Value:
    """The code(s) of the element(s) at element offset ``offset``; ``lanes`` consecutive
    elements from an even offset for a vector load."""
    b = emitter.builder
    data = emitter.data_ptr(tensor.name)
    byte = b.ashr(offset, ir.Constant(offset.type, 1))
    ptr = b.gep(data, [byte], source_etype=I8)
    if lanes is None:
        value = b.load(ptr, typ=I8, align=1)
        odd = b.trunc(b.and_(offset, ir.Constant(offset.type, 1)), I8)
        return b.and_(b.lshr(value, b.shl(odd, ir.Constant(I8, 2))), ir.Constant(I8, 0xF))
    half = lanes // 2
    packed = b.load(ptr, typ=ir.VectorType(I8, half), align=1)
    low = b.and_(packed, _const(packed.type, 0xF))
    high = b.lshr(packed, _const(packed.type, 4))
    mask = []
    for j in range(half):
        mask += [j, half + j]
    return b.shuffle_vector(low, high, ir.Constant(ir.VectorType(I32, lanes), mask))


def store_f4(emitter, tensor, offset: ir.Value, code: ir.Value) -> None:
    """Write one f4e2m1 code into its nibble: atomically clear it, then set it."""
    b = emitter.builder
    data = emitter.data_ptr(tensor.name)
    byte = b.ashr(offset, ir.Constant(offset.type, 1))
    ptr = b.gep(data, [byte], source_etype=I8)
    shift = b.shl(b.trunc(b.and_(offset, ir.Constant(offset.type, 1)), I8), ir.Constant(I8, 2))
    keep = b.xor(b.shl(ir.Constant(I8, 0xF), shift), ir.Constant(I8, 0xFF))
    b.atomic_rmw("and", ptr, keep, "monotonic")
    b.atomic_rmw("or", ptr, b.shl(b.and_(code, ir.Constant(I8, 0xF)), shift), "monotonic")
