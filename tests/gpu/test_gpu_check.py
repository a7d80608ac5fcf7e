"""The device check (benchmarks/gpu_check.py) stays runnable: its sample comparison runs on
the block emulator here, its comparison of CPU and GPU results tells float rounding from
real differences, and without a GPU the script says so and succeeds."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import gpu_check  # noqa: E402


def test_samples_compare_on_the_emulator(tmp_path):
    rows = gpu_check.check_samples(gpu_check.emulated_modules("sm_80"), "sm_80", jobs=1, only=["saxpy"],
                                   build_dir=tmp_path)
    assert [r["sample"] for r in rows] == ["saxpy"]
    row = rows[0]
    assert "failure" not in row, row
    assert row["calls"] > 10 and row["cpu"].startswith("PASS") and row["gpu"].startswith("PASS")
    assert row["same_bits"] == row["calls"]  # pointwise: the same bits on both targets


def test_compare_tells_rounding_from_differences():
    f = np.array([1.0, 2.0], np.float32)
    assert gpu_check.compare(("k", "ok", [f]), ("k", "ok", [f.copy()])) == (True, 0.0)
    same, rel = gpu_check.compare(("k", "ok", [f]), ("k", "ok", [np.nextafter(f, np.float32(3))]))
    assert not same and 0 < rel < 1e-6
    ints = np.array([1, 2], np.int64)
    assert gpu_check.compare(("k", "ok", [ints]), ("k", "ok", [ints + 1])) == (False, None)
    assert gpu_check.compare(("k", "error", -4), ("k", "error", -5)) == (False, None)
    assert gpu_check.compare(("k", "ok", [f]), ("k", "error", -4)) == (False, None)
    nan = np.array([np.nan, np.inf], np.float32)
    assert gpu_check.compare(("k", "ok", [nan]), ("k", "ok", [nan.copy()]))[0]
    assert gpu_check.compare(("k", "ok", [nan]), ("k", "ok", [np.array([np.nan, -np.inf], np.float32)])) == \
        (False, None)


def test_without_a_gpu_it_says_so(tmp_path):
    from intentc import ptx_loader

    try:
        ptx_loader.default_backend()
    except RuntimeError:
        pass
    else:
        pytest.skip("this machine has a GPU: the whole check would run (python benchmarks/gpu_check.py)")
    run = subprocess.run([sys.executable, str(REPO / "benchmarks" / "gpu_check.py"), "--json", str(tmp_path / "r.json")],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "skipped, no GPU" in run.stdout and not (tmp_path / "r.json").exists()
