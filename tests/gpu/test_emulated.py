"""The PTX target's kernels run on the CPU (tests/gpu/cpu_emulation.py), launched by
``intentc.ptx_loader`` following only the manifest, against the same expectations as the
GPU run (tests/gpu/gpu_cases.py): the samples' exact checks, several phases, the serial
mapping, D5/D1 status reports, and every arithmetic rule.

Each case runs with grids much smaller than the manifest's (so every thread covers many
points) and with a single thread, because a kernel must be correct for any grid; the
mapping cases also run with the manifest's own grid. Each grid comes with its own
schedule of the threads of a block (3 x 32: a seeded random order; 1 x 1: ascending;
the manifest's: descending), because a kernel must not depend on the interleaving.
"""
from __future__ import annotations

import functools

import pytest

import gpu_cases
from cpu_emulation import Emulator
from intentc import ptx_loader
from intentc.codegen import emit_nvptx
from intentc.driver import compile_source

# (blocks, threads, schedule)
GRIDS = {"3x32": (3, 32, "random"), "1x1": (1, 1, "ascending")}
MANIFEST_GRID = (None, None, "descending")


@functools.lru_cache(maxsize=None)
def _compiled(source_text: str, path: str):
    compiled = compile_source(source_text, path, "sm_80", optimize_ir=False)
    return compiled.manifest, Emulator(compiled.llvm_ir)


def _module(source_text: str, path: str, grid):
    """The module launched with at most ``grid`` = (blocks, threads, schedule) (None: the
    manifest's)."""
    manifest, emulator = _compiled(source_text, path)
    emulator.max_blocks, emulator.max_threads, emulator.schedule = grid
    emulator.seed = 7
    emulator.launches = []
    return ptx_loader.Module("", manifest, emulator), emulator


@pytest.mark.parametrize("grid", list(GRIDS), ids=list(GRIDS))
@pytest.mark.parametrize("sample", gpu_cases.SAMPLES)
def test_sample(sample, grid):
    path = gpu_cases.REPO / "samples" / f"{sample}.intent"
    module, emulator = _module(path.read_text(), str(path), GRIDS[grid])
    summary = gpu_cases.checks.CHECKS[sample](gpu_cases.Adapter(module))
    assert summary.startswith("PASS"), summary
    assert emulator.launches


@pytest.mark.parametrize("grid", ["manifest", "3x32", "1x1"])
def test_mapping(grid):
    module, emulator = _module(gpu_cases.MAPPING_SOURCE, "mapping.intent", GRIDS.get(grid, MANIFEST_GRID))
    assert gpu_cases.check_mapping(gpu_cases.Adapter(module)).startswith("PASS")
    phases = [launch for launch in emulator.launches if launch[0] == "two_phase"]
    assert phases and len(phases) % 2 == 0


@pytest.mark.skipif(emit_nvptx.find_libdevice() is None, reason="no CUDA libdevice: the math kernels do not build")
def test_math():
    module, _ = _module(gpu_cases.MATH_SOURCE, "math.intent", GRIDS["3x32"])
    # The emulation computes exp/log/pow with the C library, not libdevice.
    assert gpu_cases.check_math(gpu_cases.Adapter(module)).startswith("PASS")


@pytest.mark.skipif(emit_nvptx.find_libdevice() is None, reason="no CUDA libdevice: exp does not build")
def test_structured_same_bits_for_every_grid():
    import numpy as np

    module, _ = _module(gpu_cases.STRUCTURED_SOURCE, "structured.intent", GRIDS["3x32"])
    assert gpu_cases.check_structured(gpu_cases.Adapter(module)).startswith("PASS")
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, 50_000).astype(np.float32)
    rows = rng.uniform(-1, 1, (40, 333)).astype(np.float32)
    results = []
    for grid in ("manifest", "3x32", "1x1"):
        module, _ = _module(gpu_cases.STRUCTURED_SOURCE, "structured.intent", GRIDS.get(grid, MANIFEST_GRID))
        total = np.zeros(1, np.float32)
        module.total(x, total)
        results.append((total.tobytes(), module.prefix(x).tobytes(), module.row_sums(rows).tobytes()))
    assert results[0] == results[1] == results[2]


def test_grid_follows_the_manifest():
    path = gpu_cases.REPO / "samples" / "saxpy.intent"
    module, emulator = _module(path.read_text(), str(path), MANIFEST_GRID)
    import numpy as np

    x = np.arange(1000, dtype=np.float32)
    np.testing.assert_array_equal(module.saxpy(2.0, x, x), 3 * x)
    assert emulator.launches == [("saxpy", (4, 1, 1), (256, 1, 1))]
