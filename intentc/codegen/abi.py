"""The C ABI facts code generation needs (docs/abi.md): the ABI version, the status codes
by name (the one table is ``intentc/base/status.py``), DLPack dtype codes (the one mapping
is ``intentc/kir/calling.py``) and the C types of scalar parameters."""
from __future__ import annotations

from intentc.base.status import CODE
from intentc.kir.calling import dlpack_dtype
from intentc.kir.types import DType

__all__ = ["ABI_VERSION", "STATUS", "dlpack_dtype", "c_scalar_type"]

ABI_VERSION = 1

STATUS = dict(CODE)  # status name -> code (intentc/base/status.py, the C runtime's IntentStatus)


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
