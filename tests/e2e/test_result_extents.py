"""Result extents that are expressions of parameter extents and integer scalar parameters
(S1): ``-> i64[b - a]``, ``-> f32[n * C]``. The caller can size the result from the
arguments; the extent is evaluated on entry, before anything is written, and a negative
value or one that does not fit in 64 bits is INTENT_E_SHAPE, compiled (Python and C
callers) and interpreted alike."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import intentc
from intentc.base.status import E_SHAPE
from intentc.driver import build, frontend

SOURCE = """\
import intent as I

@intent.kernel
def window(x: i64[N], a: index, b: index) -> i64[b - a]:
    return x[a:b]

@intent.kernel
def repeat_rows(x: f32[C], n: i32) -> f32[n, C]:
    return x[C - 1] * 2.0  # a scalar broadcast to the declared extents

@intent.kernel
def tiles(x: f32[N], reps: index) -> f32[reps * N + 1]:
    return x[0]
"""


@pytest.fixture(scope="module")
def sides(tmp_path_factory):
    folder = tmp_path_factory.mktemp("result_extents")
    (folder / "r.intent").write_text(SOURCE)
    build(folder / "r.intent", folder / "r.so")
    compiled, module = intentc.load(folder / "r.so"), frontend(SOURCE, "r.intent")
    return [("compiled", lambda name, *a, **k: getattr(compiled, name)(*a, **k)),
            ("interpreted", lambda name, *a, **k: intentc.interpret(module, name, *a, **k))]


def test_extents_of_scalar_parameters(sides):
    x = np.arange(10, dtype=np.int64) * 3
    row = np.array([1.0, 2.0, 3.0], np.float32)
    for side, call in sides:
        np.testing.assert_array_equal(call("window", x, 2, 7), x[2:7], err_msg=side)
        assert call("window", x, 4, 4).shape == (0,), side
        np.testing.assert_array_equal(call("repeat_rows", row, 4), np.full((4, 3), 6.0, np.float32), err_msg=side)
        np.testing.assert_array_equal(call("tiles", row, 2), np.full(7, 1.0, np.float32), err_msg=side)
        out = np.zeros(3, np.int64)
        assert call("window", x, 1, 4, out=out) is out and list(out) == [3, 6, 9], side


def test_negative_and_overflowing_extents_are_refused_before_anything_is_written(sides):
    x = np.arange(10, dtype=np.int64)
    for side, call in sides:
        with pytest.raises(intentc.KernelError) as info:
            call("window", x, 7, 2)
        assert info.value.code == E_SHAPE, side
        assert "window: the result extent b-a is -5, which is negative" in str(info.value), side
        with pytest.raises(intentc.KernelError) as info:
            call("repeat_rows", np.ones(3, np.float32), -1)
        assert info.value.code == E_SHAPE and "the result extent n is -1" in str(info.value), side
        with pytest.raises(intentc.KernelError) as info:
            call("tiles", np.ones(4, np.float32), 2 ** 62)
        assert info.value.code == E_SHAPE, side
        assert "the extent (reps*N)+1 of 'out' does not fit in 64 bits" in str(info.value), side
        out = np.full(3, -7, np.int64)  # a given out= of the wrong extent: refused, not written
        with pytest.raises(intentc.KernelError) as info:
            call("window", x, 0, 4, out=out)
        assert info.value.code == E_SHAPE and list(out) == [-7, -7, -7], side


def test_header_names_the_extent_expressions(tmp_path):
    (tmp_path / "r.intent").write_text(SOURCE)
    build(tmp_path / "r.intent", tmp_path / "r.a", emit_header=True)
    header = (tmp_path / "r.h").read_text()
    assert " *   out: i64[b-a] (result, written by the kernel)" in header
    assert "INTENT_API int32_t window(const IntentTensor *x, int64_t a, int64_t b, IntentTensor *out);" in header


C_CALLER = r"""
#include <stdio.h>
#include "r.h"

int main(void)
{
    int64_t data[10], o[4] = {-7, -7, -7, -7};
    for (int i = 0; i < 10; i++) data[i] = 3 * i;
    int64_t n10[] = {10}, n4[] = {4}, one[] = {1};
    IntentTensor x = {data, {INTENT_DEVICE_CPU, 0}, 1, {INTENT_DTYPE_INT, 64, 1}, n10, one, 0};
    IntentTensor out = {o, {INTENT_DEVICE_CPU, 0}, 1, {INTENT_DTYPE_INT, 64, 1}, n4, one, 0};
    int32_t rc = window(&x, 3, 7, &out);
    printf("ok %d %lld %lld\n", rc, (long long)o[0], (long long)o[3]);
    o[0] = -7;
    rc = window(&x, 7, 3, &out);
    printf("negative %d %lld [%s]\n", rc, (long long)o[0], intent_last_error());
    rc = window(&x, 0, 3, &out);
    printf("mismatch %d %lld\n", rc, (long long)o[0]);
    return 0;
}
"""


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_c_caller_gets_the_entry_check(tmp_path):
    (tmp_path / "r.intent").write_text(SOURCE)
    build(tmp_path / "r.intent", tmp_path / "r.a", emit_header=True)
    (tmp_path / "main.c").write_text(C_CALLER)
    subprocess.run(["gcc", "-Wall", "-Werror", "-I", str(tmp_path), str(tmp_path / "main.c"), str(tmp_path / "r.a"),
                    "-o", str(tmp_path / "main"), "-pthread", "-lm"], check=True)
    lines = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True, check=True).stdout.splitlines()
    assert lines == ["ok 0 9 18", f"negative {E_SHAPE} -7 [window: the result extent b-a is -4, which is negative]",
                     f"mismatch {E_SHAPE} -7"]
