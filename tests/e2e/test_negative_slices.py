"""Tensor slices with a step, negative ones included (``x[::-1]``, ``r[k - 1:0:-1]``,
``x[:, 1::2]``), read as gathers, an indexed relation (D7; sema/strided.py), with NumPy's
meaning where both are defined; compiled and interpreted alike. Bounds are checked, never
clamped and never counted from the end (D5): a bad call is a
``KernelError`` with nothing written. A reversed domain and a write through a stepped slice
are diagnostics that show the legal spelling."""
from __future__ import annotations

import numpy as np
import pytest

import intentc
from intentc.diagnostics import CompileError
from intentc.driver import frontend

SOURCE = """
import intent as I

@intent.kernel
def rev(x: f32[N]) -> f32[N]:
    return x[::-1]

@intent.kernel
def tail(r: f32[N], k: index, out: mut f32[N]):
    y = r[k - 1:0:-1]
    for i in I.parallel(y.axis(0)):
        out[i] = y[i]

@intent.kernel
def pick(x: f32[N], a: index, b: index, out: mut f32[N]):
    y = x[a:b:-2]
    for i in I.parallel(y.axis(0)):
        out[i] = y[i]

@intent.kernel
def odds(x: f32[R, C]) -> f32[R, C // 2]:
    return x[:, 1::2] * 2.0

@intent.kernel
def flip2(x: f32[R, C], out: mut f32[R, C]):
    out[:, :] = x[::-1, ::-1] + x[:, ::-1]

@intent.kernel
def row_back(x: f32[R, C], out: mut f32[R, C]):
    for r in I.parallel(x.axis(0)):
        out[r, :] = x[r, ::-1]

@intent.kernel
def dot_reversed(x: f32[N], y: f32[N], out: mut f32[1]):
    out[0] = I.sum(x * y[::-1])
"""


@pytest.fixture(scope="module")
def sides():
    lib = intentc.load_source(SOURCE, name="negative_slices")
    module = frontend(SOURCE, "negative_slices.intent")
    return [("compiled", lambda name, *a: getattr(lib, name)(*a)),
            ("interpreted", lambda name, *a: intentc.interpret(module, name, *a))]


def test_reversed_and_strided_reads_match_numpy(sides):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(9).astype(np.float32)
    m = rng.standard_normal((3, 6)).astype(np.float32)
    for side, call in sides:
        np.testing.assert_array_equal(call("rev", x), x[::-1], err_msg=side)
        np.testing.assert_array_equal(call("odds", m), m[:, 1::2] * 2, err_msg=side)
        out = np.zeros_like(m)
        call("flip2", m, out)
        np.testing.assert_array_equal(out, m[::-1, ::-1] + m[:, ::-1], err_msg=side)
        out = np.zeros_like(m)
        call("row_back", m, out)
        np.testing.assert_array_equal(out, m[:, ::-1], err_msg=side)
        dot = np.zeros(1, np.float32)
        call("dot_reversed", x, x, dot)
        np.testing.assert_allclose(dot[0], np.dot(x, x[::-1]), rtol=1e-5, err_msg=side)


@pytest.mark.parametrize("k", [1, 2, 5, 9])
def test_the_llm_c_spelling_r_k_minus_1_down_to_1(sides, k):
    r = np.arange(9, dtype=np.float32) * 10
    for side, call in sides:
        out = np.full(9, -1.0, np.float32)
        call("tail", r, k, out)
        want = r[k - 1:0:-1]
        np.testing.assert_array_equal(out[:len(want)], want, err_msg=side)
        assert (out[len(want):] == -1).all(), side


@pytest.mark.parametrize("a,b", [(8, 0), (8, 1), (7, 7), (3, 5), (0, 0), (5, 0)])
def test_negative_steps_count_like_numpy(sides, a, b):
    x = np.arange(9, dtype=np.float32)
    for side, call in sides:
        out = np.full(9, -1.0, np.float32)
        call("pick", x, a, b, out)
        want = x[a:b:-2]
        np.testing.assert_array_equal(out[:len(want)], want, err_msg=f"{side} x[{a}:{b}:-2]")
        assert (out[len(want):] == -1).all(), side


@pytest.mark.parametrize("a,b", [(9, 0), (12, 3), (-1, 0), (4, -1)])
def test_bounds_are_never_clamped_nor_counted_from_the_end(sides, a, b):
    x = np.arange(9, dtype=np.float32)
    for side, call in sides:
        out = np.full(9, -1.0, np.float32)
        with pytest.raises(intentc.KernelError) as info:
            call("pick", x, a, b, out)
        assert "never clamped" in str(info.value) and "never count from the end" in str(info.value), side
        assert (out == -1).all(), f"{side}: a refused call writes nothing"


def _diagnostic(body: str):
    with pytest.raises(CompileError) as info:
        frontend("import intent as I\n\n@intent.kernel\n" + body, "k.intent")
    return info.value.diagnostics[0]


def test_a_reversed_domain_shows_the_upward_spelling():
    d = _diagnostic("def k(x: f32[N], out: mut f32[N]):\n    for i in x.axis(0)[::-1]:\n        out[i] = x[i]\n")
    assert d.rule == "D7" and "a domain runs upward" in d.message
    assert "i = n - 1 - k" in d.hint and "x[::-1]" in d.hint


def test_a_write_through_a_stepped_slice_shows_the_loop_and_the_scatter():
    d = _diagnostic("def k(x: f32[N], out: mut f32[N]):\n    out[::-1] = x\n")
    assert d.rule == "D7" and "cannot write through a slice with a step" in d.message
    assert "out[n - 1 - i] = x[i]" in d.hint and "I.scatter" in d.hint


def test_a_step_is_a_constant_non_zero_integer():
    d = _diagnostic("def k(x: f32[N], s: index) -> f32[N]:\n    return x[::s]\n")
    assert d.rule == "D7" and "constant integer" in d.message and "I.indices(I.domain(" in d.hint
    d = _diagnostic("def k(x: f32[N]) -> f32[N]:\n    return x[::0]\n")
    assert "cannot be zero" in d.message


def test_a_reversed_read_is_a_gather_that_adds_no_buffer():
    from intentc.driver import compile_source
    from intentc.lower.program import format_program

    compiled = compile_source("import intent as I\n\n@intent.kernel\ndef k(x: f32[N], y: f32[N]) -> f32[N]:\n"
                              "    return x * y[::-1]\n", "k.intent", optimize_ir=False)
    assert "alloc" not in format_program(compiled.program)
