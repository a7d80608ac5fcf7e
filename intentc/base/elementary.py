"""intentc's own elementary functions ``exp``, ``log`` and ``tanh`` in f32 and f64: the one
description of each algorithm, shared by code generation and the reference interpreter.

Each function is written once, against a small set of exactly rounded IEEE operations
(``add sub mul div``, ordered comparisons, ``select``, integer adds and shifts on the
bit pattern) supplied by an *arithmetic* ``A`` (its methods ``c ic add sub mul div neg lt
gt eq uge select bits from_bits fabs iadd iand ior isub shl ashr itof`` and its format
``A.fmt``), and that one description is *run* two ways:

- as LLVM IR (``intentc/codegen/mathlib.py``): an ``internal alwaysinline`` function per
  operation and format, no memory access, no branches (every special case is a
  ``select``) and no calls, so that once it is inlined the loop vectoriser widens it
  like any other arithmetic. No fast-math flags and no fused multiply-add: LLVM keeps
  every operation as written on x86-64, AArch64 and NVPTX alike, so the result is the
  same bits on every target;
- with NumPy (``intentc/interp/mathfuncs.py``), one ufunc per operation in the operand
  dtype: the reference interpreter, so interpreted and compiled code agree bit for bit.

f16 is computed in f32 and rounded once to f16 (both ways).

The algorithms (classic designs; coefficients are minimax fits of the relative error,
found with a Remez exchange and rounded to the format, see ``tests/codegen/remez_fit.py``):

``exp``
    Clamp ``x`` to a range just wider than the finite results (NaN passes through),
    ``k = round(x / ln2)`` by the add-and-subtract of ``1.5 * 2^p`` (round to nearest
    even, no rounding instruction needed), ``r = x - k*ln2`` by a Cody-Waite split of
    ln2 (``k * ln2_hi`` and ``x - k*ln2_hi`` are exact), ``e^r = 1 + r + r^2 P(r)`` on
    ``|r| <= ln2/2`` (f32: degree 6, f64: degree 11; f64 and tanh's exp also keep the
    rounding error of ``r`` and sum ``1 + r`` exactly with Fast2Sum), then scaled by
    ``2^k`` as ``(p * 2^(k+m)) * 2^-m`` for negative ``x`` and ``(p * 2^(k-1)) * 2``
    otherwise, the powers of two built in the exponent bits, so that only the last
    multiplication rounds: overflow gives ``+inf``, underflow a correctly rounded
    subnormal or ``+0``.
``log``
    Subnormal inputs are scaled by ``2^p`` first; ``x = 2^k * m`` with ``m`` in
    ``[sqrt(1/2), sqrt(2))`` read from the bits, ``f = m - 1`` (exact); ``log1p(f)`` is
    ``f - f^2/2 + f^3 P(f)`` (f32, degree 10) or ``f - hfsq + s (hfsq + R(s^2))`` with
    ``s = f / (2 + f)`` (f64); ``k*ln2_hi + f`` is summed exactly (Fast2Sum) and the
    small terms added to its low part. ``log(+-0) = -inf``, ``log(x < 0) = NaN``,
    ``log(+inf) = +inf``, NaN gives NaN.
``tanh``
    For ``a = |x|``: ``a + a^3 P(a^2)`` when ``a < T`` (f32: T = 1, f64: T = 0.75),
    otherwise ``1 - 2 / (exp(2a) + 1)`` with the ``exp`` above (1 for large ``a`` and
    inf); then ``x``'s sign bit is copied in, so ``tanh(-x) == -tanh(x)`` bit for bit and
    ``tanh(+-0) = +-0``.

Error bounds (measured, tests/codegen/test_mathlib.py; docs/language.md): f32 ``exp``
and ``log`` below 1 ulp over every f32 input, ``tanh`` below 2 ulp; f64 below 1 ulp
(``exp``, ``log``) and 2 ulp (``tanh``) on random and edge inputs; f16 within 1 ulp.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

OPS = ("exp", "log", "tanh")


def _h(text: str) -> float:
    return float.fromhex(text)


@dataclass(frozen=True)
class Format:
    """One float format's constants: the bit layout and each algorithm's coefficients."""

    name: str
    bits: int  # storage width; the integer type of the bit pattern
    mant: int  # explicit mantissa bits
    # exp
    exp_lo: float  # inputs are clamped to [exp_lo, exp_hi]: below gives +0, above +inf
    exp_hi: float
    log2e: float
    ln2_hi: float  # ln2_hi * k is exact for every k the clamped range produces
    ln2_lo: float
    exp_poly: tuple  # c2.. of e^r = 1 + r + r^2 (c2 + c3 r + ...)
    # log
    sqrt_half_bits: int  # bit pattern of sqrt(1/2) (rounded): where m's interval starts
    log_poly: tuple  # f32: c3.. of f^3 P(f); f64: c1.. of R(z) = z (c1 + c2 z + ...)
    # tanh
    tanh_small: float  # |x| below this uses the odd polynomial
    tanh_poly: tuple  # c3.. of x + x^3 (c3 + c5 x^2 + ...)

    @property
    def bias(self) -> int:
        return (1 << (self.bits - self.mant - 2)) - 1

    @property
    def magic(self) -> float:  # 1.5 * 2^mant: adding it rounds to an integer
        return 1.5 * 2.0 ** self.mant

    @property
    def magic_bits(self) -> int:
        code = "<f" if self.bits == 32 else "<d"
        return int.from_bytes(struct.pack(code, self.magic), "little")

    @property
    def min_normal(self) -> float:
        return 2.0 ** (1 - self.bias)


F32 = Format(
    "f32", 32, 23,
    exp_lo=-104.0, exp_hi=89.0,
    log2e=_h("0x1.715476p+0"),
    ln2_hi=_h("0x1.62e4p-1"), ln2_lo=_h("0x1.7f7d1cp-20"),
    exp_poly=tuple(map(_h, ("0x1.fffffcp-2", "0x1.555492p-3", "0x1.5558f2p-5", "0x1.1239e0p-7",
                            "0x1.6a2438p-10"))),
    sqrt_half_bits=0x3F3504F3,
    log_poly=tuple(map(_h, ("0x1.555554p-2", "-0x1.000226p-2", "0x1.99a008p-3", "-0x1.547244p-3",
                            "0x1.22da1ep-3", "-0x1.0d8542p-3", "0x1.055b6ap-3", "-0x1.38b57ep-4"))),
    tanh_small=1.0,
    tanh_poly=tuple(map(_h, ("-0x1.555552p-2", "0x1.11105ep-3", "-0x1.b9fbdap-5", "0x1.64ebcap-6",
                             "-0x1.19a50ep-7", "0x1.938482p-9", "-0x1.b8ff98p-11", "0x1.fd7c56p-14"))),
)

F64 = Format(
    "f64", 64, 52,
    exp_lo=-746.0, exp_hi=710.0,
    log2e=_h("0x1.71547652b82fep+0"),
    ln2_hi=_h("0x1.62e42fefa38p-1"), ln2_lo=_h("0x1.ef35793c7673p-45"),
    exp_poly=tuple(map(_h, (
        "0x1.000000000000ap-1", "0x1.55555555554fap-3", "0x1.555555555087fp-5", "0x1.1111111127bdbp-7",
        "0x1.6c16c18429917p-10", "0x1.a01a012a5a357p-13", "0x1.a0199a0dd8dfap-16", "0x1.71df254edf4eep-19",
        "0x1.28ad7165c86dap-22", "0x1.ad7f70b745ac7p-26"))),
    sqrt_half_bits=0x3FE6A09E667F3BCD,
    log_poly=tuple(map(_h, (
        "0x1.5555555555592p-1", "0x1.999999997fee9p-2", "0x1.24924941e0c66p-2", "0x1.c71c521648f41p-3",
        "0x1.74663c545a778p-3", "0x1.39a1fb82a9563p-3", "0x1.2f02e6e02d289p-3"))),
    tanh_small=0.75,
    tanh_poly=tuple(map(_h, (
        "-0x1.555555555554ap-2", "0x1.111111111042ep-3", "-0x1.ba1ba1b97c369p-5", "0x1.664f4863a2854p-6",
        "-0x1.226e31c64f35bp-7", "0x1.d6d347c44c9f2p-9", "-0x1.7d9c745443115p-10", "0x1.35193e7845cf1p-11",
        "-0x1.f25288a9a51c1p-13", "0x1.87eb4be5b90edp-14", "-0x1.19fba531fba2fp-15", "0x1.3e796673ee33bp-17",
        "-0x1.8ebb4fd93139ap-20"))),
)

FORMATS = {"f32": F32, "f64": F64}


# ---- the algorithms, over an arithmetic ``A`` (LLVM IR or NumPy) ---------------------------------
def _horner(A, z, coeffs):
    acc = A.c(coeffs[-1])
    for c in reversed(coeffs[:-1]):
        acc = A.add(A.c(c), A.mul(z, acc))
    return acc


def _exp(A, x, compensated: bool | None = None):
    """``compensated`` (the default for f64, and inside tanh) keeps the rounding errors of
    ``r`` and of ``1 + r`` (6 more operations): f32 exp is within 0.98 ulp without them,
    0.78 with them."""
    F = A.fmt
    if compensated is None:
        compensated = F.bits == 64
    lo, hi = A.c(F.exp_lo), A.c(F.exp_hi)
    x = A.select(A.lt(x, lo), lo, x)  # NaN compares false and stays NaN
    x = A.select(A.gt(x, hi), hi, x)
    magic = A.c(F.magic)
    t = A.add(A.mul(x, A.c(F.log2e)), magic)  # k in the low bits, rounded to nearest even
    kf = A.sub(t, magic)
    r_hi = A.sub(x, A.mul(kf, A.c(F.ln2_hi)))  # exact (Sterbenz), k * ln2_hi exact
    k_lo = A.mul(kf, A.c(F.ln2_lo))
    r = A.sub(r_hi, k_lo)
    one = A.c(1.0)
    poly = A.mul(A.mul(r, r), _horner(A, r, F.exp_poly))
    if compensated:
        r_lo = A.sub(A.sub(r_hi, r), k_lo)  # what the rounding of r lost
        s_hi = A.add(one, r)
        s_lo = A.add(A.sub(one, s_hi), r)  # Fast2Sum: 1 + r == s_hi + s_lo exactly
        p = A.add(s_hi, A.add(s_lo, A.add(r_lo, poly)))
    else:
        p = A.add(one, A.add(r, poly))  # e^r in [0.7, 1.42]
    # 2^k as two factors whose first product with p is an exact normal number, so only the
    # second multiplication rounds: 2^(k + m) * 2^-m below 0 (a subnormal or +0 where the
    # result underflows), 2^(k - 1) * 2 above (+inf where it overflows). k << mant is t's
    # bits << mant: the magic number's bits shift out.
    return scale_pow2(A, p, t, x)


def scale_pow2(A, p, t, x):
    """``p * 2^k`` for ``p`` near 1, ``k`` in the low bits of ``t = x + 1.5 * 2^mant`` (the
    exponent's magic-number rounding): only the last multiplication rounds."""
    F = A.fmt
    m = F.mant + 2
    below = A.lt(x, A.c(0.0))
    bias = A.select(below, A.ic((F.bias + m) << F.mant), A.ic((F.bias - 1) << F.mant))
    scale = A.from_bits(A.iadd(A.shl(A.bits(t), F.mant), bias))
    return A.mul(A.mul(p, scale), A.select(below, A.c(2.0 ** -m), A.c(2.0)))


def _log(A, x):
    F = A.fmt
    sub = A.lt(x, A.c(F.min_normal))  # subnormal (or <= 0: replaced below)
    xs = A.select(sub, A.mul(x, A.c(2.0 ** F.mant)), x)
    bits = A.bits(xs)
    k = A.ashr(A.isub(bits, A.ic(F.sqrt_half_bits)), F.mant)
    m = A.from_bits(A.isub(bits, A.shl(k, F.mant)))  # in [sqrt(1/2), sqrt(2))
    k = A.isub(k, A.select(sub, A.ic(F.mant), A.ic(0)))
    kf = A.itof(k)
    f = A.sub(m, A.c(1.0))  # exact
    if F.name == "f32":
        ff = A.mul(f, f)
        tail = A.sub(A.mul(ff, A.mul(f, _horner(A, f, F.log_poly))), A.mul(ff, A.c(0.5)))
    else:
        s = A.div(f, A.add(A.c(2.0), f))
        z = A.mul(s, s)
        hfsq = A.mul(A.c(0.5), A.mul(f, f))
        big_r = A.mul(z, _horner(A, z, F.log_poly))
        tail = A.sub(A.mul(s, A.add(hfsq, big_r)), hfsq)  # log1p(f) - f
    k_hi = A.mul(kf, A.c(F.ln2_hi))  # exact
    y_hi = A.add(k_hi, f)
    y_lo = A.add(A.sub(k_hi, y_hi), f)  # Fast2Sum: |k_hi| >= |f| unless k == 0 (then exact)
    y = A.add(y_hi, A.add(y_lo, A.add(A.mul(kf, A.c(F.ln2_lo)), tail)))
    zero, inf = A.c(0.0), A.c(float("inf"))
    y = A.select(A.lt(x, zero), A.c(float("nan")), y)
    y = A.select(A.eq(x, zero), A.c(float("-inf")), y)
    return A.select(A.uge(x, inf), x, y)  # +inf and NaN give themselves


def _tanh(A, x):
    F = A.fmt
    a = A.fabs(x)
    z = A.mul(a, a)
    small = A.add(a, A.mul(a, A.mul(z, _horner(A, z, F.tanh_poly))))
    one = A.c(1.0)
    e = _exp(A, A.add(a, a), compensated=True)
    big = A.sub(one, A.div(A.c(2.0), A.add(e, one)))
    t = A.select(A.lt(a, A.c(F.tanh_small)), small, big)  # NaN takes the second path: NaN
    sign = A.iand(A.bits(x), A.ic(-(1 << (F.bits - 1))))
    return A.from_bits(A.ior(A.bits(t), sign))  # tanh(-x) == -tanh(x) exactly, -0 included


ALGORITHMS = {"exp": _exp, "log": _log, "tanh": _tanh}

