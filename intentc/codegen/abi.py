"""The C ABI facts shared by codegen, the header, the manifest and the loader (docs/abi.md)."""
from __future__ import annotations

from intentc.kir.types import DType

ABI_VERSION = 1

STATUS = {
    "INTENT_OK": 0, "INTENT_E_NULL": -1, "INTENT_E_DTYPE": -2, "INTENT_E_RANK": -3, "INTENT_E_SHAPE": -4,
    "INTENT_E_STRIDE": -5, "INTENT_E_BOUNDS": -6, "INTENT_E_DOMAIN": -7, "INTENT_E_ALLOC": -8,
    "INTENT_E_DEVICE": -9, "INTENT_E_INTERNAL": -10, "INTENT_E_SANITIZER": -11,
}

_DLPACK_CODE = {"int": 0, "index": 0, "uint": 1, "float": 2, "bfloat": 4, "bool": 6}


def dlpack_dtype(dtype: DType) -> tuple[int, int]:
    """(DLPack type code, bits) of an Intent dtype. MX types have DLPack's own codes
    (kDLFloat8_e4m3fn = 10, ..., kDLFloat4_e2m1fn = 17; storage in intentc/kir/mx.py)."""
    if dtype.kind == "mx":
        from intentc.kir.mx import FORMATS

        return FORMATS[dtype.name].dlpack, dtype.bits
    return _DLPACK_CODE[dtype.kind], dtype.bits


def c_scalar_type(dtype: DType) -> str:
    """The C type of a scalar parameter passed by value."""
    if dtype.kind in ("bool", "mx"):  # MX scalars travel as their code
        return "uint8_t"
    if dtype.kind in ("int", "index"):
        return f"int{dtype.bits}_t"
    if dtype.kind == "uint":
        return f"uint{dtype.bits}_t"
    if dtype.name == "f32":
        return "float"
    if dtype.name == "f64":
        return "double"
    return "uint16_t"  # f16 and bf16 travel as their bits
