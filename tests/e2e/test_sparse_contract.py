"""I.sparse_contract (T5): 2:4 structured sparsity and CSR, compiled vs the reference
interpreter vs a dense NumPy product of the decompressed operand.

The compiled code rounds each product and each sum in the interpreter's order, so the two
agree bit for bit. Values here are small integers unless a test says otherwise, so the
results also equal the dense f64 product; random floats are compared with it within a
rounding bound, and with themselves across thread counts. Invalid metadata fails the call before anything is
written (INTENT_E_DOMAIN; a CSR column out of range INTENT_E_BOUNDS), with the same
message compiled and interpreted. Structural zeros are skipped: an inf in a row of ``b``
that only a dropped position would meet never makes a NaN.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import intentc
from intentc.diagnostics import CompileError
from intentc.driver import build, compile_source, frontend, interpret

SOURCE = """\
import intent as I

@intent.kernel
def sp24(values: f32[M, H], meta: u8[M, Q], b: f32[K, N]) -> f32[M, N]:
    return I.sparse_contract("2:4", values, meta, b, acc=f32)

@intent.kernel
def sp24_f64(values: f64[M, H], meta: u8[M, Q], b: f64[K, N]) -> f64[M, N]:
    return I.sparse_contract("2:4", values, meta, b)

@intent.kernel
def sp24_f16(values: f16[M, H], meta: u8[M, Q], b: f16[K, N]) -> f32[M, N]:
    return I.sparse_contract("2:4", values, meta, b)

@intent.kernel
def sp24_scaled(values: f32[M, H], meta: u8[M, Q], b: f32[K, N], bias: f32[N]) -> f32[M, N]:
    return I.sparse_contract("2:4", values * 0.5, meta, b) + bias

@intent.kernel
def sp24_rows(values: f32[M, H], meta: u8[M, Q], b: f32[K, N], out: mut f32[M, N]):
    for i in I.parallel(values.axis(0)):
        c = I.sparse_contract("2:4", values, meta, b)
        for j in c.axis(1):
            out[i, j] = c[i, j]

@intent.kernel
def csr(offsets: i32[R], columns: i32[Z], values: f32[Z], b: f32[K, N]) -> f32[R - 1, N]:
    return I.sparse_contract("csr", offsets, columns, values, b)

@intent.kernel
def csr64(offsets: i64[R], columns: i64[Z], values: f64[Z], b: f64[K, N]) -> f64[R - 1, N]:
    return I.sparse_contract("csr", offsets, columns, values, b, acc=f64)

@intent.kernel
def csr_rows(offsets: i32[R], columns: i32[Z], values: f32[Z], b: f32[K, N], out: mut f32[M, N]):
    for i in I.parallel(out.axis(0)):
        c = I.sparse_contract("csr", offsets, columns, values, b)
        for j in c.axis(1):
            out[i, j] = c[i, j]

@intent.kernel
def loose24(values: f32[M, H], meta: u8[P, Q], b: f32[K, N]) -> f32[M, N]:
    return I.sparse_contract("2:4", values, meta, b)
"""

RNG = np.random.default_rng(20261201)
PAIRS = np.array([(i, j) for i in range(4) for j in range(i + 1, 4)])


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    path = tmp_path_factory.mktemp("sparse") / "sparse.intent"
    path.write_text(SOURCE)
    build(path, path.with_suffix(".so"))
    return intentc.load(path.with_suffix(".so"))


def ints(shape, dtype=np.float32, low=-4, high=5):
    return RNG.integers(low, high, size=shape).astype(dtype)


def two_four(m: int, k: int, dtype=np.float32, floats=False):
    """(values, meta, dense): a random 2:4 operand and its decompressed [M, K] form."""
    q = k // 4
    chosen = PAIRS[RNG.integers(0, 6, (m, q))]
    meta = (chosen[..., 0] | (chosen[..., 1] << 2)).astype(np.uint8)
    values = (RNG.standard_normal((m, 2 * q)) if floats else RNG.integers(-4, 5, (m, 2 * q))).astype(dtype)
    dense = np.zeros((m, k), np.float64)
    rows = np.repeat(np.arange(m), q)
    groups = np.tile(np.arange(q), m)
    dense[rows, 4 * groups + chosen[..., 0].reshape(-1)] = values[:, 0::2].reshape(-1)
    dense[rows, 4 * groups + chosen[..., 1].reshape(-1)] = values[:, 1::2].reshape(-1)
    return values, meta, dense


def random_csr(m: int, k: int, density: float, dtype=np.float32, index=np.int32):
    mask = RNG.random((m, k)) < density
    dense = np.where(mask, RNG.integers(-4, 5, (m, k)), 0).astype(np.float64)
    offsets = np.concatenate([[0], np.cumsum(mask.sum(axis=1))]).astype(index)
    rows, columns = np.nonzero(mask)
    values = dense[rows, columns].astype(dtype)
    return offsets, columns.astype(index), values, dense


def both(lib, kernel, *args, out=None):
    compiled = getattr(lib, kernel)(*args) if out is None else getattr(lib, kernel)(*args, out=out)
    interpreted = interpret(SOURCE, kernel, *args)
    return compiled, interpreted


# ---- 2:4 --------------------------------------------------------------------------------------------
SHAPES = [(1, 4, 1), (4, 8, 64), (5, 16, 63), (13, 64, 100), (70, 124, 130), (64, 256, 256), (0, 8, 5),
          (6, 0, 7), (6, 8, 0)]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_two_four_shapes(lib, shape):
    m, k, n = shape
    values, meta, dense = two_four(m, k)
    b = ints((k, n))
    compiled, interpreted = both(lib, "sp24", values, meta, b)
    np.testing.assert_array_equal(compiled, interpreted)
    np.testing.assert_array_equal(compiled, (dense @ b).astype(np.float32))


def test_two_four_dtypes_and_rounding(lib):
    values, meta, dense = two_four(37, 96, np.float64, floats=True)
    b = RNG.standard_normal((96, 45))
    compiled, interpreted = both(lib, "sp24_f64", values, meta, b)
    np.testing.assert_allclose(compiled, dense @ b, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(compiled, interpreted)  # one multiply and one add each, in order
    values, meta, dense = two_four(37, 96, np.float16, floats=True)
    b = RNG.standard_normal((96, 45)).astype(np.float16)
    compiled, interpreted = both(lib, "sp24_f16", values, meta, b)
    assert compiled.dtype == np.float32
    np.testing.assert_array_equal(compiled, interpreted)  # f16 products are exact in f32
    values, meta, dense = two_four(50, 128, floats=True)
    b = RNG.standard_normal((128, 70)).astype(np.float32)
    compiled, interpreted = both(lib, "sp24", values, meta, b)
    bound = 64 * 2.0 ** -24 * (np.abs(dense) @ np.abs(b))
    assert np.all(np.abs(compiled - dense @ b) <= bound)
    np.testing.assert_array_equal(compiled, interpreted)


def test_two_four_fused_views_and_parallel(lib):
    values, meta, dense = two_four(23, 40)
    b, bias = ints((40, 33)), ints(33)
    compiled, interpreted = both(lib, "sp24_scaled", values, meta, b, bias)
    np.testing.assert_array_equal(compiled, interpreted)
    np.testing.assert_array_equal(compiled, ((0.5 * dense) @ b + bias).astype(np.float32))
    big = ints((40, 90))
    compiled, interpreted = both(lib, "sp24", values, meta, big[:, ::3])
    np.testing.assert_array_equal(compiled, (dense @ big[:, ::3]).astype(np.float32))
    out = np.zeros((23, 33), np.float32)
    lib.sp24_rows(values, meta, b, out)
    np.testing.assert_array_equal(out, (dense @ b).astype(np.float32))


def test_structural_zeros_are_skipped(lib):
    """Dropped positions meet rows of b that hold inf: a dense product would make NaN."""
    m, k, n = 8, 16, 70
    meta = np.full((m, k // 4), 0 | (1 << 2), np.uint8)  # positions 0 and 1 of every group
    values = ints((m, k // 2))
    b = ints((k, n))
    b[2::4] = np.inf  # positions 2 and 3 are never kept
    b[3::4] = -np.inf
    compiled, interpreted = both(lib, "sp24", values, meta, b)
    assert np.isfinite(compiled).all() and np.isfinite(interpreted).all()
    kept = np.sort(np.concatenate([np.arange(0, k, 4), np.arange(1, k, 4)]))
    np.testing.assert_array_equal(compiled, (values.astype(np.float64) @ b[kept]).astype(np.float32))


@pytest.mark.parametrize("byte, position", [(0x05, (2, 1)), (0x10 | 0x4, (0, 3)), (0x0, (5, 0)), (0x3 | 0x1 << 2, (1, 2))])
def test_invalid_metadata_writes_nothing(lib, byte, position):
    values, meta, _ = two_four(6, 16)
    meta[position] = byte
    meta[5, 3] = 0x0  # a later violation: the first one in row-major order is reported
    b = ints((16, 70))
    messages = []
    for call in (lambda out: lib.sp24(values, meta, b, out=out), lambda out: interpret(SOURCE, "sp24", values, meta, b,
                                                                                      out=out)):
        out = np.full((6, 70), 7.0, np.float32)
        with pytest.raises(intentc.KernelError) as info:
            call(out)
        assert info.value.code == -7 and "(T5)" in str(info.value)
        assert f"meta[{position[0]}, {position[1]}] = {byte} does not hold" in str(info.value)
        assert (out == 7.0).all()
        messages.append(str(info.value).split(" (at ")[0])
    assert messages[0] == messages[1]


def test_two_four_extents_are_checked(lib):
    values, meta, _ = two_four(4, 16)
    for args in ((values, meta, ints((20, 3))), (values[:, :6], meta, ints((16, 3))), (values, meta[:3], ints((16, 3)))):
        for call in (lambda: lib.loose24(*args), lambda: interpret(SOURCE, "loose24", *args)):
            with pytest.raises(intentc.KernelError) as info:
                call()
            assert info.value.code == -4 and "(T5)" in str(info.value)


def test_two_four_same_bits_for_every_thread_count(lib):
    values, meta, _ = two_four(300, 512, floats=True)
    b = RNG.standard_normal((512, 200)).astype(np.float32)
    results = []
    for threads in (1, 2, 3):
        lib.set_num_threads(threads)
        results.append(lib.sp24(values, meta, b))
    lib.set_num_threads(2)
    for other in results[1:]:
        np.testing.assert_array_equal(results[0].view(np.uint32), other.view(np.uint32))


# ---- CSR --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("m, k, n, density", [(1, 1, 1, 1.0), (7, 9, 4, 0.3), (50, 70, 130, 0.1), (90, 40, 64, 0.5),
                                              (0, 5, 5, 0.5), (5, 5, 0, 0.5), (6, 8, 65, 0.0)])
def test_csr_shapes(lib, m, k, n, density):
    offsets, columns, values, dense = random_csr(m, k, density)
    b = ints((k, n))
    compiled, interpreted = both(lib, "csr", offsets, columns, values, b)
    np.testing.assert_array_equal(compiled, interpreted)
    np.testing.assert_array_equal(compiled, (dense @ b).astype(np.float32))


def test_csr_unsorted_duplicates_empty_rows_and_i64(lib):
    offsets = np.array([0, 3, 3, 6, 6], np.int32)  # rows 1 and 3 are empty
    columns = np.array([4, 0, 4, 2, 2, 1], np.int32)  # unsorted, duplicates add up
    values = np.array([1, 2, 3, 4, 5, 6], np.float32)
    b = ints((5, 70))
    dense = np.zeros((4, 5))
    for r in range(4):
        for p in range(offsets[r], offsets[r + 1]):
            dense[r, columns[p]] += values[p]
    compiled, interpreted = both(lib, "csr", offsets, columns, values, b)
    np.testing.assert_array_equal(compiled, interpreted)
    np.testing.assert_array_equal(compiled, (dense @ b).astype(np.float32))
    extra = np.concatenate([columns, [99, -1]]).astype(np.int32)  # stored past offsets[M]: ignored
    compiled = lib.csr(offsets, extra, np.concatenate([values, [1, 1]]).astype(np.float32), b)
    np.testing.assert_array_equal(compiled, (dense @ b).astype(np.float32))
    offsets64, columns64, values64, dense64 = random_csr(40, 30, 0.2, np.float64, np.int64)
    b64 = RNG.standard_normal((30, 50))
    compiled, interpreted = both(lib, "csr64", offsets64, columns64, values64, b64)
    np.testing.assert_allclose(compiled, dense64 @ b64, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(compiled, interpreted)


def test_csr_inside_parallel(lib):
    offsets, columns, values, dense = random_csr(9, 12, 0.4)
    b = ints((12, 21))
    out = np.zeros((9, 21), np.float32)
    lib.csr_rows(offsets, columns, values, b, out)
    np.testing.assert_array_equal(out, (dense @ b).astype(np.float32))


@pytest.mark.parametrize("case, code, text", [
    ("first", -7, "offsets[0] = 1, but CSR offsets start at 0 (T5)"),
    ("order", -7, "offsets decrease at row 2: 5 then 4 (T5)"),
    ("end", -7, "offsets[M] = 9 exceeds the 8 stored values (T5)"),
    ("column", -6, "columns[3] = 12 is outside [0, 6) (T5)"),
    ("negative", -6, "columns[1] = -1 is outside [0, 6) (T5)"),
])
def test_invalid_csr_writes_nothing(lib, case, code, text):
    offsets = np.array([0, 2, 5, 6, 8], np.int32)
    columns = np.array([0, 3, 1, 2, 5, 4, 0, 1], np.int32)
    values = np.arange(1, 9, dtype=np.float32)
    if case == "first":
        offsets[0] = 1
    elif case == "order":
        offsets[3] = 4
    elif case == "end":
        offsets[4] = 9
    elif case == "column":
        columns[3] = 12
    else:
        columns[1] = -1
    b = ints((6, 70))
    messages = []
    for call in (lambda out: lib.csr(offsets, columns, values, b, out=out),
                 lambda out: interpret(SOURCE, "csr", offsets, columns, values, b, out=out)):
        out = np.full((4, 70), 7.0, np.float32)
        with pytest.raises(intentc.KernelError) as info:
            call(out)
        assert info.value.code == code and text in str(info.value)
        assert (out == 7.0).all()
        messages.append(str(info.value).split(" (at ")[0])
    assert messages[0] == messages[1]


def test_csr_same_bits_for_every_thread_count(lib):
    offsets, columns, _, _ = random_csr(400, 300, 0.05)
    values = RNG.standard_normal(columns.size).astype(np.float32)
    b = RNG.standard_normal((300, 130)).astype(np.float32)
    results = []
    for threads in (1, 2, 3):
        lib.set_num_threads(threads)
        results.append(lib.csr(offsets, columns, values, b))
    lib.set_num_threads(2)
    for other in results[1:]:
        np.testing.assert_array_equal(results[0].view(np.uint32), other.view(np.uint32))


# ---- diagnostics and targets ------------------------------------------------------------------------------
@pytest.mark.parametrize("signature, call, message", [
    ("v: f32[M, H], meta: u8[M, Q], b: f32[K, N]", '"3:4", v, meta, b', 'unknown sparse format "3:4"'),
    ("v: f32[M, H], meta: i32[M, Q], b: f32[K, N]", '"2:4", v, meta, b', "the 2:4 metadata is i32, not u8"),
    ("v: f32[M, 6], meta: u8[M, 2], b: f32[8, N]", '"2:4", v, meta, b', "2 per group of meta make 4"),
    ("v: f32[M, 4], meta: u8[M, 2], b: f32[12, N]", '"2:4", v, meta, b', "b has K = 12 rows but meta"),
    ("v: f32[M, H], meta: u8[M, Q], b: f64[K, N]", '"2:4", v, meta, b', "the sparse values are f32 but b is f64"),
    ("v: i32[M, H], meta: u8[M, Q], b: i32[K, N]", '"2:4", v, meta, b', "multiplies f16, f32 or f64 values"),
    ("v: f32[M, H], meta: u8[M, Q], b: f32[K, N]", '"2:4", v, meta', "takes 3 tensors"),
    ("o: f32[R], c: i32[Z], v: f32[Z], b: f32[K, N], m: f32[M]", '"csr", o, c, v, b', "CSR offsets are f32"),
    ("o: i32[R], c: i64[Z], v: f32[Z], b: f32[K, N], m: f32[M]", '"csr", o, c, v, b', "columns are i64 but"),
    ("o: i32[1, R], c: i32[Z], v: f32[Z], b: f32[K, N], m: f32[M]", '"csr", o, c, v, b', "has rank 2"),
    ("o: i32[0], c: i32[Z], v: f32[Z], b: f32[K, N], m: f32[M]", '"csr", o, c, v, b', "at least one entry"),
    ("v: f32[M, H], meta: u8[M, Q], b: f32[K, N]", '"2:4", v, meta, b, acc=f16', "cannot accumulate"),
])
def test_schema_diagnostics(signature, call, message):
    source = f"import intent as I\n\n@intent.kernel\ndef k({signature}) -> f32[M, N]:\n" \
             f"    return I.sparse_contract({call})\n"
    with pytest.raises(CompileError) as info:
        frontend(source, "k.intent")
    diagnostic = info.value.diagnostics[0]
    assert message in diagnostic.message, diagnostic
    assert diagnostic.rule == "T5" and diagnostic.hint


PTX_SOURCE = "import intent as I\n\n" + "\n\n".join(
    block for block in SOURCE.split("\n\n") if "def sp24(" in block or "def csr(" in block)


@pytest.mark.parametrize("target", ["sm_80", "sm_90"])
def test_ptx_by_expansion(tmp_path, target):
    path = tmp_path / "sparse.intent"
    path.write_text(PTX_SOURCE)
    build(path, tmp_path / "sparse.ptx", target=target)
    ptx = (tmp_path / "sparse.ptx").read_text()
    assert ".entry sp24(" in ptx and ".entry csr(" in ptx
    if shutil.which("ptxas") is None:
        pytest.skip("ptxas is not installed")
    subprocess.run(["ptxas", f"-arch={target}", str(tmp_path / "sparse.ptx"), "-o", str(tmp_path / "sparse.cubin")],
                   check=True, capture_output=True)


def test_ptx_kernels_run_emulated():
    """The sm_80 kernels launched as the manifest says, every thread on the CPU (tests/gpu)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu"))
    from cpu_emulation import Emulator

    from intentc import ptx_loader

    compiled = compile_source(PTX_SOURCE, "sparse.intent", "sm_80", optimize_ir=False)
    module = ptx_loader.Module("", compiled.manifest, Emulator(compiled.llvm_ir, 3, 32))
    values, meta, dense = two_four(13, 24)
    b = ints((24, 70))
    np.testing.assert_array_equal(module.sp24(values, meta, b), (dense @ b).astype(np.float32))
    offsets, columns, csr_values, dense = random_csr(11, 9, 0.4)
    out = np.zeros((11, 70), np.float32)
    module.csr(offsets, columns, csr_values, np.ascontiguousarray(b[:9]), out=out)
    np.testing.assert_array_equal(out, (dense @ b[:9]).astype(np.float32))
    meta[1, 1] = 0x0
    with pytest.raises(ptx_loader.KernelError) as info:
        module.sp24(values, meta, b)
    assert info.value.code == -7
