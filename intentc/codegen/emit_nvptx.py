"""Physical program -> NVPTX LLVM IR -> PTX, for NVIDIA GPUs (targets ``sm_XX``).

The scalar expression and statement emission is ``emit_llvm.FunctionEmitter``'s, so every
numeric rule of the CPU target holds here too (integer wrap, Python ``//`` and ``%``,
saturating float-to-int casts, NaN-propagating ``minimum``/``maximum``, exact IEEE
pointwise arithmetic: no fast-math, no FMA contraction, no flush-to-zero). What differs:

- one ``.entry`` per kernel (``ptx_kernel`` calling convention) whose parameters are the
  flat ABI of ``gpu_launch.entry_args``; tensor data lives in the global address space;
- ``parallel`` loops run as grid-stride loops over the flattened points of their nest,
  or, in a kernel the planner maps ``serial``, as ordinary loops on one thread;
- a nest the planner runs one block per point (``blocks``), and ordered code it runs on
  one block (``block``), are block regions (``gpu_blocks.py``): replicated scalar code,
  folds as block-wide trees in shared memory (``addrspace(3)``, ``bar.sync``) finished
  by warp shuffles (``shfl.sync.down``), inner loops spread over the block's threads,
  stores by thread 0, and a barrier wherever one thread reads what another wrote;
- a kernel mapped ``block`` runs on one block (``block_program``): ordered control on
  every thread, parallel loops spread over the threads, a barrier at the head of every
  ordered iteration;
- values that ordered code computes for a later launch go through the ``carried``
  scratch buffer;
- a failed check does not call the runtime: the first failing thread claims the status
  word with an atomic compare-and-swap and records which check failed and its arguments
  (docs/ptx-abi.md, "Status"); every thread that fails returns, and every launch returns
  at once when the status word is already set;
- every math function (``exp``, ``log``, ``tanh``, float ``**`` and float ``%``, the whole
  ``intentc/base/math_catalog.py``) is intentc's own (``mathlib.py``, inlined): the same
  bits as on the CPU targets and in the interpreter, and no CUDA libdevice is needed;
  ``sqrt`` is the correctly rounded ``sqrt.rn``. A call PTX cannot resolve is refused
  (T7), never emitted.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import re
from dataclasses import dataclass
from pathlib import Path

from llvmlite import ir  # opaque pointers: the package's __init__ chooses them

from intentc.codegen import gpu_blocks
from intentc.codegen.gpu_contract_emit import ContractTiles, has_tile_nests, prepare_kernel
from intentc.codegen.abi import STATUS
from intentc.codegen.gpu_launch import Plan, plan_kernel
from intentc.codegen.llvm_function import FunctionEmitter
from intentc.codegen.llvm_types import I8, I32, I64, PTR, UnsupportedError, reg_type
from intentc.lower import program as P

GLOBAL = ir.PointerType(addrspace=1)
SHARED = ir.PointerType(addrspace=3)
SHARED_SLOTS = gpu_blocks.SHARED_SLOTS
FULL_WARP = 0xFFFFFFFF
STATUS_ARGS = 4  # check arguments recorded in the status buffer
LIBDEVICE_ENV = "INTENTC_LIBDEVICE"

_ARG_TYPES = {"ptr": GLOBAL, "f32": ir.FloatType(), "f64": ir.DoubleType()}


def _arg_ir_type(name: str) -> ir.Type:
    return _ARG_TYPES.get(name) or ir.IntType(int(name[1:]))


# ---- libdevice (no longer linked: kept for the tools and tests that look for a CUDA install) -------
def _libdevice_candidates():
    env = os.environ.get(LIBDEVICE_ENV)
    if env:
        yield Path(env)
    roots = [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT")]
    roots.append("/usr/local/cuda")
    for root in roots:
        if root:
            yield Path(root) / "nvvm" / "libdevice" / "libdevice.10.bc"
    spec = importlib.util.find_spec("nvidia")  # pip's nvidia-cuda-nvcc / nvidia-nvvm wheels
    for location in (spec.submodule_search_locations or []) if spec else []:
        yield from sorted(Path(location).glob("*/nvvm/libdevice/libdevice.10.bc"))


@functools.lru_cache(maxsize=None)
def find_libdevice() -> Path | None:
    """CUDA's libdevice bitcode: ``$INTENTC_LIBDEVICE``, then ``$CUDA_HOME`` /
    ``$CUDA_PATH`` / ``/usr/local/cuda`` ``/nvvm/libdevice/libdevice.10.bc``, then the
    ``nvidia`` pip wheels."""
    for path in _libdevice_candidates():
        if path.is_file():
            return path
    return None


# ---- module ------------------------------------------------------------------------------------------
class GpuModuleEmitter:
    def __init__(self, program: P.Program, spec):
        from intentc.codegen.target import target_machine

        self.program = program
        self.spec = spec
        self.module = ir.Module(name=program.module)
        self.module.triple = spec.triple
        self.module.data_layout = str(target_machine(spec).target_data)
        self.intrinsics: dict[tuple, ir.Function] = {}
        self.kernels: list[tuple[P.Kernel, Plan, list[dict]]] = []

    def intrinsic(self, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
        key = (name, str(ret), tuple(str(a) for a in args))
        if key not in self.intrinsics:
            self.intrinsics[key] = ir.Function(self.module, ir.FunctionType(ret, args), name)
        return self.intrinsics[key]

    def shared_buffer(self, kernel: str) -> ir.GlobalVariable:
        """The kernel's block-shared memory: SHARED_SLOTS slots of 8 bytes (2 KiB)."""
        array = ir.ArrayType(I64, SHARED_SLOTS)
        buffer = ir.GlobalVariable(self.module, array, f"{kernel}.shared", addrspace=3)
        buffer.linkage = "internal"
        buffer.initializer = ir.Constant(array, ir.Undefined)
        buffer.align = 8
        buffer.type = SHARED  # an opaque pointer, so that slots are loaded and stored with any type
        return buffer

    def device_malloc(self) -> ir.Function:
        """CUDA's device heap (``malloc``/``free`` are system calls the driver provides)."""
        return self.intrinsic("malloc", PTR, [I64])

    def device_free(self) -> ir.Function:
        return self.intrinsic("free", ir.VoidType(), [PTR])

    def emit(self) -> str:
        for kernel in self.program.kernels:
            kernel = prepare_kernel(kernel)
            plan = plan_kernel(kernel)
            if plan.mapping != "grid" and has_tile_nests(kernel):
                # one thread or one block: the contraction runs as the CPU's loops
                kernel = prepare_kernel(kernel, keep_top_level=False)
                plan = plan_kernel(kernel)
            emitter = GpuKernelEmitter(self, kernel, plan)
            emitter.emit()
            self.kernels.append((kernel, plan, emitter.checks))
        return str(self.module)


class GpuKernelEmitter(ContractTiles, FunctionEmitter):
    """One ``.entry``: replayed uniform code, grid-stride parallel nests, status reports."""

    # A2: the atomic objects of one kernel invocation are shared by the whole grid on one
    # device, so atomics synchronise at device (PTX .gpu) scope (codegen/atomics.py).
    atomic_scope = 'syncscope("device") '

    def __init__(self, mod: GpuModuleEmitter, kernel: P.Kernel, plan: Plan):
        func = ir.Function(mod.module, ir.FunctionType(ir.VoidType(), [_arg_ir_type(a.type) for a in plan.args]),
                           kernel.name)
        func.calling_convention = "ptx_kernel"
        threads = max(launch.block[0] for launch in plan.launches)
        mod.module.add_named_metadata("nvvm.annotations", mod.module.add_metadata(
            [func, ir.MetaDataString(mod.module, "maxntidx"), ir.Constant(I32, threads)]))
        super().__init__(mod, func, kernel)
        self.plan = plan
        self.checks: list[dict] = []
        self.status = None
        self.phase = None
        self.malloced: set[str] = set()  # buffers from the device heap
        cooperative = plan.mapping == "block" or any(launch.kind in ("blocks", "block", "tiles")
                                                     for launch in plan.launches)
        self.shared = mod.shared_buffer(kernel.name) if cooperative else None
        self.hazards = _Hazards()

    def emit(self) -> None:
        b = self.builder
        args = dict(zip((a.name for a in self.plan.args), self.func.args))
        tensors = {p.name: p for p in self.kernel.params if isinstance(p, P.TensorSym)}
        for arg, info in zip(self.func.args, self.plan.args):
            arg.name = info.name.replace(".", "_")
            if info.role == "data":  # the ABI requires element-aligned data pointers
                arg.attributes.align = tensors[info.param].dtype.itemsize
        for param in self.kernel.params:
            if isinstance(param, P.TensorSym):
                self.data[param.name] = args[f"{param.name}.data"]
                for axis in range(param.rank):
                    self.fields[(param.name, "shape", axis)] = args[f"{param.name}.shape{axis}"]
                    self.fields[(param.name, "stride", axis)] = args[f"{param.name}.stride{axis}"]
                continue
            value = args[param.name]
            if param.dtype.is_bool:
                value = b.icmp_unsigned("!=", value, ir.Constant(I8, 0))
            elif param.dtype.name == "f16":
                value = b.bitcast(value, ir.HalfType())
            b.store(value, self.slot(param))
        self.status = args["status"]
        self.phase = args.get("phase")
        self.scratch = {s.tensor.name: args[s.arg] for s in self.plan.scratch}
        # A launch after a failure does nothing (the first failure is what the host reads).
        # With barriers ahead, the whole block decides together (thread 0 reads the word).
        if self.shared is not None:
            flag = self.shared_slot(ir.Constant(I64, SHARED_SLOTS - 1), I32)
            with b.if_then(b.icmp_signed("==", self.sreg("tid.x"), ir.Constant(I64, 0))):
                b.store(b.load(self.status, typ=I32, align=8), flag)
            self.barrier()
            failed = b.icmp_signed("!=", b.load(flag, typ=I32), ir.Constant(I32, 0))
        else:
            failed = b.icmp_signed("!=", b.load(self.status, typ=I32, align=8), ir.Constant(I32, 0))
        with b.if_then(failed, likely=False):
            b.ret_void()
        if self.plan.mapping == "serial":
            gid, _step = self.thread_index()
            with b.if_then(b.icmp_signed("!=", gid, ir.Constant(I64, 0))):
                b.ret_void()
        if self.plan.mapping == "block":  # the whole kernel on block 0
            with b.if_then(b.icmp_signed("!=", self.sreg("ctaid.x"), ir.Constant(I64, 0))):
                b.ret_void()
            self.hazards = _Hazards()
            self.block_program(self.kernel.body)
            self.finish()
            return
        carried = self.plan.carried or {}
        owner = {}  # carried Var -> the phase whose code computes it
        for s in self.kernel.body:
            for x in P.walk_stmts((s,)):
                if isinstance(x, (P.Assign, P.Loop)) and x.var in carried and id(s) in self.plan.single:
                    owner[x.var] = self.plan.single[id(s)]
        regions = self.plan.single_regions or {}
        for s in self.kernel.body:
            if b.block.is_terminated:
                break
            phase = self.plan.single.get(id(s))
            # A value computed by an earlier launch: from the carried-values buffer.
            for var in sorted(_reads_of((s,)) & set(carried), key=lambda v: v.name):
                if owner.get(var) != phase:
                    b.store(b.load(self.carry_slot(var), typ=reg_type(var.dtype)), self.slot(var))
            if phase is None:
                self.stmt(s)
                continue
            region = regions.get(phase)
            # Ordered code with memory effects: thread 0 of its own launch, or its whole block.
            if region is not None:
                who = b.icmp_signed("==", self.sreg("ctaid.x"), ir.Constant(I64, 0))
            else:
                gid, _step = self.thread_index()
                who = b.icmp_signed("==", gid, ir.Constant(I64, 0))
            mine = who if self.phase is None else b.and_(
                b.icmp_signed("==", self.phase, ir.Constant(I32, phase)), who)
            with b.if_then(mine):
                if region is not None:
                    self.region_stmt(region, s)
                else:
                    self.stmt(s)
                stores = sorted({x.var for x in P.walk_stmts((s,)) if isinstance(x, (P.Assign, P.Loop))}
                                & set(carried), key=lambda v: v.name)
                if stores and not b.block.is_terminated:
                    first = b.icmp_signed("==", self.sreg("tid.x"), ir.Constant(I64, 0))
                    with b.if_then(first):
                        for var in stores:
                            b.store(b.load(self.slot(var)), self.carry_slot(var))
        self.finish()

    def carry_slot(self, var: P.Var) -> ir.Value:
        base = self.scratch[self.plan.carry_tensor.name]
        return self.builder.gep(base, [ir.Constant(I64, 8 * self.plan.carried[var])], source_etype=I8)

    def finish(self) -> None:
        if not self.builder.block.is_terminated:
            self.ret(None)
        self.allocas.branch(self.func.blocks[1])

    def ret(self, code) -> None:
        """Leave the entry, freeing this thread's heap buffers (a failure was reported through
        the status word already)."""
        b = self.builder
        for name in sorted(self.malloced):
            pointer = b.load(self.heap[name][0], typ=PTR)
            with b.if_then(b.icmp_unsigned("!=", pointer, ir.Constant(PTR, None))):
                b.call(self.mod.device_free(), [pointer])
        b.ret_void()

    def stmt(self, s: P.Stmt) -> None:
        if isinstance(s, P.TileNest) and self.plan.tiles and id(s) in self.plan.tiles:
            self.contract_tiles(s)
            return
        if not isinstance(s, _STATEMENTS):
            raise UnsupportedError(f"the physical statement {type(s).__name__} has no GPU lowering yet")
        super().stmt(s)

    def expr(self, e: P.Expr) -> ir.Value:
        if not isinstance(e, _EXPRESSIONS):
            raise UnsupportedError(f"the physical expression {type(e).__name__} has no GPU lowering yet")
        if isinstance(e, P.Field) and e.kind == "present":
            raise UnsupportedError(f"the optional parameter '{e.tensor.name}' (T | None) has no GPU lowering yet; "
                                   "make it required, or build for a CPU target")
        return super().expr(e)

    def alloc(self, s: P.Alloc) -> None:
        """A buffer is scratch memory the host provides when the plan says so (allocated once
        at the top level, with a size the host computes); otherwise it comes from the device
        heap, like ``intent_alloc`` on the CPU: a buffer allocated again (in a loop) replaces
        the previous one, and every one is freed when the thread leaves the entry."""
        b = self.builder
        t = s.tensor
        scratch = t.name in self.scratch
        if t.name not in self.heap:
            slot = self.entry_alloca(GLOBAL if scratch else PTR, f"{t.name}.data")
            if not scratch:
                self.allocas.store(ir.Constant(PTR, None), slot)
                self.malloced.add(t.name)
            shape = [self.entry_alloca(I64, f"{t.name}.shape{k}") for k in range(t.rank)]
            strides = [self.entry_alloca(I64, f"{t.name}.stride{k}") for k in range(t.rank)]
            self.heap[t.name] = (slot, shape, strides)
        slot, shape, strides = self.heap[t.name]
        size, overflow = self.buffer_layout(s, shape, strides)  # as on the CPU
        if scratch:
            b.store(self.scratch[t.name], slot)
            return
        with b.if_then(overflow, likely=False):
            check = {"status": "INTENT_E_SHAPE", "code": STATUS["INTENT_E_SHAPE"], "nargs": 0,
                     "message": f"{self.kernel.name}: the buffer '{t.name}' has more bytes than 64 bits can count"}
            if check not in self.checks:
                self.checks.append(check)
            self.report(check["code"], self.checks.index(check), [])
            self.ret(None)
        old = b.load(slot, typ=PTR)
        with b.if_then(b.icmp_unsigned("!=", old, ir.Constant(PTR, None))):
            b.call(self.mod.device_free(), [old])
        nbytes = b.extract_value(size, 0)
        pointer = b.call(self.mod.device_malloc(), [b.select(b.icmp_signed(">", nbytes, ir.Constant(I64, 0)),
                                                             nbytes, ir.Constant(I64, 1))])
        b.store(pointer, slot)
        with b.if_then(b.icmp_unsigned("==", pointer, ir.Constant(PTR, None)), likely=False):
            check = {"status": "INTENT_E_ALLOC", "code": STATUS["INTENT_E_ALLOC"], "nargs": 1,
                     "message": f"{self.kernel.name}: out of GPU heap memory: could not allocate %lld bytes "
                                f"for a buffer (raise the CUDA limit CU_LIMIT_MALLOC_HEAP_SIZE)"}
            if check not in self.checks:
                self.checks.append(check)
            self.report(check["code"], self.checks.index(check), [nbytes])
            self.ret(None)

    def data_ptr(self, name: str) -> ir.Value:
        if name in self.heap:
            return self.builder.load(self.heap[name][0], typ=GLOBAL if name in self.scratch else PTR)
        return self.data[name]

    # -- threads ----------------------------------------------------------------------------------
    def sreg(self, name: str) -> ir.Value:
        reg = self.builder.call(self.mod.intrinsic(f"llvm.nvvm.read.ptx.sreg.{name}", I32, []), [])
        return self.builder.zext(reg, I64)

    def thread_index(self) -> tuple[ir.Value, ir.Value]:
        """(global thread index, number of threads in the grid) along x, as i64."""
        b = self.builder
        ntid = self.sreg("ntid.x")
        gid = b.add(b.mul(self.sreg("ctaid.x"), ntid), self.sreg("tid.x"))
        return gid, b.mul(self.sreg("nctaid.x"), ntid)

    def parallel(self, s: P.Loop) -> None:
        nest = self.plan.nest(s)
        if nest is None:  # serial mapping: the loop runs in order on this thread
            self.loop(s.var, ir.Constant(I64, 0), self.expr(s.count), s.body)
            return
        if self.phase is None:
            self.grid_nest(nest)
            return
        b = self.builder
        with b.if_then(b.icmp_signed("==", self.phase, ir.Constant(I32, nest.phase))):
            self.grid_nest(nest)

    def grid_nest(self, nest) -> None:
        """Grid-stride over the row-major flattened points of the nest's levels (one thread
        per point), or block-stride (one block per point) when the nest has a block region."""
        b = self.builder
        counts = [self.expr(level.loop.count) for level in nest.levels]
        total = counts[0]
        for count in counts[1:]:
            total = b.mul(total, count)
        if nest.region is not None:
            gid, step = self.sreg("ctaid.x"), self.sreg("nctaid.x")
        else:
            gid, step = self.thread_index()
        flat = self.entry_alloca(I64, "flat")
        b.store(gid, flat)
        head = self.func.append_basic_block("grid.head")
        body = self.func.append_basic_block("grid.body")
        exit_ = self.func.append_basic_block("grid.exit")
        b.branch(head)
        b.position_at_end(head)
        point = b.load(flat)
        b.cbranch(b.icmp_signed("<", point, total), body, exit_)
        b.position_at_end(body)
        ordinals = [None] * len(counts)
        rest = point
        for k in range(len(counts) - 1, 0, -1):  # all counts are positive here: point < total
            ordinals[k] = b.urem(rest, counts[k])
            rest = b.udiv(rest, counts[k])
        ordinals[0] = rest
        for ordinal, level in zip(ordinals, nest.levels):
            b.store(ordinal, self.slot(level.loop.var))
            self.stmts(level.prefix)
        if nest.region is not None:
            self.hazards = _Hazards()
            for s in nest.body:
                if b.block.is_terminated:
                    break
                self.region_stmt(nest.region, s)
            if not b.block.is_terminated:
                # The next point reuses shared memory and may read what this one's threads wrote.
                self.barrier()
        else:
            self.stmts(nest.body)
        if not b.block.is_terminated:
            b.store(b.add(point, step), flat)
            b.branch(head)
        b.position_at_end(exit_)

    # -- block regions ---------------------------------------------------------------------------
    def barrier(self) -> None:
        """``bar.sync 0``: every thread of the block arrives; memory written before it is
        visible to the block's threads after it."""
        self.builder.call(self.mod.intrinsic("llvm.nvvm.barrier0", ir.VoidType(), []), [])
        self.hazards = _Hazards()

    def shared_slot(self, index: ir.Value, type_: ir.Type) -> ir.Value:
        b = self.builder
        return b.gep(self.shared, [b.mul(index, ir.Constant(I64, 8))], source_etype=I8)

    def region_stmt(self, region, s: P.Stmt) -> None:
        """One statement of a block region (every thread of the block runs this)."""
        b = self.builder
        kind = region.kinds[[id(x) for x in region.stmts].index(id(s))]
        reads, writes = gpu_blocks.loaded((s,)), gpu_blocks.written((s,))
        if reads & self.hazards.written or writes & (self.hazards.loaded | self.hazards.written):
            self.barrier()
        if kind == gpu_blocks.FOLD:
            self.block_fold(region.folds[id(s)])
            return
        if kind == gpu_blocks.STORE:
            with b.if_then(b.icmp_signed("==", self.sreg("tid.x"), ir.Constant(I64, 0))):
                self.stmt(s)
        elif kind == gpu_blocks.SPREAD:
            self.strided_loop(s.var, self.sreg("tid.x"), self.expr(s.count), self.sreg("ntid.x"), s.body)
        else:
            self.stmt(s)
        self.hazards = _Hazards(self.hazards.loaded | reads, self.hazards.written | writes)

    def block_program(self, stmts) -> None:
        """Statements of a kernel that runs on one block (the ``block`` mapping): ordered
        control on every thread (its values are the same on all: every read of memory
        another thread wrote comes after a barrier), parallel loops spread over the
        threads, reductions cooperative, other stores by thread 0."""
        b = self.builder
        tid = self.sreg("tid.x")
        for s in stmts:
            if b.block.is_terminated:
                return
            reads, writes = gpu_blocks.loaded((s,)), gpu_blocks.written((s,))
            fold = gpu_blocks.match_fold(s)
            if fold is not None:
                if reads & self.hazards.written:
                    self.barrier()
                self.block_fold(fold)
            elif isinstance(s, P.Loop) and s.kind in ("parallel", "point"):
                if reads & self.hazards.written or writes & (self.hazards.loaded | self.hazards.written):
                    self.barrier()
                self.strided_loop(s.var, tid, self.expr(s.count), self.sreg("ntid.x"), s.body)
                self.hazards = _Hazards(self.hazards.loaded | reads, self.hazards.written | writes)
            elif not any(isinstance(x, P.Store) or (isinstance(x, P.Loop) and x.kind in ("parallel", "point"))
                         for x in P.walk_stmts((s,))):
                if reads & self.hazards.written:
                    self.barrier()
                self.stmt(s)  # replicated: no effect but checks
                self.hazards = _Hazards(self.hazards.loaded | reads, self.hazards.written)
            elif isinstance(s, P.Store):
                if reads & self.hazards.written or writes & (self.hazards.loaded | self.hazards.written):
                    self.barrier()
                with b.if_then(b.icmp_signed("==", tid, ir.Constant(I64, 0))):
                    self.stmt(s)
                self.hazards = _Hazards(self.hazards.loaded | reads, self.hazards.written | writes)
            elif isinstance(s, P.If):
                if reads & self.hazards.written:
                    self.barrier()
                before = self.hazards
                with b.if_else(self.expr(s.cond)) as (then, orelse):
                    with then:
                        self.hazards = before
                        self.block_program(s.then)
                        after_then = self.hazards
                    with orelse:
                        self.hazards = before
                        self.block_program(s.orelse)
                        after_else = self.hazards
                self.hazards = _Hazards(after_then.loaded | after_else.loaded, after_then.written | after_else.written)
            elif isinstance(s, P.Loop):
                self.block_loop(s.var, self.expr(s.count), None, s.body)
            else:  # While
                self.block_loop(None, None, s, s.body)

    def block_loop(self, var, count, while_stmt, body) -> None:
        """An ordered loop of a block program: a barrier at the head of every iteration, so
        each starts with every thread's earlier writes visible."""
        b = self.builder
        if var is not None:
            b.store(ir.Constant(I64, 0), self.slot(var))
        head = self.func.append_basic_block("block.head")
        loop_body = self.func.append_basic_block("block.body")
        exit_ = self.func.append_basic_block("block.exit")
        b.branch(head)
        b.position_at_end(head)
        self.barrier()
        if var is not None:
            b.cbranch(b.icmp_signed("<", b.load(self.slot(var)), count), loop_body, exit_)
        else:
            self.block_program(while_stmt.cond_body)
            b.cbranch(self.expr(while_stmt.cond), loop_body, exit_)
        b.position_at_end(loop_body)
        self.block_program(body)
        if not b.block.is_terminated:
            if var is not None:
                b.store(b.add(b.load(self.slot(var)), ir.Constant(I64, 1)), self.slot(var))
            b.branch(head)
        b.position_at_end(exit_)
        self.hazards = _Hazards()  # the head's barrier is the last thing every exit passed

    def strided_loop(self, var: P.Var, begin: ir.Value, end: ir.Value, step: ir.Value, body) -> None:
        """``for var = begin; var < end; var += step`` (statements or a callback as body)."""
        b = self.builder
        slot = self.slot(var) if isinstance(var, P.Var) else var
        b.store(begin, slot)
        head = self.func.append_basic_block("stride.head")
        loop_body = self.func.append_basic_block("stride.body")
        exit_ = self.func.append_basic_block("stride.exit")
        b.branch(head)
        b.position_at_end(head)
        b.cbranch(b.icmp_signed("<", b.load(slot, typ=I64), end), loop_body, exit_)
        b.position_at_end(loop_body)
        if callable(body):
            body(b.load(slot, typ=I64))
        else:
            self.stmts(body)
        if not b.block.is_terminated:
            b.store(b.add(b.load(slot, typ=I64), step), slot)
            b.branch(head)
        b.position_at_end(exit_)

    def combine(self, fold, a: ir.Value, c: ir.Value) -> ir.Value:
        """``op(a, c)`` in the fold's dtype, by the target's scalar arithmetic (no regrouping flags)."""
        b = self.builder
        left, right = P.Var(f"{fold.acc.name}.lhs", fold.acc.dtype), P.Var(f"{fold.acc.name}.rhs", fold.acc.dtype)
        b.store(a, self.slot(left))
        b.store(c, self.slot(right))
        return self.expr(P.Binary(fold.acc.dtype, fold.op, P.read(left), P.read(right)))

    def shuffle_down(self, value: ir.Value, offset: int) -> ir.Value:
        """The value of the lane ``offset`` above (``shfl.sync.down`` on 32-bit pieces)."""
        b = self.builder
        shfl = self.mod.intrinsic("llvm.nvvm.shfl.sync.down.i32", I32, [I32, I32, I32, I32])
        width = value.type.width if isinstance(value.type, ir.IntType) else {
            "half": 16, "float": 32, "double": 64}[str(value.type)]
        bits = value if isinstance(value.type, ir.IntType) else b.bitcast(value, ir.IntType(width))
        args = lambda piece: [ir.Constant(I32, FULL_WARP), piece, ir.Constant(I32, offset), ir.Constant(I32, 31)]
        if width <= 32:
            out = b.call(shfl, args(b.zext(bits, I32) if width < 32 else bits))
            out = b.trunc(out, ir.IntType(width)) if width < 32 else out
        else:
            low = b.call(shfl, args(b.trunc(bits, I32)))
            high = b.call(shfl, args(b.trunc(b.lshr(bits, ir.Constant(I64, 32)), I32)))
            out = b.or_(b.zext(low, I64), b.shl(b.zext(high, I64), ir.Constant(I64, 32)))
        return out if isinstance(value.type, ir.IntType) else b.bitcast(out, value.type)

    def block_fold(self, fold) -> None:
        """The fold as a block-wide reduction with a fixed order (gpu_blocks.py): 256 virtual
        lanes, each folding a strided subsequence in order, then a fixed tree."""
        b = self.builder
        lanes = gpu_blocks.LANES
        dtype = fold.acc.dtype
        ty = reg_type(dtype)
        tid, ntid = self.sreg("tid.x"), self.sreg("ntid.x")
        before = b.load(self.slot(fold.acc), typ=ty)
        count = self.expr(fold.loop.count)
        # Each lane's partial in element order (the update without regrouping flags).
        body = list(fold.loop.body)
        update = body[-2]
        body[-2] = P.Assign(update.var, P.Binary(update.value.dtype, update.value.op, update.value.a, update.value.b))
        lane = self.entry_alloca(I64, f"{fold.acc.name}.lane")
        identity = self.expr(gpu_blocks.identity(fold.op, dtype))

        def partial(index):
            b.store(identity, self.slot(fold.acc))
            self.strided_loop(fold.loop.var, index, count, ir.Constant(I64, lanes), body)
            b.store(b.load(self.slot(fold.acc), typ=ty), self.shared_slot(index, ty))

        self.strided_loop(lane, tid, ir.Constant(I64, lanes), ntid, partial)
        self.barrier()

        def tree_step(half):
            def step(index):
                mine = self.shared_slot(index, ty)
                other = self.shared_slot(b.add(index, ir.Constant(I64, half)), ty)
                b.store(self.combine(fold, b.load(mine, typ=ty), b.load(other, typ=ty)), mine)
            self.strided_loop(lane, tid, ir.Constant(I64, half), ntid, step)
            self.barrier()

        half = lanes // 2
        while half >= gpu_blocks.WARP:
            tree_step(half)
            half //= 2
        result = self.shared_slot(ir.Constant(I64, lanes), ty)
        first = b.icmp_signed("==", tid, ir.Constant(I64, 0))
        with b.if_else(b.icmp_signed(">=", ntid, ir.Constant(I64, gpu_blocks.WARP))) as (warp, narrow):
            with warp:  # warp 0 holds lanes 0..31: the last five steps by shuffles
                with b.if_then(b.icmp_signed("<", tid, ir.Constant(I64, gpu_blocks.WARP))):
                    value = b.load(self.shared_slot(tid, ty), typ=ty)
                    offset = gpu_blocks.WARP // 2
                    while offset >= 1:
                        value = self.combine(fold, value, self.shuffle_down(value, offset))
                        offset //= 2
                    with b.if_then(first):
                        b.store(self.combine(fold, before, value), result)
            with narrow:  # fewer threads than a warp: the same steps in shared memory
                step = gpu_blocks.WARP // 2
                while step >= 1:
                    tree_step(step)
                    step //= 2
                with b.if_then(first):
                    b.store(self.combine(fold, before, b.load(self.shared_slot(ir.Constant(I64, 0), ty), typ=ty)),
                            result)
        self.barrier()
        b.store(b.load(result, typ=ty), self.slot(fold.acc))

    # -- checks ------------------------------------------------------------------------------------
    def check_id(self, s: P.Check) -> int:
        entry = {"status": s.code, "code": STATUS[s.code], "message": s.message,
                 "nargs": min(len(s.args), STATUS_ARGS)}
        if entry not in self.checks:
            self.checks.append(entry)
        return self.checks.index(entry)

    def check(self, s: P.Check) -> None:
        b = self.builder
        ok = self.expr(s.cond)
        fail = self.func.append_basic_block("check.fail")
        cont = self.func.append_basic_block("check.ok")
        b.cbranch(ok, cont, fail)
        b.position_at_end(fail)
        args = []
        for e in s.args[:STATUS_ARGS]:
            value = self.expr(e)
            if isinstance(value.type, ir.IntType) and value.type.width < 64:
                value = b.zext(value, I64) if e.dtype.kind in ("uint", "bool") else b.sext(value, I64)
            elif not isinstance(value.type, ir.IntType):
                value = b.bitcast(b.fpext(value, ir.DoubleType()) if not isinstance(value.type, ir.DoubleType)
                                  else value, I64)
            args.append(value)
        self.report(STATUS[s.code], self.check_id(s), args)
        self.ret(None)
        b.position_at_end(cont)

    def report(self, code: int, check: int, args: list) -> None:
        b = self.builder
        claimed = b.cmpxchg(self.status, ir.Constant(I32, 0), ir.Constant(I32, code), "monotonic", "monotonic")
        with b.if_then(b.extract_value(claimed, 1)):
            b.store(ir.Constant(I32, check), b.gep(self.status, [ir.Constant(I64, 4)], source_etype=I8), align=4)
            for k, value in enumerate(args):
                b.store(value, b.gep(self.status, [ir.Constant(I64, 8 + 8 * k)], source_etype=I8), align=8)


@dataclass(frozen=True)
class _Hazards:
    """Tensors this thread loaded and the block wrote since the last barrier."""

    loaded: frozenset = frozenset()
    written: frozenset = frozenset()


def _reads_of(stmts) -> set:
    return {n.var for x in P.walk_stmts(stmts) for e in P.stmt_exprs(x) for n in P.walk_expr(e)
            if isinstance(n, P.Read)}


_STATEMENTS = tuple(getattr(P, n) for n in ("Assign", "Store", "Fence", "If", "Loop", "While", "Check", "Alloc")
                    if hasattr(P, n))
_EXPRESSIONS = tuple(getattr(P, n) for n in ("Const", "Read", "Binary", "Unary", "Compare", "Select", "Cast",
                                             "Field", "Load", "MulAdd", "Splat", "Pack", "Lane", "Shuffle",
                                             "Atomic") if hasattr(P, n))


# ---- module-level entry points --------------------------------------------------------------------
def emit_gpu_module(program: P.Program, spec, base_manifest: dict) -> tuple[str, dict]:
    """LLVM IR text of the program for ``spec`` and its PTX manifest (without the PTX's
    file name and digest, which ``write_ptx`` adds)."""
    from intentc.codegen.ptx_manifest import ptx_manifest

    emitter = GpuModuleEmitter(program, spec)
    text = emitter.emit()
    return text, ptx_manifest(base_manifest, emitter.kernels, spec)


def optimize_gpu(llvm_ir: str, spec):
    """Parse and verify the IR and optimise it at -O3."""
    import llvmlite.binding as llvm

    from intentc.codegen.target import target_machine

    tm = target_machine(spec)
    module = llvm.parse_assembly(llvm_ir)
    module.verify()
    module.triple = spec.triple
    module.data_layout = str(tm.target_data)
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = False  # no vector lanes within a thread on this target
    pto.slp_vectorization = False
    pto.loop_unrolling = True
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(module, pb)
    module.verify()
    return module


DEVICE_RUNTIME = {"malloc", "free"}  # provided by the CUDA driver to every module
_EXTERN = re.compile(r"^\.extern\s+\.func\s*(?:\([^)]*\))?\s*([A-Za-z_$][\w$]*)", re.MULTILINE)


def ptx_assembly(optimized, spec) -> str:
    """The PTX text; refuses (T7) a module that still calls a function PTX cannot resolve."""
    from intentc.codegen.optimize import emit_assembly

    ptx = emit_assembly(optimized, spec)
    missing = sorted(set(_EXTERN.findall(ptx)) - DEVICE_RUNTIME)
    if missing:
        raise UnsupportedError(f"the generated code calls {', '.join(missing)}, which has no implementation "
                               f"on this target")
    return ptx


def write_ptx(compiled, output: Path) -> list[Path]:
    """Write ``output`` (the PTX) and ``output + '.json'`` (its manifest)."""
    import hashlib

    from intentc.codegen.ptx_manifest import manifest_text

    ptx = ptx_assembly(compiled.optimized, compiled.spec)
    manifest = dict(compiled.manifest)
    manifest["ptx"] = output.name
    manifest["ptx_sha256"] = hashlib.sha256(ptx.encode("utf-8")).hexdigest()
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(ptx, encoding="utf-8")
    json_path = output.with_name(output.name + ".json")
    json_path.write_text(manifest_text(manifest), encoding="utf-8")
    return [output, json_path]
