"""Run the PTX target's kernels on the CPU with the semantics of thread blocks, to test
everything but the NVPTX backend where there is no GPU.

``Emulator(llvm_ir)`` is a backend for ``intentc.ptx_loader``: it takes the LLVM IR that
``intentc`` generates for an ``sm_XX`` target (the IR the PTX is made from), retargets it
to the host and JIT-compiles it:

- global, shared, constant and local pointers become ordinary pointers; the special
  registers (``tid``, ``ntid``, ``ctaid``, ``nctaid`` in x, y and z, ``laneid``,
  ``warpid``, ``warpsize``...) read what the scheduler sets for the running thread;
  libdevice math becomes the C library's;
- every ``addrspace(3)`` global becomes one buffer that the blocks of a launch share one
  after another, refilled with a poison pattern (``shared_fill``, 0xFF: NaN for floats,
  -1 for integers) before each block, so a read of shared memory no thread of the block
  wrote shows; ``extern`` shared arrays all start at the launch's dynamic shared memory;
- the NVVM intrinsics call the block runtime (``emu_blocks.c``, built with the host C
  compiler on first use): the threads of a block run as cooperative fibers that switch
  at barriers (``barrier.cta.*``, which ``barrier0``, ``barrier.sync`` and ``bar.sync``
  upgrade to) and warp-collective operations (``shfl.sync``, ``vote.sync``,
  ``match.sync``, ``redux.sync``, ``bar.warp.sync``), which complete warp-synchronously
  once every existing lane of their member mask has arrived. A shuffle that reads a lane
  outside the operation reads 0xFFFFFFFF. ``ldmatrix`` and ``mma.sync`` (m16n8k16 f16/bf16,
  m16n8k32 s8/u8) are whole-warp operations with the PTX ISA's fragment layouts. Fences
  and ``membar`` are no-ops (the fibers share one OS thread, so memory is always coherent
  and atomics are atomic). A ``cp.async`` is queued in its thread's current group and
  lands only when a ``cp.async.wait_group N`` of that thread retires the group (all but
  the newest ``N`` committed groups; ``wait_all``: every copy) or the thread exits, so a
  read of its destination that no wait orders after it sees the old contents (poison).

Blocks of a launch run one after another. Inside a block, whenever a thread reaches a
synchronisation point or exits, the scheduler runs next the lowest-numbered
(``schedule="ascending"``), the highest-numbered (``"descending"``) or a random
(``"random"``, seeded with ``seed``) runnable thread, so one thread may run far ahead of
the others up to the next barrier. A correct kernel gives the same bits under every
schedule. A block where no thread can go on but some have not finished
(a barrier that some thread skipped or exited before, threads at different barriers, a
shuffle whose lanes went separate ways) raises ``EmulationError`` naming the kernel and
saying which threads wait where, instead of hanging. A thread that exits while others
wait at a barrier for the whole block is reported too, although PTX's ``exit`` releases
such a barrier, because it is often a bug (a check some threads of the block took and
others did not); ``exit_releases_barriers=True`` follows PTX instead.

``counts`` records, per run, what the emulated threads did (``COUNTS``: barrier arrivals,
warp operations, ``ldmatrix`` and ``mma.sync`` per warp, ``cp.async`` copies and bytes),
a cheap measure of a kernel's synchronisation and shared-memory staging.

``max_blocks`` caps every grid dimension and ``max_threads`` the block's x dimension, so
that each thread of a grid-stride kernel covers many points; a correct kernel gives the
same result with any grid. A kernel that synchronises or uses shared memory keeps the
block the manifest asks for (its block size is part of its code: shared arrays, tree
depths). ``launches`` records what the manifest asked for, ``runs`` what ran.

What it cannot check: NVPTX instruction selection and register allocation (ptxas checks
that the PTX assembles), the GPU memory model's reorderings (every fiber sees every write
at once), the timing of real warps (threads of a warp only meet at the collective
operations), the last bit of a float mma, bank conflicts and occupancy.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import llvmlite.binding as llvm

SCHEDULES = {"ascending": 0, "descending": 1, "random": 2}
# emu_blocks.c's counters of a launch (emu_counts), in order
COUNTS = ("barrier_arrivals", "warp_ops", "ldmatrix", "mma", "cp_async", "cp_async_bytes")
DYNAMIC_SHARED_BYTES = 227 * 1024  # the most dynamic shared memory a block can have (sm_90)
WARP_SIZE = 32

_CTYPES = {"ptr": ctypes.c_void_p, "i8": ctypes.c_int8, "i16": ctypes.c_int16, "i32": ctypes.c_int32,
           "i64": ctypes.c_int64, "u8": ctypes.c_uint8, "u16": ctypes.c_uint16, "u32": ctypes.c_uint32,
           "u64": ctypes.c_uint64, "f32": ctypes.c_float, "f64": ctypes.c_double}

# Where each special register lives in the array the runtime writes (emu_blocks.c).
_SREGS = {f"{name}.{axis}": base + i for name, base in (("tid", 0), ("ntid", 3), ("ctaid", 6), ("nctaid", 9))
          for i, axis in enumerate("xyz")}
_SREGS.update({"laneid": 12, "warpid": 13, "nwarpid": 14})

# emu_blocks.c's operation numbers.
_BARRIER_KINDS = {"sync": 0, "arrive": 1, "red.popc": 2, "red.and": 3, "red.or": 4}
_WARP_OPS = {name: i for i, name in enumerate(
    ["shfl.idx", "shfl.up", "shfl.down", "shfl.bfly", "vote.all", "vote.any", "vote.uni", "vote.ballot",
     "match.any", "match.all", "redux.add", "redux.min", "redux.max", "redux.umin", "redux.umax", "redux.and",
     "redux.or", "redux.xor", "warp.sync"])}

_RUNTIME_DECLARATIONS = """
declare i32 @emu_barrier(i32, i32, i32, i32)
declare i64 @emu_warp(i32, i32, i64, i32, i32, ptr)
declare i32 @emu_activemask()
declare i64 @emu_clock()
declare void @emu_trap()
declare void @emu_ldmatrix(i32, i32, ptr, ptr)
declare void @emu_mma(i32, ptr, ptr, ptr, ptr)
declare void @emu_cp_async(ptr, ptr, i32, i32)
declare void @emu_cp_async_commit()
declare void @emu_cp_async_wait(i32)
@"emu.sregs" = global [16 x i32] zeroinitializer, align 16
"""

# Functions whose calls only make sense on a GPU thread: a kernel that reaches one is
# cooperative (keeps its block size).
_COOPERATIVE = re.compile(r"@llvm\.nvvm\.(barrier|bar\.|shfl|vote|match|redux|cp\.async|ldmatrix|mma)|addrspace\(3\)")
_MMA_SHAPES = {"m16n8k16.row.col.f32.f32": 0, "m16n8k16.row.col.bf16": 1, "m16n8k32.row.col.s8": 2,
               "m16n8k32.row.col.u8": 3}


class EmulationError(RuntimeError):
    """A launch the emulator cannot run as the GPU would: divergence, deadlock, a trap, or
    IR it has no model of."""


# ---- the block runtime --------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _load_host_libraries() -> None:
    """The C library's math, and libgcc's f16 conversions (x86 has no f16 arithmetic)."""
    for name in ("m", "gcc_s"):
        path = ctypes.util.find_library(name)
        if path:
            llvm.load_library_permanently(path)


@functools.lru_cache(maxsize=None)
def _runtime() -> ctypes.CDLL:
    """emu_blocks.c, compiled once per process and loaded so that the JIT'd IR can call it."""
    source = Path(__file__).with_name("emu_blocks.c")
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise EmulationError("the GPU emulator needs a C compiler (cc or gcc) to build its block runtime")
    with tempfile.TemporaryDirectory(prefix="gpu-emulator-") as directory:
        library = os.path.join(directory, "emu_blocks.so")
        built = subprocess.run([compiler, "-O2", "-shared", "-fPIC", "-o", library, str(source)],
                               capture_output=True, text=True)
        if built.returncode != 0:
            raise EmulationError(f"could not build the emulator's block runtime with {compiler}:\n{built.stderr}")
        llvm.load_library_permanently(library)
        runtime = ctypes.CDLL(library)  # loaded: the file may go
    runtime.emu_launch.restype = ctypes.c_int32
    runtime.emu_launch.argtypes = [
        ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int32), ctypes.POINTER(ctypes.c_int32),
        ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_uint64), ctypes.c_int32,
        ctypes.c_int32, ctypes.c_int32, ctypes.c_uint64, ctypes.c_int32, ctypes.c_uint64, ctypes.c_char_p,
        ctypes.c_uint64]
    runtime.emu_counts.argtypes = [ctypes.POINTER(ctypes.c_uint64)]
    runtime.emu_counts.restype = None
    return runtime


# ---- the NVVM intrinsics, defined for the host ------------------------------------------------

def _intrinsic_body(name: str, ret: str, params: list[str]) -> str | None:
    """The IR body of ``llvm.nvvm.<name>`` (arguments %a0, %a1, ...), or None when the
    emulator has no model of it."""
    def convert_in(value: str, typ: str) -> str:
        """Lines that widen ``value`` of ``typ`` to %wide (i64)."""
        if typ == "float":
            return f"%bits = bitcast float {value} to i32\n  %wide = zext i32 %bits to i64"
        if typ == "i64":
            return f"%wide = add i64 {value}, 0"
        return f"%wide = zext {typ} {value} to i64"

    def convert_out(typ: str) -> str:
        """Lines that narrow %r (i64) to %out of ``typ``."""
        if typ == "float":
            return "%lo = trunc i64 %r to i32\n  %out = bitcast i32 %lo to float"
        if typ == "i64":
            return "%out = add i64 %r, 0"
        return f"%out = trunc i64 %r to {typ}"

    def warp(op: str, mask: str, value: str | None, value_type: str, b: str = "0", c: str = "0") -> str:
        widen = convert_in(value, value_type) if value is not None else "%wide = add i64 0, 0"
        call = f'%r = call i64 @emu_warp(i32 {_WARP_OPS[op]}, i32 {mask}, i64 %wide, i32 {b}, i32 {c}, ptr %pred)'
        if ret == "void":
            tail = "ret void"
        elif ret.startswith("{"):
            value_out = ret[1:-1].split(",")[0].strip()
            tail = (convert_out(value_out) + "\n  %p32 = load i32, ptr %pred\n  %p = icmp ne i32 %p32, 0\n"
                    f"  %s0 = insertvalue {ret} poison, {value_out} %out, 0\n"
                    f"  %s1 = insertvalue {ret} %s0, i1 %p, 1\n  ret {ret} %s1")
        else:
            tail = convert_out(ret) + f"\n  ret {ret} %out"
        return f"%pred = alloca i32\n  {widen}\n  {call}\n  {tail}"

    def barrier(id_: str, count: str, kind: str, pred: str = "0") -> str:
        call = f"%r = call i32 @emu_barrier(i32 {id_}, i32 {count}, i32 {_BARRIER_KINDS[kind]}, i32 {pred})"
        if ret == "void":
            return f"{call}\n  ret void"
        if ret == "i1":
            return f"{call}\n  %out = trunc i32 %r to i1\n  ret i1 %out"
        return f"{call}\n  ret i32 %r"

    sreg = name.removeprefix("read.ptx.sreg.")
    if sreg in _SREGS:
        return (f'%p = getelementptr i32, ptr @"emu.sregs", i32 {_SREGS[sreg]}\n'
                f"  %v = load i32, ptr %p\n  ret i32 %v")
    if sreg == "warpsize":
        return f"ret i32 {WARP_SIZE}"
    if sreg.startswith("lanemask."):
        kind = sreg.split(".")[1]
        shifted = {"eq": 1, "lt": 1, "ge": 1, "le": 2, "gt": 2}[kind]
        lines = [f'%p = getelementptr i32, ptr @"emu.sregs", i32 {_SREGS["laneid"]}', "%lane = load i32, ptr %p",
                 f"%bit = shl i32 {shifted}, %lane", "%below = sub i32 %bit, 1"]  # le, lane 31: 0 - 1, all lanes
        result = {"eq": "%bit", "lt": "%below", "le": "%below"}.get(kind)
        if result is None:  # ge, gt: the complement of lt, le
            lines.append("%above = xor i32 %below, -1")
            result = "%above"
        return "\n  ".join(lines) + f"\n  ret i32 {result}"
    if sreg in ("clock", "clock64", "globaltimer"):
        return ("%r = call i64 @emu_clock()\n  " +
                ("%out = trunc i64 %r to i32\n  ret i32 %out" if ret == "i32" else "ret i64 %r"))
    if sreg in ("smid", "gridid"):
        return "ret i32 0"
    if sreg == "nsmid":
        return "ret i32 1"

    match = re.fullmatch(r"barrier\.cta\.(sync|arrive)(?:\.aligned)?\.(all|count)", name)
    if match:
        kind, scope = match.groups()
        return barrier("%a0", "-1" if scope == "all" else "%a1", kind)
    match = re.fullmatch(r"barrier\.cta\.red\.(popc|and|or)(?:\.aligned)?\.(all|count)", name)
    if match:
        kind, scope = match.groups()
        count, pred = ("-1", "%a1") if scope == "all" else ("%a1", "%a2")
        return f"%pz = zext i1 {pred} to i32\n  " + barrier("%a0", count, f"red.{kind}", "%pz")
    if name == "bar.warp.sync":
        return warp("warp.sync", "%a0", None, "i32")
    match = re.fullmatch(r"shfl\.sync\.(idx|up|down|bfly)\.(i32|f32)p?", name)
    if match:
        return warp(f"shfl.{match.group(1)}", "%a0", "%a1", params[1], "%a2", "%a3")
    match = re.fullmatch(r"vote\.(all|any|uni|ballot)\.sync", name)
    if match:
        return warp(f"vote.{match.group(1)}", "%a0", "%a1", "i1")
    match = re.fullmatch(r"match\.(any|all)\.sync\.(i32|i64)p?", name)
    if match:
        return warp(f"match.{match.group(1)}", "%a0", "%a1", params[1])
    match = re.fullmatch(r"redux\.sync\.(add|min|max|umin|umax|and|or|xor)", name)
    if match:
        return warp(f"redux.{match.group(1)}", "%a1", "%a0", "i32")
    def registers(slot: str, count: int) -> str:
        """Lines that load ``count`` i32 registers from ``slot`` and return them as ``ret``."""
        element = ret[1:-1].split(",")[0].strip() if ret.startswith("{") else ret
        lines = [f"%r{i}p = getelementptr i32, ptr {slot}, i32 {i}\n  %r{i} = load {element}, ptr %r{i}p"
                 for i in range(count)]
        if not ret.startswith("{"):
            return "\n  ".join(lines) + f"\n  ret {ret} %r0"
        value = "poison"
        for i in range(count):
            lines.append(f"%s{i} = insertvalue {ret} {value}, {element} %r{i}, {i}")
            value = f"%s{i}"
        return "\n  ".join(lines) + f"\n  ret {ret} {value}"

    match = re.fullmatch(r"ldmatrix\.sync\.aligned\.m8n8\.x(1|2|4)(\.trans)?\.b16", name)
    if match:
        count, trans = int(match.group(1)), int(bool(match.group(2)))
        return (f"%out = alloca [4 x i32]\n  call void @emu_ldmatrix(i32 {count}, i32 {trans}, ptr %a0, ptr %out)\n  "
                + registers("%out", count))
    match = re.fullmatch(r"mma\.(m16n8k16\.row\.col\.(?:f32\.f32|bf16)|m16n8k32\.row\.col\.[su]8)", name)
    if match and len(params) == 10:
        lines = ["%a = alloca [4 x i32]", "%b = alloca [2 x i32]", "%c = alloca [4 x i32]", "%d = alloca [4 x i32]"]
        for i, typ in enumerate(params):
            slot, index = ("%a", i) if i < 4 else ("%b", i - 4) if i < 6 else ("%c", i - 6)
            lines.append(f"%p{i} = getelementptr i32, ptr {slot}, i32 {index}\n  store {typ} %a{i}, ptr %p{i}")
        lines.append(f"call void @emu_mma(i32 {_MMA_SHAPES[match.group(1)]}, ptr %a, ptr %b, ptr %c, ptr %d)")
        return "\n  ".join(lines) + "\n  " + registers("%d", 4)
    if name == "activemask":
        return "%r = call i32 @emu_activemask()\n  ret i32 %r"
    if re.fullmatch(r"(membar|fence)\..*", name):
        return "ret void"
    if name == "cp.async.commit.group":
        return "call void @emu_cp_async_commit()\n  ret void"
    if name == "cp.async.wait.group":
        return "call void @emu_cp_async_wait(i32 %a0)\n  ret void"
    if name == "cp.async.wait.all":
        return "call void @emu_cp_async_wait(i32 -1)\n  ret void"
    match = re.fullmatch(r"cp\.async\.(?:ca|cg)\.shared\.global\.(4|8|16)(\.s)?", name)
    if match:  # queued: the copy lands at the cp.async.wait that retires its group
        size, with_source_size = int(match.group(1)), match.group(2)
        source_size = "%a2" if with_source_size else str(size)
        return f"call void @emu_cp_async(ptr %a0, ptr %a1, i32 {size}, i32 {source_size})\n  ret void"
    math = {"fmin.f": "call float @llvm.minnum.f32(float %a0, float %a1)",
            "fmax.f": "call float @llvm.maxnum.f32(float %a0, float %a1)",
            "fmin.d": "call double @llvm.minnum.f64(double %a0, double %a1)",
            "fmax.d": "call double @llvm.maxnum.f64(double %a0, double %a1)",
            "fma.rn.f": "call float @llvm.fma.f32(float %a0, float %a1, float %a2)",
            "fma.rn.d": "call double @llvm.fma.f64(double %a0, double %a1, double %a2)",
            "sqrt.rn.f": "call float @llvm.sqrt.f32(float %a0)",
            "sqrt.rn.d": "call double @llvm.sqrt.f64(double %a0)",
            "div.rn.f": "fdiv float %a0, %a1", "div.rn.d": "fdiv double %a0, %a1",
            "rcp.rn.f": "fdiv float 1.0, %a0", "rcp.rn.d": "fdiv double 1.0, %a0",
            "fabs.f32": "call float @llvm.fabs.f32(float %a0)", "fabs.f64": "call double @llvm.fabs.f64(double %a0)"}
    if name in math:
        return f"%v = {math[name]}\n  ret {ret} %v"
    return None


_MEMORY_INTRINSICS = """
declare void @llvm.memmove.p0.p0.i64(ptr, ptr, i64, i1)
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)
declare float @llvm.minnum.f32(float, float)
declare float @llvm.maxnum.f32(float, float)
declare double @llvm.minnum.f64(double, double)
declare double @llvm.maxnum.f64(double, double)
declare float @llvm.fma.f32(float, float, float)
declare double @llvm.fma.f64(double, double, double)
declare float @llvm.sqrt.f32(float)
declare double @llvm.sqrt.f64(double)
declare float @llvm.fabs.f32(float)
declare double @llvm.fabs.f64(double)
"""


def _strip_address_spaces(text: str) -> str:
    text = re.sub(r",\s*addrspace\(\d+\)", "", text)  # alloca ..., addrspace(5)
    text = re.sub(r"\s*addrspace\(\d+\)", "", text)
    return text.replace("addrspacecast", "bitcast")


def _function_type(fn) -> tuple[str, list[str]]:
    """(return type, parameter types) of a parsed function, address spaces stripped."""
    ret = _strip_address_spaces(str(fn.global_value_type).split(" (", 1)[0])
    return ret, [_strip_address_spaces(str(arg.type)) for arg in fn.arguments]


def _cooperative_functions(text: str) -> set[str]:
    """The functions that synchronise or use shared memory, themselves or through calls."""
    bodies = {}
    for match in re.finditer(r'^define [^@]*@"?([^"(]+)"?\(.*?^}', text, re.S | re.M):
        bodies[match.group(1)] = match.group(0)
    calls = {name: set(re.findall(r'call [^@]*@"?([^"(]+)"?\(', body)) & bodies.keys()
             for name, body in bodies.items()}
    cooperative = {name for name, body in bodies.items() if _COOPERATIVE.search(body)}
    grown = True
    while grown:
        grown = False
        for name, callees in calls.items():
            if name not in cooperative and callees & cooperative:
                cooperative.add(name)
                grown = True
    return cooperative


class HostModule:
    """The GPU module's IR rewritten for the host: its text, its kernels' parameter types,
    its shared globals, and which kernels are cooperative."""

    def __init__(self, gpu_ir: str):
        # Parsing first upgrades the older intrinsic spellings (barrier0, bar.sync,
        # barrier.sync...) to the current ones, so only those need a model here.
        gpu = llvm.parse_assembly(gpu_ir)
        text = str(gpu)
        kernels = re.findall(r'^define ptx_kernel void @"?([^"(]+)"?\(', text, re.M)
        self.kernels = {name: _function_type(gpu.get_function(name))[1] for name in kernels}
        self.cooperative = _cooperative_functions(text) & set(kernels)
        if re.search(r"\bcall\b[^\n]*\basm\b", text):
            raise EmulationError("the kernel IR has inline assembly, which the emulator cannot run")

        definitions = []
        for fn in gpu.functions:
            if not fn.name.startswith("llvm.nvvm."):
                continue
            name = fn.name.removeprefix("llvm.nvvm.")
            ret, params = _function_type(fn)
            # the pointer overloads' suffix (ldmatrix...b16.p3) names the address space only
            body = _intrinsic_body(re.sub(r"\.p\d+$", "", name), ret, params)
            if body is None:
                raise EmulationError(f"the emulator has no model of the intrinsic llvm.nvvm.{name}")
            args = ", ".join(f"{typ} %a{i}" for i, typ in enumerate(params))
            definitions.append(f'define internal {ret} @"emu.{name}"({args}) alwaysinline {{\n  {body}\n}}\n')

        lines = []
        self.static_shared: list[str] = []
        self.dynamic_shared = False
        for line in text.splitlines():
            if line.startswith(("target triple", "target datalayout", "source_filename")):
                continue
            if line.startswith("declare") and "@llvm.nvvm." in line:
                continue
            shared = re.match(r'^(@"?[^"= ]+"?) = (.*)addrspace\(3\) (global|constant) (.*)$', line)
            if shared:
                name, linkage, _, rest = shared.groups()
                if "external" in linkage:
                    # extern __shared__: every such array starts at the dynamic shared memory
                    self.dynamic_shared = True
                    value_type = re.sub(r", align \d+$", "", rest)
                    line = f'{name} = alias {value_type}, ptr @"emu.dynamic_shared"'
                else:
                    # external linkage: the runtime finds it by name, and no optimisation
                    # may assume a call (a barrier) leaves it unchanged
                    linkage = re.sub(r"\b(internal|private|dso_local|hidden)\s+", "", linkage)
                    line = f"{name} = {linkage}global {rest}"
                    self.static_shared.append(name.lstrip("@").strip('"'))
            lines.append(line)
        text = "\n".join(lines)
        text = text.replace("define ptx_kernel ", "define ")
        text = re.sub(r'@"?llvm\.nvvm\.([\w.]+)"?', r'@"emu.\1"', text)
        text = re.sub(r'@"?llvm\.trap"?\(', '@emu_trap(', text)
        text = re.sub(r'declare void @emu_trap\(\).*\n', "", text)
        text = re.sub(r'"target-(cpu|features)"="[^"]*"', "", text)
        # libdevice's __nv_expf, __nv_powf... become the C library's expf, powf...
        _load_host_libraries()
        for nv in sorted(set(re.findall(r'@"?(__nv_\w+)"?(?=\()', text))):
            if llvm.address_of_symbol(nv.removeprefix("__nv_")):
                text = re.sub(rf'@"?{nv}"?(?=\()', f'@"{nv.removeprefix("__nv_")}"', text)
        text = _strip_address_spaces(text)
        # overloaded generic intrinsics name their pointers' address spaces (memcpy.p3.p1):
        # with every pointer in address space 0 they become the p0 overloads, declared once
        text = re.sub(r'@"?llvm\.[\w.]+"?(?=\()', lambda m: re.sub(r"\.p\d+(?=\.|\b)", ".p0", m.group(0)), text)
        declared, kept = set(), []
        for line in text.splitlines():
            callee = re.match(r'declare [^@]*(@"?llvm\.[\w.]+"?)\(', line)
            if callee and callee.group(1) in declared:
                continue
            if callee:
                declared.add(callee.group(1))
            kept.append(line)
        text = "\n".join(kept)
        # the generic intrinsics the definitions use, unless the kernel declares them already
        used = [line for line in _MEMORY_INTRINSICS.strip().splitlines()
                if re.search(r"(@[\w.]+)\(", line).group(1) + "(" not in text]
        extra = [_RUNTIME_DECLARATIONS, "\n".join(used) + "\n", *definitions]
        if self.dynamic_shared:
            extra.append(f'@"emu.dynamic_shared" = global [{DYNAMIC_SHARED_BYTES} x i8] zeroinitializer, align 16\n')
        for name, params in self.kernels.items():
            loads = [f"  %p{i} = getelementptr i8, ptr %args, i64 {8 * i}\n  %a{i} = load {typ}, ptr %p{i}"
                     for i, typ in enumerate(params)]
            call_args = ", ".join(f"{typ} %a{i}" for i, typ in enumerate(params))
            extra.append(f'define void @"emu.entry.{name}"(ptr %args) {{\n' + "\n".join(loads) +
                         f'\n  call void @"{name}"({call_args})\n  ret void\n}}\n')
        self.text = text + "\n" + "\n".join(extra)


def host_ir(gpu_ir: str) -> str:
    """The GPU module's IR, rewritten for the host."""
    return HostModule(gpu_ir).text


class Emulator:
    def __init__(self, gpu_ir: str, max_blocks: int | None = None, max_threads: int | None = None,
                 schedule: str = "ascending", seed: int = 0, shared_fill: int = 0xFF,
                 exit_releases_barriers: bool = False, stack_bytes: int = 256 * 1024):
        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()
        _load_host_libraries()
        self.runtime = _runtime()
        host = HostModule(gpu_ir)
        module = llvm.parse_assembly(host.text)
        tm = llvm.Target.from_default_triple().create_target_machine(opt=2)
        module.triple = llvm.get_process_triple()
        module.data_layout = str(tm.target_data)
        module.verify()
        missing = sorted(fn.name for fn in module.functions if fn.is_declaration
                         and not fn.name.startswith("llvm.") and not llvm.address_of_symbol(fn.name))
        if missing:
            raise EmulationError(f"the kernel IR calls {', '.join(missing)}, which the emulator does not provide")
        pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=2))
        pb.getModulePassManager().run(module, pb)
        self.engine = llvm.create_mcjit_compiler(module, tm)
        self.engine.finalize_object()
        self.module = module
        self.host = host
        self.sregs = self.engine.get_global_value_address("emu.sregs")
        self.shared = []  # (address, bytes) of each static shared array
        for name in host.static_shared:
            gv = module.get_global_variable(name)
            self.shared.append((self.engine.get_global_value_address(name),
                                tm.target_data.get_abi_size(gv.global_value_type)))
        self.dynamic_shared = self.engine.get_global_value_address("emu.dynamic_shared") if host.dynamic_shared else 0
        self.max_blocks = max_blocks
        self.max_threads = max_threads
        self.schedule = schedule
        self.seed = seed
        self.shared_fill = shared_fill
        self.exit_releases_barriers = exit_releases_barriers
        self.stack_bytes = stack_bytes
        self.memory: dict[int, object] = {}
        self.capability = (0, 0)
        self.launches: list[tuple] = []  # (entry, grid, block) as the manifest asked, for tests
        self.runs: list[tuple] = []  # (entry, grid, block) as they ran
        self.counts: list[dict] = []  # per run: what it did (COUNTS), summed over its blocks

    def load(self, ptx: str):
        return None

    def function(self, module, name: str):
        if name not in self.host.kernels:
            raise KeyError(f"no entry '{name}' in the module")
        return name, self.engine.get_function_address(f"emu.entry.{name}")

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

    def copy(self, dst: int, src: int, nbytes: int) -> None:  # device to device
        ctypes.memmove(dst, src, nbytes)

    def run_grid(self, name: str, grid, block) -> tuple[tuple, tuple]:
        """The grid and block a launch runs with, after max_blocks and max_threads."""
        grid = tuple(min(g, self.max_blocks or g) for g in grid)
        if name not in self.host.cooperative:
            block = (min(block[0], self.max_threads or block[0]), *block[1:])
        return grid, tuple(block)

    def launch(self, function, grid, block, shared_bytes: int, args: list) -> None:
        name, address = function
        grid, block = tuple(grid) + (1,) * (3 - len(grid)), tuple(block) + (1,) * (3 - len(block))
        self.launches.append((name, grid, block))
        if not all(g >= 1 for g in grid) or not all(b >= 1 for b in block):
            raise EmulationError(f"kernel '{name}': an empty launch, grid {grid}, block {block}")
        if block[0] * block[1] * block[2] > 1024 or block[2] > 64 or grid[1] > 65535 or grid[2] > 65535:
            raise EmulationError(f"kernel '{name}': a launch the GPU refuses, grid {grid}, block {block}")
        if shared_bytes > DYNAMIC_SHARED_BYTES:
            raise EmulationError(f"kernel '{name}': {shared_bytes} bytes of dynamic shared memory "
                                 f"(at most {DYNAMIC_SHARED_BYTES})")
        if shared_bytes and not self.dynamic_shared:
            raise EmulationError(f"kernel '{name}': {shared_bytes} bytes of dynamic shared memory, "
                                 "but the module has no extern shared array")
        params = self.host.kernels[name]
        if len(args) != len(params):
            raise EmulationError(f"kernel '{name}' takes {len(params)} arguments, the launch passes {len(args)}")
        packed = (ctypes.c_uint64 * max(1, len(args)))()
        for i, (kind, value) in enumerate(args):
            _CTYPES[kind].from_buffer(packed, 8 * i).value = value
        grid, block = self.run_grid(name, grid, block)
        self.runs.append((name, grid, block))
        regions = self.shared + ([(self.dynamic_shared, shared_bytes)] if self.dynamic_shared else [])
        addresses = (ctypes.c_void_p * max(1, len(regions)))(*[a for a, _ in regions])
        sizes = (ctypes.c_uint64 * max(1, len(regions)))(*[n for _, n in regions])
        error = ctypes.create_string_buffer(2048)
        status = self.runtime.emu_launch(
            address, ctypes.addressof(packed), (ctypes.c_int32 * 3)(*grid), (ctypes.c_int32 * 3)(*block),
            self.sregs, addresses, sizes, len(regions), self.shared_fill, SCHEDULES[self.schedule],
            self.seed & (2**64 - 1), int(self.exit_releases_barriers), self.stack_bytes, error, len(error))
        counts = (ctypes.c_uint64 * len(COUNTS))()
        self.runtime.emu_counts(counts)
        self.counts.append(dict(zip(COUNTS, counts)))
        if status != 0:
            message = error.value.decode()
            if "exited" in message and "wait at barrier" in message and not self.exit_releases_barriers:
                message += (" (PTX's exit releases a barrier for the whole block that only exited threads hold "
                            "up; exit_releases_barriers=True follows that)")
            raise EmulationError(f"kernel '{name}' (grid {grid}, block {block}): {message}")

    def synchronize(self) -> None:
        pass
