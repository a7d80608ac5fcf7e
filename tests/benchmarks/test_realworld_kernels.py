"""Every kernel of the real-workload suite (benchmarks/llmc, benchmarks/polybench) compiles
and gives its C baseline's results at a tiny size, and so do the suite's NumPy peers and
the OpenMP build of the C. benchmarks/realworld.py times them at full size; nothing here
depends on time."""
from __future__ import annotations

import ctypes
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import intentc
from intentc.driver import build

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import llmc.cases  # noqa: E402
import polybench.cases  # noqa: E402
from realworld_support import compare  # noqa: E402

KERNELS = {k.name: k for k in llmc.cases.KERNELS + polybench.cases.KERNELS}


def test_the_suite_has_every_kernel_of_the_issue():
    llm = {"encoder_forward", "layernorm_forward", "layernorm_backward", "matmul_forward", "attention_forward",
           "gelu_forward", "softmax_forward", "crossentropy_forward", "adamw"}
    poly = {"gemm", "2mm", "atax", "mvt", "gemver", "jacobi-2d", "seidel-2d", "heat-3d", "covariance",
            "floyd-warshall", "trisolv", "lu", "durbin"}
    assert set(KERNELS) == {f"llmc/{n}" for n in llm} | {f"polybench/{n}" for n in poly}


@pytest.fixture(scope="module")
def libraries(tmp_path_factory):
    """Builds on demand, once per source and flavour."""
    folder = tmp_path_factory.mktemp("realworld")
    made = {}

    def get(kind: str, source: str):
        key = (kind, source)
        if key not in made:
            stem = source.replace("/", "_").rsplit(".", 1)[0] + f"_{kind}"
            out = folder / f"{stem}.so"
            if kind == "intentc":
                build(BENCH / source, out)
                made[key] = intentc.load(str(out))
            else:
                flags = ["-O3", "-march=native"] + (["-fopenmp"] if kind == "omp" else [])
                subprocess.run(["gcc", *flags, "-shared", "-fPIC", str(BENCH / source), "-o", str(out), "-lm"],
                               check=True, capture_output=True)
                made[key] = ctypes.CDLL(str(out))
        return made[key]
    return get


def _run(kernel, arrays_of, call):
    arrays = {name: (a.copy() if name in kernel.mutated else a) for name, a in arrays_of.items()}
    call(arrays)
    return {name: arrays[name] for name in kernel.results}


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kernel_matches_its_c_baseline(name, libraries):
    kernel = KERNELS[name]
    dims = kernel.tiny.dims
    pristine = kernel.setup(dims, np.random.default_rng(7))
    c_serial = getattr(libraries("serial", kernel.c_source), kernel.c_symbol)
    want = _run(kernel, pristine, lambda a: kernel.c_call(c_serial, a, dims))
    module = libraries("intentc", kernel.intent_source)
    fn = getattr(module, kernel.intent_symbol)
    c_omp_lib = libraries("omp", kernel.c_source)
    c_omp_lib.realworld_set_threads(ctypes.c_int(2))
    c_omp = getattr(c_omp_lib, kernel.c_symbol)
    contenders = {"intentc": lambda a: kernel.intent_call(fn, a, dims),
                  "C OpenMP": lambda a: kernel.c_call(c_omp, a, dims)}
    if kernel.numpy_call is not None:
        contenders[kernel.numpy_label] = lambda a: kernel.numpy_call(a, dims)
    for threads in (1, 2):
        module.set_num_threads(threads)
        for label, call in contenders.items():
            got = _run(kernel, pristine, call)
            for result in kernel.results:
                problem = compare(result, got[result], want[result], kernel.rtol, kernel.atol)
                assert problem is None, f"{label}, {threads} threads: {problem}"
    # A wrong result would be caught: the C reference is not trivially equal to the inputs.
    assert any(not np.array_equal(want[r], pristine[r]) for r in kernel.results)
