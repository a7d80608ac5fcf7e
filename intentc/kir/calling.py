"""The Python calling convention of a kernel, compiled or interpreted (docs/abi.md).

``intentc.load(...).<kernel>(...)`` (``intentc/loader.py``) and the reference interpreter
(``intentc/interp/calling.py``) take the same arguments and refuse the same calls; this
module is that convention, written once. A kernel's parameters are ``Parameter``s, as
the module manifest describes them (``from_manifest``) or as the interpreter reads them
from the KIR function. A call

1. binds positional and keyword arguments to the inputs (``bind_arguments``; a
   ``TypeError`` names a missing, extra or repeated one);
2. converts every tensor argument to a NumPy array (``as_array``: arrays as they are,
   DLPack producers through ``np.from_dlpack``, anything else through ``np.asarray``);
3. takes ``out=`` for the returned tensors or allocates them from the declared extents,
   each extent name's value being the first tensor input that names it (S1;
   ``result_arrays``): a negative extent is ``INTENT_E_SHAPE``, an extent named only by
   an input with too few axes ``INTENT_E_RANK``;
4. checks each parameter in declaration order: a scalar must fit its dtype
   (``scalar_value``, which also gives the value the C ABI passes); a written tensor
   must be writeable, its dtype must have a DLPack code and its byte strides must be
   multiples of the element size (``check_tensor_argument``, ``INTENT_E_STRIDE``).

What follows (the runtime's checks of rank, dtype, extents and strides on entry) is the C
runtime's for compiled kernels, and the interpreter's own copy of it for interpreted ones.
This module also holds the dtype mappings of the boundary: Intent dtype names to NumPy
dtypes (``numpy_dtype``) and NumPy or Intent dtypes to DLPack codes (``dlpack_of``,
``dlpack_dtype``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from intentc.base.status import E_RANK, E_SHAPE, E_STRIDE, KernelError
from intentc.kir import mx
from intentc.kir.extents import evaluate as evaluate_extent
from intentc.kir.extents import names as extent_names


@dataclass(frozen=True)
class Parameter:
    """One parameter as the ABI sees it; ``result`` parameters are the returned tensors."""

    name: str
    kind: str  # "tensor" | "scalar"
    dtype: str  # the Intent dtype's name
    extents: tuple = ()  # per axis: an int or an extent expression (tensors only)
    mutable: bool = False
    result: bool = False

    @property
    def written(self) -> bool:
        return self.mutable or self.result

    @staticmethod
    def from_manifest(entry: dict) -> "Parameter":
        return Parameter(entry["name"], entry["kind"], entry["dtype"], tuple(entry.get("extents", ())),
                         bool(entry.get("mutable")), bool(entry.get("result")))


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
    missing = [p.name for p in inputs if p.name not in values]
    if missing:
        raise TypeError(f"{kernel}() is missing arguments: {', '.join(missing)}")
    return values


def as_array(value, param: Parameter, kernel: str) -> np.ndarray:
    """A tensor argument as a NumPy array (a view where the argument allows one)."""
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "__dlpack__"):
        return np.from_dlpack(value)
    try:
        return np.asarray(value)  # buffer protocol, lists (read-only parameters only)
    except Exception as exc:  # noqa: BLE001 - any conversion failure is a bad argument
        raise TypeError(f"{kernel}: parameter '{param.name}' needs an array, got {type(value).__name__}") from exc


def named_extents(inputs: list[Parameter], arrays: dict) -> dict:
    """Each extent name's value: the first tensor input that names it (S1)."""
    extents: dict = {}
    for p in inputs:
        if p.kind == "tensor":
            array = arrays[p.name]
            for axis, name in enumerate(p.extents):
                if isinstance(name, str) and axis < array.ndim:
                    extents.setdefault(name, array.shape[axis])
    return extents


def result_arrays(kernel: str, inputs: list[Parameter], results: list[Parameter], arrays: dict, out) -> dict:
    """The returned tensors by name: ``out=`` (one array, or a tuple or list of them, in
    order) or new arrays shaped by the declared extents."""
    if not results:
        if out is not None:
            raise TypeError(f"{kernel}() returns nothing, so it takes no out=")
        return {}
    if out is not None:
        provided = list(out) if isinstance(out, (tuple, list)) else [out]
        if len(provided) != len(results):
            raise TypeError(f"{kernel}() returns {len(results)} tensors; out= must give as many")
        return {p.name: as_array(v, p, kernel) for p, v in zip(results, provided)}
    extents = named_extents(inputs, arrays)
    outs = {}
    for p in results:
        missing = [n for e in p.extents if isinstance(e, str) for n in extent_names(e) if n not in extents]
        if missing:  # every input naming it has too few axes: refused as the runtime's rank check does
            owner = next(q for q in inputs if q.kind == "tensor" and missing[0] in q.extents)
            ndim, rank = arrays[owner.name].ndim, len(owner.extents)
            raise KernelError(E_RANK, f"{kernel}: parameter '{owner.name}' has {ndim} dimension"
                                      f"{'' if ndim == 1 else 's'} but the kernel expects {rank}")
        shape = tuple(e if isinstance(e, int) else evaluate_extent(e, extents) for e in p.extents)
        for e, value in zip(p.extents, shape):
            if value < 0:  # e.g. R - 1 with R = 0: no tensor has that shape
                raise KernelError(E_SHAPE, f"{kernel}: the result extent {e} is {value}, which is negative")
        outs[p.name] = np.empty(shape, dtype=numpy_dtype(p.dtype))
    return outs


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
    dlpack_of(array.dtype)
    itemsize = array.dtype.itemsize
    for stride in array.strides:
        if stride % itemsize:
            raise KernelError(E_STRIDE, f"{kernel}: parameter '{param.name}' has a byte stride {stride} that is "
                                        f"not a multiple of its element size {itemsize}")
