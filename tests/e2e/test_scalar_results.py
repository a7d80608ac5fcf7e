"""Scalar results (docs/abi.md, "Scalar results"): ``-> f32``, ``-> (f32, i64)`` and mixes
with tensors. Python gets a NumPy scalar of the declared dtype (a tuple in declared order
for several results) from the compiled kernel (prepared fast path and general path alike)
and from the reference interpreter; a C caller passes one trailing pointer per scalar
result, which the kernel writes only when it returns 0."""
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
def dot(x: f32[N], y: f32[N]) -> f32:
    return I.sum(x * y)

@intent.kernel
def dot64(x: f64[N], y: f64[N]) -> f64:
    acc: f64 = 0.0
    for i in x.axis(0):
        acc = acc + x[i] * y[i]
    return acc

@intent.kernel
def sum_and_count(x: f32[N], limit: f32) -> (f32, i64):
    keep = x > limit
    return I.sum(I.where(keep, x, 0.0)), I.sum(I.cast(keep, i64))

@intent.kernel
def scaled_and_norm(x: f32[N]) -> (f32[N], f32):
    total = I.sum(x * x)
    return x / I.sqrt(total), total

@intent.kernel
def any_negative(x: i32[R, C]) -> (bool, i32, f16):
    return I.max(I.reshape(I.cast(x < 0, i32), [R * C])) == 1, I.sum(I.reshape(x, [R * C])), I.cast(1.5, f16)

@intent.kernel
def first_checked(x: f32[N], k: index) -> f32:
    return x[k]
"""


@pytest.fixture(scope="module")
def sides(tmp_path_factory):
    folder = tmp_path_factory.mktemp("scalar_results")
    (folder / "s.intent").write_text(SOURCE)
    build(folder / "s.intent", folder / "s.so")
    compiled, module = intentc.load(folder / "s.so"), frontend(SOURCE, "s.intent")
    return [("compiled", lambda name, *a, **k: getattr(compiled, name)(*a, **k)),
            ("interpreted", lambda name, *a, **k: intentc.interpret(module, name, *a, **k))]


def test_dot_product_returns_a_numpy_scalar(sides):
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
    results = []
    for side, call in sides:
        for value in (call("dot", x, y), call("dot", x=x, y=y)):  # fast path, then the general one
            assert type(value) is np.float32, side
            np.testing.assert_allclose(value, np.dot(x.astype(np.float64), y), rtol=1e-4, err_msg=side)
            results.append(value)
        value = call("dot64", x.astype(np.float64), y.astype(np.float64))
        assert type(value) is np.float64, side
        np.testing.assert_allclose(value, np.dot(x.astype(np.float64), y.astype(np.float64)), rtol=1e-12)
    assert results[0] == results[1]  # one algorithm on both paths
    assert all(type(call("dot", x[:0], y[:0])) is np.float32 and call("dot", x[:0], y[:0]) == 0
               for _, call in sides)


def test_several_scalars_come_back_as_a_tuple(sides):
    x = np.array([0.5, 3.0, -1.0, 4.0, 2.5], np.float32)
    for side, call in sides:
        total, count = call("sum_and_count", x, 1.0)
        assert (type(total), type(count)) == (np.float32, np.int64), side
        assert (total, count) == (np.float32(9.5), 3), side
        flag, whole, half = call("any_negative", np.array([[1, -2], [3, 4]], np.int32))
        assert (type(flag), type(whole), type(half)) == (np.bool_, np.int32, np.float16), side
        assert (bool(flag), int(whole), float(half)) == (True, 6, 1.5), side
        assert not call("any_negative", np.ones((2, 3), np.int32))[0], side


def test_tensors_and_scalars_mix_in_declared_order(sides):
    x = np.array([3.0, 4.0], np.float32)
    for side, call in sides:
        scaled, total = call("scaled_and_norm", x)
        np.testing.assert_allclose(scaled, [0.6, 0.8], rtol=1e-6, err_msg=side)
        assert type(total) is np.float32 and total == 25.0, side
        out = np.zeros(2, np.float32)  # out= gives the tensor results only
        again = call("scaled_and_norm", x, out=out)
        assert again[0] is out and again[1] == 25.0, side
        with pytest.raises(TypeError, match="returns 1 tensors"):
            call("scaled_and_norm", x, out=(out, np.zeros((), np.float32)))


def test_a_refused_call_returns_no_scalar(sides):
    x = np.arange(4, dtype=np.float32)
    for side, call in sides:
        assert call("first_checked", x, 2) == 2.0, side
        with pytest.raises(intentc.KernelError):
            call("first_checked", x, 4)
        with pytest.raises(intentc.KernelError) as info:
            call("dot", x, x[:3])
        assert info.value.code == E_SHAPE, side


def test_the_manifest_and_header_describe_scalar_results(tmp_path):
    (tmp_path / "s.intent").write_text(SOURCE)
    build(tmp_path / "s.intent", tmp_path / "s.a", emit_header=True)
    header = (tmp_path / "s.h").read_text()
    assert "INTENT_API int32_t dot(const IntentTensor *x, const IntentTensor *y, float *out);" in header
    assert ("INTENT_API int32_t scaled_and_norm(const IntentTensor *x, IntentTensor *out0, float *out1);"
            in header)
    assert ("INTENT_API int32_t any_negative(const IntentTensor *x, uint8_t *out0, int32_t *out1, uint16_t *out2);"
            in header)
    assert " *   out: f32 scalar result, written by the kernel only when it returns 0" in header
    build(tmp_path / "s.intent", tmp_path / "s.so")
    loaded = intentc.load(tmp_path / "s.so")
    assert loaded.sum_and_count.__doc__ == "sum_and_count(x: f32[N], limit: f32) -> f32, i64"
    assert [p for p in loaded.manifest["kernels"][0]["params"] if p["name"] == "out"] == [
        {"name": "out", "kind": "scalar", "dtype": "f32", "result": True}]


C_CALLER = r"""
#include <stdio.h>
#include "s.h"

static IntentTensor vec(float *data, int64_t *shape, int64_t *strides)
{
    IntentTensor t = {data, {INTENT_DEVICE_CPU, 0}, 1, {INTENT_DTYPE_FLOAT, 32, 1}, shape, strides, 0};
    return t;
}

int main(void)
{
    float a[4] = {1, 2, 3, 4}, b[4] = {1, 1, 1, 1}, o[4];
    int64_t n4[] = {4}, n3[] = {3}, one[] = {1};
    IntentTensor x = vec(a, n4, one), y = vec(b, n4, one), z = vec(b, n3, one), out = vec(o, n4, one);
    float result = -1.0f;
    int32_t rc = dot(&x, &y, &result);
    printf("dot %d %g\n", rc, result);
    result = -1.0f;
    rc = dot(&x, &z, &result); /* refused: the result is not written */
    printf("bad %d %g\n", rc, result);
    float total = 0.0f, count_limit = 1.5f;
    int64_t count = -1;
    rc = sum_and_count(&x, count_limit, &total, &count);
    printf("sum_and_count %d %g %lld\n", rc, total, (long long)count);
    rc = scaled_and_norm(&x, &out, &total);
    printf("scaled_and_norm %d %g %.4f\n", rc, total, o[3]);
    return 0;
}
"""


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_c_caller_passes_one_pointer_per_scalar(tmp_path):
    (tmp_path / "s.intent").write_text(SOURCE)
    build(tmp_path / "s.intent", tmp_path / "s.a", emit_header=True)
    (tmp_path / "main.c").write_text(C_CALLER)
    subprocess.run(["gcc", "-Wall", "-Werror", "-I", str(tmp_path), str(tmp_path / "main.c"), str(tmp_path / "s.a"),
                    "-o", str(tmp_path / "main"), "-pthread", "-lm"], check=True)
    lines = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True, check=True).stdout.splitlines()
    assert lines == ["dot 0 10", f"bad {E_SHAPE} -1", "sum_and_count 0 9 3", "scaled_and_norm 0 30 0.7303"]


@pytest.mark.parametrize("sanitize", ["order", "laws"])
def test_sanitized_builds_return_scalars(sanitize):
    """A sanitized entry (the order sanitizer runs the body twice) snapshots the written
    tensors only; the scalar result comes from the body that succeeded."""
    kernels = intentc.load_source(SOURCE, sanitize=(sanitize,))
    x = np.arange(6, dtype=np.float32)
    assert kernels.dot(x, x) == np.float32(55.0)
    scaled, total = kernels.scaled_and_norm(x)
    assert total == 55.0 and scaled.shape == (6,)
