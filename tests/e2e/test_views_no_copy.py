"""Reading a view or slice of a tensor the kernel writes copies nothing (P6) unless a write
to that tensor comes between the view's definition and its last use; then the value is the
one in program order (a snapshot). ``kir_builder.WriteWindows`` decides; these programs
check both sides: no ``alloc`` in the physical program where no write intervenes, and the
values of compiled code, the interpreter and NumPy where one does."""
from __future__ import annotations

import numpy as np

from intentc.driver import frontend
from intentc.lower import program as P
from intentc.lower.pipeline import lower

SOURCE = """
import intent as I

@intent.kernel
def triangular(A: mut f32[N, N]):
    for i in range(N):
        for j in range(i + 1, N):
            A[i, j] = A[i, j] - I.sum(A[i, 0:i] * A[0:i, j])

@intent.kernel
def normalise_rows(x: mut f32[R, C]):
    for r in I.parallel(x.axis(0)):
        inv = 1.0 / I.sum(x[r, :])
        for c in x.axis(1):
            x[r, c] = x[r, c] * inv

@intent.kernel
def read_then_overwrite(x: mut f32[N]) -> f32[N]:
    before = x[0:N] * 2.0
    for i in I.parallel(x.axis(0)):
        x[i] = -1.0
    return before

@intent.kernel
def shifted_in_place(x: mut f32[N]):
    v = x[1:N]
    for i in range(N - 1):
        x[i] = v[i] + 1.0
"""


def _allocs(kernel: str) -> int:
    program = lower(frontend(SOURCE, "views.intent"))
    body = next(k for k in program.kernels if k.name == kernel).body
    return sum(isinstance(s, P.Alloc) for s in P.walk_stmts(body))


def _reference_triangular(a: np.ndarray) -> np.ndarray:
    a = a.copy()
    n = a.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            a[i, j] = a[i, j] - np.float32(np.dot(a[i, :i].astype(np.float64), a[:i, j].astype(np.float64)))
    return a


def test_slices_read_before_any_write_are_not_copied():
    # The reduction's blocked partial sums are the only buffer a long row can need; the
    # slices themselves are read where the sum reads them.
    assert _allocs("triangular") <= 1
    assert _allocs("normalise_rows") <= 1


def test_a_write_between_definition_and_use_keeps_program_order(differential):
    x = np.arange(6, dtype=np.float32)
    run = differential(SOURCE, "read_then_overwrite", x)
    np.testing.assert_array_equal(run.result, np.arange(6) * 2.0)
    np.testing.assert_array_equal(run.args[0], -np.ones(6))
    assert _allocs("read_then_overwrite") >= 1  # the snapshot
    y = np.arange(7, dtype=np.float32)
    run = differential(SOURCE, "shifted_in_place", y)
    np.testing.assert_array_equal(run.args[0], np.concatenate([np.arange(1, 7) + 1.0, [6.0]]))


def test_triangular_update_matches_numpy(differential):
    a = np.random.default_rng(7).uniform(-1, 1, (9, 9)).astype(np.float32)
    run = differential(SOURCE, "triangular", a)
    np.testing.assert_allclose(run.args[0], _reference_triangular(a), rtol=1e-5, atol=1e-5)
    x = np.random.default_rng(8).uniform(1, 2, (4, 33)).astype(np.float32)
    run = differential(SOURCE, "normalise_rows", x)
    np.testing.assert_allclose(run.args[0].sum(1), np.ones(4), rtol=1e-5)
