"""Physical statements -> LLVM control flow and memory: one handler per statement class.

Loops count an ``i64`` index in a stack slot from ``begin`` to ``end``; a ``while`` runs its
condition body before each test; a failed ``check`` formats its message with
``intent_error`` (``%lld`` arguments widened to 64 bits) and returns its status; an ``alloc``
(re)allocates a row-major buffer through ``intent_alloc``, freed when the function returns; a
streaming store is an aligned non-temporal vector store (MOVNTPS, STNP) and a ``fence`` a
sequentially consistent fence.
"""
from __future__ import annotations

from llvmlite import ir

from intentc.codegen import mx_llvm
from intentc.codegen.abi import STATUS
from intentc.codegen.llvm_types import I8, I32, I64, PTR
from intentc.lower import program as P


class StatementEmitter:
    """``stmts(body)``, for a function emitter (``llvm_function.FunctionEmitter``). A parallel
    loop goes to ``parallel(loop)``, which each target provides: the CPU outlines it into a
    thread task (``llvm_outline``), the GPU spreads it over the grid (``emit_nvptx``)."""

    def stmts(self, stmts) -> None:
        for s in stmts:
            if self.builder.block.is_terminated:
                return
            self.stmt(s)

    def stmt(self, s: P.Stmt) -> None:
        name = _HANDLERS.get(type(s))
        if name is None:
            raise TypeError(s)
        getattr(self, name)(s)

    def assign(self, s: P.Assign) -> None:
        self.builder.store(self.expr(s.value), self.slot(s.var))

    def store(self, s: P.Store) -> None:
        b = self.builder
        if s.tensor.dtype.kind == "mx" and s.tensor.dtype.bits == 4:  # packed f4e2m1
            mx_llvm.store_f4(self, s.tensor, self.expr(s.offset), self.expr(s.value))
            return
        ptr = self.address(s.tensor, s.offset)
        value = self.expr(s.value)
        if s.tensor.dtype.is_bool:
            value = b.zext(value, I8)
        if s.streaming:  # an aligned whole vector, past the caches (MOVNTPS, STNP)
            lanes = s.value.dtype.lanes if isinstance(s.value.dtype, P.VectorType) else 1
            store = b.store(value, ptr, align=s.tensor.dtype.itemsize * lanes)
            store.set_metadata("nontemporal", self.mod.module.add_metadata([ir.Constant(I32, 1)]))
        else:
            b.store(value, ptr, align=s.tensor.dtype.itemsize)

    def fence(self, s: P.Fence) -> None:
        self.builder.fence("seq_cst")

    def if_stmt(self, s: P.If) -> None:
        b = self.builder
        cond = self.expr(s.cond)
        with b.if_else(cond) as (then, orelse):
            with then:
                self.stmts(s.then)
            with orelse:
                self.stmts(s.orelse)

    def for_loop(self, s: P.Loop) -> None:
        if s.kind == "parallel":
            self.parallel(s)
        else:
            self.loop(s.var, ir.Constant(I64, 0), self.expr(s.count), s.body)

    def loop(self, var: P.Var, begin: ir.Value, end: ir.Value, body) -> None:
        b = self.builder
        slot = self.slot(var)
        b.store(begin, slot)
        head = self.func.append_basic_block(f"{var.name}.head")
        loop_body = self.func.append_basic_block(f"{var.name}.body")
        exit_ = self.func.append_basic_block(f"{var.name}.exit")
        b.branch(head)
        b.position_at_end(head)
        b.cbranch(b.icmp_signed("<", b.load(slot), end), loop_body, exit_)
        b.position_at_end(loop_body)
        self.stmts(body)
        if not b.block.is_terminated:
            b.store(b.add(b.load(slot), ir.Constant(I64, 1), flags=["nsw"]), slot)
            b.branch(head)
        b.position_at_end(exit_)

    def while_loop(self, s: P.While) -> None:
        b = self.builder
        head = self.func.append_basic_block("while.head")
        body = self.func.append_basic_block("while.body")
        exit_ = self.func.append_basic_block("while.exit")
        b.branch(head)
        b.position_at_end(head)
        self.stmts(s.cond_body)
        b.cbranch(self.expr(s.cond), body, exit_)
        b.position_at_end(body)
        self.stmts(s.body)
        if not b.block.is_terminated:
            b.branch(head)
        b.position_at_end(exit_)

    def check(self, s: P.Check) -> None:
        b = self.builder
        ok = self.expr(s.cond)
        fail = self.func.append_basic_block("check.fail")
        cont = self.func.append_basic_block("check.ok")
        b.cbranch(ok, cont, fail)
        b.position_at_end(fail)
        code = ir.Constant(I32, STATUS[s.code])
        args = [self.expr(a) for a in s.args]
        args = [b.sext(a, I64) if isinstance(a.type, ir.IntType) and a.type.width < 64 else a for a in args]
        b.call(self.mod.intent_error, [code, self.mod.cstring(s.message)] + args)
        self.ret(code)
        b.position_at_end(cont)

    def buffer_layout(self, s: P.Alloc, shape, strides) -> tuple[ir.Value, ir.Value]:
        """Store a new buffer's row-major extents and strides into its slots; return its byte
        size (as the pair ``llvm.smul.with.overflow`` gives) and whether that size (or an extent product) passes 64 bits. The size must fit
        (docs/abi.md, "Sizes and offsets"): a wrapped product would allocate less than the
        extents address. Extents of 0 make the size 0, never an overflow."""
        b = self.builder
        t = s.tensor
        extents = [self.expr(e) for e in s.extents]
        stride = ir.Constant(I64, 1)
        smul = self.mod.intrinsic("llvm.smul.with.overflow.i64", ir.LiteralStructType([I64, ir.IntType(1)]),
                                  [I64, I64])
        overflow = ir.Constant(ir.IntType(1), 0)
        empty = ir.Constant(ir.IntType(1), 0)
        for k in reversed(range(t.rank)):
            b.store(extents[k], shape[k])
            b.store(stride, strides[k])
            product = b.call(smul, [stride, extents[k]])
            overflow = b.or_(overflow, b.extract_value(product, 1))
            empty = b.or_(empty, b.icmp_signed("==", extents[k], ir.Constant(I64, 0)))
            stride = b.extract_value(product, 0)
        size = b.call(smul, [stride, ir.Constant(I64, t.dtype.itemsize)])
        overflow = b.and_(b.or_(overflow, b.extract_value(size, 1)), b.not_(empty))
        return size, overflow  # size: llvm.smul.with.overflow's pair, the bytes first

    def alloc(self, s: P.Alloc) -> None:
        b = self.builder
        t = s.tensor
        if t.name not in self.heap:
            slot = self.entry_alloca(PTR, f"{t.name}.data")
            self.allocas.store(ir.Constant(PTR, None), slot)
            shape = [self.entry_alloca(I64, f"{t.name}.shape{k}") for k in range(t.rank)]
            strides = [self.entry_alloca(I64, f"{t.name}.stride{k}") for k in range(t.rank)]
            self.heap[t.name] = (slot, shape, strides)
        slot, shape, strides = self.heap[t.name]
        size, overflow = self.buffer_layout(s, shape, strides)
        with b.if_then(overflow, likely=False):
            message = self.mod.cstring(f"%s: the buffer '{t.name}' has more bytes than 64 bits can count")
            kernel = self.mod.cstring(self.kernel.source_name or self.kernel.name)
            self.ret(b.call(self.mod.intent_error, [ir.Constant(I32, STATUS["INTENT_E_SHAPE"]), message, kernel]))
        b.call(self.mod.intent_free, [b.load(slot, typ=PTR)])  # a buffer allocated in a loop is replaced
        ptr = b.call(self.mod.intent_alloc, [b.extract_value(size, 0)])
        b.store(ptr, slot)
        with b.if_then(b.icmp_unsigned("==", ptr, ir.Constant(PTR, None)), likely=False):
            self.ret(ir.Constant(I32, STATUS["INTENT_E_ALLOC"]))


# The method for each statement class, looked up on the emitter (a target may override one).
_HANDLERS = {P.Assign: "assign", P.Store: "store", P.Fence: "fence", P.If: "if_stmt", P.Loop: "for_loop",
             P.While: "while_loop", P.Check: "check", P.Alloc: "alloc"}
