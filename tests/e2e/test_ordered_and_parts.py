"""Rules that the rest of the suite covers only in passing, each with a program that fails
if the rule is broken:

- O4: an ordered program keeps its order unless analysis proves the same result. A float
  accumulation and a recurrence through memory are bit-exact against the sequential
  NumPy loop, for inputs where any regrouping changes the bits, at every thread count.
- R10, L1: parts whose boundaries the author computes (pages with a tail, empty pages,
  pages past the end) give the author's member sets, compiled and interpreted.
- C2: a helper that takes a row view and slices it gives the same results, bit for bit
  compiled and against the interpreter, as the same slice written in the kernel.
"""
from __future__ import annotations

import numpy as np
import pytest


SOURCE = """
import intent as I

@intent.kernel
def ordered_sum(x: f32[N], out: mut f32[1]):
    acc: f32 = 0.0
    for i in x.axis(0):
        acc = acc + x[i]
    out[0] = acc

@intent.kernel
def recurrence(x: f32[N], a: f32, out: mut f32[N]):
    out[0] = x[0]
    for i in I.domain(1, N):
        out[i] = out[i - 1] * a + x[i]

@intent.kernel
def rows_in_order(x: f32[R, C], out: mut f32[R]):
    for r in I.parallel(x.axis(0)):
        acc: f32 = 0.0
        for c in x.axis(1):
            acc = acc + x[r, c]
        out[r] = acc

@intent.kernel
def page_sums(x: i64[N], P: index, out: mut i64[M]):
    for p in I.parallel(out.axis(0)):
        lo = I.minimum(p * P, N)
        hi = I.minimum(lo + P, N)
        out[p] = I.sum(x[lo:hi])

@intent.kernel
def page_maxima(x: f32[N], P: index, out: mut f32[M], sizes: mut i64[M]):
    for p in I.parallel(out.axis(0)):
        lo = I.minimum(p * P, N)
        hi = I.minimum(lo + P, N)
        out[p] = I.max(x[lo:hi])
        sizes[p] = len(x[lo:hi])
"""

HELPER_SOURCE = """
import intent as I

@intent.fn
def doubled_window(x: f32[N], lo: index, hi: index) -> f32:
    return I.sum(x[lo:hi] * 2.0)

@intent.kernel
def by_helper(x: f32[R, N], a: index, b: index, out: mut f32[R]):
    for r in I.parallel(x.axis(0)):
        out[r] = doubled_window(x[r, :], a, b)

@intent.kernel
def written_out(x: f32[R, N], a: index, b: index, out: mut f32[R]):
    for r in I.parallel(x.axis(0)):
        out[r] = I.sum(x[r, :][a:b] * 2.0)
"""


def _adversarial(n: int, seed: int) -> np.ndarray:
    """Values over many binades with cancellations: almost every regrouping of their sum
    rounds differently."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(n) * np.exp2(rng.integers(-20, 20, n))).astype(np.float32)


@pytest.mark.parametrize("threads", [1, 2])
def test_o4_an_ordered_float_accumulation_keeps_its_order(differential, threads):
    module = differential.build(SOURCE)
    module.set_num_threads(threads)
    for n, seed in ((1, 0), (7, 1), (1000, 2), (65537, 3)):
        x = _adversarial(n, seed)
        run = differential(SOURCE, "ordered_sum", x, np.zeros(1, np.float32), ulps=0)
        assert run.args[1][0] == np.add.accumulate(x, dtype=np.float32)[-1]
        assert n < 1000 or np.add.accumulate(x, dtype=np.float32)[-1] != np.float32(np.sum(x, dtype=np.float32)), \
            "the input does not tell ordered from regrouped sums"
    x = _adversarial(257 * 33, 4).reshape(257, 33)
    run = differential(SOURCE, "rows_in_order", x, np.zeros(257, np.float32), ulps=0)
    np.testing.assert_array_equal(run.args[1], np.add.accumulate(x, axis=1, dtype=np.float32)[:, -1])
    module.set_num_threads(0)


def test_o4_a_recurrence_through_memory_is_sequential(differential):
    x = _adversarial(4099, 5)
    a = np.float32(0.999)
    want = np.empty_like(x)
    want[0] = x[0]
    for i in range(1, len(x)):
        want[i] = np.float32(want[i - 1] * a) + x[i]
    run = differential(SOURCE, "recurrence", x, a, np.zeros_like(x), ulps=0)
    np.testing.assert_array_equal(run.args[2], want)


@pytest.mark.parametrize("n, page, pages", [(0, 4, 3), (10, 4, 3), (10, 4, 5), (12, 4, 3), (5, 100, 2),
                                            (7, 1, 7), (3, 0, 2)])
def test_r10_l1_author_computed_pages(differential, n, page, pages):
    x = np.arange(1, n + 1, dtype=np.int64) ** 2
    run = differential(SOURCE, "page_sums", x, np.int64(page), np.full(pages, -1, np.int64))
    starts = [min(p * page, n) for p in range(pages)]
    want = [int(x[s:min(s + page, n)].sum()) for s in starts]  # tails short, pages past the end empty
    assert run.args[2].tolist() == want


def test_r10_l1_empty_parts_have_the_identity(differential):
    x = np.array([3.0, -1.0, 7.0, 2.0, 5.0], np.float32)
    run = differential(SOURCE, "page_maxima", x, np.int64(2), np.zeros(4, np.float32), np.zeros(4, np.int64))
    assert run.args[2].tolist() == [3.0, 7.0, 5.0, -np.inf]  # the last page has no members
    assert run.args[3].tolist() == [2, 2, 1, 0]


def test_c2_a_helper_gives_the_relation_written_out(differential):
    rng = np.random.default_rng(6)
    x = rng.uniform(-1, 1, (5, 40)).astype(np.float32)
    for a, b in ((0, 40), (3, 17), (10, 10), (39, 40), (5, 41)):  # the last: D5 on both sides
        one = differential(HELPER_SOURCE, "by_helper", x, np.int64(a), np.int64(b), np.zeros(5, np.float32))
        two = differential(HELPER_SOURCE, "written_out", x, np.int64(a), np.int64(b), np.zeros(5, np.float32))
        assert one.args[3].tobytes() == two.args[3].tobytes()  # compiled: one program, the same bits
        assert (one.error is None) == (two.error is None) == (b <= 40)
        if one.error is not None:
            assert one.error.code == two.error.code
