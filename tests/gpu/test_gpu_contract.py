"""Contractions on the GPU (intentc/codegen/gpu_contract.py, docs/ptx-abi.md "Contraction
tiles", T3): one thread block per tile of C, K tiles staged through shared memory, exact
FFMA register tiles for f32/f64/integer accumulators and mma.sync tensor-core tiles for
f16/bf16 (f32 accumulator) and i8/u8 (i32) operands. Run in the block emulator
(tests/gpu/cpu_emulation.py: fibers with real barriers, poisoned shared memory, ldmatrix and
mma.sync with the PTX fragment layouts) at edge shapes, several grids and schedules.

What is checked:
- f32 (FFMA): every element is ``fma(a, b, acc)`` over k in order from 0, so the result
  equals, bit for bit, an exact-FMA chain computed in NumPy (and so the CPU build's);
- f16/bf16 (mma): each product is exact in f32 and the sums are f32 in the mma's order, so
  the result is within ``K · 2^-23 · Σ|a·b|`` (a bound on any order of f32 summation of
  exact products; 2^-24 per addition, counted twice for slack) of the exact sum, and the
  same bits under every grid and schedule;
- i8/u8 → i32 (mma) and integer FFMA: equal to the interpreter, exactly.
"""
from __future__ import annotations

import functools
import re

import ml_dtypes
import numpy as np
import pytest

from cpu_emulation import Emulator
from intentc import ptx_loader
from intentc.driver import compile_source, interpret

SOURCE = """\
import intent as I

@intent.kernel
def mm_f32(a: f32[M, K], b: f32[K, N]) -> f32[M, N]:
    return I.contract("mk,kn->mn", a, b, acc=f32)

@intent.kernel
def mm_f32_bt(a: f32[M, K], b: f32[N, K]) -> f32[M, N]:
    return I.contract("mk,nk->mn", a, b, acc=f32)

@intent.kernel
def mm_f32_nm(a: f32[M, K], b: f32[K, N]) -> f32[N, M]:
    return I.contract("mk,kn->nm", a, b, acc=f32)

@intent.kernel
def bmm_f32(a: f32[B, M, K], b: f32[B, K, N]) -> f32[B, M, N]:
    return I.contract("bmk,bkn->bmn", a, b, acc=f32)

@intent.kernel
def mm_f64(a: f64[M, K], b: f64[K, N]) -> f64[M, N]:
    return I.contract("mk,kn->mn", a, b, acc=f64)

@intent.kernel
def mm_i64(a: i64[M, K], b: i64[K, N]) -> i64[M, N]:
    return I.contract("mk,kn->mn", a, b, acc=i64)

@intent.kernel
def mm_f16(a: f16[M, K], b: f16[K, N]) -> f32[M, N]:
    return I.contract("mk,kn->mn", a, b, acc=f32)

@intent.kernel
def mm_bf16(a: bf16[M, K], b: bf16[K, N]) -> f32[M, N]:
    return I.contract("mk,kn->mn", a, b, acc=f32)

@intent.kernel
def bmm_bf16(a: bf16[B, M, K], b: bf16[B, K, N]) -> f32[B, M, N]:
    return I.contract("bmk,bkn->bmn", a, b, acc=f32)

@intent.kernel
def mm_i8(a: i8[M, K], b: i8[K, N]) -> i32[M, N]:
    return I.contract("mk,kn->mn", a, b, acc=i32)

@intent.kernel
def mm_u8(a: u8[M, K], b: u8[K, N]) -> i32[M, N]:
    return I.contract("mk,kn->mn", a, b, acc=i32)

@intent.kernel
def mm_f16_scaled(a: f16[M, K], b: f16[K, N]) -> f32[M, N]:
    return I.contract("mk,kn->mn", a * 2.0, b, acc=f32)

@intent.kernel
def mm_f16_acc(a: f16[M, K], b: f16[K, N]) -> f16[M, N]:
    return I.contract("mk,kn->mn", a, b, acc=f16)
"""

SHAPES = [(1, 1, 1), (5, 3, 7), (64, 64, 32), (65, 63, 33), (130, 129, 17), (3, 200, 70), (70, 2, 0), (0, 5, 3)]
# name: (max blocks, schedule)
CONFIGS = {"manifest": (None, "ascending"), "2-blocks": (2, "descending"), "1-block": (1, "random")}


@functools.lru_cache(maxsize=None)
def _compiled(target: str = "sm_80"):
    compiled = compile_source(SOURCE, "contract_gpu.intent", target, optimize_ir=False)
    return compiled.manifest, compiled.llvm_ir


@functools.lru_cache(maxsize=None)
def _emulator():
    return Emulator(_compiled()[1])  # one for all tests: building it costs more than running


def _module(config: str = "manifest"):
    """The module on the shared emulator, set to ``config``'s grid cap and schedule."""
    emulator = _emulator()
    blocks, schedule = CONFIGS[config]
    emulator.max_blocks, emulator.schedule, emulator.seed = blocks, schedule, 5
    emulator.launches, emulator.runs = [], []
    return ptx_loader.Module("", _compiled()[0], emulator), emulator


def _launch(manifest: dict, kernel: str) -> dict:
    entry = next(k for k in manifest["kernels"] if k["name"] == kernel)
    return next(launch for launch in entry["launches"] if launch["kind"] == "tiles")


def exact_fma_chain(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``acc = fma(a[i, t], b[t, j], acc)`` for t in order from +0.0, in f32, exactly: the
    product is exact in f64, two-sum gives the f64 sum ``s`` and its error, and ``s`` is
    rounded to f32 once, except where it is an f32 halfway point and the error decides the
    side (the only case where rounding twice differs from rounding once)."""
    m, k = a.shape
    acc = np.zeros((m, b.shape[1]), np.float32)
    for t in range(k):
        p = a[:, t, None].astype(np.float64) * b[None, t, :].astype(np.float64)
        c = acc.astype(np.float64)
        s = c + p
        v = s - c
        err = (c - (s - v)) + (p - v)
        r = s.astype(np.float32)
        r64 = r.astype(np.float64)
        other = np.where(r64 > s, np.nextafter(r, np.float32(-np.inf)), np.nextafter(r, np.float32(np.inf)))
        halfway = (s != r64) & ((r64 + other.astype(np.float64)) / 2 == s) & (err != 0)
        above = np.where(r64 > s, r, other)
        below = np.where(r64 > s, other, r)
        acc = np.where(halfway, np.where(err > 0, above, below), r).astype(np.float32)
    return acc


def _operands(rng, dtype, m, k, n, batch=None):
    lead = () if batch is None else (batch,)
    if dtype in (np.int8, np.uint8):
        info = np.iinfo(dtype)
        return (rng.integers(info.min, info.max + 1, lead + (m, k)).astype(dtype),
                rng.integers(info.min, info.max + 1, lead + (k, n)).astype(dtype))
    if dtype == np.int64:
        return (rng.integers(-(1 << 40), 1 << 40, lead + (m, k)), rng.integers(-(1 << 40), 1 << 40, lead + (k, n)))
    return (rng.uniform(-2, 2, lead + (m, k)).astype(dtype), rng.uniform(-2, 2, lead + (k, n)).astype(dtype))


def test_the_manifest_describes_each_tiling():
    manifest, _ = _compiled()
    ffma = _launch(manifest, "mm_f32")
    assert ffma["block"] == [256, 1, 1]
    assert ffma["tiles"] == {"engine": "ffma", "operand": "f32", "accumulator": "f32", "block_tile": [128, 128, 8],
                             "thread_tile": [8, 8], "threads": 256, "shared_bytes": 2 * (128 + 128) * 8 * 4,
                             "buffers": 2, "copies": "cp.async"}
    assert ffma["points"] == "mul(mul(1, ceil_div(a.shape0, 128)), ceil_div(b.shape1, 128))"
    for kernel, operand, instruction in (("mm_f16", "f16", "m16n8k16.row.col.f32.f16.f16.f32"),
                                         ("mm_bf16", "bf16", "m16n8k16.row.col.f32.bf16.bf16.f32"),
                                         ("mm_i8", "i8", "m16n8k32.row.col.s32.s8.s8.s32"),
                                         ("mm_u8", "u8", "m16n8k32.row.col.s32.u8.u8.s32"),
                                         ("mm_f16_scaled", "f16", "m16n8k16.row.col.f32.f16.f16.f32")):
        tiles = _launch(manifest, kernel)["tiles"]
        assert tiles["engine"] == "mma" and tiles["operand"] == operand, kernel
        assert tiles["instruction"] == f"mma.sync.aligned.{instruction}"
        assert tiles["block_tile"][:2] == [64, 64] and tiles["shared_bytes"] == 2 * (64 + 64) * 80
        assert tiles["copies"] == "ld.global+st.shared"  # narrowed on the way: no byte copy
    f64 = _launch(manifest, "mm_f64")["tiles"]
    assert f64["engine"] == "ffma" and f64["shared_bytes"] == 2 * (128 + 128) * 8 * 8
    # an f16 accumulator has no tile launch: the CPU's loops, on the grid
    entry = next(k for k in manifest["kernels"] if k["name"] == "mm_f16_acc")
    assert all(launch["kind"] != "tiles" for launch in entry["launches"])
    for entry in manifest["kernels"]:
        assert entry["mapping"] == "grid"
        if any(launch["kind"] == "tiles" for launch in entry["launches"]):
            tiles = max(launch["tiles"]["shared_bytes"] for launch in entry["launches"] if launch["kind"] == "tiles")
            assert entry["static_shared_bytes"] == 8 * 258 + tiles


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_f32_tiles_are_the_exact_fma_chain(shape):
    m, n, k = shape
    rng = np.random.default_rng(m * 1000 + n * 10 + k)
    a, b = _operands(rng, np.float32, m, k, n)
    module, emulator = _module()
    got = module.mm_f32(a, b)
    assert got.tobytes() == exact_fma_chain(a, b).tobytes()
    assert got.tobytes() == module.mm_f32_bt(a, np.ascontiguousarray(b.T)).tobytes()
    assert np.ascontiguousarray(got.T).tobytes() == module.mm_f32_nm(a, b).tobytes()  # C through a view
    if k:
        np.testing.assert_allclose(got, interpret(SOURCE, "mm_f32", a, b), rtol=1e-5, atol=1e-5 * k)


@pytest.mark.parametrize("config", list(CONFIGS))
def test_same_bits_for_every_grid_and_schedule(config):
    rng = np.random.default_rng(7)
    a32, b32 = _operands(rng, np.float32, 131, 9, 130)
    floats = [(kernel, *_operands(rng, dtype, 97, 70, 65))
              for dtype, kernel in ((np.float16, "mm_f16"), (ml_dtypes.bfloat16, "mm_bf16"))]
    a8, b8 = _operands(rng, np.int8, 70, 100, 66)
    reference, _ = _module("manifest")
    want = {kernel: getattr(reference, kernel)(a, b).tobytes() for kernel, a, b in floats}
    module, emulator = _module(config)  # the same emulator, now with this grid and schedule
    assert module.mm_f32(a32, b32).tobytes() == exact_fma_chain(a32, b32).tobytes()
    for kernel, a, b in floats:
        got = getattr(module, kernel)(a, b)
        _check_mma_float(got, a, b)
        assert got.tobytes() == want[kernel]
    np.testing.assert_array_equal(module.mm_i8(a8, b8), interpret(SOURCE, "mm_i8", a8, b8))
    if CONFIGS[config][0] is not None:
        assert all(grid[0] <= CONFIGS[config][0] for name, grid, block in emulator.runs)


def _check_mma_float(got, a, b):
    """Within the bound of any f32 summation order of the exact products."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    exact = a64 @ b64
    k = a.shape[-1]
    bound = 2.0 * k * 2.0 ** -24 * (np.abs(a64) @ np.abs(b64)) + 1e-30
    assert got.dtype == np.float32
    assert np.all(np.abs(got.astype(np.float64) - exact) <= bound)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_f16_and_bf16_on_tensor_cores(shape, dtype):
    m, n, k = shape
    rng = np.random.default_rng(m + 17 * n + 31 * k)
    np_dtype = np.float16 if dtype == "f16" else ml_dtypes.bfloat16
    a, b = _operands(rng, np_dtype, m, k, n)
    module, _ = _module("2-blocks")
    got = getattr(module, f"mm_{dtype}")(a, b)
    _check_mma_float(got, a, b)
    if k:
        np.testing.assert_allclose(got, interpret(SOURCE, f"mm_{dtype}", a, b), rtol=1e-5, atol=1e-5 * k)
    if dtype == "f16":  # a fused element-wise operand is packed, then narrowed exactly
        scaled = module.mm_f16_scaled(a, b)
        _check_mma_float(scaled, (a * np.float16(2)).astype(np.float16), b)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_integers_equal_the_interpreter(shape):
    m, n, k = shape
    rng = np.random.default_rng(3 * m + n + 7 * k)
    module, _ = _module("1-block")
    for dtype, kernel in ((np.int8, "mm_i8"), (np.uint8, "mm_u8"), (np.int64, "mm_i64")):
        a, b = _operands(rng, dtype, m, k, n)
        np.testing.assert_array_equal(getattr(module, kernel)(a, b), interpret(SOURCE, kernel, a, b))


def test_batched_and_f64_and_f16_accumulator():
    rng = np.random.default_rng(11)
    module, _ = _module("2-blocks")
    a, b = _operands(rng, np.float32, 37, 21, 66, batch=3)
    got = module.bmm_f32(a, b)
    for i in range(3):
        assert got[i].tobytes() == exact_fma_chain(a[i], b[i]).tobytes()
    a, b = _operands(rng, ml_dtypes.bfloat16, 70, 40, 9, batch=2)
    got = module.bmm_bf16(a, b)
    for i in range(2):
        _check_mma_float(got[i], a[i], b[i])
    a, b = _operands(rng, np.float64, 29, 13, 130)
    np.testing.assert_allclose(module.mm_f64(a, b), a @ b, rtol=1e-13, atol=1e-13)
    a, b = _operands(rng, np.float16, 20, 30, 10)
    np.testing.assert_allclose(module.mm_f16_acc(a, b).astype(np.float32), interpret(SOURCE, "mm_f16_acc", a, b)
                               .astype(np.float32), rtol=2e-2, atol=2e-2)


def test_ptxas_accepts_the_tiles(tmp_path):
    """One build for sm_80 (the oldest target with mma.sync), assembled for sm_80 and for sm_90,
    which runs it (a build per target costs a minute of CPU for the same tiles)."""
    import shutil
    import subprocess

    if shutil.which("ptxas") is None:
        pytest.skip("ptxas is not installed")
    from intentc.driver import build

    out = tmp_path / "k.ptx"
    source = tmp_path / "k.intent"
    source.write_text(SOURCE)
    build(source, out, target="sm_80")
    text = out.read_text()
    assert "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" in text
    assert "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32" in text
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in text and "fma.rn.f32" in text and "bar.sync" in text
    assert "cp.async.ca.shared.global" in text and re.search(r"cp\.async\.wait_group\s+0;", text)
    for target in ("sm_80", "sm_90"):
        done = subprocess.run(["ptxas", f"-arch={target}", str(out), "-o", str(tmp_path / f"k.{target}.cubin")],
                              capture_output=True, text=True)
        assert done.returncode == 0, f"{target}: {done.stderr}"


def test_a_missing_cp_async_wait_shows_in_the_emulator():
    """The FFMA tiles' K loop waits for its cp.async group before the barrier; without
    the wait the tiles read shared memory the copies have not reached (the emulator
    lands a copy only at its wait), so the result is wrong: the wait is load-bearing."""
    manifest, text = _compiled()
    broken = text.replace('call void @"llvm.nvvm.cp.async.wait.group"(i32 0)', "")
    assert broken != text
    module = ptx_loader.Module("", manifest, Emulator(broken))
    rng = np.random.default_rng(2)
    a, b = _operands(rng, np.float32, 40, 20, 30)
    assert module.mm_f32(a, b).tobytes() != exact_fma_chain(a, b).tobytes()


def test_emulated_counts_of_the_tile_launches():
    """What the tile launches do, counted by the emulator: one mma.sync per 16 × 8 × k-slice
    of C (m16n8k16: (M/16)(N/8)(K/16)), three ldmatrix.x4 per warp and k slice, and for the
    FFMA tiles one 4-byte cp.async per element of each staged A and B tile."""
    module, emulator = _module()
    rng = np.random.default_rng(4)
    a, b = _operands(rng, np.float16, 64, 64, 64)
    module.mm_f16(a, b)
    counts = emulator.counts[-1]
    assert emulator.runs[-1][0] == "mm_f16"
    assert counts["mma"] == (64 // 16) * (64 // 8) * (64 // 16)
    assert counts["ldmatrix"] == 8 * (64 // 16) * 3  # 8 warps, 4 k slices, 2 for A and 1 for B
    a, b = _operands(rng, np.int8, 64, 128, 64)
    module.mm_i8(a, b)
    assert emulator.counts[-1]["mma"] == (64 // 16) * (64 // 8) * (128 // 32)
    a, b = _operands(rng, np.float32, 128, 16, 128)
    module.mm_f32(a, b)
    counts = emulator.counts[-1]
    assert counts["cp_async"] == (128 + 128) * 16 and counts["cp_async_bytes"] == 4 * (128 + 128) * 16
    assert counts["mma"] == counts["ldmatrix"] == 0
    # per thread: the entry's status barrier, one per K tile, and the one that frees the buffers
    assert counts["barrier_arrivals"] == 256 * (1 + 2 + 1)
