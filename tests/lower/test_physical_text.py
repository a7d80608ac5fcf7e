"""The physical program's text form (``intentc.lower.physical_text``): every sample's program
reads back equal after every physical pass, hand-written text means what it says, and bad
text is refused with the line it is on."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from physical_samples import SOURCES, source_id, stages  # noqa: E402

from intentc.kir.types import BOOL, DTYPES, INDEX  # noqa: E402
from intentc.lower import program as P  # noqa: E402
from intentc.lower.physical_text import PhysicalParseError, parse_program, print_program  # noqa: E402

F32, I32 = DTYPES["f32"], DTYPES["i32"]


@pytest.mark.parametrize("laws", [False, True], ids=["plain", "laws"])
@pytest.mark.parametrize("source", SOURCES, ids=[source_id(s) for s in SOURCES])
def test_every_sample_round_trips_after_every_pass(source, laws):
    for name, program in stages(source, laws):
        text = print_program(program)
        back = parse_program(text)
        assert back == program, f"{source_id(source)} after {name}: the parsed program differs"
        assert print_program(back) == text


def test_there_are_samples():
    assert len(SOURCES) >= 20


def test_the_printer_is_the_explain_printer():
    assert print_program is P.format_program


TEXT = """physical module m

kernel k(a: f32, n: i32, x: f32[rank 1], out: f32[rank 2] mut):
  results out
  N: index = x.shape[0]
  check eq(N, out.shape[1]) else INTENT_E_SHAPE 'k: extent %lld' , N
  buf = alloc f32[N, 2:index]
  for i in parallel(0, N) grain=max(1:index, N):
    v: f32 = x.data[mul(i, x.stride[0])]
    w: f32x4 = x.data[i x4]
    s: f32 = add.fast(v, w[lane 2])
    out.data[i] = muladd(s, a, -1.5:f32)
    buf.data[i] = shuffle(w, splat<f32x4>(a), [0, 5])[lane 1] (streaming)
  fence
  if lt(cast<i32 in_range>(a), n):
    pass
  else:
    old: f32 = atomic_add.relaxed(&out.data[0:index], a)
  while:
      c: bool = gt(N, 0:index)
    test c
    body:
      N: index = sub(N, 1:index)
"""


def test_hand_written_text():
    program = parse_program(TEXT)
    (kernel,) = program.kernels
    a, n, x, out = kernel.params
    assert a == P.Var("a", F32) and n == P.Var("n", I32)
    assert x == P.TensorSym("x", F32, 1, False) and out == P.TensorSym("out", F32, 2, True)
    assert kernel.result_params == ("out",) and kernel.source_name == "k"
    N = P.Var("N", INDEX)
    assign, check, alloc, loop, fence, branch, loop2 = kernel.body
    assert assign == P.Assign(N, P.Field(INDEX, x, "shape", 0))
    assert check == P.Check(P.Compare(BOOL, "eq", P.read(N), P.Field(INDEX, out, "shape", 1)),
                            "INTENT_E_SHAPE", "k: extent %lld", (P.read(N),))
    buf = P.TensorSym("buf", F32, 2, True, "heap")
    assert alloc == P.Alloc(buf, (P.read(N), P.Const(INDEX, 2)))
    assert loop.kind == "parallel" and loop.grain == P.Binary(INDEX, "max", P.Const(INDEX, 1), P.read(N))
    v4 = P.VectorType(F32, 4)
    assert loop.body[1] == P.Assign(P.Var("w", v4), P.Load(v4, x, P.read(P.Var("i", INDEX))))
    assert loop.body[2].value == P.Binary(F32, "add", P.read(P.Var("v", F32)),
                                          P.Lane(F32, P.read(P.Var("w", v4)), 2), True)
    assert loop.body[3].value == P.MulAdd(F32, P.read(P.Var("s", F32)), P.read(a), P.Const(F32, -1.5))
    store = loop.body[4]
    assert store.streaming and store.tensor == buf
    assert store.value == P.Lane(F32, P.Shuffle(P.VectorType(F32, 2), P.read(P.Var("w", v4)),
                                                P.Splat(v4, P.read(a)), (0, 5)), 1)
    assert fence == P.Fence()
    assert branch.then == () and branch.cond.a == P.Cast(I32, P.read(a), True)
    assert branch.orelse[0].value == P.Atomic(F32, out, P.Const(INDEX, 0), "add", "relaxed", P.read(a))
    assert isinstance(loop2, P.While) and loop2.cond == P.read(P.Var("c", BOOL))
    assert parse_program(print_program(program)) == program


def test_source_name_is_kept():
    kernel = P.Kernel("k", (), (P.Fence(),), "k in file.intent")
    program = P.Program("m", (kernel,))
    assert "source 'k in file.intent'" in print_program(program)
    assert parse_program(print_program(program)) == program


def test_special_constants():
    x = P.Var("x", F32)
    body = tuple(P.Assign(x, P.Const(F32, v)) for v in (float("inf"), float("-inf"), 1e-05, -0.0, 3))
    body += (P.Assign(P.Var("b", BOOL), P.Const(BOOL, True)),)
    program = P.Program("m", (P.Kernel("k", (), body, "k"),))
    back = parse_program(print_program(program))
    assert back == program
    assert [type(s.value.value) for s in back.kernels[0].body] == [float] * 4 + [int, bool]


@pytest.mark.parametrize("text, where", [
    ("kernel k():\n", "line 1"),  # no module line
    ("physical module m\nkernel k(x: f32[rank 1]):\n  y.data[0:index] = 1.0:f32\n", "line 3"),  # unknown tensor
    ("physical module m\nkernel k():\n  x: f32 = y\n", "line 3"),  # unknown variable
    ("physical module m\nkernel k():\n  x: f32 = 1.0:f32\n  x: i32 = 1:i32\n", "line 4"),  # two types
    ("physical module m\nkernel k():\n  x: f32 = frob(1.0:f32)\n", "line 3"),  # unknown operation
    ("physical module m\nkernel k():\n  x: f32 = add(1.0:f32)\n", "line 3"),  # arity
    ("physical module m\nkernel k():\n  x: f32 = 1.0:f32 junk\n", "line 3"),  # trailing text
    ("physical module m\nkernel k():\n  fence\n      fence\n", "line 4"),  # indentation
    ("physical module m\nkernel k():\n  x: q13 = 1:q13\n", "line 3"),  # unknown type
    ("physical module m\nkernel k():\n  while:\n    body:\n", "line 3"),  # no test line
    ("physical module m\nkernel k(x f32):\n  fence\n", "line 2"),  # bad parameter
])
def test_bad_text_is_refused(text, where):
    with pytest.raises(PhysicalParseError, match=where):
        parse_program(text)
