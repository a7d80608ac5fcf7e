"""bf16 arithmetic on the CPU targets: every operation computed in f32 and rounded once to
bf16 (nearest, ties to even), like f16 (docs/language.md, "Numeric rules"); conversions into
bf16 from f64 and 64-bit integers round once, as if in one step. Compiled and interpreted
results agree bit for bit and match NumPy on f32 with ``ml_dtypes`` (a NaN compares equal to
any NaN: NaN payloads and signs are not part of the ABI, docs/targets.md)."""
from __future__ import annotations

import numpy as np
import pytest

import intentc
from intentc.driver import build, frontend

ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = ml_dtypes.bfloat16

SOURCE = """
import intent as I

@intent.kernel
def arith(a: bf16[N], b: bf16[N]) -> (bf16[N], bf16[N], bf16[N], bf16[N], bf16[N], bool[N]):
    return a + b, a - b, a * b, a / b, I.fma(a, b, a), a < b

@intent.kernel
def functions(a: bf16[N]) -> (bf16[N], bf16[N], bf16[N], bf16[N], bf16[N], bf16[N]):
    return I.exp(a), I.log(a), I.tanh(a), I.sqrt(a), I.sin(a), I.maximum(a, -a * 0.5)

@intent.kernel
def into_bf16(d: f64[N], k: i64[N], u: u64[N], h: f16[N], f: f32[N]) -> (bf16[N], bf16[N], bf16[N], bf16[N], bf16[N]):
    return I.cast(d, bf16), I.cast(k, bf16), I.cast(u, bf16), I.cast(h, bf16), I.cast(f, bf16)

@intent.kernel
def out_of_bf16(a: bf16[N]) -> (f64[N], i32[N], u8[N], f16[N], bool[N]):
    return I.cast(a, f64), I.cast(a, i32), I.cast(a, u8), I.cast(a, f16), I.cast(a, bool)

@intent.kernel
def staged(x: bf16[N], s: bf16) -> bf16[N]:
    buf = I.buffer(bf16, [N], fill=0.5)
    for i in I.parallel(x.axis(0)):
        buf[i] = buf[i] + x[i] * s
    return buf - x

@intent.kernel
def row_stats(x: bf16[R, C]) -> (bf16[R], bf16[R]):
    return I.max(x, axis=1), I.sum(x * 0.25, axis=1)
"""


@pytest.fixture(scope="module")
def sides(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bf16")
    (folder / "b.intent").write_text(SOURCE)
    build(folder / "b.intent", folder / "b.so")
    compiled, module = intentc.load(folder / "b.so"), frontend(SOURCE, "b.intent")
    return (lambda name, *a: getattr(compiled, name)(*a)), (lambda name, *a: intentc.interpret(module, name, *a))


def _bits(values) -> np.ndarray:
    """bf16 as its bits, every NaN as the one quiet NaN."""
    a = np.asarray(values)
    if a.dtype != BF16:
        return a
    bits = a.view(np.uint16).copy()
    bits[(bits & 0x7FFF) > 0x7F80] = 0x7FC0
    return bits


def _same(compiled, interpreted, what: str) -> None:
    compiled = compiled if isinstance(compiled, tuple) else (compiled,)
    interpreted = interpreted if isinstance(interpreted, tuple) else (interpreted,)
    for k, (c, i) in enumerate(zip(compiled, interpreted)):
        np.testing.assert_array_equal(_bits(c), _bits(i), err_msg=f"{what} result {k}")


def every_bf16() -> np.ndarray:
    return np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(BF16)


def test_arithmetic_on_every_bit_pattern(sides):
    compiled, interpreted = sides
    a = every_bf16()
    b = np.roll(a, 12345)
    got = compiled("arith", a, b)
    _same(got, interpreted("arith", a, b), "arith")
    fa, fb = a.astype(np.float32), b.astype(np.float32)
    with np.errstate(all="ignore"):
        for result, want in zip(got[:4], (fa + fb, fa - fb, fa * fb, fa / fb)):
            np.testing.assert_array_equal(_bits(result), _bits(want.astype(BF16)))
    np.testing.assert_array_equal(got[5], fa < fb)


def test_functions_are_computed_in_f32_and_rounded_once(sides):
    compiled, interpreted = sides
    a = every_bf16()[::7]
    _same(compiled("functions", a), interpreted("functions", a), "functions")


def _round_int(n: int) -> int:
    """The bits of the bf16 nearest the integer n (ties to even), by integer arithmetic."""
    sign, m = (0x8000, -n) if n < 0 else (0, n)
    if m == 0:
        return sign
    shift = max(m.bit_length() - 8, 0)
    units, rest = m >> shift, m & ((1 << shift) - 1)
    half = 1 << (shift - 1) if shift else 0
    if shift and (rest > half or (rest == half and units & 1)):
        units += 1
    value = float(units) * 2.0 ** shift  # exact: 9 significant bits at most
    return int(np.array([value], np.float32).astype(BF16).view(np.uint16)[0]) | sign


def test_conversions_into_bf16_round_once(sides):
    compiled, interpreted = sides
    rng = np.random.default_rng(5)
    n = 3000
    d = rng.standard_normal(n) * 10.0 ** rng.integers(-45, 39, n)
    d[:8] = [1 + 2**-8 + 2**-30, 1 + 2**-8, 3.4e38, 3.3961e38, 1e-40, np.nan, -np.inf, 2**-134 * 1.5]
    k = rng.integers(-2**63, 2**63 - 1, n, dtype=np.int64)
    k[:4] = [2**63 - 1, -2**63, (1 << 62) + (1 << 54), (1 << 62) + (1 << 54) + 1]  # a tie; just above it
    u = rng.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True)
    u[:3] = [2**64 - 1, (1 << 63) + (1 << 55), (1 << 63) + (1 << 55) + 1]
    h = rng.standard_normal(n).astype(np.float16)
    f = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)
    got = compiled("into_bf16", d, k, u, h, f)
    _same(got, interpreted("into_bf16", d, k, u, h, f), "into_bf16")
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(_bits(got[0])[5:], _bits(d.astype(BF16))[5:])  # ml_dtypes rounds f64 once
        assert _bits(got[0])[0] == 0x3F81  # 1 + 2^-8 + 2^-30: above the tie, rounded up (not via f32)
        assert np.isnan(got[0][5].astype(np.float32))
    assert _bits(got[1]).tolist() == [_round_int(int(v)) for v in k]
    assert _bits(got[2]).tolist() == [_round_int(int(v)) for v in u]
    with np.errstate(all="ignore"):  # NaN and inf among the random f32 bits
        np.testing.assert_array_equal(_bits(got[3]), _bits(h.astype(np.float32).astype(BF16)))
        np.testing.assert_array_equal(_bits(got[4]), _bits(f.astype(BF16)))


def test_conversions_out_of_bf16(sides):
    compiled, interpreted = sides
    a = every_bf16()
    got = compiled("out_of_bf16", a)
    _same(got, interpreted("out_of_bf16", a), "out_of_bf16")
    with np.errstate(all="ignore"):
        finite = np.isfinite(a.astype(np.float32))
        np.testing.assert_array_equal(got[0][finite], a.astype(np.float64)[finite])


def test_buffers_scalars_and_reductions(sides):
    compiled, interpreted = sides
    rng = np.random.default_rng(6)
    x = rng.standard_normal(37).astype(BF16)
    _same(compiled("staged", x, BF16(1.5)), interpreted("staged", x, BF16(1.5)), "staged")
    rows = rng.standard_normal((6, 301)).astype(BF16)
    got = compiled("row_stats", rows)
    _same(got, interpreted("row_stats", rows), "row_stats")
    np.testing.assert_array_equal(got[0].astype(np.float32), rows.astype(np.float32).max(axis=1))
