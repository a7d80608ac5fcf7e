"""The block emulator's model of cp.async (tests/gpu/cpu_emulation.py, emu_blocks.c): a
copy is queued in its thread's current group and lands only when a cp.async.wait_group
of that thread retires the group (all but the newest N committed groups), at
cp.async.wait_all, or when the thread exits. So a kernel that reads a cp.async
destination before waiting for it reads the poisoned shared memory, as a GPU may."""
from __future__ import annotations

import numpy as np

from cpu_emulation import Emulator

# Each thread copies in[tid] (group 0) and in[tid + 32] (group 1) into shared memory, and
# records what it reads there: before any wait (out[0]), after wait_group 1 (group 0 has
# landed, group 1 may not have: out[1], out[2]), after wait_group 0 (out[3]); then an
# uncommitted copy with a source size of 0 (zero fill), read after wait_all (out[4]).
STAGED = """
target triple = "nvptx64-nvidia-cuda"
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare void @llvm.nvvm.cp.async.ca.shared.global.4(ptr addrspace(3), ptr addrspace(1))
declare void @llvm.nvvm.cp.async.ca.shared.global.4.s(ptr addrspace(3), ptr addrspace(1), i32)
declare void @llvm.nvvm.cp.async.commit.group()
declare void @llvm.nvvm.cp.async.wait.group(i32)
declare void @llvm.nvvm.cp.async.wait.all()

@first = internal addrspace(3) global [32 x i32] undef, align 4
@second = internal addrspace(3) global [32 x i32] undef, align 4

define ptx_kernel void @staged(ptr addrspace(1) %in, ptr addrspace(1) %out) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %a = getelementptr [32 x i32], ptr addrspace(3) @first, i32 0, i32 %tid
  %b = getelementptr [32 x i32], ptr addrspace(3) @second, i32 0, i32 %tid
  %src0 = getelementptr i32, ptr addrspace(1) %in, i32 %tid
  %hi = add i32 %tid, 32
  %src1 = getelementptr i32, ptr addrspace(1) %in, i32 %hi
  call void @llvm.nvvm.cp.async.ca.shared.global.4(ptr addrspace(3) %a, ptr addrspace(1) %src0)
  call void @llvm.nvvm.cp.async.commit.group()
  call void @llvm.nvvm.cp.async.ca.shared.global.4(ptr addrspace(3) %b, ptr addrspace(1) %src1)
  call void @llvm.nvvm.cp.async.commit.group()
  %early = load volatile i32, ptr addrspace(3) %a
  call void @llvm.nvvm.cp.async.wait.group(i32 1)
  %landed = load volatile i32, ptr addrspace(3) %a
  %pending = load volatile i32, ptr addrspace(3) %b
  call void @llvm.nvvm.cp.async.wait.group(i32 0)
  %late = load volatile i32, ptr addrspace(3) %b
  call void @llvm.nvvm.cp.async.ca.shared.global.4.s(ptr addrspace(3) %a, ptr addrspace(1) %src0, i32 0)
  call void @llvm.nvvm.cp.async.wait.all()
  %zero = load volatile i32, ptr addrspace(3) %a
  %row = mul i32 %tid, 5
  %o0 = getelementptr i32, ptr addrspace(1) %out, i32 %row
  store i32 %early, ptr addrspace(1) %o0
  %o1 = getelementptr i32, ptr addrspace(1) %o0, i32 1
  store i32 %landed, ptr addrspace(1) %o1
  %o2 = getelementptr i32, ptr addrspace(1) %o0, i32 2
  store i32 %pending, ptr addrspace(1) %o2
  %o3 = getelementptr i32, ptr addrspace(1) %o0, i32 3
  store i32 %late, ptr addrspace(1) %o3
  %o4 = getelementptr i32, ptr addrspace(1) %o0, i32 4
  store i32 %zero, ptr addrspace(1) %o4
  ret void
}
"""


def test_copies_land_when_their_group_is_waited_for():
    emulator = Emulator(STAGED)
    source = np.arange(100, 164, dtype=np.int32)
    out = np.zeros((32, 5), np.int32)
    pointers = []
    for array in (source, out):
        pointer = emulator.alloc(array.nbytes)
        emulator.upload(pointer, array.ctypes.data, array.nbytes)
        pointers.append(pointer)
    emulator.launch(emulator.function(None, "staged"), [1], [32], 0, [("ptr", p) for p in pointers])
    emulator.download(out.ctypes.data, pointers[1], out.nbytes)
    poison = -1  # shared memory is filled with 0xFF bytes before the block
    np.testing.assert_array_equal(out[:, 0], poison)  # no wait yet: nothing landed
    np.testing.assert_array_equal(out[:, 1], source[:32])  # wait_group 1: group 0 landed
    np.testing.assert_array_equal(out[:, 2], poison)  # ... group 1 is still in flight
    np.testing.assert_array_equal(out[:, 3], source[32:])  # wait_group 0: everything landed
    np.testing.assert_array_equal(out[:, 4], 0)  # a source size of 0 fills with zeros
