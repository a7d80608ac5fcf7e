"""bf16 on the PTX target: the same integer-coded conversions and f32 arithmetic as the CPU
(codegen/bf16_llvm.py), so the emulated GPU kernel gives the interpreter's bits; the PTX
assembles for sm_80 and sm_90."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import intentc
from cpu_emulation import Emulator
from intentc import ptx_loader
from intentc.driver import build, compile_source, frontend

ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = ml_dtypes.bfloat16

SOURCE = """
import intent as I

@intent.kernel
def blend(a: bf16[N], b: bf16[N], d: f64[N], s: bf16) -> (bf16[N], bf16[N], f32[N]):
    return a * s + b, I.exp(a) - I.cast(d, bf16), I.cast(a, f32)
"""


def test_bf16_kernel_emulated_matches_the_interpreter(tmp_path):
    compiled = compile_source(SOURCE, "b.intent", "sm_80", optimize_ir=False)
    module = ptx_loader.Module("", compiled.manifest, Emulator(compiled.llvm_ir, max_blocks=3, max_threads=32))
    rng = np.random.default_rng(3)
    a = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(BF16)[::5]
    b = np.roll(a, 777)
    d = rng.standard_normal(a.size) * 10.0 ** rng.integers(-40, 38, a.size)
    got = module.blend(a, b, d, BF16(0.375))
    want = intentc.interpret(frontend(SOURCE, "b.intent"), "blend", a, b, d, BF16(0.375))
    for k, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        if g.dtype == BF16:
            g, w = g.view(np.uint16).copy(), w.view(np.uint16).copy()
            g[(g & 0x7FFF) > 0x7F80] = w[(w & 0x7FFF) > 0x7F80] = 0x7FC0  # NaN payloads are not part of the ABI
        np.testing.assert_array_equal(g, w, err_msg=f"result {k}")


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas (CUDA toolkit) is not installed")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_bf16_ptx_assembles(tmp_path, arch):
    source = tmp_path / "b.intent"
    source.write_text(SOURCE)
    build(source, tmp_path / "b.ptx", arch)
    proc = subprocess.run(["ptxas", f"-arch={arch}", str(tmp_path / "b.ptx"), "-o", str(tmp_path / "b.cubin")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
