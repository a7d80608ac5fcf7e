"""I.scaled_contract (T4): compiled vs the reference interpreter vs a NumPy + ml_dtypes
reference that dequantises explicitly.

The reference decodes the values and the e8m0 scales with ml_dtypes, multiplies them in
f64 and contracts with ``@``. Tolerance: an f32 sum of K terms in any order is within
``K * 2^-24 * sum(|x * y|)`` of the exact sum; the compiled code and the interpreter add in
the same order with fused multiply-adds, so they agree bit for bit (NaN matching NaN), even
where products overflow or underflow.
Shapes go around the register tile (6 x 48), the task blocks (96 x 192) and zero extents;
the formats cover every MX element type, mixed; NaN scales, zero blocks, extreme scales,
views, fused consumers, the tiling inside I.parallel, thread counts, T4 errors, and the
PTX targets.
"""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import intentc
from intentc.diagnostics import CompileError
from intentc.driver import build, compile_source, frontend, interpret
from intentc.lower import program as P

md = pytest.importorskip("ml_dtypes")
E8M0 = np.dtype(md.float8_e8m0fnu)
ML = {"f8e4m3": np.dtype(md.float8_e4m3fn), "f8e5m2": np.dtype(md.float8_e5m2),
      "f6e2m3": np.dtype(md.float6_e2m3fn), "f6e3m2": np.dtype(md.float6_e3m2fn),
      "f4e2m1": np.dtype(md.float4_e2m1fn)}

SOURCE = """\
import intent as I

@intent.kernel
def mm(a: f8e4m3[M, G, C], sa: e8m0[M, G], b: f8e4m3[G, C, N], sb: e8m0[N, G]) -> f32[M, N]:
    return I.scaled_contract(a, sa, b, sb, acc=f32)

@intent.kernel
def mixed(a: f8e4m3[M, G, C], sa: e8m0[M, G], b: f8e5m2[G, C, N], sb: e8m0[N, G]) -> f32[M, N]:
    return I.scaled_contract(a, sa, b, sb)

@intent.kernel
def mm6(a: f6e2m3[M, G, C], sa: e8m0[M, G], b: f6e3m2[G, C, N], sb: e8m0[N, G]) -> f32[M, N]:
    return I.scaled_contract(a, sa, b, sb)

@intent.kernel
def mm4(a: f4e2m1[M, K], sa: e8m0[M, G], b: f4e2m1[K, N], sb: e8m0[N, G]) -> f32[M, N]:
    return I.scaled_contract(a, sa, b, sb, block=32)

@intent.kernel
def mm8(a: f8e5m2[M, K], sa: e8m0[M, G], b: f8e4m3[K, N], sb: e8m0[N, G]) -> f32[M, N]:
    return I.scaled_contract(a, sa, b, sb, block=32)

@intent.kernel
def loose(a: f8e4m3[M, G, C], sa: e8m0[P, H], b: f8e4m3[G2, C2, N], sb: e8m0[N2, G3]) -> f32[M, N]:
    return I.scaled_contract(a, sa, b, sb)

@intent.kernel
def affine(a: f8e4m3[M, G, C], sa: e8m0[M, G], b: f8e4m3[G, C, N], sb: e8m0[N, G], bias: f32[N]) -> f32[M, N]:
    return I.scaled_contract(a, sa, b, sb) * 2.0 + bias

@intent.kernel
def tail(a: f8e4m3[M, G, C], sa: e8m0[M, G], b: f8e4m3[G, C, N], sb: e8m0[N, G]) -> f32[M - 1, N]:
    return I.scaled_contract(a[1:M, :, :], sa[1:M, :], b, sb)

@intent.kernel
def batched(a: f8e4m3[R, M, G, C], sa: e8m0[R, M, G], b: f8e4m3[G, C, N], sb: e8m0[N, G],
            out: mut f32[R, M, N]):
    for r in I.parallel(a.axis(0)):
        c = I.scaled_contract(a[r, :, :, :], sa[r, :, :], b, sb)
        for i in c.axis(0):
            for j in c.axis(1):
                out[r, i, j] = c[i, j]
"""

RNG = np.random.default_rng(20261130)


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    path = tmp_path_factory.mktemp("scaled") / "scaled.intent"
    path.write_text(SOURCE)
    build(path, path.with_suffix(".so"))
    return intentc.load(path.with_suffix(".so"))


def values(shape, name: str, nan: bool = False) -> np.ndarray:
    """Random codes of an element type (no NaN codes unless asked)."""
    bits = {"f4e2m1": 4, "f6e2m3": 6, "f6e3m2": 6}.get(name, 8)
    codes = RNG.integers(0, 1 << bits, size=shape).astype(np.uint8)
    if not nan and name == "f8e4m3":
        codes[(codes & 0x7F) == 0x7F] ^= 1
    if not nan and name == "f8e5m2":
        codes[(codes & 0x7C) == 0x7C] &= 0xF3  # no inf / NaN
    return codes.view(ML[name])


def scales(shape, low=120, high=135) -> np.ndarray:
    return RNG.integers(low, high, size=shape).astype(np.uint8).view(E8M0)


def reference(a, sa, b, sb):
    """(out, bound): the f64 dequantised product and the f32 accumulation bound."""
    x = a.astype(np.float64) * sa.astype(np.float64)[:, :, None]
    y = b.astype(np.float64) * sb.astype(np.float64).T[:, None, :]
    m, g, c = a.shape
    x, y = x.reshape(m, g * c), y.reshape(g * c, b.shape[2])
    with np.errstate(invalid="ignore"):
        return x @ y, (g * c) * 2.0 ** -24 * (np.abs(x) @ np.abs(y))


def same(x, y):
    np.testing.assert_array_equal(np.isnan(x), np.isnan(y))
    np.testing.assert_array_equal(np.nan_to_num(x, nan=0.0).view(np.uint32), np.nan_to_num(y, nan=0.0).view(np.uint32))


def check(lib, kernel, a, sa, b, sb, *, flat=False):
    compiled = getattr(lib, kernel)(a, sa, b, sb)
    interpreted = interpret(SOURCE, kernel, a, sa, b, sb)
    same(compiled, interpreted)
    if flat:
        g = sa.shape[1]
        a, b = a.reshape(a.shape[0], g, -1), b.reshape(g, -1, b.shape[1])
    want, bound = reference(a, sa, b, sb)
    finite = np.isfinite(want)
    assert np.all(np.abs(compiled[finite] - want[finite]) <= bound[finite] + 1e-30)
    np.testing.assert_array_equal(np.isnan(compiled), np.isnan(want))
    return compiled


SHAPES = [(1, 1, 1, 1), (7, 3, 4, 50), (6, 2, 32, 48), (13, 2, 32, 100), (97, 3, 32, 193), (200, 4, 16, 64),
          (0, 2, 32, 5), (5, 0, 32, 7), (5, 2, 32, 0), (4, 3, 0, 9)]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_shapes(lib, shape):
    m, g, c, n = shape
    check(lib, "mm", values((m, g, c), "f8e4m3"), scales((m, g)), values((g, c, n), "f8e4m3"), scales((n, g)))


@pytest.mark.parametrize("kernel, fa, fb", [("mixed", "f8e4m3", "f8e5m2"), ("mm6", "f6e2m3", "f6e3m2")])
def test_formats(lib, kernel, fa, fb):
    m, g, c, n = 29, 3, 32, 70
    check(lib, kernel, values((m, g, c), fa), scales((m, g)), values((g, c, n), fb), scales((n, g)))


@pytest.mark.parametrize("kernel, fa, fb", [("mm4", "f4e2m1", "f4e2m1"), ("mm8", "f8e5m2", "f8e4m3")])
@pytest.mark.parametrize("m, k, n", [(33, 64, 97), (6, 32, 48), (12, 96, 51)])
def test_flat_operands_with_block(lib, kernel, fa, fb, m, k, n):
    g = k // 32
    check(lib, kernel, values((m, k), fa), scales((m, g)), values((k, n), fb), scales((n, g)), flat=True)


def test_nan_scales_and_zero_blocks(lib):
    m, g, c, n = 14, 4, 32, 60
    a, b = values((m, g, c), "f8e4m3"), values((g, c, n), "f8e4m3")
    sa, sb = scales((m, g)), scales((n, g))
    sa_codes, sb_codes, a_codes = sa.view(np.uint8), sb.view(np.uint8), a.view(np.uint8)
    sa_codes[2, 1] = 0xFF  # a NaN scale: row 2 is NaN
    sb_codes[5, 3] = 0xFF  # column 5 is NaN
    a_codes[7, 2, :] = 0  # a zero block with a finite scale contributes nothing
    a_codes[9, 0, :] = 0
    sa_codes[9, 0] = 0xFF  # ... and with a NaN scale, 0 * NaN: row 9 is NaN
    out = check(lib, "mm", a, sa, b, sb)
    assert np.isnan(out[2]).all() and np.isnan(out[:, 5]).all() and np.isnan(out[9]).all()
    rest = np.ones((m, n), bool)
    rest[[2, 9]] = False
    rest[:, 5] = False
    assert np.isfinite(out[rest]).all()
    everywhere = np.full((m, g), 0xFF, np.uint8).view(E8M0)  # all-NaN scale blocks
    assert np.isnan(check(lib, "mm", a, everywhere, b, sb)).all()
    zeros = np.zeros((m, g, c), np.uint8).view(ML["f8e4m3"])
    out = check(lib, "mm", zeros, sa, b, sb)
    assert np.isnan(out[[2, 9]]).all() and not np.isnan(out[0, 0])
    assert (np.delete(out[0], 5) == 0).all() and not np.signbit(out[0, 0])


def test_nan_values_and_extreme_scales(lib):
    m, g, c, n = 8, 2, 32, 50
    a, b = values((m, g, c), "f8e4m3", nan=True), values((g, c, n), "f8e5m2", nan=True)
    compiled = lib.mixed(a, scales((m, g), 0, 255), b, scales((n, g), 0, 255))
    assert np.isnan(compiled).any()
    for low, high in ((0, 3), (252, 255), (0, 255)):
        a, b = values((m, g, c), "f8e4m3"), values((g, c, n), "f8e5m2")
        sa, sb = scales((m, g), low, high), scales((n, g), low, high)
        compiled = lib.mixed(a, sa, b, sb)
        interpreted = interpret(SOURCE, "mixed", a, sa, b, sb)
        same(compiled, interpreted)  # fused multiply-adds on both sides: overflow and underflow alike


def test_views_consumers_and_parallel(lib):
    m, g, c, n = 21, 2, 32, 53
    a, b, sa, sb = values((m, g, c), "f8e4m3"), values((g, c, n), "f8e4m3"), scales((m, g)), scales((n, g))
    bias = RNG.standard_normal(n).astype(np.float32)
    full, bound = reference(a, sa, b, sb)
    got = lib.affine(a, sa, b, sb, bias)
    same(got, interpret(SOURCE, "affine", a, sa, b, sb, bias))
    want = full * 2 + bias  # two more f32 roundings: * 2 is exact, + bias rounds once
    assert np.all(np.abs(got - want) <= 2 * bound + 2.0 ** -24 * (np.abs(2 * full) + np.abs(bias)) + 1e-30)
    got = lib.tail(a, sa, b, sb)
    same(got, interpret(SOURCE, "tail", a, sa, b, sb))
    assert np.all(np.abs(got - full[1:]) <= bound[1:] + 1e-30)
    # Strided views of the parameters go through their strides.
    big_a, big_b = values((2 * m, g, c), "f8e4m3"), values((g, c, 2 * n), "f8e4m3")
    check(lib, "mm", big_a[::2], sa, big_b[:, :, 1::2], sb)
    r = 3
    a4, sa4 = values((r, 7, g, c), "f8e4m3"), scales((r, 7, g))
    out = np.zeros((r, 7, n), np.float32)
    lib.batched(a4, sa4, b, sb, out)
    expected = np.zeros_like(out)
    interpret(SOURCE, "batched", a4, sa4, b, sb, expected)
    for k in range(r):  # one fold per element here: regrouped in chunks, within the same bound
        want, bound = reference(a4[k], sa4[k], b, sb)
        assert np.all(np.abs(out[k] - want) <= bound + 1e-30)
        assert np.all(np.abs(expected[k] - want) <= bound + 1e-30)


def test_same_bits_for_every_thread_count(lib):
    m, g, c, n = 300, 4, 32, 250
    args = values((m, g, c), "f8e4m3"), scales((m, g)), values((g, c, n), "f8e4m3"), scales((n, g))
    results = []
    for threads in (1, 2, 3):
        lib.set_num_threads(threads)
        results.append(lib.mm(*args))
    lib.set_num_threads(2)
    for other in results[1:]:
        np.testing.assert_array_equal(results[0].view(np.uint32), other.view(np.uint32))


def test_no_dequantised_copy_of_the_operands():
    """The tiled form allocates the decoded scales ([M, G], [G, N]) and a [2, 256] table only."""
    compiled = compile_source(SOURCE, "scaled.intent", optimize_ir=False)
    kernel = next(k for k in compiled.program.kernels if k.name == "mm")
    allocs = [s for s in P.walk_stmts(kernel.body) if isinstance(s, P.Alloc)]
    assert sorted((a.tensor.dtype.name, a.tensor.rank) for a in allocs) == [("f32", 2)] * 3
    tables = [a for a in allocs if all(isinstance(e, P.Const) for e in a.extents)]
    assert [tuple(e.value for e in a.extents) for a in tables] == [(2, 256)]


def test_runtime_schema_checks(lib):
    a, b = values((4, 3, 32), "f8e4m3"), values((3, 32, 5), "f8e4m3")
    out = np.full((4, 5), 7.0, np.float32)
    for sa, sb, what in ((scales((4, 2)), scales((5, 3)), "G"), (scales((3, 3)), scales((5, 3)), "M"),
                         (scales((4, 3)), scales((6, 3)), "N")):
        for call in (lambda: lib.loose(a, sa, b, sb, out=out),
                     lambda: interpret(SOURCE, "loose", a, sa, b, sb, out=out)):
            with pytest.raises(intentc.KernelError) as info:
                call()
            assert info.value.code == -4 and "T4" in str(info.value) and f"{what}:" in str(info.value)
            assert (out == 7.0).all()
        with pytest.raises(intentc.KernelError) as info:  # one extent name in the signature: S1 first
            lib.mm(a, sa, b, sb, out=out)
        assert info.value.code == -4 and f"extent {what}" in str(info.value) and (out == 7.0).all()
    flat_a, flat_b = values((4, 40), "f8e5m2"), values((40, 5), "f8e4m3")  # K = 40: not a multiple of 32
    for call in (lambda: lib.mm8(flat_a, scales((4, 1)), flat_b, scales((5, 1)), out=out),
                 lambda: interpret(SOURCE, "mm8", flat_a, scales((4, 1)), flat_b, scales((5, 1)), out=out)):
        with pytest.raises(intentc.KernelError) as info:
            call()
        assert info.value.code == -4 and "not a multiple of the block size 32 (T4)" in str(info.value)
        assert (out == 7.0).all()


@pytest.mark.parametrize("signature, call, message", [
    ("a: f8e4m3[M, 2, 32], sa: e8m0[M, 2], b: f8e4m3[2, 32, N], sb: e8m0[N, 5]", "a, sa, b, sb",
     "G: a has 2 blocks but sb has 5 scales per column"),
    ("a: f8e4m3[M, G, C], sa: e8m0[M, G, C], b: f8e4m3[G, C, N], sb: e8m0[N, G]", "a, sa, b, sb",
     "but the schema is sa: [M, G]"),
    ("a: f8e4m3[M, 40], sa: e8m0[M, 1], b: f8e4m3[40, N], sb: e8m0[N, 1]", "a, sa, b, sb, block=32",
     "K = 40 is not a multiple of the block size 32"),
    ("a: f32[M, G, C], sa: e8m0[M, G], b: f8e4m3[G, C, N], sb: e8m0[N, G]", "a, sa, b, sb",
     "holds f32, not an MX element type"),
    ("a: f8e4m3[M, G, C], sa: u8[M, G], b: f8e4m3[G, C, N], sb: e8m0[N, G]", "a, sa, b, sb", "not e8m0"),
    ("a: f8e4m3[M, G, C], sa: e8m0[M, G], b: f8e4m3[G, C, N], sb: e8m0[N, G]", "a, sa, b, sb, acc=f64",
     "accumulates in f32"),
    ("a: f8e4m3[M, 2, 32], sa: e8m0[M, 3], b: f8e4m3[2, 32, N], sb: e8m0[N, 2]", "a, sa, b, sb",
     "G: a has 2 blocks per row but sa has 3"),
    ("a: f8e4m3[M, K], sa: e8m0[M, G], b: f8e4m3[K, N], sb: e8m0[N, G]", "a, sa, b, sb", "rank 2"),
    ("a: f8e4m3[M, G, C], sa: e8m0[M, G], b: f8e4m3[G, C, N], sb: e8m0[N, G]", "a, sa, b", "takes four tensors"),
])
def test_schema_diagnostics(signature, call, message):
    source = f"import intent as I\n\n@intent.kernel\ndef k({signature}) -> f32[M, N]:\n" \
             f"    return I.scaled_contract({call})\n"
    with pytest.raises(CompileError) as info:
        frontend(source, "k.intent")
    diagnostic = info.value.diagnostics[0]
    assert message in diagnostic.message or message in (diagnostic.hint or ""), diagnostic
    assert diagnostic.rule == "T4" and diagnostic.hint


PTX_SOURCE = "import intent as I\n\n" + "\n\n".join(
    block for block in SOURCE.split("\n\n") if "def mm(" in block or "def mm4(" in block)


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
def test_ptx_by_expansion(tmp_path, target):
    path = tmp_path / "scaled.intent"
    path.write_text(PTX_SOURCE)
    written = build(path, tmp_path / "scaled.ptx", target=target)
    ptx = (tmp_path / "scaled.ptx").read_text()
    assert ".entry mm(" in ptx and ".entry mm4(" in ptx and written
    if shutil.which("ptxas") is None:
        pytest.skip("ptxas is not installed")
    subprocess.run(["ptxas", f"-arch={target}", str(tmp_path / "scaled.ptx"), "-o", str(tmp_path / "scaled.cubin")],
                   check=True, capture_output=True)
