"""I.contract (T3): compiled vs the reference interpreter vs np.einsum.

Float operands here are small integers unless a test says otherwise, so every product and
partial sum is exact and the compiled kernel (fused multiply-adds, regrouped sums, which
T3/T7 grant) must agree with the interpreter (one multiply and one add per reduction point,
in k order) bit for bit. Random floats are compared with a rounding bound instead, and
with themselves across thread counts (the blocking depends on the problem size only).
"""
from __future__ import annotations

import numpy as np
import pytest

import intentc
from intentc.diagnostics import CompileError
from intentc.driver import compile_source, frontend

SOURCE = """\
import intent as I

@intent.kernel
def mm(a: f32[M, K], b: f32[K, N]) -> f32[M, N]:
    return I.contract("mk,kn->mn", a, b)

@intent.kernel
def mm_ta(a: f32[K, M], b: f32[K, N]) -> f32[M, N]:
    return I.contract("ki,kj->ij", a, b)

@intent.kernel
def mm_tb(a: f32[M, K], b: f32[N, K]) -> f32[M, N]:
    return I.contract("ik,jk->ij", a, b)

@intent.kernel
def mm_tc(a: f32[M, K], b: f32[K, N]) -> f32[N, M]:
    return I.contract("ik,kj->ji", a, b)

@intent.kernel
def gram(a: f32[M, K]) -> f32[M, M]:
    return I.contract("ik,jk->ij", a, a)

@intent.kernel
def bmm(a: f32[B, M, K], b: f32[B, K, N]) -> f32[B, M, N]:
    return I.contract("bmk,bkn->bmn", a, b)

@intent.kernel
def batch_middle(a: f32[M, B, K], b: f32[K, B, N]) -> f32[N, B, M]:
    return I.contract("mbk,kbn->nbm", a, b)

@intent.kernel
def multi(a: f32[P, Q, K, L], b: f32[L, K, R, S]) -> f32[P, R, Q, S]:
    return I.contract("pqkl,lkrs->prqs", a, b)

@intent.kernel
def matvec(a: f32[M, K], x: f32[K]) -> f32[M]:
    return I.contract("ij,j->i", a, x)

@intent.kernel
def vecmat(x: f32[K], a: f32[K, N]) -> f32[N]:
    return I.contract("j,jk->k", x, a)

@intent.kernel
def dot(x: f32[K], y: f32[K], res: mut f32[1]):
    res[0] = I.contract("i,i->", x, y)

@intent.kernel
def frobenius(x: f32[M, N], y: f32[M, N], res: mut f32[1]):
    res[0] = I.contract("ij,ij->", x, y)

@intent.kernel
def outer(x: f32[M], y: f32[N]) -> f32[M, N]:
    return I.contract("i,j->ij", x, y)

@intent.kernel
def row_dots(x: f32[R, K], w: f32[K], res: mut f32[R]):
    for r in I.parallel(x.axis(0)):
        res[r] = I.contract("k,k->", x[r, :], w)

@intent.kernel
def affine(a: f32[M, K], b: f32[K, N], bias: f32[N]) -> f32[M, N]:
    return I.contract("mk,kn->mn", a * 2.0, b) + bias

@intent.kernel
def chain(a: f32[M, K], b: f32[K, N], c: f32[N, P]) -> f32[M, P]:
    return I.contract("mn,np->mp", I.contract("mk,kn->mn", a, b), c)

@intent.kernel
def corner(a: f32[M, K], b: f32[K, N]) -> f32[2, 2]:
    c = I.contract("mk,kn->mn", a, b)
    return c[0:2, 0:2] - c[1:3, 1:3]

@intent.kernel
def mismatch(a: f32[M, K], b: f32[L, N]) -> f32[M, N]:
    return I.contract("mk,kn->mn", a, b)

@intent.kernel
def mm_f64(a: f64[M, K], b: f64[K, N]) -> f64[M, N]:
    return I.contract("mk,kn->mn", a, b)

@intent.kernel
def mm_f16(a: f16[M, K], b: f16[K, N]) -> f32[M, N]:
    return I.contract("mk,kn->mn", a, b, acc=f32)

@intent.kernel
def mm_f16_default(a: f16[B, M, K], b: f16[B, K, N]) -> f32[B, M, N]:
    return I.contract("bmk,bkn->bmn", a, b)

@intent.kernel
def mm_i8(a: i8[M, K], b: i8[K, N]) -> i32[M, N]:
    return I.contract("mk,kn->mn", a, b, acc=i32)

@intent.kernel
def mm_u8(a: u8[M, K], b: u8[K, N]) -> i32[M, N]:
    return I.contract("mk,kn->mn", a, b)

@intent.kernel
def mm_i32(a: i32[M, K], b: i32[K, N]) -> i32[M, N]:
    return I.contract("mk,kn->mn", a, b)

@intent.kernel
def mm_i16_i64(a: i16[M, K], b: i16[K, N]) -> i64[M, N]:
    return I.contract("mk,kn->mn", a, b, acc=i64)

@intent.kernel
def bmv_i8(a: i8[B, M, K], x: i8[B, K]) -> i32[B, M]:
    return I.contract("bmk,bk->bm", a, x)
"""

RNG = np.random.default_rng(20261130)


def ints(shape, dtype=np.float32, low=-4, high=5):
    """Small integers (exact products and sums) of ``dtype``."""
    return RNG.integers(low, high, size=shape).astype(dtype)


def exact(spec, *operands, dtype=np.float32):
    return np.einsum(spec, *(o.astype(np.float64) for o in operands)).astype(dtype)


# M, K, N around the register tile (6 x 64 for f32), the cache blocks (192 x 256, K by 256), zero extents.
MATMUL_SHAPES = [(1, 1, 1), (7, 5, 3), (6, 4, 64), (13, 33, 63), (17, 1, 129), (130, 300, 270), (200, 520, 64),
                 (64, 513, 40), (0, 5, 4), (4, 0, 5), (5, 4, 0), (0, 0, 0)]


@pytest.mark.parametrize("shape", MATMUL_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matmul_shapes(differential, shape):
    m, k, n = shape
    a, b = ints((m, k)), ints((k, n))
    run = differential(SOURCE, "mm", a, b)
    np.testing.assert_array_equal(run.result, exact("mk,kn->mn", a, b))


@pytest.mark.parametrize("kernel, spec, shapes", [
    ("mm_ta", "ki,kj->ij", [(37, 19), (37, 45)]),
    ("mm_tb", "ik,jk->ij", [(19, 37), (45, 37)]),
    ("mm_tc", "ik,kj->ji", [(19, 37), (37, 45)]),
    ("bmm", "bmk,bkn->bmn", [(3, 11, 7), (3, 7, 40)]),
    ("bmm", "bmk,bkn->bmn", [(0, 11, 7), (0, 7, 40)]),
    ("batch_middle", "mbk,kbn->nbm", [(10, 2, 9), (9, 2, 33)]),
    ("multi", "pqkl,lkrs->prqs", [(3, 4, 5, 6), (6, 5, 7, 9)]),
    ("matvec", "ij,j->i", [(33, 70), (70,)]),
    ("vecmat", "j,jk->k", [(70,), (70, 33)]),
    ("outer", "i,j->ij", [(13,), (41,)]),
    ("outer", "i,j->ij", [(0,), (41,)]),
])
def test_specs(differential, kernel, spec, shapes):
    operands = [ints(s) for s in shapes]
    run = differential(SOURCE, kernel, *operands)
    np.testing.assert_array_equal(run.result, exact(spec, *operands))


def test_gram_uses_one_operand_twice(differential):
    a = ints((21, 34))
    run = differential(SOURCE, "gram", a)
    np.testing.assert_array_equal(run.result, exact("ik,jk->ij", a, a))


@pytest.mark.parametrize("k", [0, 1, 1000, 5000])
def test_scalar_results(differential, k):
    x, y = ints(k), ints(k)
    run = differential(SOURCE, "dot", x, y, np.full(1, -1.0, np.float32))
    assert run.args[2][0] == np.dot(x.astype(np.float64), y)
    p, q = ints((k // 10 + 1, 7)), ints((k // 10 + 1, 7))
    run = differential(SOURCE, "frobenius", p, q, np.zeros(1, np.float32))
    assert run.args[2][0] == np.sum(p.astype(np.float64) * q)


def test_contract_inside_parallel(differential):
    x, w = ints((23, 300)), ints(300)
    run = differential(SOURCE, "row_dots", x, w, np.zeros(23, np.float32))
    np.testing.assert_array_equal(run.args[2], exact("rk,k->r", x, w))


def test_fused_operands_and_consumers(differential):
    a, b, bias = ints((20, 30)), ints((30, 50)), ints(50)
    run = differential(SOURCE, "affine", a, b, bias)
    np.testing.assert_array_equal(run.result, exact("mk,kn->mn", 2 * a, b) + bias)
    c = ints((50, 9))
    run = differential(SOURCE, "chain", a, b, c)
    np.testing.assert_array_equal(run.result, exact("mn,np->mp", exact("mk,kn->mn", a, b), c))
    run = differential(SOURCE, "corner", a, b)
    full = exact("mk,kn->mn", a, b)
    np.testing.assert_array_equal(run.result, full[0:2, 0:2] - full[1:3, 1:3])


def test_strided_and_transposed_views(differential):
    big_a, big_b = ints((60, 90)), ints((90, 100))
    for a, b in [(big_a[::2, ::3], big_b[::3, ::2]), (big_b[:40, :30].T, big_a[:40, 50:].T.T),
                 (big_a[::-1, 5:45], big_b[:40:, ::-2])]:
        run = differential(SOURCE, "mm", a, b)
        np.testing.assert_array_equal(run.result, exact("mk,kn->mn", a, b))
    out = np.zeros((50, 80), np.float32)[::2, ::2]  # a strided out= keeps its gaps
    a, b = ints((25, 17)), ints((17, 40))
    differential(SOURCE, "mm", a, b, out=out)


def test_paired_extents_must_match(differential):
    run = differential(SOURCE, "mismatch", ints((4, 5)), ints((6, 3)))
    assert isinstance(run.error, intentc.KernelError) and run.error.code == -4
    assert "axis 'k'" in str(run.error) and "T3" in str(run.error)
    run = differential(SOURCE, "mismatch", ints((4, 5)), ints((5, 3)))
    np.testing.assert_array_equal(run.result, exact("mk,kn->mn", run.args[0], run.args[1]))


def test_float64_and_float16(differential):
    a, b = ints((40, 70), np.float64), ints((70, 20), np.float64)
    run = differential(SOURCE, "mm_f64", a, b)
    np.testing.assert_array_equal(run.result, exact("mk,kn->mn", a, b, dtype=np.float64))
    a, b = ints((40, 300), np.float16), ints((300, 20), np.float16)
    run = differential(SOURCE, "mm_f16", a, b)
    assert run.result.dtype == np.float32
    np.testing.assert_array_equal(run.result, exact("mk,kn->mn", a, b))
    # f16 products and sums that f16 could not hold: the accumulator is f32 (the default).
    a = np.full((2, 3, 600), 60000, np.float16)
    b = np.full((2, 600, 5), 0.5, np.float16)
    run = differential(SOURCE, "mm_f16_default", a, b)
    np.testing.assert_array_equal(run.result, np.full((2, 3, 5), 18_000_000, np.float32))


def test_integer_accumulators(differential):
    a, b = ints((33, 500), np.int8, -128, 128), ints((500, 45), np.int8, -128, 128)
    run = differential(SOURCE, "mm_i8", a, b)
    assert run.result.dtype == np.int32
    np.testing.assert_array_equal(run.result, a.astype(np.int64) @ b.astype(np.int64))
    a, b = ints((9, 70), np.uint8, 0, 256), ints((70, 35), np.uint8, 0, 256)
    run = differential(SOURCE, "mm_u8", a, b)
    np.testing.assert_array_equal(run.result, a.astype(np.int64) @ b.astype(np.int64))
    # i32 products and sums wrap around (two's complement), exactly like the interpreter.
    a, b = ints((12, 40), np.int32, -2**31, 2**31), ints((40, 33), np.int32, -2**31, 2**31)
    run = differential(SOURCE, "mm_i32", a, b)
    want = (a.astype(object) @ b.astype(object)) % 2**32
    want = np.where(want >= 2**31, want - 2**32, want).astype(np.int32)
    np.testing.assert_array_equal(run.result, want)
    a, b = ints((7, 900), np.int16, -2**15, 2**15), ints((900, 40), np.int16, -2**15, 2**15)
    run = differential(SOURCE, "mm_i16_i64", a, b)
    np.testing.assert_array_equal(run.result, a.astype(np.int64) @ b.astype(np.int64))
    a, x = ints((3, 50, 64), np.int8, -128, 128), ints((3, 64), np.int8, -128, 128)
    run = differential(SOURCE, "bmv_i8", a, x)
    np.testing.assert_array_equal(run.result, np.einsum("bmk,bk->bm", a.astype(np.int64), x))


def _rounding_bound(spec, a, b, k):
    """|error| of any order of k float32 multiply-adds: a few ulps of sum |a||b|."""
    magnitude = np.einsum(spec, np.abs(a).astype(np.float64), np.abs(b).astype(np.float64))
    return (k + 2) * np.finfo(np.float32).eps * magnitude + 1e-30


@pytest.mark.parametrize("kernel, spec, shapes, k", [
    ("mm", "mk,kn->mn", [(150, 700), (700, 90)], 700),
    ("bmm", "bmk,bkn->bmn", [(2, 40, 300), (2, 300, 70)], 300),
    ("matvec", "ij,j->i", [(40, 3000), (3000,)], 3000),
])
def test_random_floats_within_rounding(differential, kernel, spec, shapes, k):
    a, b = (RNG.standard_normal(s).astype(np.float32) for s in shapes)
    run = differential(SOURCE, kernel, a, b, ulps=1 << 20)  # both sides are checked against einsum below
    want = np.einsum(spec, a.astype(np.float64), b.astype(np.float64))
    bound = _rounding_bound(spec, a, b, k)
    assert np.all(np.abs(run.result - want) <= bound)
    assert np.all(np.abs(run.interpreted - want) <= bound)


def test_same_bits_for_every_thread_count(differential):
    module = differential.build(SOURCE)
    a = RNG.standard_normal((300, 700)).astype(np.float32)
    b = RNG.standard_normal((700, 530)).astype(np.float32)
    x = RNG.standard_normal((7000,)).astype(np.float32)
    results = []
    try:
        for threads in (1, 2, 3):
            module.set_num_threads(threads)
            res = np.zeros(1, np.float32)
            module.dot(x, x[::-1], res)
            results.append((module.mm(a, b), module.matvec(a, x[:700]), res))
    finally:
        module.set_num_threads(0)
    for other in results[1:]:
        for first, again in zip(results[0], other):
            assert first.tobytes() == again.tobytes()


def test_kir_and_physical_program():
    text = """\
import intent as I

@intent.kernel
def mm(a: f32[M, K], b: f32[K, N]) -> f32[M, N]:
    return I.contract("mk,kn->mn", a, b)
"""
    from intentc.kir.printer import print_module
    from intentc.lower import program as P

    kir = print_module(frontend(text, "mm.intent"))
    assert 'contract(%a, %b) {"acc": "f32", "spec": "mk,kn->mn"}' in kir
    compiled = compile_source(text, "mm.intent", optimize_ir=False)
    lowered = print_module(compiled.kir)
    assert "contract_tiles(" in lowered
    physical = P.format_program(compiled.program)
    assert "muladd(" in physical and "parallel(" in physical and "grain=1" in physical
    assert "fmuladd.v" in compiled.llvm_ir


BAD_SPECS = [
    ("\"ij,jk\"", "needs exactly one '->'"),
    ("\"ij->ij\"", "exactly two operands"),
    ("\"ij,jk,kl->il\"", "exactly two operands"),
    ("\"ii,ij->j\"", "appears twice in the first operand"),
    ("\"ij,jk->ii\"", "appears twice in the result"),
    ("\"ij,jk->iz\"", "'z' of \"ij,jk->iz\" is not an axis"),
    ("\"ij,kl->il\"", "neither paired with the other operand nor kept"),
    ("\"i1,1k->ik\"", "is not an axis letter"),
    ("\"...ij,...jk->...ik\"", "'...'"),
    ("\"ijk,jk->i\"", "rank 2 but"),
]


@pytest.mark.parametrize("spec, message", BAD_SPECS, ids=[s for s, _ in BAD_SPECS])
def test_bad_specs_are_diagnosed(spec, message):
    text = f"""\
import intent as I

@intent.kernel
def k(a: f32[M, N], b: f32[N, P]) -> f32[M, P]:
    return I.contract({spec}, a, b)
"""
    with pytest.raises(CompileError) as info:
        frontend(text, "bad.intent")
    diagnostic = info.value.diagnostics[0]
    assert diagnostic.rule == "T3" and message in diagnostic.message, diagnostic.render_plain()


@pytest.mark.parametrize("call, message", [
    ("I.contract(\"ij,jk->ik\", a, b, acc=f16)", "acc=f16 cannot accumulate products of f32"),
    ("I.contract(\"ij,jk->ik\", a, c)", "different dtypes"),
    ("I.contract(\"ij,jk->ik\", a)", "takes a specification and two tensors"),
    ("I.contract(spec, a, b)", "string literal"),
    ("I.contract(\"ij,jk->ik\", a, b, order=1)", "no argument 'order'"),
    ("I.contract(\"ij,jk->ik\", a, 2.0)", "must be a tensor"),
    ("I.contract(\"ij,jk->ik\", e, d)", "extent 3 in the first operand but 4"),
    ("I.contract(\"ij,jk->ik\", p, q)", "bool operands"),
    ("I.contract(\"ij,jk->ik\", i, i, acc=u32)", "acc=u32 cannot accumulate products of i8"),
])
def test_bad_calls_are_diagnosed(call, message):
    text = f"""\
import intent as I

@intent.kernel
def k(a: f32[M, N], b: f32[N, P], c: f64[N, P], d: f32[4, 3], e: f32[3, 3], p: bool[2, 2], q: bool[2, 2],
      i: i8[2, 2], spec: f32) -> f32[3, 3]:
    x = {call}
    return a[0:3, 0:3]
"""
    with pytest.raises(CompileError) as info:
        frontend(text, "bad.intent")
    diagnostic = info.value.diagnostics[0]
    assert message in diagnostic.message, diagnostic.render_plain()
    if "string literal" not in message and "no argument" not in message:
        assert diagnostic.rule == "T3"


def test_ptx_target_emulated():
    """The same lowering on the PTX target, run by the CPU emulation of its launches
    (tests/gpu/cpu_emulation.py) with a small grid and with one thread."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu"))
    from cpu_emulation import Emulator

    from intentc import ptx_loader

    kernels = ("mm", "mm_f16_default", "matvec")
    text = "import intent as I\n" + "".join(
        "\n@intent.kernel" + chunk for chunk in SOURCE.split("@intent.kernel")[1:]
        if chunk.split("(")[0].split()[-1] in kernels)
    compiled = compile_source(text, "contract.intent", "sm_80", optimize_ir=False)
    for grid in ((3, 32), (1, 1)):
        module = ptx_loader.Module("", compiled.manifest, Emulator(compiled.llvm_ir, *grid))
        a, b = ints((37, 70)), ints((70, 80))
        np.testing.assert_array_equal(module.mm(a, b), exact("mk,kn->mn", a, b))
        a, b = ints((3, 9, 13), np.float16), ints((3, 13, 70), np.float16)
        np.testing.assert_array_equal(module.mm_f16_default(a, b), exact("bmk,bkn->bmn", a, b))
        x = ints((5, 40))
        np.testing.assert_array_equal(module.matvec(x, x[0]), exact("ij,j->i", x, x[0]))
