"""Every PTX-capable sample and the cases of tests/gpu/gpu_cases.py on a real GPU.

The PTX is built for the GPU's own SM (and for sm_80, which newer GPUs run through the
driver's JIT), loaded with ``intentc.ptx_loader`` through cuda-python's driver API
(``cuModuleLoadData``, ``cuLaunchKernel``) or CuPy, following only the manifest, and
compared with NumPy. Without a GPU, a driver or cuda-python/CuPy, every test is skipped
with the reason; set ``INTENTC_REQUIRE_GPU=1`` to make that a failure instead.
"""
from __future__ import annotations

import os

import pytest

import gpu_cases
from intentc import ptx_loader
from intentc.codegen import emit_nvptx
from intentc.codegen.target import GPU_PTX_ISA
from intentc.driver import build


@pytest.fixture(scope="session")
def backend():
    try:
        return ptx_loader.default_backend()
    except RuntimeError as exc:
        if os.environ.get("INTENTC_REQUIRE_GPU") == "1":
            pytest.fail(f"INTENTC_REQUIRE_GPU=1 but {exc}")
        pytest.skip(f"no GPU to run PTX on: {exc}")


def device_target(capability) -> str:
    """The GPU's SM, or the newest SM intentc knows below it (PTX runs on newer GPUs)."""
    number = capability[0] * 10 + capability[1]
    known = sorted((int(name[3:]), name) for name in GPU_PTX_ISA)
    usable = [name for value, name in known if value <= number]
    if not usable:
        pytest.skip(f"the GPU is sm_{number}; the PTX target starts at sm_80")
    return usable[-1]


@pytest.fixture(scope="session", params=["device", "sm_80"])
def target(request, backend):
    device = device_target(backend.capability)
    if request.param == "sm_80" and device == "sm_80":
        pytest.skip("the GPU is sm_80: covered by the device run")
    return device if request.param == "device" else "sm_80"


def _load(tmp_path, backend, target, name, source_text=None):
    source = gpu_cases.REPO / "samples" / f"{name}.intent"
    if source_text is not None:
        source = tmp_path / f"{name}.intent"
        source.write_text(source_text)
    out = tmp_path / f"{name}.ptx"
    build(source, out, target)
    return gpu_cases.Adapter(ptx_loader.load(out, backend))


@pytest.mark.parametrize("sample", gpu_cases.SAMPLES)
def test_sample(tmp_path, backend, target, sample):
    summary = gpu_cases.checks.CHECKS[sample](_load(tmp_path, backend, target, sample))
    assert summary.startswith("PASS"), summary


def test_mapping(tmp_path, backend, target):
    module = _load(tmp_path, backend, target, "mapping", gpu_cases.MAPPING_SOURCE)
    assert gpu_cases.check_mapping(module).startswith("PASS")


@pytest.mark.skipif(emit_nvptx.find_libdevice() is None, reason="no CUDA libdevice: the math kernels do not build")
def test_math(tmp_path, backend, target):
    module = _load(tmp_path, backend, target, "math", gpu_cases.MATH_SOURCE)
    assert gpu_cases.check_math(module).startswith("PASS")


@pytest.mark.skipif(emit_nvptx.find_libdevice() is None, reason="no CUDA libdevice: exp does not build")
def test_structured(tmp_path, backend, target):
    module = _load(tmp_path, backend, target, "structured", gpu_cases.STRUCTURED_SOURCE)
    assert gpu_cases.check_structured(module).startswith("PASS")


def test_cooperative(tmp_path, backend, target):
    """Block reductions, one block per row and carried values on real warps and barriers."""
    module = _load(tmp_path, backend, target, "cooperative", gpu_cases.COOPERATIVE_SOURCE)
    assert gpu_cases.check_cooperative(module).startswith("PASS")
