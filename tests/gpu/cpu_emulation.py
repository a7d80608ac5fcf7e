"""Run the PTX target's kernels on the CPU, to test everything but the NVPTX backend
where there is no GPU.

``Emulator(llvm_ir)`` is a backend for ``intentc.ptx_loader``: it takes the LLVM IR that
``intentc`` generates for an ``sm_XX`` target (the IR the PTX is made from), retargets it
to the host (global pointers become ordinary pointers, the special registers ``tid``,
``ctaid``, ``ntid``, ``nctaid`` become globals, libdevice math becomes the C library's)
and JIT-compiles it. A launch runs every thread of the grid one after another, which is
one legal schedule of the kernel's threads. ``max_blocks`` and ``max_threads`` shrink the
grid the manifest asks for, so that each thread covers many points (the grid-stride
loop); a correct kernel gives the same result with any grid.

What this checks: the entry ABI and the manifest agree, the launch formulas, the
grid-stride decomposition of the flattened points, the status protocol, and the
numerics of the emitted IR. What it cannot check: NVPTX instruction selection (ptxas
checks that the PTX assembles) and real concurrency.
"""
from __future__ import annotations

import ctypes
import ctypes.util

import llvmlite.binding as llvm

_SREGS = ("tid.x", "ctaid.x", "ntid.x", "nctaid.x")
_LIBM = {"__nv_expf": "expf", "__nv_logf": "logf", "__nv_powf": "powf", "__nv_fmodf": "fmodf",
         "__nv_exp": "exp", "__nv_log": "log", "__nv_pow": "pow", "__nv_fmod": "fmod"}
_CTYPES = {"ptr": ctypes.c_void_p, "i8": ctypes.c_int8, "i16": ctypes.c_int16, "i32": ctypes.c_int32,
           "i64": ctypes.c_int64, "u8": ctypes.c_uint8, "u16": ctypes.c_uint16, "u32": ctypes.c_uint32,
           "u64": ctypes.c_uint64, "f32": ctypes.c_float, "f64": ctypes.c_double}


def host_ir(gpu_ir: str) -> str:
    """The GPU module's IR, rewritten for the host."""
    lines = []
    for line in gpu_ir.splitlines():
        if line.startswith(("target triple", "target datalayout")):
            continue
        if line.startswith("declare") and "llvm.nvvm.read.ptx.sreg." in line:
            continue
        lines.append(line)
    text = "\n".join(lines)
    text = text.replace("define ptx_kernel ", "define ").replace(" addrspace(1)", "")
    text = text.replace('@"llvm.nvvm.read.ptx.sreg.', '@"emu.sreg.')
    for nv, libm in _LIBM.items():
        text = text.replace(f'@"{nv}"', f'@"{libm}"')
    for reg in _SREGS:
        text += (f'\n@"emu.reg.{reg}" = global i32 0\n'
                 f'define i32 @"emu.sreg.{reg}"() {{\n  %v = load i32, ptr @"emu.reg.{reg}"\n  ret i32 %v\n}}\n')
    return text


class Emulator:
    def __init__(self, gpu_ir: str, max_blocks: int | None = None, max_threads: int | None = None):
        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()
        # The C library's math, and libgcc's f16 conversions (x86 has no f16 arithmetic).
        for name in ("m", "gcc_s"):
            path = ctypes.util.find_library(name)
            if path:
                llvm.load_library_permanently(path)
        module = llvm.parse_assembly(host_ir(gpu_ir))
        module.triple = llvm.get_process_triple()
        module.verify()
        tm = llvm.Target.from_default_triple().create_target_machine(opt=2)
        pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=2))
        pb.getModulePassManager().run(module, pb)
        self.engine = llvm.create_mcjit_compiler(module, tm)
        self.engine.finalize_object()
        self.module = module
        self.regs = {r: ctypes.c_int32.from_address(self.engine.get_global_value_address(f"emu.reg.{r}"))
                     for r in _SREGS}
        self.max_blocks = max_blocks
        self.max_threads = max_threads
        self.memory: dict[int, object] = {}
        self.capability = (0, 0)
        self.launches: list[tuple] = []  # (entry, grid, block) as the manifest asked, for tests

    def load(self, ptx: str):
        return None

    def function(self, module, name: str):
        address = self.engine.get_function_address(name)
        if not address:
            raise KeyError(f"no entry '{name}' in the module")
        return name, address

    def alloc(self, nbytes: int) -> int:
        buf = ctypes.create_string_buffer(max(1, nbytes) + 64)
        address = (ctypes.addressof(buf) + 63) // 64 * 64  # aligned like device memory
        self.memory[address] = buf
        return address

    def free(self, ptr: int) -> None:
        self.memory.pop(ptr, None)

    def upload(self, ptr: int, host_address: int, nbytes: int) -> None:
        ctypes.memmove(ptr, host_address, nbytes)

    def download(self, host_address: int, ptr: int, nbytes: int) -> None:
        ctypes.memmove(host_address, ptr, nbytes)

    def zero(self, ptr: int, nbytes: int) -> None:
        ctypes.memset(ptr, 0, nbytes)

    def launch(self, function, grid, block, shared_bytes: int, args: list) -> None:
        name, address = function
        self.launches.append((name, tuple(grid), tuple(block)))
        assert all(g >= 1 for g in grid) and all(b >= 1 for b in block), f"empty launch {grid} {block}"
        assert grid[1:] == [1, 1] and block[1:] == [1, 1], "the manifest launches along x only"
        proto = ctypes.CFUNCTYPE(None, *[_CTYPES[kind] for kind, _ in args])
        fn = proto(address)
        values = [_CTYPES[kind](value) for kind, value in args]
        blocks = min(grid[0], self.max_blocks or grid[0])
        threads = min(block[0], self.max_threads or block[0])
        self.regs["ntid.x"].value = threads
        self.regs["nctaid.x"].value = blocks
        for b in range(blocks):
            self.regs["ctaid.x"].value = b
            for t in range(threads):
                self.regs["tid.x"].value = t
                fn(*values)

    def synchronize(self) -> None:
        pass

