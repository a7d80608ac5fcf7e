"""Python-side checks of the compiled samples.

Each ``check_<sample>(module)`` takes the module returned by
``intentc.load("<sample>.so")``, calls its kernels with NumPy arrays (several
shapes including zero extents, strided views, preallocated ``out=`` buffers),
asserts that the results equal NumPy's (or, for collatz_steps, a pure-Python
reference) exactly, and asserts that bad calls raise ``intentc.KernelError``
with the documented status code and write nothing.  It returns a one-line
summary and raises ``AssertionError`` on the first mismatch.

``CHECKS`` maps each sample file stem to its check.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Callable

import numpy as np
from numpy.testing import assert_array_equal

if __name__ == "__main__" and importlib.util.find_spec("intentc") is None:
    sys.path.append(str(Path(__file__).resolve().parents[1]))  # a checkout that is not installed
import intentc  # noqa: E402

# Status codes of docs/abi.md.
E_NULL, E_DTYPE, E_RANK, E_SHAPE, E_STRIDE = -1, -2, -3, -4, -5

SENTINEL = np.float32(-12345.5)


class _Tally:
    """Counts what a check did, for its summary line."""

    def __init__(self, sample: str):
        self.sample = sample
        self.matched = 0
        self.refused = 0

    def same(self, got, want, what: str) -> None:
        got = np.asarray(got)
        want = np.asarray(want)
        assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, expected {want.dtype}"
        assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
        assert_array_equal(got, want, err_msg=what, strict=True)
        if got.dtype.kind == "f":  # exact means signed zeros too
            numbers = ~np.isnan(want)
            assert_array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]),
                               err_msg=f"{what}: signs of zeros differ")
        self.matched += 1

    def refused_call(self, what: str, call: Callable[[], object], code: int, *outputs) -> None:
        """``call()`` must raise KernelError(code) and leave every array in ``outputs`` as it was."""
        before = [o.tobytes() for o in outputs]
        try:
            call()
        except intentc.KernelError as e:
            assert e.code == code, f"{what}: KernelError code {e.code}, the ABI code is {code} ({e})"
            assert str(e), f"{what}: KernelError without a message"
        else:
            raise AssertionError(f"{what}: no KernelError was raised")
        for o, b in zip(outputs, before):
            assert o.tobytes() == b, f"{what}: the call wrote into its output"
        self.refused += 1

    def summary(self) -> str:
        return (f"PASS {self.sample}: {self.matched} results exact, "
                f"{self.refused} bad calls refused")


def _f32(rng: np.random.Generator, *shape: int, lo: float = -100.0, hi: float = 100.0) -> np.ndarray:
    return rng.uniform(lo, hi, size=shape).astype(np.float32)


def _sentinel(*shape: int) -> np.ndarray:
    return np.full(shape, SENTINEL, dtype=np.float32)


# ---------------------------------------------------------------------------- saxpy

def check_saxpy(m) -> str:
    t = _Tally("saxpy")
    rng = np.random.default_rng(11)
    for n in (0, 1, 7, 64, 1000, 4097, 100003):
        a = np.float32(rng.uniform(-4, 4))
        x, y = _f32(rng, n), _f32(rng, n)
        want = a * x + y
        t.same(m.saxpy(float(a), x, y), want, f"saxpy N={n}")
        buf = _sentinel(n)
        got = m.saxpy(float(a), x, y, out=buf)
        assert got is buf, "saxpy(..., out=buf) must return buf"
        t.same(buf, want, f"saxpy N={n} out=")

    # Strided views in, a strided view out (the gaps must stay untouched).
    n = 1001
    xb, yb = _f32(rng, 2 * n), _f32(rng, 3 * n)
    x, y = xb[::2], yb[1::3]
    a = np.float32(1.75)
    want = a * x + y
    t.same(m.saxpy(float(a), x, y), want, "saxpy strided inputs")
    t.same(m.saxpy(float(a), x[::-1], y), a * x[::-1] + y, "saxpy reversed view")
    big = _sentinel(2 * n)
    m.saxpy(float(a), x, y, out=big[::2])
    t.same(big[::2], want, "saxpy strided out=")
    t.same(big[1::2], _sentinel(n), "saxpy strided out= gaps")
    t.same(m.saxpy(float(a), xb[:0:2], yb[:0:3]), np.zeros(0, np.float32), "saxpy empty views")

    # Bad calls.
    n = 33
    x, y, out = _f32(rng, n), _f32(rng, n), _sentinel(n)
    t.refused_call("y extent N+1", lambda: m.saxpy(2.0, x, _f32(rng, n + 1), out=out), E_SHAPE, out)
    t.refused_call("out extent N-1", lambda: m.saxpy(2.0, x, y, out=out[:-1]), E_SHAPE, out)
    t.refused_call("x is f64", lambda: m.saxpy(2.0, x.astype(np.float64), y, out=out), E_DTYPE, out)
    t.refused_call("out is f64", lambda: m.saxpy(2.0, x, y, out=np.zeros(n)), E_DTYPE, out)
    t.refused_call("x has rank 2", lambda: m.saxpy(2.0, x.reshape(1, n), y, out=out), E_RANK, out)
    zero_stride = np.lib.stride_tricks.as_strided(out, shape=(n,), strides=(0,))  # writable
    t.refused_call("out has a zero stride", lambda: m.saxpy(2.0, x, y, out=zero_stride), E_STRIDE, out)
    return t.summary()


# ------------------------------------------------------------------- broadcast_add

def check_broadcast_add(m) -> str:
    t = _Tally("broadcast_add")
    rng = np.random.default_rng(12)
    for mm, n in ((3, 5), (1, 1), (17, 33), (64, 129), (0, 4), (4, 0), (257, 1031)):
        x = _f32(rng, mm, n)
        for p, q in ((mm, n), (1, n), (mm, 1), (1, 1)):
            b = _f32(rng, p, q)
            t.same(m.broadcast_add(x, b), x + b, f"broadcast_add x{x.shape} b{b.shape}")
        bias = _f32(rng, n)
        scale = np.float32(rng.uniform(-3, 3))
        want = (x + bias) * scale
        t.same(m.add_row_bias(x, bias, float(scale)), want, f"add_row_bias x{x.shape}")
        buf = _sentinel(mm, n)
        assert m.add_row_bias(x, bias, float(scale), out=buf) is buf
        t.same(buf, want, f"add_row_bias x{x.shape} out=")

    # Strided views: transposes, every other column, a column of a wider array.
    xt = _f32(rng, 23, 19).T                      # [19, 23], column-major
    xs = _f32(rng, 19, 46)[:, ::2]                # [19, 23], every other column
    bcol = _f32(rng, 19, 4)[:, 2:3]               # [19, 1], row stride 4
    brow = _f32(rng, 3, 46)[1:2, ::2]             # [1, 23], column stride 2
    t.same(m.broadcast_add(xt, xs), xt + xs, "broadcast_add transposed + strided")
    t.same(m.broadcast_add(xs, bcol), xs + bcol, "broadcast_add b [M,1] strided")
    t.same(m.broadcast_add(xt, brow), xt + brow, "broadcast_add b [1,N] strided")
    big = _sentinel(19, 50)
    m.broadcast_add(xt, brow, out=big[:, 1:47:2])
    t.same(big[:, 1:47:2], xt + brow, "broadcast_add strided out=")
    rest = big.copy()
    rest[:, 1:47:2] = SENTINEL
    t.same(rest, _sentinel(19, 50), "broadcast_add strided out= gaps")
    bias = _f32(rng, 69)[::3]
    t.same(m.add_row_bias(xt, bias, 0.5), (xt + bias) * np.float32(0.5), "add_row_bias strided")
    # M = 0 with b [1, N].
    x0 = np.zeros((0, 6), np.float32)
    t.same(m.broadcast_add(x0, _f32(rng, 1, 6)), np.zeros((0, 6), np.float32), "broadcast_add M=0")

    # Bad calls.
    x, out = _f32(rng, 3, 5), _sentinel(3, 5)
    t.refused_call("b [2,N] against x [3,N] (S3)",
                   lambda: m.broadcast_add(x, _f32(rng, 2, 5), out=out), E_SHAPE, out)
    t.refused_call("b [M,N+1] (S3)", lambda: m.broadcast_add(x, _f32(rng, 3, 6), out=out), E_SHAPE, out)
    t.refused_call("out [M+1,N]",
                   lambda: m.broadcast_add(x, x, out=np.zeros((4, 5), np.float32)), E_SHAPE)
    t.refused_call("x [1,N] + b [0,N]: result M=0, not 1 (S2)",
                   lambda: m.broadcast_add(x[:1], _f32(rng, 0, 5), out=out[:1]), E_SHAPE, out)
    t.refused_call("x [0,N] + b [2,N] (S2)",
                   lambda: m.broadcast_add(x[:0], _f32(rng, 2, 5), out=out[:0]), E_SHAPE, out)
    t.refused_call("b has rank 1", lambda: m.broadcast_add(x, _f32(rng, 5), out=out), E_RANK, out)
    t.refused_call("b is f64", lambda: m.broadcast_add(x, x.astype(np.float64), out=out), E_DTYPE, out)
    t.refused_call("bias extent N+1",
                   lambda: m.add_row_bias(x, _f32(rng, 6), 2.0, out=out), E_SHAPE, out)
    t.refused_call("bias is i32",
                   lambda: m.add_row_bias(x, np.arange(5, dtype=np.int32), 2.0, out=out), E_DTYPE, out)
    return t.summary()


# ------------------------------------------------------------------------ row_scale

def check_row_scale(m) -> str:
    t = _Tally("row_scale")
    rng = np.random.default_rng(13)
    for r, c in ((3, 5), (1, 1), (0, 7), (7, 0), (33, 65), (513, 257)):
        x, s = _f32(rng, r, c), _f32(rng, r, lo=-4, hi=4)
        out = _sentinel(r, c)
        assert m.row_scale(x, s, out) is None, "a kernel with only mut results returns None"
        t.same(out, x * s[:, None], f"row_scale x{x.shape}")

    # Strided views.
    x = _f32(rng, 29, 37).T                   # [37, 29], column-major
    s = _f32(rng, 74, lo=-4, hi=4)[::2]
    big = _sentinel(37, 58)
    m.row_scale(x, s, big[:, ::2])
    t.same(big[:, ::2], x * s[:, None], "row_scale strided")
    t.same(big[:, 1::2], _sentinel(37, 29), "row_scale strided gaps")
    out_t = _sentinel(29, 37).T
    m.row_scale(x, s, out_t)
    t.same(out_t, x * s[:, None], "row_scale transposed out")

    # Bad calls.
    x, s, out = _f32(rng, 4, 6), _f32(rng, 4), _sentinel(4, 6)
    t.refused_call("s extent R+1", lambda: m.row_scale(x, _f32(rng, 5), out), E_SHAPE, out)
    t.refused_call("out [R,C+1]", lambda: m.row_scale(x, s, _sentinel(4, 7)), E_SHAPE)
    t.refused_call("x has rank 1", lambda: m.row_scale(x.ravel(), s, out), E_RANK, out)
    t.refused_call("s is f64", lambda: m.row_scale(x, s.astype(np.float64), out), E_DTYPE, out)
    t.refused_call("out is f64", lambda: m.row_scale(x, s, np.zeros((4, 6))), E_DTYPE)
    return t.summary()


# ---------------------------------------------------------------------------- clamp

def _clamp_reference(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    lo32, hi32 = np.float32(lo), np.float32(hi)
    return np.where(x < lo32, lo32, np.where(x > hi32, hi32, x)).astype(np.float32)


def check_clamp(m) -> str:
    t = _Tally("clamp")
    rng = np.random.default_rng(14)
    specials = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0], np.float32)
    for n, lo, hi in ((0, -2.5, 3.0), (1, -2.5, 3.0), (7, -2.5, 3.0), (1000, -2.5, 3.0),
                      (65537, -1.0, 1.0), (100, 5.0, -5.0), (100, 1.0, 1.0), (1000, 0.0, 1.0),
                      (100, np.nan, 1.0), (100, -1.0, np.nan)):
        x = _f32(rng, n, lo=-10, hi=10)
        if n >= len(specials):
            x[rng.choice(n, len(specials), replace=False)] = specials
        out = _sentinel(n)
        assert m.clamp(x, lo, hi, out) is None
        t.same(out, _clamp_reference(x, lo, hi), f"clamp N={n} lo={lo} hi={hi}")

    # Strided views.
    xb = _f32(rng, 3 * 513, lo=-3, hi=3)
    big = _sentinel(2 * 513)
    m.clamp(xb[::3], -1.0, 1.0, big[::2])
    t.same(big[::2], _clamp_reference(xb[::3], -1.0, 1.0), "clamp strided")
    t.same(big[1::2], _sentinel(513), "clamp strided gaps")

    # Bad calls.
    x, out = _f32(rng, 21), _sentinel(21)
    t.refused_call("out extent N+1", lambda: m.clamp(x, 0.0, 1.0, _sentinel(22)), E_SHAPE)
    t.refused_call("x extent N-1", lambda: m.clamp(x[:-1], 0.0, 1.0, out), E_SHAPE, out)
    t.refused_call("x is f64", lambda: m.clamp(x.astype(np.float64), 0.0, 1.0, out), E_DTYPE, out)
    t.refused_call("x is i32", lambda: m.clamp(x.astype(np.int32), 0.0, 1.0, out), E_DTYPE, out)
    t.refused_call("out has rank 2", lambda: m.clamp(x, 0.0, 1.0, out.reshape(21, 1)), E_RANK, out)
    return t.summary()


# -------------------------------------------------------------------- collatz_steps

def _collatz_reference(start, max_steps: int) -> np.ndarray:
    def wrap(v: int) -> int:  # i64 arithmetic wraps around (docs/language.md)
        return (v + 2**63) % 2**64 - 2**63

    def steps(n: int) -> int:
        count = 0
        while count < max_steps:
            if n <= 1:
                break
            n = n // 2 if n % 2 == 0 else wrap(3 * n + 1)
            count += 1
        return count

    return np.array([steps(int(v)) for v in start], dtype=np.int32)


def check_collatz_steps(m) -> str:
    t = _Tally("collatz_steps")
    rng = np.random.default_rng(15)
    for n, max_steps in ((0, 1000), (1, 1000), (5, 1000), (1001, 1000), (1001, 0),
                         (1001, -3), (1001, 50)):
        start = rng.integers(1, 100_000, size=n, dtype=np.int64)
        start[::7] = rng.integers(1, 1_000_000_000, size=start[::7].shape, dtype=np.int64)
        start[3::11] = rng.integers(-5, 2, size=start[3::11].shape, dtype=np.int64)
        if n:
            start[0] = 27
        if n > 3:  # 3n + 1 wraps around
            start[1:4] = [2**63 - 1, 2**62 + 1, (2**64 - 1) // 3]
        steps = np.full(n, -777, np.int32)
        assert m.collatz_steps(start, max_steps, steps) is None
        t.same(steps, _collatz_reference(start, max_steps), f"collatz_steps N={n} max={max_steps}")

    # Strided views.
    sb = rng.integers(-2, 10_000, size=3 * 333, dtype=np.int64)
    big = np.full(2 * 333, -777, np.int32)
    m.collatz_steps(sb[::3], 500, big[::2])
    t.same(big[::2], _collatz_reference(sb[::3], 500), "collatz_steps strided")
    t.same(big[1::2], np.full(333, -777, np.int32), "collatz_steps strided gaps")

    # Bad calls: the dtypes are part of the signature (i64 in, i32 out).
    start, steps = np.arange(9, dtype=np.int64), np.full(9, -777, np.int32)
    t.refused_call("start is i32", lambda: m.collatz_steps(start.astype(np.int32), 10, steps),
                   E_DTYPE, steps)
    t.refused_call("start is f64", lambda: m.collatz_steps(start.astype(np.float64), 10, steps),
                   E_DTYPE, steps)
    t.refused_call("steps is i64", lambda: m.collatz_steps(start, 10, start.copy()), E_DTYPE, steps)
    t.refused_call("start extent N+1", lambda: m.collatz_steps(np.arange(10), 10, steps),
                   E_SHAPE, steps)
    t.refused_call("start has rank 2", lambda: m.collatz_steps(start.reshape(3, 3), 10, steps),
                   E_RANK, steps)
    return t.summary()


# ------------------------------------------- reductions, scans and region operations
#
# These samples may regroup float arithmetic (reductions, scans, region folds): their
# float results are compared with a float64 reference within a stated tolerance
# (exactly where no rounding can occur), integers and maxima exactly. Every sample is
# also run with 1, 2 and 3 threads, which must give the same bits.

E_BOUNDS = -6
INDEX_MAX = np.iinfo(np.int64).max


class _NumericTally(_Tally):
    def close(self, got, want, bound, what: str) -> None:
        """|got - want| <= bound element-wise (NaN matches NaN, infinities must be equal)."""
        got = np.asarray(got)
        want = np.asarray(want, np.float64)
        assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
        g = got.astype(np.float64)
        nan = np.isnan(want) | np.isnan(g)
        assert np.array_equal(np.isnan(want), np.isnan(g)), f"{what}: NaN where the reference has none (or not)"
        inf = ~nan & (np.isinf(want) | np.isinf(g))
        assert np.array_equal(g[inf], want[inf]), f"{what}: infinities differ"
        finite = ~nan & ~inf
        err = np.abs(g[finite] - want[finite])
        lim = np.broadcast_to(np.asarray(bound, np.float64), want.shape)[finite]
        if err.size and not np.all(err <= lim):
            k = int(np.argmax(err - lim))
            raise AssertionError(f"{what}: error {err[k]:.3g} over the tolerance {lim[k]:.3g}")
        self.matched += 1

    def threads(self, m, call: Callable[[], object], what: str) -> None:
        """``call()`` gives the same bits with 1, 2 and 3 threads."""
        results = []
        try:
            for n in (1, 2, 3):
                m.set_num_threads(n)
                got = call()
                results.append([np.array(r, copy=True) for r in (got if isinstance(got, tuple) else (got,))])
        finally:
            m.set_num_threads(0)
        for n, rs in zip((2, 3), results[1:]):
            for a, b in zip(results[0], rs):
                assert a.tobytes() == b.tobytes(), f"{what}: {n} threads differ from 1 thread"
        self.matched += 1

    def summary(self) -> str:
        return (f"PASS {self.sample}: {self.matched} results exact or within tolerance, "
                f"{self.refused} bad calls refused")


# ------------------------------------------------------------------------- stencil3

def _stencil3_reference(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    want = out.copy()
    want[1:-1] = (x[:-2] + x[1:-1] + x[2:]) / np.float32(3.0)  # f32, left to right
    return want


def check_stencil3(m) -> str:
    t = _NumericTally("stencil3")
    rng = np.random.default_rng(21)
    for n in (2, 3, 4, 5, 17, 1000, 4099, 100003):
        x, out = _f32(rng, n), _sentinel(n)
        want = _stencil3_reference(x, out)
        assert m.stencil3(x, out) is None
        t.same(out, want, f"stencil3 N={n}")
    # Strided views in and out (the gaps and the ends stay untouched).
    xb = _f32(rng, 3 * 777)
    big = _sentinel(2 * 777)
    want = _stencil3_reference(xb[::3], big[::2])
    m.stencil3(xb[::3], big[::2])
    t.same(big[::2], want, "stencil3 strided")
    t.same(big[1::2], _sentinel(777), "stencil3 strided gaps")
    out = _sentinel(500)
    m.stencil3(xb[:1000:2][::-1], out)
    t.same(out, _stencil3_reference(xb[:1000:2][::-1], _sentinel(500)), "stencil3 reversed view")
    x = _f32(rng, (1 << 20) + 3)
    t.threads(m, lambda: (lambda o: (m.stencil3(x, o), o)[1])(_sentinel(len(x))), "stencil3 N=2^20+3")

    # Bad calls: N < 2 puts the subregion [1, N - 1) outside [0, N) (D5).
    for n in (0, 1):
        out = _sentinel(n)
        t.refused_call(f"N = {n}: subregion [1, {n - 1})", lambda: m.stencil3(_f32(rng, n), out), E_BOUNDS, out)
    x, out = _f32(rng, 9), _sentinel(9)
    t.refused_call("out extent N+1", lambda: m.stencil3(x, _sentinel(10)), E_SHAPE)
    t.refused_call("x extent N-1", lambda: m.stencil3(x[:-1], out), E_SHAPE, out)
    t.refused_call("x is f64", lambda: m.stencil3(x.astype(np.float64), out), E_DTYPE, out)
    t.refused_call("x has rank 2", lambda: m.stencil3(x.reshape(3, 3), out), E_RANK, out)
    zero_stride = np.lib.stride_tricks.as_strided(out, shape=(9,), strides=(0,))
    t.refused_call("out has a zero stride", lambda: m.stencil3(x, zero_stride), E_STRIDE, out)
    return t.summary()


# ----------------------------------------------------------------------- reductions

def _argmax_nan_first(x: np.ndarray, axis: int) -> np.ndarray:
    """NumPy's argmax (NaN is the greatest, ties take the smaller index), INDEX_MAX when empty."""
    if x.shape[axis] == 0:
        return np.full(x.shape[1 - axis], INDEX_MAX, np.int64)
    return np.argmax(x, axis=axis).astype(np.int64)


def check_reductions(m) -> str:
    t = _NumericTally("reductions")
    rng = np.random.default_rng(22)
    shapes = ((3, 5), (1, 1), (0, 7), (7, 0), (33, 65), (513, 257), (2, 100003))
    for r, c in shapes:
        x = _f32(rng, r, c)
        x64 = x.astype(np.float64)
        t.close(m.row_sums(x), x64.sum(1), 1e-5 * np.abs(x64).sum(1), f"row_sums x{x.shape}")
        xi = rng.integers(-20, 21, (r, c)).astype(np.float32)  # many ties
        if r > 3 and c > 3:
            xi[1, ::3] = np.inf
            xi[2, 1::4] = np.nan
        best, where = _sentinel(c), np.full(c, -777, np.int64)
        assert m.col_max(xi, best, where) is None
        t.same(best, xi.max(0) if r else np.full(c, -np.inf, np.float32), f"col_max x{x.shape}")
        t.same(where, _argmax_nan_first(xi, 0), f"col_max argmax x{x.shape}")
    # Strided views: a transposed operand, every other column, a strided output.
    x = _f32(rng, 300, 41).T                       # [41, 300], column-major
    big = _sentinel(3 * 41)
    m.row_sums(x, out=big[::3])
    x64 = x.astype(np.float64)
    t.close(big[::3], x64.sum(1), 1e-5 * np.abs(x64).sum(1), "row_sums transposed, strided out=")
    t.same(np.delete(big, np.s_[::3]), _sentinel(2 * 41), "row_sums strided out= gaps")
    xs = rng.integers(-9, 10, (57, 2 * 33)).astype(np.float32)[:, ::2]
    best, where = _sentinel(33), np.full(33, -777, np.int64)
    m.col_max(xs, best, where)
    t.same(best, xs.max(0), "col_max every other column")
    t.same(where, _argmax_nan_first(xs, 0), "col_max argmax every other column")

    for n in (0, 1, 2, 7, 64, 1000, 4097, 100003, (1 << 20) + 5):
        x = _f32(rng, n)
        x64 = x.astype(np.float64)
        t.close(m.total(x), [x64.sum()], [1e-5 * np.abs(x64).sum()], f"total N={n}")
        xs = rng.integers(-100, 101, n).astype(np.float32)
        t.same(m.total(xs), np.array([xs.astype(np.float64).sum()], np.float32), f"total N={n} integers exact")
        h = rng.uniform(-16, 16, n).astype(np.float16)
        h64 = h.astype(np.float64)
        t.close(m.half_total(h), [h64.sum()], [1e-5 * np.abs(h64).sum()], f"half_total N={n}")
        i = rng.integers(np.iinfo(np.int32).min, np.iinfo(np.int32).max, n, dtype=np.int32, endpoint=True)
        t.same(m.int_total(i), np.array([i.astype(np.int64).sum()]), f"int_total N={n}")
    ones = np.ones(4096, np.float16)
    t.same(m.half_total(ones), np.array([4096.0], np.float32), "half_total accumulates in f32 (not 2048)")
    x = _f32(rng, 3 * 30001)[::3]
    t.close(m.total(x), [x.astype(np.float64).sum()], [1e-5 * np.abs(x.astype(np.float64)).sum()],
            "total strided")
    t.same(m.int_total(np.arange(90, dtype=np.int32)[::-3]), np.array([np.arange(90)[::-3].sum()]),
           "int_total reversed view")
    big = _f32(rng, (1 << 20) + 5)
    t.threads(m, lambda: m.total(big), "total N=2^20+5")
    t.threads(m, lambda: m.half_total(big.astype(np.float16)), "half_total N=2^20+5")
    x2 = _f32(rng, 300, 4099)
    t.threads(m, lambda: m.row_sums(x2), "row_sums [300, 4099]")

    # Bad calls.
    x, out = _f32(rng, 4, 6), _sentinel(4)
    t.refused_call("row_sums out extent R+1", lambda: m.row_sums(x, out=_sentinel(5)), E_SHAPE)
    t.refused_call("row_sums x is f64", lambda: m.row_sums(x.astype(np.float64), out=out), E_DTYPE, out)
    t.refused_call("row_sums x has rank 1", lambda: m.row_sums(x.ravel(), out=out), E_RANK, out)
    best, where = _sentinel(6), np.full(6, -777, np.int64)
    t.refused_call("col_max where extent C-1", lambda: m.col_max(x, best, where[:-1]), E_SHAPE, best, where)
    t.refused_call("col_max where is i32", lambda: m.col_max(x, best, where.astype(np.int32)), E_DTYPE, best)
    one = _sentinel(1)
    t.refused_call("total out extent 2", lambda: m.total(x[0], out=_sentinel(2)), E_SHAPE)
    t.refused_call("half_total x is f32", lambda: m.half_total(x[0], out=one), E_DTYPE, one)
    t.refused_call("int_total x is i64", lambda: m.int_total(np.arange(5), out=np.zeros(1, np.int64)), E_DTYPE)
    return t.summary()


# ----------------------------------------------------------------------- prefix_sum

def check_prefix_sum(m) -> str:
    t = _NumericTally("prefix_sum")
    rng = np.random.default_rng(23)
    for n in (0, 1, 2, 7, 64, 1000, 4097, 100003, (1 << 20) + 7):
        x = _f32(rng, n)
        x64 = x.astype(np.float64)
        t.close(m.prefix_sum(x), np.cumsum(x64), 1e-5 * np.cumsum(np.abs(x64)), f"prefix_sum N={n}")
        xs = rng.integers(-50, 51, n).astype(np.float32)
        t.same(m.prefix_sum(xs), np.cumsum(xs.astype(np.float64)).astype(np.float32),
               f"prefix_sum N={n} integers exact")
        counts = rng.integers(0, 1000, n).astype(np.int32)
        counts[5::13] = rng.integers(np.iinfo(np.int32).min, np.iinfo(np.int32).max, counts[5::13].shape)
        want = np.concatenate([[0], np.cumsum(counts.astype(np.int64))[:-1]]) if n else np.zeros(0, np.int64)
        t.same(m.exclusive_offsets(counts), want.astype(np.int64), f"exclusive_offsets N={n}")
    # Strided views.
    xb = _f32(rng, 3 * 3001)
    big = _sentinel(2 * 3001)
    m.prefix_sum(xb[::3], out=big[::2])
    x64 = xb[::3].astype(np.float64)
    t.close(big[::2], np.cumsum(x64), 1e-5 * np.cumsum(np.abs(x64)), "prefix_sum strided")
    t.same(big[1::2], _sentinel(3001), "prefix_sum strided gaps")
    c = rng.integers(0, 100, 999).astype(np.int32)
    t.same(m.exclusive_offsets(c[::-2]), np.concatenate([[0], np.cumsum(c[::-2].astype(np.int64))[:-1]]),
           "exclusive_offsets reversed strided view")
    x = _f32(rng, (1 << 20) + 7)
    t.threads(m, lambda: m.prefix_sum(x), "prefix_sum N=2^20+7")
    c = rng.integers(-1000, 1000, (1 << 20) + 7).astype(np.int32)
    t.threads(m, lambda: m.exclusive_offsets(c), "exclusive_offsets N=2^20+7")

    # Bad calls.
    x, out = _f32(rng, 9), _sentinel(9)
    t.refused_call("prefix_sum out extent N-1", lambda: m.prefix_sum(x, out=out[:-1]), E_SHAPE, out)
    t.refused_call("prefix_sum x is f64", lambda: m.prefix_sum(x.astype(np.float64), out=out), E_DTYPE, out)
    t.refused_call("prefix_sum x has rank 2", lambda: m.prefix_sum(x.reshape(3, 3), out=out), E_RANK, out)
    zero_stride = np.lib.stride_tricks.as_strided(out, shape=(9,), strides=(0,))
    t.refused_call("prefix_sum out has a zero stride", lambda: m.prefix_sum(x, out=zero_stride), E_STRIDE, out)
    offs = np.full(9, -777, np.int64)
    t.refused_call("exclusive_offsets counts is i64", lambda: m.exclusive_offsets(np.arange(9), out=offs),
                   E_DTYPE, offs)
    t.refused_call("exclusive_offsets out is i32",
                   lambda: m.exclusive_offsets(np.arange(9, dtype=np.int32), out=np.zeros(9, np.int32)), E_DTYPE)
    return t.summary()


# ------------------------------------------------------------------------ logsumexp

def _logsumexp64(x: np.ndarray) -> float:
    x64 = np.asarray(x, np.float64)
    if x64.size == 0 or np.all(x64 == -np.inf):
        return -np.inf
    mx = x64.max()
    return float(mx + np.log(np.exp(x64 - mx).sum()))


def check_logsumexp(m) -> str:
    t = _NumericTally("logsumexp")
    rng = np.random.default_rng(24)
    for n in (0, 1, 2, 7, 64, 1000, 4097, 100003, (1 << 20) + 9):
        for lo, hi in ((-10, 10), (-1, 1), (70, 90), (-200, -150)):
            x = _f32(rng, n, lo=lo, hi=hi)
            if lo == -1:
                x[3::7] = -np.inf
            want = _logsumexp64(x)
            t.close(m.logsumexp(x), [want], [1e-5 * max(1.0, abs(want))], f"logsumexp N={n} in [{lo}, {hi}]")
    t.same(m.logsumexp(np.full(1000, -np.inf, np.float32)), np.array([-np.inf], np.float32), "logsumexp all -inf")
    x = _f32(rng, 3 * 30001, lo=-5, hi=5)
    buf = _sentinel(3)
    m.logsumexp(x[::3], out=buf[1:2])
    want = _logsumexp64(x[::3])
    t.close(buf[1:2], [want], [1e-5 * max(1.0, abs(want))], "logsumexp strided")
    t.same(buf[[0, 2]], _sentinel(2), "logsumexp out= neighbours")
    x = _f32(rng, (1 << 20) + 9, lo=-30, hi=30)
    t.threads(m, lambda: m.logsumexp(x), "logsumexp N=2^20+9")

    # Bad calls.
    x, out = _f32(rng, 9), _sentinel(1)
    t.refused_call("out extent 2, not 1", lambda: m.logsumexp(x, out=_sentinel(2)), E_SHAPE)
    t.refused_call("out extent 0, not 1", lambda: m.logsumexp(x, out=_sentinel(0)), E_SHAPE)
    t.refused_call("x is f64", lambda: m.logsumexp(x.astype(np.float64), out=out), E_DTYPE, out)
    t.refused_call("x has rank 2", lambda: m.logsumexp(x.reshape(3, 3), out=out), E_RANK, out)
    return t.summary()


# ------------------------------------------------------------------- online_softmax

def _softmax64(x: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    if x64.shape[1] == 0:
        return x64
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _softmax_bound(want: np.ndarray) -> np.ndarray:
    """The tolerance of an f32 online softmax of rows of C members: the serial f32 sum of C
    non-negative terms is within (C - 1)·u of the exact one (u = 2^-24), whatever their
    order or grouping, plus a few roundings of exp, rescaling and the division; 2e-5 where
    that is smaller. Rows of similar terms (the row of +80s) do accumulate errors of one
    sign, so a bound that grows like sqrt(C) would not hold."""
    return max(2e-5, (want.shape[1] + 16) * 2.0 ** -24) * want + 1e-30


def check_online_softmax(m) -> str:
    t = _NumericTally("online_softmax")
    rng = np.random.default_rng(25)
    for r, c in ((3, 5), (1, 1), (0, 7), (7, 0), (33, 65), (4, 4099), (257, 1031), (3, 100003)):
        x = _f32(rng, r, c, lo=-10, hi=10)
        if r > 2 and c > 2:
            x[1, 2] = -np.inf
            x[2, :] = 80 + np.arange(c) % 5
        out = _sentinel(r, c)
        assert m.online_softmax(x, out) is None
        want = _softmax64(x)
        t.close(out, want, _softmax_bound(want), f"online_softmax x{x.shape}")
    # Strided views.
    x = _f32(rng, 29, 37, lo=-10, hi=10).T            # [37, 29], column-major
    big = _sentinel(37, 58)
    m.online_softmax(x, big[:, ::2])
    want = _softmax64(x)
    t.close(big[:, ::2], want, _softmax_bound(want), "online_softmax transposed, strided out")
    t.same(big[:, 1::2], _sentinel(37, 29), "online_softmax strided out gaps")
    x = _f32(rng, 19, 600, lo=-10, hi=10)[:, ::2]
    out_t = _sentinel(300, 19).T
    m.online_softmax(x, out_t)
    want = _softmax64(x)
    t.close(out_t, want, _softmax_bound(want), "online_softmax every other column, transposed out")
    assert m.online_softmax(np.zeros((0, 3), np.float32), _sentinel(0, 3)) is None, "online_softmax R=0"
    x = _f32(rng, 300, 2049, lo=-5, hi=5)
    t.threads(m, lambda: (lambda o: (m.online_softmax(x, o), o)[1])(_sentinel(300, 2049)),
              "online_softmax [300, 2049]")

    # Bad calls.
    x, out = _f32(rng, 4, 6), _sentinel(4, 6)
    t.refused_call("out [R,C+1]", lambda: m.online_softmax(x, _sentinel(4, 7)), E_SHAPE)
    t.refused_call("x [R-1,C]", lambda: m.online_softmax(x[:3], out), E_SHAPE, out)
    t.refused_call("x is f64", lambda: m.online_softmax(x.astype(np.float64), out), E_DTYPE, out)
    t.refused_call("x has rank 1", lambda: m.online_softmax(x.ravel(), out), E_RANK, out)
    zero_stride = np.lib.stride_tricks.as_strided(out, shape=(4, 6), strides=(24, 0))
    t.refused_call("out has a zero stride", lambda: m.online_softmax(x, zero_stride), E_STRIDE, out)
    return t.summary()


# ---------------------------------------------------------------- linear_recurrence

def _recurrence64(a: np.ndarray, b: np.ndarray, h0: float) -> tuple[np.ndarray, np.ndarray]:
    """h[i] = a[i] h[i-1] + b[i] in float64 and the magnitude bound H[i] = |a[i]| H[i-1] + |b[i]|."""
    h, mag = float(h0), abs(float(h0))
    hs, mags = np.empty(len(a)), np.empty(len(a))
    for i, (ai, bi) in enumerate(zip(a.tolist(), b.tolist())):
        h = ai * h + bi
        mag = abs(ai) * mag + abs(bi)
        hs[i], mags[i] = h, mag
    return hs, mags


def check_linear_recurrence(m) -> str:
    t = _NumericTally("linear_recurrence")
    rng = np.random.default_rng(26)
    for n in (0, 1, 2, 7, 64, 1000, 4097, 100003):
        for kind in ("contracting", "exact", "running sum"):
            if kind == "contracting":
                a, b, h0 = rng.uniform(0.5, 1.0, n).astype(np.float32), _f32(rng, n, lo=-1, hi=1), 0.25
            elif kind == "exact":  # a in {0, 1}, integer b: every step is exact
                a = (rng.random(n) < 0.875).astype(np.float32)
                b, h0 = rng.integers(-100, 101, n).astype(np.float32), 7.0
            else:
                a, b, h0 = np.ones(n, np.float32), _f32(rng, n, lo=-1, hi=1), -0.5
            want, mag = _recurrence64(a, b, h0)
            bound = 0.0 if kind == "exact" else 2e-5 * mag
            t.close(m.linear_recurrence(a, b, h0), want, bound, f"linear_recurrence N={n} {kind}")
            last = m.final_state(a, b, h0)
            t.close(last, want[-1:] if n else [h0], 0.0 if n == 0 or kind == "exact" else bound[-1:],
                    f"final_state N={n} {kind}")
    # Strided views.
    ab, bb = rng.uniform(0.5, 1.0, 2 * 3001).astype(np.float32), _f32(rng, 3 * 3001, lo=-1, hi=1)
    big = _sentinel(2 * 3001)
    m.linear_recurrence(ab[::2], bb[::3], 0.5, out=big[::2])
    want, mag = _recurrence64(ab[::2], bb[::3], 0.5)
    t.close(big[::2], want, 2e-5 * mag, "linear_recurrence strided")
    t.same(big[1::2], _sentinel(3001), "linear_recurrence strided gaps")
    a = rng.uniform(0.5, 1.0, (1 << 20) + 11).astype(np.float32)
    b = _f32(rng, (1 << 20) + 11, lo=-1, hi=1)
    t.threads(m, lambda: m.linear_recurrence(a, b, 0.25), "linear_recurrence N=2^20+11")
    t.threads(m, lambda: m.final_state(a, b, 0.25), "final_state N=2^20+11")

    # Bad calls.
    a, b, out = _f32(rng, 9), _f32(rng, 9), _sentinel(9)
    t.refused_call("b extent N+1", lambda: m.linear_recurrence(a, _f32(rng, 10), 0.5, out=out), E_SHAPE, out)
    t.refused_call("out extent N-1", lambda: m.linear_recurrence(a, b, 0.5, out=out[:-1]), E_SHAPE, out)
    t.refused_call("a is f64", lambda: m.linear_recurrence(a.astype(np.float64), b, 0.5, out=out), E_DTYPE, out)
    t.refused_call("b has rank 2", lambda: m.linear_recurrence(a, b.reshape(3, 3), 0.5, out=out), E_RANK, out)
    t.refused_call("final_state out extent 2", lambda: m.final_state(a, b, 0.5, out=_sentinel(2)), E_SHAPE)
    return t.summary()


# ---------------------------------------------------------- running_max_with_argmax

def _running_max_reference(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.maximum.accumulate (NaN propagates: the first NaN stays) and the first position of
    each running maximum."""
    v = np.maximum.accumulate(x) if len(x) else x.copy()
    changed = np.ones(len(x), bool)
    if len(x) > 1:
        same = (v[1:] == v[:-1]) | (np.isnan(v[1:]) & np.isnan(v[:-1]))
        changed[1:] = ~same
    k = np.maximum.accumulate(np.where(changed, np.arange(len(x)), 0)) if len(x) else np.zeros(0, np.int64)
    return v, k.astype(np.int64)


def check_running_max_with_argmax(m) -> str:
    t = _NumericTally("running_max_with_argmax")
    rng = np.random.default_rng(27)
    for n in (0, 1, 2, 7, 64, 1000, 4097, 100003, (1 << 20) + 13):
        cases = {"integers": rng.integers(-1000, 1001, n).astype(np.float32),
                 "uniform": _f32(rng, n, lo=-1e6, hi=1e6),
                 "decreasing": -np.arange(n, dtype=np.float32)}
        special = rng.integers(-1000, 1001, n).astype(np.float32)
        special[13::97] = np.where(np.arange(len(special[13::97])) % 3 == 0, np.inf, -np.inf)
        if n > 10:
            special[2 * n // 3] = np.nan
        cases["with inf and NaN"] = special
        for kind, x in cases.items():
            v, k = m.running_max_with_argmax(x)
            wv, wk = _running_max_reference(x)
            t.same(v, wv, f"running max N={n} {kind}")
            t.same(k, wk, f"running argmax N={n} {kind}")
    # Strided views in and out.
    xb = rng.integers(-50, 51, 3 * 3001).astype(np.float32)
    vb, kb = _sentinel(2 * 3001), np.full(3 * 3001, -777, np.int64)
    m.running_max_with_argmax(xb[::3], out=(vb[::2], kb[::3]))
    wv, wk = _running_max_reference(xb[::3])
    t.same(vb[::2], wv, "running max strided")
    t.same(kb[::3], wk, "running argmax strided")
    t.same(vb[1::2], _sentinel(3001), "running max strided gaps")
    v, k = m.running_max_with_argmax(xb[::-1])
    wv, wk = _running_max_reference(xb[::-1])
    t.same(v, wv, "running max reversed view")
    t.same(k, wk, "running argmax reversed view")
    x = rng.integers(-10**6, 10**6, (1 << 20) + 13).astype(np.float32)
    t.threads(m, lambda: m.running_max_with_argmax(x), "running_max_with_argmax N=2^20+13")

    # Bad calls.
    x, v, k = _f32(rng, 9), _sentinel(9), np.full(9, -777, np.int64)
    t.refused_call("out1 extent N+1", lambda: m.running_max_with_argmax(x, out=(v, np.zeros(10, np.int64))),
                   E_SHAPE, v)
    t.refused_call("out1 is i32", lambda: m.running_max_with_argmax(x, out=(v, np.zeros(9, np.int32))), E_DTYPE, v)
    t.refused_call("x is i64", lambda: m.running_max_with_argmax(np.arange(9), out=(v, k)), E_DTYPE, v, k)
    t.refused_call("x has rank 2", lambda: m.running_max_with_argmax(x.reshape(3, 3), out=(v, k)), E_RANK, v, k)
    return t.summary()


# ---------------------------------------------------- segmented_cumprod_with_resets

def _segmented_cumprod64(reset: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The running product restarting at flagged elements (float64), and each run's length."""
    p, length = 1.0, 0
    out, lengths = np.empty(len(x)), np.empty(len(x))
    for i, (f, v) in enumerate(zip(reset.tolist(), x.tolist())):
        p, length = (v, 1) if f else (p * v, length + 1)
        out[i], lengths[i] = p, length
    return out, lengths


def check_segmented_cumprod_with_resets(m) -> str:
    t = _NumericTally("segmented_cumprod_with_resets")
    rng = np.random.default_rng(28)
    kernel = m.segmented_cumprod_with_resets
    for n in (0, 1, 2, 7, 64, 1000, 4097, 100003):
        reset = rng.random(n) < 0.02
        x = rng.uniform(0.99, 1.01, n).astype(np.float32)
        want, length = _segmented_cumprod64(reset, x)
        t.close(kernel(reset, x), want, 1e-5 * length * np.abs(want), f"cumprod N={n} factors near 1")
        reset = rng.random(n) < 0.05
        x = rng.choice(np.array([0.5, 1.0, 2.0], np.float32), n)
        want, _ = _segmented_cumprod64(reset, x)
        t.same(kernel(reset, x), want.astype(np.float32), f"cumprod N={n} powers of two exact")
        t.same(kernel(np.ones(n, bool), x), x, f"cumprod N={n} all reset")
    x = rng.uniform(0.9999, 1.0001, 100003).astype(np.float32)
    want, length = _segmented_cumprod64(np.zeros(len(x), bool), x)
    t.close(kernel(np.zeros(len(x), bool), x), want, 1e-5 * length * np.abs(want), "cumprod no reset")
    # Strided views.
    rb = rng.random(2 * 3001) < 0.03
    xb = rng.uniform(0.99, 1.01, 3 * 3001).astype(np.float32)
    big = _sentinel(2 * 3001)
    kernel(rb[::2], xb[::3], out=big[::2])
    want, length = _segmented_cumprod64(rb[::2], xb[::3])
    t.close(big[::2], want, 1e-5 * length * np.abs(want), "cumprod strided")
    t.same(big[1::2], _sentinel(3001), "cumprod strided gaps")
    r = rng.random((1 << 20) + 17) < 0.001
    x = rng.uniform(0.99, 1.01, len(r)).astype(np.float32)
    t.threads(m, lambda: kernel(r, x), "cumprod N=2^20+17")

    # Bad calls.
    r, x, out = np.zeros(9, bool), _f32(rng, 9), _sentinel(9)
    t.refused_call("reset extent N-1", lambda: kernel(r[:-1], x, out=out), E_SHAPE, out)
    t.refused_call("reset is u8", lambda: kernel(r.astype(np.uint8), x, out=out), E_DTYPE, out)
    t.refused_call("x is f64", lambda: kernel(r, x.astype(np.float64), out=out), E_DTYPE, out)
    t.refused_call("x has rank 2", lambda: kernel(r, x.reshape(3, 3), out=out), E_RANK, out)
    return t.summary()


# ------------------------------------------------------------------- selective_scan

# The float64 reference below also carries two bounds per state, both with the decay
# p = exp(delta * a) of each step: the magnitude M_t = p M_(t-1) + |q| (>= |h_t|) and the
# accumulated magnitude S_t = p S_(t-1) + M_t. Each f32 step (the product delta * a, exp
# within 1 ulp, delta * b * x, p * h, the sum) adds an error of a few units u = 2^-24 of
# M_t, and later steps scale that error by their decays, so the serial loop's error is
# within K u S_t; composing a segment's maps first (R8) rounds the products of decays and
# the composed offsets with the same per-step errors, so the segmented evaluation is
# within the same bound. S_t / M_t grows with the memory 1 / (1 - p) of the recurrence:
# a flat relative tolerance would be too tight for slow decays and too loose for fast ones.
SSM_STATES = 16
SSM_K = 8


def _selective_scan64(x, delta, a, b, c, h0):
    """y, the last state and their bounds K u (sum over s of |c| (S + M)) and K u (S + M),
    serially in float64 (vectorised over the channels and states, one step at a time)."""
    x64, dt64, a64 = x.astype(np.float64), delta.astype(np.float64), a.astype(np.float64)
    b64, c64 = b.astype(np.float64), c.astype(np.float64)
    d, t = x.shape
    h = h0.astype(np.float64)
    mag, acc = np.abs(h), np.zeros_like(h)
    y, ybound = np.empty((d, t)), np.empty((d, t))
    for k in range(t):
        p = np.exp(dt64[:, k, None] * a64)
        q = dt64[:, k, None] * b64[None, :, k] * x64[:, k, None]
        h = p * h + q
        mag = p * mag + np.abs(q)
        acc = p * acc + mag
        y[:, k] = (c64[None, :, k] * h).sum(axis=1)
        ybound[:, k] = (np.abs(c64[None, :, k]) * (acc + mag)).sum(axis=1)
    u = SSM_K * 2.0 ** -24
    return y, h, u * ybound, u * (acc + mag)


def _ssm_inputs(rng, d: int, t: int, kind: str):
    """x, delta, a, b, c, h0 for one of the cases of check_selective_scan."""
    x, b, c = _f32(rng, d, t, lo=-1, hi=1), _f32(rng, SSM_STATES, t, lo=-1, hi=1), _f32(rng, SSM_STATES, t, lo=-1, hi=1)
    h0 = _f32(rng, d, SSM_STATES, lo=-1, hi=1)
    if kind == "mamba":  # step sizes log-uniform in [1e-3, 1e-1], decay rates -1 .. -16 (Mamba's init)
        delta = np.exp(rng.uniform(np.log(1e-3), np.log(1e-1), (d, t))).astype(np.float32)
        a = -rng.uniform(1, 16, (d, SSM_STATES)).astype(np.float32)
    elif kind == "slow decay":  # memories of 10^3 to 10^5 steps
        delta = rng.uniform(1e-4, 1e-3, (d, t)).astype(np.float32)
        a = -rng.uniform(0.1, 1, (d, SSM_STATES)).astype(np.float32)
    else:
        raise ValueError(kind)
    return x, delta, a, b, c, h0


def _ssm_exact_sum(c, h):
    """sum over s of c[s, t] * h[d, s] in f32, in order s = 0..15 (the kernel's order)."""
    y = np.zeros((h.shape[0], c.shape[1]), np.float32)
    for s in range(SSM_STATES):
        y = y + c[None, s, :] * h[:, s, None]
    return y


def check_selective_scan(m) -> str:
    t = _NumericTally("selective_scan")
    rng = np.random.default_rng(29)
    kernel = m.selective_scan
    for d, n in ((1, 0), (3, 0), (0, 5), (1, 1), (4, 1), (1, 7), (5, 37), (8, 100), (64, 257), (2, 4097),
                 (3, (1 << 16) + 3)):
        for kind in ("mamba", "slow decay"):
            args = _ssm_inputs(rng, d, n, kind)
            y, last = kernel(*args)
            want_y, want_last, y_bound, last_bound = _selective_scan64(*args)
            t.close(y, want_y, y_bound, f"y D={d} T={n} {kind}")
            t.close(last, want_last, last_bound, f"last D={d} T={n} {kind}")
            if n == 0:
                t.same(last, args[5], f"last D={d} T=0 is h0")
        # delta = 0: every step is the identity map (exp(0) = 1, q = 0): h stays h0
        # exactly and y is the sum over s in order, the same bits as NumPy's f32.
        x, delta, a, b, c, h0 = _ssm_inputs(rng, d, n, "mamba")
        y, last = kernel(x, np.zeros_like(delta), a, b, c, h0)
        t.same(last, h0, f"last D={d} T={n} delta = 0")
        t.same(y, _ssm_exact_sum(c, h0), f"y D={d} T={n} delta = 0")
        # a = 0, delta = 1 and small integers: running sums, every operation exact.
        x = rng.integers(-1, 2, (d, n)).astype(np.float32)
        b, c = (rng.integers(-1, 2, (SSM_STATES, n)).astype(np.float32) for _ in range(2))
        h0 = rng.integers(-8, 9, (d, SSM_STATES)).astype(np.float32)
        hs = h0[:, :, None] + np.cumsum(b[None, :, :] * x[:, None, :], axis=2)  # [D, 16, T], exact
        y, last = kernel(x, np.ones_like(x), np.zeros((d, SSM_STATES), np.float32), b, c, h0)
        t.same(y, (c[None, :, :] * hs).sum(axis=1).astype(np.float32), f"y D={d} T={n} integer steps")
        t.same(last, hs[:, :, -1] if n else h0, f"last D={d} T={n} integer steps")

    # Streaming: a sequence in two calls, the second starting from the first's last state.
    args = _ssm_inputs(rng, 6, 3000, "slow decay")
    want_y, want_last, y_bound, last_bound = _selective_scan64(*args)
    x, delta, a, b, c, h0 = args
    y1, mid = kernel(x[:, :1234], delta[:, :1234], a, b[:, :1234], c[:, :1234], h0)
    y2, last = kernel(x[:, 1234:], delta[:, 1234:], a, b[:, 1234:], c[:, 1234:], mid)
    t.close(np.concatenate([y1, y2], axis=1), want_y, y_bound, "y in two calls")
    t.close(last, want_last, last_bound, "last in two calls")

    # Strided views in (x and b transposed, delta every other column, c reversed), strided
    # out= buffers whose gaps stay untouched.
    d, n = 7, 3001
    x, delta, a, b, c, h0 = _ssm_inputs(rng, d, n, "mamba")
    want_y, want_last, y_bound, last_bound = _selective_scan64(x, delta, a, b, c, h0)
    xt, bt = np.ascontiguousarray(x.T), np.ascontiguousarray(b.T)
    wide = np.zeros((d, 2 * n), np.float32)
    wide[:, ::2] = delta
    rev = np.ascontiguousarray(c[:, ::-1])
    ybig, lbig = _sentinel(d, 2 * n), _sentinel(2 * d, SSM_STATES)
    got = kernel(xt.T, wide[:, ::2], a, bt.T, rev[:, ::-1], h0, out=(ybig[:, 1::2], lbig[::2]))
    assert got[0].base is ybig and got[1].base is lbig, "selective_scan(..., out=(y, last)) must return them"
    t.close(ybig[:, 1::2], want_y, y_bound, "y strided")
    t.close(lbig[::2], want_last, last_bound, "last strided")
    t.same(ybig[:, ::2], _sentinel(d, n), "y strided gaps")
    t.same(lbig[1::2], _sentinel(d, SSM_STATES), "last strided gaps")

    args = _ssm_inputs(rng, 8, (1 << 16) + 3, "mamba")
    t.threads(m, lambda: kernel(*args), "selective_scan D=8 T=2^16+3")
    args = _ssm_inputs(rng, 1, 100003, "slow decay")
    t.threads(m, lambda: kernel(*args), "selective_scan D=1 T=100003")

    # Bad calls: refused before anything is written.
    d, n = 3, 9
    x, delta, a, b, c, h0 = _ssm_inputs(rng, d, n, "mamba")
    y, last = _sentinel(d, n), _sentinel(d, SSM_STATES)

    def call(**change):
        given = dict(x=x, delta=delta, a=a, b=b, c=c, h0=h0, out=(y, last)) | change
        return lambda: kernel(given["x"], given["delta"], given["a"], given["b"], given["c"], given["h0"],
                              out=given["out"])

    t.refused_call("x is f64", call(x=x.astype(np.float64)), E_DTYPE, y, last)
    t.refused_call("c is f16", call(c=c.astype(np.float16)), E_DTYPE, y, last)
    t.refused_call("x has rank 3", call(x=x[:, :, None]), E_RANK, y, last)
    t.refused_call("h0 has rank 1", call(h0=h0[0]), E_RANK, y, last)
    t.refused_call("delta extent T+1", call(delta=_f32(rng, d, n + 1)), E_SHAPE, y, last)
    t.refused_call("b extent T-1", call(b=b[:, :-1]), E_SHAPE, y, last)
    t.refused_call("a has 8 states", call(a=a[:, :8]), E_SHAPE, y, last)
    t.refused_call("b has 15 states", call(b=b[:15]), E_SHAPE, y, last)
    t.refused_call("c has 17 states", call(c=np.concatenate([c, c[:1]])), E_SHAPE, y, last)
    t.refused_call("h0 has 32 states", call(h0=np.concatenate([h0, h0], axis=1)), E_SHAPE, y, last)
    t.refused_call("h0 extent D+1", call(h0=_f32(rng, d + 1, SSM_STATES)), E_SHAPE, y, last)
    t.refused_call("out y extent T-1", call(out=(y[:, :-1], last)), E_SHAPE, y, last)
    t.refused_call("out last has 15 states", call(out=(y, last[:, :15])), E_SHAPE, y, last)
    t.refused_call("out y is f64", call(out=(np.zeros((d, n)), last)), E_DTYPE, y, last)
    return t.summary()


CHECKS: dict[str, Callable[[object], str]] = {
    "saxpy": check_saxpy,
    "broadcast_add": check_broadcast_add,
    "row_scale": check_row_scale,
    "clamp": check_clamp,
    "collatz_steps": check_collatz_steps,
    "stencil3": check_stencil3,
    "reductions": check_reductions,
    "prefix_sum": check_prefix_sum,
    "logsumexp": check_logsumexp,
    "online_softmax": check_online_softmax,
    "linear_recurrence": check_linear_recurrence,
    "running_max_with_argmax": check_running_max_with_argmax,
    "segmented_cumprod_with_resets": check_segmented_cumprod_with_resets,
    "selective_scan": check_selective_scan,
}

from checks_memory import MEMORY_CHECKS  # noqa: E402  (indexed memory, atomics, ragged relations, RNG)

CHECKS.update(MEMORY_CHECKS)

from checks_scaled import SCALED_CHECKS  # noqa: E402  (microscaled and sparse contractions, T4 and T5)

CHECKS.update(SCALED_CHECKS)


def main(argv: list[str]) -> int:
    """``python samples/checks.py SAMPLE LIBRARY.so``: runs one check, prints its summary."""
    if len(argv) != 2 or argv[0] not in CHECKS:
        print(f"usage: checks.py {{{','.join(CHECKS)}}} LIBRARY.so", file=sys.stderr)
        return 2
    sample, library = argv
    try:
        print(CHECKS[sample](intentc.load(library)))
    except Exception as e:  # an assertion, or an error a good call should not raise
        reason = " ".join(str(e).split()) or type(e).__name__
        if not isinstance(e, AssertionError):
            reason = f"{type(e).__name__}: {reason}"
        print(f"FAIL {sample}: {reason[:160]}")
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
