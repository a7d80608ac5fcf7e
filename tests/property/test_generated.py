"""Generated programs (``generator.py``), compiled vs interpreted.

Each example is one module of ``KERNELS`` independent kernels, built once; every kernel
then runs compiled and in the interpreter on the same random inputs (random extents,
size-one partners, strided and column-major views, edge values) with the parallel
points interpreted in a random order, and the ``differential`` fixture compares
everything. 324 programs run in CI, reproducibly (derandomized).
"""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from generator import arguments, extent_values, modules

KERNELS = 12
# Examples per test below, balanced by build cost (parallel loop nests take longest to
# compile): (6 + 10 + 11) * 12 = 324 programs.
EXAMPLES = {"parallel": 6, "expr": 10, "mixed": 11}


def settings_for(kind: str):
    return settings(max_examples=EXAMPLES[kind], deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much])


def run_module(differential, data, kinds) -> None:
    module = data.draw(modules(KERNELS, kinds), label="module")
    source = module.source
    note(source)
    differential.build(source)  # a CompileError here is a generator or a compiler bug
    for kernel in module.kernels:
        extents = extent_values(data.draw)
        seed = data.draw(st.integers(0, 2 ** 32 - 1), label=f"{kernel.name} seed")
        order = data.draw(st.sampled_from(["forward", "reverse", "shuffle"]), label=f"{kernel.name} order")
        args = arguments(kernel, extents, np.random.default_rng(seed))
        try:
            differential(source, kernel.name, *args, parallel_order=order, seed=seed)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n\nkernel {kernel.name} with extents {extents}, parallel order {order}, "
                                 f"arguments:\n{args!r}\n\n{kernel.text}") from None


# Three tests (different examples, derandomized per test) so that pytest-xdist can run
# them side by side.
@settings_for("parallel")
@given(data=st.data())
def test_generated_parallel_kernels(differential, data):
    run_module(differential, data, ("parallel",))


@settings_for("expr")
@given(data=st.data())
def test_generated_tensor_expressions(differential, data):
    run_module(differential, data, ("expr",))


@settings_for("mixed")
@given(data=st.data())
def test_generated_mixed_kernels(differential, data):
    run_module(differential, data, ("parallel", "expr", "ordered"))
