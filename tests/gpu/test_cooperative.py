"""Cooperative blocks (intentc/codegen/gpu_blocks.py, docs/ptx-abi.md "Cooperative
reductions") run in the block emulator (tests/gpu/cpu_emulation.py: fibers, barriers,
poisoned shared memory, warp shuffles) against NumPy and the reference interpreter.

A cooperative kernel's reductions use 256 virtual lanes, so its bits may depend on the
problem only (T1 lets a reduction regroup, but the order is fixed): every grid, every
block size the entry allows (the emulator keeps the manifest's block for kernels that
synchronise, so the tests below also force smaller ones, down to one thread, which runs
the tree's last steps in shared memory instead of shuffles) and every schedule of the
threads gives the same bits. Integer and min/max reductions are exact (the CPU's result).
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

import gpu_cases
from cpu_emulation import Emulator
from intentc import ptx_loader
from intentc.driver import compile_source, interpret

# name: (blocks at most, threads per block or None for the manifest's, schedule)
CONFIGS = {"manifest": (None, None, "descending"), "3-blocks": (3, None, "random"),
           "1-block": (1, None, "ascending"), "64-threads": (2, 64, "random"),
           "17-threads": (3, 17, "random"), "1-thread": (2, 1, "ascending")}


@functools.lru_cache(maxsize=None)
def _compiled():
    compiled = compile_source(gpu_cases.COOPERATIVE_SOURCE, "cooperative.intent", "sm_80", optimize_ir=False)
    return compiled.manifest, Emulator(compiled.llvm_ir)


def _module(config: str):
    manifest, emulator = _compiled()
    blocks, threads, schedule = CONFIGS[config]
    emulator.max_blocks, emulator.max_threads, emulator.schedule, emulator.seed = blocks, None, schedule, 11
    emulator.launches, emulator.runs = [], []
    if threads is None:
        emulator.run_grid = functools.partial(Emulator.run_grid, emulator)
    else:  # a block smaller than the manifest's: still correct, with the same bits
        emulator.run_grid = lambda name, grid, block: (tuple(min(g, blocks) for g in grid), (min(threads, block[0]),
                                                                                            1, 1))
    return ptx_loader.Module("", manifest, emulator), emulator


@pytest.mark.parametrize("config", list(CONFIGS))
def test_cooperative_kernels(config):
    module, emulator = _module(config)
    assert gpu_cases.check_cooperative(gpu_cases.Adapter(module)).startswith("PASS")
    assert any(block[0] > 1 for _, _, block in emulator.runs) or CONFIGS[config][1] == 1


def _outputs(module):
    rng = np.random.default_rng(31)
    x = rng.uniform(-1, 1, 70_001).astype(np.float32)
    y = rng.uniform(-1, 1, 70_001).astype(np.float32)
    rows = rng.uniform(-3, 3, (37, 1000)).astype(np.float32)
    out = {}
    o = np.zeros(1, np.float32)
    module.dot(x, y, o)
    out["dot"] = o.tobytes()
    out["total"] = module.total(x).tobytes()
    soft = np.zeros_like(rows)
    module.softmax(rows, soft)
    out["softmax"] = soft.tobytes()
    return out


def test_same_bits_for_every_grid_block_and_schedule():
    results = {config: _outputs(_module(config)[0]) for config in CONFIGS}
    first = results["manifest"]
    for config, result in results.items():
        for name in first:
            assert result[name] == first[name], f"{name}: {config} differs from the manifest's launch"


def test_against_the_interpreter():
    module, _ = _module("3-blocks")
    rng = np.random.default_rng(32)
    source = gpu_cases.COOPERATIVE_SOURCE
    for n in (0, 5, 4097, 30_000):
        ints = rng.integers(-(1 << 31), 1 << 31, n).astype(np.int32)
        np.testing.assert_array_equal(module.int_total(ints), interpret(source, "int_total", ints))
        big = rng.integers(-(1 << 62), 1 << 62, n).astype(np.int64)
        np.testing.assert_array_equal(module.int_max(big), interpret(source, "int_max", big))
        values = rng.uniform(-1e300, 1e300, n)
        np.testing.assert_array_equal(module.float_max(values), interpret(source, "float_max", values))
        x = rng.uniform(-1, 1, n).astype(np.float32)
        want = interpret(source, "total", x)
        np.testing.assert_allclose(module.total(x), want, rtol=0, atol=1e-6 * n + 1e-6)
    rows = rng.uniform(-3, 3, (9, 700)).astype(np.float32)
    got, want = np.zeros_like(rows), np.zeros_like(rows)
    module.softmax(rows, got)
    interpret(source, "softmax", rows, want)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    narrow = rng.integers(-1000, 1000, (300, 4)).astype(np.int32)
    np.testing.assert_array_equal(module.narrow_rows(narrow), interpret(source, "narrow_rows", narrow))
