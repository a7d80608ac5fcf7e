"""The GPU emulator's block semantics (tests/gpu/cpu_emulation.py), on hand-written NVPTX
IR kernels checked against NumPy: barriers and shared memory (a tree reduction over
several block sizes and counts, poison in unwritten shared memory, shared atomics), warp
shuffles in every mode with widths, votes, ballots, match and redux, 2-D and 3-D blocks
and grids, divergence and deadlock reported as errors, and schedules: a racy kernel gives
different results under different schedules, its barrier-fixed version the same bits
under all of them.
"""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from cpu_emulation import EmulationError, Emulator

HEADER = """
target triple = "nvptx64-nvidia-cuda"
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.tid.y()
declare i32 @llvm.nvvm.read.ptx.sreg.tid.z()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.y()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.z()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.y()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.z()
declare i32 @llvm.nvvm.read.ptx.sreg.nctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.nctaid.y()
declare i32 @llvm.nvvm.read.ptx.sreg.laneid()
declare i32 @llvm.nvvm.read.ptx.sreg.warpsize()
declare void @llvm.nvvm.barrier0()
declare void @llvm.nvvm.barrier.sync(i32)
declare void @llvm.nvvm.barrier.sync.cnt(i32, i32)
declare i32 @llvm.nvvm.barrier0.popc(i32)
declare i32 @llvm.nvvm.shfl.sync.idx.i32(i32, i32, i32, i32)
declare i32 @llvm.nvvm.shfl.sync.up.i32(i32, i32, i32, i32)
declare float @llvm.nvvm.shfl.sync.down.f32(i32, float, i32, i32)
declare float @llvm.nvvm.shfl.sync.bfly.f32(i32, float, i32, i32)
declare {i32, i1} @llvm.nvvm.shfl.sync.down.i32p(i32, i32, i32, i32)
declare i32 @llvm.nvvm.vote.ballot.sync(i32, i1)
declare i1 @llvm.nvvm.vote.all.sync(i32, i1)
declare i1 @llvm.nvvm.vote.any.sync(i32, i1)
declare i32 @llvm.nvvm.match.any.sync.i32(i32, i32)
declare i32 @llvm.nvvm.redux.sync.add(i32, i32)
declare i32 @llvm.nvvm.activemask()
declare void @llvm.nvvm.bar.warp.sync(i32)
declare void @llvm.nvvm.membar.cta()
"""

# Blocks the kernels below share.
# The thread's ids in a one-axis launch.
IDS = """  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %bid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
"""
# ... and its global index %i = ctaid * ntid + tid.
GLOBAL_INDEX = IDS + """  %base = mul i32 %bid, %ntid
  %i = add i32 %base, %tid
"""


def _record(out: str, offset: str, *values: str) -> str:
    """Store the i32 ``values`` at ``out[offset]``, ``out[offset + 1]``, ... (``%o0`` ... ``%oK``)."""
    lines = [f"  %o0 = getelementptr i32, ptr addrspace(1) {out}, i32 {offset}",
             f"  store i32 {values[0]}, ptr addrspace(1) %o0"]
    for k, value in enumerate(values[1:], 1):
        lines += [f"  %o{k} = getelementptr i32, ptr addrspace(1) %o0, i32 {k}",
                  f"  store i32 {value}, ptr addrspace(1) %o{k}"]
    return "\n".join(lines) + "\n"


def _neighbour(name: str, barrier: bool) -> str:
    """Each thread stores its input in shared ``@slots`` and reads its right neighbour's slot,
    with a barrier in between or without (a race)."""
    sync = "  call void @llvm.nvvm.barrier0()\n" if barrier else ""
    return f"""define ptx_kernel void @{name}(ptr addrspace(1) %in, ptr addrspace(1) %out) {{
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %ip = getelementptr i32, ptr addrspace(1) %in, i32 %tid
  %x = load i32, ptr addrspace(1) %ip
  %mine = getelementptr [128 x i32], ptr addrspace(3) @slots, i32 0, i32 %tid
  store i32 %x, ptr addrspace(3) %mine
{sync}  %r0 = add i32 %tid, 1
  %r = urem i32 %r0, %ntid
  %theirs = getelementptr [128 x i32], ptr addrspace(3) @slots, i32 0, i32 %r
  %y = load i32, ptr addrspace(3) %theirs
  %op = getelementptr i32, ptr addrspace(1) %out, i32 %tid
  store i32 %y, ptr addrspace(1) %op
  ret void
}}
"""


# A tree reduction of i32 in static shared memory (blocks of a power of two up to 256
# threads): one sum per block, with a barrier after every level.
REDUCE = HEADER + """
@partial = internal addrspace(3) global [256 x i32] undef, align 4

define ptx_kernel void @block_sum(ptr addrspace(1) %in, ptr addrspace(1) %out, i32 %n) {
entry:
""" + GLOBAL_INDEX + """  %inside = icmp slt i32 %i, %n
  br i1 %inside, label %load, label %store
load:
  %ip = getelementptr i32, ptr addrspace(1) %in, i32 %i
  %v = load i32, ptr addrspace(1) %ip
  br label %store
store:
  %x = phi i32 [%v, %load], [0, %entry]
  %mine = getelementptr [256 x i32], ptr addrspace(3) @partial, i32 0, i32 %tid
  store i32 %x, ptr addrspace(3) %mine
  call void @llvm.nvvm.barrier0()
  %half = lshr i32 %ntid, 1
  br label %level
level:
  %s = phi i32 [%half, %store], [%s2, %synced]
  %more = icmp ugt i32 %s, 0
  br i1 %more, label %step, label %done
step:
  %active = icmp ult i32 %tid, %s
  br i1 %active, label %add, label %synced0
add:
  %j = add i32 %tid, %s
  %theirs = getelementptr [256 x i32], ptr addrspace(3) @partial, i32 0, i32 %j
  %b = load i32, ptr addrspace(3) %theirs
  %a = load i32, ptr addrspace(3) %mine
  %c = add i32 %a, %b
  store i32 %c, ptr addrspace(3) %mine
  br label %synced0
synced0:
  call void @llvm.nvvm.barrier.sync(i32 0)
  br label %synced
synced:
  %s2 = lshr i32 %s, 1
  br label %level
done:
  %first = icmp eq i32 %tid, 0
  br i1 %first, label %write, label %exit
write:
  %r = load i32, ptr addrspace(3) @partial
  %op = getelementptr i32, ptr addrspace(1) %out, i32 %bid
  store i32 %r, ptr addrspace(1) %op
  br label %exit
exit:
  ret void
}

; Each thread reads the shared slot of thread ntid-1-tid without writing it first: the
; emulator's poison pattern, in every block (nothing carries over from the block before).
define ptx_kernel void @read_unwritten(ptr addrspace(1) %out) {
entry:
""" + IDS + """  %last = sub i32 %ntid, 1
  %other = sub i32 %last, %tid
  %p = getelementptr [256 x i32], ptr addrspace(3) @partial, i32 0, i32 %other
  %v = load i32, ptr addrspace(3) %p
  %base = mul i32 %bid, %ntid
  %i = add i32 %base, %tid
  %op = getelementptr i32, ptr addrspace(1) %out, i32 %i
  store i32 %v, ptr addrspace(1) %op
  call void @llvm.nvvm.barrier0()
  %mine = getelementptr [256 x i32], ptr addrspace(3) @partial, i32 0, i32 %tid
  store i32 %bid, ptr addrspace(3) %mine
  ret void
}

; A histogram of 8 bins privatised in dynamic (extern) shared memory with shared atomics,
; merged into the global bins with global atomics.
@bins = external addrspace(3) global [0 x i32], align 4

define ptx_kernel void @histogram(ptr addrspace(1) %in, ptr addrspace(1) %out, i32 %n) {
entry:
""" + IDS + """  %owner = icmp ult i32 %tid, 8
  %bin = getelementptr i32, ptr addrspace(3) @bins, i32 %tid
  br i1 %owner, label %clear, label %cleared
clear:
  store i32 0, ptr addrspace(3) %bin
  br label %cleared
cleared:
  call void @llvm.nvvm.barrier0()
  %base = mul i32 %bid, %ntid
  %i = add i32 %base, %tid
  %inside = icmp slt i32 %i, %n
  br i1 %inside, label %count, label %counted
count:
  %ip = getelementptr i32, ptr addrspace(1) %in, i32 %i
  %v = load i32, ptr addrspace(1) %ip
  %k = and i32 %v, 7
  %kp = getelementptr i32, ptr addrspace(3) @bins, i32 %k
  %old = atomicrmw add ptr addrspace(3) %kp, i32 1 syncscope("block") monotonic
  br label %counted
counted:
  call void @llvm.nvvm.membar.cta()
  call void @llvm.nvvm.barrier0()
  br i1 %owner, label %merge, label %exit
merge:
  %mine = load i32, ptr addrspace(3) %bin
  %gp = getelementptr i32, ptr addrspace(1) %out, i32 %tid
  %old2 = atomicrmw add ptr addrspace(1) %gp, i32 %mine syncscope("device") monotonic
  br label %exit
exit:
  ret void
}
"""

# Warp collectives: every lane writes its results at its global index.
WARP = HEADER + """
; Sums of 32 f32 lanes: out_down[lane 0 of each warp] by shfl.down, out_bfly[every lane] by shfl.bfly.
define ptx_kernel void @warp_sums(ptr addrspace(1) %in, ptr addrspace(1) %out_down, ptr addrspace(1) %out_bfly) {
entry:
""" + GLOBAL_INDEX + """  %ip = getelementptr float, ptr addrspace(1) %in, i32 %i
  %x = load float, ptr addrspace(1) %ip
  br label %loop
loop:
  %offset = phi i32 [16, %entry], [%next, %loop]
  %down = phi float [%x, %entry], [%down2, %loop]
  %bfly = phi float [%x, %entry], [%bfly2, %loop]
  %d = call float @llvm.nvvm.shfl.sync.down.f32(i32 -1, float %down, i32 %offset, i32 31)
  %down2 = fadd float %down, %d
  %b = call float @llvm.nvvm.shfl.sync.bfly.f32(i32 -1, float %bfly, i32 %offset, i32 31)
  %bfly2 = fadd float %bfly, %b
  %next = lshr i32 %offset, 1
  %again = icmp ugt i32 %next, 0
  br i1 %again, label %loop, label %done
done:
  %dp = getelementptr float, ptr addrspace(1) %out_down, i32 %i
  store float %down2, ptr addrspace(1) %dp
  %bp = getelementptr float, ptr addrspace(1) %out_bfly, i32 %i
  store float %bfly2, ptr addrspace(1) %bp
  ret void
}

; Shuffles over segments of 8 lanes (CUDA's width argument): idx broadcasts each
; segment's lane 2, up shifts by one within the segment; a predicated down by 3; and an
; idx with a source lane of its own for every lane (the warp reversed).
define ptx_kernel void @segments(ptr addrspace(1) %in, ptr addrspace(1) %out_idx, ptr addrspace(1) %out_up,
                                 ptr addrspace(1) %out_down, ptr addrspace(1) %out_pred,
                                 ptr addrspace(1) %out_mirror) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ip = getelementptr i32, ptr addrspace(1) %in, i32 %tid
  %x = load i32, ptr addrspace(1) %ip
  %a = call i32 @llvm.nvvm.shfl.sync.idx.i32(i32 -1, i32 %x, i32 2, i32 6175)   ; (32-8)<<8 | 31
  %b = call i32 @llvm.nvvm.shfl.sync.up.i32(i32 -1, i32 %x, i32 1, i32 6144)    ; (32-8)<<8
  %c = call {i32, i1} @llvm.nvvm.shfl.sync.down.i32p(i32 -1, i32 %x, i32 3, i32 31)
  %mirror = sub i32 31, %tid
  %e = call i32 @llvm.nvvm.shfl.sync.idx.i32(i32 -1, i32 %x, i32 %mirror, i32 31)
  %p4 = getelementptr i32, ptr addrspace(1) %out_mirror, i32 %tid
  store i32 %e, ptr addrspace(1) %p4
  %cv = extractvalue {i32, i1} %c, 0
  %cp = extractvalue {i32, i1} %c, 1
  %cz = zext i1 %cp to i32
  %p0 = getelementptr i32, ptr addrspace(1) %out_idx, i32 %tid
  store i32 %a, ptr addrspace(1) %p0
  %p1 = getelementptr i32, ptr addrspace(1) %out_up, i32 %tid
  store i32 %b, ptr addrspace(1) %p1
  %p2 = getelementptr i32, ptr addrspace(1) %out_down, i32 %tid
  store i32 %cv, ptr addrspace(1) %p2
  %p3 = getelementptr i32, ptr addrspace(1) %out_pred, i32 %tid
  store i32 %cz, ptr addrspace(1) %p3
  ret void
}

; Votes over the lanes that exist: out[5 * i + k] = ballot, all, any, redux.add, match.any
; (of the value), with the member mask activemask() gives, so partial warps take part too.
define ptx_kernel void @votes(ptr addrspace(1) %in, ptr addrspace(1) %out) {
entry:
""" + GLOBAL_INDEX + """  %ip = getelementptr i32, ptr addrspace(1) %in, i32 %i
  %x = load i32, ptr addrspace(1) %ip
  %p = icmp ne i32 %x, 0
  %mask = call i32 @llvm.nvvm.activemask()
  call void @llvm.nvvm.bar.warp.sync(i32 %mask)
  %ballot = call i32 @llvm.nvvm.vote.ballot.sync(i32 %mask, i1 %p)
  %all = call i1 @llvm.nvvm.vote.all.sync(i32 %mask, i1 %p)
  %any = call i1 @llvm.nvvm.vote.any.sync(i32 %mask, i1 %p)
  %sum = call i32 @llvm.nvvm.redux.sync.add(i32 %x, i32 %mask)
  %same = call i32 @llvm.nvvm.match.any.sync.i32(i32 %mask, i32 %x)
  %allz = zext i1 %all to i32
  %anyz = zext i1 %any to i32
  %o = mul i32 %i, 5
""" + _record("%out", "%o", "%ballot", "%allz", "%anyz", "%sum", "%same") + """  ret void
}
"""

# 2-D / 3-D: each thread writes (tid, ctaid, laneid, its shared neighbour's id) at its
# global coordinates; the neighbour (next thread in linear order, wrapping) is read from
# shared memory after a barrier.
GRID = HEADER + """
@ids = internal addrspace(3) global [1024 x i32] undef, align 4

define ptx_kernel void @where(ptr addrspace(1) %out, i32 %nx, i32 %ny) {
entry:
  %tx = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ty = call i32 @llvm.nvvm.read.ptx.sreg.tid.y()
  %tz = call i32 @llvm.nvvm.read.ptx.sreg.tid.z()
  %dx = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %dy = call i32 @llvm.nvvm.read.ptx.sreg.ntid.y()
  %dz = call i32 @llvm.nvvm.read.ptx.sreg.ntid.z()
  %bx = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %by = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.y()
  %bz = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.z()
  %lane = call i32 @llvm.nvvm.read.ptx.sreg.laneid()
  %ws = call i32 @llvm.nvvm.read.ptx.sreg.warpsize()
  %l1 = mul i32 %tz, %dy
  %l2 = add i32 %l1, %ty
  %l3 = mul i32 %l2, %dx
  %linear = add i32 %l3, %tx
  %slot = getelementptr [1024 x i32], ptr addrspace(3) @ids, i32 0, i32 %linear
  store i32 %linear, ptr addrspace(3) %slot
  call void @llvm.nvvm.barrier0()
  %dxy = mul i32 %dx, %dy
  %n = mul i32 %dxy, %dz
  %next0 = add i32 %linear, 1
  %next = urem i32 %next0, %n
  %nslot = getelementptr [1024 x i32], ptr addrspace(3) @ids, i32 0, i32 %next
  %neighbour = load i32, ptr addrspace(3) %nslot
  %gx0 = mul i32 %bx, %dx
  %gx = add i32 %gx0, %tx
  %gy0 = mul i32 %by, %dy
  %gy = add i32 %gy0, %ty
  %gz0 = mul i32 %bz, %dz
  %gz = add i32 %gz0, %tz
  %g1 = mul i32 %gz, %ny
  %g2 = add i32 %g1, %gy
  %g3 = mul i32 %g2, %nx
  %g = add i32 %g3, %gx
  %o = mul i32 %g, 9
""" + _record("%out", "%o", "%tx", "%ty", "%tz", "%bx", "%by", "%bz", "%lane", "%ws", "%neighbour") + """  ret void
}
"""

# Kernels the emulator must refuse at run time.
BROKEN = HEADER + """
; Thread 0 leaves; the others wait for it at a barrier.
define ptx_kernel void @early_exit(ptr addrspace(1) %out) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %first = icmp eq i32 %tid, 0
  br i1 %first, label %exit, label %wait
wait:
  call void @llvm.nvvm.barrier0()
  br label %exit
exit:
  ret void
}

; Even threads wait at barrier 0, odd ones at barrier 1.
define ptx_kernel void @two_barriers(ptr addrspace(1) %out) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %odd = and i32 %tid, 1
  call void @llvm.nvvm.barrier.sync(i32 %odd)
  ret void
}

; Every thread waits at a barrier that expects 64 threads: in a block of 96 the first 64
; pass and the other 32 wait forever; a block of 48 never gets there.
define ptx_kernel void @short_count(ptr addrspace(1) %out) {
entry:
  call void @llvm.nvvm.barrier.sync.cnt(i32 0, i32 64)
  ret void
}

; Half of the warp shuffles, the other half votes, both with the full mask.
define ptx_kernel void @split_warp(ptr addrspace(1) %out) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %low = icmp ult i32 %tid, 16
  br i1 %low, label %shuffle, label %vote
shuffle:
  %s = call i32 @llvm.nvvm.shfl.sync.idx.i32(i32 -1, i32 %tid, i32 0, i32 31)
  br label %exit
vote:
  %v = call i32 @llvm.nvvm.vote.ballot.sync(i32 -1, i1 true)
  br label %exit
exit:
  ret void
}
"""

# Each thread stores its input in shared memory and reads its right neighbour's slot:
# without a barrier (racy) and with one.
NEIGHBOUR = HEADER + """
@slots = internal addrspace(3) global [128 x i32] undef, align 4

""" + _neighbour("racy", barrier=False) + "\n" + _neighbour("fixed", barrier=True)


# Current spellings, named barriers and cp.async: warp 1 produces into shared memory with
# cp.async and signals barrier 1 with arrive; warp 0 waits there (sync, 64 threads) and
# consumes; then every thread counts, with barrier.cta.red.popc, the inputs above 50.
PRODUCER = """
target triple = "nvptx64-nvidia-cuda"
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare void @llvm.nvvm.barrier.cta.sync.aligned.all(i32)
declare void @llvm.nvvm.barrier.cta.sync.aligned.count(i32, i32)
declare void @llvm.nvvm.barrier.cta.arrive.aligned.count(i32, i32)
declare i32 @llvm.nvvm.barrier.cta.red.popc.aligned.all(i32, i1)
declare void @llvm.nvvm.cp.async.ca.shared.global.4(ptr addrspace(3), ptr addrspace(1))
declare void @llvm.nvvm.cp.async.commit.group()
declare void @llvm.nvvm.cp.async.wait.all()

@stage = internal addrspace(3) global [32 x i32] undef, align 4

define ptx_kernel void @produce_consume(ptr addrspace(1) %in, ptr addrspace(1) %out, ptr addrspace(1) %count) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %lane = and i32 %tid, 31
  %slot = getelementptr [32 x i32], ptr addrspace(3) @stage, i32 0, i32 %lane
  %producer = icmp uge i32 %tid, 32
  br i1 %producer, label %produce, label %consume
produce:
  %src = getelementptr i32, ptr addrspace(1) %in, i32 %lane
  call void @llvm.nvvm.cp.async.ca.shared.global.4(ptr addrspace(3) %slot, ptr addrspace(1) %src)
  call void @llvm.nvvm.cp.async.commit.group()
  call void @llvm.nvvm.cp.async.wait.all()
  call void @llvm.nvvm.barrier.cta.arrive.aligned.count(i32 1, i32 64)
  br label %tally
consume:
  call void @llvm.nvvm.barrier.cta.sync.aligned.count(i32 1, i32 64)
  %v = load i32, ptr addrspace(3) %slot
  %w = mul i32 %v, 3
  %dst = getelementptr i32, ptr addrspace(1) %out, i32 %lane
  store i32 %w, ptr addrspace(1) %dst
  br label %tally
tally:
  %ip = getelementptr i32, ptr addrspace(1) %in, i32 %tid
  %x = load i32, ptr addrspace(1) %ip
  %big = icmp sgt i32 %x, 50
  %n = call i32 @llvm.nvvm.barrier.cta.red.popc.aligned.all(i32 0, i1 %big)
  %cp = getelementptr i32, ptr addrspace(1) %count, i32 %tid
  store i32 %n, ptr addrspace(1) %cp
  call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
  ret void
}
"""



def _mma_kernel(name: str, intrinsic: str, a_type: str, acc: str, b_matrix: str) -> str:
    """One warp: A (16 rows of 32 bytes) and B (256 bytes) copied into shared memory, A's
    fragment loaded with ldmatrix.x4 and B's with ldmatrix.x2 (``b_matrix``: "t" when B
    is stored transposed, n rows of k; "trans" when stored k rows of n and loaded with
    .trans), C loaded and D stored by the accumulator layout, one mma.sync."""
    b_call = ("ldmatrix.sync.aligned.m8n8.x2.b16" if b_matrix == "t" else "ldmatrix.sync.aligned.m8n8.x2.trans.b16")
    b_address = ("""  %bj = lshr i32 %l16, 3
  %brow = and i32 %l16, 7
  %bro = mul i32 %brow, 32
  %bco = mul i32 %bj, 16
  %boff = add i32 %bro, %bco""" if b_matrix == "t" else """  %boff = mul i32 %l16, 16""")
    a_regs = [f"%a{i}" for i in range(4)]
    b_regs = [f"%b{i}" for i in range(2)]
    casts = []
    if a_type != "i32":
        for reg in a_regs + b_regs:
            casts.append(f"  {reg}c = bitcast i32 {reg} to {a_type}")
        a_regs = [f"{r}c" for r in a_regs]
        b_regs = [f"{r}c" for r in b_regs]
    operands = ", ".join([f"{a_type} {r}" for r in a_regs + b_regs] + [f"{acc} %c{i}" for i in range(4)])
    acc_loads = "\n".join(f"""  %ci{i} = add i32 %cbase, {(i // 2) * 64 + i % 2}
  %cp{i} = getelementptr {acc}, ptr addrspace(1) %cmat, i32 %ci{i}
  %c{i} = load {acc}, ptr addrspace(1) %cp{i}""" for i in range(4))
    d_stores = "\n".join(f"""  %d{i} = extractvalue {{{acc}, {acc}, {acc}, {acc}}} %d, {i}
  %dp{i} = getelementptr {acc}, ptr addrspace(1) %dmat, i32 %ci{i}
  store {acc} %d{i}, ptr addrspace(1) %dp{i}""" for i in range(4))
    return f"""
@{name}_a = internal addrspace(3) global [128 x i32] undef, align 16
@{name}_b = internal addrspace(3) global [64 x i32] undef, align 16
declare {{{acc}, {acc}, {acc}, {acc}}} @llvm.nvvm.mma.{intrinsic}({", ".join([a_type] * 6 + [acc] * 4)})

define ptx_kernel void @{name}(ptr addrspace(1) %amat, ptr addrspace(1) %bmat, ptr addrspace(1) %cmat,
                               ptr addrspace(1) %dmat) {{
entry:
  %l = call i32 @llvm.nvvm.read.ptx.sreg.laneid()
  br label %copy
copy:
  %w = phi i32 [%l, %entry], [%w2, %next]
  %src = getelementptr i32, ptr addrspace(1) %amat, i32 %w
  %v = load i32, ptr addrspace(1) %src
  %dst = getelementptr [128 x i32], ptr addrspace(3) @{name}_a, i32 0, i32 %w
  store i32 %v, ptr addrspace(3) %dst
  %inb = icmp ult i32 %w, 64
  %bsrc = getelementptr i32, ptr addrspace(1) %bmat, i32 %w
  %bw = getelementptr [64 x i32], ptr addrspace(3) @{name}_b, i32 0, i32 %w
  br i1 %inb, label %copyb, label %next
copyb:
  %bv = load i32, ptr addrspace(1) %bsrc
  store i32 %bv, ptr addrspace(3) %bw
  br label %next
next:
  %w2 = add i32 %w, 32
  %more = icmp ult i32 %w2, 128
  br i1 %more, label %copy, label %load
load:
  call void @llvm.nvvm.bar.warp.sync(i32 -1)
  %j = lshr i32 %l, 3
  %r8 = and i32 %l, 7
  %jlow = and i32 %j, 1
  %jhigh = lshr i32 %j, 1
  %rowhi = mul i32 %jlow, 8
  %row = add i32 %r8, %rowhi
  %rowoff = mul i32 %row, 32
  %coloff = mul i32 %jhigh, 16
  %aoff = add i32 %rowoff, %coloff
  %aaddr = getelementptr i8, ptr addrspace(3) @{name}_a, i32 %aoff
  %afrag = call {{i32, i32, i32, i32}} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16(ptr addrspace(3) %aaddr)
  %a0 = extractvalue {{i32, i32, i32, i32}} %afrag, 0
  %a1 = extractvalue {{i32, i32, i32, i32}} %afrag, 1
  %a2 = extractvalue {{i32, i32, i32, i32}} %afrag, 2
  %a3 = extractvalue {{i32, i32, i32, i32}} %afrag, 3
  %l16 = and i32 %l, 15
{b_address}
  %baddr = getelementptr i8, ptr addrspace(3) @{name}_b, i32 %boff
  %bfrag = call {{i32, i32}} @llvm.nvvm.{b_call}(ptr addrspace(3) %baddr)
  %b0 = extractvalue {{i32, i32}} %bfrag, 0
  %b1 = extractvalue {{i32, i32}} %bfrag, 1
{chr(10).join(casts)}
  %g = lshr i32 %l, 2
  %t = and i32 %l, 3
  %grow = mul i32 %g, 8
  %tcol = mul i32 %t, 2
  %cbase = add i32 %grow, %tcol
{acc_loads}
  %d = call {{{acc}, {acc}, {acc}, {acc}}} @llvm.nvvm.mma.{intrinsic}({operands})
{d_stores}
  ret void
}}
"""


MMA = (HEADER + """
declare {i32, i32, i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16(ptr addrspace(3))
declare {i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.b16(ptr addrspace(3))
declare {i32, i32} @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.trans.b16(ptr addrspace(3))
""" + _mma_kernel("mma_f16", "m16n8k16.row.col.f32.f32", "<2 x half>", "float", "t")
    + _mma_kernel("mma_bf16", "m16n8k16.row.col.bf16", "i32", "float", "trans")
    + _mma_kernel("mma_s8", "m16n8k32.row.col.s8", "i32", "i32", "t"))

SCHEDULES = [("ascending", 0), ("descending", 0), ("random", 1), ("random", 2)]
POISON = np.int32(-1)  # the emulator's shared-memory fill, 0xFF bytes


@pytest.fixture(scope="module")
def emulators():
    """One emulator per IR module (building one costs more than running its kernels)."""
    cache = {}

    def get(text):
        if text not in cache:
            cache[text] = Emulator(text)
        return cache[text]
    return get


def launch(emulator, name, grid, block, *arrays, scalars=(), shared_bytes=0, schedule=("ascending", 0)):
    """Runs kernel ``name`` on copies of ``arrays`` (then ``scalars``, as i32); returns the
    arrays as the kernel left them."""
    emulator.schedule, emulator.seed = schedule
    pointers = []
    for array in arrays:
        pointer = emulator.alloc(array.nbytes)
        emulator.upload(pointer, array.ctypes.data, array.nbytes)
        pointers.append(pointer)
    args = [("ptr", p) for p in pointers] + [("i32", s) for s in scalars]
    try:
        emulator.launch(emulator.function(None, name), list(grid), list(block), shared_bytes, args)
        results = []
        for array, pointer in zip(arrays, pointers):
            out = np.empty_like(array)
            emulator.download(out.ctypes.data, pointer, array.nbytes)
            results.append(out)
        return results
    finally:
        for pointer in pointers:
            emulator.free(pointer)


@pytest.mark.parametrize("threads", [1, 32, 64, 256])
@pytest.mark.parametrize("blocks", [1, 3])
def test_tree_reduction_in_shared_memory(emulators, threads, blocks):
    emulator = emulators(REDUCE)
    n = blocks * threads - (threads // 3)  # the last block partly outside the input
    x = np.random.default_rng(threads + blocks).integers(-1000, 1000, blocks * threads).astype(np.int32)
    x[n:] = 0
    expected = x.reshape(blocks, threads).sum(axis=1, dtype=np.int32)
    for schedule in SCHEDULES:
        _, out = launch(emulator, "block_sum", (blocks, 1, 1), (threads, 1, 1), x, np.zeros(blocks, np.int32),
                        scalars=[n], schedule=schedule)
        np.testing.assert_array_equal(out, expected, err_msg=str(schedule))


def test_unwritten_shared_memory_reads_poison_in_every_block(emulators):
    (out,) = launch(emulators(REDUCE), "read_unwritten", (3, 1, 1), (64, 1, 1), np.zeros(3 * 64, np.int32))
    # block 0 wrote its block id into the slots after the barrier: block 1 must not see it
    np.testing.assert_array_equal(out, np.full(3 * 64, POISON))


def test_shared_and_global_atomics(emulators):
    x = np.random.default_rng(3).integers(0, 1000, 300).astype(np.int32)
    expected = np.bincount(x & 7, minlength=8).astype(np.int32)
    for schedule in SCHEDULES:
        _, out = launch(emulators(REDUCE), "histogram", (3, 1, 1), (128, 1, 1), x, np.zeros(8, np.int32),
                        scalars=[x.size], shared_bytes=32, schedule=schedule)
        np.testing.assert_array_equal(out, expected, err_msg=str(schedule))


def _tree_down(values: np.ndarray) -> np.ndarray:
    """shfl.down's sum in float32, lane by lane as the warp computes it (a lane whose
    source is past lane 31 adds its own value)."""
    v = values.astype(np.float32).copy()
    for offset in (16, 8, 4, 2, 1):
        lanes = np.arange(32)
        source = np.where(lanes + offset <= 31, lanes + offset, lanes)
        v = (v + v[source]).astype(np.float32)
    return v


def _tree_bfly(values: np.ndarray) -> np.ndarray:
    v = values.astype(np.float32).copy()
    for offset in (16, 8, 4, 2, 1):
        v = (v + v[np.arange(32) ^ offset]).astype(np.float32)
    return v


@pytest.mark.parametrize("blocks,threads", [(1, 32), (2, 128)])
def test_warp_shuffle_reductions(emulators, blocks, threads):
    x = np.random.default_rng(threads).uniform(-1, 1, blocks * threads).astype(np.float32)
    for schedule in SCHEDULES[:3]:
        _, down, bfly = launch(emulators(WARP), "warp_sums", (blocks, 1, 1), (threads, 1, 1), x,
                               np.zeros_like(x), np.zeros_like(x), schedule=schedule)
        for w in range(x.size // 32):
            lanes = slice(32 * w, 32 * w + 32)
            np.testing.assert_array_equal(down[lanes], _tree_down(x[lanes]))
            np.testing.assert_array_equal(bfly[lanes], _tree_bfly(x[lanes]))
            assert np.all(bfly[lanes] == bfly[32 * w])  # every lane has the sum
            np.testing.assert_allclose(down[32 * w], x[lanes].sum(dtype=np.float64), rtol=1e-5)


def test_shuffle_reads_poison_from_lanes_that_do_not_exist(emulators):
    """A block of 48 threads: warp 1 has 16 lanes, so its shfl.down by 16 reads lanes 16..31
    that are not there (undefined on the GPU; the emulator gives 0xFFFFFFFF, a NaN)."""
    x = np.ones(48, np.float32)
    _, down, _ = launch(emulators(WARP), "warp_sums", (1, 1, 1), (48, 1, 1), x, np.zeros_like(x), np.zeros_like(x))
    assert down[0] == 32
    assert np.isnan(down[32])


def test_shuffle_segments_and_predicate(emulators):
    x = np.arange(100, 132, dtype=np.int32)
    lanes = np.arange(32)
    z = np.zeros(32, np.int32)
    _, idx, up, down, pred, mirror = launch(emulators(WARP), "segments", (1, 1, 1), (32, 1, 1), x, z, z, z, z, z)
    np.testing.assert_array_equal(idx, x[(lanes & ~7) | 2])
    np.testing.assert_array_equal(up, np.where(lanes % 8 == 0, x, x[lanes - 1]))
    np.testing.assert_array_equal(down, np.where(lanes + 3 <= 31, x[np.minimum(lanes + 3, 31)], x))
    np.testing.assert_array_equal(pred, (lanes + 3 <= 31).astype(np.int32))
    np.testing.assert_array_equal(mirror, x[::-1])


@pytest.mark.parametrize("threads", [32, 40])
def test_votes_ballot_redux_match(emulators, threads):
    rng = np.random.default_rng(threads)
    x = rng.integers(0, 3, 2 * threads).astype(np.int32)
    x[:32] = 1  # warp 0 of block 0: all true
    (_, out) = launch(emulators(WARP), "votes", (2, 1, 1), (threads, 1, 1), x, np.zeros(5 * x.size, np.int32))
    out = out.reshape(-1, 5)
    for block in range(2):
        for warp_start in range(0, threads, 32):
            lanes = np.arange(block * threads + warp_start, block * threads + min(warp_start + 32, threads))
            v = x[lanes]
            ballot = sum(1 << k for k, value in enumerate(v) if value != 0)
            for k, lane in enumerate(lanes):
                assert np.uint32(out[lane, 0]) == ballot
                assert out[lane, 1] == int(np.all(v != 0))
                assert out[lane, 2] == int(np.any(v != 0))
                assert out[lane, 3] == v.sum()
                assert np.uint32(out[lane, 4]) == sum(1 << j for j in range(v.size) if v[j] == v[k])
    assert np.all(out[:32, 1] == 1)


@pytest.mark.parametrize("grid,block", [((2, 2, 3), (4, 3, 2)), ((3, 1, 2), (8, 4, 2)), ((1, 2, 1), (33, 1, 1))])
def test_multidimensional_blocks_and_grids(emulators, grid, block):
    nx, ny, nz = (g * b for g, b in zip(grid, block))
    for schedule in SCHEDULES[1:3]:
        (out,) = launch(emulators(GRID), "where", grid, block, np.full(9 * nx * ny * nz, -7, np.int32),
                        scalars=[nx, ny], schedule=schedule)
        out = out.reshape(nz, ny, nx, 9)
        gz, gy, gx = np.meshgrid(np.arange(nz), np.arange(ny), np.arange(nx), indexing="ij")
        tid = [gx % block[0], gy % block[1], gz % block[2]]
        np.testing.assert_array_equal(out[..., 0], tid[0])
        np.testing.assert_array_equal(out[..., 1], tid[1])
        np.testing.assert_array_equal(out[..., 2], tid[2])
        np.testing.assert_array_equal(out[..., 3], gx // block[0])
        np.testing.assert_array_equal(out[..., 4], gy // block[1])
        np.testing.assert_array_equal(out[..., 5], gz // block[2])
        linear = tid[0] + block[0] * (tid[1] + block[1] * tid[2])
        np.testing.assert_array_equal(out[..., 6], linear % 32)
        np.testing.assert_array_equal(out[..., 7], 32)
        np.testing.assert_array_equal(out[..., 8], (linear + 1) % (block[0] * block[1] * block[2]))


@pytest.mark.parametrize("name,block,message", [
    ("early_exit", 64, r"barrier divergence .*thread 0 exited; threads 1-63 wait at barrier 0"),
    ("two_barriers", 64, r"barrier divergence"),
    ("short_count", 96, r"barrier divergence (?=.*exited).*wait at barrier 0 \(sync, expects 64 threads\)"),
    ("short_count", 48, r"deadlock .*threads 0-47 wait at barrier 0 \(sync, expects 64 threads\)"),
    ("split_warp", 32, r"threads 0-15 wait at shfl\.sync\.idx .*threads 16-31 wait at vote\.sync\.ballot"),
])
def test_divergence_and_deadlock_are_errors(emulators, name, block, message):
    emulator = emulators(BROKEN)
    for schedule in SCHEDULES[:3]:
        with pytest.raises(EmulationError, match=f"kernel '{name}'.*{message}"):
            launch(emulator, name, (2, 1, 1), (block, 1, 1), np.zeros(4, np.int32), schedule=schedule)
    # the emulator stays usable after a failed launch
    x = np.arange(4, dtype=np.int32)
    _, out = launch(emulators(NEIGHBOUR), "fixed", (1, 1, 1), (4, 1, 1), x, np.zeros_like(x))
    assert out.tolist() == [1, 2, 3, 0]


def test_exit_releases_barriers_as_ptx_defines_when_asked():
    """PTX's exit releases a barrier for all threads that only exited threads hold up."""
    emulator = Emulator(BROKEN, exit_releases_barriers=True)
    for schedule in SCHEDULES:
        launch(emulator, "early_exit", (2, 1, 1), (64, 1, 1), np.zeros(4, np.int32), schedule=schedule)
    with pytest.raises(EmulationError, match="barrier divergence"):  # different barriers still are
        launch(emulator, "two_barriers", (1, 1, 1), (64, 1, 1), np.zeros(4, np.int32))


def test_racy_kernel_depends_on_the_schedule_and_the_fixed_one_does_not(emulators):
    emulator = emulators(NEIGHBOUR)
    x = np.arange(10, 74, dtype=np.int32)
    racy = {str(s): launch(emulator, "racy", (1, 1, 1), (64, 1, 1), x, np.zeros_like(x), schedule=s)[1].tobytes()
            for s in SCHEDULES}
    fixed = {str(s): launch(emulator, "fixed", (1, 1, 1), (64, 1, 1), x, np.zeros_like(x), schedule=s)[1].tobytes()
             for s in SCHEDULES}
    assert len(set(racy.values())) == len(SCHEDULES), "each schedule should expose the race differently"
    assert set(fixed.values()) == {np.roll(x, -1).tobytes()}


def test_named_barriers_arrive_cp_async_and_barrier_reductions(emulators):
    x = np.random.default_rng(9).integers(0, 100, 64).astype(np.int32)
    for schedule in SCHEDULES:
        _, out, count = launch(emulators(PRODUCER), "produce_consume", (1, 1, 1), (64, 1, 1), x,
                               np.zeros(32, np.int32), np.zeros(64, np.int32), schedule=schedule)
        np.testing.assert_array_equal(out, 3 * x[:32], err_msg=str(schedule))
        np.testing.assert_array_equal(count, np.full(64, (x > 50).sum()), err_msg=str(schedule))


def test_mma_with_ldmatrix_fragments(emulators):
    """ldmatrix.x4 gives mma's A fragment, ldmatrix.x2 (of B stored transposed) or
    ldmatrix.x2.trans (of B stored as is) its B fragment, as on the GPU; D = A B + C."""
    rng = np.random.default_rng(4)
    c = rng.uniform(-1, 1, (16, 8)).astype(np.float32)
    a = rng.uniform(-1, 1, (16, 16)).astype(np.float16)
    b = rng.uniform(-1, 1, (16, 8)).astype(np.float16)
    for schedule in SCHEDULES[:3]:
        *_, d = launch(emulators(MMA), "mma_f16", (1, 1, 1), (32, 1, 1), a, np.ascontiguousarray(b.T), c,
                       np.zeros_like(c), schedule=schedule)
        np.testing.assert_array_equal(d, (a.astype(np.float64) @ b.astype(np.float64) + c).astype(np.float32))
    # bf16: the top half of float32's bits
    a32 = rng.uniform(-1, 1, (16, 16)).astype(np.float32)
    b32 = rng.uniform(-1, 1, (16, 8)).astype(np.float32)
    a_bits, b_bits = (a32.view(np.uint32) >> 16).astype(np.uint16), (b32.view(np.uint32) >> 16).astype(np.uint16)
    widen = lambda bits: (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)  # noqa: E731
    *_, d = launch(emulators(MMA), "mma_bf16", (1, 1, 1), (32, 1, 1), a_bits, b_bits, c, np.zeros_like(c))
    np.testing.assert_array_equal(d, (widen(a_bits) @ widen(b_bits) + c).astype(np.float32))
    a8 = rng.integers(-128, 128, (16, 32)).astype(np.int8)
    b8 = rng.integers(-128, 128, (32, 8)).astype(np.int8)
    c32 = rng.integers(-2**31, 2**31, (16, 8), dtype=np.int64).astype(np.int32)
    *_, d = launch(emulators(MMA), "mma_s8", (1, 1, 1), (32, 1, 1), a8, np.ascontiguousarray(b8.T), c32,
                   np.zeros_like(c32))
    np.testing.assert_array_equal(d, (a8.astype(np.int64) @ b8.astype(np.int64) + c32).astype(np.int32))
    with pytest.raises(EmulationError, match="mma needs a whole warp|ldmatrix needs a whole warp"):
        launch(emulators(MMA), "mma_s8", (1, 1, 1), (16, 1, 1), a8, np.ascontiguousarray(b8.T), c32, np.zeros_like(c32))


def test_cooperative_kernels_keep_their_block():
    """max_threads shrinks the block of a kernel that does not synchronise; one with
    barriers or shared memory keeps the block it was written for."""
    plain = HEADER + """
define ptx_kernel void @ids(ptr addrspace(1) %out) {
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %p = getelementptr i32, ptr addrspace(1) %out, i32 %tid
  store i32 %tid, ptr addrspace(1) %p
  ret void
}
"""
    emulator = Emulator(plain + REDUCE.removeprefix(HEADER), max_blocks=2, max_threads=8)
    (out,) = launch(emulator, "ids", (5, 1, 1), (64, 1, 1), np.full(64, -1, np.int32))
    np.testing.assert_array_equal(out, np.where(np.arange(64) < 8, np.arange(64), -1))
    x = np.arange(5 * 64, dtype=np.int32)
    _, sums = launch(emulator, "block_sum", (5, 1, 1), (64, 1, 1), x, np.zeros(5, np.int32), scalars=[x.size])
    np.testing.assert_array_equal(sums[:2], x.reshape(5, 64).sum(axis=1)[:2])  # two blocks of 64 ran
    assert emulator.runs == [("ids", (2, 1, 1), (8, 1, 1)), ("block_sum", (2, 1, 1), (64, 1, 1))]


def test_generic_intrinsics_on_shared_and_global_pointers(emulators):
    """memcpy's address-space overloads (p3.p1, p1.p3) next to the p0 one."""
    text = HEADER + """
declare void @llvm.memcpy.p3.p1.i64(ptr addrspace(3), ptr addrspace(1), i64, i1)
declare void @llvm.memcpy.p1.p3.i64(ptr addrspace(1), ptr addrspace(3), i64, i1)
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
@tile = internal addrspace(3) global [16 x i32] undef, align 4
define ptx_kernel void @stage(ptr addrspace(1) %in, ptr addrspace(1) %out) {
entry:
  %t = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %first = icmp eq i32 %t, 0
  br i1 %first, label %load, label %wait
load:
  call void @llvm.memcpy.p3.p1.i64(ptr addrspace(3) @tile, ptr addrspace(1) %in, i64 64, i1 false)
  br label %wait
wait:
  call void @llvm.nvvm.barrier0()
  %last = icmp eq i32 %t, 31
  br i1 %last, label %store, label %exit
store:
  call void @llvm.memcpy.p1.p3.i64(ptr addrspace(1) %out, ptr addrspace(3) @tile, i64 64, i1 false)
  br label %exit
exit:
  ret void
}
"""
    x = np.arange(16, dtype=np.int32)
    for schedule in SCHEDULES[:2]:
        _, out = launch(emulators(text), "stage", (1, 1, 1), (32, 1, 1), x, np.zeros_like(x), schedule=schedule)
        np.testing.assert_array_equal(out, x)


def test_ir_without_a_model_is_refused():
    unknown = HEADER + """
declare i32 @llvm.nvvm.read.ptx.sreg.clusterid.x()
define ptx_kernel void @k(ptr addrspace(1) %out) {
  %c = call i32 @llvm.nvvm.read.ptx.sreg.clusterid.x()
  store i32 %c, ptr addrspace(1) %out
  ret void
}
"""
    with pytest.raises(EmulationError, match=r"no model of the intrinsic llvm\.nvvm\.read\.ptx\.sreg\.clusterid\.x"):
        Emulator(unknown)
    assembly = HEADER + """
define ptx_kernel void @k(ptr addrspace(1) %out) {
  %c = call i32 asm "mov.u32 $0, %smid;", "=r"()
  store i32 %c, ptr addrspace(1) %out
  ret void
}
"""
    with pytest.raises(EmulationError, match="inline assembly"):
        Emulator(assembly)
