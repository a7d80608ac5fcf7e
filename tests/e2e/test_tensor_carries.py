"""Tensor values carried by ordered loops (O2, tensor_carries.py): value semantics per
iteration, one buffer per carried tensor, compiled vs interpreter vs NumPy."""
from __future__ import annotations

import numpy as np

from intentc.diagnostics import CompileError
from intentc.driver import frontend

SOURCE = """
import intent as I

@intent.kernel
def decay(x: f32[N], steps: i64) -> f32[N]:
    A = x
    for t in I.domain(0, steps):
        A = 0.5 * A + 0.25 * x
    return A

@intent.kernel
def transpose_steps(x: f32[N, N], steps: i64) -> f32[N, N]:
    A = x
    for t in I.domain(0, steps):
        A = A.transpose() + 1.0
    return A

@intent.kernel
def normalise_steps(x: f32[N], steps: i64) -> f32[N]:
    A = x
    for t in I.domain(0, steps):
        A = A / I.sum(A) + x
    return A

@intent.kernel
def halve_until_small(x: f32[N]) -> f32[N]:
    A = x
    while I.max(A) > 1.0:
        A = A * 0.5
    return A

@intent.kernel
def two_carries(x: f32[N], steps: i64, out: mut f32[N]):
    A = x
    B = x * 0.0
    for t in I.domain(0, steps):
        B = A + B
        A = A * 2.0
    out[:] = A + B

@intent.fn
def halve_thrice(x: f32[N]) -> f32[N]:
    A = x
    for t in I.domain(0, 3):
        A = 0.5 * A
    return A

@intent.kernel
def through_helper(x: f32[N]) -> f32[N]:
    return halve_thrice(x) + 1.0

@intent.kernel
def per_point(x: f32[R, C], steps: i64, out: mut f32[R, C]):
    for r in I.parallel(x.axis(0)):
        row = x[r, :]
        for t in I.domain(0, steps):
            row = row * row
        out[r, :] = row
"""


def _f32(seed, *shape):
    return np.random.default_rng(seed).uniform(0.5, 1.5, shape).astype(np.float32)


def test_a_carried_tensor_has_value_semantics(differential):
    x = _f32(1, 10)
    want = x.copy()
    for _ in range(5):
        want = np.float32(0.5) * want + np.float32(0.25) * x
    np.testing.assert_array_equal(differential(SOURCE, "decay", x, 5).result, want)
    np.testing.assert_array_equal(differential(SOURCE, "decay", x, 0).result, x)


def test_a_carried_update_that_reads_other_elements_sees_the_previous_iteration(differential):
    x = _f32(2, 4, 4)
    want = x.copy()
    for _ in range(3):
        want = want.T + np.float32(1)
    np.testing.assert_array_equal(differential(SOURCE, "transpose_steps", x, 3).result, want)
    y = _f32(3, 7)
    want = y.astype(np.float64)
    for _ in range(4):
        want = want / want.sum() + y
    np.testing.assert_allclose(differential(SOURCE, "normalise_steps", y, 4).result, want, rtol=1e-5)


def test_while_loops_and_several_carries(differential):
    x = _f32(4, 6) * 8
    want = x.copy()
    while want.max() > 1:
        want = want * np.float32(0.5)
    np.testing.assert_array_equal(differential(SOURCE, "halve_until_small", x).result, want)
    a, b = x.copy(), np.zeros_like(x)
    for _ in range(3):
        b = a + b
        a = a * np.float32(2)
    run = differential(SOURCE, "two_carries", x, 3, np.zeros_like(x))
    np.testing.assert_array_equal(run.args[2], a + b)


def test_a_carry_inside_a_helper(differential):
    x = _f32(7, 5)
    np.testing.assert_array_equal(differential(SOURCE, "through_helper", x).result, x * np.float32(0.125) + 1)


def test_a_carry_inside_a_parallel_point_is_its_own(differential):
    x = _f32(5, 3, 5)
    run = differential(SOURCE, "per_point", x, 2, np.zeros_like(x))
    np.testing.assert_array_equal(run.args[2], (x * x) * (x * x))


def test_a_carried_tensor_keeps_its_dtype_and_shape_o2(differential):
    for body in ("A = I.cast(A, f64)", "A = A.reshape([2, 2])"):
        source = ("import intent as I\n\n@intent.kernel\ndef k(x: f32[4]) -> f32[4]:\n    A = x\n"
                  f"    for t in I.domain(0, 3):\n        {body}\n    return A\n")
        try:
            frontend(source, "carry.intent")
        except CompileError as exc:
            assert exc.diagnostics[0].rule == "O2" and "changes type" in exc.diagnostics[0].message
        else:
            raise AssertionError("accepted")
    # A run-time extent that changes fails the call (INTENT_E_SHAPE).
    source = ("import intent as I\n\n@intent.kernel\ndef k(x: f32[N], m: i64) -> f32[N]:\n    A = x\n"
              "    for t in I.domain(0, 3):\n        A = A[0:m]\n    return A\n")
    assert differential(source, "k", _f32(6, 4), 4).error is None
    run = differential(source, "k", _f32(6, 4), 2)
    assert run.error is not None and run.error.code == -4
