"""Compiler bugs found by differential testing (compiled vs the reference interpreter),
each as the smallest program that showed it. Every test here failed before its fix;
a bug still open is a strict xfail (it turns into a failure once fixed, to be unmarked)."""
from __future__ import annotations

import numpy as np
import pytest

NESTED_PARALLEL = """\
import intent as I

@intent.kernel
def nest(x: f32[R, C], out: mut f32[R, C]):
    for r in I.parallel(x.axis(0)):
        for c in I.parallel(x.axis(1)):
            out[r, c] = x[r, c] * 2.0
"""


def test_nested_parallel_domain_built_in_the_body(differential):
    """The inner domain is built inside the outer parallel body, but the outer loop's
    grain used its length before the loop ran: an uninitialised read that LLVM turned
    into skipping the whole loop (nothing was written). Fixed in schedule_parallel."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = np.zeros((2, 3), np.float32)
    run = differential(NESTED_PARALLEL, "nest", x, out)
    np.testing.assert_array_equal(run.args[1], x * 2)


SHIFTS = """\
import intent as I

@intent.kernel
def shifts(a: i32[N], b: i32[N]) -> i32[N]:
    return (a << b) ^ (a >> b)

@intent.kernel
def shift_assign(a: i32[N], b: i32[N], out: mut i32[N]):
    for i in I.parallel(a.axis(0)):
        v = a[i]
        v <<= b[i]
        v >>= 1
        out[i] = v
"""


def test_shift_operators_parse(differential):
    """`a << b` lexed as `<` `<` (the comparison terminal won over the shift terminal), so
    no program could shift; `<<=` then needed its own priority. Fixed in the grammar."""
    a = np.array([1, -8, 2**30, -(2**31), 7, 7, 7], np.int32)
    b = np.array([0, 1, 2, 31, 32, -1, 100], np.int32)
    run = differential(SHIFTS, "shifts", a, b)
    want = [1 ^ 1, (-16) ^ (-4), 0 ^ 2**28, (0) ^ -1, 0 ^ 0, 0 ^ 0, 0 ^ 0]
    np.testing.assert_array_equal(run.result, np.array(want, np.int32))
    differential(SHIFTS, "shift_assign", a, b, np.zeros(7, np.int32))


FLOAT_MOD = """\
import intent as I

@intent.kernel
def float_mod(a: f32[N], b: f32[N]) -> f32[N]:  # not fmod: a C library name (c_names.py)
    return a % b
"""


def test_float_mod_zero_takes_the_divisor_sign(differential):
    """Float % follows Python: the result, a zero result included, has the divisor's sign.
    The compiled code left fmod's zero (the dividend's sign). Fixed in emit_llvm."""
    a = np.array([0.0, -4.0, 4.0, -0.0, 6.0, -6.0], np.float32)
    b = np.array([-1.0, 2.0, -2.0, 5.0, 4.0, 4.0], np.float32)
    run = differential(FLOAT_MOD, "float_mod", a, b)
    want = np.array([x % y for x, y in zip(a.tolist(), b.tolist())], np.float32)
    np.testing.assert_array_equal(np.signbit(run.result), np.signbit(want))
    np.testing.assert_array_equal(run.result, want)


HELPER_RETURNS = """\
import intent as I

@intent.fn
def h(a: i32) -> i32:
    if a > 3:
        return a * 2
    v: i32 = a + 1
    return v

@intent.kernel
def k2(x: i32[N], out: mut i32[N]):
    for i in I.parallel(x.axis(0)):
        out[i] = h(x[i])
"""


def test_helper_tail_return_sees_names_after_an_early_return(differential):
    """After an early `return`, the rest of a helper is guarded by the return flag; the
    trailing `return v` was evaluated outside that guard, where `v` is not defined, so a
    valid helper was refused ("undefined name 'v'"). Fixed in sema/normalize."""
    x = np.array([-5, 0, 3, 4, 100], np.int32)
    run = differential(HELPER_RETURNS, "k2", x, np.zeros(5, np.int32))
    np.testing.assert_array_equal(run.args[1], [-4, 1, 4, 8, 200])


GENERIC_HELPER = """\
import intent as I

@intent.fn
def h(x: u32[S, T]) -> u32[S, T]:
    return x + 3

@intent.kernel
def k(x1: u32[1, N]) -> u32[1, N]:
    return h(x1)
"""


def test_helper_called_with_a_more_static_shape(differential):
    """A helper is generic over extents; called with `u32[1, N]` for `u32[S, T]`, its
    inlined body mixed the caller's static type with its own (`add` of tensor<u32[1, ?]>
    and tensor<u32[?, ?]>) and the build died in the verifier with a traceback. Fixed in
    inline_helpers (the operand enters through a whole view of the declared type)."""
    x = np.array([[0, 1, 2**32 - 1]], np.uint32)
    run = differential(GENERIC_HELPER, "k", x)
    np.testing.assert_array_equal(run.result, (x + np.uint32(3)))


ENUMERATE_BREAK = """\
import intent as I

@intent.kernel
def k(x: i32[N], out: mut i64[2]):
    total: i64 = 0
    last: i64 = -1
    for e, i in enumerate(x.axis(0)[I.minimum(1, N):N]):
        if x[i] < 0:
            break
        total = total + I.cast(e, i64) * 10 + I.cast(i, i64)
        last = I.cast(e, i64)
    out[0] = total
    out[1] = last
"""


def test_enumerate_loop_that_may_stop_early(differential):
    """A loop that may stop early becomes a while loop over its domain; with
    `enumerate` (two names) that rewrite refused the valid program ("an ordered for loop
    iterates one domain and binds one name"). Fixed in sema/normalize: the ordinal is
    (point - begin) // step, as for every enumerate loop (D6)."""
    x = np.array([5, 1, 2, 3, -1, 4], np.int32)
    run = differential(ENUMERATE_BREAK, "k", x, np.zeros(2, np.int64))
    np.testing.assert_array_equal(run.args[1], [1 + 12 + 23, 2])
    run = differential(ENUMERATE_BREAK, "k", x[:1].copy(), np.zeros(2, np.int64))
    np.testing.assert_array_equal(run.args[1], [0, -1])


SNAPSHOT = """\
import intent as I

@intent.kernel
def snap(m: mut f32[N]) -> f32[N]:
    y = m * 2.0
    for i in I.parallel(m.axis(0)):
        m[i] = 0.0
    return y
"""


def test_tensor_value_is_computed_where_it_is_defined(differential):
    """A whole-tensor value over a `mut` parameter, read after that parameter is written.
    In program order y is [0, 2, 4, 6]; the compiled code returned [0, 0, 0, 0] because
    `y = m * 2.0` was fused into the return, after the writes. Fixed in
    expand_tensor_exprs: a value over a written tensor is snapshotted where it is defined."""
    m = np.arange(4, dtype=np.float32)
    run = differential(SNAPSHOT, "snap", m)
    np.testing.assert_array_equal(run.result, [0, 2, 4, 6])


ESCAPING_INDICES = """\
import intent as I

@intent.kernel
def view(x: f32[N], k: index, out: mut f32[1]):
    w = x[0:2]
    out[0] = w[k]

@intent.kernel
def joined(a: f32[N], k: index, out: mut f32[1]):
    t = I.join(a, a)
    out[0] = t[0, k]

@intent.kernel
def coords(a: f32[N], k: index, out: mut i64[1]):
    t = I.indices(a.axis(0)[1:N])
    out[0] = I.cast(t[k], i64)

@intent.kernel
def reshaped(x: f32[N], k: index, out: mut f32[1]):
    f = x.reshape([2, -1])
    out[0] = f[0, k]

@intent.kernel
def broadcast(x: f32[P], y: f32[Q], k: index, out: mut f32[1]):
    t = x + y
    out[0] = t[k]
"""


def test_element_of_a_tensor_value_is_checked_against_its_own_extents(differential):
    """Loading an element of a tensor value maps the index to the parameters it reads, and
    only those loads were checked: `x[0:2][5]` read x[5], `I.join(a, a)[0, 7]` read a[0],
    `I.indices(d)[k]` and a reshape or an extent-1 broadcast let any index through. Each
    must fail with INTENT_E_BOUNDS (D5: never clamped). Fixed in expand_tensor_exprs."""
    x = np.arange(10, dtype=np.float32)
    cases = [("view", (x,), [(1, None), (2, -6), (5, -6), (-1, -6)]),
             ("joined", (x[:4].copy(),), [(1, None), (2, -6), (7, -6), (-1, -6)]),
             ("coords", (x[:4].copy(),), [(2, None), (3, -6), (-1, -6)]),
             ("reshaped", (x[:6].copy(),), [(2, None), (3, -6), (4, -6), (-1, -6)]),
             ("broadcast", (np.ones(1, np.float32), np.ones(1, np.float32)), [(0, None), (1, -6), (3, -6)])]
    for kernel, inputs, ks in cases:
        for k, code in ks:
            out = np.zeros(1, np.int64 if kernel == "coords" else np.float32)
            run = differential(ESCAPING_INDICES, kernel, *inputs, k, out)
            got = run.error.code if run.error is not None else None
            assert got == code, f"{kernel}[{k}]: {run.error!r}"


def test_parameter_named_like_the_returned_tensor_is_refused():
    """A kernel that returns a tensor and also has a parameter `out` got a C prototype
    with two parameters named `out` (the header did not compile) and an ambiguous out=.
    Found by the program generator; now a diagnostic in sema."""
    import intentc
    from intentc.driver import frontend

    source = ("import intent as I\n\n@intent.kernel\ndef k(x: f32[N], out: mut f32[N]) -> f32[N]:\n"
              "    for i in I.parallel(x.axis(0)):\n        out[i] = x[i]\n    return x * 2.0\n")
    with pytest.raises(intentc.CompileError, match="returned value"):
        frontend(source, "clash.intent")
    frontend(source.replace("out", "dst"), "renamed.intent")  # fine under another name
    frontend(source.replace("-> f32[N]", "-> (f32[N], f32[N])").replace("return x * 2.0", "return (x, x)"),
             "two.intent")  # two results are out0 and out1: no clash with out


def test_returned_tensor_sized_by_a_parameter_of_the_wrong_rank(differential):
    """The loader sizes returned tensors from the parameters' extents; when the only
    parameter naming an extent had too few axes it raised KeyError('N') instead of the
    rank refusal (INTENT_E_RANK) the runtime gives. Fixed in the loader."""
    source = "import intent as I\n\n@intent.kernel\ndef k(x: f32[N]) -> f32[N]:\n    return x * 2.0\n"
    run = differential(source, "k", np.array(3.0, np.float32))
    assert run.error is not None and run.error.code == -3


KEEPDIMS_ALL_AXES = """\
import intent as I

@intent.kernel
def k(x: i16[N]) -> i16[1]:
    return I.max(x, axis=0, keepdims=True)

@intent.kernel
def k2(x: i32[M, N]) -> i32[1, 1]:
    return I.sum(I.sum(x, axis=1, keepdims=True), axis=0, keepdims=True)
"""


def test_reduction_of_every_axis_with_keepdims(differential):
    """`I.max(x, axis=0, keepdims=True)` of a 1-D tensor (every axis reduced, the result
    kept as [1]) built a parallel loop over no domains and the build died in the verifier.
    Found by the program generator; fixed in structured_expansion (one point, no loop)."""
    x = np.array([3, -7, 12, 5], np.int16)
    np.testing.assert_array_equal(differential(KEEPDIMS_ALL_AXES, "k", x).result, [12])
    np.testing.assert_array_equal(differential(KEEPDIMS_ALL_AXES, "k", x[:0]).result, [-32768])
    y = np.arange(12, dtype=np.int32).reshape(3, 4)
    np.testing.assert_array_equal(differential(KEEPDIMS_ALL_AXES, "k2", y).result, [[66]])


def test_negative_result_extent_is_a_shape_refusal(differential):
    """A result extent written as an expression (`R - 1`) can be negative for some calls;
    the loader then failed inside NumPy (ValueError: negative dimensions). Both sides now
    refuse with INTENT_E_SHAPE before anything runs."""
    source = ("import intent as I\n\n@intent.kernel\ndef k(x: f32[R]) -> f32[R - 1]:\n"
              "    return x[1:R] - x[0:R - 1]\n")
    np.testing.assert_array_equal(differential(source, "k", np.array([1, 4, 9], np.float32)).result, [3, 5])
    run = differential(source, "k", np.zeros(0, np.float32))
    assert run.error is not None and run.error.code == -4


SELF_EQUAL_EXTENT = """\
import intent as I

@intent.kernel
def k(x: u32[M, N], x0: u16[M, 1], o: mut f16[M, N]) -> u16[M, 1]:
    t2 = x.reshape([-1])
    snapshot = I.cumprod(x0[:, :], axis=1)
    for i in I.parallel(x.axis(0)):
        for j in I.parallel(I.domain(0, I.minimum(i + 1, N))):
            o[i, j] = I.cast(t2[((i * N) + j)], f16)
    return snapshot
"""


def test_extent_equal_to_an_expression_of_itself(differential):
    """The bounds analysis learnt M == M - 0 (the view's extent) and then built the affine
    form of M from M - 0 and of M - 0 from M, forever: the build failed with "the program
    nests too deeply". Found by the program generator; fixed in kir/provenance (a class
    that refers to itself is an atom)."""
    x = np.arange(12, dtype=np.uint32).reshape(3, 4)
    x0 = np.array([[2], [3], [5]], np.uint16)
    o = np.zeros((3, 4), np.float16)
    run = differential(SELF_EQUAL_EXTENT, "k", x, x0, o)
    np.testing.assert_array_equal(run.result, x0)
    np.testing.assert_array_equal(run.args[2], np.tril(x).astype(np.float16))


HELPER_RESULT_EXTENTS = """\
import intent as I

@intent.fn
def both(a: bool, b: bool) -> bool:
    return a & b

@intent.fn
def collapse(x: bool[S, T]) -> bool[S, T]:
    return I.all(I.reduce(x, combine=both, identity=True, axis=0, keepdims=True), axis=1, keepdims=True)

@intent.kernel
def pick(v: f32[1], m: bool[1, N]) -> f32[1, N]:
    return I.where(collapse(m), v, v + 1.0)
"""


@pytest.mark.parametrize("n", [1, 3])
def test_helper_result_of_size_one_for_a_declared_extent(differential, n):
    """A helper declared ``-> bool[S, T]`` returned a ``[1, 1]`` value; its caller typed the
    call as ``[S, T]`` and, once inlined, the select's condition and choices disagreed: an
    internal KIR verifier error (a traceback). Found by the program generator. Now a helper's
    returned extents are checked like a kernel's (S3) and the value takes the declared shape:
    N = 1 runs, N = 3 is a run-time shape refusal on both sides."""
    v = np.array([2.0], np.float32)
    run = differential(HELPER_RESULT_EXTENTS, "pick", v, np.ones((1, n), bool))
    if n == 1:
        assert run.error is None
        np.testing.assert_array_equal(run.result, [[2.0]])
    else:
        assert run.error is not None and run.error.code == -4  # INTENT_E_SHAPE (both sides: the fixture)
        assert "signature declares T = 3" in str(run.error)
