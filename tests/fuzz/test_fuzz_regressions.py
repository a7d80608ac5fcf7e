"""Inputs that once crashed, hung or miscompiled, kept as regression tests.

Each was found by fuzzing or probing the frontend; the diagnostics that replaced the crash
have golden files in tests/diagnostics where they fit on a line (helper_recursion,
duplicate_function, int_literal_leading_zero, const_pow_too_large, float_literal_overflow);
the rest are here.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import intentc  # noqa: E402
from intentc.diagnostics import CompileError  # noqa: E402
from intentc.driver import compile_source, frontend  # noqa: E402

HEAD = "import intent as I\n\n@intent.kernel\ndef k(x: f32[N], o: mut f32[N]):\n"


def _diagnosed(source: str, *words: str, lowering: bool = False) -> str:
    with pytest.raises(CompileError) as info:
        if lowering:
            compile_source(source, "regression.intent", optimize_ir=False)
        else:
            frontend(source, "regression.intent")
    text = "\n".join(d.render_plain() for d in info.value.diagnostics)
    for word in words:
        assert word in text, text
    return text


@pytest.mark.parametrize("source, words", [
    # RecursionError in the parse-tree transformer (500 nested unary minus).
    (HEAD + "    o[0] = " + "-" * 500 + "x[0]\n", ["nests too deeply"]),
    # int() refused a literal over 4300 digits (ValueError through the Lark transformer).
    (HEAD + "    o[0] = " + "9" * 5000 + "\n", ["too long"]),
    (HEAD + "    o[0] = 0x" + "f" * 5000 + "\n", ["too long"]),
    # int("012", 0) raised ValueError.
    (HEAD + "    o[0] = 012\n", ["cannot start with 0"]),
    # float(10 ** 400) raised OverflowError.
    (HEAD + "    o[0] = 10 ** 400\n", ["too large for f32"]),
    # Constant folding of 10 ** 10 ** 10 and 1 << 10 ** 9 ran for ever (or exhausted memory).
    (HEAD + "    o[0] = 10 ** 10 ** 10\n", ["too large for any dtype"]),
    (HEAD + "    o[0] = 1 << 10 ** 9\n", ["too large for any dtype"]),
    (HEAD + "    o[0] = 2 ** 3000 * 2 ** 3000\n", ["too large for any dtype"]),
])
def test_frontend_limits_are_diagnostics(source, words):
    _diagnosed(source, *words)


RECURSIVE = """import intent as I

@intent.fn
def f(v: f32) -> f32:
    return g(v)

@intent.fn
def g(v: f32) -> f32:
    return f(v) + 1.0

@intent.kernel
def k(x: f32[N], o: mut f32[N]):
    for i in I.parallel(x.axis(0)):
        o[i] = f(x[i])
"""


def test_mutual_recursion_is_diagnosed_before_lowering():
    """`check` passed and `build` died in inlining with a RecursionError."""
    _diagnosed(RECURSIVE, "calls itself", "f -> g -> f")


def test_build_of_recursive_helpers_exits_1(tmp_path):
    source = tmp_path / "rec.intent"
    source.write_text(RECURSIVE)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "intentc", "build", str(source), "-o", str(tmp_path / "rec.so")],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "recursion is not supported" in proc.stderr


def test_augmented_store_of_a_tensor_is_a_diagnostic():
    """`o[0] += x` (a tensor into one element) once reached lowering and failed verification there."""
    _diagnosed(HEAD + "    o[0] += x\n", lowering=True)


EARLY_RETURNS = """import intent as I

@intent.fn
def sign(v: f32) -> f32:
    if v > 0.0:
        return 1.0
    if v < 0.0:
        return -1.0
    return 0.0

@intent.fn
def pick(v: i32, c: bool) -> (i32, bool):
    if c:
        return (v, c)
    else:
        return (v + 1, not c)

@intent.fn
def first_negative(x: f32[S]) -> index:
    for k in x.axis(0):
        if x[k] < 0.0:
            return k
    return -1

@intent.fn
def wide(v: f32) -> f64:
    if v > 100.0:
        return 2.5
    return 0.5

@intent.kernel
def run(x: f32[N], s: mut f32[N], a: mut i32[N], b: mut bool[N], w: mut f64[N], neg: mut i64[1]):
    for i in I.parallel(x.axis(0)):
        s[i] = sign(x[i])
        a[i], b[i] = pick(3, x[i] > 0.0)
        w[i] = wide(x[i])
    neg[0] = I.cast(first_negative(x), i64)
"""


def test_early_returns_from_helpers(tmp_path):
    """Early returns in helpers: the result variable was undefined on the fall-through path
    ("undefined name '.retval2'"), tuple results did not merge across branches, returned
    literals took their default dtype instead of the declared one, and an if/else returning
    on both paths was refused."""
    module = frontend(EARLY_RETURNS, "early.intent")
    assert module.kernels
    source = tmp_path / "early.intent"
    source.write_text(EARLY_RETURNS)
    intentc_build = [sys.executable, "-m", "intentc", "build", str(source), "-o", str(tmp_path / "early.so")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(intentc_build, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lib = intentc.load(tmp_path / "early.so")
    x = np.array([1.5, -2.0, 0.0, 300.0, -0.0], np.float32)
    s, a = np.zeros(5, np.float32), np.zeros(5, np.int32)
    b, w, neg = np.zeros(5, np.bool_), np.zeros(5, np.float64), np.zeros(1, np.int64)
    lib.run(x, s, a, b, w, neg)
    np.testing.assert_array_equal(s, np.sign(x))
    np.testing.assert_array_equal(a, np.where(x > 0, 3, 4))
    np.testing.assert_array_equal(b, np.ones(5, np.bool_))
    np.testing.assert_array_equal(w, np.where(x > 100, 2.5, 0.5))
    assert neg[0] == 1


def test_early_return_of_the_wrong_dtype_is_a_diagnostic():
    source = EARLY_RETURNS.replace("        return 2.5\n", "        return v\n")
    _diagnosed(source, "'wide' declares the result f64 but this returns f32")


def test_early_return_of_a_tensor_is_a_diagnostic():
    source = """import intent as I

@intent.fn
def pos(x: f32[S]) -> f32[S]:
    if x[0] > 0.0:
        return x
    return x * 2.0

@intent.kernel
def k(x: f32[N]) -> f32[N]:
    return pos(x)
"""
    _diagnosed(source, "returns a tensor", "O3")


def test_second_definition_is_not_built_with_the_first_signature():
    """A duplicate helper was checked against the first definition's parameters, which
    produced a spurious 'undefined name' next to the real error."""
    source = """import intent as I

@intent.fn
def f(v: f32) -> f32:
    return v

@intent.fn
def f(v: f32, w: f32) -> f32:
    return v + w

@intent.kernel
def k(x: f32[N], o: mut f32[N]):
    for i in I.parallel(x.axis(0)):
        o[i] = f(x[i])
"""
    text = _diagnosed(source, "defined twice")
    assert "undefined" not in text


def test_extents_named_like_python_keywords(tmp_path):
    """An extent the grammar accepts is any name, Python keywords included (the extent
    text used to go through Python's parser): an unknown one is an S1 diagnostic, a known
    one sizes the result."""
    unknown = "import intent as I\n\n@intent.kernel\ndef k(x: f32[M, N]) -> f32[import, N]:\n    return x\n"
    text = _diagnosed(unknown, "result extent 'import'")
    assert "[S1]" in text
    plain = "import intent as I\n\n@intent.kernel\ndef k(x: f32[import, if]) -> f32[import, if]:\n    return x * 2.0\n"
    path = tmp_path / "keywords.intent"
    path.write_text(plain)
    from intentc.driver import build

    build(path, tmp_path / "keywords.so")
    m = intentc.load(str(tmp_path / "keywords.so"))
    np.testing.assert_array_equal(m.k(np.ones((2, 3), np.float32)), np.full((2, 3), 2, np.float32))
