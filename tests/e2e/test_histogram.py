"""I.histogram (T6): compiled vs the reference interpreter vs NumPy.

The binning rule (docs/language.md): a float value ``v`` counts when ``lo <= v <= hi``, in
bin ``min(floor((v - lo) * s), n - 1)`` with ``s = n / (hi - lo)``, computed in the values'
dtype (f32 for f16); ``hi`` is in the last bin as in ``np.histogram``; NaN, infinities
and values outside the range are not counted. Integer values are bin indices; those
outside ``[0, n)`` are not counted (``np.bincount`` of the others).
"""
from __future__ import annotations

import numpy as np
import pytest

import intentc
from intentc.diagnostics import CompileError
from intentc.driver import frontend

SOURCE = """\
import intent as I

@intent.kernel
def hist(x: f32[N]) -> i64[16]:
    return I.histogram(x, bins=16, range=(-2.0, 2.0))

@intent.kernel
def hist_rt(x: f32[N], lo: f32, hi: f32, like: i64[B]) -> i64[B]:
    return I.histogram(x, bins=like.shape[0], range=(lo, hi))

@intent.kernel
def hist_2d(x: f64[R, C]) -> i64[10]:
    return I.histogram(x, bins=10, range=(0.0, 1.0))

@intent.kernel
def hist_f16(x: f16[N]) -> i64[7]:
    return I.histogram(x, bins=7, range=(-1.0, 2.5))

@intent.kernel
def weighted(x: f32[N], w: f32[N]) -> f32[32]:
    return I.histogram(x, bins=32, range=(0.0, 1.0), weights=w)

@intent.kernel
def weighted_rows(x: f64[R, C], w: f64[C]) -> f64[5]:
    return I.histogram(x, bins=5, range=(0.0, 1.0), weights=w)

@intent.kernel
def bincount(i: i32[N], like: i64[B]) -> i64[B]:
    return I.histogram(i, bins=like.shape[0])

@intent.kernel
def bincount_u64(i: u64[N]) -> i64[9]:
    return I.histogram(i, bins=9)

@intent.kernel
def bincount_weighted(i: i64[N], w: i32[N]) -> i32[6]:
    return I.histogram(i, bins=6, weights=w)

@intent.kernel
def fused(x: f32[N]) -> i64[8]:
    return I.histogram(x * 2.0 - 1.0, bins=8, range=(-1.0, 1.0)) * 3

@intent.kernel
def per_row(x: f32[R, C], res: mut i64[R, 4]):
    for r in I.parallel(x.axis(0)):
        h = I.histogram(x[r, :], bins=4, range=(0.0, 1.0))
        for j in I.domain(0, 4):
            res[r, j] = h[j]
"""

RNG = np.random.default_rng(7)


def reference(x, n, lo, hi, weights=None, dtype=np.float32):
    """The binning rule in NumPy, independently of the interpreter."""
    x = np.asarray(x).reshape(-1).astype(dtype)
    lo, hi = dtype(lo), dtype(hi)
    with np.errstate(all="ignore"):
        scale = dtype(n) / (hi - lo)
        keep = (x >= lo) & (x <= hi)
        t = ((x[keep] - lo) * scale).astype(np.float64)
    bins = np.minimum(np.floor(t), n - 1).astype(np.int64)
    if weights is None:
        return np.bincount(bins, minlength=n)
    return np.bincount(bins, np.asarray(weights).reshape(-1)[keep], minlength=n)


@pytest.mark.parametrize("n", [0, 1, 100, 4097, 1 << 20])
def test_counts_match_numpy(differential, n):
    x = RNG.uniform(-2.5, 2.5, n).astype(np.float32)
    run = differential(SOURCE, "hist", x)
    assert run.result.dtype == np.int64
    np.testing.assert_array_equal(run.result, reference(x, 16, -2.0, 2.0))
    np.testing.assert_array_equal(run.result, np.histogram(x, 16, (-2.0, 2.0))[0])


def test_edges_nan_and_infinities(differential):
    edges = np.linspace(-2.0, 2.0, 17, dtype=np.float32)  # every bin edge, hi included
    special = np.array([np.nan, -np.nan, np.inf, -np.inf, -2.0000002, 2.0000002, 3e38, -3e38, 0.0, -0.0],
                       np.float32)
    x = np.concatenate([edges, special, edges[::-1]])
    run = differential(SOURCE, "hist", x)
    want = np.histogram(np.concatenate([edges, [0.0, -0.0], edges]), 16, (-2.0, 2.0))[0]
    np.testing.assert_array_equal(run.result, want)
    assert run.result[-1] == 4  # hi, twice, is in the last bin (and 1.75 twice)
    np.testing.assert_array_equal(run.result, reference(x, 16, -2.0, 2.0))


@pytest.mark.parametrize("bins, lo, hi", [(1, 0.0, 1.0), (3, -1.0, 1.0), (256, 0.0, 1.0), (1000, -3.5, 7.25),
                                          (7, 1e-3, 1.0001e-3)])
def test_runtime_bins_and_range(differential, bins, lo, hi):
    x = np.concatenate([RNG.uniform(lo - 0.1 * (hi - lo), hi + 0.1 * (hi - lo), 30000), [lo, hi, np.nan]])
    x = x.astype(np.float32)
    run = differential(SOURCE, "hist_rt", x, lo, hi, np.zeros(bins, np.int64))
    np.testing.assert_array_equal(run.result, reference(x, bins, lo, hi))


@pytest.mark.parametrize("lo, hi, bins", [(1.0, 1.0, 4), (2.0, 1.0, 4), (np.nan, 1.0, 4), (0.0, np.inf, 4),
                                          (-3e38, 3e38, 4), (0.0, 1.0, 0)])
def test_bad_runtime_range_or_bins_fails(differential, lo, hi, bins):
    run = differential(SOURCE, "hist_rt", np.ones(5, np.float32), lo, hi, np.zeros(bins, np.int64))
    assert isinstance(run.error, intentc.KernelError) and run.error.code == -7
    assert "T6" in str(run.error)


def test_float64_values_of_any_rank(differential):
    x = RNG.random((37, 301))
    x[0, :5] = [0.0, 1.0, 0.1, 0.5, 1.5]
    run = differential(SOURCE, "hist_2d", x)
    np.testing.assert_array_equal(run.result, np.histogram(x, 10, (0.0, 1.0))[0])
    # The rule is the formula, not NumPy's edge correction: (0.7 - 0) * 10 rounds to
    # 7.000000000000001 in f64, so 0.7 is in bin 7; np.histogram compares with its
    # linspace edge 0.7000000000000001 and says bin 6.
    run = differential(SOURCE, "hist_2d", np.full((1, 1), 0.7))
    assert run.result[7] == 1 and np.histogram([0.7], 10, (0.0, 1.0))[0][6] == 1
    run = differential(SOURCE, "hist_2d", x[::3, ::-7])  # strided views
    np.testing.assert_array_equal(run.result, reference(x[::3, ::-7], 10, 0.0, 1.0, dtype=np.float64))


def test_float16_values_bin_in_float32(differential):
    x = RNG.uniform(-1.5, 3.0, 5000).astype(np.float16)
    run = differential(SOURCE, "hist_f16", x)
    np.testing.assert_array_equal(run.result, reference(x, 7, -1.0, 2.5))


def test_weights(differential):
    x = RNG.random(70000).astype(np.float32)
    x[:4] = [1.0, np.nan, -0.5, 0.0]
    w = (RNG.integers(-64, 64, 70000) / 8).astype(np.float32)  # exact sums in any order
    run = differential(SOURCE, "weighted", x, w)
    assert run.result.dtype == np.float32
    np.testing.assert_array_equal(run.result, reference(x, 32, 0.0, 1.0, w).astype(np.float32))
    xr, wr = RNG.random((40, 50)), RNG.integers(0, 9, 50).astype(np.float64)
    run = differential(SOURCE, "weighted_rows", xr, wr)  # weights broadcast over the rows
    np.testing.assert_array_equal(run.result, np.histogram(xr, 5, (0.0, 1.0), weights=np.broadcast_to(wr, xr.shape))[0])


def test_weighted_floats_same_bits_for_every_thread_count(differential):
    module = differential.build(SOURCE)
    x = RNG.random(3_000_000).astype(np.float32)
    w = RNG.standard_normal(3_000_000).astype(np.float32)
    results = []
    try:
        for threads in (1, 2, 3):
            module.set_num_threads(threads)
            results.append(module.weighted(x, w))
    finally:
        module.set_num_threads(0)
    assert all(r.tobytes() == results[0].tobytes() for r in results)
    want = reference(x, 32, 0.0, 1.0, w.astype(np.float64), dtype=np.float32)
    np.testing.assert_allclose(results[0], want, rtol=1e-4, atol=1e-2)  # regrouped f32 sums of ~94k terms


@pytest.mark.parametrize("bins", [0, 1, 10, 300])
def test_integer_bins(differential, bins):
    i = RNG.integers(-5, 320, 50000).astype(np.int32)
    i[:3] = [np.iinfo(np.int32).min, np.iinfo(np.int32).max, bins]
    run = differential(SOURCE, "bincount", i, np.zeros(bins, np.int64))
    keep = (i >= 0) & (i < bins)
    np.testing.assert_array_equal(run.result, np.bincount(i[keep], minlength=bins))


def test_integer_bins_unsigned_and_weighted(differential):
    u = np.array([0, 8, 9, 2**63, 2**64 - 1, 3, 3], np.uint64)
    run = differential(SOURCE, "bincount_u64", u)
    np.testing.assert_array_equal(run.result, [1, 0, 0, 2, 0, 0, 0, 0, 1])
    i = RNG.integers(-2, 8, 20000)
    w = RNG.integers(-2**31, 2**31, 20000).astype(np.int32)  # i32 sums wrap around
    run = differential(SOURCE, "bincount_weighted", i, w)
    keep = (i >= 0) & (i < 6)
    sums = [sum(int(v) for v in w[keep][i[keep] == b]) for b in range(6)]
    want = np.array([(s + 2**31) % 2**32 - 2**31 for s in sums], np.int32)
    np.testing.assert_array_equal(run.result, want)


def test_fused_values_and_consumers(differential):
    x = RNG.random(10000).astype(np.float32)
    run = differential(SOURCE, "fused", x)
    np.testing.assert_array_equal(run.result, 3 * reference(x * np.float32(2) - np.float32(1), 8, -1.0, 1.0))


def test_histogram_inside_parallel(differential):
    x = RNG.random((9, 1000)).astype(np.float32)
    run = differential(SOURCE, "per_row", x, np.zeros((9, 4), np.int64))
    np.testing.assert_array_equal(run.args[1], [np.histogram(row, 4, (0.0, 1.0))[0] for row in x])


@pytest.mark.parametrize("call, message", [
    ("I.histogram(x)", "I.histogram takes one tensor of values and bins=n"),
    ("I.histogram(x, bins=0, range=(0.0, 1.0))", "bins must be an integer in [1, 16777216], got 0"),
    ("I.histogram(x, bins=2.5, range=(0.0, 1.0))", "bins must be an integer"),
    ("I.histogram(i, bins=-1)", "bins must be an integer in [0, 2147483647], got -1"),
    ("I.histogram(x, bins=4)", "I.histogram of f32 values needs range=(lo, hi)"),
    ("I.histogram(i, bins=4, range=(0.0, 1.0))", "range= bins float values, but the values are i32"),
    ("I.histogram(x, bins=4, range=(1.0, 0.0))", "must be finite with lo < hi"),
    ("I.histogram(x, bins=4, range=(0.0, I.inf))", "must be finite with lo < hi"),
    ("I.histogram(x, bins=4, range=(1.0, 1.00000001))", "must be finite with lo < hi"),
    ("I.histogram(x, bins=4, range=(0.0,))", "range must be a pair"),
    ("I.histogram(x, bins=4, range=(0.0, d))", "a bound of range must be a scalar f32"),
    ("I.histogram(x, bins=4, range=(0.0, 1.0), weights=2.0)", "weights= must be a tensor"),
    ("I.histogram(x, bins=4, range=(0.0, 1.0), weights=p)", "weights must be numbers"),
    ("I.histogram(x, bins=4, range=(0.0, 1.0), normed=True)", "I.histogram has no argument 'normed'"),
    ("I.histogram(2.0, bins=4, range=(0.0, 1.0))", "the values of I.histogram must be a tensor"),
    ("I.histogram(p, bins=2)", "bool values cannot be binned"),
])
def test_bad_calls_are_diagnosed(call, message):
    text = f"""\
import intent as I

@intent.kernel
def k(x: f32[N], i: i32[N], p: bool[N], d: f64) -> i64[4]:
    h = {call}
    return I.cast(x[0:4], i64)
"""
    with pytest.raises(CompileError) as info:
        frontend(text, "bad.intent")
    diagnostic = info.value.diagnostics[0]
    assert message in diagnostic.message, diagnostic.render_plain()
    if "no argument" not in message:
        assert diagnostic.rule == "T6", diagnostic.render_plain()


def test_ptx_target_emulated():
    """The same lowering on the PTX target, run by the CPU emulation of its launches
    (tests/gpu/cpu_emulation.py) with a small grid and with one thread."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu"))
    from cpu_emulation import Emulator

    from intentc import ptx_loader
    from intentc.driver import compile_source

    text = "import intent as I\n" + "".join(
        "\n@intent.kernel" + chunk for chunk in SOURCE.split("@intent.kernel")[1:]
        if chunk.split("(")[0].split()[-1] in ("hist", "bincount"))
    compiled = compile_source(text, "histogram.intent", "sm_80", optimize_ir=False)
    x = RNG.uniform(-2.5, 2.5, 30000).astype(np.float32)
    i = RNG.integers(-3, 12, 30000).astype(np.int32)
    for grid in ((3, 32), (1, 1)):
        module = ptx_loader.Module("", compiled.manifest, Emulator(compiled.llvm_ir, *grid))
        np.testing.assert_array_equal(module.hist(x), reference(x, 16, -2.0, 2.0))
        keep = (i >= 0) & (i < 10)
        np.testing.assert_array_equal(module.bincount(i, np.zeros(10, np.int64)), np.bincount(i[keep], minlength=10))
