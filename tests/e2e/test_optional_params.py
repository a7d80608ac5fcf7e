"""Optional and default parameters (docs/language.md, "Optional and default parameters";
docs/abi.md): ``bias: f32[C] | None = None`` is a NULL descriptor in C and None or an
omitted argument in Python; ``if bias is not None:`` tests presence at run time (one
compiled kernel serves both cases) and inside it ``bias`` is an ordinary tensor. Scalar
defaults (``eps: f32 = 1e-5``) are filled in by the Python calling convention; C passes
every scalar. Compiled (fast and general paths), interpreted and NumPy agree."""
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
def layernorm(x: f32[N, C], w: f32[C], bias: f32[C] | None = None, eps: f32 = 1e-5) -> f32[N, C]:
    mean = I.mean(x, axis=1)
    d = x - mean.reshape([N, 1])
    var = I.mean(d * d, axis=1)
    y = d / I.sqrt(var + eps).reshape([N, 1]) * w.reshape([1, C])
    if bias is not None:
        y = y + bias.reshape([1, C])
    return y

@intent.kernel
def matmul_forward(inp: f32[B, C], weight: f32[OC, C], out: mut f32[B, OC], bias: f32[OC] | None = None):
    for b, o in I.parallel(out.axis(0), out.axis(1)):
        val: f32 = 0.0
        if bias is not None:
            val = bias[o]
        for i in inp.axis(1):
            val = val + inp[b, i] * weight[o, i]
        out[b, o] = val

@intent.kernel
def shifted(x: i64[N], offset: i64[N] | None = None, step: i64 = -3) -> i64[N]:
    y = x
    if offset is None:
        y = x + step
    else:
        y = x + offset
    return y
"""


def _layernorm(x, w, bias=None, eps=1e-5):
    mean = x.mean(axis=1, keepdims=True)
    d = x - mean
    y = d / np.sqrt((d * d).mean(axis=1, keepdims=True) + eps) * w
    return y if bias is None else y + bias


@pytest.fixture(scope="module")
def sides(tmp_path_factory):
    folder = tmp_path_factory.mktemp("optional")
    (folder / "o.intent").write_text(SOURCE)
    build(folder / "o.intent", folder / "o.so")
    compiled, module = intentc.load(folder / "o.so"), frontend(SOURCE, "o.intent")
    return [("compiled", lambda name, *a, **k: getattr(compiled, name)(*a, **k)),
            ("interpreted", lambda name, *a, **k: intentc.interpret(module, name, *a, **k))]


def test_layernorm_with_and_without_bias(sides):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 8)).astype(np.float32)
    w, bias = rng.standard_normal(8).astype(np.float32), rng.standard_normal(8).astype(np.float32)
    for side, call in sides:
        for args, kwargs, expect in [
                ((x, w), {}, _layernorm(x, w)),
                ((x, w, bias), {}, _layernorm(x, w, bias)),
                ((x, w, bias, 0.5), {}, _layernorm(x, w, bias, 0.5)),  # every argument: the fast path
                ((x, w, None, 0.5), {}, _layernorm(x, w, None, 0.5)),
                ((x, w), {"eps": 0.25, "bias": bias}, _layernorm(x, w, bias, 0.25)),
                ((x,), {"w": w, "bias": None}, _layernorm(x, w))]:
            np.testing.assert_allclose(call("layernorm", *args, **kwargs), expect, rtol=2e-5, atol=2e-5,
                                       err_msg=f"{side} {kwargs}")


def test_presence_inside_parallel_loops(sides):
    rng = np.random.default_rng(4)
    inp, weight = rng.standard_normal((3, 6)).astype(np.float32), rng.standard_normal((4, 6)).astype(np.float32)
    bias = rng.standard_normal(4).astype(np.float32)
    for side, call in sides:
        out = np.full((3, 4), np.nan, np.float32)
        call("matmul_forward", inp, weight, out)
        np.testing.assert_allclose(out, inp @ weight.T, rtol=1e-5, atol=1e-5, err_msg=side)
        call("matmul_forward", inp, weight, out, bias)
        np.testing.assert_allclose(out, inp @ weight.T + bias, rtol=1e-5, atol=1e-5, err_msg=side)


def test_is_none_with_an_else_branch_and_integer_defaults(sides):
    x = np.arange(5, dtype=np.int64)
    for side, call in sides:
        np.testing.assert_array_equal(call("shifted", x), x - 3, err_msg=side)
        np.testing.assert_array_equal(call("shifted", x, step=10), x + 10, err_msg=side)
        np.testing.assert_array_equal(call("shifted", x, x * 2), x * 3, err_msg=side)


def test_a_present_tensor_is_checked_and_a_missing_required_one_is_an_error(sides):
    x, w = np.ones((2, 4), np.float32), np.ones(4, np.float32)
    for side, call in sides:
        with pytest.raises(intentc.KernelError) as info:
            call("layernorm", x, w, np.ones(3, np.float32))
        assert info.value.code == E_SHAPE, side
        assert "extent C: bias.shape[0] = 3 but the kernel expects 4" in str(info.value), side
        with pytest.raises(TypeError, match="missing arguments: w"):
            call("layernorm", x)
        with pytest.raises(intentc.KernelError, match="'bias' has 0 dimensions but the kernel expects 1"):
            call("layernorm", x, w, 1.0)  # a number is a 0-d array, not an absent tensor


def test_manifest_and_header_document_optional_and_default_parameters(tmp_path):
    (tmp_path / "o.intent").write_text(SOURCE)
    build(tmp_path / "o.intent", tmp_path / "o.a", emit_header=True)
    header = (tmp_path / "o.h").read_text()
    assert " *   bias: f32[C] (read-only; optional: NULL when absent)" in header
    assert " *   eps: f32 scalar (default 1e-05 in Python; C passes every scalar)" in header
    assert ("INTENT_API int32_t layernorm(const IntentTensor *x, const IntentTensor *w, const IntentTensor *bias, "
            "float eps, IntentTensor *out);") in header
    build(tmp_path / "o.intent", tmp_path / "o.so")
    loaded = intentc.load(tmp_path / "o.so")
    assert loaded.layernorm.__doc__ == ("layernorm(x: f32[N, C], w: f32[C], bias: f32[C] | None = None, "
                                        "eps: f32 = 1e-05) -> f32[N, C]")
    params = {p["name"]: p for p in loaded.manifest["kernels"][0]["params"]}
    assert params["bias"]["optional"] is True and params["bias"]["default"] is None
    assert params["eps"]["default"] == pytest.approx(1e-5) and "optional" not in params["x"]


C_CALLER = r"""
#include <stdio.h>
#include "o.h"

static IntentTensor vec(float *data, int64_t *shape, int64_t *strides, int32_t ndim)
{
    IntentTensor t = {data, {INTENT_DEVICE_CPU, 0}, ndim, {INTENT_DTYPE_FLOAT, 32, 1}, shape, strides, 0};
    return t;
}

int main(void)
{
    float in[2] = {1, 2}, wt[2] = {3, 4}, bias[1] = {10}, o[1];
    int64_t s12[] = {1, 2}, s11[] = {1, 1}, n1[] = {1}, n2[] = {2}, st2[] = {2, 1}, one[] = {1};
    IntentTensor inp = vec(in, s12, st2, 2), weight = vec(wt, s12, st2, 2), out = vec(o, s11, one, 2);
    IntentTensor b = vec(bias, n1, one, 1), wrong = vec(bias, n2, one, 1);
    int32_t rc = matmul_forward(&inp, &weight, &out, NULL);
    printf("absent %d %g\n", rc, o[0]);
    rc = matmul_forward(&inp, &weight, &out, &b);
    printf("present %d %g\n", rc, o[0]);
    o[0] = -1;
    rc = matmul_forward(&inp, &weight, &out, &wrong);
    printf("wrong %d %g\n", rc, o[0]);
    return 0;
}
"""


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_c_caller_passes_null_for_an_absent_tensor(tmp_path):
    (tmp_path / "o.intent").write_text(SOURCE)
    build(tmp_path / "o.intent", tmp_path / "o.a", emit_header=True)
    (tmp_path / "main.c").write_text(C_CALLER)
    subprocess.run(["gcc", "-Wall", "-Werror", "-I", str(tmp_path), str(tmp_path / "main.c"), str(tmp_path / "o.a"),
                    "-o", str(tmp_path / "main"), "-pthread", "-lm"], check=True)
    lines = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True, check=True).stdout.splitlines()
    assert lines == ["absent 0 11", "present 0 21", f"wrong {E_SHAPE} -1"]
