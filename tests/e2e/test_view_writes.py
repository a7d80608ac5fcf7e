"""Writes through views of `mut` tensors and buffers, and slice assignment (M1, M2, M4, C4, S2, D5).

Each kernel runs compiled and in the reference interpreter (the ``differential`` fixture
compares them) and the result is compared with NumPy: llm.c-style row-pointer writes in
layernorm and softmax loops, slice assignments with broadcasting, writes through reshape,
transpose and permute, in-place stencil updates (``y[1:N] = ...``) whose right-hand side
reads what is being written, and the run-time checks (D5 bounds of a view, S2 extents)."""
from __future__ import annotations

import numpy as np
import pytest

from intentc.driver import frontend
from intentc.lower import program as P
from intentc.lower.pipeline import lower

SOURCE = """
import intent as I

@intent.kernel
def layernorm(x: f32[B, T, C], w: f32[C], bias: f32[C], out: mut f32[B, T, C],
              mean: mut f32[B, T], rstd: mut f32[B, T]):
    for b, t in I.parallel(x.axis(0), x.axis(1)):
        xr = x[b, t, :]
        m = I.sum(xr) / I.cast(C, f32)
        v = I.sum((xr - m) * (xr - m)) / I.cast(C, f32)
        s = 1.0 / I.sqrt(v + 1e-5)
        o = out[b, t, :]
        for c in o.axis(0):
            o[c] = (xr[c] - m) * s * w[c] + bias[c]
        mean[b, t] = m
        rstd[b, t] = s

@intent.kernel
def softmax_rows(logits: f32[R, V], probs: mut f32[R, V]):
    for r in I.parallel(logits.axis(0)):
        row = probs[r, :]
        m = I.max(logits[r, :])
        total: f32 = 0.0
        for c in row.axis(0):
            row[c] = I.exp(logits[r, c] - m)
            total = total + row[c]
        for c in row.axis(0):
            row[c] = row[c] / total

@intent.kernel
def softmax_whole_row(logits: f32[R, V], probs: mut f32[R, V]):
    for r in I.parallel(logits.axis(0)):
        row = probs[r, :]
        row[:] = I.exp(logits[r, :] - I.max(logits[r, :]))
        row[:] = row / I.sum(row)

@intent.kernel
def scale_rows(x: f32[R, C], out: mut f32[R, C]):
    for r in I.parallel(x.axis(0)):
        out[r, :] = x[r, :] * 2.0

@intent.kernel
def add_bias(C: mut f32[M, N], bias: f32[N]):
    C[:, :] = bias

@intent.kernel
def add_column(C: mut f32[M, N], col: f32[M, 1]):
    C[:, :] = C + col

@intent.kernel
def corner(out: mut f32[M, N], x: f32[K, L], a: i64, b: i64):
    out[a:b, 1:] = x * 3.0

@intent.kernel
def fill_scalar(out: mut f32[M, N], v: f32):
    out[1, :] = v

@intent.kernel
def shift(y: mut f32[N], r: f32[N]):
    y[1:N] = r[0:N - 1]

@intent.kernel
def shift_self(y: mut f32[N]):
    y[1:N] = y[0:N - 1]

@intent.kernel
def double_self(y: mut f32[N]):
    y[:] = y * 2.0

@intent.kernel
def double_tail(y: mut f32[N]):
    y[1:N] = y[1:N] * 2.0

@intent.kernel
def jacobi_step(A: mut f32[N], B: mut f32[N]):
    B[1:N - 1] = 0.33333 * (A[0:N - 2] + A[1:N - 1] + A[2:N])
    A[1:N - 1] = B[1:N - 1]

@intent.kernel
def through_transpose(out: mut f32[M, N], x: f32[N, M]):
    t = out.transpose()
    for i in I.parallel(x.axis(0)):
        for j in x.axis(1):
            t[i, j] = x[i, j] + 1.0

@intent.kernel
def through_permute(out: mut f32[A, B, C], x: f32[B, C, A]):
    p = out.permute([1, 2, 0])
    for i, j, k in I.parallel(x.axis(0), x.axis(1), x.axis(2)):
        p[i, j, k] = x[i, j, k]

@intent.kernel
def through_reshape(out: mut f32[M, N], x: f32[K]):
    flat = out.reshape([-1])
    for k in I.parallel(x.axis(0)):
        flat[k] = x[k] * 0.5

@intent.kernel
def through_reshape_2d(out: mut f32[M], x: f32[R, C]):
    grid = out.reshape([R, C])
    for i, j in I.parallel(x.axis(0), x.axis(1)):
        grid[i, j] = x[i, j] - 1.0

@intent.kernel
def reshape_slice_assign(out: mut f32[M, N], x: f32[K]):
    out.reshape([-1])[:] = x

@intent.kernel
def transpose_slice_assign(out: mut f32[M, N], x: f32[N, M]):
    out.transpose()[:, :] = x

@intent.kernel
def view_of_view(out: mut f32[M, N], v: f32):
    block = out[1:M, :]
    row = block[0, 1:]
    for c in row.axis(0):
        row[c] = v + I.cast(c, f32)

@intent.kernel
def buffer_rows(x: f32[R, C]) -> f32[R]:
    buf = I.buffer(f32, [R, C], fill=0.0)
    for r in I.parallel(x.axis(0)):
        br = buf[r, :]
        for c in br.axis(0):
            br[c] = x[r, c] * x[r, c]
    return I.sum(buf, axis=1)

@intent.kernel
def write_index(out: mut f32[N], i: i64, v: f32):
    o = out[1:N]
    o[i] = v

@intent.kernel
def accumulate(out: mut f32[R, C], x: f32[R, C]):
    for r in I.parallel(x.axis(0)):
        o = out[r, :]
        for c in o.axis(0):
            o[c] += x[r, c]
        out[r, :] += x[r, :]
"""


@pytest.fixture(scope="module")
def rng():
    return np.random.default_rng(16)


def _f32(rng, *shape):
    return rng.uniform(-1.0, 1.0, shape).astype(np.float32)


def test_layernorm_writes_through_row_views(differential, rng):
    B, T, C = 2, 3, 37
    x, w, bias = _f32(rng, B, T, C), _f32(rng, C), _f32(rng, C)
    out, mean, rstd = (np.zeros(s, np.float32) for s in ((B, T, C), (B, T), (B, T)))
    run = differential(SOURCE, "layernorm", x, w, bias, out, mean, rstd)
    m = x.astype(np.float64).mean(-1, keepdims=True)
    s = 1.0 / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(run.args[3], (x - m) * s * w + bias, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(run.args[4], m[..., 0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(run.args[5], s[..., 0], rtol=1e-4)


@pytest.mark.parametrize("kernel", ["softmax_rows", "softmax_whole_row"])
def test_softmax_reads_its_own_writes_through_the_row(differential, rng, kernel):
    logits = _f32(rng, 3, 50) * 4
    run = differential(SOURCE, kernel, logits, np.zeros((3, 50), np.float32))
    e = np.exp(logits.astype(np.float64) - logits.max(1, keepdims=True))
    np.testing.assert_allclose(run.args[1], e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_slice_assignments_with_broadcasting(differential, rng):
    x = _f32(rng, 4, 6)
    run = differential(SOURCE, "scale_rows", x, np.zeros((4, 6), np.float32))
    np.testing.assert_array_equal(run.args[1], x * np.float32(2.0))
    c, bias = _f32(rng, 3, 5), _f32(rng, 5)
    run = differential(SOURCE, "add_bias", c, bias)
    np.testing.assert_array_equal(run.args[0], np.broadcast_to(bias, (3, 5)))
    col = _f32(rng, 3, 1)
    run = differential(SOURCE, "add_column", c, col)
    np.testing.assert_array_equal(run.args[0], c + col)
    out = np.zeros((5, 4), np.float32)
    x = _f32(rng, 2, 3)
    run = differential(SOURCE, "corner", out, x, 1, 3)
    want = out.copy()
    want[1:3, 1:] = x * np.float32(3.0)
    np.testing.assert_array_equal(run.args[0], want)
    run = differential(SOURCE, "corner", out, _f32(rng, 1, 3), 2, 5)  # a row broadcast down the slice
    assert run.error is None
    run = differential(SOURCE, "fill_scalar", np.zeros((3, 4), np.float32), np.float32(7))
    np.testing.assert_array_equal(run.args[0], [[0] * 4, [7] * 4, [0] * 4])


def test_slice_assignment_checks_extents_and_bounds(differential, rng):
    out = np.zeros((5, 4), np.float32)
    run = differential(SOURCE, "corner", out, _f32(rng, 3, 3), 1, 3)  # 3 rows into a slice of 2 (S2)
    assert run.error is not None and run.error.code == -4
    np.testing.assert_array_equal(run.args[0], out)  # nothing written
    run = differential(SOURCE, "corner", out, _f32(rng, 2, 3), 4, 6)  # past the end: never clamped (D5)
    assert run.error is not None and run.error.code == -6
    run = differential(SOURCE, "write_index", np.zeros(4, np.float32), 3, np.float32(1))  # outside the view
    assert run.error is not None and run.error.code == -6
    run = differential(SOURCE, "write_index", np.zeros(4, np.float32), 2, np.float32(1))
    np.testing.assert_array_equal(run.args[0], [0, 0, 0, 1])


def test_in_place_stencils_read_the_value_before_the_assignment(differential, rng):
    y, r = _f32(rng, 9), _f32(rng, 9)
    run = differential(SOURCE, "shift", y, r)
    np.testing.assert_array_equal(run.args[0], np.concatenate([y[:1], r[:-1]]))
    run = differential(SOURCE, "shift_self", y)
    np.testing.assert_array_equal(run.args[0], np.concatenate([y[:1], y[:-1]]))
    run = differential(SOURCE, "double_self", y)
    np.testing.assert_array_equal(run.args[0], y * np.float32(2))
    run = differential(SOURCE, "double_tail", y)
    np.testing.assert_array_equal(run.args[0], np.concatenate([y[:1], y[1:] * np.float32(2)]))
    a, b = _f32(rng, 12), np.zeros(12, np.float32)
    run = differential(SOURCE, "jacobi_step", a, b)
    want_b = b.copy()
    want_b[1:-1] = np.float32(0.33333) * (a[:-2] + a[1:-1] + a[2:])
    want_a = a.copy()
    want_a[1:-1] = want_b[1:-1]
    np.testing.assert_array_equal(run.args[1], want_b)
    np.testing.assert_array_equal(run.args[0], want_a)


def test_writes_through_transpose_permute_and_reshape(differential, rng):
    x = _f32(rng, 4, 3)
    run = differential(SOURCE, "through_transpose", np.zeros((3, 4), np.float32), x)
    np.testing.assert_array_equal(run.args[0], (x + np.float32(1)).T)
    x3 = _f32(rng, 3, 4, 2)
    run = differential(SOURCE, "through_permute", np.zeros((2, 3, 4), np.float32), x3)
    np.testing.assert_array_equal(run.args[0], np.transpose(x3, (2, 0, 1)))
    flat = _f32(rng, 12)
    run = differential(SOURCE, "through_reshape", np.zeros((3, 4), np.float32), flat)
    np.testing.assert_array_equal(run.args[0], (flat * np.float32(0.5)).reshape(3, 4))
    grid = _f32(rng, 3, 5)
    run = differential(SOURCE, "through_reshape_2d", np.zeros(15, np.float32), grid)
    np.testing.assert_array_equal(run.args[0], (grid - np.float32(1)).reshape(-1))
    run = differential(SOURCE, "reshape_slice_assign", np.zeros((3, 4), np.float32), flat)
    np.testing.assert_array_equal(run.args[0], flat.reshape(3, 4))
    run = differential(SOURCE, "transpose_slice_assign", np.zeros((3, 4), np.float32), x)
    np.testing.assert_array_equal(run.args[0], x.T)
    run = differential(SOURCE, "through_reshape", np.zeros((3, 4), np.float32), _f32(rng, 13))
    assert run.error is not None and run.error.code == -6  # index 12 is outside the reshaped view


def test_views_of_views_buffers_and_updates(differential, rng):
    run = differential(SOURCE, "view_of_view", np.zeros((3, 4), np.float32), np.float32(10))
    want = np.zeros((3, 4), np.float32)
    want[1, 1:] = [10, 11, 12]
    np.testing.assert_array_equal(run.args[0], want)
    x = _f32(rng, 5, 7)
    run = differential(SOURCE, "buffer_rows", x)
    np.testing.assert_allclose(run.result, (x.astype(np.float64) ** 2).sum(1), rtol=1e-5)
    out = _f32(rng, 5, 7)
    run = differential(SOURCE, "accumulate", out, x)
    np.testing.assert_array_equal(run.args[0], out + x + x)


def _allocs(kernel: str) -> int:
    program = lower(frontend(SOURCE, "view_writes.intent"))
    body = next(k for k in program.kernels if k.name == kernel).body
    return sum(isinstance(s, P.Alloc) for s in P.walk_stmts(body))


def test_slice_assignment_is_one_fused_store():
    # No temporary when the right-hand side does not read what is written ...
    assert _allocs("scale_rows") == 0
    assert _allocs("shift") == 0
    assert _allocs("add_bias") == 0
    assert _allocs("transpose_slice_assign") == 0
    # ... nor when it reads, at every point, only the element written there ...
    assert _allocs("double_self") == 0
    assert _allocs("double_tail") == 0
    assert _allocs("add_column") == 0
    assert _allocs("accumulate") == 0
    # ... and one snapshot when it reads elements that are overwritten before they are read.
    assert _allocs("shift_self") == 1
    assert _allocs("jacobi_step") == 0  # B is written from A, then A from B: no element read after its write


@pytest.mark.parametrize("kernel", ["double_self", "double_tail", "shift_self", "jacobi_step"])
def test_in_place_slice_assignments_have_no_race_p3(kernel):
    # Each point reads its own element before writing it, or a copy: the race sanitizer agrees.
    import intentc

    args = [np.arange(8, dtype=np.float32)] + ([np.zeros(8, np.float32)] if kernel == "jacobi_step" else [])
    intentc.interpret(SOURCE, kernel, *args, sanitize="race")
