"""KIR ops of microscaled (T4) and sparse (T5) contractions, and their lowered forms.

``scaled_contract(a, sa, b, sb) {acc}``
    ``a: tensor<fa[M, G, C]>``, ``sa: tensor<e8m0[M, G]>``, ``b: tensor<fb[G, C, N]>``,
    ``sb: tensor<e8m0[N, G]>`` -> ``tensor<f32[M, N]>`` with ``fa``, ``fb`` MX element
    types: ``out[m, n] = sum over (g, c) of (a[m,g,c] * 2^sa[m,g]) * (b[g,c,n] * 2^sb[n,g])``
    (the formats are the operand dtypes, the scale relation the positional schema; the
    interpreter, ``interp_scaled.py``, defines the arithmetic).

``sparse_contract(values, meta, b) {format = "2:4", acc}`` and
``sparse_contract(offsets, columns, values, b) {format = "csr", acc}``
    a sparse ``[M, K]`` operand times a dense ``b: [K, N]`` -> ``tensor<acc[M, N]>``; the
    format attribute says how the metadata maps stored values to columns
    (``intentc/sema/scaled.py``). The op checks the metadata when it runs (``check``).

Lowered forms (``intentc/lower/scaled_lowering.py``; built by ``expand_tensor_exprs``,
lowered by ``to_physical``):

``scaled_tiles(a, sa32, b, sb32, table, out, m, n, g, c) {...}``
    the register-tiled loop nest of a scaled contraction: ``a`` and ``b`` are the codes in
    memory (parameters or buffers), ``sa32: f32[M, G]`` and ``sb32: f32[G, N]`` the decoded
    scales, ``table: f32[2^bits]`` the values of ``a``'s codes, ``out: f32[M, N]``.

``sparse24_tiles(vals, cols, bp, out, m, n, k, half) {...}`` and
``csr_tiles(offsets, columns, values, bp, out, m, n, k) {...}``
    the row-gathering loop nests of sparse contractions over ``b`` packed in panels
    (``intentc/lower/sparse_lowering.py``).
"""
from __future__ import annotations

from intentc.kir.core import Op
from intentc.kir.ops import CHECK, PURE, Effect, _need, _register
from intentc.kir.types import INDEX, TensorType

MX_ELEMENTS = ("f8e4m3", "f8e5m2", "f6e2m3", "f6e3m2", "f4e2m1")

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


def _verify_scaled_contract(op: Op) -> None:
    _need(len(op.operands) == 4 and len(op.results) == 1, op, "takes a, sa, b, sb and yields one tensor")
    a, sa, b, sb = (v.type for v in op.operands)
    _need(all(isinstance(t, TensorType) for t in (a, sa, b, sb)), op, "operands are tensors")
    _need(a.rank == 3 and sa.rank == 2 and b.rank == 3 and sb.rank == 2, op,
          "the schema is [M, G, C] / [M, G] x [G, C, N] / [N, G] (T4)")
    _need(a.dtype.name in MX_ELEMENTS and b.dtype.name in MX_ELEMENTS, op, "values are MX element types")
    _need(sa.dtype.name == "e8m0" and sb.dtype.name == "e8m0", op, "scales are e8m0")
    _need(op.attrs.get("acc") == "f32", op, "accumulates in f32")
    extent: dict[str, int] = {}
    for letters, shape in (("MGC", a.shape), ("MG", sa.shape), ("GCN", b.shape), ("NG", sb.shape)):
        for letter, e in zip(letters, shape):
            if e is not None:
                _need(extent.setdefault(letter, e) == e, op, f"axis {letter} has two extents (T4)")
    res = op.result.type
    _need(isinstance(res, TensorType) and res.rank == 2 and res.dtype.name == "f32", op, "the result is f32[M, N]")
    _need(all(e is None or extent.get(c, e) == e for c, e in zip("MN", res.shape)), op, "result extents are M, N")


def _verify_sparse_contract(op: Op) -> None:
    form = op.attrs.get("format")
    _need(form in ("2:4", "csr"), op, f"unknown format {form!r}")
    types = [v.type for v in op.operands]
    _need(all(isinstance(t, TensorType) for t in types), op, "operands are tensors")
    _need(len(types) == (3 if form == "2:4" else 4) and len(op.results) == 1, op, "operands follow the format")
    b = types[-1]
    values = types[0] if form == "2:4" else types[2]
    _need(b.rank == 2 and values.dtype == b.dtype and values.dtype.is_float, op, "float values like b: [K, N]")
    if form == "2:4":
        meta = types[1]
        _need(values.rank == 2 and meta.rank == 2 and meta.dtype.name == "u8", op,
              "values: [M, K/2], meta: u8[M, K/4]")
    else:
        offsets, columns = types[0], types[1]
        _need(offsets.rank == 1 and columns.rank == 1 and values.rank == 1, op, "offsets, columns, values are 1-D")
        _need(offsets.dtype == columns.dtype and offsets.dtype.is_int, op, "offsets and columns share an int dtype")
    res = op.result.type
    _need(isinstance(res, TensorType) and res.rank == 2 and res.dtype.name == op.attrs.get("acc"), op,
          "the result is acc[M, N]")


def _verify_scaled_tiles(op: Op) -> None:
    _need(len(op.operands) == 10 and not op.results, op, "six tensors and four sizes")
    _need(all(isinstance(v.type, TensorType) for v in op.operands[:6]), op, "tensors first")
    _need(all(v.type == INDEX for v in op.operands[6:]), op, "sizes are index")


def _verify_sparse_tiles(op: Op) -> None:
    tensors = 4 if op.name == "sparse24_tiles" else 5
    _need(len(op.operands) == tensors + (4 if tensors == 4 else 3) and not op.results, op, "tensors and sizes")
    _need(all(isinstance(v.type, TensorType) for v in op.operands[:tensors]), op, "tensors first")
    _need(all(v.type == INDEX for v in op.operands[tensors:]), op, "sizes are index")


_register("scaled_contract", "structured", PURE, _verify_scaled_contract)
_register("sparse_contract", "structured", CHECK, _verify_sparse_contract)
_register("scaled_tiles", "structured", tuple(Effect("read", k) for k in range(5)) + (Effect("write", 5),),
          _verify_scaled_tiles)
_register("sparse24_tiles", "structured", tuple(Effect("read", k) for k in range(3)) + (Effect("write", 3),),
          _verify_sparse_tiles)
_register("csr_tiles", "structured", tuple(Effect("read", k) for k in range(4)) + (Effect("write", 4),),
          _verify_sparse_tiles)
