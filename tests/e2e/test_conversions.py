"""Implicit conversions (sema/conversions.py): index and i64 are one type; integer scalars and
extents meeting a float convert to it (rounded to nearest even, as I.cast); a name assigned
a literal takes the dtype of what it meets, in a loop carry too. Compiled vs interpreter vs
NumPy, on the host target (the other targets run the same KIR casts: tests/targets)."""
from __future__ import annotations

import numpy as np
import pytest

SOURCE = """
import intent as I

@intent.kernel
def mean_by_extent(x: f32[N]) -> f32[1]:
    return x[0:1] * 0.0 + I.sum(x) / N

@intent.kernel
def bias_correction(beta1: f32, t: i32, m: f32[N]) -> f32[N]:
    return m / (1.0 - beta1 ** t)

@intent.kernel
def positions(x: f32[N], out: mut f32[N], idx: mut i64[N]):
    for i in I.parallel(x.axis(0)):
        out[i] = x[i] * i
        idx[i] = i

@intent.kernel
def mixed_index(k: i64, x: f32[N], out: mut f32[1]):
    j = k + len(x) - 1
    out[0] = x[j - N]

@intent.kernel
def compare_with_extent(x: f64[N]) -> bool[N]:
    return x < N

@intent.kernel
def big_integers(n: i64, out: mut f32[2], out64: mut f64[1]):
    out[0] = n
    out[1] = n * 1.0
    out64[0] = n

@intent.kernel
def f64_accumulator(x: f64[R, C], out: mut f64[R]):
    for r in I.parallel(x.axis(0)):
        acc = 0
        for c in x.axis(1):
            acc = acc + x[r, c]
        out[r] = acc

@intent.kernel
def nested_carry(x: f64[N], out: mut f64[1]):
    total = 0.0
    for i in range(3):
        for j in x.axis(0):
            total = total + x[j] * 0.1
    out[0] = total

@intent.kernel
def literal_meets_f64(x: f64[N]) -> f64[N]:
    t = 0.1
    return x * t

@intent.kernel
def math_of_integers(x: f64[N], scalars: mut f32[2]) -> f64[N]:
    h = N // 2
    scalars[0] = 1.0 / I.sqrt(h)
    scalars[1] = I.atan2(h, 3.0)
    return I.pow(x, h) + I.hypot(x, N)

@intent.fn
def match(b1: i32, b2: i32) -> i32:
    return 1 if b1 + b2 == 3 else 0

@intent.kernel
def literal_choices(seq: i32[N], out: mut i32[N], f: mut f64[N]):
    for i in I.parallel(range(N)):
        out[i] = seq[i] + (1 if seq[i] == 2 else 0) + match(seq[i], 1)
        f[i] = 1.5 if seq[i] > 1 else 0.1

@intent.kernel
def typed_name_takes_literals(x: i32[N]) -> i32[N]:
    m: i32 = 0
    if N > 2:
        m = 1
    return x + m
"""


def test_integer_scalars_and_extents_meet_floats(differential):
    x = np.arange(1, 10, dtype=np.float32)
    assert differential(SOURCE, "mean_by_extent", x).result.tolist() == [5.0]
    m = np.linspace(0, 1, 5).astype(np.float32)
    run = differential(SOURCE, "bias_correction", np.float32(0.9), np.int32(3), m)
    np.testing.assert_allclose(run.result, m / (np.float32(1) - np.float32(0.9) ** np.float32(3)), rtol=2e-7)
    run = differential(SOURCE, "positions", x, np.zeros(9, np.float32), np.zeros(9, np.int64))
    np.testing.assert_array_equal(run.args[1], x * np.arange(9))
    np.testing.assert_array_equal(run.args[2], np.arange(9))
    run = differential(SOURCE, "mixed_index", np.int64(3), x, np.zeros(1, np.float32))
    assert run.args[2].tolist() == [x[2]]
    y = np.array([0.5, 2.5, 3.0, 7.0])
    np.testing.assert_array_equal(differential(SOURCE, "compare_with_extent", y).result, y < 4)


@pytest.mark.parametrize("n", [0, 1, -7, 2 ** 24 + 1, 2 ** 53 + 1, -(2 ** 63), 2 ** 63 - 1])
def test_integer_to_float_rounds_to_nearest_even(differential, n):
    run = differential(SOURCE, "big_integers", np.int64(n), np.zeros(2, np.float32), np.zeros(1))
    assert run.args[1].tolist() == [float(np.float32(n))] * 2
    assert run.args[2].tolist() == [float(np.float64(n))]


def test_a_literal_takes_the_dtype_it_meets(differential):
    x = np.arange(12, dtype=np.float64).reshape(3, 4) + 0.1
    run = differential(SOURCE, "f64_accumulator", x, np.zeros(3))
    want = np.zeros(3)
    for c in range(4):
        want = want + x[:, c]
    np.testing.assert_array_equal(run.args[1], want)  # summed in f64, in order
    v = np.arange(5, dtype=np.float64) + 0.3
    run = differential(SOURCE, "nested_carry", v, np.zeros(1))
    total = 0.0
    for _ in range(3):
        for value in v:
            total = total + value * 0.1
    assert run.args[1].tolist() == [total]
    run = differential(SOURCE, "literal_meets_f64", v)
    np.testing.assert_array_equal(run.result, v * 0.1)  # f64's 0.1, not f32's


def test_integer_scalars_convert_in_math_builtins(differential):
    # I.sqrt(hs) (llm.c's attention scale): f32, as a literal argument would be; with a float
    # partner the partner's dtype (I.pow(x, h) is f64 for an f64 x)
    x = np.linspace(0.5, 2.0, 7)
    run = differential(SOURCE, "math_of_integers", x, np.zeros(2, np.float32))
    assert run.args[1][0] == np.float32(1.0) / np.sqrt(np.float32(3))  # sqrt is correctly rounded
    np.testing.assert_allclose(run.args[1][1], np.arctan2(3.0, 3.0), rtol=1e-7)
    np.testing.assert_allclose(run.result, x ** 3 + np.hypot(x, 7.0), rtol=1e-15)


def test_a_literal_assigned_to_a_typed_name_takes_its_dtype(differential):
    x = np.arange(4, dtype=np.int32)
    run = differential(SOURCE, "typed_name_takes_literals", x)
    assert run.result.dtype == np.int32 and run.result.tolist() == [1, 2, 3, 4]
    from intentc.diagnostics import CompileError
    from intentc.driver import frontend

    bad = "import intent as I\n\n@intent.kernel\ndef k(x: i32[N]):\n    m: i32 = 0\n    m = 1.5\n"
    with pytest.raises(CompileError, match="'m' changes type from i32 to f32"):
        frontend(bad, "bad.intent")


def test_a_choice_of_two_literals_takes_the_dtype_it_meets(differential):
    # `1 if c else 0` is i32 beside an i32 and as an i32 helper's result; 0.1 stored into
    # f64 is f64's 0.1
    seq = np.array([0, 1, 2, 3], np.int32)
    run = differential(SOURCE, "literal_choices", seq, np.zeros(4, np.int32), np.zeros(4))
    assert run.args[1].dtype == np.int32 and run.args[1].tolist() == [0, 1, 4, 3]
    assert run.args[2].tolist() == [0.1, 0.1, 1.5, 1.5]
