"""Physical program -> NVPTX LLVM IR -> PTX, for NVIDIA GPUs (targets ``sm_XX``).

The scalar expression and statement emission is ``emit_llvm.FunctionEmitter``'s, so every
numeric rule of the CPU target holds here too (integer wrap, Python ``//`` and ``%``,
saturating float-to-int casts, NaN-propagating ``minimum``/``maximum``, exact IEEE
pointwise arithmetic: no fast-math, no FMA contraction, no flush-to-zero). What differs:

- one ``.entry`` per kernel (``ptx_kernel`` calling convention) whose parameters are the
  flat ABI of ``gpu_launch.entry_args``; tensor data lives in the global address space;
- ``parallel`` loops run as grid-stride loops over the flattened points of their nest,
  or, in a kernel the planner maps ``serial``, as ordinary loops on one thread;
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
from pathlib import Path

from llvmlite import ir  # opaque pointers: the package's __init__ chooses them

from intentc.codegen.abi import STATUS
from intentc.codegen.gpu_launch import Plan, plan_kernel
from intentc.codegen.llvm_function import FunctionEmitter
from intentc.codegen.llvm_types import I8, I32, I64, PTR, UnsupportedError
from intentc.lower import program as P

GLOBAL = ir.PointerType(addrspace=1)
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

    def device_malloc(self) -> ir.Function:
        """CUDA's device heap (``malloc``/``free`` are system calls the driver provides)."""
        return self.intrinsic("malloc", PTR, [I64])

    def device_free(self) -> ir.Function:
        return self.intrinsic("free", ir.VoidType(), [PTR])

    def emit(self) -> str:
        for kernel in self.program.kernels:
            plan = plan_kernel(kernel)
            emitter = GpuKernelEmitter(self, kernel, plan)
            emitter.emit()
            self.kernels.append((kernel, plan, emitter.checks))
        return str(self.module)


class GpuKernelEmitter(FunctionEmitter):
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
        with b.if_then(b.icmp_signed("!=", b.load(self.status, typ=I32, align=8), ir.Constant(I32, 0)),
                       likely=False):
            b.ret_void()
        if self.plan.mapping == "serial":
            gid, _step = self.thread_index()
            with b.if_then(b.icmp_signed("!=", gid, ir.Constant(I64, 0))):
                b.ret_void()
        for s in self.kernel.body:
            if b.block.is_terminated:
                break
            phase = self.plan.single.get(id(s))
            if phase is None:
                self.stmt(s)
                continue
            # Ordered code with memory effects: thread 0 of its own launch.
            gid, _step = self.thread_index()
            mine = b.and_(b.icmp_signed("==", self.phase, ir.Constant(I32, phase)),
                          b.icmp_signed("==", gid, ir.Constant(I64, 0)))
            with b.if_then(mine):
                self.stmt(s)
        self.finish()

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
        if not isinstance(s, _STATEMENTS):
            raise UnsupportedError(f"the physical statement {type(s).__name__} has no GPU lowering yet")
        super().stmt(s)

    def expr(self, e: P.Expr) -> ir.Value:
        if not isinstance(e, _EXPRESSIONS):
            raise UnsupportedError(f"the physical expression {type(e).__name__} has no GPU lowering yet")
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
        extents = [self.expr(e) for e in s.extents]
        stride = ir.Constant(I64, 1)
        for k in reversed(range(t.rank)):
            b.store(extents[k], shape[k])
            b.store(stride, strides[k])
            stride = b.mul(stride, extents[k])
        if scratch:
            b.store(self.scratch[t.name], slot)
            return
        old = b.load(slot, typ=PTR)
        with b.if_then(b.icmp_unsigned("!=", old, ir.Constant(PTR, None))):
            b.call(self.mod.device_free(), [old])
        nbytes = b.mul(stride, ir.Constant(I64, t.dtype.itemsize))
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
        """Grid-stride over the row-major flattened points of the nest's levels."""
        b = self.builder
        counts = [self.expr(level.loop.count) for level in nest.levels]
        total = counts[0]
        for count in counts[1:]:
            total = b.mul(total, count)
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
        self.stmts(nest.body)
        if not b.block.is_terminated:
            b.store(b.add(point, step), flat)
            b.branch(head)
        b.position_at_end(exit_)

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
