"""region_fold and region_scan (R2-R9): samples of the issue against serial references,
determinism across thread counts, and the laws sanitizer."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import intentc
from intentc.interp.structured import LawViolation
from intentc.lower.region_lowering import CHAIN_SEGMENT, GROUP_CHAINS, WINDOW_GROUPS
from region_programs import AFFINE_AND_RUNNING_MAX  # tests/e2e/region_programs.py

SOURCE = """
import intent as I

@intent.fn
def lse_summary(x: f32[S]) -> (f32, f32):
    m = I.max(x)
    return (m, I.sum(I.exp(x - m)))

@intent.fn
def lse_combine(a: (f32, f32), b: (f32, f32)) -> (f32, f32):
    m = I.maximum(a[0], b[0])
    e = I.where(m == -I.inf, 0.0, a[1] * I.exp(a[0] - m) + b[1] * I.exp(b[0] - m))
    return (m, e)

@intent.kernel
def logsumexp(x: f32[N]) -> f32[1]:
    m, l = I.region_fold(x.axis(0), (x,), summarize=lse_summary, combine=lse_combine, identity=(-I.inf, 0.0))
    return m + I.log(l)

@intent.kernel
def online_softmax(x: f32[R, C], out: mut f32[R, C]):
    for r in I.parallel(x.axis(0)):
        row = x[r, :]
        m, l = I.region_fold(x.axis(1), (row,), summarize=lse_summary, combine=lse_combine, identity=(-I.inf, 0.0))
        for c in I.parallel(x.axis(1)):
            out[r, c] = I.exp(row[c] - m) / l

""" + AFFINE_AND_RUNNING_MAX

BROKEN = SOURCE.replace("return (a[0] * b[0], a[1] * b[0] + b[1])", "return (a[0] * b[0], a[1] + b[1])")
BAD_APPLY = SOURCE.replace("return s[0] * h + s[1]", "return s[0] * h")


@pytest.fixture(scope="module")
def module(differential):
    return differential.build(SOURCE)


def _serial_recurrence(a, b, h0):
    h, out = np.float32(h0), []
    for ai, bi in zip(a, b):
        h = np.float32(h * ai + bi)
        out.append(h)
    return np.array(out, np.float32), h


@pytest.mark.parametrize("n", [0, 1, 7, 4096, 4097, 100003])
def test_linear_recurrence_matches_serial(module, n):
    rng = np.random.default_rng(n)
    a = (rng.random(n) * 0.5 + 0.5).astype(np.float32)
    b = rng.random(n).astype(np.float32)
    last = np.zeros(1, np.float32)
    h = module.linear_recurrence(a, b, 0.75, last)
    ref, final = _serial_recurrence(a, b, 0.75)
    np.testing.assert_allclose(h, ref, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(last[0], final if n else 0.75, rtol=2e-5)


@pytest.mark.parametrize("n", [1, 5, 5000, 300001])
def test_logsumexp(module, n):
    x = np.random.default_rng(n).normal(0, 20, n).astype(np.float32)
    ref = np.log(np.sum(np.exp(x.astype(np.float64) - x.max()))) + x.max()
    np.testing.assert_allclose(module.logsumexp(x)[0], ref, rtol=1e-5)


def test_online_softmax(module):
    x = np.random.default_rng(3).normal(0, 5, (17, 33)).astype(np.float32)
    out = np.empty_like(x)
    module.online_softmax(x, out)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=1e-5)


@pytest.mark.parametrize("n", [1, 9, 10000])
def test_running_max_with_argmax(module, n):
    x = np.random.default_rng(n).integers(-1000, 1000, n)
    m, i = module.running_max(x)
    np.testing.assert_array_equal(m, np.maximum.accumulate(x))
    expected_at = [int(np.argmax(x[:k + 1])) for k in range(n)]
    np.testing.assert_array_equal(i, expected_at)


@pytest.mark.parametrize("kernel,args", [
    ("linear_recurrence", lambda rng: ((rng.random(200001) * 0.5 + 0.5).astype(np.float32),
                                       rng.random(200001).astype(np.float32), 0.5, np.zeros(1, np.float32))),
    ("logsumexp", lambda rng: (rng.normal(0, 3, 200001).astype(np.float32),)),
])
def test_bitwise_identical_for_any_thread_count(module, kernel, args):
    """R8, R9: the segmentation comes from the problem size only."""
    values = args(np.random.default_rng(0))
    results = []
    for threads in (1, 2, 3):
        module.set_num_threads(threads)
        results.append(np.array(getattr(module, kernel)(*values)).copy())
    module.set_num_threads(0)
    assert all(np.array_equal(results[0], r) for r in results[1:])


@pytest.mark.parametrize("kernel,args", [
    ("linear_recurrence", lambda rng: ((rng.random(60) * 0.5 + 0.5).astype(np.float32),
                                       rng.random(60).astype(np.float32), 0.5, np.zeros(1, np.float32))),
    ("logsumexp", lambda rng: (rng.normal(0, 3, 40).astype(np.float32),)),
    ("running_max", lambda rng: (rng.integers(-50, 50, 40),)),
])
def test_laws_sanitizer_is_quiet_on_lawful_helpers(kernel, args):
    values = args(np.random.default_rng(1))
    intentc.interpret(SOURCE, kernel, *values, sanitize="laws")


def test_laws_sanitizer_flags_a_wrong_combine():
    rng = np.random.default_rng(2)
    a, b = (rng.random(60) * 0.5 + 0.5).astype(np.float32), rng.random(60).astype(np.float32)
    with pytest.raises(LawViolation) as info:
        intentc.interpret(BROKEN, "linear_recurrence", a, b, 0.5, np.zeros(1, np.float32), sanitize="laws")
    assert "R6" in str(info.value) or "R2" in str(info.value)
    assert "affine" in str(info.value)


def test_laws_sanitizer_flags_a_wrong_apply():
    rng = np.random.default_rng(3)
    a, b = (rng.random(60) * 0.5 + 0.5).astype(np.float32), rng.random(60).astype(np.float32)
    with pytest.raises(LawViolation) as info:
        intentc.interpret(BAD_APPLY, "linear_recurrence", a, b, 0.5, np.zeros(1, np.float32), sanitize="laws")
    assert "R6" in str(info.value) and "affine_apply" in str(info.value)


def test_interpreter_agrees_with_compiled(module):
    rng = np.random.default_rng(4)
    a, b = (rng.random(300) * 0.5 + 0.5).astype(np.float32), rng.random(300).astype(np.float32)
    last_c, last_i = np.zeros(1, np.float32), np.zeros(1, np.float32)
    np.testing.assert_allclose(module.linear_recurrence(a, b, 0.5, last_c),
                               intentc.interpret(SOURCE, "linear_recurrence", a, b, 0.5, last_i), rtol=1e-5)
    np.testing.assert_allclose(last_c, last_i, rtol=1e-5)


def test_no_state_stream_or_partition():
    """R0, L2: these operations do not exist; the diagnostic says so."""
    from intentc.driver import frontend

    for name in ("state_stream", "partition"):
        source = f"import intent as I\n@intent.kernel\ndef k(x: f32[N]):\n    y = I.{name}(x)\n"
        with pytest.raises(intentc.CompileError) as info:
            frontend(source, "k.intent")
        assert f"I.{name}" in str(info.value)
        assert ("R0" if name == "state_stream" else "L2") in str(info.value)


def test_laws_sanitizer_flags_an_identity_that_combines_to_nan():
    """combine(identity, identity) must be the identity: the unguarded log-sum-exp combine gives
    -inf - -inf = NaN there, which a segmentation with empty segments would expose (R2)."""
    unguarded = SOURCE.replace("e = I.where(m == -I.inf, 0.0, a[1] * I.exp(a[0] - m) + b[1] * I.exp(b[0] - m))",
                               "e = a[1] * I.exp(a[0] - m) + b[1] * I.exp(b[0] - m)")
    x = np.arange(100, dtype=np.float32)
    with pytest.raises(LawViolation) as info:
        intentc.interpret(unguarded, "logsumexp", x, sanitize="laws")
    assert "combine(identity, identity)" in str(info.value)


# ---- samples/selective_scan.intent (issue 6) -------------------------------------------------
SELECTIVE_SCAN = (Path(__file__).resolve().parents[2] / "samples" / "selective_scan.intent").read_text()


def _ssm_inputs(rng, d, t):
    """Decaying steps as in Mamba: delta log-uniform in [1e-3, 0.1], a in [-16, -1]."""
    f32 = lambda lo, hi, *shape: rng.uniform(lo, hi, shape).astype(np.float32)
    delta = np.exp(rng.uniform(np.log(1e-3), np.log(0.1), (d, t))).astype(np.float32)
    return f32(-1, 1, d, t), delta, f32(-16, -1, d, 16), f32(-1, 1, 16, t), f32(-1, 1, 16, t), f32(-1, 1, d, 16)


def _ssm64(x, delta, a, b, c, h0):
    h = h0.astype(np.float64)
    y = np.zeros(x.shape)
    for k in range(x.shape[1]):
        h = np.exp(delta[:, k, None] * a.astype(np.float64)) * h + delta[:, k, None] * b[None, :, k] * x[:, k, None]
        y[:, k] = (c[None, :, k] * h).sum(axis=1)
    return y, h


@pytest.mark.parametrize("d,t", [(2, 40), (1, 1), (3, 0)])
def test_selective_scan_sample_is_quiet_under_the_laws_sanitizer(d, t):
    """Every region scan of the sample (one per channel and state, a[d, s] captured) under
    random segmentations, empty and one-member segments included: no law fails, and the
    result is the serial recurrence's."""
    args = _ssm_inputs(np.random.default_rng(d * 100 + t), d, t)
    y, last = intentc.interpret(SELECTIVE_SCAN, "selective_scan", *args, sanitize="laws")
    want_y, want_last = _ssm64(*args)
    np.testing.assert_allclose(y, want_y, rtol=0, atol=1e-5)
    np.testing.assert_allclose(last, want_last, rtol=0, atol=1e-5)


def test_laws_sanitizer_flags_a_selective_scan_apply_without_the_decay():
    """The same sample with an apply that drops the composed decay (h -> h + Q): R6 fails."""
    broken = SELECTIVE_SCAN.replace("return m[0] * h + m[1]", "return h + m[1]")
    assert broken != SELECTIVE_SCAN
    with pytest.raises(LawViolation) as info:
        intentc.interpret(broken, "selective_scan", *_ssm_inputs(np.random.default_rng(7), 1, 30), sanitize="laws")
    assert "R6" in str(info.value) and "step_apply" in str(info.value)


# ---- the chained lowering of seeded scans (region_lowering: CHAIN_SEGMENT, SCAN_CHAINS) ----
CHAINED = """
import intent as I

@intent.fn
def add2(a: (i64, i64), b: (i64, i64)) -> (i64, i64):
    return (a[0] + b[0], a[1] + b[1])

@intent.fn
def sums(x: i64[S], y: i64[S]) -> (i64, i64):
    return I.reduce((x, y), combine=add2, identity=(0, 0))

@intent.fn
def doubled_sums_by_builtins(x: i64[S], y: i64[S]) -> (i64, i64):
    return (I.sum(x * 2), I.sum(y))

@intent.fn
def carry(s: (i64, i64), st: (i64, i64)) -> (i64, i64):
    return add2(st, s)

@intent.fn
def running(x: i64[S], y: i64[S], st: (i64, i64)) -> (i64[S], i64[S]):
    return I.scan((x, y), combine=add2, identity=(0, 0), init=st)

@intent.fn
def running_swapped_exclusive(x: i64[S], y: i64[S], st: (i64, i64)) -> (i64[S], i64[S]):
    p, q = I.scan((x * 2, y), combine=add2, identity=(0, 0), init=st, exclusive=True)
    return (q, p)

@intent.fn
def running_then_negated(x: i64[S], y: i64[S], st: (i64, i64)) -> (i64[S], i64[S]):
    p, q = I.scan((x, y), combine=add2, identity=(0, 0), init=st)
    return (-p, q)

@intent.kernel
def seeded(x: i64[N], y: i64[N]) -> (i64[N], i64[N]):
    p, q, fp, fq = I.region_scan(x.axis(0), (x, y), summarize=sums, combine=add2, identity=(0, 0),
                                 apply=carry, emit=running, init=(5, -7))
    return (p, q)

@intent.kernel
def seeded_builtin_summary(x: i64[N], y: i64[N], last: mut i64[2]) -> (i64[N], i64[N]):
    p, q, fp, fq = I.region_scan(x.axis(0), (x, y), summarize=doubled_sums_by_builtins, combine=add2, identity=(0, 0),
                                 apply=carry, emit=running_swapped_exclusive, init=(5, -7))
    last[0] = fp
    last[1] = fq
    return (p, q)

@intent.kernel
def not_seeded(x: i64[N], y: i64[N]) -> (i64[N], i64[N]):
    p, q, fp, fq = I.region_scan(x.axis(0), (x, y), summarize=sums, combine=add2, identity=(0, 0),
                                 apply=carry, emit=running_then_negated, init=(5, -7))
    return (p, q)
"""
GROUP = GROUP_CHAINS * CHAIN_SEGMENT  # a group of sub-segments, emitted as interleaved chains


@pytest.fixture(scope="module")
def chained(differential):
    return differential.build(CHAINED)


@pytest.mark.parametrize("n", [0, 1, 4113, GROUP - 1, GROUP, GROUP + 1, 3 * GROUP + 4200, WINDOW_GROUPS * GROUP,
                               WINDOW_GROUPS * GROUP + 1, 2 * WINDOW_GROUPS * GROUP - 1, 2 * WINDOW_GROUPS * GROUP + 4113 + 5,
                               3 * WINDOW_GROUPS * GROUP + 9000])
def test_chained_emit_equals_serial_scan(chained, n):
    """Integer states: any segmentation gives the serial result exactly, so the chained
    groups (full ones), the one-by-one tail, their seams and the windows of WINDOW_GROUPS
    groups (the prefix carried from one to the next) are checked bit for bit."""
    rng = np.random.default_rng(n)
    x, y = rng.integers(-1000, 1000, n), rng.integers(-1000, 1000, n)
    p, q = chained.seeded(x, y)
    np.testing.assert_array_equal(p, 5 + np.cumsum(x))
    np.testing.assert_array_equal(q, -7 + np.cumsum(y))
    # The summary by builtin sums (not a plain reduce) is computed one sub-segment at a time;
    # the emit yields an exclusive scan of an expression, its results swapped.
    last = np.zeros(2, np.int64)
    q2, p2 = chained.seeded_builtin_summary(x, y, last)
    np.testing.assert_array_equal(p2, 5 + np.concatenate([[0], np.cumsum(2 * x)[:-1]]) if n else p2)
    np.testing.assert_array_equal(q2, -7 + np.concatenate([[0], np.cumsum(y)[:-1]]) if n else q2)
    np.testing.assert_array_equal(last, [5 + 2 * x.sum(), -7 + y.sum()])
    # An emit that is more than a scan goes through the general path.
    p3, q3 = chained.not_seeded(x, y)
    np.testing.assert_array_equal(p3, -(5 + np.cumsum(x)))
    np.testing.assert_array_equal(q3, -7 + np.cumsum(y))


@pytest.mark.parametrize("n", [GROUP, GROUP + 3, 3 * GROUP + 4200])
def test_lane_chains_on_strided_components_equal_the_vector_lanes(module, chained, n):
    """Components with unit stride run a group's chains in vector lanes (lane_lowering),
    after as many scalar members as align the output; strided ones take the scalar loop of
    the same chains. All give the same bits, for f32 affine maps at any alignment (R8: the
    segmentation alone fixes the rounding) and for integer sums."""
    rng = np.random.default_rng(n)
    a2 = (rng.random(2 * n) * 0.5 + 0.5).astype(np.float32)
    b2 = rng.random(2 * n).astype(np.float32)
    last, last_strided = np.zeros(1, np.float32), np.zeros(1, np.float32)
    h = module.linear_recurrence(np.ascontiguousarray(a2[::2]), np.ascontiguousarray(b2[::2]), 0.75, last)
    h_strided = module.linear_recurrence(a2[::2], b2[::2], 0.75, last_strided)
    np.testing.assert_array_equal(h, h_strided)
    np.testing.assert_array_equal(last, last_strided)
    for shift in range(1, 8):  # every alignment of the data: the scalar members before the vectors vary
        out = np.empty(n + 8, np.float32)[shift:shift + n]
        module.linear_recurrence(a2[shift:shift + n].copy(), b2[shift:shift + n].copy(), 0.75, last, out=out)
        np.testing.assert_array_equal(out, module.linear_recurrence(a2[shift:shift + n], b2[shift:shift + n],
                                                                    0.75, last_strided))
    np.testing.assert_allclose(h, _serial_recurrence(a2[::2], b2[::2], 0.75)[0], rtol=2e-5, atol=1e-6)
    x2, y2 = rng.integers(-1000, 1000, 2 * n), rng.integers(-1000, 1000, 2 * n)
    p, q = chained.seeded(x2[::2], y2[::2])
    np.testing.assert_array_equal(p, 5 + np.cumsum(x2[::2]))
    np.testing.assert_array_equal(q, -7 + np.cumsum(y2[::2]))


def test_lane_chains_stream_large_outputs_with_the_same_bits(module, chained):
    """Outputs of at least STREAM_BYTES take streaming stores a cache line at a time (after
    scalar members that align them); at every alignment they hold the bits of the scalar
    chains that strided components take, and the serial recurrence's values."""
    from intentc.lower.lane_lowering import STREAM_BYTES

    n = STREAM_BYTES // 4 + 3 * GROUP + 100
    rng = np.random.default_rng(11)
    a2 = (rng.random(2 * n + 16) * 0.5 + 0.5).astype(np.float32)
    b2 = rng.random(2 * n + 16).astype(np.float32)
    last = np.zeros(1, np.float32)
    want = module.linear_recurrence(a2[:2 * n:2], b2[:2 * n:2], 0.75, last)  # strided: scalar chains
    ref, _ = _serial_recurrence(a2[:2 * 20000:2], b2[:2 * 20000:2], 0.75)
    np.testing.assert_allclose(want[:20000], ref, rtol=2e-5, atol=1e-6)
    a, b = a2[:2 * n:2].copy(), b2[:2 * n:2].copy()
    for shift in (0, 1, 5, 15):
        out = np.empty(n + 16, np.float32)[shift:shift + n]
        module.linear_recurrence(a, b, 0.75, last, out=out)
        np.testing.assert_array_equal(out, want)
    m = STREAM_BYTES // 8 + GROUP + 5  # two i64 outputs, one vector per line
    x, y = rng.integers(-1000, 1000, m), rng.integers(-1000, 1000, m)
    p, q = chained.seeded(x, y)
    np.testing.assert_array_equal(p, 5 + np.cumsum(x))
    np.testing.assert_array_equal(q, -7 + np.cumsum(y))


def test_lane_chains_lower_lane_wise_combines_only():
    """Which combines run in vector lanes: straight-line lane-wise arithmetic, not a helper
    that calls a math function (lane_lowering.lane_combinable)."""
    from intentc.driver import frontend
    from intentc.lower import program as P
    from intentc.lower.pipeline import lower

    def shuffles(source):
        program = lower(frontend(source, "lanes.intent"))
        return {k.name: sum("shuffle(" in line for line in P.format_stmts(k.body)) for k in program.kernels}

    assert shuffles(CHAINED)["seeded"] > 0
    assert shuffles(CHAINED)["not_seeded"] == 0
    with_exp = CHAINED.replace("return (a[0] + b[0], a[1] + b[1])",
                               "return (a[0] + b[0], a[1] + b[1] + I.cast(I.exp(0.0), i64) - 1)")
    assert shuffles(with_exp)["seeded"] == 0


def test_chained_emit_is_used_for_seeded_scans(monkeypatch):
    """Which region scans take the chained lowering: a seeded emit chains its scans, a plain
    reduce summary chains its folds; the others are emitted one slice at a time."""
    from intentc.driver import frontend
    from intentc.lower import region_lowering as se
    from intentc.lower.pipeline import lower

    calls = []
    for name in ("chained_summaries", "chained_segments"):
        original = getattr(se.RegionExpansion, name)

        def spy(self, *args, _original=original, _name=name, **kwargs):
            calls.append((self.b.func.name, _name))
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(se.RegionExpansion, name, spy)
    monkeypatch.setattr(se, "_plain_reduce", lambda block, _f=se._plain_reduce: calls.append(
        ("plain", _f(block) is not None)) or _f(block))
    lower(frontend(CHAINED, "chained.intent"))
    assert ("seeded", "chained_summaries") in calls and ("seeded", "chained_segments") in calls
    assert ("seeded_builtin_summary", "chained_segments") in calls
    assert ("plain", True) in calls and ("plain", False) in calls  # sums vs doubled_sums_by_builtins
    assert not any(kernel == "not_seeded" for kernel, _ in calls)
