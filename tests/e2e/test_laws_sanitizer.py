"""The laws sanitizer of compiled builds (``intentc build --sanitize=laws``, R2, R6, R7).

One module of lawful and broken region helpers is built once with the sanitizer (and once
without, to compare results). Each broken helper is flagged with INTENT_E_SANITIZER and a
message naming the law, the helpers, the segments and the values (golden prefixes), and a
refused call leaves its outputs as they were. Lawful kernels are quiet and compute exactly
what a normal build computes; every sample with a region op passes its own check when
built with the sanitizer. The segmentations (``region_laws.segment_pairs``) are checked
on their own.
"""
from __future__ import annotations

import fcntl
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import intentc
from intentc.driver import build, compile_source
from intentc.interp.structured import LawViolation
from intentc.lower.region_laws import (RANDOM_CUTS, RANDOM_SEGMENTATIONS, SINGLE_MEMBERS, STRUCTURAL,
                                       segment_pairs)
from region_programs import AFFINE_AND_RUNNING_MAX  # tests/e2e/region_programs.py

REPO = Path(__file__).resolve().parents[2]
E_SANITIZER = -11

LAWFUL = """
import intent as I

@intent.fn
def lse_summary(x: f32[S]) -> (f32, f32):
    m = I.max(x)
    return (m, I.sum(I.exp(x - I.where(m == -I.inf, 0.0, m))))

@intent.fn
def lse_combine(a: (f32, f32), b: (f32, f32)) -> (f32, f32):
    m = I.maximum(a[0], b[0])
    s = I.where(m == -I.inf, 0.0, m)
    return (m, a[1] * I.exp(a[0] - s) + b[1] * I.exp(b[0] - s))

@intent.kernel
def logsumexp(x: f32[N]) -> f32[1]:
    m, l = I.region_fold(x.axis(0), (x,), summarize=lse_summary, combine=lse_combine, identity=(-I.inf, 0.0))
    return m + I.log(l)

@intent.kernel
def online_softmax(x: f32[R, C], out: mut f32[R, C]):
    for r in I.parallel(x.axis(0)):
        row = x[r, :]
        m, l = I.region_fold(row.axis(0), (row,), summarize=lse_summary, combine=lse_combine,
                             identity=(-I.inf, 0.0))
        for c in I.parallel(row.axis(0)):
            out[r, c] = I.exp(row[c] - m) / l

""" + AFFINE_AND_RUNNING_MAX

BROKEN = LAWFUL + """
@intent.fn
def total(x: f32[S]) -> f32:
    return I.sum(x)

@intent.fn
def minus(a: f32, b: f32) -> f32:
    return a - b

@intent.kernel
def fold_minus(x: f32[N], out: mut f32[1]):
    out[0] = I.region_fold(x.axis(0), (x,), summarize=total, combine=minus, identity=0.0)

@intent.fn
def plus(a: f32, b: f32) -> f32:
    return a + b

@intent.kernel
def fold_bad_identity(x: f32[N], out: mut f32[2]):
    out[0] = 5.0
    s = I.region_fold(x.axis(0), (x,), summarize=total, combine=plus, identity=1.0)
    out[1] = s

@intent.fn
def affine_swapped(a: (f32, f32), b: (f32, f32)) -> (f32, f32):
    return (b[0] * a[0], b[1] * a[0] + a[1])

@intent.kernel
def fold_swapped(a: f32[N], b: f32[N], out: mut f32[2]):
    p, q = I.region_fold(a.axis(0), (a, b), summarize=affine_summary, combine=affine_swapped, identity=(1.0, 0.0))
    out[0] = p
    out[1] = q

@intent.fn
def apply_no_multiplier(s: (f32, f32), h: f32) -> f32:
    return h + s[1]

@intent.kernel
def scan_bad_apply(a: f32[N], b: f32[N], h0: f32) -> f32[N]:
    h, final = I.region_scan(a.axis(0), (a, b), summarize=affine_summary, combine=affine, identity=(1.0, 0.0),
                             apply=apply_no_multiplier, emit=affine_emit, init=h0)
    return h

@intent.fn
def emit_from_zero(a: f32[S], b: f32[S], h: f32) -> f32[S]:
    p, q = I.scan((a, b), combine=affine, identity=(1.0, 0.0), init=(1.0, 0.0))
    return q

@intent.kernel
def scan_bad_emit(a: f32[N], b: f32[N], h0: f32) -> f32[N]:
    h, final = I.region_scan(a.axis(0), (a, b), summarize=affine_summary, combine=affine, identity=(1.0, 0.0),
                             apply=affine_apply, emit=emit_from_zero, init=h0)
    return h

@intent.fn
def total_ignoring(x: f32[S], cap: f32[M]) -> f32:
    return I.sum(x)

@intent.fn
def add_to_state(s: f32, h: f32) -> f32:
    return s + h

@intent.fn
def emit_capture(x: f32[S], h: f32, cap: f32[M]) -> f32[M]:
    return cap + h

@intent.kernel
def scan_bad_membership(x: f32[N], cap: f32[K]) -> f32[N]:
    y, final = I.region_scan(x.axis(0), (x,), summarize=total_ignoring, combine=plus, identity=0.0,
                             apply=add_to_state, emit=emit_capture, init=0.0, captures=(cap,))
    return y

@intent.fn
def lse_combine_unguarded(a: (f32, f32), b: (f32, f32)) -> (f32, f32):
    m = I.maximum(a[0], b[0])
    return (m, a[1] * I.exp(a[0] - m) + b[1] * I.exp(b[0] - m))

@intent.kernel
def softmax_unguarded(x: f32[R, C], out: mut f32[R, C]):
    for r in I.parallel(x.axis(0)):
        row = x[r, :]
        m, l = I.region_fold(row.axis(0), (row,), summarize=lse_summary, combine=lse_combine_unguarded,
                             identity=(-I.inf, 0.0))
        for c in I.parallel(row.axis(0)):
            out[r, c] = I.exp(row[c] - m) / l
"""


# ---- samples -------------------------------------------------------------------------------------
REGION_SAMPLES = sorted(p.stem for p in (REPO / "samples").glob("*.intent")
                        if re.search(r"I\.region_(fold|scan)\(", p.read_text()))


def _sample_checks():
    # As the module ``checks``: checks_memory.py and checks_scaled.py import it by that name.
    sys.path.insert(0, str(REPO / "samples"))
    try:
        import checks
    finally:
        sys.path.remove(str(REPO / "samples"))
    return checks.CHECKS


@pytest.mark.parametrize("sample", REGION_SAMPLES)
def test_every_region_sample_passes_its_check_under_the_sanitizer(tmp_path, sample):
    checks = _sample_checks()
    if sample not in checks:
        pytest.fail(f"samples/checks.py has no check for {sample}")
    build(REPO / "samples" / f"{sample}.intent", tmp_path / f"{sample}.so", sanitize=("laws",))
    checks[sample](intentc.load(tmp_path / f"{sample}.so"))


# ---- segmentations -------------------------------------------------------------------------------
def test_segmentations():
    """Every checked pair is two adjacent segments of the axis; the structural ones come first;
    empty and one-member slices occur among the random ones; the window is single members."""
    random_empty = random_single = 0
    for n in list(range(0, 40)) + [50, 64, 100, 1025, 100003]:
        pairs = segment_pairs(n)
        assert pairs == segment_pairs(n), "deterministic"
        assert all(0 <= a <= b <= c <= n for a, b, c in pairs)
        assert pairs[:STRUCTURAL] == [(0, 0, n), (0, min(1, n), n), (0, max(n - 1, 0), n), (0, n, n)]
        window = pairs[-(min(n, SINGLE_MEMBERS) + 1):]
        assert window[0][0] == 0 and window[-1][2] == n
        assert all(p[1:] == q[:2] for p, q in zip(window, window[1:])), "consecutive"
        assert all(c - b == 1 for _, b, c in window[:-1])
        for r in range(RANDOM_SEGMENTATIONS):
            segmentation = pairs[STRUCTURAL + r * RANDOM_CUTS:STRUCTURAL + (r + 1) * RANDOM_CUTS]
            assert segmentation[0][0] == 0 and segmentation[-1][2] == n
            assert all(p[1:] == q[:2] for p, q in zip(segmentation, segmentation[1:])), "consecutive"
        for a, b, c in pairs[STRUCTURAL:-len(window)]:
            random_empty += (a == b or b == c) and 0 < b < n
            random_single += b - a == 1 or c - b == 1
        assert len(pairs) == STRUCTURAL + RANDOM_SEGMENTATIONS * RANDOM_CUTS + len(window)
    assert random_empty > 20 and random_single > 20


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(BROKEN built with the sanitizer, LAWFUL built without), built once for all pytest-xdist
    workers: the first to take the lock builds, the others load the same files."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # shared by the workers of this session
    folder = root / "laws_sanitizer"
    folder.mkdir(exist_ok=True)
    with open(folder / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / "done").exists():
            (folder / "broken.intent").write_text(BROKEN)
            (folder / "lawful.intent").write_text(LAWFUL)
            build(folder / "broken.intent", folder / "laws.so", sanitize=("laws",))
            build(folder / "lawful.intent", folder / "plain.so")
            (folder / "done").write_text("")
    return intentc.load(folder / "laws.so"), intentc.load(folder / "plain.so")


@pytest.fixture(scope="module")
def laws(built):
    return built[0]


def _affine_inputs(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return (rng.random(n) * 0.5 + 0.5).astype(np.float32), rng.random(n).astype(np.float32)


def _refused(call) -> str:
    with pytest.raises(intentc.KernelError) as info:
        call()
    assert info.value.code == E_SANITIZER, str(info.value)
    return str(info.value)


# ---- broken helpers are flagged -----------------------------------------------------------------
def test_combine_that_is_not_a_monoid_fails_the_identity_law(laws):
    x = np.arange(1, 41, dtype=np.float32)
    message = _refused(lambda: laws.fold_minus(x, np.zeros(1, np.float32)))
    assert message.startswith("fold_minus: laws sanitizer: R2 identity law fails for summarize 'total', "
                              "combine 'minus': combine(identity, x) = (-820) but x = (820) "
                              "(x = summarize([0, 40)))"), message


def test_identity_that_is_not_one(laws):
    x = np.ones(10, np.float32)
    out = np.full(2, -7.0, np.float32)
    message = _refused(lambda: laws.fold_bad_identity(x, out))
    assert message.startswith("fold_bad_identity: laws sanitizer: R2 identity law fails for summarize 'total', "
                              "combine 'plus': combine(identity, identity) = (2) but identity = (1)"), message
    # out[0] was written before the region op: the sanitized entry restores it.
    np.testing.assert_array_equal(out, [-7.0, -7.0])


def test_non_associative_order_of_a_combine_breaks_the_homomorphism(laws):
    """The affine maps composed in the wrong order: an associative combine with an identity,
    but not what summarize computes (R2)."""
    a, b = _affine_inputs(50, 1)
    message = _refused(lambda: laws.fold_swapped(a, b, np.zeros(2, np.float32)))
    assert re.match(r"fold_swapped: laws sanitizer: R2 homomorphism fails for summarize 'affine_summary', "
                    r"combine 'affine_swapped': summarize\(A \+\+ B\) = \(\S+, \S+\) but "
                    r"combine\(summarize\(A\), summarize\(B\)\) = \(\S+, \S+\) with A = \[0, 1\), B = \[1, 50\) "
                    r"\(at .*\)$", message), message


def test_apply_that_ignores_the_multiplier(laws):
    a, b = _affine_inputs(50, 2)
    message = _refused(lambda: laws.scan_bad_apply(a, b, 0.5))
    assert message.startswith("scan_bad_apply: laws sanitizer: R6 action law fails for summarize 'affine_summary', "
                              "combine 'affine', apply 'apply_no_multiplier': apply(combine(a, b), s) = ("), message
    assert "with A = [0, 1), B = [1, 50)" in message


def test_emit_that_ignores_the_incoming_state(laws):
    a, b = _affine_inputs(50, 3)
    message = _refused(lambda: laws.scan_bad_emit(a, b, 0.5))
    assert message.startswith("scan_bad_emit: laws sanitizer: R6 emit law fails for summarize 'affine_summary', "
                              "apply 'affine_apply', emit 'emit_from_zero': at member 1, emit(A ++ B, s) = "), message
    assert "concat(emit(A, s), emit(B, apply(summarize(A), s)))" in message
    assert "with A = [0, 1), B = [1, 50)" in message


def test_emit_with_another_membership(laws):
    """emit must return one output member per member of its slice (R7)."""
    message = _refused(lambda: laws.scan_bad_membership(np.ones(5, np.float32), np.ones(3, np.float32)))
    assert message.startswith("scan_bad_membership: laws sanitizer: R7 membership fails for emit 'emit_capture': "
                              "it returned 3 members for the slice [0, 5) of 5 members"), message


def test_region_op_inside_parallel_points_is_checked(laws):
    """combine(identity, identity) is NaN for the unguarded log-sum-exp combine (-inf - -inf);
    the fold runs per row, inside the points of I.parallel; nothing of out is written."""
    x = np.random.default_rng(4).normal(0, 3, (5, 9)).astype(np.float32)
    out = np.full_like(x, 3.25)
    message = _refused(lambda: laws.softmax_unguarded(x, out))
    assert message.startswith("softmax_unguarded: laws sanitizer: R2 identity law fails for summarize "
                              "'lse_summary', combine 'lse_combine_unguarded': combine(identity, identity) = "
                              "(-inf, nan) but identity = (-inf, 0)"), message
    assert (out == 3.25).all()


def test_interpreter_flags_the_same_laws():
    a, b = _affine_inputs(30, 5)
    for kernel, args, law in (("fold_swapped", (a, b, np.zeros(2, np.float32)), "R2 homomorphism"),
                              ("scan_bad_apply", (a, b, 0.5), "R6 action law"),
                              ("scan_bad_emit", (a, b, 0.5), "R6 emit law"),
                              ("fold_minus", (a, np.zeros(1, np.float32)), "R2 identity law")):
        with pytest.raises(LawViolation, match=law):
            intentc.interpret(BROKEN, kernel, *args, sanitize="laws")


# ---- lawful helpers: quiet, same results as a normal build --------------------------------------
@pytest.mark.parametrize("n", [0, 1, 2, 7, 64, 4097, 30001])
def test_lawful_kernels_are_quiet_and_equal_a_normal_build(built, n):
    laws, plain = built
    rng = np.random.default_rng(n)
    a, b = _affine_inputs(n, n)
    last_l, last_p = np.zeros(1, np.float32), np.zeros(1, np.float32)
    np.testing.assert_array_equal(laws.linear_recurrence(a, b, 0.75, last_l),
                                  plain.linear_recurrence(a, b, 0.75, last_p))
    np.testing.assert_array_equal(last_l, last_p)
    x = rng.normal(0, 20, n).astype(np.float32)
    np.testing.assert_array_equal(laws.logsumexp(x), plain.logsumexp(x))
    xi = rng.integers(-1000, 1000, n)
    for got, want in zip(laws.running_max(xi), plain.running_max(xi)):
        np.testing.assert_array_equal(got, want)
    rows = rng.normal(0, 5, (3, n)).astype(np.float32)
    out_l, out_p = np.empty_like(rows), np.empty_like(rows)
    laws.online_softmax(rows, out_l)
    plain.online_softmax(rows, out_p)
    np.testing.assert_array_equal(out_l, out_p)


def test_manifest_records_the_sanitizer(built):
    laws, plain = built
    assert laws.manifest["sanitize"] == ["laws"] and "sanitize" not in plain.manifest


def test_gpu_targets_refuse_the_laws_sanitizer(tmp_path):
    with pytest.raises(intentc.CompileError, match="--sanitize=laws is not supported on GPU targets"):
        compile_source(LAWFUL, "lawful.intent", target="sm_90", sanitize=("laws",))
    (tmp_path / "k.intent").write_text(LAWFUL)
    with pytest.raises(intentc.CompileError, match="--sanitize=laws is not supported on GPU targets"):
        build(tmp_path / "k.intent", tmp_path / "k.ptx", target="sm_90", sanitize=("laws",))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "intentc", "build", str(tmp_path / "k.intent"), "--target", "sm_90",
                           "-o", str(tmp_path / "k.ptx"), "--sanitize", "laws"], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 1 and "--sanitize=laws is not supported on GPU targets" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "k.ptx").exists()
