"""Scalar results on the PTX target (docs/ptx-abi.md, "Scalar results"): each is a device
buffer of one element that the manifest lists under ``scalar_results``; the reference PTX
loader passes it as the ``NAME.data`` argument and reads it back only when the call
succeeds, returning a NumPy scalar (a tuple for several) as the CPU loader does. The
kernels run through the block emulator with small grids and are compared with the
reference interpreter and NumPy."""
from __future__ import annotations

import numpy as np
import pytest

import intentc
from cpu_emulation import Emulator
from intentc import ptx_loader
from intentc.base.status import E_BOUNDS
from intentc.driver import compile_source, frontend

SOURCE = """
import intent as I

@intent.kernel
def dot(x: f32[N], y: f32[N]) -> f32:
    return I.sum(x * y)

@intent.kernel
def stats(x: f32[N]) -> (f32[N], f32, i64):
    return x * 2.0, I.max(x), N

@intent.kernel
def pick(x: i32[N], k: index) -> i32:
    return x[k]
"""


@pytest.fixture(scope="module", params=[(2, 4), (1, 1)], ids=["2x4", "1x1"])
def module(request):
    compiled = compile_source(SOURCE, "s.intent", "sm_80", optimize_ir=False)
    blocks, threads = request.param
    return ptx_loader.Module("", compiled.manifest, Emulator(compiled.llvm_ir, max_blocks=blocks,
                                                             max_threads=threads))


def test_the_manifest_describes_the_device_buffers(module):
    kernels = {k["name"]: k for k in module.manifest["kernels"]}
    assert kernels["dot"]["scalar_results"] == [{"param": "out", "arg": "out.data", "dtype": "f32", "bytes": 4}]
    assert [b["param"] for b in kernels["stats"]["scalar_results"]] == ["out1", "out2"]
    assert any(a["name"] == "out.data" and a["role"] == "data" for a in kernels["dot"]["args"])


def test_scalar_results_come_back_from_the_device(module):
    kir = frontend(SOURCE, "s.intent")
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal(300).astype(np.float32), rng.standard_normal(300).astype(np.float32)
    value = module.dot(x, y)
    assert type(value) is np.float32
    np.testing.assert_allclose(value, np.dot(x.astype(np.float64), y), rtol=1e-4)
    np.testing.assert_allclose(value, intentc.interpret(kir, "dot", x, y), rtol=1e-5)
    doubled, biggest, count = module.stats(x)
    np.testing.assert_array_equal(doubled, x * 2)
    assert (type(biggest), type(count)) == (np.float32, np.int64)
    assert biggest == x.max() and count == 300
    assert module.pick(np.arange(5, dtype=np.int32), 3) == 3


def test_a_failed_call_returns_no_scalar(module):
    with pytest.raises(intentc.KernelError) as info:
        module.pick(np.arange(5, dtype=np.int32), 5)
    assert info.value.code == E_BOUNDS
