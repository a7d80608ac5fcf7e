"""Python spellings (python_names.py): what compiles, and the diagnostics of what does not,
each naming the Intent spelling."""
from __future__ import annotations

import pytest

from sema_programs import diagnostic, kir

HEAD = "@intent.kernel\ndef k(x: f32[N], out: mut f32[N]):\n"


def test_range_builds_a_domain_d1():
    text = kir(HEAD + "    for i in range(N):\n        out[i] = x[i]\n")
    assert "domain(" in text and "for(" in text


def test_range_with_a_negative_step_is_refused_d1():
    d = diagnostic(HEAD + "    for i in range(N, 0, -1):\n        out[i - 1] = x[i - 1]\n")
    assert d.rule == "D1" and "positive" in d.message


def test_range_arity_d1():
    d = diagnostic(HEAD + "    for i in range(0, 1, 1, 1):\n        pass\n")
    assert d.rule == "D1" and d.message == "range takes 1 to 3 arguments, got 4"


def test_min_of_one_scalar_needs_a_tensor():
    d = diagnostic(HEAD + "    a = x[0]\n    out[0] = min(a)\n")
    assert d.message == "min of one value needs a tensor" and "I.min(x)" in d.hint


def test_min_takes_no_keywords():
    d = diagnostic(HEAD + "    out[0] = min(x, axis=0)\n")
    assert "no keyword arguments" in d.message and "I.min(x, axis=0)" in d.hint


def test_a_helper_named_like_a_python_builtin_wins():
    text = kir("@intent.fn\ndef max(a: f32, b: f32) -> f32:\n    return a + b\n\n"
               + HEAD + "    for i in I.parallel(x.axis(0)):\n        out[i] = max(x[i], 1.0)\n")
    assert "call(" in text and '"callee": "max"' in text


@pytest.mark.parametrize("name,hint", [
    ("np.exp(x)", "I.exp(x)"), ("numpy.sum(x)", "I.sum"), ("math.sqrt(x[0])", "I.exp(x)"),
    ("sum(x)", "I.sum(x)"), ("sqrt(x)", "I.sqrt(x)"), ("float(N)", "I.cast(x, f32)"),
    ("print(x)", "no side output"), ("zeros(N)", "I.buffer")])
def test_python_and_numpy_names_get_the_intent_spelling(name, hint):
    d = diagnostic(HEAD + f"    y = {name}\n")
    assert d.message.startswith("undefined name") and hint in d.hint, d.hint


def test_mean_of_an_integer_tensor_needs_a_float_acc_t1():
    d = diagnostic("@intent.kernel\ndef k(x: i32[N]) -> f32[1]:\n    return I.mean(x, keepdims=True)\n")
    assert d.message == "I.mean needs a float tensor, got i32" and "acc=" in d.hint


def test_ddof_is_a_non_negative_literal():
    d = diagnostic("@intent.kernel\ndef k(x: f32[N]) -> f32[1]:\n    return I.var(x, keepdims=True, ddof=-1)\n")
    assert d.message == "ddof must be a non-negative integer literal"


def test_mean_takes_no_ddof():
    d = diagnostic("@intent.kernel\ndef k(x: f32[N]) -> f32[1]:\n    return I.mean(x, keepdims=True, ddof=1)\n")
    assert "ddof" in d.message


# ---- implicit conversions (sema/conversions.py) -------------------------------------------------
def test_tensors_of_different_dtypes_still_need_a_cast():
    d = diagnostic("@intent.kernel\ndef k(x: f32[N], y: i32[N]) -> f32[N]:\n    return x + y\n")
    assert d.message == "dtype mismatch: 'x' is f32 but 'y' is i32" and "I.cast(y, f32)" in d.hint


def test_floats_never_become_integers_implicitly():
    d = diagnostic("@intent.kernel\ndef k(x: f32[N], out: mut i32[N]):\n"
                   "    for i in I.parallel(x.axis(0)):\n        out[i] = x[i]\n")
    assert "dtype mismatch" in d.message and "I.cast" in d.hint


def test_a_float_literal_carry_cannot_become_an_integer_o2():
    d = diagnostic("@intent.kernel\ndef k(x: i32[N], out: mut i32[1]):\n    acc = 0.5\n"
                   "    for i in x.axis(0):\n        acc = x[i]\n    out[0] = x[0]\n")
    assert d.rule == "O2" and "changes type from f32 to i32" in d.message


def test_index_and_i64_mix_as_i64():
    text = kir("@intent.kernel\ndef k(n: i64, x: f32[N], out: mut i64[1]):\n    out[0] = n + len(x)\n")
    assert "cast(" in text and "add(" in text
