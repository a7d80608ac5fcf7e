"""docs/ptx-abi.md's CuPy example, run as written: its code block is executed with a
stand-in for ``cupy`` whose arrays live in host memory and whose ``RawModule`` launches
through the block emulator (tests/gpu/cpu_emulation.py). The example's ``call`` then runs
kernels with several phases, scratch buffers, a carried value and a failing check, and
every result is compared with the interpreter."""
from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import intentc
from cpu_emulation import Emulator
from intentc import ptx_loader
from intentc.driver import build, compile_source, frontend

REPO = Path(__file__).resolve().parents[2]


def _example() -> str:
    text = (REPO / "docs" / "ptx-abi.md").read_text()
    section = text[text.index("### With CuPy"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


class _Array:
    """A CuPy array as far as the example uses one, over a NumPy array (host memory is what
    the emulated kernels address)."""

    def __init__(self, array: np.ndarray):
        self.a = array

    shape = property(lambda self: self.a.shape)
    strides = property(lambda self: self.a.strides)
    itemsize = property(lambda self: self.a.itemsize)
    ndim = property(lambda self: self.a.ndim)
    dtype = property(lambda self: self.a.dtype)
    address = property(lambda self: self.a.__array_interface__["data"][0])

    def get(self):
        return self.a.copy()

    def view(self, dtype):
        return _Array(self.a.view(dtype))

    def __getitem__(self, index):
        return _Array(self.a[index])


_TYPES = {np.int8: "i8", np.int16: "i16", np.int32: "i32", np.int64: "i64", np.uint8: "u8", np.uint16: "u16",
          np.uint32: "u32", np.uint64: "u64", np.float32: "f32", np.float64: "f64"}


def _fake_cupy(emulators: dict, limits: dict):
    cp = types.ModuleType("cupy")
    for name in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64"):
        setattr(cp, name, getattr(np, name))
    cp.zeros = lambda n, dtype=np.float32: _Array(np.zeros(n, dtype))
    cp.empty = lambda n, dtype=np.float32: _Array(np.full(n, 0xAB, np.uint8).view(np.dtype(dtype))[:n]
                                                    if np.dtype(dtype).itemsize == 1 else np.empty(n, dtype))
    cp.ones = lambda n, dtype=np.float32: _Array(np.ones(n, dtype))
    cp.arange = lambda n, dtype=np.float32: _Array(np.arange(n, dtype=dtype))
    cp.empty_like = lambda t: _Array(np.empty_like(t.a))
    cp.asarray = lambda a: _Array(np.ascontiguousarray(a))

    class RawModule:
        def __init__(self, path):
            self.emulator = emulators[Path(path).name]

        def get_function(self, entry):
            function = self.emulator.function(None, entry)

            def launch(grid, block, args, shared_mem=0):
                packed = [("ptr", a.address) if isinstance(a, _Array) else (_TYPES[type(a)], a.item()) for a in args]
                self.emulator.launch(function, grid, block, shared_mem, packed)
            return launch

    cp.RawModule = RawModule
    runtime = types.SimpleNamespace(cudaLimitMallocHeapSize=2, deviceGetLimit=lambda what: limits.get(what, 8 << 20),
                                    deviceSetLimit=lambda what, value: limits.__setitem__(what, value))
    cp.cuda = types.SimpleNamespace(runtime=runtime)
    return cp


@pytest.fixture()
def example(tmp_path, monkeypatch):
    """The example's namespace after running it in ``tmp_path`` (saxpy built there), with the
    fake CuPy; ``emulate(name, source)`` registers another module for ``RawModule``."""
    emulators, limits = {}, {}

    def emulate(file_name: str, source_text: str):
        compiled = compile_source(source_text, file_name, "sm_80", optimize_ir=False)
        emulators[Path(file_name).with_suffix(".ptx").name] = Emulator(compiled.llvm_ir, max_blocks=3)
        return compiled.manifest

    saxpy = REPO / "samples" / "saxpy.intent"
    build(saxpy, tmp_path / "saxpy.ptx", "sm_80")
    emulate("saxpy.intent", saxpy.read_text())
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(emulators, limits))
    namespace: dict = {}
    exec(compile(_example(), "docs/ptx-abi.md", "exec"), namespace)
    namespace["emulate"], namespace["limits"] = emulate, limits
    return namespace


def test_the_example_runs_saxpy(example):
    np.testing.assert_array_equal(example["out"].get(), 2.0 + np.arange(1 << 20, dtype=np.float32))


def test_the_example_calls_kernels_with_phases_scratch_and_checks(example, tmp_path):
    """Bit for bit what the reference loader gives on the same emulated GPU (a float sum has
    the GPU's fixed order), integers and extremes equal to the interpreter's."""
    cp = sys.modules["cupy"]
    source = (REPO / "samples" / "reductions.intent").read_text()
    manifest = example["emulate"]("reductions.intent", source)
    module = cp.RawModule(path="reductions.ptx")
    reference = ptx_loader.Module("", manifest, module.emulator)
    kir = frontend(source, "reductions.intent")
    rng = np.random.default_rng(4)
    x = rng.standard_normal(70_000).astype(np.float32)
    kernel = next(k for k in manifest["kernels"] if k["name"] == "total")
    assert len(kernel["launches"]) > 1 and kernel["scratch"], "total no longer needs phases and scratch"
    out = cp.zeros(1, np.float32)
    example["call"](manifest, module, "total", {"x": cp.asarray(x), "out": out}, {})
    np.testing.assert_array_equal(out.get(), reference.total(x))
    counts = rng.integers(-1000, 1000, 70_000).astype(np.int32)
    total = cp.zeros(1, np.int64)
    example["call"](manifest, module, "int_total", {"x": cp.asarray(counts), "out": total}, {})
    np.testing.assert_array_equal(total.get(), intentc.interpret(kir, "int_total", counts))
    grid = rng.standard_normal((37, 29)).astype(np.float32)
    best, where = cp.zeros(29, np.float32), cp.zeros(29, np.int64)
    example["call"](manifest, module, "col_max", {"x": cp.asarray(grid), "best": best, "where": where}, {})
    np.testing.assert_array_equal(best.get(), grid.max(axis=0))
    np.testing.assert_array_equal(where.get(), grid.argmax(axis=0))
    wrong = cp.zeros(28, np.float32)  # extents are checked on entry: the kernel's message, filled in
    with pytest.raises(RuntimeError, match=r"col_max: .*28"):
        example["call"](manifest, module, "col_max", {"x": cp.asarray(grid), "best": wrong, "where": where}, {})
