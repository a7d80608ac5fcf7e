"""The aliasing rule of docs/abi.md ("Aliasing"), compiled and interpreted alike.

An input that overlaps an output is read as it was before any output is written (the
entry copies it only when the address ranges overlap); written tensors that overlap each
other, or whose strides make one overlap itself, are refused with INTENT_E_ALIAS (-12)
naming them, before anything is written. Every case runs on the compiled kernel
(``intentc.load``), on the reference interpreter, and for the refusals on a C caller's
descriptors too; both sides get the same arrays (views of one buffer), not copies.
"""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import intentc
from intentc.base.status import E_ALIAS
from intentc.driver import build, frontend

SOURCE = """\
import intent as I

@intent.kernel
def rev(x: f32[N], out: mut f32[N]):
    for i in I.parallel(x.axis(0)):
        out[N - 1 - i] = x[i]

@intent.kernel
def reversed_copy(x: f32[N]) -> f32[N]:
    y = I.buffer(f32, [N], fill=0.0)
    for i in I.parallel(x.axis(0)):
        y[N - 1 - i] = x[i]
    return y

@intent.kernel
def split(x: f32[N], a: mut f32[N], b: mut f32[N]):
    for i in I.parallel(x.axis(0)):
        a[i] = x[i]
        b[i] = x[i] + 1.0

@intent.kernel
def transpose(x: f32[R, C], out: mut f32[C, R]):
    for r, c in I.parallel(x.axis(0), x.axis(1)):
        out[c, r] = x[r, c]

@intent.kernel
def rev4(x: f4e2m1[N], out: mut f4e2m1[N]):
    for i in I.parallel(x.axis(0)):
        out[N - 1 - i] = x[i]

@intent.kernel
def split4(x: f4e2m1[N], a: mut f4e2m1[N], b: mut f4e2m1[N]):
    for i in I.parallel(x.axis(0)):
        a[i] = x[i]
        b[i] = x[i]

@intent.kernel
def fill2(v: f32, out: mut f32[R, C]):
    for r, c in I.parallel(out.axis(0), out.axis(1)):
        out[r, c] = v
"""


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    """(compiled module, KIR module) of SOURCE."""
    folder = tmp_path_factory.mktemp("aliasing")
    (folder / "alias.intent").write_text(SOURCE)
    build(folder / "alias.intent", folder / "alias.so")
    return intentc.load(folder / "alias.so"), frontend(SOURCE, "alias.intent")


def both(kernels, name, make, *, out=False):
    """Run kernel ``name`` compiled and interpreted, each on fresh arrays from ``make()``
    (a buffer and the arguments, views of it); return the two buffers after the call."""
    compiled, module = kernels
    finals = []
    for call in (lambda *a, **k: getattr(compiled, name)(*a, **k),
                 lambda *a, **k: intentc.interpret(module, name, *a, **k)):
        buf, args, kwargs = make()
        call(*args, **kwargs)
        finals.append(buf)
    return finals


def refused(kernels, name, make, words):
    """Both sides refuse with INTENT_E_ALIAS, the message containing ``words``, and write nothing."""
    compiled, module = kernels
    for side, call in (("compiled", lambda *a, **k: getattr(compiled, name)(*a, **k)),
                       ("interpreted", lambda *a, **k: intentc.interpret(module, name, *a, **k))):
        buf, args, kwargs = make()
        before = buf.copy()
        with pytest.raises(intentc.KernelError) as info:
            call(*args, **kwargs)
        assert info.value.code == E_ALIAS and info.value.status == "INTENT_E_ALIAS", side
        for w in words:
            assert w in str(info.value), (side, str(info.value))
        np.testing.assert_array_equal(buf, before, err_msg=f"{side} wrote a refused call's outputs")


N = 100_000


def test_in_place_reverse(kernels):
    """rev(x, out=x): every element right (the issue's case had half of them wrong)."""
    want = np.arange(N, dtype=np.float32)[::-1]

    def mut():
        x = np.arange(N, dtype=np.float32)
        return x, (x, x), {}

    def result():
        x = np.arange(N, dtype=np.float32)
        return x, (x,), {"out": x}

    for final in both(kernels, "rev", mut) + both(kernels, "reversed_copy", result, out=True):
        np.testing.assert_array_equal(final, want)


@pytest.mark.parametrize("shift", [1, 2, 4, -3])
def test_partial_overlap(kernels, shift):
    """The input and the output share all but |shift| elements, either way round."""
    n = 16
    src = np.arange(20, dtype=np.float32)

    def make():
        buf = src.copy()
        x, out = (buf[:n], buf[shift:shift + n]) if shift > 0 else (buf[-shift:-shift + n], buf[:n])
        return buf, (x, out), {}

    want = src.copy()
    x0 = want[:n].copy() if shift > 0 else want[-shift:-shift + n].copy()
    (want[shift:shift + n] if shift > 0 else want[:n])[...] = x0[::-1]
    for final in both(kernels, "rev", make):
        np.testing.assert_array_equal(final, want)


def test_negative_strides_and_transposes(kernels):
    """Reversed and transposed views of the output's own memory are inputs like any other."""
    src = np.arange(12, dtype=np.float32)

    def reversed_view():
        buf = src.copy()
        return buf, (buf[::-1], buf), {}

    for final in both(kernels, "rev", reversed_view):  # out = reverse(reverse(buf)) = buf
        np.testing.assert_array_equal(final, src)

    def every_other():
        buf = src.copy()
        return buf, (buf[::2], buf[-1::-2]), {}  # the input's range overlaps the output's

    want = src.copy()
    want[-1::-2] = src[::2][::-1]
    for final in both(kernels, "rev", every_other):
        np.testing.assert_array_equal(final, want)

    square = np.arange(16, dtype=np.float32).reshape(4, 4)

    def in_place_transpose():
        buf = square.copy()
        return buf, (buf, buf), {}

    for final in both(kernels, "transpose", in_place_transpose):
        np.testing.assert_array_equal(final, square.T)

    def broadcast_input():  # an input with a zero stride over the output's first element
        buf = np.arange(6, dtype=np.float32)
        return buf, (np.broadcast_to(buf[:1], (6,)), buf), {}

    for final in both(kernels, "rev", broadcast_input):
        np.testing.assert_array_equal(final, np.zeros(6, np.float32))


def test_overlapping_outputs_are_refused(kernels):
    def same():
        buf = np.zeros(8, np.float32)
        return buf, (np.ones(8, np.float32), buf, buf), {}

    def by_one_element():
        buf = np.zeros(15, np.float32)
        return buf, (np.ones(8, np.float32), buf[:8], buf[7:]), {}

    def reversed_one():
        buf = np.zeros(15, np.float32)
        return buf, (np.ones(8, np.float32), buf[7:], buf[7::-1]), {}

    def same_parity():  # interleaved strides, but starting on a common element
        buf = np.zeros(18, np.float32)
        return buf, (np.ones(8, np.float32), buf[:16:2], buf[2::2]), {}

    def half_element_apart():  # a byte offset that is not a whole element: elements meet
        raw = np.zeros(72, np.uint8)
        a = np.lib.stride_tricks.as_strided(raw[:].view(np.float32), (8,), (8,))
        b = np.lib.stride_tricks.as_strided(raw[2:66].view(np.float32), (8,), (8,))
        return raw, (np.ones(8, np.float32), a, b), {}

    for make in (same, by_one_element, reversed_one, same_parity, half_element_apart):
        refused(kernels, "split", make, ["split: parameters 'a' and 'b' overlap"])


def test_interleaved_views_are_disjoint(kernels):
    """Ranges that intersect but elements that never meet (the gcd of the strides keeps
    them apart, docs/abi.md): accepted as outputs, and read in place as inputs."""
    def even_odd():
        buf = np.zeros(16, np.float32)
        return buf, (np.arange(8, dtype=np.float32), buf[::2], buf[1::2]), {}

    for final in both(kernels, "split", even_odd):
        np.testing.assert_array_equal(final[::2], np.arange(8))
        np.testing.assert_array_equal(final[1::2], np.arange(8) + 1)

    def columns():  # the even and odd columns of a 4 x 6 matrix
        buf = np.zeros((4, 6), np.float32)
        return buf, (np.float32(3), buf[:, 1::2]), {}

    for final in both(kernels, "fill2", columns):
        assert (final[:, 1::2] == 3).all() and (final[:, ::2] == 0).all()

    def input_between_outputs():  # x read from the odd slots while out fills the even ones
        buf = np.arange(16, dtype=np.float32)
        return buf, (buf[1::2], buf[::2]), {}

    for final in both(kernels, "rev", input_between_outputs):
        np.testing.assert_array_equal(final[::2], np.arange(16, dtype=np.float32)[1::2][::-1])
        np.testing.assert_array_equal(final[1::2], np.arange(16, dtype=np.float32)[1::2])


def test_disjoint_outputs_of_one_buffer(kernels):
    def halves():
        buf = np.zeros(16, np.float32)
        return buf, (np.arange(8, dtype=np.float32), buf[:8], buf[8:]), {}

    for final in both(kernels, "split", halves):
        np.testing.assert_array_equal(final, np.r_[np.arange(8), np.arange(8) + 1].astype(np.float32))


@pytest.mark.parametrize("shape,strides,axis", [((3, 2), (1, 1), 1), ((3, 2), (1, -1), 1), ((2, 3), (1, 1), 1),
                                                ((4, 3), (2, 1), 0), ((2, 2), (-2, 2), 1)])
def test_self_overlapping_output_is_refused(kernels, shape, strides, axis):
    def make():
        buf = np.zeros(32, np.float32)
        base = buf[12:]  # room for negative strides
        view = np.lib.stride_tricks.as_strided(base, shape, tuple(4 * s for s in strides))
        return buf, (np.float32(5), view), {}

    refused(kernels, "fill2", make, ["fill2: parameter 'out' overlaps itself", f"on axis {axis}"])


@pytest.mark.parametrize("shape,strides", [((3, 2), (2, 1)), ((3, 2), (-2, 1)), ((3, 2), (1, 3)),
                                           ((2, 3), (7, 2)), ((1, 5), (0, 1)), ((5, 1), (1, 1)), ((2, 2), (-3, 2))])
def test_injective_strided_outputs_are_accepted(kernels, shape, strides):
    def make():
        buf = np.zeros(32, np.float32)
        view = np.lib.stride_tricks.as_strided(buf[12:], shape, tuple(4 * s for s in strides))
        return buf, (np.float32(5), view), {}

    finals = both(kernels, "fill2", make)
    np.testing.assert_array_equal(finals[0], finals[1])
    assert np.count_nonzero(finals[0]) == shape[0] * shape[1]


def test_packed_f4_arguments(kernels):
    """f4e2m1 arrays travel packed, each into its own buffer; the loader applies the rule to
    the caller's arrays, so packed kernels agree with the interpreter too."""
    md = pytest.importorskip("ml_dtypes")
    values = np.array([0.5, 1, 1.5, 2, 3, 4, 6, -1], np.float32).astype(md.float4_e2m1fn)

    def in_place():
        buf = values.copy()
        return buf, (buf, buf), {}

    for final in both(kernels, "rev4", in_place):
        np.testing.assert_array_equal(final.astype(np.float32), values[::-1].astype(np.float32))

    def overlapping():
        buf = np.concatenate([values, values])
        return buf, (values.copy(), buf[:8], buf[4:12]), {}

    refused(kernels, "split4", overlapping, ["split4: parameters 'a' and 'b' overlap"])


C_CALLER = r"""
#include <stdio.h>
#include "alias.h"

static IntentTensor view(float *data, int64_t *shape, int64_t *strides, int32_t ndim)
{
    IntentTensor t = {data, {INTENT_DEVICE_CPU, 0}, ndim, {INTENT_DTYPE_FLOAT, 32, 1}, shape, strides, 0};
    return t;
}

int main(void)
{
    float buf[16];
    for (int i = 0; i < 16; i++) buf[i] = (float)i;
    int64_t n8[] = {8}, one[] = {1}, minus[] = {-1};
    IntentTensor x = view(buf, n8, one, 1), y = view(buf + 7, n8, minus, 1);
    int32_t rc = rev(&x, &x); /* in place */
    printf("rev %d %g %g\n", rc, buf[0], buf[7]);
    rc = rev(&y, &x); /* y is x reversed: out = reverse(reverse(x)) */
    printf("rev2 %d %g %g\n", rc, buf[0], buf[7]);
    IntentTensor a = view(buf, n8, one, 1), b = view(buf + 7, n8, one, 1);
    rc = split(&x, &a, &b);
    printf("split %d %g [%s]\n", rc, buf[8], intent_last_error());
    int64_t shape[] = {3, 2}, strides[] = {1, 1};
    IntentTensor o = view(buf, shape, strides, 2);
    rc = fill2(1.0f, &o);
    printf("fill2 %d %g [%s]\n", rc, buf[0], intent_last_error());
    return 0;
}
"""


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_c_caller(tmp_path):
    """The checks are in the generated entry: a C caller gets them without Python."""
    (tmp_path / "alias.intent").write_text(SOURCE)
    build(tmp_path / "alias.intent", tmp_path / "alias.a", emit_header=True)
    (tmp_path / "main.c").write_text(C_CALLER)
    subprocess.run(["gcc", "-I", str(tmp_path), str(tmp_path / "main.c"), str(tmp_path / "alias.a"), "-o",
                    str(tmp_path / "main"), "-pthread", "-lm"], check=True)
    lines = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True, check=True).stdout.splitlines()
    assert lines[0] == "rev 0 7 0"
    assert lines[1] == "rev2 0 7 0"
    assert lines[2] == ("split -12 8 [split: parameters 'a' and 'b' overlap in memory and both are written, so the "
                        "result would depend on the order of the writes]")
    assert lines[3].startswith("fill2 -12 7 [fill2: parameter 'out' overlaps itself: it is written but its stride 1 "
                               "on axis 1 (extent 2)")
