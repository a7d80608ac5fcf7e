"""Sanitizers of the logical semantics: --sanitize=order and --sanitize=bounds on compiled
builds, sanitize="order" in the interpreter (P1, P3, D5). Quiet on every sample."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import intentc
from intentc.driver import build, compile_source
from intentc.lower import program as P

REPO = Path(__file__).resolve().parents[2]
RACY = """
import intent as I

@intent.kernel
def chase(x: f32[N], idx: i64[N], out: mut f32[N]):
    for i in I.parallel(x.axis(0)):
        out[i] = out[idx[i]] + x[i]

@intent.kernel
def fine(x: f32[N], out: mut f32[N]):
    for i in I.parallel(x.axis(0)):
        out[i] = x[i] * 2.0
"""


@pytest.fixture(scope="module")
def sanitized(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sanitized")
    (folder / "racy.intent").write_text(RACY)
    build(folder / "racy.intent", folder / "racy.so", sanitize=("order", "bounds"))
    return intentc.load(folder / "racy.so")


def test_order_sanitizer_reports_an_order_dependent_kernel(sanitized):
    x = np.arange(5, dtype=np.float32)
    out = np.ones(5, np.float32)
    with pytest.raises(intentc.KernelError) as info:
        sanitized.chase(x, np.array([1, 2, 3, 4, 0]), out)
    assert info.value.code == -11 and "order sanitizer" in str(info.value) and "'out'[" in str(info.value)
    assert (out == 1).all(), "a refused call leaves its outputs as they were"


def test_order_sanitizer_is_quiet_on_independent_points(sanitized):
    x = np.arange(5, dtype=np.float32)
    out = np.ones(5, np.float32)
    sanitized.chase(x, np.arange(5), out)  # every point reads its own element: no dependence
    np.testing.assert_array_equal(out, 1 + x)
    out2 = np.zeros(5, np.float32)
    sanitized.fine(x, out2)
    np.testing.assert_array_equal(out2, 2 * x)


def test_interpreter_order_sanitizer():
    x = np.arange(5, dtype=np.float32)
    with pytest.raises(intentc.KernelError) as info:
        intentc.interpret(RACY, "chase", x, np.array([1, 2, 3, 4, 0]), np.ones(5, np.float32), sanitize="order")
    assert info.value.code == -11
    out = np.zeros(5, np.float32)
    intentc.interpret(RACY, "fine", x, out, sanitize="order")
    np.testing.assert_array_equal(out, 2 * x)


def _checks(program: P.Program) -> int:
    return sum(1 for k in program.kernels for s in P.walk_stmts(k.body)
               if isinstance(s, P.Check) and s.code == "INTENT_E_BOUNDS")


def test_bounds_sanitizer_keeps_every_check():
    source = (REPO / "samples" / "saxpy.intent").read_text()
    plain = compile_source(source, "saxpy.intent", optimize_ir=False)
    checked = compile_source(source, "saxpy.intent", optimize_ir=False, sanitize=("bounds",))
    assert _checks(plain.program) == 0
    assert _checks(checked.program) > 0
    assert checked.manifest["sanitize"] == ["bounds"]


def test_unknown_sanitizer_is_a_diagnostic():
    with pytest.raises(intentc.CompileError) as info:
        compile_source(RACY, "racy.intent", sanitize=("everything",))
    assert "unknown sanitizer" in str(info.value)


def _load_checks():
    # As the module ``checks``: checks_memory.py and checks_scaled.py import it by that name.
    sys.path.insert(0, str(REPO / "samples"))
    try:
        import checks
    finally:
        sys.path.remove(str(REPO / "samples"))
    return checks


SAMPLES = sorted(p.stem for p in (REPO / "samples").glob("*.intent"))


@pytest.mark.parametrize("sample", SAMPLES)
def test_sanitizers_are_quiet_on_every_sample(tmp_path, sample):
    """The sample's own Python check passes on a build with both sanitizers."""
    checks = _load_checks()
    if sample not in checks.CHECKS:
        pytest.fail(f"samples/checks.py has no check for {sample}")
    build(REPO / "samples" / f"{sample}.intent", tmp_path / f"{sample}.so", sanitize=("order", "bounds"))
    checks.CHECKS[sample](intentc.load(tmp_path / f"{sample}.so"))
