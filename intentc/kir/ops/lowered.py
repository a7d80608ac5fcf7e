"""KIR ops that exist only after lowering: the tiled and chained forms that
``expand_tensor_exprs`` builds for ``to_physical`` to turn into loop nests.

Each writes its result into a caller-visible tensor operand (no results, except the chains'
final tuples); the interpreter's ``intentc/interp/lowered.py`` says what each computes, so lowered
KIR can be run and compared with the KIR it came from.

``contract_tiles(ap, bp, c, scratch, batch, m, n, k) {acc, mr, nr, lanes, mc, nc, kc}``
    ``c[b, i, j] = sum over t in [0, k) of A[b, i, t] * B[b, j, t]`` with ``A`` packed in
    ``ap`` as panels of ``mr`` rows and ``B`` in ``bp`` as panels of ``nr`` columns
    (``intentc/lower/contract_lowering.py``); ``c`` is ``[m, n]`` or ``[batch, m, n]``.
``lane_chains(ins..., outs..., first, starts...) {n_in, n_out, k, lanes, segment, picks, exclusive} [combine]``
    ``lanes`` independent chains of an ordered fold or scan over sub-segments of
    ``segment`` members (``intentc/lower/lane_lowering.py``).
``scaled_tiles(a, sa32, b, sb32, table, out, m, n, g, c) {fa, fb, a_axes, b_axes, mr, vectors, lanes, mc, nc}``
    the register-tiled scaled contraction: ``a`` and ``b`` are the codes in memory (read
    through ``a_axes``/``b_axes``), ``sa32: f32[M, G]`` and ``sb32: f32[G, N]`` the decoded
    scales, ``table: f32[2, 256]`` the values of the codes, ``out: f32[M, N]``
    (``intentc/lower/scaled_lowering.py``).
``sparse24_tiles(vals, cols, bp, out, m, n, k, half) {mr, vectors, lanes, mc, nc}`` and
``csr_tiles(offsets, columns, values, bp, out, m, n, k) {vectors, lanes, rows}``
    the row-gathering sparse contractions over ``b`` packed in panels
    (``intentc/lower/sparse_lowering.py``).
"""
from __future__ import annotations

from intentc.kir.core import Op
from intentc.kir.ops.definition import (BOOL_A, INDEX_T, INT_A, STR_A, TENSOR, Attr, Effect, OpDef, Operand, declare,
                                        either, list_of, many, need, tensor_of_rank)
from intentc.kir.types import INDEX, TensorType


def _check_contract_tiles(op: Op) -> None:
    tensors = [v.type for v in op.operands[:4]]
    need(tensors[2].rank in (2, 3), op, "c is [m, n] or [batch, m, n]")
    need(len({t.dtype for t in tensors}) == 1 and tensors[0].dtype.name == op.attrs["acc"], op,
         "tensors hold the accumulator dtype")
    mr, nr, lanes = (op.attrs[k] for k in ("mr", "nr", "lanes"))
    need(mr > 0 and lanes > 0 and nr > 0 and nr % lanes == 0, op, "tile sizes")


def _check_lane_chains(op: Op) -> None:
    a = op.attrs
    n_in, n_out, k, lanes = (a[name] for name in ("n_in", "n_out", "k", "lanes"))
    need(n_in > 0 and n_out >= 0 and k > 0 and lanes > 0 and a["segment"] > 0, op, "sizes")
    need(len(op.operands) == n_in + n_out + 1 + lanes * k and len(op.results) == lanes * k, op,
         "inputs, outputs, first and an accumulator tuple per chain; a final tuple per chain")
    tensors = op.operands[:n_in + n_out]
    need(all(isinstance(v.type, TensorType) and v.type.rank == 1 for v in tensors), op, "tensors are one-axis")
    need(op.operands[n_in + n_out].type == INDEX, op, "first is an index")
    need(len(op.regions[0].args) == k + n_in, op, "combine takes (accs, items)")
    need(len(a["picks"]) == n_out and all(0 <= p < k for p in a["picks"]), op, "a pick per output")


def _lane_chains_effects(op: Op) -> tuple[Effect, ...]:
    n_in, n_out = op.attrs["n_in"], op.attrs["n_out"]
    return tuple(Effect("read", i) for i in range(n_in)) + tuple(Effect("write", n_in + o) for o in range(n_out))


def _reads_then_writes(reads: int) -> tuple[Effect, ...]:
    return tuple(Effect("read", k) for k in range(reads)) + (Effect("write", reads),)


def _operands(tensors: str, sizes: str, flat: str = "") -> tuple[Operand, ...]:
    """Tensor operands (the names in ``flat`` are one-axis), then index sizes."""
    return tuple(Operand(name, tensor_of_rank(1) if name in flat.split() else TENSOR) for name in tensors.split()) + \
        tuple(Operand(name, INDEX_T) for name in sizes.split())


_TILES = {key: Attr(INT_A) for key in ("mr", "vectors", "lanes", "mc", "nc")}
# per logical axis of a scaled operand: [memory axis, 1 or "C"] (an axis split in blocks of C)
_AXES = Attr(list_of(list_of(either(INT_A, STR_A))))

OPS = declare(
    OpDef("contract_tiles", "lowered", operands=_operands("ap bp c scratch", "batch m n k", flat="ap bp scratch"),
          attrs={"acc": Attr(STR_A), **{key: Attr(INT_A) for key in ("mr", "nr", "lanes", "mc", "nc", "kc")}},
          effects=(Effect("read", 0), Effect("read", 1), Effect("read", 2), Effect("write", 2), Effect("write", 3)),
          check=_check_contract_tiles),
    OpDef("lane_chains", "lowered", operands=(many("tensors_first_starts"),), results=(many("finals"),),
          attrs={**{key: Attr(INT_A) for key in ("n_in", "n_out", "k", "lanes", "segment")},
                 "picks": Attr(list_of(INT_A)), "exclusive": Attr(BOOL_A)},
          regions=1, effects=_lane_chains_effects, check=_check_lane_chains),
    OpDef("scaled_tiles", "lowered", operands=_operands("a sa32 b sb32 table out", "m n g c"),
          attrs={"fa": Attr(STR_A), "fb": Attr(STR_A), "a_axes": _AXES, "b_axes": _AXES, **_TILES},
          effects=_reads_then_writes(5)),
    OpDef("sparse24_tiles", "lowered", operands=_operands("vals cols bp out", "m n k half", flat="vals cols bp"),
          attrs=_TILES, effects=_reads_then_writes(3)),
    OpDef("csr_tiles", "lowered",
          operands=_operands("offsets columns values bp out", "m n k", flat="offsets columns values bp"),
          attrs={key: Attr(INT_A) for key in ("vectors", "lanes", "rows")}, effects=_reads_then_writes(4)),
)
