"""Each sample end to end: `intentc build` into a temporary folder, the sample's
C driver compiled against the generated header and run (it must print
`PASS <sample>`), and the sample's Python check through `intentc.load`."""
from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "samples"))
if importlib.util.find_spec("intentc") is None:  # a source checkout that is not installed
    sys.path.append(str(REPO))

import harness  # noqa: E402

SAMPLES = [source.stem for source in harness.sample_sources()]

# The exported kernels of each sample, as its header must declare them.
KERNELS = {
    "saxpy": ["saxpy"],
    "broadcast_add": ["broadcast_add", "add_row_bias"],
    "row_scale": ["row_scale"],
    "clamp": ["clamp"],
    "collatz_steps": ["collatz_steps"],
}


@pytest.fixture(scope="module", params=SAMPLES)
def built(request, tmp_path_factory) -> tuple[str, Path]:
    """(sample, folder) after `python -m intentc build samples/<sample>.intent -o folder/<sample>.so`."""
    sample = request.param
    out_dir = tmp_path_factory.mktemp(sample)
    step = harness.build_sample(harness.SAMPLES / f"{sample}.intent", out_dir)
    assert step.ok, f"{step.line}\n{step.output}"
    return sample, out_dir


def test_build_writes_header(built):
    sample, out_dir = built
    header = (out_dir / f"{sample}.h").read_text()
    assert "intent_runtime.h" in header
    assert (out_dir / "intent_runtime.h").is_file()
    assert "intent_last_error" in (out_dir / "intent_runtime.h").read_text()
    for kernel in KERNELS.get(sample, []):
        assert re.search(rf"\bint32_t\s+{kernel}\s*\(", header), f"{kernel} is not declared"


@pytest.fixture(scope="module")
def driver(built) -> tuple[str, Path]:
    """(sample, folder) once samples/c/<sample>_driver.c is compiled into folder."""
    sample, out_dir = built
    if not harness.driver_source(sample).is_file():
        pytest.skip(f"no samples/c/{sample}_driver.c")
    compiled = harness.build_driver(sample, out_dir)
    assert compiled.ok, f"{compiled.line}\n{compiled.output}"
    return sample, out_dir


def test_c_driver(driver):
    run = harness.run_driver(*driver)
    assert run.ok, f"{run.line}\n{run.output}"


@pytest.mark.parametrize("threads", ["1", "3"])
def test_c_driver_thread_counts(driver, threads):
    """The results (compared bit for bit) do not depend on the number of threads."""
    run = harness.run_driver(*driver, env={"INTENT_NUM_THREADS": threads})
    assert run.ok, f"INTENT_NUM_THREADS={threads}: {run.line}\n{run.output}"


def test_python_check(built):
    sample, out_dir = built
    import intentc
    from checks import CHECKS

    if sample not in CHECKS:
        pytest.skip(f"samples/checks.py has no check_{sample}")
    summary = CHECKS[sample](intentc.load(str(harness.library_path(sample, out_dir))))
    assert summary.startswith(f"PASS {sample}")
