"""Physical program -> LLVM IR text (llvmlite.ir): the module and its exported entries.

One entry function per kernel (``int32_t name(params...)``) that validates every tensor
argument through the runtime before anything runs, then executes the body. The body's
statements and expressions are ``llvm_stmts``/``llvm_exprs``/``llvm_arith``'s, parallel loops
become thread tasks (``llvm_outline``). An ``--sanitize=order`` build wraps two bodies (points
in increasing and decreasing order) in an entry that compares what they wrote.
"""
from __future__ import annotations

import itertools
import json

from llvmlite import ir

from intentc.codegen.abi import STATUS
from intentc.codegen.llvm_outline import CpuFunctionEmitter
from intentc.codegen.llvm_types import I8, I32, I64, PTR, UnsupportedError, arg_type
from intentc.lower import program as P

# UnsupportedError is the driver's to report, from here as before the split.
__all__ = ["ModuleEmitter", "KernelEmitter", "UnsupportedError", "emit_module"]


class ModuleEmitter:
    """One LLVM module: the runtime's declarations, string constants, intrinsics, and an entry
    (or an order-checking pair of bodies) per kernel."""

    def __init__(self, program: P.Program, triple: str):
        self.program = program
        self.module = ir.Module(name=program.module)
        self.module.triple = triple
        self.strings: dict[str, ir.GlobalVariable] = {}
        self.task_counter = itertools.count()
        m = self.module
        self.intent_error = ir.Function(m, ir.FunctionType(I32, [I32, PTR], var_arg=True), "intent_error")
        self.check_tensor = ir.Function(
            m, ir.FunctionType(I32, [PTR, PTR, PTR, I32, I8, I8, I32, PTR, PTR, PTR]), "intent_check_tensor")
        self.task_type = ir.FunctionType(I32, [PTR, I64, I64])
        self.parallel_for = ir.Function(m, ir.FunctionType(I32, [I64, PTR, PTR]), "intent_parallel_for")
        self.intent_alloc = ir.Function(m, ir.FunctionType(PTR, [I64]), "intent_alloc")
        self.intent_free = ir.Function(m, ir.FunctionType(ir.VoidType(), [PTR]), "intent_free")
        self.intrinsics: dict[tuple, ir.Function] = {}
        self.abi: dict[str, dict] = {}  # kernel name -> its manifest entry (extent expressions)

    def cstring(self, text: str) -> ir.GlobalVariable:
        if text not in self.strings:
            data = bytearray(text.encode("utf-8")) + b"\0"
            const = ir.Constant(ir.ArrayType(I8, len(data)), data)
            var = ir.GlobalVariable(self.module, const.type, name=f".str.{len(self.strings)}")
            var.global_constant = True
            var.linkage = "private"
            var.unnamed_addr = True
            var.initializer = const
            self.strings[text] = var
        return self.strings[text]

    def intrinsic(self, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
        key = (name, str(ret), tuple(str(a) for a in args))
        if key not in self.intrinsics:
            self.intrinsics[key] = ir.Function(self.module, ir.FunctionType(ret, args), name)
        return self.intrinsics[key]

    def emit(self, order_check: tuple[P.Program, P.Program] | None = None, restore: str | None = None) -> str:
        if order_check is None:
            for kernel in self.program.kernels:
                if restore is None:
                    KernelEmitter(self, kernel).emit()
                    continue
                body = KernelEmitter(self, kernel, f"{kernel.name}.body")
                body.emit()
                self.order_wrapper(kernel, body.func, None, restore)
        else:
            for increasing, decreasing in zip(*(p.kernels for p in order_check)):
                first = KernelEmitter(self, increasing, f"{increasing.name}.increasing")
                first.emit()
                second = KernelEmitter(self, decreasing, f"{decreasing.name}.decreasing")
                second.emit()
                self.order_wrapper(increasing, first.func, second.func, restore)
        return str(self.module)

    def order_wrapper(self, kernel: P.Kernel, increasing: ir.Function, decreasing: ir.Function | None,
                      restore_failed: str | None = None) -> None:
        """The exported entry of an --sanitize=order build: run the body with points in
        increasing, then (from the same inputs) decreasing order, and compare what was written;
        a difference leaves the written tensors as they were. Without ``decreasing``: run the
        body once. ``restore_failed`` (the name of a sanitizer, e.g. laws): a call whose body
        fails with INTENT_E_SANITIZER also leaves them as they were."""
        sanitizer = "order" if decreasing is not None else restore_failed
        m = self.module
        snapshot = self.intrinsic("intent_snapshot", PTR, [I32, PTR])
        restore = ir.Function(m, ir.FunctionType(ir.VoidType(), [PTR, I32, PTR]), "intent_snapshot_restore") \
            if "intent_snapshot_restore" not in m.globals else m.globals["intent_snapshot_restore"]
        compare = self.intrinsic("intent_snapshot_compare", I32, [PTR, I32, PTR, PTR, PTR])
        free = ir.Function(m, ir.FunctionType(ir.VoidType(), [PTR]), "intent_snapshot_free") \
            if "intent_snapshot_free" not in m.globals else m.globals["intent_snapshot_free"]
        func = ir.Function(m, increasing.function_type, kernel.name)
        b = ir.IRBuilder(func.append_basic_block("entry"))
        scalar_results = P.scalar_results(kernel)  # written by the body on success, not snapshotted
        written = [(p, a) for p, a in zip(kernel.params, func.args)
                   if isinstance(p, P.TensorSym) and p.writable and p.name not in scalar_results]
        n = ir.Constant(I32, len(written))
        tensors = b.alloca(ir.ArrayType(PTR, max(1, len(written))))
        names = b.alloca(ir.ArrayType(PTR, max(1, len(written))))
        for k, (param, arg) in enumerate(written):
            index = [ir.Constant(I32, 0), ir.Constant(I32, k)]
            b.store(arg, b.gep(tensors, index, inbounds=True))
            b.store(self.cstring(param.name), b.gep(names, index, inbounds=True))
        before = b.call(snapshot, [n, tensors])
        with b.if_then(b.icmp_unsigned("==", before, ir.Constant(PTR, None)), likely=False):
            b.ret(b.call(self.intent_error, [ir.Constant(I32, STATUS["INTENT_E_ALLOC"]),
                                             self.cstring(f"{kernel.name}: out of memory for the {sanitizer} "
                                                          f"sanitizer")]))
        rc = b.call(increasing, list(func.args))
        with b.if_then(b.icmp_signed("!=", rc, ir.Constant(I32, 0)), likely=False):
            if restore_failed:  # only after a sanitizer's refusal: the arguments passed their checks
                refused = b.icmp_signed("==", rc, ir.Constant(I32, STATUS["INTENT_E_SANITIZER"]))
                with b.if_then(refused):
                    b.call(restore, [before, n, tensors])  # a refused call leaves its outputs as they were
            b.call(free, [before])
            b.ret(rc)
        if decreasing is None:
            b.call(free, [before])
            b.ret(rc)
            return
        after = b.call(snapshot, [n, tensors])
        b.call(restore, [before, n, tensors])
        rc2 = b.call(decreasing, list(func.args))
        result = b.select(b.icmp_signed("!=", rc2, ir.Constant(I32, 0)), rc2,
                          b.call(compare, [after, n, tensors, self.cstring(kernel.name), names]))
        with b.if_then(b.icmp_signed("!=", result, ir.Constant(I32, 0)), likely=False):
            b.call(restore, [before, n, tensors])  # a refused call leaves its outputs as they were
        b.call(free, [before])
        b.call(free, [after])
        b.ret(result)


class KernelEmitter(CpuFunctionEmitter):
    """The exported entry: argument checks, then the body."""

    def __init__(self, mod: ModuleEmitter, kernel: P.Kernel, symbol: str | None = None):
        arg_types = [PTR if isinstance(p, P.TensorSym) else arg_type(p.dtype) for p in kernel.params]
        func = ir.Function(mod.module, ir.FunctionType(I32, arg_types), symbol or kernel.name)
        if symbol is not None:
            func.linkage = "internal"
        super().__init__(mod, func, kernel)

    def emit(self) -> None:
        b = self.builder
        kname = self.mod.cstring(self.kernel.source_name or self.kernel.name)
        for param, arg in zip(self.kernel.params, self.func.args):
            arg.name = param.name
            if isinstance(param, P.Var):
                value = arg
                if param.dtype.is_bool:
                    value = b.icmp_unsigned("!=", arg, ir.Constant(I8, 0))
                elif param.dtype.name == "f16":
                    value = b.bitcast(arg, ir.HalfType())
                b.store(value, self.slot(param))
        self.check_arguments(kname, self.mod.abi.get(self.kernel.source_name or self.kernel.name))
        self.stmts(self.kernel.body)
        self.finish()

def emit_module(program: P.Program, triple: str, manifest: str | None = None,
                order_check: tuple[P.Program, P.Program] | None = None, restore: str | None = None) -> str:
    """LLVM IR text of the program; ``manifest`` is embedded as ``intent_module_manifest``.
    ``order_check``: the (increasing, decreasing) point-order bodies of an --sanitize=order build.
    ``restore``: the name of a sanitizer whose refusals must leave every tensor the kernel may
    write as it was (each entry snapshots them and restores them when the body returns
    INTENT_E_SANITIZER)."""
    emitter = ModuleEmitter(program, triple)
    if manifest is not None:
        emitter.abi = {k["name"]: k for k in json.loads(manifest).get("kernels", [])}
        data = bytearray(manifest.encode("utf-8")) + b"\0"
        const = ir.Constant(ir.ArrayType(I8, len(data)), data)
        var = ir.GlobalVariable(emitter.module, const.type, name="intent_module_manifest")
        var.global_constant = True
        var.initializer = const
    return emitter.emit(order_check, restore)
