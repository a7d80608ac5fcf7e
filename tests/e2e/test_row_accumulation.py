"""The row-accumulation schedule (intentc/lower/row_accumulation.py): reductions (T1) and
contractions (T3) whose one result axis is the operands' innermost are accumulated a row
at a time into blocks of the result.

Every result element still combines its items one at a time in reduction order from the
identity, so the compiled results equal the reference interpreter's bit for bit (random
floats, not only exact ones), for every thread count; and the schedule leaves no division
or modulo in the loop over a row's elements."""
from __future__ import annotations

import numpy as np
import pytest

import intentc
from intentc.driver import build, compile_source
from intentc.lower.program import format_program

SOURCE = """\
import intent as I

@intent.kernel
def col_sums(x: f32[B, T, C]) -> f32[C]:
    return I.sum(x, axis=(0, 1))

@intent.kernel
def centred_col_sums(x: f32[B, T, C], mean: f32[B, T]) -> f32[C]:
    return I.sum((x - mean.reshape([B, T, 1])) * x, axis=(0, 1))

@intent.kernel
def col_stats(x: f64[R, C], best: mut f64[C], where: mut index[C], low: mut f64[1, C]):
    best[:] = I.max(x, axis=0)
    where[:] = I.argmax(x, axis=0)
    low[:, :] = I.min(x, axis=0, keepdims=True)

@intent.kernel
def only_argmax(x: f32[R, C]) -> index[C]:
    return I.argmax(x, axis=0)

@intent.kernel
def vec_mat(a: f64[M, N], v: f64[M]) -> f64[N]:
    return I.contract("ij,i->j", a, v)

@intent.kernel
def vec_first(v: f32[M], a: f32[M, N]) -> f32[N]:
    return I.contract("i,ij->j", v, a)

@intent.kernel
def transposed_letters(a: f64[M, N], y: f64[M], x: f64[N]) -> f64[N]:
    return x + 1.5 * I.contract("ji,j->i", a, y)

@intent.kernel
def through_view(a: f64[N, M], v: f64[N]) -> f64[M - 2]:
    return I.contract("ij,i->j", a[:, 1:M - 1], v) * 2.0

@intent.kernel
def products(x: f32[B, T, C], y: f32[B, T, C]) -> f32[C]:
    return I.contract("btc,btc->c", x, y)

@intent.kernel
def two_reduced(a: f16[P, Q, N], w: f16[P, Q]) -> f32[N]:
    return I.contract("pqn,pq->n", a, w, acc=f32)

@intent.kernel
def integers(a: i32[M, N], v: i32[M]) -> i32[N]:
    return I.contract("ij,i->j", a, v)
"""

RNG = np.random.default_rng(2024)


def _f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _f64(*shape):
    return RNG.standard_normal(shape)


# Widths below, at and above one block of accumulators (16 KiB: 4096 f32, 2048 f64), row
# counts that leave 0-3 rows after the groups of four, and empty extents.
CASES = [
    ("col_sums", lambda: (_f32(3, 5, 4099),)),
    ("col_sums", lambda: (_f32(2, 1, 7),)),
    ("col_sums", lambda: (_f32(0, 4, 9),)),
    ("col_sums", lambda: (_f32(2, 3, 0),)),
    ("centred_col_sums", lambda: (_f32(2, 7, 1031), _f32(2, 7))),
    ("only_argmax", lambda: (_f32(9, 4100),)),
    ("vec_mat", lambda: (_f64(301, 2049), _f64(301))),
    ("vec_mat", lambda: (_f64(3, 5), _f64(3))),
    ("vec_mat", lambda: (_f64(0, 5), _f64(0))),
    ("vec_first", lambda: (_f32(33), _f32(33, 4097))),
    ("transposed_letters", lambda: (_f64(22, 700), _f64(22), _f64(700))),
    ("through_view", lambda: (_f64(17, 300), _f64(17))),
    ("products", lambda: (_f32(2, 6, 770), _f32(2, 6, 770))),
    ("two_reduced", lambda: (_f32(3, 5, 300).astype(np.float16), _f32(3, 5).astype(np.float16))),
    ("integers", lambda: (RNG.integers(-2**31, 2**31, (13, 3000), dtype=np.int32),
                          RNG.integers(-2**31, 2**31, 13, dtype=np.int32))),
]


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    path = tmp_path_factory.mktemp("rows") / "rows.intent"
    path.write_text(SOURCE)
    library = path.with_suffix(".so")
    build(path, library)
    return path, intentc.load(str(library))


@pytest.mark.parametrize("name,make", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_compiled_equals_the_interpreter_bit_for_bit_at_every_thread_count(module, name, make):
    path, lib = module
    args = make()
    want = intentc.interpret(str(path), name, *args)
    for threads in (1, 2, 3):
        lib.set_num_threads(threads)
        got = getattr(lib, name)(*args)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes(), f"{name}, {threads} threads"


def test_several_results_and_keepdims(module):
    path, lib = module
    x = _f64(37, 2100)
    x[5, 3] = np.nan
    x[:, 9] = 1.0  # ties: the first index
    outs = [np.zeros(2100), np.zeros(2100, np.int64), np.zeros((1, 2100))]
    lib.col_stats(x, *outs)
    ref = [np.zeros(2100), np.zeros(2100, np.int64), np.zeros((1, 2100))]
    intentc.interpret(str(path), "col_stats", x, *ref)
    for got, want in zip(outs, ref):
        assert got.tobytes() == want.tobytes()
    assert outs[1][9] == 0 and np.isnan(outs[0][3]) and outs[1][3] == 5


def _blocks(llvm_ir: str) -> dict[str, str]:
    """The basic blocks of an LLVM module's text by label (labels repeat across functions:
    their bodies are joined)."""
    blocks, label = {}, None
    for line in llvm_ir.splitlines():
        if line and not line.startswith((" ", "\t", ";", "}", "define", "declare", "!", "attributes")) \
                and line.split(";")[0].rstrip().endswith(":"):
            label = line.split(":")[0]
            continue
        if label is not None:
            blocks[label] = blocks.get(label, "") + line + "\n"
    return blocks


def test_the_row_loops_vectorise_with_no_division():
    """The coordinates of a row (and a reshape's divisions, which depend on the row only)
    are computed outside the loop over its elements, which LLVM vectorises."""
    kernels = ("col_sums", "centred_col_sums", "vec_mat", "products")
    for kernel in kernels:
        header, rest = SOURCE.split(f"@intent.kernel\ndef {kernel}(")
        one = header.split("@intent.kernel")[0] + f"@intent.kernel\ndef {kernel}(" + rest.split("@intent.kernel")[0]
        optimized = str(compile_source(one, f"{kernel}.intent", cpu="x86-64-v3").optimized)
        vector = [body for label, body in _blocks(optimized).items() if label.startswith("vector.body")]
        assert vector, f"{kernel}: no vectorised loop"
        for body in vector:
            for op in (" sdiv ", " srem ", " udiv ", " urem "):
                assert op not in body, f"{kernel}: {op.strip()} in a vector loop"
