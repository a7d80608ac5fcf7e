"""Indexed memory, effects, ragged relations, atomics and Philox (spec §8-§10): compiled vs
interpreter (the ``differential`` fixture) and vs NumPy, the M4/P3 decisions of the compiler,
the race and unique sanitizers, and the RNG's known answers and thread independence."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import intentc
from intentc.diagnostics import CompileError
from intentc.driver import frontend
from intentc.interp.memory import RaceError, UniqueViolation, philox4x32

REPO = Path(__file__).resolve().parents[2]
E_BOUNDS = -6

GATHERS = """
import intent as I

@intent.kernel
def take(x: f32[N], idx: i64[M]) -> f32[M]:
    return x[idx] * 2.0 + 1.0

@intent.kernel
def take_masked(x: f32[N], idx: i32[M]) -> f32[M]:
    return I.gather(x, idx, mask=(idx >= 0) & (idx < I.cast(N, i32)), fill=-5.0)

@intent.kernel
def take_rows(t: f32[R, C], rows: i64[K], cols: i64[C2]) -> f32[K, C2]:
    return t[rows.reshape([K, 1]), cols]

@intent.kernel
def take_col(t: f32[R, C], c: i64, rows: i64[K]) -> f32[K]:
    return t[rows, c]

@intent.kernel
def chase(x: f32[N], idx: i64[M], idx2: i64[K]) -> f32[K]:
    return x[idx[idx2]]

@intent.kernel
def weighted_sum(x: f32[N], idx: i64[M], w: f32[M]) -> f32[1]:
    return I.sum(x[idx] * w)

@intent.kernel
def masked_scalar(x: f32[N], idx: i64[M], out: mut f32[M]):
    for j in I.parallel(idx.axis(0)):
        i = idx[j]
        out[j] = I.load(x, i, mask=i < I.cast(N, i64), fill=7.0) if i >= 0 else 8.0

@intent.kernel
def masked_store(x: f32[N], keep: bool[N], out: mut f32[N]):
    for i in I.parallel(x.axis(0)):
        I.store(out, i, x[i] * 3.0, mask=keep[i])

@intent.kernel
def from_value(x: f32[N], idx: i64[M]) -> f32[M]:
    y = I.exp(x) + x
    return y[idx]

@intent.kernel
def buffered(x: f32[N], out: mut f32[N]):
    b = I.buffer(f32, [N], fill=1.5)
    for i in I.parallel(x.axis(0)):
        b[i] = b[i] * x[i]
    for i in I.parallel(x.axis(0)):
        out[i] = b[N - 1 - i]
"""


def test_gathers_fuse_and_match_numpy(differential):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(50).astype(np.float32)
    idx = rng.integers(0, 50, 77)
    run = differential(GATHERS, "take", x, idx)
    np.testing.assert_array_equal(run.result, x[idx] * np.float32(2) + np.float32(1))
    idx32 = rng.integers(-20, 70, 77).astype(np.int32)
    ok = (idx32 >= 0) & (idx32 < 50)
    run = differential(GATHERS, "take_masked", x, idx32)
    np.testing.assert_array_equal(run.result, np.where(ok, x[np.where(ok, idx32, 0)], -5.0).astype(np.float32))
    t = rng.standard_normal((9, 6)).astype(np.float32)
    rows, cols = rng.integers(0, 9, 4), rng.integers(0, 6, 5)
    run = differential(GATHERS, "take_rows", t, rows, cols)
    np.testing.assert_array_equal(run.result, t[rows[:, None], cols[None, :]])
    np.testing.assert_array_equal(differential(GATHERS, "take_col", t, 3, rows).result, t[rows, 3])
    idx2 = rng.integers(0, 77, 30)
    np.testing.assert_array_equal(differential(GATHERS, "chase", x, idx, idx2).result, x[idx[idx2]])
    w = rng.standard_normal(77).astype(np.float32)
    run = differential(GATHERS, "weighted_sum", x, idx, w, ulps=64)
    np.testing.assert_allclose(run.result[0], np.dot(x[idx].astype(np.float64), w), rtol=1e-4, atol=1e-4)
    run = differential(GATHERS, "from_value", x, idx)  # a pure gather of an immutable value (M2)
    np.testing.assert_allclose(run.result, (np.exp(x) + x)[idx], rtol=1e-6)


def test_out_of_range_gathers_are_refused(differential):
    x = np.ones(5, np.float32)
    for bad in ([0, 5], [-1, 2], [np.iinfo(np.int64).min]):
        run = differential(GATHERS, "take", x, np.array(bad))
        assert run.error is not None and run.error.code == E_BOUNDS


def test_masked_lanes_read_nothing(differential):
    """M3 with a far out-of-range index on inactive lanes: no bounds error, the fill."""
    x = np.arange(4, dtype=np.float32)
    idx = np.array([np.iinfo(np.int64).min, -1, 3, 4, np.iinfo(np.int64).max, 0])
    out = np.zeros(6, np.float32)
    run = differential(GATHERS, "masked_scalar", x, idx, out)
    np.testing.assert_array_equal(run.args[2], [8, 8, 3, 7, 7, 0])
    idx32 = np.array([np.iinfo(np.int32).min, 2, np.iinfo(np.int32).max], np.int32)
    np.testing.assert_array_equal(differential(GATHERS, "take_masked", x, idx32).result, [-5, 2, -5])


def test_masked_store_has_no_effect_on_invalid_lanes(differential):
    x = np.arange(6, dtype=np.float32)
    keep = np.array([1, 0, 1, 0, 0, 1], bool)
    out = np.full(6, -1, np.float32)
    run = differential(GATHERS, "masked_store", x, keep, out)
    np.testing.assert_array_equal(run.args[2], np.where(keep, 3 * x, -1))


def test_logical_buffer_fill(differential):
    x = np.arange(1, 8, dtype=np.float32)
    run = differential(GATHERS, "buffered", x, np.zeros(7, np.float32))
    np.testing.assert_array_equal(run.args[1], (1.5 * x)[::-1])


# ---- unique stores (M4) ---------------------------------------------------------------------------
SCATTERS = """
import intent as I

@intent.kernel
def interleave(x: f32[N], out: mut f32[M]):
    for i in I.parallel(x.axis(0)):
        out[2 * i + 1] = x[i]
        out[2 * i] = -x[i]

@intent.kernel
def reverse_rows(x: f32[R, C], out: mut f32[R, C]):
    for r, c in I.parallel(x.axis(0), x.axis(1)):
        out[R - 1 - r, c] = x[r, c]

@intent.kernel
def compact(x: f32[N], flags: bool[N], out: mut f32[N]):
    pos = I.cumsum(I.cast(flags, i64), exclusive=True)
    for i in I.parallel(x.axis(0)):
        if flags[i]:
            out[pos[i]] = x[i]

@intent.kernel
def compact_tensor(x: f32[N], flags: bool[N], out: mut f32[N]):
    pos = I.cumsum(I.cast(flags, i64)) - 1
    I.scatter(out, pos, x, mask=flags)

@intent.kernel
def permute(x: f32[N], perm: i64[N], out: mut f32[N]):
    I.scatter(out, perm, x, unique=True)

@intent.kernel
def permute_points(x: f32[N], perm: i64[N], out: mut f32[N]):
    for i in I.parallel(x.axis(0)):
        I.scatter(out, perm[i], x[i], unique=True)

@intent.kernel
def rotate(x: f32[N], s: index, out: mut f32[N]):
    for i in I.parallel(x.axis(0)):
        out[(i + s) % N] = x[i]

@intent.kernel
def segments_twice(v: f32[N], offs: i64[S1], out: mut f32[N]):
    r = I.ragged(I.domain(0, S1 - 1), v.axis(0), offs)
    for g in I.parallel(I.domain(0, S1 - 1)):
        for j in I.members(r, g):
            out[j] = 2.0 * v[j]
"""


def test_provably_unique_stores(differential):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(9).astype(np.float32)
    run = differential(SCATTERS, "interleave", x, np.zeros(18, np.float32))
    np.testing.assert_array_equal(run.args[1][1::2], x)
    np.testing.assert_array_equal(run.args[1][::2], -x)
    m = rng.standard_normal((4, 3)).astype(np.float32)
    np.testing.assert_array_equal(differential(SCATTERS, "reverse_rows", m, np.zeros_like(m)).args[1], m[::-1])
    for n in (0, 1, 40):
        x = rng.standard_normal(n).astype(np.float32)
        flags = rng.integers(0, 2, n).astype(bool)
        for kernel in ("compact", "compact_tensor"):
            out = np.full(n, 9, np.float32)
            run = differential(SCATTERS, kernel, x, flags, out)
            want = np.full(n, 9, np.float32)
            want[:flags.sum()] = x[flags]
            np.testing.assert_array_equal(run.args[2], want)
    for shift in (0, 3, -11):
        run = differential(SCATTERS, "rotate", x, shift, np.zeros(40, np.float32))
        np.testing.assert_array_equal(run.args[2], np.roll(x, shift))
    offs = np.array([0, 3, 3, 7, 10])
    v = rng.standard_normal(10).astype(np.float32)
    np.testing.assert_array_equal(differential(SCATTERS, "segments_twice", v, offs, np.zeros(10, np.float32)).args[2],
                                  2 * v)


def test_unique_escape_hatch_and_its_sanitizer(differential):
    x = np.arange(6, dtype=np.float32)
    perm = np.array([3, 0, 5, 1, 4, 2])
    for kernel in ("permute", "permute_points"):
        out = np.zeros(6, np.float32)
        run = differential(SCATTERS, kernel, x, perm, out)
        want = np.zeros(6, np.float32)
        want[perm] = x
        np.testing.assert_array_equal(run.args[2], want)
        intentc.interpret(SCATTERS, kernel, x, perm, np.zeros(6, np.float32), sanitize="unique")  # quiet
        dup = np.array([3, 0, 5, 3, 4, 2])
        with pytest.raises(UniqueViolation, match=r"M4.*twice|M4.*two points"):
            intentc.interpret(SCATTERS, kernel, x, dup, np.zeros(6, np.float32), sanitize="unique")


def _diagnostic(body: str):
    source = "import intent as I\n\n@intent.kernel\n" + body
    try:
        frontend(source, "probe.intent")
    except CompileError as exc:
        return exc.diagnostics[0]
    return None


@pytest.mark.parametrize("body,rule", [
    ("def k(x: f32[N], idx: i64[N], out: mut f32[N]):\n    for i in I.parallel(x.axis(0)):\n"
     "        out[idx[i]] = x[i]\n", "M4"),
    ("def k(x: f32[N], idx: i64[N], out: mut f32[N]):\n    I.scatter(out, idx, x)\n", "M4"),
    ("def k(x: f32[N], idx: i64[N], out: mut f32[N]):\n    out[idx] = x\n", "M4"),
    ("def k(x: f32[R, C], out: mut f32[C]):\n    for r in I.parallel(x.axis(0)):\n        for c in x.axis(1):\n"
     "            out[c] = x[r, c]\n", "M4"),
    ("def k(x: f32[N], flags: bool[N], out: mut f32[N]):\n    pos = I.cumsum(I.cast(flags, i64), exclusive=True)\n"
     "    for i in I.parallel(x.axis(0)):\n        out[pos[i]] = x[i]\n", "M4"),
    ("def k(x: f32[N], out: mut f32[N]):\n    for i in I.parallel(x.axis(0)):\n        out[0] = x[i]\n", "P3"),
    ("def k(x: f32[R, C], out: mut f32[R]):\n    for r, c in I.parallel(x.axis(0), x.axis(1)):\n"
     "        out[r] = x[r, c]\n", "P3"),
    ("def k(x: f32[N], out: mut f32[N]):\n    for i in I.parallel(x.axis(0)):\n        out[i] = out[i + 1] + x[i]\n",
     "P3"),
    ("def k(x: f32[N], out: mut f32[M]):\n    for i in I.parallel(x.axis(0)):\n        out[i] = x[i]\n"
     "        out[i + 1] = x[i]\n", "P3"),
    ("def k(x: i64[N], c: mut i64[1], out: mut i64[N]):\n    for i in I.parallel(x.axis(0)):\n"
     "        I.atomic_add(c, 0, x[i])\n        out[i] = c[0]\n", "A3"),
    ("def k(x: f32[N], idx: i64[N], out: mut f32[N]):\n    for i in I.parallel(x.axis(0)):\n"
     "        I.scatter_reduce(out, idx[i], x[i], combine=\"add\")\n", "M5"),
])
def test_unprovable_or_conflicting_writes_are_errors(body, rule):
    diag = _diagnostic(body)
    assert diag is not None and diag.rule == rule, diag.render_plain() if diag else "compiled"
    assert diag.hint
    if rule == "M4":
        assert "scatter_reduce" in diag.hint


@pytest.mark.parametrize("body", [
    "def k(x: f32[N], out: mut f32[M]):\n    for i in I.parallel(x.axis(0)):\n        out[2 * i + 1] = x[i]\n",
    "def k(x: f32[N], out: mut f32[N]):\n    for i in I.parallel(x.axis(0)):\n        out[i] = out[i] * x[i]\n",
    "def k(x: f32[R, C], out: mut f32[C, R]):\n    for r, c in I.parallel(x.axis(0), x.axis(1)):\n"
    "        out[c, r] = x[r, c]\n",
    "def k(x: f32[R, C], out: mut f32[R, C]):\n    for r in I.parallel(x.axis(0)):\n        for c in x.axis(1):\n"
    "            out[r, c] = x[r, c]\n",
    "def k(x: f32[N], out: mut f32[N]):\n    for i in I.parallel(I.domain(0, 1)):\n        out[0] = x[i]\n",
    "def k(x: f32[R, C], out: mut f32[R]):\n    for r in I.parallel(x.axis(0)):\n        b = I.buffer(f32, [2], fill=0.0)\n"
    "        b[0] = x[r, 0]\n        out[r] = b[0]\n",
    "def k(x: i64[N], c: mut i64[1], out: mut i64[N]):\n    for i in I.parallel(x.axis(0)):\n"
    "        out[i] = I.atomic_add(c, 0, x[i])\n",
    "def k(x: f32[N], s: index, out: mut f32[N]):\n    for i in I.parallel(x.axis(0)):\n"
    "        out[(N - 1 - i + s) % N] = x[i]\n",
])
def test_provably_fine_programs_compile(body):
    diag = _diagnostic(body)
    assert diag is None, diag.render_plain()


# ---- races: the interpreter's race sanitizer (P3, A3) ------------------------------------------------
RACES = """
import intent as I

@intent.kernel
def chase(x: f32[N], idx: i64[N], out: mut f32[N]):
    for i in I.parallel(x.axis(0)):
        out[i] = out[idx[i]] + x[i]

@intent.kernel
def mixed(x: i64[N], idx: i64[N], c: mut i64[N]):
    for i in I.parallel(x.axis(0)):
        I.atomic_add(c, idx[i], 1)
        x2 = c[x[i]]
"""


def test_race_sanitizer_names_both_points_and_lines():
    x = np.arange(5, dtype=np.float32)
    intentc.interpret(RACES, "chase", x, np.arange(5), np.zeros(5, np.float32), sanitize="race")  # own elements
    with pytest.raises(RaceError) as info:
        intentc.interpret(RACES, "chase", x, np.array([1, 2, 3, 4, 0]), np.zeros(5, np.float32), sanitize="race")
    text = str(info.value)
    assert "P3" in text and "point (i = " in text and "out[" in text and "line 7" in text
    with pytest.raises(RaceError, match="updates atomically"):
        intentc.interpret(RACES, "mixed", np.array([0, 1, 2]), np.array([1, 1, 1]), np.zeros(3, np.int64),
                          sanitize="race")
    intentc.interpret(RACES, "mixed", np.array([0, 0, 0]), np.array([1, 1, 2]), np.zeros(3, np.int64),
                      sanitize="race")  # atomics on [1], [2]; plain reads of [0] only: no conflict


# ---- scatter_reduce (M5) ------------------------------------------------------------------------------
REDUCES = """
import intent as I

@intent.fn
def absmax(a: f32, b: f32) -> f32:
    return I.maximum(I.abs(a), I.abs(b))

@intent.kernel
def ints(idx: i64[N], v: i32[N], add: mut i32[B], lo: mut i32[B], hi: mut i32[B], bits: mut i32[B], xo: mut i32[B]):
    ok = (idx >= 0) & (idx < I.cast(B, i64))
    I.scatter_reduce(add, idx, v, mask=ok)
    I.scatter_reduce(lo, idx, v, combine="min", mask=ok)
    I.scatter_reduce(hi, idx, v, combine="max", mask=ok)
    I.scatter_reduce(bits, idx, v, combine="or", mask=ok)
    I.scatter_reduce(xo, idx, v, combine="xor", mask=ok)

@intent.kernel
def floats(idx: i64[N], v: f32[N], total: mut f32[B], big: mut f32[B]):
    I.scatter_reduce(total, idx, v)
    I.scatter_reduce(big, idx, v, combine=absmax, identity=0.0)

@intent.kernel
def grid(r: i64[N], c: i64[N], v: i64[N], out: mut i64[R, C]):
    I.scatter_reduce(out, (r, c), v)

@intent.kernel
def atomic_lanes(idx: i64[N], v: i64[N], out: mut i64[B], top: mut f32[B], w: f32[N]):
    for i in I.parallel(idx.axis(0)):
        I.scatter_reduce(out, idx[i], v[i], combine="add")
        I.scatter_reduce(top, idx[i], w[i], combine="max")
"""


def test_scatter_reduce_integer_combines_are_exact(differential):
    rng = np.random.default_rng(3)
    for n in (0, 1, 1000, 9000):
        idx = rng.integers(-2, 40, n)
        v = rng.integers(-1000, 1000, n).astype(np.int32)
        arrays = [np.zeros(37, np.int32), np.full(37, 2**31 - 1, np.int32), np.full(37, -2**31, np.int32),
                  np.zeros(37, np.int32), np.zeros(37, np.int32)]
        run = differential(REDUCES, "ints", idx, v, *arrays)
        ok = (idx >= 0) & (idx < 37)
        for k, ufunc in enumerate((np.add, np.minimum, np.maximum, np.bitwise_or, np.bitwise_xor)):
            want = arrays[k].copy()
            ufunc.at(want, idx[ok], v[ok])
            np.testing.assert_array_equal(run.args[2 + k], want)
    r, c = rng.integers(0, 3, 5000), rng.integers(0, 4, 5000)
    v = rng.integers(0, 9, 5000)
    run = differential(REDUCES, "grid", r, c, v, np.zeros((3, 4), np.int64))
    want = np.zeros((3, 4), np.int64)
    np.add.at(want, (r, c), v)
    np.testing.assert_array_equal(run.args[3], want)


def test_scatter_reduce_floats_are_deterministic(differential):
    """Compiled and interpreted give the same bits (the grouping is defined), close to NumPy."""
    rng = np.random.default_rng(4)
    for n in (5, 20000):
        idx = rng.integers(0, 7, n)
        v = rng.standard_normal(n).astype(np.float32)
        run = differential(REDUCES, "floats", idx, v, np.zeros(7, np.float32), np.zeros(7, np.float32))
        want = np.zeros(7)
        np.add.at(want, idx, v.astype(np.float64))
        np.testing.assert_allclose(run.args[2], want, rtol=1e-4, atol=1e-3)
        big = np.zeros(7, np.float32)
        np.maximum.at(big, idx, np.abs(v))
        np.testing.assert_array_equal(run.args[3], big)


def test_scatter_reduce_inside_parallel_points_uses_atomics(differential):
    rng = np.random.default_rng(5)
    idx = rng.integers(0, 11, 5000)
    v = rng.integers(-9, 9, 5000)
    w = rng.standard_normal(5000).astype(np.float32)
    run = differential(REDUCES, "atomic_lanes", idx, v, np.zeros(11, np.int64), np.full(11, -np.inf, np.float32), w)
    want = np.zeros(11, np.int64)
    np.add.at(want, idx, v)
    np.testing.assert_array_equal(run.args[2], want)
    top = np.full(11, -np.inf, np.float32)
    np.maximum.at(top, idx, w)
    np.testing.assert_array_equal(run.args[3], top)


def test_scatter_reduce_bad_index_writes_nothing(differential):
    out = np.zeros(7, np.float32)
    run = differential(REDUCES, "floats", np.array([1, 2, 7]), np.ones(3, np.float32), out, np.zeros(7, np.float32))
    assert run.error is not None and run.error.code == E_BOUNDS
    assert not run.args[2].any(), "the privatised lanes fail before the destination is touched"


# ---- atomics (M6, A1, A2) ---------------------------------------------------------------------------------
ATOMICS = """
import intent as I

@intent.kernel
def claim(flags: bool[N], slots: mut i64[N], count: mut i64[1]):
    for i in I.parallel(flags.axis(0)):
        if flags[i]:
            slots[i] = I.atomic_add(count, 0, 1, order="acq_rel")

@intent.kernel
def every_op(x: i32[N], t: mut i32[8], old: mut i32[N]):
    for i in I.parallel(x.axis(0)):
        a = I.atomic_add(t, 0, x[i])
        b = I.atomic_sub(t, 1, x[i], order="release")
        c = I.atomic_min(t, 2, x[i], order="acquire")
        d = I.atomic_max(t, 3, x[i])
        e = I.atomic_and(t, 4, x[i])
        f = I.atomic_or(t, 5, x[i])
        g = I.atomic_xor(t, 6, x[i])
        old[i] = a + b + c + d + e + f + g - a - b - c - d - e - f - g + x[i]

@intent.kernel
def floats(x: f32[N], t: mut f32[3], d: mut f64[1]):
    for i in I.parallel(x.axis(0)):
        I.atomic_min(t, 0, x[i])
        I.atomic_max(t, 1, x[i])
        I.atomic_add(d, 0, I.cast(x[i], f64))

@intent.kernel
def single(t: mut i64[2], u: mut f32[1], out: mut i64[4]):
    out[0] = I.atomic_cas(t, 0, 5, 9, order="acq_rel")
    out[1] = I.atomic_cas(t, 0, 5, 7)
    out[2] = I.atomic_exchange(t, 1, 3)
    I.atomic_store(t, 1, out[2] + 40, order="release")
    out[3] = I.atomic_load(t, 1, order="acquire")
    old = I.atomic_exchange(u, 0, 2.5)
    I.atomic_store(u, 0, old + 1.0)
"""


def test_atomic_claims_are_distinct(differential):
    rng = np.random.default_rng(6)
    flags = rng.integers(0, 2, 3000).astype(bool)
    m = differential.build(ATOMICS)
    slots, count = np.full(3000, -1), np.array([10])
    m.claim(flags, slots, count)
    assert count[0] == 10 + flags.sum()
    assert sorted(slots[flags]) == list(range(10, 10 + flags.sum())) and (slots[~flags] == -1).all()


def test_atomic_operations(differential):
    rng = np.random.default_rng(7)
    x = rng.integers(-50, 50, 4000).astype(np.int32)
    t = np.array([0, 0, 1000, -1000, -1, 0, 0, 0], np.int32)
    run = differential(ATOMICS, "every_op", x, t, np.zeros(4000, np.int32))
    got = run.args[1]
    assert got[0] == x.sum() and got[1] == -x.sum() and got[2] == min(1000, x.min()) and got[3] == max(-1000, x.max())
    assert got[4] == np.bitwise_and.reduce(x) and got[5] == np.bitwise_or.reduce(x)
    assert got[6] == np.bitwise_xor.reduce(x)
    np.testing.assert_array_equal(run.args[2], x)
    y = rng.standard_normal(1000).astype(np.float32)
    y[5] = -0.0
    run = differential(ATOMICS, "floats", y, np.array([np.inf, -np.inf, 0], np.float32), np.zeros(1))
    assert run.args[1][0] == y.min() and run.args[1][1] == y.max()
    np.testing.assert_allclose(run.args[2][0], y.astype(np.float64).sum(), rtol=1e-12)
    y[17] = np.nan  # NaN propagates through atomic min/max like I.minimum / I.maximum
    run = differential(ATOMICS, "floats", y, np.array([np.inf, -np.inf, 0], np.float32), np.zeros(1))
    assert np.isnan(run.args[1][0]) and np.isnan(run.args[1][1])
    run = differential(ATOMICS, "single", np.array([5, 1]), np.array([0.5], np.float32), np.zeros(4, np.int64))
    np.testing.assert_array_equal(run.args[2], [5, 9, 1, 41])
    np.testing.assert_array_equal(run.args[0], [9, 41])
    assert run.args[1][0] == 1.5


def test_atomics_compile_for_ptx_at_device_scope(tmp_path):
    from intentc.driver import build

    source = tmp_path / "atomics.intent"
    source.write_text(ATOMICS)
    build(source, tmp_path / "atomics.ptx", target="sm_90")
    ptx = (tmp_path / "atomics.ptx").read_text()
    assert "atom.global.add" in ptx and "fence.acq_rel.gpu" in ptx and ".gpu" in ptx
    assert "ld.acquire.gpu" in ptx and "st.release.gpu" in ptx
    import shutil

    if shutil.which("ptxas"):
        subprocess.run(["ptxas", "-arch=sm_90", str(tmp_path / "atomics.ptx"), "-o", str(tmp_path / "a.cubin")],
                       check=True)


# ---- ragged relations (G1-G3) ---------------------------------------------------------------------------
RAGGED = """
import intent as I

@intent.kernel
def sums(values: f32[NNZ], offsets: i64[R1], out: mut f32[R]):
    r = I.ragged(out.axis(0), values.axis(0), offsets)
    for g in I.parallel(out.axis(0)):
        out[g] = I.sum(values[I.indices(I.members(r, g))])

@intent.kernel
def mapped(values: f32[C], offsets: i32[R1], cols: i64[NNZ], out: mut f32[R]):
    r = I.ragged(out.axis(0), cols.axis(0), offsets, mapping=cols)
    for g in I.parallel(out.axis(0)):
        out[g] = I.max(values[I.members(r, g)])
"""


def test_ragged_rows(differential):
    rng = np.random.default_rng(8)
    lengths = rng.integers(0, 6, 40)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    values = rng.standard_normal(offsets[-1]).astype(np.float32)
    run = differential(RAGGED, "sums", values, offsets, np.zeros(40, np.float32), ulps=64)
    want = [values[a:b].astype(np.float64).sum() for a, b in zip(offsets[:-1], offsets[1:])]
    np.testing.assert_allclose(run.args[2], want, rtol=1e-5, atol=1e-5)
    table = rng.standard_normal(13).astype(np.float32)
    cols = rng.integers(0, 13, offsets[-1])
    run = differential(RAGGED, "mapped", table, offsets.astype(np.int32), cols, np.zeros(40, np.float32))
    want = [table[cols[a:b]].max() if b > a else -np.inf for a, b in zip(offsets[:-1], offsets[1:])]
    np.testing.assert_array_equal(run.args[3], np.array(want, np.float32))


@pytest.mark.parametrize("offsets,segment", [([0, 2, 1, 4], 1), ([0, 2, 3, 9], 2), ([-3, 2, 3, 4], 0)])
def test_bad_offsets_name_the_segment_and_write_nothing(differential, offsets, segment):
    out = np.full(3, 5, np.float32)
    run = differential(RAGGED, "sums", np.ones(4, np.float32), np.array(offsets), out)
    assert run.error is not None and run.error.code == E_BOUNDS
    assert f"segment {segment}" in str(run.error) and "G2" in str(run.error)
    assert (run.args[2] == 5).all(), "nothing is written"


# ---- Philox (N1, N2) ----------------------------------------------------------------------------------------
KAT = [((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
       ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
       ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1))]

RNG = """
import intent as I

@intent.kernel
def words(k0: u32, k1: u32, c0: u32[N], c1: u32[N], c2: u32[N], c3: u32[N]) -> (u32[N], u32[N], u32[N], u32[N]):
    return I.philox((k0, k1), (c0, c1, c2, c3))

@intent.kernel
def one(k0: u32, k1: u32, c0: u32, c1: u32, c2: u32, c3: u32, out: mut u32[4]):
    a, b, c, d = I.philox((k0, k1), (c0, c1, c2, c3))
    out[0] = a
    out[1] = b
    out[2] = c
    out[3] = d

@intent.kernel
def floats(seed: u32, n: u32[N]) -> (f32[N], f32[N], f64[N]):
    u0, u1, _, _ = I.uniform((seed, 0), (n, 0, 0, 0))
    d0, _ = I.uniform((seed, 0), (n, 0, 0, 0), dtype=f64)
    return (u0, u1, d0)
"""


@pytest.mark.parametrize("counter,key,want", KAT)
def test_philox_known_answers(differential, counter, key, want):
    columns = [np.full(3, c, np.uint32) for c in counter]
    run = differential(RNG, "words", *key, *columns)
    for got, w in zip(run.result, want):
        np.testing.assert_array_equal(got, np.full(3, w, np.uint32))
    run = differential(RNG, "one", *key, *counter, np.zeros(4, np.uint32))
    np.testing.assert_array_equal(run.args[6], np.array(want, np.uint32))
    assert philox4x32(key, counter) == list(want)


def test_uniform_conversion(differential):
    n = np.arange(2000, dtype=np.uint32)
    run = differential(RNG, "floats", 77, n)
    w = philox4x32((np.full(2000, 77, np.uint32), np.zeros(2000, np.uint32)), (n, 0 * n, 0 * n, 0 * n))
    np.testing.assert_array_equal(run.result[0], (w[0] >> 8).astype(np.float32) * np.float32(2.0 ** -24))
    np.testing.assert_array_equal(run.result[1], (w[1] >> 8).astype(np.float32) * np.float32(2.0 ** -24))
    bits = (w[0].astype(np.uint64) << np.uint64(21)) ^ (w[1].astype(np.uint64) >> np.uint64(11))
    np.testing.assert_array_equal(run.result[2], bits.astype(np.float64) * 2.0 ** -53)
    for r in run.result:
        assert r.min() >= 0 and r.max() < 1


def test_philox_bits_do_not_depend_on_thread_count(tmp_path):
    """The sample's 2^18 counters with INTENT_NUM_THREADS = 1, 2, 3: the same digest."""
    script = (
        "import hashlib, sys, numpy as np, intentc\n"
        "from intentc.driver import build\n"
        f"build({str(REPO / 'samples' / 'philox_rng.intent')!r}, sys.argv[1])\n"
        "m = intentc.load(sys.argv[1])\n"
        "w = np.zeros((4, 1 << 18), np.uint32); m.philox_words(12345, w)\n"
        "u = np.zeros((4, 1 << 18), np.float32); m.uniform_f32(12345, u)\n"
        "print(hashlib.sha256(w.tobytes() + u.tobytes()).hexdigest())\n")
    digests = set()
    for threads in ("1", "2", "3"):
        env = dict(os.environ, INTENT_NUM_THREADS=threads, PYTHONPATH=str(REPO))
        out = subprocess.run([sys.executable, "-c", script, str(tmp_path / f"p{threads}.so")], env=env,
                             capture_output=True, text=True, check=True)
        digests.add(out.stdout.strip())
    assert len(digests) == 1


def test_rng_and_atomics_are_rejected_where_purity_is_required():
    source = """import intent as I

@intent.fn
def summarize(x: u32[S]) -> u32:
    a, b, c, d = I.philox((1, 2), (x[0], 0, 0, 0))
    return a

@intent.fn
def combine(a: u32, b: u32) -> u32:
    return a ^ b

@intent.kernel
def k(x: u32[N]) -> u32[1]:
    return I.region_fold(x.axis(0), (x,), summarize=summarize, combine=combine, identity=0)
"""
    with pytest.raises(CompileError) as info:
        frontend(source, "rng_in_helper.intent")
    assert any(d.rule in ("R4", "R5") for d in info.value.diagnostics)


def test_compiled_unique_and_race_sanitizers(tmp_path):
    """--sanitize=unique instruments scatters asserted unique; --sanitize=race adds the order
    sanitizer (INTENT_E_SANITIZER, -11) and stays quiet on a correct program."""
    from intentc.driver import build

    (tmp_path / "s.intent").write_text(SCATTERS)
    (tmp_path / "r.intent").write_text(RACES)
    build(tmp_path / "s.intent", tmp_path / "s.so", sanitize=("unique",))
    build(tmp_path / "r.intent", tmp_path / "r.so", sanitize=("race",))
    m, r = intentc.load(tmp_path / "s.so"), intentc.load(tmp_path / "r.so")
    x = np.arange(6, dtype=np.float32)
    for kernel in (m.permute, m.permute_points):
        out = np.zeros(6, np.float32)
        kernel(x, np.array([3, 0, 5, 1, 4, 2]), out)
        np.testing.assert_array_equal(out, [1, 3, 5, 0, 4, 2])
        with pytest.raises(intentc.KernelError) as info:
            kernel(x, np.array([3, 0, 5, 3, 4, 2]), np.zeros(6, np.float32))
        assert info.value.code == -11 and "unique" in str(info.value) and "element 3" in str(info.value)
    out = np.zeros(5, np.float32)
    r.chase(x[:5], np.arange(5), out)
    np.testing.assert_array_equal(out, x[:5])
    with pytest.raises(intentc.KernelError) as info:
        r.chase(x[:5], np.array([1, 2, 3, 4, 0]), np.ones(5, np.float32))
    assert info.value.code == -11


def test_masked_lanes_read_nothing_in_a_bounds_checked_build(tmp_path):
    """--sanitize=bounds keeps every bounds check: an inactive lane still reads nothing."""
    from intentc.driver import build

    (tmp_path / "g.intent").write_text(GATHERS)
    build(tmp_path / "g.intent", tmp_path / "g.so", sanitize=("bounds",))
    m = intentc.load(tmp_path / "g.so")
    x = np.arange(4, dtype=np.float32)
    idx = np.array([np.iinfo(np.int64).min, -1, 3, 4, np.iinfo(np.int64).max, 0])
    out = np.zeros(6, np.float32)
    m.masked_scalar(x, idx, out)
    np.testing.assert_array_equal(out, [8, 8, 3, 7, 7, 0])
    idx32 = np.array([np.iinfo(np.int32).min, 2, np.iinfo(np.int32).max], np.int32)
    np.testing.assert_array_equal(m.take_masked(x, idx32), [-5, 2, -5])
    with pytest.raises(intentc.KernelError) as info:
        m.take(x, np.array([0, 4]))
    assert info.value.code == E_BOUNDS


def test_a_gather_of_a_tensor_written_later_is_a_snapshot(differential):
    """Program order: y = x[idx] reads x before the loop overwrites it (not fused past it)."""
    source = """
import intent as I

@intent.kernel
def k(x: mut f32[N], idx: i64[N], b: mut f32[N]) -> f32[N]:
    y = x[idx] + 1.0
    for i in I.parallel(x.axis(0)):
        x[i] = 0.0
    buf = I.buffer(f32, [N], fill=2.0)
    z = buf[idx]
    I.scatter_reduce(buf, idx, b)
    return y + z
"""
    x = np.arange(5, dtype=np.float32)
    idx = np.array([4, 3, 2, 1, 0])
    run = differential(source, "k", x, idx, np.ones(5, np.float32))
    np.testing.assert_array_equal(run.result, x[idx] + 3)
    np.testing.assert_array_equal(run.args[0], 0)
