"""The Python calling convention of a kernel, compiled or interpreted (docs/abi.md).

``intentc.load(...).<kernel>(...)`` (``intentc/loader.py``) and the reference interpreter
(``intentc/interp/calling.py``) take the same arguments and refuse the same calls; this
module is that convention, written once. A kernel's parameters are ``Parameter``s, as
the module manifest describes them (``from_manifest``) or as the interpreter reads them
from the KIR function. A call

1. binds positional and keyword arguments to the inputs (``bind_arguments``; a
   ``TypeError`` names a missing, extra or repeated one);
2. converts every tensor argument to a NumPy array (``as_array``: arrays as they are,
   DLPack producers through ``np.from_dlpack``, anything else through ``np.asarray``); an
   array on another device (``__dlpack_device__`` not the CPU, ``__cuda_array_interface__``)
   is ``INTENT_E_DEVICE``; a written parameter takes only an object that shares its memory
   (an array, a DLPack producer or a writable buffer: a list or tuple is a ``TypeError``,
   since the kernel's writes would be lost);
3. takes ``out=`` for the returned tensors or allocates them from the declared extents,
   each extent name's value being the first tensor input that names it (S1;
   ``result_arrays``): a negative extent, or an extent, element count or byte size past
   int64 (``R * C`` with R = 2^32 + 1, C = 2^32) is ``INTENT_E_SHAPE``, an extent named
   only by an input with too few axes ``INTENT_E_RANK``;
4. checks each parameter in declaration order: a scalar must fit its dtype
   (``scalar_value``, which also gives the value the C ABI passes); a written tensor
   must be writeable, its dtype must have a DLPack code and native byte order
   (``INTENT_E_DTYPE``: the C ABI reads native words) and its byte strides must be
   multiples of the element size (``check_tensor_argument``, ``INTENT_E_STRIDE``).

What follows (the runtime's checks of rank, dtype, extents and strides on entry, then the
extent expressions and the aliasing rule) is the C runtime's for compiled kernels; the
interpreter and the PTX loader take their copy of it from here: ``check_entry_tensor``,
``check_extent_expressions`` and ``check_aliasing`` (docs/abi.md, "Aliasing"), which says
the same as ``intent_check_aliasing`` in ``runtime_c/tensor.c``, in the same words.
This module also holds the dtype mappings of the boundary: Intent dtype names to NumPy
dtypes (``numpy_dtype``) and NumPy or Intent dtypes to DLPack codes (``dlpack_of``,
``dlpack_dtype``).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from intentc.base.status import E_ALIAS, E_ALLOC, E_DEVICE, E_DTYPE, E_RANK, E_SHAPE, E_STRIDE, KernelError
from intentc.kir import mx
from intentc.kir.extents import build as build_extent
from intentc.kir.extents import is_expression
from intentc.kir.extents import names as extent_names

INT64_MAX = (1 << 63) - 1


@dataclass(frozen=True)
class Parameter:
    """One parameter as the ABI sees it; ``result`` parameters are the returned tensors."""

    name: str
    kind: str  # "tensor" | "scalar"
    dtype: str  # the Intent dtype's name
    extents: tuple = ()  # per axis: an int or an extent expression (tensors only)
    mutable: bool = False
    result: bool = False
    optional: bool = False  # a tensor that may be absent: None in Python, a NULL descriptor in C
    default: tuple = ()  # () or (what a call that omits the argument passes,)

    @property
    def written(self) -> bool:
        return self.mutable or self.result

    @staticmethod
    def from_manifest(entry: dict) -> "Parameter":
        return Parameter(entry["name"], entry["kind"], entry["dtype"], tuple(entry.get("extents", ())),
                         bool(entry.get("mutable")), bool(entry.get("result")), bool(entry.get("optional")),
                         (entry["default"],) if "default" in entry else ())


# ---- dtypes at the boundary ---------------------------------------------------------------------------
_NUMPY_NAMES = {"bool": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "index": "int64",
                "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64", "f16": "float16",
                "f32": "float32", "f64": "float64"}
_DLPACK_KIND = {"int": 0, "index": 0, "uint": 1, "float": 2, "bfloat": 4, "bool": 6}
_DLPACK_OF_ML_DTYPES = {f.ml_dtypes: (f.dlpack, f.bits) for f in mx.FORMATS.values()}
_DLPACK_CACHE: dict = {}


def numpy_dtype(name: str) -> np.dtype:
    """The NumPy dtype of arrays of the Intent dtype ``name`` (MX types: ml_dtypes, one code
    per byte; bf16: ml_dtypes' bfloat16)."""
    if name in mx.FORMATS:
        return mx.numpy_dtype(name)
    if name == "bf16":
        import ml_dtypes  # optional: only needed for bf16

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(_NUMPY_NAMES[name])


def dlpack_dtype(dtype) -> tuple[int, int]:
    """(DLPack type code, bits) of an Intent dtype (a ``kir.types.DType``). MX types have
    DLPack's own codes (kDLFloat8_e4m3fn = 10, ..., kDLFloat4_e2m1fn = 17; kir/mx.py)."""
    if dtype.kind == "mx":
        return mx.FORMATS[dtype.name].dlpack, dtype.bits
    return _DLPACK_KIND[dtype.kind], dtype.bits


def dlpack_of(dtype: np.dtype) -> tuple[int, int]:
    """(DLPack type code, bits) of a NumPy array dtype; ``TypeError`` if a kernel cannot take it."""
    known = _DLPACK_CACHE.get(dtype)
    if known is None:
        known = _DLPACK_CACHE[dtype] = _dlpack_code(dtype)
    return known


def _dlpack_code(dtype: np.dtype) -> tuple[int, int]:
    kind, bits = dtype.kind, dtype.itemsize * 8
    if dtype.name in _DLPACK_OF_ML_DTYPES:  # OCP Microscaling (ml_dtypes): DLPack's own codes
        return _DLPACK_OF_ML_DTYPES[dtype.name]
    if dtype.name == "bfloat16":
        return 4, 16
    if kind == "b":
        return 6, 8
    if kind in "iuf":
        return {"i": 0, "u": 1, "f": 2}[kind], bits
    raise TypeError(f"arrays of dtype {dtype} cannot be passed to an Intent kernel")


# ---- one call -------------------------------------------------------------------------------------------
def bind_arguments(kernel: str, inputs: list[Parameter], args: tuple, kwargs: dict) -> dict:
    """Each input's argument by name, from positional then keyword arguments."""
    if len(args) > len(inputs):
        raise TypeError(f"{kernel}() takes {len(inputs)} arguments but {len(args)} were given")
    values = dict(zip((p.name for p in inputs), args))
    names = {p.name for p in inputs}
    for key, value in kwargs.items():
        if key in values or key not in names:
            raise TypeError(f"{kernel}() got an unexpected or repeated argument '{key}'")
        values[key] = value
    for p in inputs:  # omitted arguments with a default (``eps: f32 = 1e-5``, ``bias: ... | None = None``)
        if p.name not in values and p.default:
            values[p.name] = p.default[0]
    missing = [p.name for p in inputs if p.name not in values]
    if missing:
        raise TypeError(f"{kernel}() is missing arguments: {', '.join(missing)}")
    return values


def as_array(value, param: Parameter, kernel: str) -> np.ndarray | None:
    """A tensor argument as a NumPy array (a view where the argument allows one; for a
    written parameter always a view, or the call is refused); None for an absent optional one."""
    if value is None and param.optional:
        return None
    _check_host(value, param, kernel)
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "__dlpack__"):
        return np.from_dlpack(value)
    if param.written:  # the kernel's writes must reach the caller's memory
        try:
            view = memoryview(value)
        except TypeError:
            raise TypeError(f"{kernel}: parameter '{param.name}' is written, so it needs an array or a writable "
                            f"buffer, got {type(value).__name__} (whose copy would receive the writes)") from None
        if view.readonly:
            raise KernelError(E_STRIDE, f"{kernel}: parameter '{param.name}' is written but the buffer is read-only")
        return np.asarray(view)
    try:
        return np.asarray(value)  # buffer protocol, lists (read-only parameters only)
    except Exception as exc:  # noqa: BLE001 - any conversion failure is a bad argument
        raise TypeError(f"{kernel}: parameter '{param.name}' needs an array, got {type(value).__name__}") from exc


# DLPack's device types (DLDeviceType), for messages.
_DEVICE_NAMES = {1: "cpu", 2: "cuda", 3: "cuda_host", 4: "opencl", 7: "vulkan", 8: "metal", 9: "vpi", 10: "rocm",
                 11: "rocm_host", 12: "ext_dev", 13: "cuda_managed", 14: "oneapi", 15: "webgpu", 16: "hexagon",
                 17: "maia"}


def _check_host(value, param: Parameter, kernel: str) -> None:
    """An argument living on another device is refused before anything touches it."""
    if isinstance(value, np.ndarray):
        return
    if hasattr(value, "__cuda_array_interface__"):
        raise KernelError(E_DEVICE, f"{kernel}: parameter '{param.name}' is a CUDA array (it has "
                                    f"__cuda_array_interface__) but the kernel takes host memory")
    device = getattr(value, "__dlpack_device__", None)
    if device is not None:
        try:
            kind, number = (int(v) for v in device())
        except Exception as exc:  # noqa: BLE001 - a broken producer is a bad argument
            raise TypeError(f"{kernel}: parameter '{param.name}': __dlpack_device__() failed: {exc}") from None
        if kind != 1:
            raise KernelError(E_DEVICE, f"{kernel}: parameter '{param.name}' is on device "
                                        f"{_DEVICE_NAMES.get(kind, 'unknown')}:{number} (device type {kind}) "
                                        f"but the kernel takes host memory")


def named_extents(inputs: list[Parameter], arrays: dict, values: dict | None = None) -> dict:
    """Each extent name's value: the first tensor input that names it (S1); with ``values``
    (the bound arguments), also each integer scalar parameter's value, which result extents
    may use (``-> i64[b - a]``)."""
    extents: dict = {}
    for p in inputs:
        if p.kind == "tensor" and not p.optional:  # an optional tensor names no extent (it may be absent)
            array = arrays[p.name]
            for axis, name in enumerate(p.extents):
                if isinstance(name, str) and axis < array.ndim:
                    extents.setdefault(name, array.shape[axis])
        elif values is not None and not p.result and p.name in values and _INTEGER_SCALAR.match(p.dtype):
            try:
                extents.setdefault(p.name, scalar_value(values[p.name], p, ""))
            except (TypeError, ValueError, OverflowError):
                pass  # refused by the scalar's own check, in the kernel's words
    return extents


_INTEGER_SCALAR = re.compile(r"^(i|u)(8|16|32|64)$|^index$")


def scalar_results(results: list[Parameter]) -> list[Parameter]:
    """The results returned as scalars (a pointer to one element each in C)."""
    return [p for p in results if p.kind == "scalar"]


def returned(results: list[Parameter], outs: dict):
    """What a call returns: None, the one result, or a tuple in declared order; a scalar
    result is a NumPy scalar of its dtype (read from its 0-d array)."""
    if not results:
        return None
    values = [outs[p.name][()] if p.kind == "scalar" else outs[p.name] for p in results]
    return values[0] if len(values) == 1 else tuple(values)


def result_arrays(kernel: str, inputs: list[Parameter], results: list[Parameter], arrays: dict, out,
                  values: dict | None = None, convert=None, allocate=None) -> dict:
    """The returned values by name: for the tensors ``out=`` (one array, or a tuple or list of
    them, in order; each through ``convert(value, param, kernel)``, by default ``as_array``)
    or new arrays shaped by the declared extents, evaluated from the inputs' extents and the
    integer scalar arguments (``values``; ``allocate(shape, dtype, param)``, by default host
    memory from NumPy); for each scalar result a new 0-d array, which ``out=`` never gives."""
    outs = {p.name: np.empty((), dtype=numpy_dtype(p.dtype)) for p in scalar_results(results)}
    tensors = [p for p in results if p.kind == "tensor"]
    if not tensors:
        if out is not None:
            raise TypeError(f"{kernel}() returns no tensor, so it takes no out=")
        return outs
    if out is not None:
        provided = list(out) if isinstance(out, (tuple, list)) else [out]
        if len(provided) != len(tensors):
            raise TypeError(f"{kernel}() returns {len(tensors)} tensors; out= must give as many")
        outs.update({p.name: (convert or as_array)(v, p, kernel) for p, v in zip(tensors, provided)})
        return outs
    extents = named_extents(inputs, arrays, values)
    for p in tensors:
        missing = [n for e in p.extents if isinstance(e, str) for n in extent_names(e) if n not in extents]
        if missing:  # every input naming it has too few axes: refused as the runtime's rank check does
            owner = next((q for q in inputs if q.kind == "tensor" and missing[0] in q.extents), None)
            if owner is None:  # a scalar argument that does not convert: its own check's error
                scalar = next(q for q in inputs if q.name == missing[0])
                scalar_value((values or {}).get(scalar.name), scalar, kernel)
                raise TypeError(f"{kernel}() needs the argument '{missing[0]}' to size its result")
            ndim, rank = arrays[owner.name].ndim, len(owner.extents)
            raise KernelError(E_RANK, f"{kernel}: parameter '{owner.name}' has {ndim} dimension"
                                      f"{'' if ndim == 1 else 's'} but the kernel expects {rank}")
        shape = tuple(e if isinstance(e, int) else extent_value(kernel, p, e, extents) for e in p.extents)
        for e, value in zip(p.extents, shape):
            if value < 0:  # e.g. R - 1 with R = 0: no tensor has that shape
                raise KernelError(E_SHAPE, f"{kernel}: the result extent {e} is {value}, which is negative")
        dtype = numpy_dtype(p.dtype)
        count = 0 if 0 in shape else math.prod(int(n) for n in shape)
        if count > INT64_MAX:  # the runtime's words (runtime_c/tensor.c)
            raise KernelError(E_SHAPE, f"{kernel}: parameter '{p.name}' has more elements than int64 can count")
        if count * dtype.itemsize > INT64_MAX:
            raise KernelError(E_SHAPE, f"{kernel}: parameter '{p.name}' has extents and strides whose byte offsets "
                                       f"do not fit in 64 bits")
        try:
            outs[p.name] = np.empty(shape, dtype=dtype) if allocate is None else allocate(shape, dtype, p)
        except (MemoryError, ValueError):
            raise KernelError(E_ALLOC, f"{kernel}: out of memory for the result '{p.name}' "
                                       f"({count * dtype.itemsize} bytes)") from None
    return outs


def extent_value(kernel: str, param: Parameter, extent: str, env: dict) -> int:
    """An extent expression's value from the named extents, every step within int64
    (``INTENT_E_SHAPE`` otherwise, in the words of the generated entry's check): a product
    that wrapped could equal a small tensor's extent."""
    def binary(op, a, b):
        if op == "floordiv":
            return a // b if b else 0
        value = {"add": a + b, "sub": a - b, "mul": a * b}[op]
        if not -INT64_MAX - 1 <= value <= INT64_MAX:
            raise KernelError(E_SHAPE, f"{kernel}: the extent {extent} of '{param.name}' does not fit in 64 bits")
        return value

    return build_extent(extent, lambda name: env[name], lambda v: v, binary)


def check_extent_expressions(kernel: str, params: list[Parameter], arrays: dict, values: dict | None = None) -> None:
    """The generated entry's check after the tensors' (llvm_function.check_arguments): every
    extent expression of every parameter evaluates within int64, and a result extent that
    uses an integer scalar argument (``values``) is not negative."""
    env = named_extents([p for p in params if not p.result], arrays, values)
    scalars = {p.name for p in params if p.kind == "scalar" and not p.result}
    for p in params:
        for e in p.extents:
            uses_scalar = isinstance(e, str) and any(n in scalars for n in extent_names(e))
            if (is_expression(e) or uses_scalar) and all(n in env for n in extent_names(e)):
                value = extent_value(kernel, p, e, env)
                if p.result and uses_scalar and value < 0:
                    raise KernelError(E_SHAPE, f"{kernel}: the result extent {e} is {value}, which is negative")


def scalar_value(value, param: Parameter, kernel: str):
    """The value a scalar argument passes through the C ABI (an int or a float): an MX
    type's code, the bits of f16 and bf16, 0 or 1 for bool; an integer must be a whole
    number in its dtype's range (else ``TypeError`` / ``OverflowError``)."""
    dtype = param.dtype
    if dtype in mx.FORMATS:  # an ml_dtypes scalar's code, or a number converted from f32 (kir/mx.py)
        return mx.scalar_code(value, dtype)
    if dtype in ("f16", "bf16"):
        return int(np.asarray(value, dtype=numpy_dtype(dtype)).view(np.uint16))
    if dtype in ("f32", "f64"):
        return float(value)
    if dtype == "bool":
        return 1 if bool(value) else 0
    if isinstance(value, float) and not float(value).is_integer():
        raise TypeError(f"{kernel}: parameter '{param.name}' is {dtype}, got the float {value!r}")
    number = int(value)
    bits = int(dtype[1:]) if dtype != "index" else 64
    low, high = (0, (1 << bits) - 1) if dtype.startswith("u") else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    if not low <= number <= high:
        raise OverflowError(f"{kernel}: parameter '{param.name}' is {dtype}; {number} is out of range")
    return number


def check_tensor_argument(array: np.ndarray, param: Parameter, kernel: str) -> None:
    """A written tensor is writeable; the dtype has a DLPack code (else ``TypeError``); the
    byte strides are multiples of the element size."""
    if param.written and not array.flags.writeable:
        raise KernelError(E_STRIDE, f"{kernel}: parameter '{param.name}' is written but the array is read-only")
    if not array.dtype.isnative:  # the kernel reads and writes native words
        raise KernelError(E_DTYPE, f"{kernel}: parameter '{param.name}' has non-native byte order "
                                   f"({array.dtype.str}); convert it with .astype('{array.dtype.newbyteorder('=').str}')")
    dlpack_of(array.dtype)
    itemsize = array.dtype.itemsize
    for stride in array.strides:
        if stride % itemsize:
            raise KernelError(E_STRIDE, f"{kernel}: parameter '{param.name}' has a byte stride {stride} that is "
                                        f"not a multiple of its element size {itemsize}")


# ---- the runtime's entry checks (runtime_c/tensor.c), for the interpreter and the PTX loader ----------
def intent_dtype_name(dtype: np.dtype) -> str:
    """The Intent spelling of a NumPy dtype, as the runtime's messages write it."""
    if dtype.kind == "b":
        return "bool"
    if dtype.name == "bfloat16":
        return "bf16"
    if dtype.name in mx.BY_ML_DTYPES:
        return mx.BY_ML_DTYPES[dtype.name].name
    return {"i": "i", "u": "u", "f": "f"}.get(dtype.kind, "?") + str(dtype.itemsize * 8)


def check_entry_tensor(kernel: str, p: Parameter, array: np.ndarray) -> None:
    """``intent_check_tensor`` on one array, in its order: rank (-3), dtype (-2), a zero
    stride on a written axis of more than one element (-5)."""
    rank = len(p.extents)
    if array.ndim != rank:
        raise KernelError(E_RANK, f"{kernel}: parameter '{p.name}' has {array.ndim} dimension"
                                  f"{'' if array.ndim == 1 else 's'} but the kernel expects {rank}")
    if dlpack_of(array.dtype) != _dlpack_of_name(p.dtype):
        raise KernelError(E_DTYPE, f"{kernel}: parameter '{p.name}' has dtype {intent_dtype_name(array.dtype)} but "
                                   f"the kernel expects {p.dtype if p.dtype != 'index' else 'i64'}")
    if p.written and array.size > 0:
        for axis, (stride, extent) in enumerate(zip(array.strides, array.shape)):
            if stride == 0 and extent > 1:
                raise KernelError(E_STRIDE, f"{kernel}: parameter '{p.name}' is written but has stride 0 "
                                            f"on axis {axis} (extent {extent}), so its elements alias each other")


def _dlpack_of_name(name: str) -> tuple[int, int]:
    if name in mx.FORMATS:
        return mx.FORMATS[name].dlpack, mx.FORMATS[name].bits
    if name == "bf16":
        return 4, 16
    return dlpack_of(np.dtype(_NUMPY_NAMES[name]))


def data_address(array) -> int:
    """The address of element (0, ..., 0): of host memory for a NumPy array, of device memory
    for an ``intentc.device_arrays.DeviceArray`` (the PTX loader's)."""
    return array.__array_interface__["data"][0] if isinstance(array, np.ndarray) else array.address


def _byte_range(array: np.ndarray) -> tuple[int, int]:
    """The bytes [lo, hi) the array's elements occupy (lo == hi when it has none)."""
    base = data_address(array)
    if array.size == 0:
        return base, base
    low = sum(s * (n - 1) for s, n in zip(array.strides, array.shape) if s < 0)
    high = sum(s * (n - 1) for s, n in zip(array.strides, array.shape) if s > 0)
    return base + low, base + high + array.itemsize


def _self_overlap(array: np.ndarray):
    """None when distinct indices address distinct elements by the runtime's test (axes of
    extent > 1 by increasing |stride|, each stepping past the span of the smaller ones),
    else (axis, stride, extent, span) of the first axis that does not."""
    itemsize = array.dtype.itemsize
    axes = sorted((abs(s // itemsize), axis) for axis, (s, n) in enumerate(zip(array.strides, array.shape)) if n > 1)
    span = 0
    for stride, axis in axes:  # ties in axis order, as the runtime's stable insertion sort
        if stride <= span:
            return axis, array.strides[axis] // itemsize, array.shape[axis], span
        span += stride * (array.shape[axis] - 1)
    return None


def _packed(array: np.ndarray) -> bool:
    """A 4-bit format: two elements to a byte in the kernel's view (left to the byte ranges)."""
    fmt = mx.BY_ML_DTYPES.get(array.dtype.name)
    return fmt is not None and fmt.bits == 4


def _interleaved_disjoint(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two arrays whose byte ranges overlap still share no element, by the runtime's
    test (``interleaved_disjoint``): their elements start at their bases plus multiples of
    the gcd g of both arrays' byte strides over axes of extent > 1; with r = (base_a -
    base_b) mod g, r >= b's element size and g - r >= a's mean no two elements meet
    (``buf[::2]`` and ``buf[1::2]``)."""
    if a.dtype.itemsize == 0 or b.dtype.itemsize == 0 or _packed(a) or _packed(b):
        return False
    g = 0
    for array in (a, b):
        for stride, extent in zip(array.strides, array.shape):
            if extent > 1:
                g = math.gcd(g, abs(stride))
    if g == 0:
        return False
    r = (data_address(a) - data_address(b)) % g
    return r >= b.dtype.itemsize and g - r >= a.dtype.itemsize


def _overlap(ranges, arrays, j: int, k: int) -> bool:
    """Whether arrays j and k may share an element: their byte ranges meet and the strides do
    not keep them apart."""
    return ranges[j][0] != ranges[j][1] and ranges[k][0] != ranges[k][1] and ranges[j][0] < ranges[k][1] \
        and ranges[k][0] < ranges[j][1] and not _interleaved_disjoint(arrays[k], arrays[j])


def check_aliasing(kernel: str, tensors: list) -> set[str]:
    """The aliasing rule over ``tensors`` ((Parameter, array) in declaration order), as
    ``intent_check_aliasing``: a written array that overlaps itself or another written one
    is ``INTENT_E_ALIAS`` (in the runtime's words); returns the names of the read-only
    arrays whose bytes overlap a written one's, which the kernel must read from a copy."""
    ranges = [_byte_range(a) for _, a in tensors]
    arrays = [a for _, a in tensors]
    for k, (p, array) in enumerate(tensors):
        if not p.written or ranges[k][0] == ranges[k][1]:
            continue
        if array.ndim > 64:
            raise KernelError(E_ALIAS, f"{kernel}: parameter '{p.name}' is written and has more than 64 dimensions, "
                                       f"too many to prove that its elements do not overlap")
        bad = _self_overlap(array)
        if bad is not None:
            axis, stride, extent, span = bad
            raise KernelError(E_ALIAS, f"{kernel}: parameter '{p.name}' overlaps itself: it is written but its "
                                       f"stride {stride} on axis {axis} (extent {extent}) falls within the span "
                                       f"{span} of its smaller strides, so two of its indices address one element")
        for j in range(k):
            q = tensors[j][0]
            if q.written and _overlap(ranges, arrays, j, k):
                raise KernelError(E_ALIAS, f"{kernel}: parameters '{q.name}' and '{p.name}' overlap in memory and "
                                           f"both are written, so the result would depend on the order of the "
                                           f"writes")
    copied = set()
    for k, (p, _) in enumerate(tensors):
        if p.written or ranges[k][0] == ranges[k][1]:
            continue
        if any(q.written and j != k and _overlap(ranges, arrays, j, k) for j, (q, _) in enumerate(tensors)):
            copied.add(p.name)
    return copied


def snapshot(array: np.ndarray) -> np.ndarray:
    """A copy of a read-only argument with the same values, its zero-stride (broadcast) axes
    kept broadcast, as the runtime copies an input that overlaps an output."""
    kept = tuple(0 if s == 0 and n > 1 else slice(None) for s, n in zip(array.strides, array.shape))
    return np.broadcast_to(array[kept][tuple(None if k == 0 else slice(None) for k in kept)].copy()
                           if kept else array.copy(), array.shape)
