"""Reductions and scans (T1, T2): compiled vs interpreter vs NumPy, determinism across
thread counts, non-commutative combines."""
from __future__ import annotations

import numpy as np
import pytest

import intentc

SOURCE = """
import intent as I

@intent.fn
def affine(a: (f32, f32), b: (f32, f32)) -> (f32, f32):
    return (a[0] * b[0], a[1] * b[0] + b[1])

@intent.fn
def matmul2(a: (i64, i64, i64, i64), b: (i64, i64, i64, i64)) -> (i64, i64, i64, i64):
    return (a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3])

@intent.fn
def welford(a: (f64, f64, f64), b: (f64, f64, f64)) -> (f64, f64, f64):
    n = a[0] + b[0]
    d = b[1] - a[1]
    w = I.where(n > 0.0, b[0] / I.maximum(n, 1.0), 0.0)
    return (n, a[1] + d * w, a[2] + b[2] + d * d * a[0] * w)

@intent.kernel
def sums(x: i64[R, C], all_: mut i64[1], rows: mut i64[R], cols: mut i64[C], keep: mut i64[R, 1]):
    all_[0] = I.sum(x)
    r = I.sum(x, axis=1)
    c = I.sum(x, axis=0)
    k = I.sum(x, axis=-1, keepdims=True)
    for i in I.parallel(x.axis(0)):
        rows[i] = r[i]
        keep[i, 0] = k[i, 0]
    for j in I.parallel(x.axis(1)):
        cols[j] = c[j]

@intent.kernel
def extremes(x: f32[N], out: mut f32[2], arg: mut index[2]):
    out[0] = I.max(x)
    out[1] = I.min(x)
    arg[0] = I.argmax(x)
    arg[1] = I.argmin(x)

@intent.kernel
def row_argmax(x: i32[R, C]) -> index[R]:
    return I.argmax(x, axis=1)

@intent.kernel
def logic(b: bool[N], out: mut bool[2]):
    out[0] = I.any(b)
    out[1] = I.all(b)

@intent.kernel
def half_sum(x: f16[N]) -> f32[1]:
    return I.sum(x, acc=f32)

@intent.kernel
def total(x: f32[N]) -> f32[1]:
    return I.sum(x)

@intent.kernel
def prefix(x: i64[N]) -> i64[N]:
    return I.cumsum(x)

@intent.kernel
def prefix_ex(x: i64[N]) -> i64[N]:
    return I.cumsum(x, exclusive=True)

@intent.kernel
def prefix_rev(x: i64[N]) -> i64[N]:
    return I.cumsum(x, reverse=True)

@intent.kernel
def prefix2(x: i32[R, C]) -> i32[R, C]:
    return I.cumsum(x, axis=0)

@intent.kernel
def fprefix(x: f32[N]) -> f32[N]:
    return I.cumsum(x)

@intent.kernel
def mat_scan(a: i64[N], b: i64[N], c: i64[N], d: i64[N]) -> i64[N]:
    p, q, r, s = I.scan((a, b, c, d), combine=matmul2, identity=(1, 0, 0, 1))
    return q

@intent.kernel
def mat_fold(a: i64[N], b: i64[N], c: i64[N], d: i64[N], out: mut i64[4]):
    p, q, r, s = I.reduce((a, b, c, d), combine=matmul2, identity=(1, 0, 0, 1), ordered=True)
    out[0] = p
    out[1] = q
    out[2] = r
    out[3] = s

@intent.kernel
def moments(x: f64[N], out: mut f64[3]):
    n, mean, m2 = I.reduce((I.cast(x * 0.0 + 1.0, f64), x, x * 0.0), combine=welford, identity=(0.0, 0.0, 0.0))
    out[0] = n
    out[1] = mean
    out[2] = m2 / n

@intent.kernel
def recurrence(a: f32[N], b: f32[N], h0: f32) -> f32[N]:
    p, q = I.scan((a, b), combine=affine, identity=(1.0, 0.0), init=(1.0, h0))
    return q
"""


@pytest.fixture(scope="module")
def module(differential):
    return differential.build(SOURCE)


@pytest.mark.parametrize("shape", [(0, 3), (1, 1), (3, 5), (64, 129), (7, 0)])
def test_integer_sums_are_exact(differential, shape):
    rng = np.random.default_rng(1)
    x = rng.integers(-1000, 1000, shape)
    r, c = shape
    run = differential(SOURCE, "sums", x, np.zeros(1, np.int64), np.zeros(r, np.int64), np.zeros(c, np.int64),
                       np.zeros((r, 1), np.int64))
    assert run.args[1][0] == x.sum()
    np.testing.assert_array_equal(run.args[2], x.sum(1))
    np.testing.assert_array_equal(run.args[3], x.sum(0))
    np.testing.assert_array_equal(run.args[4], x.sum(1, keepdims=True))


def test_extremes_and_arg(differential):
    x = np.array([3.0, -1.0, 7.5, 7.5, -1.0, 2.0], np.float32)
    run = differential(SOURCE, "extremes", x, np.zeros(2, np.float32), np.zeros(2, np.int64))
    assert run.args[1].tolist() == [7.5, -1.0]
    assert run.args[2].tolist() == [2, 1]  # ties take the smaller index


def test_argmax_treats_nan_as_greatest(differential):
    x = np.array([1.0, np.nan, 5.0, np.nan], np.float32)
    run = differential(SOURCE, "extremes", x, np.zeros(2, np.float32), np.zeros(2, np.int64))
    assert run.args[2][0] == np.argmax(x) == 1


def test_row_argmax(differential):
    x = np.random.default_rng(2).integers(-5, 5, (9, 13)).astype(np.int32)
    np.testing.assert_array_equal(differential(SOURCE, "row_argmax", x).result, x.argmax(1))


@pytest.mark.parametrize("values", [[], [False], [True, False], [True, True]])
def test_any_all(differential, values):
    b = np.array(values, bool)
    run = differential(SOURCE, "logic", b, np.zeros(2, bool))
    assert run.args[1].tolist() == [bool(b.any()), bool(b.all())]


def test_f16_sum_accumulates_in_f32(module):
    x = np.full(4096, 1.0, np.float16)
    assert module.half_sum(x)[0] == 4096.0  # an f16 accumulator would stop at 2048


@pytest.mark.parametrize("n", [0, 1, 4095, 4096, 4097, 300001])
def test_float_sum_accuracy(module, n):
    x = np.random.default_rng(n).random(n, dtype=np.float32)
    got = float(module.total(x)[0])
    assert abs(got - float(x.sum(dtype=np.float64))) <= 1e-5 * max(1.0, n)


@pytest.mark.parametrize("n", [0, 1, 5, 4097, 70001])
@pytest.mark.parametrize("kernel,reference", [
    ("prefix", lambda x: np.cumsum(x)),
    ("prefix_ex", lambda x: np.concatenate([[0], np.cumsum(x)[:-1]]) if len(x) else x),
    ("prefix_rev", lambda x: np.cumsum(x[::-1])[::-1]),
])
def test_integer_scans(differential, n, kernel, reference):
    x = np.random.default_rng(n).integers(-10**6, 10**6, n)
    np.testing.assert_array_equal(differential(SOURCE, kernel, x).result, reference(x))


def test_scan_along_axis(differential):
    x = np.random.default_rng(3).integers(-9, 9, (6, 5)).astype(np.int32)
    np.testing.assert_array_equal(differential(SOURCE, "prefix2", x).result, np.cumsum(x, 0))


def _mat_prefix(a, b, c, d):
    acc = np.eye(2, dtype=np.int64)
    qs, total = [], acc
    for m in zip(a, b, c, d):
        acc = acc @ np.array(m, np.int64).reshape(2, 2)
        qs.append(acc[0, 1])
    return np.array(qs, np.int64), acc


@pytest.mark.parametrize("n", [1, 3, 100, 20000])
def test_non_commutative_scan_and_fold_keep_member_order(differential, n):
    """T2: 2x2 matrix products are associative, not commutative: any permutation shows."""
    rng = np.random.default_rng(n)
    a, b, c, d = (rng.integers(-2, 3, n) for _ in range(4))
    q, total = _mat_prefix(a, b, c, d)
    np.testing.assert_array_equal(differential(SOURCE, "mat_scan", a, b, c, d).result, q)
    run = differential(SOURCE, "mat_fold", a, b, c, d, np.zeros(4, np.int64))
    np.testing.assert_array_equal(run.args[4], total.reshape(-1))


def test_welford_tuple_accumulator(module):
    x = np.random.default_rng(5).normal(3.0, 2.0, 10001)
    out = np.zeros(3)
    module.moments(x, out)
    assert out[0] == len(x)
    assert abs(out[1] - x.mean()) < 1e-9 and abs(out[2] - x.var()) < 1e-9


def test_affine_recurrence_with_init(module):
    rng = np.random.default_rng(7)
    a = (rng.random(50000) * 0.5 + 0.5).astype(np.float32)
    b = rng.random(50000).astype(np.float32)
    h, ref = np.float32(0.25), []
    for ai, bi in zip(a, b):
        h = np.float32(h * ai + bi)
        ref.append(h)
    np.testing.assert_allclose(module.recurrence(a, b, 0.25), ref, rtol=1e-5)


@pytest.mark.parametrize("kernel,make", [
    ("total", lambda rng: (rng.random(1 << 20, dtype=np.float32),)),
    ("fprefix", lambda rng: (rng.random(300000, dtype=np.float32),)),
    ("recurrence", lambda rng: ((rng.random(300000) * 0.5 + 0.5).astype(np.float32),
                                rng.random(300000).astype(np.float32), 0.5)),
])
def test_results_do_not_depend_on_the_thread_count(module, kernel, make):
    """Blocks come from the problem size: bit-identical for 1, 2 and 3 threads."""
    args = make(np.random.default_rng(11))
    results = []
    for threads in (1, 2, 3):
        module.set_num_threads(threads)
        results.append(getattr(module, kernel)(*args).copy())
    module.set_num_threads(0)
    assert all(np.array_equal(results[0], r) for r in results[1:])


def test_reduce_combine_signature_is_checked():
    from intentc.driver import frontend

    source = SOURCE + """
@intent.kernel
def bad(x: f32[N]) -> f32[1]:
    return I.reduce(x, combine=affine, identity=0.0)
"""
    with pytest.raises(intentc.CompileError) as info:
        frontend(source, "bad.intent")
    assert "T1" in str(info.value)
