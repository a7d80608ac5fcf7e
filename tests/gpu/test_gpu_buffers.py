"""Buffers with run-time extents on the PTX target fail as they do on the CPU: a negative
extent where the buffer is made (M2), a byte size past 64 bits as INTENT_E_SHAPE — for a
scratch buffer the host sizes (the PTX loader) and for one from the device heap (the
emitted code) — never a Python exception or a wrapped, too small allocation."""
from __future__ import annotations

import numpy as np
import pytest

import intentc
from cpu_emulation import Emulator
from intentc import ptx_loader
from intentc.base.status import E_SHAPE
from intentc.driver import compile_source

SOURCE = """
import intent as I

@intent.kernel
def scratch_rows(x: f32[N], rows: i64, cols: i64) -> f32[N]:
    b = I.buffer(f32, [rows * cols], fill=1.0)
    return x + b[0]

@intent.kernel
def per_point(x: f32[N], rows: i64, cols: i64, out: mut f32[N]):
    for i in I.parallel(x.axis(0)):
        b = I.buffer(f32, [rows * cols], fill=2.0)
        out[i] = x[i] + b[0]
"""


@pytest.fixture(scope="module")
def module():
    compiled = compile_source(SOURCE, "g.intent", "sm_80", optimize_ir=False)
    return ptx_loader.Module("", compiled.manifest, Emulator(compiled.llvm_ir, max_blocks=2, max_threads=4))


def _call(module, name, rows, cols):
    x = np.ones(4, np.float32)
    if name == "scratch_rows":
        return module.scratch_rows(x, rows, cols)
    out = np.zeros(4, np.float32)
    module.per_point(x, rows, cols, out)
    return out


@pytest.mark.parametrize("name,plus", [("scratch_rows", 1.0), ("per_point", 2.0)])
def test_run_time_buffer_extents(module, name, plus):
    np.testing.assert_array_equal(_call(module, name, 2, 3), np.full(4, 1 + plus, np.float32))
    with pytest.raises(intentc.KernelError) as info:
        _call(module, name, -1, 5)
    assert info.value.code == E_SHAPE and "I.buffer: extent -5 on axis 0 is negative (at g.intent:" in str(info.value)
    with pytest.raises(intentc.KernelError) as info:
        _call(module, name, 2 ** 31, 2 ** 31)  # 2^62 f32 elements: 2^64 bytes
    assert info.value.code == E_SHAPE and "than 64 bits can count" in str(info.value)
