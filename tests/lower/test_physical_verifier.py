"""``physical_verifier.verify_program``: it accepts every sample's program after every physical
pass (run here in ``pipeline.PHYSICAL_PASSES`` order) and refuses hand-made programs that break
one invariant each, naming it."""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from physical_samples import SOURCES, source_id, stages  # noqa: E402

from intentc.kir.types import BOOL, DTYPES, INDEX  # noqa: E402
from intentc.lower import program as P  # noqa: E402
from intentc.lower.physical_text import parse_program  # noqa: E402
from intentc.lower.physical_verifier import PhysicalVerifyError, verify_program  # noqa: E402

F32, I32 = DTYPES["f32"], DTYPES["i32"]
PARAMS = "a: f32, n: index, x: f32[rank 1], out: f32[rank 1] mut"


@pytest.mark.parametrize("laws", [False, True], ids=["plain", "laws"])
@pytest.mark.parametrize("source", SOURCES, ids=[source_id(s) for s in SOURCES])
def test_every_sample_verifies_after_every_pass(source, laws):
    for name, program in stages(source, laws):
        try:
            verify_program(program)
        except PhysicalVerifyError as exc:
            pytest.fail(f"{source_id(source)} after {name}: {exc}")


def program(body: str, params: str = PARAMS) -> P.Program:
    lines = "\n".join("  " + line for line in body.strip("\n").splitlines())
    return parse_program(f"physical module m\n\nkernel k({params}):\n{lines}\n")


GOOD = """
N: index = x.shape[0]
check eq(N, out.shape[0]) else INTENT_E_SHAPE 'k: %lld and %lld', N, out.shape[0]
for i in parallel(0, N) grain=1:index:
  v: f32 = x.data[mul(i, x.stride[0])]
  out.data[i] = add(v, a)
"""


def test_a_good_program_verifies():
    verify_program(program(GOOD))


@pytest.mark.parametrize("body", [
    # a while's test may read what its condition body assigns
    "while:\n    c: bool = lt(n, 3:index)\n  test c\n  body:\n    fence",
    # assigned in both branches: known after the if
    "if lt(n, 1:index):\n  y: f32 = a\nelse:\n  y: f32 = 0.0:f32\nout.data[0:index] = y",
    # streaming stores fenced after the loop that makes them, inside the task
    "for i in parallel(0, n) grain=1:index:\n  for j in serial(0, n):\n"
    "    out.data[mul(j, 4:index)] = splat<f32x4>(a) (streaming)\n  fence",
    # a loop-carried value assigned before the loop and in it
    "s: f32 = 0.0:f32\nfor i in serial(0, n):\n  s: f32 = add(s, a)\nout.data[0:index] = s",
])
def test_accepted(body):
    verify_program(program(body))


@pytest.mark.parametrize("body, why", [
    ("y: f32 = z\nz: f32 = a", "'z' is read where it is not assigned"),
    ("if lt(n, 1:index):\n  y: f32 = a\nout.data[0:index] = y", "'y' is read where it is not assigned"),
    ("for i in serial(0, n):\n  y: f32 = a\nout.data[0:index] = y", "'y' is read where it is not assigned"),
    ("for i in serial(0, n):\n  fence\nout.data[i] = a", "'i' is read where it is not assigned"),
    ("for i in serial(0, n):\n  i: index = 0:index", "assigns its index"),
    ("x.data[0:index] = a", "read-only tensor 'x'"),
    ("out.data[0:index] = a (streaming)", "streaming store of a scalar"),
    ("for i in parallel(0, n) grain=1:index:\n  out.data[mul(i, 4:index)] = splat<f32x4>(a) (streaming)",
     "not followed by a fence before its task ends"),
    ("out.data[0:index] = splat<f32x4>(a) (streaming)", "not followed by a fence before the kernel ends"),
    ("for i in serial(0, n) grain=1:index:\n  fence", "a serial loop has a grain"),
    ("for i in sideways(0, n):\n  fence", "unknown loop kind"),
    ("s: f32 = a\nfor i in parallel(0, n) grain=1:index:\n  s: f32 = add(s, a)", "assigns 's', defined outside"),
    ("if lt(n, 1:index):\n  buf = alloc f32[n]\nout.data[0:index] = buf.data[0:index]",
     "'buf' is used before it is allocated"),
    ("v: f32x4 = splat<f32x4>(a)\nout.data[0:index] = v[lane 4]", "a lane must be one of its vector's"),
    ("v: f32x4 = splat<f32x4>(a)\nw: f32x4 = shuffle(v, v, [0, 1, 2, 8])", "a shuffle's mask"),
    ("check lt(n, 1:index) else INTENT_E_SHAPE 'k: %lld'", "takes 1 values but the check has 0"),
    ("check lt(n, 1:index) else INTENT_E_SHAPE 'k: %lld', a", "%lld takes an integer, not f32"),
    ("check lt(n, 1:index) else INTENT_E_SHAPE 'k: %s', n", "a conversion other than %lld"),
    ("check lt(n, 1:index) else OOPS 'k'", "'OOPS' is not a status code"),
    ("y: f32 = atomic_cas.relaxed(&out.data[0:index], a)", "atomic cas takes 2 operands"),
    ("y: f32 = atomic_add.relaxed(&x.data[0:index], a)", "atomic write to the read-only tensor 'x'"),
    ("y: index = x.shape[1]", "axis 1 of a rank-1 tensor"),
    ("if a:\n  fence", "a condition is f32, not bool"),
    ("for i in serial(0, a):\n  fence", "a loop count is f32, not index"),
    ("out.data[a] = a", "an element offset is f32, not index"),
])
def test_refused(body, why):
    with pytest.raises(PhysicalVerifyError, match=why.replace("(", r"\(").replace(")", r"\)")):
        verify_program(program(body))


def _kernel(body, params=()) -> P.Program:
    return P.Program("m", (P.Kernel("k", tuple(params), tuple(body), "k"),))


X = P.TensorSym("x", F32, 1, True)
B = P.TensorSym("b", F32, 1, True, "heap")


@pytest.mark.parametrize("prog, why", [
    (_kernel([P.Assign(P.Var("y", F32), P.Const(I32, 1))]), "a i32 value is assigned to 'y' of type f32"),
    (_kernel([P.Assign(P.Var("y", F32), P.Const(F32, 1.0)), P.Assign(P.Var("y", I32), P.Const(I32, 1))]),
     "'y' has two types"),
    (_kernel([P.Assign(P.Var("y", F32), P.Binary(F32, "add", P.Const(F32, 1.0), P.Const(I32, 1)))]),
     "operands and result of different types"),
    (_kernel([P.Assign(P.Var("y", F32), P.Binary(F32, "frobnicate", P.Const(F32, 1.0), P.Const(F32, 1.0)))]),
     "unknown operation 'frobnicate'"),
    (_kernel([P.Store(X, P.Const(INDEX, 0), P.Const(I32, 1))], [X]), "a i32 value moves to or from the f32 tensor"),
    (_kernel([P.Store(X, P.Const(INDEX, 0), P.Const(F32, 1.0))], [X, replace(X, writable=False)]),
     "two parameters share a name|stands for two different tensors"),
    (_kernel([P.Assign(P.Var("v", P.VectorType(F32, 4)), P.Pack(P.VectorType(F32, 4), (P.Const(F32, 1.0),)))]),
     "a pack needs one scalar"),
    (_kernel([P.Alloc(P.TensorSym("b", F32, 2, True, "heap"), (P.Const(INDEX, 4),))]),
     "writable heap tensor of rank 1"),
    (_kernel([P.Assign(P.Var("c", BOOL), P.Compare(F32, "lt", P.Const(F32, 1.0), P.Const(F32, 2.0)))]),
     "a comparison must compare equal types to bool"),
    (_kernel([P.Store(B, P.Const(INDEX, 0), P.Const(F32, 1.0)), P.Alloc(B, (P.Const(INDEX, 4),))]),
     "'b' is used before it is allocated"),
    (P.Program("m", (P.Kernel("k", (X,), (), "k", ("y",)),)), "the result 'y' is not a tensor parameter"),
    (P.Program("m", (P.Kernel("k", (), (), "k"), P.Kernel("k", (), (), "k"))), "two kernels share a name"),
])
def test_refused_structures(prog, why):
    with pytest.raises(PhysicalVerifyError, match=why):
        verify_program(prog)
