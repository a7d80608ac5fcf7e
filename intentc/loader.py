"""``intentc.load(path)``: call compiled kernels on NumPy arrays.

The shared library's embedded manifest (``intent_module_manifest``) says every kernel's
parameters; each becomes a Python callable that builds ``IntentTensor`` descriptors over
the arrays (any strides, in elements), allocates returned tensors from the declared
extents, calls the kernel and raises ``KernelError`` with the runtime's message when it
fails. The argument conversions and the checks before the call are the calling
convention of ``intentc/kir/calling.py``, which the reference interpreter follows too;
the runtime, not Python, checks dtypes, ranks, extents and aliasing, so C and Python
callers get the same messages. The one exception: f4e2m1 arrays travel packed, each into
its own buffer, so the runtime cannot see how the caller's arrays overlap; a call with one
runs the runtime's checks in Python first (``kir/calling.py``, in the runtime's words).
"""
from __future__ import annotations

import ctypes
import json
import os
import threading
from pathlib import Path

from intentc.base.status import KernelError
from intentc.kir.calling import (Parameter, as_array, bind_arguments, check_aliasing, check_entry_tensor,
                                 check_extent_expressions, check_tensor_argument, dlpack_of, result_arrays,
                                 returned, scalar_value)
from intentc.kir.mx import FORMATS as MX_FORMATS

__all__ = ["load", "Module", "Kernel", "KernelError", "IntentTensor"]


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class IntentTensor(ctypes.Structure):
    """The ABI's tensor descriptor (layout-compatible with DLPack's DLTensor)."""

    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32), ("dtype", _DType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


_SCALAR_CTYPES = {"bool": ctypes.c_uint8, "i8": ctypes.c_int8, "i16": ctypes.c_int16, "i32": ctypes.c_int32,
                  "i64": ctypes.c_int64, "index": ctypes.c_int64, "u8": ctypes.c_uint8, "u16": ctypes.c_uint16,
                  "u32": ctypes.c_uint32, "u64": ctypes.c_uint64, "f32": ctypes.c_float, "f64": ctypes.c_double,
                  "f16": ctypes.c_uint16, "bf16": ctypes.c_uint16}

_SCALAR_CTYPES.update({name: ctypes.c_uint8 for name in MX_FORMATS})  # MX scalars pass their code


class Kernel:
    def __init__(self, module: "Module", spec: dict):
        self.module = module
        self.name = spec["name"]
        self.spec = spec
        self.params = [Parameter.from_manifest(p) for p in spec["params"]]
        self.inputs = [p for p in self.params if not p.result]
        self.results = [p for p in self.params if p.result]
        self.written = {p.name for p in self.params if p.written}
        self.packed = any(p.kind == "tensor" and p.dtype == "f4e2m1" for p in self.params)
        self.func = getattr(module.lib, spec.get("symbol", self.name))  # --prefix: PREFIX + name
        self.func.restype = ctypes.c_int32
        self.func.argtypes = [ctypes.POINTER(IntentTensor) if p.kind == "tensor" else
                              ctypes.c_void_p if p.result else _SCALAR_CTYPES[p.dtype] for p in self.params]
        self._fast = _FastCall(self) if not self.packed else None
        self.__doc__ = self.signature()

    def signature(self) -> str:
        def show(p):
            default = f" = {p.default[0]!r}" if p.default else ""
            if p.kind == "scalar":
                return f"{p.name}: {p.dtype}{default}"
            mut = "mut " if p.mutable else ""
            optional = " | None" if p.optional else ""
            return f"{p.name}: {mut}{p.dtype}[{', '.join(str(e) for e in p.extents)}]{optional}{default}"

        results = ", ".join(p.dtype if p.kind == "scalar" else f"{p.dtype}[{', '.join(str(e) for e in p.extents)}]"
                            for p in self.results)
        return f"{self.name}({', '.join(show(p) for p in self.inputs)})" + (f" -> {results}" if results else "")

    def __repr__(self) -> str:
        return f"<intent kernel {self.signature()}>"

    def __call__(self, *args, out=None, **kwargs):
        """The calling convention of intentc/kir/calling.py; the runtime checks the rest."""
        fast = self._fast
        if fast is not None and not kwargs and len(args) == fast.arity:
            outcome = fast(args, out)
            if outcome is not _SLOW:
                return outcome
        return self._call(args, out, kwargs)

    def _call(self, args, out, kwargs):
        """Any call: every argument the calling convention allows, with its checks here."""
        values = bind_arguments(self.name, self.inputs, args, kwargs)
        arrays = {p.name: as_array(values[p.name], p, self.name) for p in self.inputs if p.kind == "tensor"}
        outs = result_arrays(self.name, self.inputs, self.results, arrays, out, values)
        if self.packed:
            self._check_packed(values, arrays, outs)
        keep = []
        call_args = []
        for p in self.params:
            if p.kind == "scalar" and p.result:  # a pointer to its 0-d array, written on success
                call_args.append(ctypes.c_void_p(outs[p.name].ctypes.data))
                continue
            if p.kind == "scalar":
                call_args.append(_SCALAR_CTYPES[p.dtype](scalar_value(values[p.name], p, self.name)))
                continue
            array = outs[p.name] if p.result else arrays[p.name]
            if array is None:  # an absent optional tensor: a NULL descriptor
                call_args.append(None)
                continue
            check_tensor_argument(array, p, self.name)
            descriptor = _descriptor(array, p.name, keep)
            call_args.append(ctypes.byref(descriptor))
        code = self.func(*call_args)
        for item in keep:  # f4e2m1 arguments travel packed: unpack the written ones
            if isinstance(item, _PackedF4) and item.name in self.written:
                item.write_back()
        if code != 0:
            raise KernelError(code, self.module.last_error())
        return returned(self.results, outs)


    def _check_packed(self, values: dict, arrays: dict, outs: dict) -> None:
        """The runtime's entry checks on the caller's arrays, for a kernel whose f4e2m1
        arguments travel as packed copies (the runtime sees only the copies)."""
        bound = {p.name: outs[p.name] if p.result else arrays[p.name] for p in self.params
                 if p.kind == "tensor" and (p.result or arrays[p.name] is not None)}
        for p in self.params:
            if p.kind == "scalar" and p.result:
                continue
            if p.kind == "scalar":
                scalar_value(values[p.name], p, self.name)
            elif p.name in bound:
                check_tensor_argument(bound[p.name], p, self.name)
        tensors = [(p, bound[p.name]) for p in self.params if p.kind == "tensor" and p.name in bound]
        for p, array in tensors:
            check_entry_tensor(self.name, p, array)
        check_extent_expressions(self.name, self.params, bound, values)
        check_aliasing(self.name, tensors)  # the packed copies are the snapshots of overlapping inputs


_SLOW = object()  # what _FastCall returns for a call it leaves to the general path


def _capsule_pointer_function():
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.py_object, ctypes.c_char_p]
    return get


_CAPSULE_POINTER = _capsule_pointer_function()


class _FastCall:
    """The common call, prepared when the kernel is loaded: positional arguments only, every
    tensor (``out=`` included) a NumPy array of exactly the parameter's dtype. Each array's
    DLPack export is the descriptor (a DLTensor is an IntentTensor: docs/abi.md), so a call
    builds nothing in Python and the runtime makes every check, as for any call. NumPy
    refuses to export what the general path refuses too (a read-only array, non-native byte
    order, a byte stride that is not a multiple of the element size); any such argument, a
    scalar that does not convert, or anything else unusual returns ``_SLOW`` before the
    kernel runs, and the general path then makes the call or gives its error."""

    def __init__(self, kernel: "Kernel"):
        import numpy as np

        from intentc.kir.calling import numpy_dtype

        self.kernel = kernel
        self.arity = len(kernel.inputs)
        tensor_results = [p for p in kernel.results if p.kind == "tensor"]
        self.results = len(tensor_results)
        self.ndarray = np.ndarray
        self.empty = np.empty
        index = {p.name: i for i, p in enumerate(kernel.inputs)}
        result_index = {p.name: i for i, p in enumerate(tensor_results)}
        # Scalar results: a 0-d array each, made per call; what the call returns, in declared order.
        try:
            self.scalars = tuple(numpy_dtype(p.dtype) for p in kernel.results if p.kind == "scalar")
        except ImportError:  # bf16 without ml_dtypes: the general path says so
            self.scalars = None
        scalar_index = {p.name: i for i, p in enumerate(p for p in kernel.results if p.kind == "scalar")}
        self.order = tuple((p.kind == "scalar", scalar_index[p.name] if p.kind == "scalar" else result_index[p.name])
                           for p in kernel.results)
        steps, argtypes = [], []
        for p in kernel.params:
            if p.kind == "scalar" and p.result:
                steps.append((None, True, scalar_index[p.name], None))
                argtypes.append(ctypes.c_void_p)
            elif p.kind == "tensor":
                try:
                    dtype = numpy_dtype(p.dtype)
                except ImportError:  # bf16 or MX without ml_dtypes: the general path says so
                    dtype = None
                steps.append((True, p.result, result_index[p.name] if p.result else index[p.name], dtype))
                argtypes.append(ctypes.c_void_p)
            else:
                convert = float if p.dtype in ("f32", "f64") else \
                    (lambda value, p=p: scalar_value(value, p, kernel.name))
                steps.append((False, False, index[p.name], convert))
                argtypes.append(_SCALAR_CTYPES[p.dtype])
        self.steps = tuple(steps)
        address = ctypes.cast(kernel.func, ctypes.c_void_p).value
        self.function = ctypes.CFUNCTYPE(ctypes.c_int32, *argtypes)(address)

    def __call__(self, args: tuple, out):
        if self.results:
            if out is None:
                return _SLOW  # returned tensors to allocate: the general path sizes them
            outs = (out,) if self.results == 1 else out
            if type(outs) is not tuple or len(outs) != self.results:
                return _SLOW
        elif out is not None:
            return _SLOW
        else:
            outs = ()
        if self.scalars is None:
            return _SLOW
        ndarray, pointer = self.ndarray, _CAPSULE_POINTER
        values, capsules = [], []
        keep, add = capsules.append, values.append
        scalars = [self.empty((), dtype) for dtype in self.scalars]
        try:
            for is_tensor, is_result, position, how in self.steps:
                if is_tensor is None:  # a scalar result: its 0-d array's data pointer
                    add(scalars[position].__array_interface__["data"][0])
                elif is_tensor:
                    array = outs[position] if is_result else args[position]
                    if type(array) is not ndarray or array.dtype is not how:
                        return _SLOW
                    capsule = array.__dlpack__()
                    keep(capsule)
                    add(pointer(capsule, b"dltensor"))
                else:
                    add(how(args[position]))
        except Exception:  # noqa: BLE001 - whatever failed, the general path reports it
            return _SLOW
        code = self.function(*values)
        del capsules  # the exports end after the call (their deleters run)
        if code != 0:
            raise KernelError(code, self.kernel.module.last_error())
        if not scalars:
            if not self.results:
                return None
            return outs[0] if self.results == 1 else outs
        result = tuple(scalars[k][()] if is_scalar else outs[k] for is_scalar, k in self.order)
        return result[0] if len(result) == 1 else result


def _descriptor(array, name: str, keep: list) -> IntentTensor:
    """The descriptor of a checked array (``keep`` holds what it points to during the call)."""
    if array.dtype.name == "float4_e2m1fn":  # packed two per byte for the call (kir/mx.py)
        return _PackedF4(array, name, keep).descriptor
    code, bits = dlpack_of(array.dtype)
    itemsize = array.dtype.itemsize
    ndim = array.ndim
    extents = (ctypes.c_int64 * (2 * max(1, ndim)))(*array.shape, *(s // itemsize for s in array.strides))
    keep += [extents, array]
    base = ctypes.addressof(extents)
    data = array.ctypes.data if array.size else (array.ctypes.data or None)
    # One array holds the extents then the strides; the descriptor points into it.
    return IntentTensor(data, _DEVICE_CPU, ndim, _DType(code, bits, 1),
                        ctypes.cast(base, _I64_PTR), ctypes.cast(base + 8 * max(1, ndim), _I64_PTR), 0)


_DEVICE_CPU = _Device(1, 0)
_I64_PTR = ctypes.POINTER(ctypes.c_int64)


class Module:
    """A loaded shared library: one attribute per kernel."""

    def __init__(self, path: str | os.PathLike):
        self.path = str(Path(path).resolve())
        self.lib = _open_library(self.path)
        try:
            address = ctypes.addressof(ctypes.c_char.in_dll(self.lib, "intent_module_manifest"))
        except ValueError:
            raise ValueError(f"{path} is not an Intent module (no intent_module_manifest)") from None
        self.manifest = json.loads(ctypes.string_at(address).decode("utf-8"))
        self._last_error = self.lib.intent_last_error
        self._last_error.restype = ctypes.c_char_p
        self.kernels = {spec["name"]: Kernel(self, spec) for spec in self.manifest["kernels"]}

    def last_error(self) -> str:
        message = self._last_error()
        return message.decode("utf-8", "replace") if message else ""

    def set_num_threads(self, n: int) -> None:
        self.lib.intent_set_num_threads(ctypes.c_int32(n))

    def __getattr__(self, name: str) -> Kernel:
        kernels = self.__dict__.get("kernels", {})
        if name in kernels:
            return kernels[name]
        raise AttributeError(f"module {self.__dict__.get('path')} has no kernel '{name}'")

    def __dir__(self):
        return list(super().__dir__()) + list(self.kernels)


def load(path: str | os.PathLike) -> Module:
    """Load a shared library built by ``intentc build`` and return its kernels: the code the
    file holds now. After a rebuild (``intentc build`` replaces the file by a rename) this is
    the new code, while modules loaded before keep theirs."""
    return Module(path)


# The dynamic loader hands back the library it loaded before under the same name, even
# when the file now at that path is another (a rebuild renames a new file into place). So
# each file (device and inode) is opened under a name of its own, /proc/self/fd/N of a
# descriptor kept open for the life of the process: N is never reused, and a file loaded
# again gets the name it was first loaded under (the loader then returns that library).
# Libraries stay mapped anyway (intentc links them -z nodelete), so this costs one
# descriptor per distinct file loaded.
_OPEN_LOCK = threading.Lock()
_NAMES: dict = {}  # (st_dev, st_ino) -> the name the file was loaded under
_MODE = os.RTLD_LOCAL | os.RTLD_NOW


def _open_library(path: str) -> ctypes.CDLL:
    with _OPEN_LOCK:
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return ctypes.CDLL(path, mode=_MODE)  # the loader's own message names what is wrong
        info = os.fstat(fd)
        identity = (info.st_dev, info.st_ino)
        name = _NAMES.get(identity)
        if name is not None:
            os.close(fd)
            return ctypes.CDLL(name, mode=_MODE)
        name = f"/proc/self/fd/{fd}"
        if not os.path.exists(name):  # no /proc: the path itself (a rebuilt file then loads the old code)
            os.close(fd)
            return ctypes.CDLL(path, mode=_MODE)
        try:
            library = ctypes.CDLL(name, mode=_MODE)
        except OSError as exc:
            os.close(fd)
            raise OSError(f"cannot load {path}: {str(exc).replace(name, path)}") from None
        _NAMES[identity] = name
        return library


class _PackedF4:
    """An f4e2m1 array as the ABI takes it: its codes packed two per byte (element offset e
    in the low nibble of byte e >> 1 when e is even), with the array's own strides in
    elements, so the runtime sees (and checks) the same layout as for any other dtype."""

    def __init__(self, array, name: str, keep: list):
        import numpy as np

        from intentc.kir.mx import codes

        self.array, self.name = array, name
        itemsize = array.dtype.itemsize
        steps = [s // itemsize for s in array.strides]
        low = sum(min(0, s * (n - 1)) for s, n in zip(steps, array.shape)) if array.size else 0
        high = sum(max(0, s * (n - 1)) for s, n in zip(steps, array.shape)) if array.size else 0
        self.base = -low + (-low & 1)  # element 0 at an even offset: the data pointer is a byte
        self.packed = np.zeros((self.base + high) // 2 + 1, np.uint8)
        self.offsets = self._offsets(steps) if array.size else None
        if array.size:
            np.bitwise_or.at(self.packed, self.offsets >> 1, (codes(array).reshape(-1) & 0xF)
                             << ((self.offsets & 1) * 4).astype(np.uint8))
        ndim = array.ndim
        self.extents = (ctypes.c_int64 * (2 * max(1, ndim)))(*array.shape, *steps)
        base = ctypes.addressof(self.extents)
        i64 = ctypes.POINTER(ctypes.c_int64)
        data = self.packed.ctypes.data + self.base // 2 if array.size else None
        self.descriptor = IntentTensor(data, _Device(1, 0), ndim, _DType(17, 4, 1), ctypes.cast(base, i64),
                                       ctypes.cast(base + 8 * max(1, ndim), i64), 0)
        keep.append(self)

    def _offsets(self, steps):
        """The element offset of every element (row-major order) from the start of ``packed``."""
        import numpy as np

        offsets = np.full(1, self.base, np.int64)
        for extent, step in zip(self.array.shape, steps):
            offsets = (offsets[:, None] + np.arange(extent, dtype=np.int64)[None, :] * step).reshape(-1)
        return offsets

    def write_back(self) -> None:
        import numpy as np

        if self.array.size:
            codes = ((self.packed[self.offsets >> 1] >> ((self.offsets & 1) * 4).astype(np.uint8)) & 0xF)
            self.array[...] = codes.astype(np.uint8).reshape(self.array.shape).view(self.array.dtype)
