"""What a real-workload benchmark kernel is: its sources, datasets, inputs and the calls of
each contender (benchmarks/realworld.py runs them, tests/benchmarks checks them).

A kernel's ``setup(dims, rng)`` returns the pristine arrays of one call by name (outputs
included, preallocated). Every contender works on its own copy of the arrays the call
writes (``mutated``), restored from the pristine ones before each call, outside the
timed region, so in-place kernels (lu, seidel-2d, adamw) start from the same state every
time. ``results`` are the arrays compared with the C baseline's.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

Dims = dict
Arrays = dict


@dataclass(frozen=True)
class Dataset:
    label: str   # PolyBench's dataset name, or the shape in words for llm.c
    dims: Dims


@dataclass(frozen=True)
class Kernel:
    name: str                       # "llmc/matmul_forward", "polybench/gemm"
    intent_source: str              # relative to benchmarks/
    intent_symbol: str
    c_source: str                   # relative to benchmarks/
    c_symbol: str
    tiny: Dataset                   # the test's size: seconds to build and check
    quick: tuple[Dataset, ...]      # --quick
    full: tuple[Dataset, ...]       # the default run
    setup: Callable[[Dims, np.random.Generator], Arrays] = field(repr=False)
    mutated: tuple[str, ...]
    results: tuple[str, ...]
    intent_call: Callable = field(repr=False)       # (kernel, arrays, dims) -> None
    c_call: Callable = field(repr=False)            # (C function, arrays, dims) -> None
    numpy_call: Callable | None = field(repr=False)  # (arrays, dims) -> None, or None
    numpy_label: str = "NumPy"
    flops: Callable[[Dims], float] | None = field(default=None, repr=False)
    bytes: Callable[[Dims], float] | None = field(default=None, repr=False)
    rtol: float = 1e-5
    atol: float = 1e-6
    tolerance: str = ""             # why rtol/atol are what they are
    c_parallel: bool = True         # whether the C source has an OpenMP loop
    ofast: bool = False             # also time the C built with -Ofast -fopenmp (llm.c's flags)

    @property
    def suite(self) -> str:
        return self.name.split("/")[0]


def ptr(array: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(array.ctypes.data)


def i32(value: int) -> ctypes.c_int:
    return ctypes.c_int(int(value))


def i64(value: int) -> ctypes.c_long:
    return ctypes.c_long(int(value))


def f32(value: float) -> ctypes.c_float:
    return ctypes.c_float(float(value))


def f64(value: float) -> ctypes.c_double:
    return ctypes.c_double(float(value))


def compare(name: str, got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str | None:
    """None when ``got`` matches ``want`` (|got - want| <= atol + rtol |want|, NaN nowhere
    unless in both), else what differs, for the report."""
    if got.shape != want.shape:
        return f"{name}: shape {got.shape} != {want.shape}"
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    bad = ~np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
    if not bad.any():
        return None
    where = np.unravel_index(int(np.argmax(bad)), bad.shape)
    return (f"{name}: {int(bad.sum())} of {bad.size} elements differ, first at {tuple(int(i) for i in where)}: "
            f"{g[where]!r} vs C {w[where]!r} (rtol {rtol}, atol {atol})")
