"""KIR ops of microscaled (T4) and sparse (T5) contractions.

``scaled_contract(a, sa, b, sb) {acc}``
    ``a: tensor<fa[M, G, C]>``, ``sa: tensor<e8m0[M, G]>``, ``b: tensor<fb[G, C, N]>``,
    ``sb: tensor<e8m0[N, G]>`` -> ``tensor<f32[M, N]>`` with ``fa``, ``fb`` MX element
    types: ``out[m, n] = sum over (g, c) of (a[m,g,c] * 2^sa[m,g]) * (b[g,c,n] * 2^sb[n,g])``
    (the formats are the operand dtypes, the scale relation the positional schema; the
    interpreter, ``intentc/interp/scaled.py``, defines the arithmetic).

``sparse_contract(values, meta, b) {format = "2:4", acc}`` and
``sparse_contract(offsets, columns, values, b) {format = "csr", acc}``
    a sparse ``[M, K]`` operand times a dense ``b: [K, N]`` -> ``tensor<acc[M, N]>``; the
    format attribute says how the metadata maps stored values to columns
    (``intentc/sema/scaled.py``). The op checks the metadata when it runs (``check``), with
    the messages of ``CHECKS``.

Their lowered forms are in ``lowered.py``.
"""
from __future__ import annotations

from intentc.kir.core import Op
from intentc.kir.ops.definition import (CHECK, STR_A, TENSOR, Attr, OpDef, Operand, declare, many, need, one_of,
                                        tensor_of_rank)
from intentc.kir.types import TensorType

MX_ELEMENTS = ("f8e4m3", "f8e5m2", "f6e2m3", "f6e3m2", "f4e2m1")
SPARSE_FORMATS = ("2:4", "csr")

# The run-time checks of sparse metadata: one message per check (printf %lld arguments),
# shared by the interpreter and the compiled code so both fail with the same words.
CHECKS = {
    "meta24": ("domain", "I.sparse_contract(\"2:4\"): meta[%lld, %lld] = %lld does not hold two increasing "
                         "positions of a group of four (T5)"),
    "csr_first": ("domain", "I.sparse_contract(\"csr\"): offsets[0] = %lld, but CSR offsets start at 0 (T5)"),
    "csr_order": ("domain", "I.sparse_contract(\"csr\"): offsets decrease at row %lld: %lld then %lld (T5)"),
    "csr_end": ("domain", "I.sparse_contract(\"csr\"): offsets[M] = %lld exceeds the %lld stored values (T5)"),
    "csr_column": ("bounds", "I.sparse_contract(\"csr\"): columns[%lld] = %lld is outside [0, %lld) (T5)"),
}


def _check_scaled_contract(op: Op) -> None:
    a, sa, b, sb = (v.type for v in op.operands)
    need(a.dtype.name in MX_ELEMENTS and b.dtype.name in MX_ELEMENTS, op, "values are MX element types")
    need(sa.dtype.name == "e8m0" and sb.dtype.name == "e8m0", op, "scales are e8m0")
    need(op.attrs["acc"] == "f32", op, "accumulates in f32")
    extent: dict[str, int] = {}
    for letters, shape in (("MGC", a.shape), ("MG", sa.shape), ("GCN", b.shape), ("NG", sb.shape)):
        for letter, e in zip(letters, shape):
            if e is not None:
                need(extent.setdefault(letter, e) == e, op, f"axis {letter} has two extents (T4)")
    res = op.result.type
    need(res.dtype.name == "f32", op, "the result is f32[M, N]")
    need(all(e is None or extent.get(c, e) == e for c, e in zip("MN", res.shape)), op, "result extents are M, N")


def _check_sparse_contract(op: Op) -> None:
    form = op.attrs["format"]
    types = [v.type for v in op.operands]
    need(len(types) == (3 if form == "2:4" else 4), op, "operands follow the format")
    b = types[-1]
    values = types[0] if form == "2:4" else types[2]
    need(b.rank == 2 and values.dtype == b.dtype and values.dtype.is_float, op, "float values like b: [K, N]")
    if form == "2:4":
        meta = types[1]
        need(values.rank == 2 and meta.rank == 2 and meta.dtype.name == "u8", op,
             "values: [M, K/2], meta: u8[M, K/4]")
    else:
        offsets, columns = types[0], types[1]
        need(offsets.rank == 1 and columns.rank == 1 and values.rank == 1, op, "offsets, columns, values are 1-D")
        need(offsets.dtype == columns.dtype and offsets.dtype.is_int, op, "offsets and columns share an int dtype")
    res = op.result.type
    need(isinstance(res, TensorType) and res.dtype.name == op.attrs["acc"], op, "the result is acc[M, N]")


_RANK2, _RANK3 = tensor_of_rank(2), tensor_of_rank(3)

OPS = declare(
    # the schema is [M, G, C] / [M, G] x [G, C, N] / [N, G] (T4)
    OpDef("scaled_contract", "structured",
          operands=(Operand("a", _RANK3), Operand("sa", _RANK2), Operand("b", _RANK3), Operand("sb", _RANK2)),
          results=(Operand("result", _RANK2),), attrs={"acc": Attr(STR_A)}, check=_check_scaled_contract, rule="T4"),
    OpDef("sparse_contract", "structured", operands=(many("operands", TENSOR),), results=(Operand("result", _RANK2),),
          attrs={"format": Attr(one_of("a sparse format", SPARSE_FORMATS)), "acc": Attr(STR_A)}, effects=CHECK,
          check=_check_sparse_contract, rule="T5"),
)
