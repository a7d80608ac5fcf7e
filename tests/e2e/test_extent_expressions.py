"""Parameter extents written as expressions of extent names (S1): ``f32[B, T, 3 * C]``,
``f32[N + 2]``. Each is checked on entry against the names the other axes bind, with the
usual message and INTENT_E_SHAPE, compiled and interpreted alike; a name used only inside
expressions is solved from an axis ``c * N + k`` (c > 0) and checked to be whole, else it is a
diagnostic."""
from __future__ import annotations

import numpy as np
import pytest

import intentc
from intentc.base.status import E_SHAPE
from intentc.diagnostics import CompileError
from intentc.driver import build, frontend

SOURCE = """
import intent as I

@intent.kernel
def split_qkv(qkv: f32[B, T, 3 * C], q: mut f32[B, T, C], v: mut f32[B, T, C]):
    for b, t, c in I.parallel(q.axis(0), q.axis(1), q.axis(2)):
        q[b, t, c] = qkv[b, t, c]
        v[b, t, c] = qkv[b, t, 2 * C + c]

@intent.kernel
def pad(x: f32[N], out: mut f32[N + 2]):
    for i in I.parallel(out.axis(0)):
        out[i] = 0.0
    for i in I.parallel(x.axis(0)):
        out[i + 1] = x[i]

@intent.kernel
def pairs(x: f32[N], y: f32[N * 2 - N // 2]) -> f32[2 * N]:
    return I.reshape(I.join(x, x), [2 * N]) + y[0]
"""


@pytest.fixture(scope="module")
def sides(tmp_path_factory):
    folder = tmp_path_factory.mktemp("extents")
    (folder / "e.intent").write_text(SOURCE)
    build(folder / "e.intent", folder / "e.so")
    compiled, module = intentc.load(folder / "e.so"), frontend(SOURCE, "e.intent")
    return [("compiled", lambda name, *a: getattr(compiled, name)(*a)),
            ("interpreted", lambda name, *a: intentc.interpret(module, name, *a))]


def test_expressions_of_extents_are_checked_on_entry(sides):
    qkv = np.arange(2 * 3 * 12, dtype=np.float32).reshape(2, 3, 12)
    for side, call in sides:
        q, v = np.zeros((2, 3, 4), np.float32), np.zeros((2, 3, 4), np.float32)
        call("split_qkv", qkv, q, v)
        np.testing.assert_array_equal(q, qkv[..., :4], err_msg=side)
        np.testing.assert_array_equal(v, qkv[..., 8:], err_msg=side)
        with pytest.raises(intentc.KernelError) as info:
            call("split_qkv", np.zeros((2, 3, 11), np.float32), q, v)
        assert info.value.code == E_SHAPE, side
        assert "extent 3*C: qkv.shape[2] = 11 but 3*C = 12 (at " in str(info.value), side
        assert "e.intent:5:15)" in str(info.value), side
        out = np.full(5, 7.0, np.float32)
        call("pad", np.ones(3, np.float32), out)
        np.testing.assert_array_equal(out, [0, 1, 1, 1, 0], err_msg=side)
        with pytest.raises(intentc.KernelError) as info:
            call("pad", np.ones(3, np.float32), np.zeros(4, np.float32))
        assert info.value.code == E_SHAPE and "extent N+2: out.shape[0] = 4 but N+2 = 5" in str(info.value), side


def test_a_result_sized_from_an_expression_parameter(sides):
    x = np.arange(4, dtype=np.float32)
    for side, call in sides:
        got = call("pairs", x, np.full(6, 0.5, np.float32))  # N * 2 - N // 2 = 6
        np.testing.assert_array_equal(got, np.repeat(x, 2) + 0.5, err_msg=side)
        with pytest.raises(intentc.KernelError):
            call("pairs", x, np.zeros(5, np.float32))


SOLVED = """
import intent as I

@intent.kernel
def diffs(x: f32[N + 1], out: mut f32[1]):
    out[0] = 0.0
    for i in I.domain(0, N):
        out[0] += x[i + 1] - x[i]

@intent.kernel
def half_sums(x: f32[2 * N], out: mut f32[2]):
    out[0] = I.sum(x[0:N])
    out[1] = I.sum(x[N:2 * N])

@intent.kernel
def thirds(x: f32[3 * N + 1], out: mut f32[1]):
    out[0] = I.cast(N, f32)
"""


def test_a_name_only_inside_affine_extents_is_solved():
    """``f32[N + 1]``, ``f32[2 * N]``, ``f32[3 * N + 1]`` bind N = (extent - k) / c on entry, so
    the body can use it; an extent that no whole N >= 0 gives is INTENT_E_SHAPE."""
    module = frontend(SOLVED, "s.intent")
    lib = intentc.load_source(SOLVED, name="solved_extents")
    sides = [("compiled", lambda name, *a: getattr(lib, name)(*a)),
             ("interpreted", lambda name, *a: intentc.interpret(module, name, *a))]
    for side, call in sides:
        out = np.zeros(1, np.float32)
        call("diffs", np.array([1, 4, 9, 16], np.float32), out)
        assert out[0] == 15, side
        out = np.zeros(2, np.float32)
        call("half_sums", np.arange(6, dtype=np.float32), out)
        np.testing.assert_array_equal(out, [3, 12], err_msg=side)
        out = np.zeros(1, np.float32)
        call("thirds", np.zeros(7, np.float32), out)
        assert out[0] == 2, side
        for name, n, words in (("half_sums", 5, "extent 2*N: x.shape[0] = 5 is not 2*N for any extent N >= 0"),
                               ("thirds", 6, "extent (3*N)+1: x.shape[0] = 6 is not (3*N)+1"),
                               ("thirds", 0, "x.shape[0] = 0 is not (3*N)+1"),
                               ("diffs", 0, "extent N+1: x.shape[0] = 0 is not N+1")):
            out = np.full(2, 7.0, np.float32)[:1 if name != "half_sums" else 2]
            with pytest.raises(intentc.KernelError) as info:
                call(name, np.zeros(n, np.float32), out)
            assert info.value.code == E_SHAPE and words in str(info.value), (side, str(info.value))
            assert (out == 7).all(), f"{side}: nothing is written"


def test_a_name_that_cannot_be_solved_is_a_diagnostic():
    for extent in ("N * M", "N * N", "N // 2", "1 - N"):
        source = f"import intent as I\n\n@intent.kernel\ndef trim(x: f32[{extent}], out: mut f32[1]):\n" \
                 "    out[0] = x[0]\n"
        with pytest.raises(CompileError) as info:
            frontend(source, "t.intent")
        text = str(info.value)
        assert "error[S1]" in text and "which no axis is named by itself" in text and "t.intent:4:" in text, text
        assert "from which it can be solved" in text
