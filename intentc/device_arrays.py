"""Arrays that live in GPU memory, as the PTX loader takes and returns them.

A kernel launched by ``intentc.ptx_loader`` may take its tensors from the device directly,
with no copy through the host: any object with ``__cuda_array_interface__`` (CuPy, Numba,
PyTorch) or with ``__dlpack__`` whose ``__dlpack_device__()`` is CUDA (kDLCUDA = 2) or CUDA
managed memory (kDLCUDAManaged = 13). ``device_array(value)`` describes such an object as a
``DeviceArray`` (address, shape, byte strides, NumPy dtype) and keeps what owns the memory
alive; it returns None for anything else, which the loader then treats as host memory.

Results that the loader allocates on the device are ``DeviceArray``s that own their memory
(freed when the last reference goes). They expose ``__cuda_array_interface__`` (version 3),
so ``cupy.asarray(r)``, ``torch.as_tensor(r, device="cuda")`` and Numba take them without a
copy, and ``to_numpy()`` copies them to the host.

This module needs NumPy and ctypes only, like the loader (docs/ptx-abi.md).
"""
from __future__ import annotations

import ctypes
import math
import types
import weakref
from dataclasses import dataclass

import numpy as np

__all__ = ["DeviceArray", "DeviceAllocation", "device_array", "span", "CUDA_DEVICE_TYPES"]

CUDA_DEVICE_TYPES = (2, 13)  # DLPack's kDLCUDA, kDLCUDAManaged
_LEGACY_DEFAULT_STREAM = 1  # DLPack's and the CUDA array interface's number for it


class DeviceAllocation:
    """Device memory the loader allocated; freed through its backend when unreferenced."""

    def __init__(self, backend, nbytes: int):
        self.backend = backend
        self.address = backend.alloc(nbytes)
        self.nbytes = nbytes
        self._free = weakref.finalize(self, backend.free, self.address)


@dataclass(frozen=True, eq=False)
class DeviceArray:
    """A strided view of device memory: ``address`` is element (0, ..., 0)'s device address
    and ``strides`` are in bytes, as NumPy's. ``owner`` keeps the memory alive (the
    producer's object, a consumed DLPack tensor, or a ``DeviceAllocation``)."""

    address: int
    shape: tuple
    strides: tuple
    dtype: np.dtype
    readonly: bool = False
    device_id: int | None = 0  # None: not said (the CUDA array interface); the current device
    owner: object = None
    stream: int | None = None  # a stream the producer still writes on: waited for before a launch

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    @property
    def flags(self):
        return types.SimpleNamespace(writeable=not self.readonly)

    @property
    def __cuda_array_interface__(self) -> dict:
        # stream None: the data are ready; the loader synchronizes before it returns.
        return {"shape": tuple(self.shape), "typestr": self.dtype.str, "descr": [("", self.dtype.str)],
                "data": (self.address, self.readonly), "strides": tuple(self.strides), "version": 3,
                "stream": None}

    def span(self) -> tuple[int, int]:
        """(lowest, highest + 1) byte offsets from ``address`` that the view touches."""
        return span(self)

    def to_numpy(self) -> np.ndarray:
        """A host copy (needs the backend of an array the loader allocated)."""
        backend = getattr(self.owner, "backend", None)
        if backend is None:
            raise TypeError("this device array was not allocated by intentc; copy it with its own library")
        low, high = self.span()
        host = np.empty(max(0, high - low), dtype=np.uint8)
        if high > low:
            backend.synchronize()
            backend.download(host.ctypes.data, self.address + low, high - low)
        return np.lib.stride_tricks.as_strided(host[-low:].view(self.dtype) if high > low else
                                               np.empty(0, self.dtype), self.shape, self.strides).copy()

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, device={self.device_id})"


def span(array) -> tuple[int, int]:
    """(lowest, highest + 1) byte offsets from the first element that a strided view (a NumPy
    array or a ``DeviceArray``) touches; (0, 0) when it has no elements."""
    if array.size == 0:
        return 0, 0
    low = sum(min(0, s * (n - 1)) for s, n in zip(array.strides, array.shape))
    high = sum(max(0, s * (n - 1)) for s, n in zip(array.strides, array.shape)) + array.itemsize
    return low, high


def device_array(value) -> DeviceArray | None:
    """``value`` as a ``DeviceArray`` when it lives in CUDA memory, else None. A producer that
    describes its memory in a way a kernel cannot take raises ``TypeError`` naming why."""
    if isinstance(value, (np.ndarray, DeviceArray)):
        return value if isinstance(value, DeviceArray) else None
    try:
        interface = getattr(value, "__cuda_array_interface__", None)
        refused = None
    except Exception as exc:  # noqa: BLE001 - e.g. PyTorch's bf16 tensors have DLPack only
        interface, refused = None, exc
    if interface is not None:
        return _from_array_interface(value, interface)
    device = getattr(value, "__dlpack_device__", None)
    if device is not None and hasattr(value, "__dlpack__"):
        kind, _ = (int(v) for v in device())
        if kind in CUDA_DEVICE_TYPES:
            return _from_dlpack(value)
    if refused is not None:
        raise TypeError(f"its __cuda_array_interface__ failed: {refused}")
    return None


def _contiguous_strides(shape, itemsize: int) -> tuple:
    strides, step = [], itemsize
    for extent in reversed(shape):
        strides.append(step)
        step *= max(1, extent)
    return tuple(reversed(strides))


def _from_array_interface(value, interface: dict) -> DeviceArray:
    if interface.get("mask") is not None:
        raise TypeError("a masked __cuda_array_interface__ array cannot be passed to a kernel")
    dtype = np.dtype(interface["typestr"])
    shape = tuple(int(n) for n in interface["shape"])
    strides = interface.get("strides")
    strides = _contiguous_strides(shape, dtype.itemsize) if strides is None else tuple(int(s) for s in strides)
    address, readonly = interface["data"]
    stream = interface.get("stream")
    return DeviceArray(int(address or 0), shape, strides, dtype, bool(readonly), device_id=None, owner=value,
                       stream=None if stream is None else int(stream))


# ---- DLPack (dlpack.h, the unversioned DLManagedTensor every producer gives by default) ------------------
class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype, _capsule_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
_capsule_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_is_valid.restype, _capsule_is_valid.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
_capsule_rename = ctypes.pythonapi.PyCapsule_SetName
_capsule_rename.restype, _capsule_rename.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
_USED = ctypes.c_char_p(b"used_dltensor")  # kept alive: the capsule keeps a pointer to the name


class _ConsumedTensor:
    """A DLPack tensor this process took over: its deleter runs when the last view goes."""

    def __init__(self, producer, managed: int):
        self.producer = producer
        self.managed = managed
        tensor = _DLManagedTensor.from_address(managed)
        if tensor.deleter:
            weakref.finalize(self, tensor.deleter, managed)


def _dlpack_dtype(code: int, bits: int) -> np.dtype:
    if code == 4 and bits == 16:
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    if code == 6 and bits == 8:
        return np.dtype(np.bool_)
    if code in (0, 1, 2) and bits in (8, 16, 32, 64):
        return np.dtype({0: "i", 1: "u", 2: "f"}[code] + str(bits // 8))
    raise TypeError(f"a DLPack tensor of type code {code} with {bits} bits cannot be passed to a kernel on the GPU")


def _from_dlpack(value) -> DeviceArray:
    try:
        capsule = value.__dlpack__(stream=_LEGACY_DEFAULT_STREAM)  # ordered before our launches
    except TypeError:  # a producer of the older protocol, without the stream keyword
        capsule = value.__dlpack__()
    if not _capsule_is_valid(capsule, b"dltensor"):
        raise TypeError("__dlpack__() did not return an unused DLPack capsule")
    managed = _capsule_pointer(capsule, b"dltensor")
    owner = _ConsumedTensor(value, managed)
    if _capsule_rename(capsule, _USED) != 0:  # the tensor is ours now: its deleter runs once, in owner
        raise TypeError("could not take over the DLPack capsule")
    tensor = _DLManagedTensor.from_address(managed).dl_tensor
    if tensor.dtype.lanes != 1:
        raise TypeError("a DLPack tensor with vector lanes cannot be passed to a kernel")
    dtype = _dlpack_dtype(tensor.dtype.code, tensor.dtype.bits)
    shape = tuple(tensor.shape[k] for k in range(tensor.ndim))
    strides = (_contiguous_strides(shape, dtype.itemsize) if not tensor.strides else
               tuple(tensor.strides[k] * dtype.itemsize for k in range(tensor.ndim)))
    return DeviceArray((tensor.data or 0) + tensor.byte_offset, shape, strides, dtype,
                       device_id=tensor.device.device_id, owner=owner)
