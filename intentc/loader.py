"""``intentc.load(path)``: call compiled kernels on NumPy arrays.

The shared library's embedded manifest (``intent_module_manifest``) says every kernel's
parameters; each becomes a Python callable that builds ``IntentTensor`` descriptors over
the arrays (any strides, in elements), allocates returned tensors from the declared
extents, calls the kernel and raises ``KernelError`` with the runtime's message when it
fails. The runtime, not Python, checks dtypes, ranks and extents, so C and Python
callers get the same messages.
"""
from __future__ import annotations

import ctypes
import json
import os
from pathlib import Path

from intentc.kir.extents import evaluate as evaluate_extent
from intentc.kir.extents import names as extent_names

_STATUS_NAMES = {0: "INTENT_OK", -1: "INTENT_E_NULL", -2: "INTENT_E_DTYPE", -3: "INTENT_E_RANK",
                 -4: "INTENT_E_SHAPE", -5: "INTENT_E_STRIDE", -6: "INTENT_E_BOUNDS", -7: "INTENT_E_DOMAIN",
                 -8: "INTENT_E_ALLOC", -9: "INTENT_E_DEVICE", -10: "INTENT_E_INTERNAL",
                 -11: "INTENT_E_SANITIZER"}


class KernelError(RuntimeError):
    """A kernel call failed; ``code`` is the negative status, the message the runtime's."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.status = _STATUS_NAMES.get(code, str(code))


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

# OCP Microscaling dtypes: ml_dtypes names -> (DLPack code, bits), and the Intent names.
_MX_NAMES = {"float8_e4m3fn": (10, 8), "float8_e5m2": (12, 8), "float6_e2m3fn": (15, 6), "float6_e3m2fn": (16, 6),
             "float4_e2m1fn": (17, 4), "float8_e8m0fnu": (14, 8)}
_MX_DTYPES = ("f8e4m3", "f8e5m2", "f6e2m3", "f6e3m2", "f4e2m1", "e8m0")
_SCALAR_CTYPES.update({name: ctypes.c_uint8 for name in _MX_DTYPES})  # scalars pass their code
_NUMPY_NAMES = {"bool": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "index": "int64",
                "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64", "f16": "float16",
                "f32": "float32", "f64": "float64", "bf16": "bfloat16"}


_DLPACK_CACHE: dict = {}


def _dlpack_of(dtype) -> tuple[int, int]:
    known = _DLPACK_CACHE.get(dtype)
    if known is None:
        known = _DLPACK_CACHE[dtype] = _dlpack_code(dtype)
    return known


def _dlpack_code(dtype) -> tuple[int, int]:
    kind, bits = dtype.kind, dtype.itemsize * 8
    if dtype.name in _MX_NAMES:  # OCP Microscaling (ml_dtypes): DLPack's own codes
        return _MX_NAMES[dtype.name]
    if dtype.name == "bfloat16":
        return 4, 16
    if kind == "b":
        return 6, 8
    if kind in "iuf":
        return {"i": 0, "u": 1, "f": 2}[kind], bits
    raise TypeError(f"arrays of dtype {dtype} cannot be passed to an Intent kernel")


def _numpy_dtype(name: str):
    import numpy as np

    if name in _MX_DTYPES:  # ml_dtypes arrays, one code per byte (kir/mx.py)
        from intentc.kir.mx import numpy_dtype

        return numpy_dtype(name)
    if name == "bf16":
        import ml_dtypes  # optional: only needed for bf16 results

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(_NUMPY_NAMES[name])


class Kernel:
    def __init__(self, module: "Module", spec: dict):
        self.module = module
        self.name = spec["name"]
        self.spec = spec
        self.inputs = [p for p in spec["params"] if not p.get("result")]
        self.results = [p for p in spec["params"] if p.get("result")]
        self.written = {p["name"] for p in spec["params"] if p.get("mutable") or p.get("result")}
        self.func = getattr(module.lib, self.name)
        self.func.restype = ctypes.c_int32
        self.func.argtypes = [ctypes.POINTER(IntentTensor) if p["kind"] == "tensor" else _SCALAR_CTYPES[p["dtype"]]
                              for p in spec["params"]]
        self.__doc__ = self.signature()

    def signature(self) -> str:
        def show(p):
            if p["kind"] == "scalar":
                return f"{p['name']}: {p['dtype']}"
            mut = "mut " if p["mutable"] else ""
            return f"{p['name']}: {mut}{p['dtype']}[{', '.join(str(e) for e in p['extents'])}]"

        results = ", ".join(f"{p['dtype']}[{', '.join(str(e) for e in p['extents'])}]" for p in self.results)
        return f"{self.name}({', '.join(show(p) for p in self.inputs)})" + (f" -> {results}" if results else "")

    def __repr__(self) -> str:
        return f"<intent kernel {self.signature()}>"

    def __call__(self, *args, out=None, **kwargs):
        import numpy as np

        if len(args) > len(self.inputs):
            raise TypeError(f"{self.name}() takes {len(self.inputs)} arguments but {len(args)} were given")
        values = dict(zip((p["name"] for p in self.inputs), args))
        for key, value in kwargs.items():
            if key in values or key not in {p["name"] for p in self.inputs}:
                raise TypeError(f"{self.name}() got an unexpected or repeated argument '{key}'")
            values[key] = value
        missing = [p["name"] for p in self.inputs if p["name"] not in values]
        if missing:
            raise TypeError(f"{self.name}() is missing arguments: {', '.join(missing)}")
        arrays = {}
        for p in self.inputs:
            if p["kind"] == "tensor":
                arrays[p["name"]] = _as_array(values[p["name"]], p, self.name)
        outs = self._results(arrays, out)
        keep = []
        call_args = []
        for p in self.spec["params"]:
            if p["kind"] == "scalar":
                call_args.append(_scalar(values[p["name"]], p, self.name))
                continue
            array = outs[p["name"]] if p.get("result") else arrays[p["name"]]
            if (p["mutable"] or p.get("result")) and not array.flags.writeable:
                raise KernelError(-5, f"{self.name}: parameter '{p['name']}' is written but the array is read-only")
            descriptor = _descriptor(array, p["name"], self.name, keep)
            call_args.append(ctypes.byref(descriptor))
        code = self.func(*call_args)
        for item in keep:  # f4e2m1 arguments travel packed: unpack the written ones
            if isinstance(item, _PackedF4) and item.name in self.written:
                item.write_back()
        if code != 0:
            raise KernelError(code, self.module.last_error())
        if not self.results:
            return None
        result = [outs[p["name"]] for p in self.results]
        return result[0] if len(result) == 1 else tuple(result)

    def _results(self, arrays: dict, out) -> dict:
        import numpy as np

        if not self.results:
            if out is not None:
                raise TypeError(f"{self.name}() returns nothing, so it takes no out=")
            return {}
        provided = None
        if out is not None:
            provided = list(out) if isinstance(out, (tuple, list)) else [out]
            if len(provided) != len(self.results):
                raise TypeError(f"{self.name}() returns {len(self.results)} tensors; out= must give as many")
        extents = {}
        for p in self.inputs:
            if p["kind"] == "tensor":
                array = arrays[p["name"]]
                for axis, name in enumerate(p["extents"]):
                    if isinstance(name, str) and axis < array.ndim:
                        extents.setdefault(name, array.shape[axis])
        outs = {}
        for k, p in enumerate(self.results):
            if provided is not None:
                outs[p["name"]] = _as_array(provided[k], p, self.name)
                continue
            missing = [n for e in p["extents"] if isinstance(e, str) for n in extent_names(e) if n not in extents]
            if missing:  # every parameter naming it has too few axes: refuse as the runtime's rank check does
                owner = next(q for q in self.inputs if q["kind"] == "tensor" and missing[0] in q["extents"])
                ndim, rank = arrays[owner["name"]].ndim, len(owner["extents"])
                raise KernelError(-3, f"{self.name}: parameter '{owner['name']}' has {ndim} dimension"
                                      f"{'' if ndim == 1 else 's'} but the kernel expects {rank}")
            shape = tuple(e if isinstance(e, int) else evaluate_extent(e, extents) for e in p["extents"])
            for e, value in zip(p["extents"], shape):
                if value < 0:  # e.g. R - 1 with R = 0: no tensor has that shape
                    raise KernelError(-4, f"{self.name}: the result extent {e} is {value}, which is negative")
            outs[p["name"]] = np.empty(shape, dtype=_numpy_dtype(p["dtype"]))
        return outs


def _as_array(value, param: dict, kernel: str):
    import numpy as np

    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "__dlpack__"):
        return np.from_dlpack(value)
    try:
        return np.asarray(value)  # buffer protocol, lists (read-only parameters only)
    except Exception as exc:  # noqa: BLE001 - any conversion failure is a bad argument
        raise TypeError(f"{kernel}: parameter '{param['name']}' needs an array, got {type(value).__name__}") from exc


def _scalar(value, param: dict, kernel: str):
    import numpy as np

    dtype = param["dtype"]
    ctype = _SCALAR_CTYPES[dtype]
    if dtype in _MX_DTYPES:  # an ml_dtypes scalar's code, or a number converted from f32 (kir/mx.py)
        from intentc.kir.mx import scalar_code

        return ctype(scalar_code(value, dtype))
    if dtype in ("f16", "bf16"):
        return ctype(int(np.asarray(value, dtype=_numpy_dtype(dtype)).view(np.uint16)))
    if dtype in ("f32", "f64"):
        return ctype(float(value))
    if dtype == "bool":
        return ctype(1 if bool(value) else 0)
    if isinstance(value, float) and not float(value).is_integer():
        raise TypeError(f"{kernel}: parameter '{param['name']}' is {dtype}, got the float {value!r}")
    number = int(value)
    bits = int(dtype[1:]) if dtype != "index" else 64
    low, high = (0, (1 << bits) - 1) if dtype.startswith("u") else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    if not low <= number <= high:
        raise OverflowError(f"{kernel}: parameter '{param['name']}' is {dtype}; {number} is out of range")
    return ctype(number)


def _descriptor(array, name: str, kernel: str, keep: list) -> IntentTensor:
    if array.dtype.name == "float4_e2m1fn":  # packed two per byte for the call (kir/mx.py)
        return _PackedF4(array, name, keep).descriptor
    code, bits = _dlpack_of(array.dtype)
    itemsize = array.dtype.itemsize
    for stride in array.strides:
        if stride % itemsize:
            raise KernelError(-5, f"{kernel}: parameter '{name}' has a byte stride {stride} that is not a "
                                  f"multiple of its element size {itemsize}")
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
        self.lib = ctypes.CDLL(self.path, mode=os.RTLD_LOCAL | os.RTLD_NOW)
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
    """Load a shared library built by ``intentc build`` and return its kernels."""
    return Module(path)


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
