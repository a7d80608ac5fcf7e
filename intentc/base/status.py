"""The status codes of the C ABI and the exception that carries one (docs/abi.md).

``STATUSES`` is the one table of codes: the C runtime's ``IntentStatus`` enum
(``runtime_c/intent_runtime.h``; a test keeps the two equal), the codes generated code
returns, the PTX manifest's code list, and what the loaders and the reference
interpreter raise. ``KernelError`` is the failure of a kernel call, compiled or
interpreted; ``intentc.KernelError`` is this class.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Status:
    name: str  # the C enumerator
    code: int
    meaning: str


STATUSES = (
    Status("INTENT_OK", 0, "success"),
    Status("INTENT_E_NULL", -1, "null descriptor, or null data with a non-zero element count"),
    Status("INTENT_E_DTYPE", -2, "wrong dtype (code, bits or lanes)"),
    Status("INTENT_E_RANK", -3, "wrong number of dimensions"),
    Status("INTENT_E_SHAPE", -4, "extent mismatch (named, literal, broadcast)"),
    Status("INTENT_E_STRIDE", -5, "invalid stride, e.g. zero stride on a written axis, or a read-only array"),
    Status("INTENT_E_BOUNDS", -6, "index or subregion out of range"),
    Status("INTENT_E_DOMAIN", -7, "invalid domain, e.g. step <= 0"),
    Status("INTENT_E_ALLOC", -8, "out of memory"),
    Status("INTENT_E_DEVICE", -9, "a tensor not on the device the kernel runs on"),
    Status("INTENT_E_INTERNAL", -10, "internal runtime failure"),
    Status("INTENT_E_SANITIZER", -11, "a sanitizer found a violation"),
    Status("INTENT_E_ALIAS", -12, "written tensors that overlap each other or themselves"),
)

CODE = {s.name: s.code for s in STATUSES}  # name -> code
NAME = {s.code: s.name for s in STATUSES}  # code -> name

E_NULL = CODE["INTENT_E_NULL"]
E_DTYPE = CODE["INTENT_E_DTYPE"]
E_RANK = CODE["INTENT_E_RANK"]
E_SHAPE = CODE["INTENT_E_SHAPE"]
E_STRIDE = CODE["INTENT_E_STRIDE"]
E_BOUNDS = CODE["INTENT_E_BOUNDS"]
E_DOMAIN = CODE["INTENT_E_DOMAIN"]
E_ALLOC = CODE["INTENT_E_ALLOC"]
E_DEVICE = CODE["INTENT_E_DEVICE"]
E_INTERNAL = CODE["INTENT_E_INTERNAL"]
E_SANITIZER = CODE["INTENT_E_SANITIZER"]
E_ALIAS = CODE["INTENT_E_ALIAS"]


class KernelError(RuntimeError):
    """A kernel call failed; ``code`` is the negative status, ``status`` its name, the
    message the check's (the runtime's, for compiled kernels)."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.status = NAME.get(code, str(code))
