"""Microscaled (T4) and sparse (T5) contractions, and the rules for MX values.

``I.scaled_contract(a, sa, b, sb, acc=f32)`` has the closed positional schema of T4:
``a: [M, G, C]`` with scales ``sa: [M, G]``, ``b: [G, C, N]`` with scales ``sb: [N, G]``,
result ``[M, N]``; ``out[m, n] = sum over g, c of (a[m, g, c] * 2^sa[m, g]) *
(b[g, c, n] * 2^sb[n, g])``. The values are MX element types (``f8e4m3``, ``f8e5m2``,
``f6e2m3``, ``f6e3m2``, ``f4e2m1``; ``a`` and ``b`` may differ), the scales ``e8m0``.
With ``block=C`` the values may also be given flat, ``a: [M, K]`` and ``b: [K, N]`` with
``K = G * C``: sema reshapes them to the schema (a row-major split of K), and a K that is
not a multiple of the block is a T4 error (at compile time when K is static).

``I.sparse_contract(format, ...)`` multiplies a sparse ``[M, K]`` operand by a dense
``b: [K, N]`` (T5). Formats:

- ``"2:4"``: ``I.sparse_contract("2:4", values, meta, b)`` with ``values: [M, K/2]`` and
  ``meta: u8[M, K/4]``. Each group ``q`` of four consecutive columns ``4q .. 4q+3`` of
  row ``m`` keeps two: ``meta[m, q]`` holds their positions within the group, the first
  in bits 0-1 and the second in bits 2-3, strictly increasing; bits 4-7 are zero.
  ``values[m, 2q]`` and ``values[m, 2q + 1]`` are the two kept values, in that order.
- ``"csr"``: ``I.sparse_contract("csr", offsets, columns, values, b)`` with
  ``offsets: [M + 1]`` (i32, i64 or index), ``columns: [nnz]`` (the same dtype) and
  ``values: [nnz]``: row ``m`` holds ``values[p]`` at column ``columns[p]`` for
  ``offsets[m] <= p < offsets[m + 1]``. ``offsets[0] == 0``, offsets never decrease,
  ``offsets[M] <= nnz`` and every stored column is in ``[0, K)``; duplicates add up.

The metadata is interpreted by the KIR op itself and checked when the kernel runs,
before anything is written: invalid metadata fails the call (``INTENT_E_DOMAIN``, a
column out of range ``INTENT_E_BOUNDS``). Only the stored entries are summed, in their
order (k order for 2:4, storage order for CSR): the structural zeros contribute nothing.

The rules for MX values themselves (storage only) are in mx.py.
"""
from __future__ import annotations

from intentc.diagnostics import error
from intentc.kir.contract_spec import acc_allowed, default_acc
from intentc.kir.types import BOOL, DTYPES, INDEX, TensorType
from intentc.parse import ast
from intentc.sema.annotations import dtype_of
from intentc.sema.arguments import keywords, tensor_arg
from intentc.sema.mx import MX_ELEMENTS
from intentc.sema.shapes import static_shape

F32 = DTYPES["f32"]
SPARSE_FORMATS = ("2:4", "csr")

def _same_extent(builder, first, second, span, rule: str, message: str, hint: str) -> None:
    """Equal extents: a diagnostic when both are static, else a run-time check."""
    if isinstance(first, int) and isinstance(second, int):
        if first != second:
            raise error(message.replace("%lld", "{}", 2).format(first, second), span, rule=rule, hint=hint)
        return
    if first is second:
        return
    builder.emit("assert_eq", [builder.index_value(first, span), builder.index_value(second, span)], span=span,
                 attrs={"what": f"{message} ({rule})", "rule": rule})


# ---- scaled_contract (T4) -------------------------------------------------------------------------
_T4_USAGE = ("I.scaled_contract(a, sa, b, sb, acc=f32) with a: [M, G, C], sa: e8m0[M, G], b: [G, C, N], "
             "sb: e8m0[N, G] (or a: [M, K], b: [K, N] with block=C)")


def _scaled_contract(builder, name: str, node: ast.Call):
    kwargs = keywords(node, ("acc", "block"), "scaled_contract", "T4")
    if len(node.args) != 4:
        raise error(f"I.scaled_contract takes four tensors (a, sa, b, sb), got {len(node.args)} arguments",
                    node.span, rule="T4", hint=_T4_USAGE)
    names = ("a", "sa", "b", "sb")
    a, sa, b, sb = (tensor_arg(builder, arg, f"'{n}' of I.scaled_contract", "T4", _T4_USAGE)
                    for arg, n in zip(node.args, names))
    spans = dict(zip(names, (arg.span for arg in node.args)))
    for value, n in ((a, "a"), (b, "b")):
        if value.type.dtype.name not in MX_ELEMENTS:
            raise error(f"'{n}' of I.scaled_contract holds {value.type.dtype}, not an MX element type", spans[n],
                        rule="T4", hint="the values are " + ", ".join(MX_ELEMENTS) + "; I.cast f32 values to one")
    for value, n in ((sa, "sa"), (sb, "sb")):
        if value.type.dtype.name != "e8m0":
            raise error(f"the scales '{n}' of I.scaled_contract are {value.type.dtype}, not e8m0", spans[n],
                        rule="T4", hint="scales are e8m0 powers of two: I.cast(s, e8m0) from f32")
    block = None
    if "block" in kwargs:
        block_node = kwargs["block"]
        if not isinstance(block_node, ast.Constant) or not isinstance(block_node.value, int) \
                or isinstance(block_node.value, bool) or block_node.value <= 0:
            raise error("block= must be a positive integer literal (the C of the schema)", block_node.span,
                        rule="T4", hint="e.g. block=32, the MX block size")
        block = block_node.value
    if a.type.rank == 2 and b.type.rank == 2 and block is not None:
        a, b = _split_k(builder, a, b, block, spans, node.span)
    for value, n, rank, axes in ((a, "a", 3, "[M, G, C]"), (sa, "sa", 2, "[M, G]"), (b, "b", 3, "[G, C, N]"),
                                 (sb, "sb", 2, "[N, G]")):
        if value.type.rank != rank:
            hint = _T4_USAGE
            if n in ("a", "b") and value.type.rank == 2 and block is None:
                hint = "give block=C to split K into [G, C], or reshape to " + axes
            raise error(f"'{n}' of I.scaled_contract has rank {value.type.rank}, but the schema is {n}: {axes}",
                        spans[n], rule="T4", hint=hint)
    m, g, c = builder.shape_of(a)
    g_b, c_b, n = builder.shape_of(b)
    m_s, g_s = builder.shape_of(sa)
    n_s, g_t = builder.shape_of(sb)
    hint = "the schema is a: [M, G, C], sa: [M, G], b: [G, C, N], sb: [N, G]"
    checks = (
        (m, m_s, "sa", "M: a has %lld rows but sa has %lld"),
        (g, g_s, "sa", "G: a has %lld blocks per row but sa has %lld scales per row"),
        (g, g_b, "b", "G: a has %lld blocks but b has %lld"),
        (c, c_b, "b", "C: a has %lld elements per block but b has %lld"),
        (n, n_s, "sb", "N: b has %lld columns but sb has %lld rows"),
        (g, g_t, "sb", "G: a has %lld blocks but sb has %lld scales per column"),
    )
    for first, second, where, message in checks:
        _same_extent(builder, first, second, spans[where], "T4", "I.scaled_contract: " + message, hint)
    if block is not None:
        _same_extent(builder, c, block, spans["a"], "T4",
                     "I.scaled_contract: blocks of a have %lld elements but block=%lld", hint)
    acc = F32
    if "acc" in kwargs:
        acc = dtype_of(kwargs["acc"])
        if acc != F32:
            raise error(f"I.scaled_contract accumulates in f32, not {acc}", kwargs["acc"].span, rule="T4",
                        hint="drop acc= or write acc=f32; I.cast the result to another dtype")
    static = static_shape((m, n))
    op = builder.emit("scaled_contract", [a, sa, b, sb], [TensorType(acc, static)], {"acc": acc.name},
                      span=node.span)
    builder.shapes[id(op.result)] = [m, n]
    return op.result


def _split_k(builder, a, b, block: int, spans: dict, span):
    """a: [M, K] -> [M, K/C, C] and b: [K, N] -> [K/C, C, N] (row-major splits of K); K must
    be a multiple of the block (T4)."""
    m, k = builder.shape_of(a)
    k_b, n = builder.shape_of(b)
    _same_extent(builder, k, k_b, spans["b"], "T4",
                 "I.scaled_contract: a has K = %lld columns but b has K = %lld rows",
                 "a: [M, K] and b: [K, N] share K")
    if isinstance(k, int):
        if k % block:
            raise error(f"K = {k} is not a multiple of the block size {block}", spans["a"], rule="T4",
                        hint=f"every MX block has {block} elements: pad K to a multiple of {block}")
        g = k // block
        g_value = builder.const(g, INDEX, span)
    else:
        size = builder.const(block, INDEX, span)
        rest = builder.emit("mod", [k, size], [INDEX], span=span).result
        ok = builder.emit("cmp", [rest, builder.const(0, INDEX, span)], [BOOL], {"pred": "eq"}, span=span).result
        builder.emit("assert_true", [ok, k], span=span, attrs={
            "what": f"I.scaled_contract: K = %lld is not a multiple of the block size {block} (T4)",
            "rule": "T4", "code": "shape"})
        g_value = builder.emit("floordiv", [k, size], [INDEX], span=span).result
        g = g_value
    c_value = builder.const(block, INDEX, span)
    m_value, n_value = builder.index_value(m, span), builder.index_value(n, span)
    static_g = g if isinstance(g, int) else None
    a3 = builder.emit("reshape", [a, m_value, g_value, c_value],
                      [TensorType(a.type.dtype, (a.type.shape[0], static_g, block))], {"split": "a"},
                      span=span).result
    b3 = builder.emit("reshape", [b, g_value, c_value, n_value],
                      [TensorType(b.type.dtype, (static_g, block, b.type.shape[1]))], {"split": "b"},
                      span=span).result
    builder.shapes[id(a3)] = [m, g, block]
    builder.shapes[id(b3)] = [g, block, n]
    return a3, b3


# ---- sparse_contract (T5) -------------------------------------------------------------------------
_T5_USAGE = ('I.sparse_contract("2:4", values, meta, b) with values: [M, K/2], meta: u8[M, K/4], b: [K, N]; '
             'or I.sparse_contract("csr", offsets, columns, values, b)')
_INDEX_DTYPES = ("i32", "i64", "index")


def _sparse_contract(builder, name: str, node: ast.Call):
    kwargs = keywords(node, ("acc",), "sparse_contract", "T5")
    if not node.args or not isinstance(node.args[0], ast.Constant) or not isinstance(node.args[0].value, str):
        raise error("the first argument of I.sparse_contract is the format: \"2:4\" or \"csr\"",
                    node.args[0].span if node.args else node.span, rule="T5", hint=_T5_USAGE)
    form = node.args[0].value
    if form not in SPARSE_FORMATS:
        raise error(f"unknown sparse format \"{form}\"", node.args[0].span, rule="T5",
                    hint="the formats are \"2:4\" (2 of every 4 along K kept) and \"csr\"")
    names = ("values", "meta", "b") if form == "2:4" else ("offsets", "columns", "values", "b")
    if len(node.args) != 1 + len(names):
        raise error(f"I.sparse_contract(\"{form}\", ...) takes {len(names)} tensors ({', '.join(names)}), got "
                    f"{len(node.args) - 1}", node.span, rule="T5", hint=_T5_USAGE)
    operands = {n: tensor_arg(builder, arg, f"'{n}' of I.sparse_contract", "T5", _T5_USAGE)
                for n, arg in zip(names, node.args[1:])}
    spans = {n: arg.span for n, arg in zip(names, node.args[1:])}
    values, b = operands["values"], operands["b"]
    dtype = values.type.dtype
    if not dtype.is_float or dtype.kind == "bfloat":
        raise error(f"the sparse values are {dtype}; I.sparse_contract multiplies f16, f32 or f64 values",
                    spans["values"], rule="T5", hint="I.cast the values (and b) to f32")
    if b.type.dtype != dtype:
        raise error(f"the sparse values are {dtype} but b is {b.type.dtype}", spans["b"], rule="T5",
                    hint="cast one of them with I.cast; the accumulator is chosen with acc=")
    ranks = {"values": 2 if form == "2:4" else 1, "meta": 2, "b": 2, "offsets": 1, "columns": 1}
    schema = {"values": "[M, K/2]" if form == "2:4" else "[nnz]", "meta": "[M, K/4]", "b": "[K, N]",
              "offsets": "[M + 1]", "columns": "[nnz]"}
    for n in names:
        if operands[n].type.rank != ranks[n]:
            raise error(f"'{n}' of I.sparse_contract(\"{form}\", ...) has rank {operands[n].type.rank}, but the "
                        f"schema is {n}: {schema[n]}", spans[n], rule="T5", hint=_T5_USAGE)
    if "acc" in kwargs:
        acc = dtype_of(kwargs["acc"])
        if not acc_allowed(dtype, acc):
            raise error(f"acc={acc} cannot accumulate products of {dtype}", kwargs["acc"].span, rule="T5",
                        hint="a float at least as wide as the values (f16 in f32)")
    else:
        acc = default_acc(dtype)
    k, n = builder.shape_of(b)
    if form == "2:4":
        meta = operands["meta"]
        if meta.type.dtype.name != "u8":
            raise error(f"the 2:4 metadata is {meta.type.dtype}, not u8", spans["meta"], rule="T5",
                        hint="one u8 per group of four: first kept position in bits 0-1, second in bits 2-3")
        m, half = builder.shape_of(values)
        m_meta, groups = builder.shape_of(meta)
        _same_extent(builder, m, m_meta, spans["meta"], "T5",
                     "I.sparse_contract(\"2:4\"): values have %lld rows but meta has %lld", _T5_USAGE)
        _same_extent(builder, half, _times(builder, groups, 2, node.span), spans["values"], "T5",
                     "I.sparse_contract(\"2:4\"): values have %lld columns but 2 per group of meta make %lld",
                     "values: [M, K/2] holds two values per group of four")
        _same_extent(builder, k, _times(builder, groups, 4, node.span), spans["b"], "T5",
                     "I.sparse_contract(\"2:4\"): b has K = %lld rows but meta describes 4 * groups = %lld",
                     "meta: [M, K/4] has one group per four rows of b")
        args = [values, meta, b]
    else:
        offsets, columns = operands["offsets"], operands["columns"]
        for what in ("offsets", "columns"):
            if operands[what].type.dtype.name not in _INDEX_DTYPES:
                raise error(f"the CSR {what} are {operands[what].type.dtype}; they are i32, i64 or index",
                            spans[what], rule="T5", hint="I.cast them to i32 or i64")
        if columns.type.dtype != offsets.type.dtype:
            raise error(f"the CSR columns are {columns.type.dtype} but the offsets are {offsets.type.dtype}",
                        spans["columns"], rule="T5", hint="use one index dtype for both")
        (rows1,) = builder.shape_of(offsets)
        (nnz,) = builder.shape_of(columns)
        (nnz_v,) = builder.shape_of(values)
        _same_extent(builder, nnz, nnz_v, spans["values"], "T5",
                     "I.sparse_contract(\"csr\"): %lld columns but %lld values", "columns and values pair up")
        if isinstance(rows1, int):
            if rows1 < 1:
                raise error("the CSR offsets need at least one entry (offsets: [M + 1])", spans["offsets"],
                            rule="T5", hint="offsets[0] == 0 and offsets[M] is the number of stored values")
            m = rows1 - 1
        else:
            one = builder.const(1, INDEX, node.span)
            ok = builder.emit("cmp", [rows1, one], [BOOL], {"pred": "ge"}, span=node.span).result
            builder.emit("assert_true", [ok], span=node.span, attrs={
                "what": "I.sparse_contract(\"csr\"): offsets need at least one entry, offsets: [M + 1] (T5)",
                "rule": "T5", "code": "shape"})
            m = builder.emit("sub", [rows1, one], [INDEX], span=node.span).result
        args = [offsets, columns, values, b]
    static = static_shape((m, n))
    op = builder.emit("sparse_contract", args, [TensorType(acc, static)], {"format": form, "acc": acc.name},
                      span=node.span)
    builder.shapes[id(op.result)] = [m, n]
    return op.result


def _times(builder, extent, factor: int, span):
    if isinstance(extent, int):
        return extent * factor
    return builder.emit("mul", [extent, builder.const(factor, INDEX, span)], [INDEX], span=span).result


BUILTINS = {"scaled_contract": _scaled_contract, "sparse_contract": _sparse_contract}
