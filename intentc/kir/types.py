"""KIR types: scalar dtypes, tensor types, domains. Frozen and structurally equal."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DType:
    """A scalar element type. ``kind`` is one of bool, int, uint, float, bfloat, index, mx."""

    name: str
    kind: str
    bits: int

    @property
    def is_int(self) -> bool:  # integers of any signedness, index included
        return self.kind in ("int", "uint", "index")

    @property
    def is_signed(self) -> bool:
        return self.kind in ("int", "index")

    @property
    def is_float(self) -> bool:
        return self.kind in ("float", "bfloat")

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def is_mx(self) -> bool:  # an OCP Microscaling element or scale type (kir/mx.py)
        return self.kind == "mx"

    @property
    def itemsize(self) -> int:
        return max(1, self.bits // 8)

    def __str__(self) -> str:
        return self.name


def _dtypes() -> dict[str, DType]:
    table = {"bool": DType("bool", "bool", 8), "index": DType("index", "index", 64),
             "bf16": DType("bf16", "bfloat", 16)}
    for bits in (8, 16, 32, 64):
        table[f"i{bits}"] = DType(f"i{bits}", "int", bits)
        table[f"u{bits}"] = DType(f"u{bits}", "uint", bits)
    for bits in (16, 32, 64):
        table[f"f{bits}"] = DType(f"f{bits}", "float", bits)
    # OCP Microscaling element and scale types (kind "mx"): storage types whose values are
    # converted to and from f32 with I.cast; formats, storage and rounding in kir/mx.py.
    for name, bits in (("f8e4m3", 8), ("f8e5m2", 8), ("f6e2m3", 6), ("f6e3m2", 6), ("f4e2m1", 4), ("e8m0", 8)):
        table[name] = DType(name, "mx", bits)
    return table


DTYPES: dict[str, DType] = _dtypes()
BOOL = DTYPES["bool"]
INDEX = DTYPES["index"]
I32 = DTYPES["i32"]
I64 = DTYPES["i64"]
F32 = DTYPES["f32"]
F64 = DTYPES["f64"]


@dataclass(frozen=True)
class TensorType:
    """A tensor value's type: element dtype and per-axis static extent (None = dynamic).

    A dynamic extent is a runtime shape value with its own identity (S1); two ``None``
    entries of different tensors are never assumed equal.
    """

    dtype: DType
    shape: tuple[int | None, ...]

    @property
    def rank(self) -> int:
        return len(self.shape)

    def __str__(self) -> str:
        dims = ", ".join("?" if e is None else str(e) for e in self.shape)
        return f"tensor<{self.dtype}[{dims}]>"


@dataclass(frozen=True)
class DomainType:
    """An ordered 1-D set of index coordinates [begin, end) with step > 0 (D1)."""

    def __str__(self) -> str:
        return "domain"


DOMAIN = DomainType()

Type = DType | TensorType | DomainType


def element_dtype(type_: Type) -> DType | None:
    if isinstance(type_, DType):
        return type_
    if isinstance(type_, TensorType):
        return type_.dtype
    return None


def parse_type(text: str) -> Type:
    """Inverse of str() for every KIR type."""
    text = text.strip()
    if text == "domain":
        return DOMAIN
    if text in DTYPES:
        return DTYPES[text]
    if text.startswith("tensor<") and text.endswith("]>"):
        inner = text[len("tensor<"):-1]
        dtype, dims = inner.split("[", 1)
        dims = dims[:-1].strip()
        shape = tuple(None if d.strip() == "?" else int(d) for d in dims.split(",")) if dims else ()
        return TensorType(DTYPES[dtype], shape)
    raise ValueError(f"not a KIR type: {text!r}")


def compatible(a: Type, b: Type) -> bool:
    """Equal types, or tensors of one dtype and rank whose known extents agree.

    Helpers are generic over extents, so a call passes ``tensor<f32[4]>`` where the
    helper declares ``tensor<f32[?]>``."""
    if a == b:
        return True
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        return a.dtype == b.dtype and a.rank == b.rank and all(
            x is None or y is None or x == y for x, y in zip(a.shape, b.shape))
    return False
