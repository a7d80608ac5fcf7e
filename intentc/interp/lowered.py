"""The meaning of the KIR ops that only lowering builds: ``contract_tiles``, ``lane_chains``,
``scaled_tiles``, ``sparse24_tiles`` and ``csr_tiles`` (declared in ``kir/ops/lowered.py``).

Part of the reference interpreter (``registry.py`` collects these handlers), so that KIR after
``expand_tensor_exprs`` runs too and can be compared with the KIR it came from. Each handler
reads its operands in the packed layout the lowering wrote (``intentc/lower/``: the tile, lane-chain and family lowerings)
and computes what the op stands for with the numeric rules of the op it replaced:

- ``contract_tiles``: ``c[b, i, j]`` starts at 0 and adds ``A[b, i, t] * B[b, j, t]`` for ``t``
  in increasing order, rounding each product and each sum to the accumulator (integers wrap),
  as ``contract`` does; the compiled code may fuse and regroup (T3, T7);
- ``lane_chains``: each chain runs its combine over its members in order from its own start
  tuple, writing the picked state (before the combine when ``exclusive``) to the outputs;
- ``scaled_tiles``: ``scaled_contract``'s sum over ``k = g * C + c`` of the f32 products of
  the decoded codes (``table``) and scales, each added with one rounding (a fused multiply-add);
- ``sparse24_tiles`` and ``csr_tiles``: ``sparse_contract``'s sums of the stored values times
  the selected rows of ``b``, in column (2:4) or storage (CSR) order, each product and sum
  rounded. The metadata checks ran before, as their own ops.

The scratch operand of ``contract_tiles`` holds nothing a program can read; it is left alone.
"""
from __future__ import annotations

import numpy as np

from intentc.kir import mx
from intentc.kir.core import Op


def _arrays(env: dict, values) -> list[np.ndarray]:
    return [env[id(v)] for v in values]


def _sizes(env: dict, values) -> list[int]:
    return [int(env[id(v)]) for v in values]


def _panel_offsets(rows: int, width: int, batch: int, k: int) -> np.ndarray:
    """[batch, rows] offsets of element t = 0 in panels of ``width`` rows, each contiguous over
    k: row r of batch b is at ``(b * padded + (r // width) * width) * k + r % width``, element t
    ``t * width`` further (``contract_lowering.pack``)."""
    padded = -(-rows // width) * width
    r = np.arange(rows)
    b = np.arange(batch)[:, None]
    return (b * padded + (r // width) * width) * k + r % width


def _op_contract_tiles(it, op: Op, env: dict):
    ap, bp, c, _scratch = _arrays(env, op.operands[:4])
    batch, m, n, k = _sizes(env, op.operands[4:])
    mr, nr = op.attrs["mr"], op.attrs["nr"]
    rows_a, rows_b = _panel_offsets(m, mr, batch, k), _panel_offsets(n, nr, batch, k)
    total = np.zeros((batch, m, n), ap.dtype)
    with np.errstate(all="ignore"):
        for t in range(k):
            a_t, b_t = ap[rows_a + t * mr], bp[rows_b + t * nr]
            total = np.add(total, np.multiply(a_t[:, :, None], b_t[:, None, :], dtype=ap.dtype), dtype=ap.dtype)
    c[...] = total if c.ndim == 3 else total.reshape(m, n)


def _scalar(value, dtype):
    """An element read from memory as the interpreter represents scalars."""
    if dtype.is_bool:
        return bool(value)
    if dtype.is_float:
        return value  # a NumPy scalar of the array's dtype
    return int(value)


def _op_lane_chains(it, op: Op, env: dict):
    a = op.attrs
    n_in, n_out, k, lanes, segment = (a[key] for key in ("n_in", "n_out", "k", "lanes", "segment"))
    inputs = op.operands[:n_in]
    ins = _arrays(env, inputs)
    outs = _arrays(env, op.operands[n_in:n_in + n_out])
    first = int(env[id(op.operands[n_in + n_out])])
    starts = [env[id(v)] for v in op.operands[n_in + n_out + 1:]]
    combine = op.regions[0]
    local = dict(env)  # the combine's captures, if any, read from the enclosing scope
    finals = []
    for j in range(lanes):
        accs = starts[j * k:(j + 1) * k]
        for t in range(segment):
            member = (first + j) * segment + t
            items = [_scalar(x[member], v.type.dtype) for x, v in zip(ins, inputs)]
            local.update((id(arg), value) for arg, value in zip(combine.args, list(accs) + items))
            combined = it.run_block(combine, local)
            state = accs if a["exclusive"] else combined
            for out, pick in zip(outs, a["picks"]):
                out[member] = state[pick]
            accs = combined
        finals += list(accs)
    for result, value in zip(op.results, finals):
        env[id(result)] = value


def _logical(codes: np.ndarray, axes: list, shape: tuple[int, int, int], c: int) -> np.ndarray:
    """The [*, *, *] codes of a scaled operand held in memory: logical axis q is memory axis
    ``axes[q][0]``, its coordinate times C when ``axes[q][1] == "C"`` (a ``block=`` split)."""
    coords = np.indices(shape)
    position = [0] * codes.ndim
    for coord, (axis, times) in zip(coords, axes):
        position[axis] = position[axis] + coord * (c if times == "C" else 1)
    return codes[tuple(position)]


def _op_scaled_tiles(it, op: Op, env: dict):
    a, sa32, b, sb32, table, out = _arrays(env, op.operands[:6])
    m, n, g, c = _sizes(env, op.operands[6:])
    with np.errstate(all="ignore"):
        xa = table[0][_logical(mx.codes(a), op.attrs["a_axes"], (m, g, c), c)] * sa32[:, :, None]
        xb = table[1][_logical(mx.codes(b), op.attrs["b_axes"], (g, c, n), c)] * sb32[:, None, :]
        x64 = xa.astype(np.float32).reshape(m, g * c).astype(np.float64)
        y64 = xb.astype(np.float32).reshape(g * c, n).astype(np.float64)
        total = np.zeros((m, n), np.float32)
        for t in range(g * c):  # fused: the exact product plus the sum, rounded once to f32
            total = (total.astype(np.float64) + x64[:, t, None] * y64[None, t, :]).astype(np.float32)
    out[...] = total


def _b_offsets(n: int, width: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(panel * k * width + lane) per column j of b packed in panels ``[N/width][K][width]``,
    and the row stride ``width`` (``sparse_lowering.pack_b``)."""
    j = np.arange(n)
    return (j // width) * k * width + j % width, width


def _op_sparse24_tiles(it, op: Op, env: dict):
    vals, cols, bp, out = _arrays(env, op.operands[:4])
    m, n, k, half = _sizes(env, op.operands[4:])
    mr = op.attrs["mr"]
    columns_of_b, row = _b_offsets(n, op.attrs["vectors"] * op.attrs["lanes"], k)
    i = np.arange(m)
    first = (i // mr) * half * mr + i % mr  # row i's packed position of stored value 0
    total = np.zeros((m, n), bp.dtype)
    with np.errstate(all="ignore"):
        for t in range(half):  # the stored values of every row, in increasing column order
            at = first + t * mr
            picked = bp[columns_of_b[None, :] + cols[at].astype(np.int64)[:, None] * row]
            total = total + vals[at][:, None] * picked
    out[...] = total


def _op_csr_tiles(it, op: Op, env: dict):
    offsets, columns, values, bp, out = _arrays(env, op.operands[:5])
    m, n, k = _sizes(env, op.operands[5:])
    columns_of_b, row = _b_offsets(n, op.attrs["vectors"] * op.attrs["lanes"], k)
    starts = offsets.astype(np.int64)
    lengths = starts[1:m + 1] - starts[:m]
    total = np.zeros((m, n), bp.dtype)
    with np.errstate(all="ignore"):
        for j in range(int(lengths.max()) if m else 0):  # the j-th stored value of every row that has one
            live = np.nonzero(lengths > j)[0]
            p = starts[live] + j
            picked = bp[columns_of_b[None, :] + columns[p].astype(np.int64)[:, None] * row]
            total[live] = total[live] + values[p].astype(bp.dtype)[:, None] * picked
    out[...] = total


HANDLERS = {
    "contract_tiles": _op_contract_tiles,
    "lane_chains": _op_lane_chains,
    "scaled_tiles": _op_scaled_tiles,
    "sparse24_tiles": _op_sparse24_tiles,
    "csr_tiles": _op_csr_tiles,
}
