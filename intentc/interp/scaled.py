"""The meaning of ``scaled_contract`` (T4) and ``sparse_contract`` (T5).

Part of the reference interpreter (``intentc/interp/``; ``registry.py`` collects
``HANDLERS``); the op forms are documented in ``intentc/kir/ops/scaled.py``, the surface in
``intentc/sema/scaled.py``.

scaled_contract
    Every value and scale is decoded to f32 exactly (``kir/mx.py``). The scaled operands
    are the f32 products ``x[m, g, c] = a[m, g, c] * 2^sa[m, g]`` and
    ``y[g, c, n] = b[g, c, n] * 2^sb[n, g]`` (exact unless they leave the f32 range).
    ``out[m, n]`` starts at 0 and adds ``x[m, k] * y[k, n]`` for ``k = g * C + c`` in
    increasing order with a fused multiply-add: the exact product plus the running sum,
    rounded once to f32. (Each of ``x``, ``y`` has at most 4 significant bits, so the
    product is exact in f64 and the f64 sum rounds to the same f32 as a true fused
    multiply-add; within the f32 range the product is exact in f32 too, so fusing only
    matters where a product overflows or falls below the normal range.) A NaN scale makes
    its block's contributions NaN (0 * NaN included).

sparse_contract
    The metadata is checked first, in the order of ``kir/ops/scaled.py``'s ``CHECKS``, and the first
    violation (in row-major order) fails the call with that message: nothing is written.
    Then each result element sums, in the acc dtype starting from 0, the products of the
    stored values of its row (converted to acc) with the matching rows of ``b`` (converted
    to acc): for 2:4 in increasing column order, for CSR in storage order, rounding each
    product and each sum (no fusing: the compiled code has the same bits). Structural
    zeros contribute nothing (a 0 * inf they would have made is not there).
"""
from __future__ import annotations

import numpy as np

from intentc.base.status import E_BOUNDS, E_DOMAIN, KernelError
from intentc.interp.numeric import numpy_dtype
from intentc.kir import mx
from intentc.kir.core import Op
from intentc.kir.ops.scaled import CHECKS
from intentc.kir.types import DTYPES


def _fail(it, op: Op, check: str, *args):
    code, what = CHECKS[check]
    text = what.replace("%lld", "{}").format(*(int(a) for a in args))
    raise KernelError(E_BOUNDS if code == "bounds" else E_DOMAIN, f"{it.kernel_name}: {text}{it.where(op)}")


def _op_scaled_contract(it, op: Op, env: dict):
    a, sa, b, sb = (np.asarray(env[id(v)]) for v in op.operands)
    fa, fb = op.operands[0].type.dtype.name, op.operands[2].type.dtype.name
    m, g, c = a.shape
    n = b.shape[2]
    with np.errstate(all="ignore"):
        x = mx.decode(mx.codes(a), fa) * mx.decode(mx.codes(sa), "e8m0")[:, :, None]
        y = mx.decode(mx.codes(b), fb) * mx.decode(mx.codes(sb), "e8m0").T[:, None, :]
        x = x.reshape(m, g * c).astype(np.float32)
        y = y.reshape(g * c, n).astype(np.float32)
        total = np.zeros((m, n), np.float32)
        x64, y64 = x.astype(np.float64), y.astype(np.float64)
        for k in range(g * c):  # fused: the exact product plus the sum, rounded once to f32
            total = (total.astype(np.float64) + x64[:, k, None] * y64[None, k, :]).astype(np.float32)
    env[id(op.result)] = total


def _op_sparse_contract(it, op: Op, env: dict):
    acc = numpy_dtype(DTYPES[op.attrs["acc"]])
    b = np.asarray(env[id(op.operands[-1])])
    k, n = b.shape
    with np.errstate(all="ignore"):
        wide = b.astype(acc)
        if op.attrs["format"] == "2:4":
            result = _two_four(it, op, env, wide, k, acc)
        else:
            result = _csr(it, op, env, wide, k, acc)
    env[id(op.result)] = result


def _two_four(it, op: Op, env: dict, b: np.ndarray, k: int, acc) -> np.ndarray:
    values = np.asarray(env[id(op.operands[0])]).astype(acc)
    meta = np.asarray(env[id(op.operands[1])]).astype(np.int64)
    rows, groups = meta.shape
    first, second = meta & 3, (meta >> 2) & 3
    bad = ((meta >> 4) != 0) | (first >= second)
    if bad.any():
        r, q = np.argwhere(bad)[0]
        _fail(it, op, "meta24", r, q, meta[r, q])
    base = 4 * np.arange(groups)[None, :]
    columns = np.empty((rows, 2 * groups), np.int64)
    columns[:, 0::2] = base + first
    columns[:, 1::2] = base + second
    total = np.zeros((rows, b.shape[1]), acc)
    for t in range(2 * groups):  # the stored values of every row, in increasing column order
        total = total + values[:, t, None] * b[columns[:, t], :]
    return total


def _csr(it, op: Op, env: dict, b: np.ndarray, k: int, acc) -> np.ndarray:
    offsets = np.asarray(env[id(op.operands[0])]).astype(np.int64)
    columns = np.asarray(env[id(op.operands[1])]).astype(np.int64)
    values = np.asarray(env[id(op.operands[2])]).astype(acc)
    rows, nnz = offsets.shape[0] - 1, columns.shape[0]
    if offsets[0] != 0:
        _fail(it, op, "csr_first", offsets[0])
    down = np.nonzero(offsets[1:] < offsets[:-1])[0]
    if down.size:
        r = down[0]
        _fail(it, op, "csr_order", r, offsets[r], offsets[r + 1])
    if offsets[rows] > nnz:
        _fail(it, op, "csr_end", offsets[rows], nnz)
    stored = columns[:offsets[rows]]
    out = np.nonzero((stored < 0) | (stored >= k))[0]
    if out.size:
        p = out[0]
        _fail(it, op, "csr_column", p, stored[p], k)
    total = np.zeros((rows, b.shape[1]), acc)
    lengths = offsets[1:] - offsets[:-1]
    for j in range(int(lengths.max()) if rows else 0):  # the j-th stored value of every row that has one
        live = np.nonzero(lengths > j)[0]
        p = offsets[live] + j
        total[live] = total[live] + values[p, None] * b[columns[p], :]
    return total


HANDLERS = {"scaled_contract": _op_scaled_contract, "sparse_contract": _op_sparse_contract}
