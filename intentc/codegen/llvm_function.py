"""One LLVM function being emitted from physical statements: its stack slots and tensor views.

Stack slots go to the function's first block (``allocas``), which falls through to the body,
so that LLVM promotes them to registers; there is one slot per variable name. A tensor is a
data pointer with extents and strides: parameters' come from the argument checks (kernel
entries) or the closure (tasks), kernel-local buffers keep theirs in stack slots, allocated
where the program says (possibly in a branch) and freed on return.
"""
from __future__ import annotations

from llvmlite import ir

from intentc.codegen.llvm_arith import ArithmeticEmitter
from intentc.codegen.llvm_exprs import ExpressionEmitter
from intentc.codegen.llvm_stmts import StatementEmitter
from intentc.codegen.llvm_types import I32, I64, PTR, reg_type
from intentc.lower import program as P


class FunctionEmitter(StatementEmitter, ExpressionEmitter, ArithmeticEmitter):
    """Emits statements into one LLVM function (a kernel entry or a task). ``mod`` is the
    module emitter: ``intrinsic``, ``cstring`` and the runtime's functions."""

    def __init__(self, mod, func: ir.Function, kernel: P.Kernel):
        self.mod = mod
        self.func = func
        self.kernel = kernel
        # Stack slots go to their own first block, which falls through to the body.
        self.entry = func.append_basic_block("allocas")
        self.allocas = ir.IRBuilder(self.entry)
        self.builder = ir.IRBuilder(func.append_basic_block("entry"))
        self.vars: dict[str, ir.AllocaInstr] = {}
        self.fields: dict[tuple[str, str, int], ir.Value] = {}
        self.data: dict[str, ir.Value] = {}
        # Kernel-local buffers keep their pointer and extents in stack slots (they are
        # allocated where the program says, possibly in a branch) and are freed on return.
        self.heap: dict[str, tuple[ir.AllocaInstr, list, list]] = {}

    def entry_alloca(self, type_: ir.Type, name: str = "") -> ir.AllocaInstr:
        """Stack slots live in the first block so that LLVM promotes them to registers."""
        return self.allocas.alloca(type_, name=name)

    def finish(self) -> None:
        if not self.builder.block.is_terminated:
            self.ret(ir.Constant(I32, 0))
        self.allocas.branch(self.func.blocks[1])

    def ret(self, code: ir.Value) -> None:
        """Return ``code``, freeing this function's buffers first."""
        for slot, _, _ in self.heap.values():
            self.builder.call(self.mod.intent_free, [self.builder.load(slot, typ=PTR)])
        self.builder.ret(code)

    def data_ptr(self, name: str) -> ir.Value:
        if name in self.heap:
            return self.builder.load(self.heap[name][0], typ=PTR)
        return self.data[name]

    def field(self, name: str, kind: str, axis: int) -> ir.Value:
        if kind == "address":
            return self.builder.ptrtoint(self.data_ptr(name), I64)
        if name in self.heap:
            _, shape, strides = self.heap[name]
            return self.builder.load((shape if kind == "shape" else strides)[axis], typ=I64)
        return self.fields[(name, kind, axis)]

    def slot(self, var: P.Var) -> ir.AllocaInstr:
        if var.name not in self.vars:
            self.vars[var.name] = self.entry_alloca(reg_type(var.dtype), var.name)
        return self.vars[var.name]
