"""Python spellings in kernels (python_names.py) and I.mean / I.var / I.std: compiled vs the
interpreter vs NumPy. ``range`` is ``I.domain`` (D1), ``min``/``max`` of one tensor reduce it
(T1) and of several values compare element-wise with broadcasting (S2), ``abs`` is ``I.abs``."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

SOURCE = """
import intent as I

@intent.kernel
def clipped(x: f32[N], lo: f32, hi: f32) -> f32[N]:
    return min(max(x, lo), hi)

@intent.kernel
def spread(a: f32[N], b: f32[N], c: f32[1]) -> f32[N]:
    return max(a, b, c) - min(a, b, c) + abs(a)

@intent.kernel
def running(x: f32[N], out: mut f32[N]):
    acc = 0.0
    for i in range(len(x)):
        acc = acc + x[i]
        out[i] = acc

@intent.kernel
def every_other(x: f32[N], out: mut f32[N]):
    for i in I.parallel(range(1, N, 2)):
        out[i] = x[i] * 2.0

@intent.kernel
def extremes(x: f32[R, C]) -> f32[2]:
    big = max(x)
    small = min(x)
    return I.where(I.indices(range(2)) == 0, big, small)

@intent.kernel
def literal_extremes(x: f32[N]) -> f32[N]:
    return x * max(2.0, 3.0, -1.0) + min(4.0, 1.5)

@intent.kernel
def row_stats(x: f32[R, C]) -> (f32[R], f32[R], f32[R]):
    return I.mean(x, axis=1), I.var(x, axis=1), I.std(x, axis=1, ddof=1)

@intent.kernel
def column_stats(x: f32[R, C]) -> (f32[1, C], f64[C]):
    return I.mean(x, axis=0, keepdims=True), I.var(x, axis=0, acc=f64)

@intent.kernel
def whole_mean(x: i32[R, C]) -> f64[1, 1]:
    return I.mean(x, keepdims=True, acc=f64)
"""


def test_min_max_abs_compare_element_wise(differential):
    rng = np.random.default_rng(3)
    x = rng.uniform(-3, 3, 37).astype(np.float32)
    run = differential(SOURCE, "clipped", x, np.float32(-1.0), np.float32(2.0))
    np.testing.assert_array_equal(run.result, np.minimum(np.maximum(x, -1.0), 2.0))
    a, b = (rng.standard_normal(19).astype(np.float32) for _ in range(2))
    c = np.array([0.25], np.float32)  # broadcast along N (S2)
    run = differential(SOURCE, "spread", a, b, c)
    want = np.maximum(np.maximum(a, b), c) - np.minimum(np.minimum(a, b), c) + np.abs(a)
    np.testing.assert_array_equal(run.result, want)


def test_literal_arguments_fold(differential):
    x = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(differential(SOURCE, "literal_extremes", x).result, x * 3.0 + 1.5)


@pytest.mark.parametrize("n", [0, 1, 10])
def test_range_is_a_domain(differential, n):
    x = np.arange(1, n + 1, dtype=np.float32)
    run = differential(SOURCE, "running", x, np.zeros(n, np.float32))
    np.testing.assert_array_equal(run.args[1], np.cumsum(x, dtype=np.float32))
    run = differential(SOURCE, "every_other", x, np.zeros(n, np.float32))
    want = np.zeros(n, np.float32)
    want[1::2] = x[1::2] * 2
    np.testing.assert_array_equal(run.args[1], want)


def test_max_min_of_one_tensor_reduce_it(differential):
    x = np.random.default_rng(4).standard_normal((6, 9)).astype(np.float32)
    np.testing.assert_array_equal(differential(SOURCE, "extremes", x).result, [x.max(), x.min()])


@pytest.mark.parametrize("shape", [(4, 300), (1, 7), (3, 1)])
def test_mean_var_std_match_numpy(differential, shape):
    x = np.random.default_rng(5).standard_normal(shape).astype(np.float32) + 3
    mean, var, std = differential(SOURCE, "row_stats", x).result
    np.testing.assert_allclose(mean, x.mean(1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(var, x.var(1), rtol=1e-4, atol=1e-6)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # C = 1: NumPy warns of 0 degrees of freedom
        want_std = x.astype(np.float64).std(1, ddof=1)
    np.testing.assert_allclose(std, want_std, rtol=1e-4, atol=1e-6, equal_nan=True)  # C = 1: 0/0 is NaN
    col_mean, col_var = differential(SOURCE, "column_stats", x).result
    assert col_mean.shape == (1, shape[1]) and col_var.dtype == np.float64
    np.testing.assert_allclose(col_mean, x.mean(0, keepdims=True), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(col_var, x.astype(np.float64).var(0), rtol=1e-9, atol=1e-12)


def test_mean_of_integers_in_f64(differential):
    x = np.random.default_rng(6).integers(-1000, 1000, (5, 8)).astype(np.int32)
    assert differential(SOURCE, "whole_mean", x).result.tolist() == [[x.mean()]]
