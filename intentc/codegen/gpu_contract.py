"""A contraction's tile nest on the GPU: thread blocks, shared memory, register tiles and
tensor cores (part of the GPU execution plan, ``gpu_launch.py``; emitted by
``gpu_contract_emit.py``).

On GPU targets the pipeline leaves each ``contract_tiles`` nest (T3) to the code generator
(``expand_contract_tiles`` runs on CPU targets only). Its operands are the packed panels
that ``contract_lowering.pack`` wrote in the accumulator dtype — ``A`` in panels of ``mr``
rows, ``B`` in panels of ``nr`` columns, each contiguous over k — and ``C`` (the output, or
a ``[batch, m, n]`` buffer). A top-level nest is its own launch (kind ``tiles``): one thread
block per ``BM × BN`` tile of ``C`` (block-stride beyond the grid), which walks K in tiles
of ``BK``, staging the A and B tiles through shared memory with two buffers — the next
tile travels while the current one is multiplied: by ``cp.async`` straight into the other
buffer for the ffma tiles (``cp.async.wait_group`` then ``bar.sync`` before each K tile),
through registers (``ld.global``, then ``st.shared`` after the multiply) for the mma tiles,
which narrow each element on the way; one ``bar.sync`` per K tile — and keeps its
accumulators in registers:

- ``ffma`` (f32, f64 and integer accumulators): 256 threads, each a ``TM × TN`` register
  tile of rows ``ty + 16 i`` and columns ``tx + 16 j``; every element of ``C`` is
  ``fma(a, b, acc)`` over ``t = 0, 1, …, K - 1`` in order from 0 (integers: multiply and
  add, wrapping) — exactly the CPU's fused k-order chain, so f32 results are the CPU
  build's bits, for any grid;
- ``mma`` (f16 or bf16 operands with an f32 accumulator, i8 or u8 with i32): 8 warps in a
  2 × 4 arrangement, each ``2 × 2`` ``mma.sync`` tiles (m16n8k16 for 16-bit operands,
  m16n8k32 for 8-bit ones) whose fragments come from shared memory by ``ldmatrix``. The
  panels hold the operands converted to the accumulator exactly, so narrowing them back
  is exact. Each product is exact in f32 (integers: exact); the sum of one mma's k slice
  and the accumulator is the tensor core's, and the slices are added in k order: the
  bits are the same from run to run and for every grid, but differ from the CPU's
  rounding (integers never differ).

Edges (``m``, ``n``, ``k`` not multiples of the tile) are predicated: elements past the
end load as 0 and are not stored. Tiles depend on the problem size only.
"""
from __future__ import annotations

from dataclasses import dataclass

from intentc.lower import program as P

THREADS = 256  # threads of a tile block
FFMA_TILE = (128, 128, 8)  # BM, BN, BK
FFMA_THREAD_TILE = (8, 8)  # TM x TN accumulators per thread (BM / TM x BN / TN = 16 x 16 threads)
MMA_WARPS = (2, 4)  # warps along m and n
MMA_WARP_TILES = (2, 2)  # mma tiles per warp along m (16 rows each) and n (8 columns each)
MMA_ROW_BYTES = 64  # one K tile of a row in shared memory (32 16-bit or 64 8-bit elements)
MMA_PITCH = 80  # bytes between rows in shared memory (16-byte aligned for ldmatrix)
# (operand, accumulator) -> (NVVM intrinsic suffix, PTX instruction)
MMA_SHAPES = {("f16", "f32"): ("m16n8k16.row.col.f32.f32", "m16n8k16.row.col.f32.f16.f16.f32"),
              ("bf16", "f32"): ("m16n8k16.row.col.bf16", "m16n8k16.row.col.f32.bf16.bf16.f32"),
              ("i8", "i32"): ("m16n8k32.row.col.s8", "m16n8k32.row.col.s32.s8.s8.s32"),
              ("u8", "i32"): ("m16n8k32.row.col.u8", "m16n8k32.row.col.s32.u8.u8.s32")}
FFMA_ACCUMULATORS = ("f32", "f64", "i32", "i64", "u32", "u64")


@dataclass(frozen=True)
class TileConfig:
    """How one ``contract_tiles`` nest runs: ``engine`` ``ffma`` or ``mma``, the block tile
    ``bm × bn`` walked in K tiles of ``bk``, the operand dtype the tiles hold (``operand``:
    the accumulator's for ffma), and the block-shared bytes of its two buffers."""

    engine: str
    operand: str
    accumulator: str
    bm: int
    bn: int
    bk: int
    shared_bytes: int
    copies: str = "ld.global+st.shared"  # how K tiles reach shared memory (ffma: cp.async)
    intrinsic: str = ""  # mma: the NVVM intrinsic's suffix
    instruction: str = ""  # mma: the PTX instruction's suffix

    def describe(self) -> dict:
        """The manifest's description of the mapping."""
        out = {"engine": self.engine, "operand": self.operand, "accumulator": self.accumulator,
               "block_tile": [self.bm, self.bn, self.bk], "threads": THREADS, "shared_bytes": self.shared_bytes,
               "buffers": 2, "copies": self.copies}
        if self.engine == "ffma":
            out["thread_tile"] = list(FFMA_THREAD_TILE)
        else:
            out["instruction"] = f"mma.sync.aligned.{self.instruction}"
            out["warps"] = list(MMA_WARPS)
            out["warp_tile"] = [MMA_WARP_TILES[0] * 16, MMA_WARP_TILES[1] * 8]
        return out


def tile_config(kernel: P.Kernel, nest: P.TileNest) -> TileConfig | None:
    """The GPU tiling of ``nest``, or None when it has none (an accumulator such as f16 or
    bf16: the nest is expanded into the CPU's loops instead)."""
    ap, bp = nest.tensors[:2]
    acc = ap.dtype.name
    operand = narrow_operand(kernel, ap, bp)
    if operand is not None and (operand, acc) in MMA_SHAPES:
        size = 1 if operand in ("i8", "u8") else 2
        bm = MMA_WARPS[0] * MMA_WARP_TILES[0] * 16
        bn = MMA_WARPS[1] * MMA_WARP_TILES[1] * 8
        return TileConfig("mma", operand, acc, bm, bn, MMA_ROW_BYTES // size, 2 * (bm + bn) * MMA_PITCH,
                          "ld.global+st.shared", *MMA_SHAPES[(operand, acc)])
    if acc in FFMA_ACCUMULATORS:
        bm, bn, bk = FFMA_TILE
        return TileConfig("ffma", acc, acc, bm, bn, bk, 2 * (bm + bn) * bk * ap.dtype.itemsize, "cp.async")
    return None


def narrow_operand(kernel: P.Kernel, *panels: P.TensorSym) -> str | None:
    """The dtype every element stored into the ``panels`` comes from, when each is a cast
    of a value of one narrow dtype (f16, bf16, i8, u8) to the accumulator, or the zero that
    pads an edge panel: those values are exact in that dtype. None otherwise."""
    # Every assignment of a variable counts (the unit-stride versions of a loop assign it twice).
    defs: dict = {}
    for s in P.walk_stmts(kernel.body):
        if isinstance(s, P.Assign):
            defs.setdefault(s.var, []).append(s.value)
        elif isinstance(s, P.Loop):
            defs.setdefault(s.var, []).append(None)
    names = {t.name for t in panels}
    found: set = set()
    stores = 0
    for s in P.walk_stmts(kernel.body):
        if isinstance(s, P.Store) and s.tensor.name in names:
            stores += 1
            found.add(_source_dtype(s.value, defs, s.tensor.dtype, 0))
    if stores == 0 or len(found) != 1:
        return None
    (dtype,) = found
    return dtype


def _source_dtype(e: P.Expr | None, defs: dict, acc, depth: int) -> str | None:
    if e is None or depth > 16:
        return None
    if isinstance(e, P.Read) and e.var in defs:
        found = {_source_dtype(value, defs, acc, depth + 1) for value in defs[e.var]}
        return found.pop() if len(found) == 1 else None
    if isinstance(e, P.Select):
        for value, other in ((e.a, e.b), (e.b, e.a)):
            if _is_zero(other, defs):
                return _source_dtype(value, defs, acc, depth + 1)
        return None
    if isinstance(e, P.Cast) and e.dtype == acc and getattr(e.a.dtype, "name", "") in ("f16", "bf16", "i8", "u8"):
        return e.a.dtype.name
    return None


def _is_zero(e: P.Expr, defs: dict) -> bool:
    while isinstance(e, P.Read) and e.var in defs and len(defs[e.var]) == 1:
        e = defs[e.var][0]
    return isinstance(e, P.Const) and e.value == 0 and not (isinstance(e.value, float) and str(e.value) == "-0.0")
