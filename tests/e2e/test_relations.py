"""Domains, subregions, provenance and shape relations (spec §1, §1.1, §2), end to end:
compiled vs the reference interpreter (the ``differential`` fixture) vs NumPy."""
from __future__ import annotations

import numpy as np
import pytest

import intentc

def _error(run, code: int):
    """Both sides raised (the fixture checks they agree); return the compiled error."""
    assert isinstance(run.error, intentc.KernelError), f"expected a KernelError {code}, got {run.error!r}"
    assert run.error.code == code, str(run.error)
    return run.error


WINDOW = """
import intent as I

@intent.kernel
def window(x: f32[N], lo: index, hi: index, ids: mut index[M], ords: mut index[M], vals: mut f32[M]):
    w = x.axis(0)[lo:hi]
    coords = I.indices(w)
    for j in I.parallel(ids.axis(0)):
        ids[j] = coords[j]
    for k, i in enumerate(w):
        ords[k] = k
        vals[k] = x[i]

@intent.kernel
def nested(x: f32[N], out: mut index[4]):
    outer = x.axis(0)[2:9]
    inner = outer[3:7]
    c = I.indices(inner)
    for j in I.parallel(out.axis(0)):
        out[j] = c[j]

@intent.kernel
def stepped(n: index, out: mut index[K]):
    d = I.domain(-7, n, 3)
    t: index = 0
    for i in d:
        out[t] = i
        t = t + 1

@intent.kernel
def domain_len(b: index, e: index, s: index, out: mut index[3]):
    d = I.domain(b, e, s)
    out[0] = len(d)
    out[1] = I.cast(b in d, index)
    out[2] = I.cast(e in d, index)
"""


def test_window_iterates_source_coordinates(differential):
    """D4, D6: axis[3:7] iterates 3..6; I.indices gives [3, 4, 5, 6]; enumerate gives (0,3)..(3,6)."""
    x = np.arange(10, dtype=np.float32) * 10
    ids, ords, vals = (np.zeros(4, np.int64), np.zeros(4, np.int64), np.zeros(4, np.float32))
    run = differential(WINDOW, "window", x, 3, 7, ids, ords, vals)
    assert run.error is None
    ids_c, ords_c, vals_c = run.args[3], run.args[4], run.args[5]
    assert ids_c.tolist() == [3, 4, 5, 6]
    assert ords_c.tolist() == [0, 1, 2, 3]
    assert vals_c.tolist() == [30.0, 40.0, 50.0, 60.0]


@pytest.mark.parametrize("lo,hi", [(5, 2), (0, 11), (-1, 3), (10, 11)])
def test_subregion_out_of_range_fails_and_writes_nothing(differential, lo, hi):
    """D5: bounds are never clamped; the failure names the bounds and values; nothing is written."""
    x = np.arange(10, dtype=np.float32)
    ids = np.full(4, -9, np.int64)
    run = differential(WINDOW, "window", x, lo, hi, ids, ids.copy(), np.zeros(4, np.float32))
    error = _error(run, -6)
    assert f"[{lo}, {hi})" in str(error) and "[0, 10)" in str(error) and "D5" in str(error)
    assert (run.args[3] == -9).all() and (run.interpreted_args[3] == -9).all()


def test_empty_subregion_is_legal(differential):
    """D5: begin == end is an empty subregion."""
    differential(WINDOW, "window", np.zeros(10, np.float32), 4, 4, np.zeros(0, np.int64), np.zeros(0, np.int64),
                 np.zeros(0, np.float32))


def test_subregion_of_subregion_keeps_source_coordinates(differential):
    """D4, D6, C3: a slice of a slice takes source coordinates (no renumbering): [2, 9)[3:7] is 3..6."""
    run = differential(WINDOW, "nested", np.zeros(12, np.float32), np.zeros(4, np.int64))
    assert run.args[1].tolist() == [3, 4, 5, 6]


def test_subregion_of_subregion_must_lie_within_it(differential):
    """D4, D5: [2, 9)[1:5] starts before its source domain."""
    source = WINDOW.replace("inner = outer[3:7]", "inner = outer[1:5]")
    _error(differential(source, "nested", np.zeros(12, np.float32), np.zeros(4, np.int64)), -6)


def test_stepped_domain_with_negative_begin(differential):
    """D1, D2, D3: runtime bounds, negative ranges, positive step, ordered iteration."""
    run = differential(WINDOW, "stepped", 8, np.zeros(5, np.int64))
    assert run.args[1].tolist() == [-7, -4, -1, 2, 5]


@pytest.mark.parametrize("b,e,s", [(0, 10, 3), (5, 5, 1), (-3, 4, 2), (9, 2, 1)])
def test_domain_length_and_membership(differential, b, e, s):
    run = differential(WINDOW, "domain_len", b, e, s, np.zeros(3, np.int64))
    members = list(range(b, e, s))
    assert run.args[3].tolist() == [len(members), int(b in members), int(e in members)]


@pytest.mark.parametrize("step", [0, -2])
def test_runtime_domain_step_is_checked(differential, step):
    """D1: a step that is not positive fails at run time (INTENT_E_DOMAIN)."""
    _error(differential(WINDOW, "domain_len", 0, 5, step, np.zeros(3, np.int64)), -7)


SHAPES = """
import intent as I

@intent.kernel
def add(a: f32[M], b: f32[K]) -> f32[M]:
    return a + b

@intent.kernel
def add2(a: f32[R, 1], b: f32[C]) -> f32[R, C]:
    return a + b

@intent.kernel
def reshape23(x: f32[2, 3]) -> f32[2, 3]:
    return x.reshape([-1, 3])

@intent.kernel
def interleave(a: i32[N], b: i32[N]) -> i32[2 * N]:
    return I.join(a, b).reshape([2 * N])

@intent.kernel
def transpose(x: i32[R, C]) -> i32[C, R]:
    return x.transpose()

@intent.kernel
def permute3(x: i32[A, B, C]) -> i32[C, A, B]:
    return x.permute([2, 0, 1])

@intent.kernel
def flat(x: i64[R, C]) -> i64[R * C]:
    return x.reshape([-1])

@intent.kernel
def infer(x: i64[R, C], k: index) -> i64[R, C]:
    return x.reshape([-1, k]).reshape([R, C])

@intent.kernel
def rows(x: i32[R, C], r: index) -> i32[C]:
    return x[r, :] * 2
"""


@pytest.mark.parametrize("m,k", [(0, 1), (4, 1), (4, 4), (1, 1)])
def test_broadcast_size_one_and_zero(differential, m, k):
    """S2: [0] x [1] -> [0]; [4] x [1] -> [4]."""
    a = np.arange(m, dtype=np.float32)
    b = np.arange(k, dtype=np.float32) + 0.5
    run = differential(SHAPES, "add", a, b)
    np.testing.assert_array_equal(run.result, a + b)


@pytest.mark.parametrize("m,k", [(0, 3), (4, 3), (2, 0)])
def test_dynamic_broadcast_mismatch_fails_at_run_time(differential, m, k):
    """S2, S3: 0 with 3, 4 with 3 are incompatible; the check runs before anything is written."""
    _error(differential(SHAPES, "add", np.zeros(m, np.float32), np.zeros(k, np.float32)), -4)


def test_broadcast_column_with_row(differential):
    """S2: [4, 1] x [3] -> [4, 3]."""
    a = np.arange(4, dtype=np.float32).reshape(4, 1)
    b = np.arange(3, dtype=np.float32)
    run = differential(SHAPES, "add2", a, b)
    np.testing.assert_array_equal(run.result, a + b)


def test_reshape_with_inferred_extent(differential):
    """S4: [2, 3] -> [-1, 3] keeps row-major order."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(differential(SHAPES, "reshape23", x).result, x)


def test_reshape_inferred_from_zero_elements_is_rejected():
    """S4: [0, 3] -> [-1, 0] has no unique answer."""
    source = """
import intent as I

@intent.kernel
def bad(x: f32[0, 3]) -> f32[0, 3]:
    return x.reshape([-1, 0]).reshape([0, 3])
"""
    with pytest.raises(intentc.CompileError) as info:
        from intentc.driver import frontend

        frontend(source, "bad.intent")
    assert "S4" in str(info.value)


def test_reshape_dynamic_zero_inference_fails_at_run_time(differential):
    _error(differential(SHAPES, "infer", np.zeros((0, 3), np.int64), 0), -4)


@pytest.mark.parametrize("k", [1, 2, 3, 6])
def test_reshape_dynamic_inference(differential, k):
    x = np.arange(12, dtype=np.int64).reshape(2, 6)
    if 12 % k:
        return
    np.testing.assert_array_equal(differential(SHAPES, "infer", x, k).result, x)


def test_reshape_remainder_fails(differential):
    _error(differential(SHAPES, "infer", np.zeros((2, 3), np.int64), 4), -4)


def test_join_then_reshape_interleaves(differential):
    """S6: I.join(a, b).reshape([2N]) equals NumPy's interleave."""
    a = np.arange(5, dtype=np.int32)
    b = -np.arange(5, dtype=np.int32) - 10
    expected = np.empty(10, np.int32)
    expected[0::2], expected[1::2] = a, b
    np.testing.assert_array_equal(differential(SHAPES, "interleave", a, b).result, expected)


def test_join_needs_one_shape(differential):
    _error(differential(SHAPES, "interleave", np.zeros(3, np.int32), np.zeros(4, np.int32)), -4)


def test_transpose_and_permute(differential):
    """S5: explicit axis permutations, strided inputs included."""
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    np.testing.assert_array_equal(differential(SHAPES, "transpose", x).result, x.T)
    np.testing.assert_array_equal(differential(SHAPES, "transpose", x[:, ::2]).result, x[:, ::2].T)
    y = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    np.testing.assert_array_equal(differential(SHAPES, "permute3", y).result, np.transpose(y, (2, 0, 1)))


def test_flatten_reshape(differential):
    x = np.arange(20, dtype=np.int64).reshape(4, 5)
    np.testing.assert_array_equal(differential(SHAPES, "flat", x).result, x.reshape(-1))
    np.testing.assert_array_equal(differential(SHAPES, "flat", x.T).result, x.T.reshape(-1))


def test_row_view(differential):
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    np.testing.assert_array_equal(differential(SHAPES, "rows", x, 1).result, x[1] * 2)
    _error(differential(SHAPES, "rows", x, 3), -6)


def test_named_extents_must_agree(differential):
    """S1: the same extent name is one runtime value, checked at the call."""
    error = _error(differential(WINDOW, "window", np.zeros(10, np.float32), 0, 4, np.zeros(4, np.int64),
                                np.zeros(3, np.int64), np.zeros(4, np.float32)), -4)
    assert "extent M" in str(error)
