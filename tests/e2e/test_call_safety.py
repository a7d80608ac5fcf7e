"""Calls that must be refused with a status or TypeError naming the parameter, writing
nothing (docs/abi.md): non-native byte order, read-only or non-buffer objects for written
parameters, arrays on another device, extents past 64 bits, a device id other than 0, and
a sanitizer's refusal. Compiled (``intentc.load``, and raw descriptors as a C caller passes
them) and interpreted alike.
"""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

import intentc
from intentc.base.status import E_DEVICE, E_DTYPE, E_SANITIZER, E_SHAPE, E_STRIDE
from intentc.driver import build, frontend
from intentc.loader import IntentTensor, _Device, _DType

SOURCE = """\
import intent as I

@intent.kernel
def scale(x: f32[N], out: mut f32[N]):
    for i in I.parallel(x.axis(0)):
        out[i] = x[i] * 2.0

@intent.kernel
def twice(x: f32[N]) -> f32[N]:
    return x * 2.0

@intent.kernel
def outer(x: u8[R], y: u8[C]) -> u8[R * C]:
    b = I.buffer(u8, [R * C], fill=0)
    return b

@intent.kernel
def grid(x: u8[R], y: u8[C], out: mut u8[4]):
    b = I.buffer(f32, [R, C], fill=1.0)
    out[0] = I.cast(b[R - 1, C - 1], u8)

@intent.kernel
def permute(x: f32[N], perm: i64[N], out: mut f32[N]):
    I.scatter(out, perm, x, unique=True)

@intent.kernel
def scratch_rows(x: f32[N], rows: i64, cols: i64) -> f32[N]:
    b = I.buffer(f32, [rows * cols], fill=1.0)
    return x + b[0]
"""


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    folder = tmp_path_factory.mktemp("safety")
    (folder / "k.intent").write_text(SOURCE)
    build(folder / "k.intent", folder / "k.so")
    build(folder / "k.intent", folder / "u.so", sanitize=("unique",))
    return intentc.load(folder / "k.so"), frontend(SOURCE, "k.intent"), intentc.load(folder / "u.so")


def sides(kernels, name):
    compiled, module, _ = kernels
    return [("compiled", getattr(compiled, name)),
            ("interpreted", lambda *a, **k: intentc.interpret(module, name, *a, **k))]


def test_non_native_byte_order(kernels):
    swapped = np.arange(8, dtype=np.float32).astype(">f4" if np.little_endian else "<f4")
    for side, call in sides(kernels, "scale"):
        out = np.zeros(8, np.float32)
        with pytest.raises(intentc.KernelError) as info:
            call(swapped, out)
        assert info.value.code == E_DTYPE and "parameter 'x'" in str(info.value), side
        assert "byte order" in str(info.value)
        assert not out.any()
        with pytest.raises(intentc.KernelError) as info:
            call(np.ones(8, np.float32), np.zeros(8, swapped.dtype))
        assert info.value.code == E_DTYPE and "parameter 'out'" in str(info.value), side
    native = swapped.astype(np.float32)
    for side, call in sides(kernels, "twice"):
        np.testing.assert_array_equal(call(native), np.arange(8, dtype=np.float32) * 2, err_msg=side)


def test_written_parameters_need_writable_memory(kernels):
    x = np.ones(4, np.float32)
    readonly = np.zeros(4, np.float32)
    readonly.flags.writeable = False
    for side, call in sides(kernels, "scale"):
        for bad in ([0.0] * 4, (0.0,) * 4):  # a copy would take the writes
            with pytest.raises(TypeError, match="parameter 'out' is written"):
                call(x, bad)
        with pytest.raises(intentc.KernelError) as info:
            call(x, readonly)
        assert info.value.code == E_STRIDE and "'out'" in str(info.value), side
        with pytest.raises(intentc.KernelError) as info:
            call(x, memoryview(bytes(16)).cast("f"))  # a read-only buffer
        assert info.value.code == E_STRIDE and "'out'" in str(info.value), side
        memory = bytearray(16)  # a writable buffer is written in place
        call(x, memoryview(memory).cast("f"))
        np.testing.assert_array_equal(np.frombuffer(memory, np.float32), [2, 2, 2, 2], err_msg=side)
    for side, call in sides(kernels, "twice"):  # a read-only buffer is fine for a read-only parameter
        np.testing.assert_array_equal(call(memoryview(np.float32([1, 2]).tobytes()).cast("f")), [2, 4], err_msg=side)


class _OnDevice:
    """An array-like that says it lives on a GPU, as CuPy and PyTorch tensors do."""

    def __init__(self, dlpack: bool):
        if dlpack:
            self.__dlpack_device__ = lambda: (2, 1)  # kDLCUDA, device 1
            self.__dlpack__ = lambda *a, **k: pytest.fail("a device array was read")
        else:
            self.__cuda_array_interface__ = {"shape": (4,), "typestr": "<f4", "data": (0, False), "version": 3}


def test_device_arrays_are_refused(kernels):
    for side, call in sides(kernels, "scale"):
        for dlpack in (True, False):
            out = np.zeros(4, np.float32)
            with pytest.raises(intentc.KernelError) as info:
                call(_OnDevice(dlpack), out)
            assert info.value.code == E_DEVICE and "parameter 'x'" in str(info.value), side
            assert ("cuda:1" if dlpack else "__cuda_array_interface__") in str(info.value)
            assert not out.any()


def _descriptor(shape, strides, device=(1, 0), data=None, keep=None):
    """An IntentTensor as a C caller builds it (u8 or f32 by ``dtype``)."""
    n = len(shape)
    extents = (ctypes.c_int64 * (2 * max(1, n)))(*shape, *strides)
    keep.append(extents)
    base = ctypes.addressof(extents)
    pointer = ctypes.POINTER(ctypes.c_int64)
    return IntentTensor(data, _Device(*device), n, _DType(1, 8, 1), ctypes.cast(base, pointer),
                        ctypes.cast(base + 8 * max(1, n), pointer), 0)


def test_result_extents_past_64_bits(kernels):
    """R * C with R = 2^32 + 1, C = 2^32 wraps to 2^32: refused before any write or allocation."""
    compiled, module, _ = kernels
    big_r, big_c = 2**32 + 1, 2**32
    guard = np.full(64, 7, np.uint8)  # what an accepted call would start writing
    keep = []
    x = _descriptor([big_r], [0], data=guard.ctypes.data, keep=keep)
    y = _descriptor([big_c], [0], data=guard.ctypes.data, keep=keep)
    out = _descriptor([2**32], [1], data=guard.ctypes.data, keep=keep)
    rc = compiled.outer.func(ctypes.byref(x), ctypes.byref(y), ctypes.byref(out))
    assert rc == E_SHAPE and compiled.last_error() == "outer: the extent R*C of 'out' does not fit in 64 bits"
    assert (guard == 7).all()
    xs = np.broadcast_to(np.uint8(1), (big_r,))
    ys = np.broadcast_to(np.uint8(1), (big_c,))
    for side, call in sides(kernels, "outer"):
        with pytest.raises(intentc.KernelError) as info:  # allocating the result
            call(xs, ys)
        assert info.value.code == E_SHAPE and "R*C" in str(info.value), side
        with pytest.raises(intentc.KernelError) as info:  # a caller's out= of the wrapped extent
            call(xs, ys, out=np.lib.stride_tricks.as_strided(guard, (2**32,), (0,)))
        assert info.value.code in (E_SHAPE, E_STRIDE), side
        assert (guard == 7).all()
    # each extent fits, their product does not: the element count
    for side, call in sides(kernels, "outer"):
        with pytest.raises(intentc.KernelError) as info:
            call(np.broadcast_to(np.uint8(1), (2**62,)), np.broadcast_to(np.uint8(1), (2,)))
        assert info.value.code == E_SHAPE, side


def test_buffer_sizes_past_64_bits(kernels):
    """A kernel-local buffer of 2^32 x 2^32 f32 (2^66 bytes, 0 when wrapped) is refused, not
    allocated short."""
    wide = np.broadcast_to(np.uint8(1), (2**32,))
    for side, call in sides(kernels, "grid"):
        out = np.zeros(4, np.uint8)
        with pytest.raises(intentc.KernelError) as info:
            call(wide, wide, out)
        assert info.value.code == E_SHAPE and "the buffer 'b' has more bytes than 64 bits can count" in str(info.value)
        call(wide[:3], wide[:5], out)
        assert out.tolist() == [1, 0, 0, 0], side


def test_byte_offsets_past_64_bits(kernels):
    compiled = kernels[0]
    guard = np.zeros(64, np.uint8)
    keep = []
    for shape, strides in (([3], [2**62]), ([2], [-(2**63) + 1]), ([2**61], [1]), ([2], [2**61])):
        x = _descriptor(shape, strides, data=guard.ctypes.data, keep=keep)
        x.dtype = _DType(2, 32, 1)
        out = _descriptor([2], [1], data=guard.ctypes.data, keep=keep)
        out.dtype = _DType(2, 32, 1)
        rc = compiled.scale.func(ctypes.byref(x), ctypes.byref(out))
        assert rc == E_SHAPE, (shape, strides, compiled.last_error())
        assert "do not fit in 64 bits" in compiled.last_error() or "int64" in compiled.last_error()
    assert not guard.any()


def test_device_field_is_validated(kernels):
    """docs/abi.md: the device must be {1 (CPU), 0}."""
    compiled = kernels[0]
    data = np.ones(4, np.float32)
    out = np.zeros(4, np.float32)
    keep = []
    for device, words in (((1, 7), "cpu:7"), ((2, 0), "cuda:0"), ((1, -1), "cpu:-1")):
        x = _descriptor([4], [1], device=device, data=data.ctypes.data, keep=keep)
        x.dtype = _DType(2, 32, 1)
        o = _descriptor([4], [1], data=out.ctypes.data, keep=keep)
        o.dtype = _DType(2, 32, 1)
        assert compiled.scale.func(ctypes.byref(x), ctypes.byref(o)) == E_DEVICE
        assert words in compiled.last_error() and "'x'" in compiled.last_error()
    assert not out.any()


def test_unique_sanitizer_refusal_leaves_outputs_untouched(kernels):
    _, module, sanitized = kernels
    x = np.arange(6, dtype=np.float32) + 1
    dup = np.array([3, 0, 5, 3, 4, 2])
    before = np.full(6, -1.0, np.float32)
    out = before.copy()
    with pytest.raises(intentc.KernelError) as info:
        sanitized.permute(x, dup, out)
    assert info.value.code == E_SANITIZER
    np.testing.assert_array_equal(out, before)
    out = before.copy()
    with pytest.raises(Exception, match="M4"):
        intentc.interpret(module, "permute", x, dup, out, sanitize="unique")
    np.testing.assert_array_equal(out, before)
    sanitized.permute(x, np.array([3, 0, 5, 1, 4, 2]), out)  # a correct call still writes
    np.testing.assert_array_equal(out, [2, 4, 6, 1, 5, 3])


def test_a_wrong_buffer_extent_is_a_located_shape_error(kernels):
    """A run-time I.buffer extent below zero, or one whose + - * wraps past 64 bits, fails
    where the buffer is made (M2), with the source location, on both sides: it never reaches
    the allocator as a huge unsigned size or a wrapped small one."""
    x = np.ones(4, np.float32)
    for side, call in sides(kernels, "scratch_rows"):
        np.testing.assert_array_equal(call(x, 2, 3), x + 1, err_msg=side)
        for rows, cols, words in ((-1, 5, "I.buffer: extent -5 on axis 0 is negative"),
                                  (2 ** 61, 4, "I.buffer: the extent 2305843009213693952 * 4 does not fit in 64 bits"),
                                  (2 ** 32 + 1, 2 ** 32, "does not fit in 64 bits"),
                                  (-1, -(2 ** 63), "does not fit in 64 bits")):
            with pytest.raises(intentc.KernelError) as info:
                call(x, rows, cols)
            assert info.value.code == E_SHAPE, side
            assert words in str(info.value) and "k.intent:" in str(info.value), (side, str(info.value))
        np.testing.assert_array_equal(call(x, -3, -5), x + 1, err_msg=side)  # a product of negatives: 15
