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


CHECKS: dict[str, Callable[[object], str]] = {
    "saxpy": check_saxpy,
    "broadcast_add": check_broadcast_add,
    "row_scale": check_row_scale,
    "clamp": check_clamp,
    "collatz_steps": check_collatz_steps,
}


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
