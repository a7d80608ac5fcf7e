"""Python-side checks of the microscaled and sparse contraction samples (``checks.py`` merges
``SCALED_CHECKS`` into its ``CHECKS``).

The references dequantise explicitly with ``ml_dtypes`` (values and e8m0 scales decoded
to f64, scaled, then ``@``) or decompress the sparse operand to a dense array. Tolerance:
an f32 sum of K products in any order is within ``K * 2^-24 * sum(|x * y|)`` of the
exact f64 sum (the compiled code adds in k order with fused multiply-adds); NaN must be
NaN in the same places. Dequantisation and quantisation are compared bit for bit.
"""
from __future__ import annotations

import numpy as np

E_DTYPE, E_SHAPE, E_BOUNDS, E_DOMAIN = -2, -4, -6, -7


def _tally(name: str):
    from checks import _Tally  # lazily: checks.py imports this module at its end

    return _Tally(name)


def _md():
    import ml_dtypes

    return ml_dtypes


def _within(t, got, want, bound, what: str) -> None:
    got = np.asarray(got)
    assert got.dtype == np.float32, f"{what}: dtype {got.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan), f"{what}: NaN in other places than the reference"
    bad = np.abs(got[~nan].astype(np.float64) - want[~nan]) > bound[~nan] + 1e-30
    assert not bad.any(), f"{what}: {got[~nan][bad][:3]} vs {want[~nan][bad][:3]}"
    t.matched += 1


def _codes(rng, shape, name: str):
    md = _md()
    dtype = {"f8e4m3": md.float8_e4m3fn, "f4e2m1": md.float4_e2m1fn}[name]
    codes = rng.integers(0, 256 if name == "f8e4m3" else 16, size=shape).astype(np.uint8)
    if name == "f8e4m3":
        codes[(codes & 0x7F) == 0x7F] = 0x3C  # no NaN values: 1.5
    return codes.view(dtype)


def _scales(rng, shape, low=118, high=136):
    return rng.integers(low, high, size=shape).astype(np.uint8).view(_md().float8_e8m0fnu)


def _scaled_reference(x, sx, y, sy, block: int):
    """(C, bound) for x: [M, K] scaled by sx: [M, K/block], y: [K, N] by sy: [N, K/block]."""
    xs = x.astype(np.float64) * np.repeat(sx.astype(np.float64), block, axis=1)
    ys = y.astype(np.float64) * np.repeat(sy.astype(np.float64).T, block, axis=0)
    with np.errstate(invalid="ignore"):
        return xs @ ys, x.shape[1] * 2.0 ** -24 * (np.abs(xs) @ np.abs(ys))


def _threads_agree(t, m, call, what: str) -> None:
    results = []
    for threads in (1, 2, 3):
        m.set_num_threads(threads)
        results.append(call())
    m.set_num_threads(2)
    for other in results[1:]:
        t.same(other.view(np.uint32), results[0].view(np.uint32), f"{what}: 1, 2 and 3 threads")


# ---------------------------------------------------------------------------- mxfp8_matmul
def check_mxfp8_matmul(m) -> str:
    t = _tally("mxfp8_matmul")
    rng = np.random.default_rng(81)
    for rows, k, cols in ((1, 32, 1), (37, 64, 50), (130, 256, 200), (0, 32, 5), (6, 0, 7)):
        a, b = _codes(rng, (rows, k), "f8e4m3"), _codes(rng, (k, cols), "f8e4m3")
        sa, sb = _scales(rng, (rows, k // 32)), _scales(rng, (cols, k // 32))
        want, bound = _scaled_reference(a, sa, b, sb, 32)
        _within(t, m.mxfp8_matmul(a, sa, b, sb), want, bound, f"mxfp8_matmul {rows}x{k}x{cols}")
    # All-NaN scale blocks poison their rows and columns; zero blocks contribute nothing.
    a, b = _codes(rng, (40, 128), "f8e4m3"), _codes(rng, (128, 60), "f8e4m3")
    sa, sb = _scales(rng, (40, 4)), _scales(rng, (60, 4))
    sa.view(np.uint8)[7, :] = 0xFF
    sb.view(np.uint8)[11, 2] = 0xFF
    a.view(np.uint8)[:, 32:64] = 0
    want, bound = _scaled_reference(a, sa, b, sb, 32)
    got = m.mxfp8_matmul(a, sa, b, sb)
    _within(t, got, want, bound, "mxfp8_matmul NaN scales, zero block")
    assert np.isnan(got[7]).all() and np.isnan(got[:, 11]).all() and np.isfinite(got[0, 0])
    everywhere = np.full((40, 4), 0xFF, np.uint8).view(sa.dtype)
    assert np.isnan(m.mxfp8_matmul(a, everywhere, b, sb)).all()
    t.matched += 1
    _threads_agree(t, m, lambda: m.mxfp8_matmul(a, _scales(np.random.default_rng(1), (40, 4)), b,
                                                _scales(np.random.default_rng(2), (60, 4))), "mxfp8_matmul")
    # Dequantisation, bit for bit.
    q, sq = _codes(rng, (9, 3, 32), "f8e4m3"), _scales(rng, (9, 3))
    out = np.zeros((9, 3, 32), np.float32)
    m.mxfp8_dequantize(q, sq, out)
    t.same(out, (q.astype(np.float64) * sq.astype(np.float64)[:, :, None]).astype(np.float32), "mxfp8_dequantize")
    # Bad calls: K = 40 is not a multiple of the block (T4), mismatched or mistyped scales.
    out = np.full((4, 5), 7.0, np.float32)
    a40, b40 = _codes(rng, (4, 40), "f8e4m3"), _codes(rng, (40, 5), "f8e4m3")
    t.refused_call("K = 40", lambda: m.mxfp8_matmul(a40, _scales(rng, (4, 1)), b40, _scales(rng, (5, 1)), out=out),
                   E_SHAPE, out)
    a64, b64 = _codes(rng, (4, 64), "f8e4m3"), _codes(rng, (64, 5), "f8e4m3")
    t.refused_call("sa with 3 blocks", lambda: m.mxfp8_matmul(a64, _scales(rng, (4, 3)), b64, _scales(rng, (5, 3)),
                                                              out=out), E_SHAPE, out)
    t.refused_call("sa is u8", lambda: m.mxfp8_matmul(a64, np.zeros((4, 2), np.uint8), b64, _scales(rng, (5, 2)),
                                                      out=out), E_DTYPE, out)
    return t.summary()


# ---------------------------------------------------------------------------- mxfp4_matmul
def check_mxfp4_matmul(m) -> str:
    t = _tally("mxfp4_matmul")
    rng = np.random.default_rng(82)
    for rows, g, cols in ((1, 1, 1), (33, 2, 97), (128, 8, 128), (0, 2, 4), (3, 0, 5)):
        a, b = _codes(rng, (rows, g, 32), "f4e2m1"), _codes(rng, (g, 32, cols), "f4e2m1")
        sa, sb = _scales(rng, (rows, g)), _scales(rng, (cols, g))
        want, bound = _scaled_reference(a.reshape(rows, g * 32), sa, b.reshape(g * 32, cols), sb, 32)
        _within(t, m.mxfp4_matmul(a, sa, b, sb), want, bound, f"mxfp4_matmul {rows}x{g}x32x{cols}")
    a, b = _codes(rng, (20, 3, 32), "f4e2m1"), _codes(rng, (3, 32, 30), "f4e2m1")
    sa, sb = _scales(rng, (20, 3)), _scales(rng, (30, 3))
    sa.view(np.uint8)[:, 1] = 0xFF  # an all-NaN scale block column: every result NaN
    assert np.isnan(m.mxfp4_matmul(a, sa, b, sb)).all()
    a.view(np.uint8)[...] = 0  # zero values with finite scales: exact zeros
    t.same(m.mxfp4_matmul(a, _scales(rng, (20, 3)), b, sb), np.zeros((20, 30), np.float32), "mxfp4 zero blocks")
    _threads_agree(t, m, lambda: m.mxfp4_matmul(_codes(np.random.default_rng(3), (150, 3, 32), "f4e2m1"),
                                                _scales(np.random.default_rng(4), (150, 3)), b,
                                                _scales(np.random.default_rng(5), (30, 3))), "mxfp4_matmul")
    # Quantisation: round to nearest even, saturating at +-6 (ml_dtypes does the same).
    x = (rng.standard_normal((17, 33)) * 4).astype(np.float32)
    t.same(m.to_fp4(x).view(np.uint8), x.astype(_md().float4_e2m1fn).view(np.uint8), "to_fp4")
    out = np.full((2, 3), 7.0, np.float32)
    t.refused_call("b blocks of 16", lambda: m.mxfp4_matmul(_codes(rng, (2, 1, 32), "f4e2m1"), _scales(rng, (2, 1)),
                                                            _codes(rng, (1, 16, 3), "f4e2m1"), _scales(rng, (3, 1)),
                                                            out=out), E_SHAPE, out)
    return t.summary()


# ---------------------------------------------------------------------------- sparse24_matmul
def _two_four(rng, rows: int, k: int):
    pairs = np.array([(i, j) for i in range(4) for j in range(i + 1, 4)])
    chosen = pairs[rng.integers(0, 6, (rows, k // 4))]
    meta = (chosen[..., 0] | (chosen[..., 1] << 2)).astype(np.uint8)
    values = rng.uniform(-1, 1, (rows, k // 2)).astype(np.float32)
    dense = np.zeros((rows, k))
    for j in range(2):
        cols = 4 * np.arange(k // 4)[None, :] + chosen[..., j]
        np.put_along_axis(dense, cols, values[:, j::2].astype(np.float64), axis=1)
    return values, meta, dense


def check_sparse24_matmul(m) -> str:
    t = _tally("sparse24_matmul")
    rng = np.random.default_rng(24)
    for rows, k, cols in ((1, 4, 1), (13, 64, 100), (128, 512, 256), (0, 8, 3), (5, 0, 4)):
        values, meta, dense = _two_four(rng, rows, k)
        b = rng.uniform(-1, 1, (k, cols)).astype(np.float32)
        bound = (k // 2) * 2.0 ** -24 * (np.abs(dense) @ np.abs(b)) + 1e-7
        _within(t, m.sparse24_matmul(values, meta, b), dense @ b, bound, f"sparse24 {rows}x{k}x{cols}")
    values, meta, dense = _two_four(rng, 64, 128)
    b = rng.uniform(-1, 1, (128, 70)).astype(np.float32)
    _threads_agree(t, m, lambda: m.sparse24_matmul(values, meta, b), "sparse24_matmul")
    bad = meta.copy()
    bad[5, 3] = 0x6  # positions 2 then 1: not increasing
    out = np.full((64, 70), 7.0, np.float32)
    t.refused_call("decreasing positions", lambda: m.sparse24_matmul(values, bad, b, out=out), E_DOMAIN, out)
    bad[5, 3] = 0x14  # bit 4 set
    t.refused_call("high bits", lambda: m.sparse24_matmul(values, bad, b, out=out), E_DOMAIN, out)
    t.refused_call("K != 4 groups", lambda: m.sparse24_matmul(values, meta, b[:100], out=out), E_SHAPE, out)
    return t.summary()


# ---------------------------------------------------------------------------- csr_spmm
def check_csr_spmm(m) -> str:
    t = _tally("csr_spmm")
    rng = np.random.default_rng(25)
    for rows, k, cols, density in ((1, 1, 1, 1.0), (40, 70, 33, 0.1), (500, 400, 64, 0.02), (0, 5, 3, 0.5),
                                   (6, 9, 0, 0.5)):
        mask = rng.random((rows, k)) < density
        mask[3::7] = False  # empty rows
        dense = np.where(mask, rng.uniform(-1, 1, (rows, k)), 0.0).astype(np.float32).astype(np.float64)
        offsets = np.concatenate([[0], np.cumsum(mask.sum(axis=1))]).astype(np.int64)
        r, c = np.nonzero(mask)
        x = rng.uniform(-1, 1, (k, cols)).astype(np.float32)
        bound = k * 2.0 ** -24 * (np.abs(dense) @ np.abs(x)) + 1e-7
        got = m.csr_spmm(offsets, c.astype(np.int64), dense[r, c].astype(np.float32), x)
        _within(t, got, dense @ x, bound, f"csr_spmm {rows}x{k}x{cols}")
    offsets = np.array([0, 2, 3, 5], np.int64)
    columns = np.array([0, 2, 1, 0, 2], np.int64)
    values = np.arange(1, 6, dtype=np.float32)
    x = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    out = np.full((3, 4), 7.0, np.float32)
    t.refused_call("offsets[0] = 1", lambda: m.csr_spmm(np.array([1, 2, 3, 5]), columns, values, x, out=out),
                   E_DOMAIN, out)
    t.refused_call("decreasing offsets", lambda: m.csr_spmm(np.array([0, 3, 2, 5]), columns, values, x, out=out),
                   E_DOMAIN, out)
    t.refused_call("offsets past nnz", lambda: m.csr_spmm(np.array([0, 2, 3, 6]), columns, values, x, out=out),
                   E_DOMAIN, out)
    t.refused_call("column 3 of 3", lambda: m.csr_spmm(offsets, np.array([0, 2, 3, 0, 2]), values, x, out=out),
                   E_BOUNDS, out)
    t.refused_call("offsets are i32", lambda: m.csr_spmm(offsets.astype(np.int32), columns, values, x, out=out),
                   E_DTYPE, out)
    return t.summary()


SCALED_CHECKS = {
    "mxfp8_matmul": check_mxfp8_matmul,
    "mxfp4_matmul": check_mxfp4_matmul,
    "sparse24_matmul": check_sparse24_matmul,
    "csr_spmm": check_csr_spmm,
}
