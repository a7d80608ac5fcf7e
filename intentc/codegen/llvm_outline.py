"""Parallel loops on the CPU: each is outlined into a thread task over blocks of ``grain`` iterations.

The task ``int32_t task(closure, first_block, end_block)`` runs the loop's iterations
``[first_block * grain, min(end_block * grain, count))``; the closure is a struct, on the caller's
stack, of the values the body reads: the variables it reads but does not assign (in name
order), the count and grain, then for each tensor it accesses but does not allocate (in name
order) its data pointer, extents and strides. ``intent_parallel_for`` runs the blocks and
returns the first failing status, which the caller returns.
"""
from __future__ import annotations

from llvmlite import ir

from intentc.codegen.llvm_function import FunctionEmitter
from intentc.codegen.llvm_types import I32, I64
from intentc.lower import program as P


class CpuFunctionEmitter(FunctionEmitter):
    """A function on the CPU: parallel loops become thread tasks."""

    def parallel(self, s: P.Loop) -> None:
        """Outline the loop into a task over blocks of ``grain`` iterations."""
        b = self.builder
        count = self.expr(s.count)
        grain = self.expr(s.grain) if s.grain is not None else ir.Constant(I64, 1)
        captured_vars = sorted(_free_vars(s), key=lambda v: v.name)
        allocated = {a.tensor for a in P.walk_stmts(s.body) if isinstance(a, P.Alloc)}
        tensors = sorted(_tensors_used(s.body) - allocated, key=lambda t: t.name)
        values = [b.load(self.slot(v)) for v in captured_vars]
        values += [count, grain]
        for t in tensors:
            values.append(self.data_ptr(t.name))
            values += [self.field(t.name, kind, axis) for kind in ("shape", "stride") for axis in range(t.rank)]
        closure_type = ir.LiteralStructType([v.type for v in values])
        closure = self.entry_alloca(closure_type, "closure")
        for k, value in enumerate(values):
            b.store(value, b.gep(closure, [ir.Constant(I32, 0), ir.Constant(I32, k)], inbounds=True))
        task = ir.Function(self.mod.module, self.mod.task_type,
                           f"{self.kernel.name}.task{next(self.mod.task_counter)}")
        task.linkage = "internal"
        TaskEmitter(self.mod, task, self.kernel, s, captured_vars, tensors, closure_type).emit()
        nonempty = b.icmp_signed(">", count, ir.Constant(I64, 0))
        with b.if_then(nonempty):
            blocks = b.sdiv(b.sub(b.add(count, grain), ir.Constant(I64, 1)), grain)
            rc = b.call(self.mod.parallel_for, [blocks, task, closure])
            failed = b.icmp_signed("!=", rc, ir.Constant(I32, 0))
            with b.if_then(failed, likely=False):
                self.ret(rc)


class TaskEmitter(CpuFunctionEmitter):
    """``int32_t task(closure, first_block, end_block)`` running one parallel loop's blocks."""

    def __init__(self, mod, func, kernel, loop: P.Loop, captured, tensors, closure_type):
        super().__init__(mod, func, kernel)
        self.outlined = loop
        self.captured = captured
        self.tensors = tensors
        self.closure_type = closure_type

    def emit(self) -> None:
        b = self.builder
        closure, first, last = self.func.args
        fields = iter(range(len(self.closure_type.elements)))

        def take():
            k = next(fields)
            ptr = b.gep(closure, [ir.Constant(I32, 0), ir.Constant(I32, k)], inbounds=True,
                        source_etype=self.closure_type)
            return b.load(ptr, typ=self.closure_type.elements[k])

        for var in self.captured:
            b.store(take(), self.slot(var))
        count, grain = take(), take()
        for t in self.tensors:
            self.data[t.name] = take()
            for kind in ("shape", "stride"):
                for axis in range(t.rank):
                    self.fields[(t.name, kind, axis)] = take()
        begin = b.mul(first, grain, flags=["nsw"])
        end = b.call(self.mod.intrinsic("llvm.smin.i64", I64, [I64, I64]), [b.mul(last, grain, flags=["nsw"]), count])
        self.loop(self.outlined.var, begin, end, self.outlined.body)
        self.finish()


# ---- free-variable analysis for outlining ------------------------------------------------------
def _uses(stmts) -> tuple[set, set, set]:
    """The variables ``stmts`` read, the variables they assign and the tensors they access
    (stores, loads, atomics, fields), nested statements included."""
    reads, writes, tensors = set(), set(), set()
    for s in P.walk_stmts(stmts):
        writes.update(P.stmt_defines(s))
        if isinstance(s, P.Store):
            tensors.add(s.tensor)
        for e in P.stmt_exprs(s):
            for n in P.walk_expr(e):
                if isinstance(n, P.Read):
                    reads.add(n.var)
                elif isinstance(n, (P.Field, P.Load, P.Atomic)):
                    tensors.add(n.tensor)
    return reads, writes, tensors


def _free_vars(loop: P.Loop) -> set:
    reads, writes, _ = _uses(loop.body)
    return reads - writes - {loop.var}


def _tensors_used(stmts) -> set:
    return _uses(stmts)[2]

