"""The PTX loader takes tensors that already live in device memory (CUDA array interface or
DLPack with a CUDA device) and uses them in place: no byte of them travels through the host,
results are allocated on the device, and the checks of docs/abi.md (dtype, rank, read-only,
aliasing A1, device) hold as for host arrays. Run on the block emulator
(tests/gpu/cpu_emulation.py), whose "device memory" is memory only the emulated kernels and
the backend's calls touch."""
from __future__ import annotations

import ctypes
import functools
import gc

import numpy as np
import pytest

from cpu_emulation import Emulator
from intentc import ptx_loader
from intentc.base.status import E_ALIAS, E_DEVICE, E_DTYPE, E_SHAPE, E_STRIDE, KernelError
from intentc.device_arrays import _DELETER, DeviceArray, _DLDataType, _DLDevice, _DLManagedTensor, _DLTensor
from intentc.driver import compile_source

SOURCE = """\
@intent.kernel
def saxpy(a: f32, x: f32[N], y: f32[N]) -> f32[N]:
    return a * x + y


@intent.kernel
def scale_into(x: f32[N], out: mut f32[N]):
    for i in I.parallel(I.domain(0, N)):
        out[i] = 2.0 * x[i]


@intent.kernel
def reverse_into(x: f32[N], out: mut f32[N]):
    for i in I.parallel(I.domain(0, N)):
        out[i] = x[N - 1 - i]


@intent.kernel
def bump(x: mut i64[R, C]):
    for r, c in I.parallel(I.domain(0, R), I.domain(0, C)):
        x[r, c] = x[r, c] + r * 100 + c


@intent.kernel
def row_sums(x: f32[R, C]) -> f32[R]:
    return I.sum(x, axis=1)
"""


class Counting(Emulator):
    """The emulator, counting what crosses between host and device."""

    def reset_counts(self):
        self.uploaded = self.downloaded = self.copied = 0

    def upload(self, ptr, host_address, nbytes):
        self.uploaded += nbytes
        super().upload(ptr, host_address, nbytes)

    def download(self, host_address, ptr, nbytes):
        self.downloaded += nbytes
        super().download(host_address, ptr, nbytes)

    def copy(self, dst, src, nbytes):
        self.copied += nbytes
        super().copy(dst, src, nbytes)


@functools.lru_cache(maxsize=None)
def _compiled():
    return compile_source(SOURCE, "device_arrays.intent", "sm_80", optimize_ir=False)


@pytest.fixture
def module():
    compiled = _compiled()
    backend = Counting(compiled.llvm_ir, max_blocks=3, max_threads=32)
    backend.reset_counts()
    return ptx_loader.Module("", compiled.manifest, backend)


class CudaArray:
    """A stand-in for a CuPy/Numba array: memory the backend allocated, described by
    ``__cuda_array_interface__`` (version 3)."""

    def __init__(self, backend, host: np.ndarray, readonly=False, strides=None, offset=0):
        self.backend, self.shape, self.dtype = backend, host.shape, host.dtype
        self.nbytes = host.nbytes + offset
        self.base = backend.alloc(self.nbytes)
        Emulator.upload(backend, self.base + offset, np.ascontiguousarray(host).ctypes.data, host.nbytes)
        self.address, self.readonly, self.strides = self.base + offset, readonly, strides

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.address, self.readonly),
                "strides": self.strides, "version": 3}

    def get(self) -> np.ndarray:
        host = np.empty(self.shape, self.dtype)
        Emulator.download(self.backend, host.ctypes.data, self.address, host.nbytes)
        return host


def _host(value) -> np.ndarray:
    if isinstance(value, DeviceArray):
        return value.to_numpy()
    return value.get()


def test_device_inputs_stay_on_the_device(module):
    backend = module.backend
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal(1000).astype(np.float32), rng.standard_normal(1000).astype(np.float32)
    expected = module.saxpy(1.5, x, y)  # the host path
    backend.reset_counts()
    result = module.saxpy(1.5, CudaArray(backend, x), CudaArray(backend, y))
    assert isinstance(result, DeviceArray) and result.shape == (1000,) and result.dtype == np.float32
    status_bytes = module.manifest["status"]["bytes"]
    assert backend.uploaded == 0 and backend.downloaded == status_bytes and backend.copied == 0
    assert _host(result).tobytes() == expected.tobytes()
    # The result is itself a CUDA array: another library (or this loader) takes it in place.
    again = module.saxpy(1.0, result, CudaArray(backend, np.zeros(1000, np.float32)))
    assert _host(again).tobytes() == expected.tobytes()


def test_written_device_arrays_are_written_in_place(module):
    backend = module.backend
    x = np.arange(12, dtype=np.int64).reshape(3, 4)
    device = CudaArray(backend, x)
    backend.reset_counts()
    assert module.bump(device) is None
    assert backend.uploaded == 0 and backend.copied == 0
    np.testing.assert_array_equal(device.get(), x + np.arange(3)[:, None] * 100 + np.arange(4))
    out = CudaArray(backend, np.zeros(5, np.float32))
    module.scale_into(np.arange(5, dtype=np.float32), out)  # a host input, a device output
    np.testing.assert_array_equal(out.get(), 2 * np.arange(5, dtype=np.float32))


def test_strided_views_and_offsets(module):
    backend = module.backend
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    # Every other column of x, starting at column 1, as a producer with byte strides describes it.
    view = CudaArray(backend, x, strides=(24, 8), offset=0)
    view.shape, view.address = (4, 3), view.address + 4
    np.testing.assert_array_equal(_host(module.row_sums(view)), x[:, 1::2].sum(axis=1))


def test_out_on_the_device(module):
    backend = module.backend
    out = CudaArray(backend, np.full(4, -1, np.float32))
    returned = module.saxpy(2.0, CudaArray(backend, np.ones(4, np.float32)), np.ones(4, np.float32), out=out)
    assert returned is out
    np.testing.assert_array_equal(out.get(), np.full(4, 3, np.float32))


def test_an_input_overlapping_an_output_is_read_from_a_device_copy(module):
    backend = module.backend
    data = np.arange(8, dtype=np.float32)
    device = CudaArray(backend, data)
    backend.reset_counts()
    module.reverse_into(device, device)  # in place: every input is read before any write (A1)
    assert backend.copied == data.nbytes and backend.uploaded == 0
    np.testing.assert_array_equal(device.get(), data[::-1])


def test_written_device_arrays_that_overlap_are_refused(module):
    backend = module.backend
    device = CudaArray(backend, np.zeros((3, 4), np.int64))
    overlapping = CudaArray(backend, np.zeros((3, 4), np.int64))
    overlapping.address, overlapping.strides = device.address, (0, 8)  # every row is row 0
    with pytest.raises(KernelError) as info:
        module.bump(overlapping)
    assert info.value.code == E_STRIDE  # stride 0 on a written axis
    overlapping.strides = (8, 8)  # rows shifted by one element: row r and r+1 share elements
    with pytest.raises(KernelError) as info:
        module.bump(overlapping)
    assert info.value.code == E_ALIAS and "overlaps itself" in str(info.value)
    np.testing.assert_array_equal(device.get(), np.zeros((3, 4), np.int64))


def test_the_entry_checks_hold_for_device_arrays(module):
    backend = module.backend
    with pytest.raises(KernelError) as info:
        module.saxpy(1.0, CudaArray(backend, np.ones(4, np.float64)), CudaArray(backend, np.ones(4, np.float32)))
    assert info.value.code == E_DTYPE
    readonly = CudaArray(backend, np.zeros(4, np.float32), readonly=True)
    with pytest.raises(KernelError) as info:
        module.scale_into(np.ones(4, np.float32), readonly)
    assert info.value.code == E_STRIDE and "read-only" in str(info.value)
    out = CudaArray(backend, np.full(3, 7, np.float32))
    with pytest.raises(KernelError) as info:  # S1, checked before anything is written
        module.scale_into(CudaArray(backend, np.ones(4, np.float32)), out)
    assert info.value.code == E_SHAPE
    np.testing.assert_array_equal(out.get(), np.full(3, 7, np.float32))


# ---- DLPack ------------------------------------------------------------------------------------------
def test_the_dlpack_structs_have_dlpack_h_layout():
    """dlpack.h on a 64-bit machine: DLTensor is 48 bytes (data 0, device 8, ndim 16, dtype 20,
    shape 24, strides 32, byte_offset 40) and DLManagedTensor 64 (deleter at 56)."""
    offsets = {name: getattr(_DLTensor, name).offset for name, _ in _DLTensor._fields_}
    assert offsets == {"data": 0, "device": 8, "ndim": 16, "dtype": 20, "shape": 24, "strides": 32,
                       "byte_offset": 40}
    assert ctypes.sizeof(_DLTensor) == 48 and ctypes.sizeof(_DLManagedTensor) == 64
    assert _DLManagedTensor.deleter.offset == 56 and ctypes.sizeof(_DLDataType) == 4


_new_capsule = ctypes.pythonapi.PyCapsule_New
_new_capsule.restype, _new_capsule.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class DLPackArray:
    """A stand-in for a PyTorch/JAX CUDA tensor: ``__dlpack__`` hands out an unversioned
    DLManagedTensor whose deleter counts how often it runs."""

    def __init__(self, backend, host: np.ndarray, device=(2, 0), byte_offset=0, strides=None):
        self.backend, self.host, self.device = backend, host, device
        self.base = backend.alloc(host.nbytes + byte_offset)
        Emulator.upload(backend, self.base + byte_offset, np.ascontiguousarray(host).ctypes.data, host.nbytes)
        self.byte_offset, self.strides = byte_offset, strides
        self.deleted, self.streams = 0, []
        self._keep = []

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None):
        self.streams.append(stream)
        shape = (ctypes.c_int64 * self.host.ndim)(*self.host.shape)
        strides = None if self.strides is None else (ctypes.c_int64 * self.host.ndim)(*self.strides)
        code = {"f": 2, "i": 0, "u": 1}[self.host.dtype.kind]
        deleter = _DELETER(lambda ptr: setattr(self, "deleted", self.deleted + 1))
        managed = _DLManagedTensor(_DLTensor(self.base, _DLDevice(*self.device), self.host.ndim,
                                             _DLDataType(code, self.host.dtype.itemsize * 8, 1), shape,
                                             strides, self.byte_offset), None, deleter)
        self._keep += [shape, strides, deleter, managed]
        return _new_capsule(ctypes.addressof(managed), b"dltensor", None)

    def get(self) -> np.ndarray:
        host = np.empty_like(self.host)
        Emulator.download(self.backend, host.ctypes.data, self.base + self.byte_offset, host.nbytes)
        return host


def test_dlpack_cuda_tensors_are_taken_in_place(module):
    backend = module.backend
    x = np.arange(6, dtype=np.float32)
    dx, dy = DLPackArray(backend, x, byte_offset=16), DLPackArray(backend, np.ones(6, np.float32), strides=(1,))
    backend.reset_counts()
    result = module.saxpy(3.0, dx, dy)
    assert backend.uploaded == 0
    np.testing.assert_array_equal(_host(result), 3 * x + 1)
    assert dx.streams == [1]  # asked for the legacy default stream, on which the loader launches
    del result
    gc.collect()
    assert dx.deleted == 1 and dy.deleted == 1  # each consumed tensor released once


def test_dlpack_written_in_place(module):
    backend = module.backend
    data = DLPackArray(backend, np.zeros((2, 3), np.int64))
    module.bump(data)
    np.testing.assert_array_equal(data.get(), [[0, 1, 2], [100, 101, 102]])


def test_dlpack_on_another_device_is_refused(module):
    backend = module.backend
    with pytest.raises(KernelError) as info:
        module.saxpy(1.0, DLPackArray(backend, np.ones(4, np.float32), device=(2, 1)), np.ones(4, np.float32))
    assert info.value.code == E_DEVICE and "device 1" in str(info.value)
    with pytest.raises(KernelError) as info:  # ROCm memory is neither host nor CUDA memory
        module.saxpy(1.0, DLPackArray(backend, np.ones(4, np.float32), device=(10, 0)), np.ones(4, np.float32))
    assert info.value.code == E_DEVICE and "rocm" in str(info.value)
