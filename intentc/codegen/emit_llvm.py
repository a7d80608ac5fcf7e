"""Physical program -> LLVM IR text (llvmlite.ir).

One entry function per kernel (``int32_t name(params...)``) that validates every tensor
argument through the runtime before anything runs, then executes the body. Each
``parallel`` loop is outlined into a task function over blocks of ``grain`` iterations
and handed to ``intent_parallel_for`` with a closure of the values it reads. A failed
check formats its message with ``intent_error`` and returns its status.

Numeric rules (one meaning on every target, docs/language.md): integers wrap; ``//``
and ``%`` round toward negative infinity and ``x // 0 == 0``, ``x % 0 == x``; shifts by
an amount outside ``[0, bits)`` give 0 (or the sign for ``>>`` of a negative value);
float-to-int casts saturate and map NaN to 0; pointwise float arithmetic is plain IEEE
(no fast-math flags); ``minimum``/``maximum`` propagate NaN. ``exp``, ``log`` and ``tanh``
are intentc's own branch-free functions (``mathlib.py``), inlined so that loops calling
them vectorise; ``sqrt`` is the correctly rounded intrinsic.
"""
from __future__ import annotations

import itertools

import llvmlite

llvmlite.ir_layer_typed_pointers_enabled = False  # LLVM 15+ has only opaque pointers
from llvmlite import ir  # noqa: E402

from intentc.codegen import mathlib, mx_llvm
from intentc.codegen.abi import STATUS, dlpack_dtype
from intentc.kir.types import BOOL, INDEX, DType
from intentc.lower import program as P

I1, I8, I16, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(16), ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType()


class UnsupportedError(Exception):
    """A construct this target cannot lower yet (reported as a diagnostic)."""


def reg_type(dtype: DType) -> ir.Type:
    """The LLVM type of a value in registers."""
    if isinstance(dtype, P.VectorType):
        return ir.VectorType(reg_type(dtype.elem), dtype.lanes)
    if dtype.is_bool:
        return I1
    if dtype.kind in ("int", "uint", "index"):
        return ir.IntType(dtype.bits)
    if dtype.name == "f16":
        return ir.HalfType()
    if dtype.name == "f32":
        return ir.FloatType()
    if dtype.name == "f64":
        return ir.DoubleType()
    if dtype.kind == "mx":  # an OCP Microscaling code (mx_llvm.py)
        return I8
    raise UnsupportedError(f"dtype {dtype} is not supported in arithmetic on this target yet")


def mem_type(dtype: DType) -> ir.Type:
    """The LLVM type of an element in memory (bool is one byte)."""
    return I8 if dtype.is_bool else reg_type(dtype)


def arg_type(dtype: DType) -> ir.Type:
    if dtype.is_bool:
        return I8
    if dtype.name in ("f16", "bf16"):
        return I16
    return reg_type(dtype)


class ModuleEmitter:
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
        written = [(p, a) for p, a in zip(kernel.params, func.args) if isinstance(p, P.TensorSym) and p.writable]
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


def _suffix(t: ir.Type) -> str:
    if isinstance(t, ir.VectorType):
        return f"v{t.count}{_suffix(t.element)}"
    if isinstance(t, ir.HalfType):
        return "f16"
    if isinstance(t, ir.FloatType):
        return "f32"
    if isinstance(t, ir.DoubleType):
        return "f64"
    return f"i{t.width}"


class FunctionEmitter:
    """Emits statements into one LLVM function (a kernel entry or a task)."""

    def __init__(self, mod: ModuleEmitter, func: ir.Function, kernel: P.Kernel):
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

    # -- variables ---------------------------------------------------------------------------
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
        extents = [self.expr(e) for e in s.extents]
        stride = ir.Constant(I64, 1)
        for k in reversed(range(t.rank)):
            b.store(extents[k], shape[k])
            b.store(stride, strides[k])
            stride = b.mul(stride, extents[k])
        b.call(self.mod.intent_free, [b.load(slot, typ=PTR)])  # a buffer allocated in a loop is replaced
        ptr = b.call(self.mod.intent_alloc, [b.mul(stride, ir.Constant(I64, t.dtype.itemsize))])
        b.store(ptr, slot)
        with b.if_then(b.icmp_unsigned("==", ptr, ir.Constant(PTR, None)), likely=False):
            self.ret(ir.Constant(I32, STATUS["INTENT_E_ALLOC"]))

    def slot(self, var: P.Var) -> ir.AllocaInstr:
        if var.name not in self.vars:
            self.vars[var.name] = self.entry_alloca(reg_type(var.dtype), var.name)
        return self.vars[var.name]

    # -- statements --------------------------------------------------------------------------
    def stmts(self, stmts) -> None:
        for s in stmts:
            if self.builder.block.is_terminated:
                return
            self.stmt(s)

    def stmt(self, s: P.Stmt) -> None:
        b = self.builder
        if isinstance(s, P.Assign):
            b.store(self.expr(s.value), self.slot(s.var))
        elif isinstance(s, P.Store):
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
        elif isinstance(s, P.Fence):
            b.fence("seq_cst")
        elif isinstance(s, P.If):
            cond = self.expr(s.cond)
            with b.if_else(cond) as (then, orelse):
                with then:
                    self.stmts(s.then)
                with orelse:
                    self.stmts(s.orelse)
        elif isinstance(s, P.Loop):
            if s.kind == "parallel":
                self.parallel(s)
            else:
                self.loop(s.var, ir.Constant(I64, 0), self.expr(s.count), s.body)
        elif isinstance(s, P.While):
            self.while_loop(s)
        elif isinstance(s, P.Check):
            self.check(s)
        elif isinstance(s, P.Alloc):
            self.alloc(s)
        else:
            raise TypeError(s)

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

    # -- expressions ---------------------------------------------------------------------------
    def address(self, tensor: P.TensorSym, offset: P.Expr) -> ir.Value:
        return self.builder.gep(self.data_ptr(tensor.name), [self.expr(offset)], source_etype=mem_type(tensor.dtype))

    def expr(self, e: P.Expr) -> ir.Value:
        b = self.builder
        if isinstance(e, P.Const):
            t = reg_type(e.dtype)
            if e.dtype.is_bool:
                return ir.Constant(I1, int(bool(e.value)))
            if e.dtype.is_float:
                return ir.Constant(t, float(e.value))
            return ir.Constant(t, int(e.value) & ((1 << e.dtype.bits) - 1))
        if isinstance(e, P.Read):
            return b.load(self.slot(e.var))
        if isinstance(e, P.Field):
            return self.field(e.tensor.name, e.kind, e.axis)
        if isinstance(e, P.Atomic):  # M6: codegen/atomics.py
            from intentc.codegen.atomics import emit_atomic

            return emit_atomic(self, e)
        if isinstance(e, P.Load):
            if e.tensor.dtype.kind == "mx" and e.tensor.dtype.bits == 4:  # packed f4e2m1
                lanes = e.dtype.lanes if isinstance(e.dtype, P.VectorType) else None
                return mx_llvm.load_f4(self, e.tensor, self.expr(e.offset), lanes)
            ptr = self.address(e.tensor, e.offset)
            value = b.load(ptr, align=e.tensor.dtype.itemsize, typ=mem_type(e.dtype))
            if e.tensor.dtype.is_bool:
                value = b.icmp_unsigned("!=", value, ir.Constant(I8, 0))
            return value
        if isinstance(e, P.Binary):
            value = self.binary(e.op, self.expr(e.a), self.expr(e.b), e.a.dtype)
            if e.fast and e.a.dtype.is_float and hasattr(value, "flags") and value.opname in (
                    "fadd", "fsub", "fmul", "fdiv"):
                value.flags += ["reassoc", "nsz"]
            return value
        if isinstance(e, P.Unary):
            return self.unary(e.op, self.expr(e.a), e.a.dtype)
        if isinstance(e, P.Splat):
            t = reg_type(e.dtype)
            one = b.insert_element(ir.Constant(t, ir.Undefined), self.expr(e.a), ir.Constant(I32, 0))
            return b.shuffle_vector(one, ir.Constant(t, ir.Undefined), ir.Constant(ir.VectorType(I32, t.count), None))
        if isinstance(e, P.Pack):
            vector = ir.Constant(reg_type(e.dtype), ir.Undefined)
            for j, elem in enumerate(e.elems):
                vector = b.insert_element(vector, self.expr(elem), ir.Constant(I32, j))
            return vector
        if isinstance(e, P.Lane):
            return b.extract_element(self.expr(e.a), ir.Constant(I32, e.index))
        if isinstance(e, P.Shuffle):
            mask = ir.Constant(ir.VectorType(I32, len(e.mask)), [ir.Constant(I32, m) for m in e.mask])
            return b.shuffle_vector(self.expr(e.a), self.expr(e.b), mask)
        if isinstance(e, P.MulAdd):  # a contraction grants the fused multiply-add (T3, T7)
            x, y, z = self.expr(e.a), self.expr(e.b), self.expr(e.c)
            if e.dtype.is_float:
                return b.call(self.mod.intrinsic(f"llvm.fmuladd.{_suffix(x.type)}", x.type, [x.type] * 3), [x, y, z])
            return b.add(b.mul(x, y), z)
        if isinstance(e, P.Compare):
            return self.compare(e.pred, self.expr(e.a), self.expr(e.b), e.a.dtype)
        if isinstance(e, P.Select):
            return b.select(self.expr(e.cond), self.expr(e.a), self.expr(e.b))
        if isinstance(e, P.Cast):
            if e.in_range and e.a.dtype.is_float and e.dtype.is_int:  # no saturation: vectorises
                convert = b.fptosi if e.dtype.is_signed else b.fptoui
                return convert(self.expr(e.a), reg_type(e.dtype))
            return self.cast(self.expr(e.a), e.a.dtype, e.dtype)
        raise TypeError(e)

    def binary(self, op: str, a: ir.Value, c: ir.Value, dtype: DType) -> ir.Value:
        b = self.builder
        if dtype.is_float:
            if op == "add":
                return b.fadd(a, c)
            if op == "sub":
                return b.fsub(a, c)
            if op == "mul":
                return b.fmul(a, c)
            if op == "div":
                return b.fdiv(a, c)
            if op in ("min", "max"):
                name = "llvm.minimum" if op == "min" else "llvm.maximum"
                return b.call(self.mod.intrinsic(f"{name}.{_suffix(a.type)}", a.type, [a.type, a.type]), [a, c])
            if op == "pow":
                return b.call(self.mod.intrinsic(f"llvm.pow.{_suffix(a.type)}", a.type, [a.type, a.type]), [a, c])
            if op == "floordiv":
                floor = self.mod.intrinsic(f"llvm.floor.{_suffix(a.type)}", a.type, [a.type])
                return b.call(floor, [b.fdiv(a, c)])
            if op == "mod":
                # Python: the remainder takes the divisor's sign, a zero remainder too.
                r = b.frem(a, c)
                zero = ir.Constant(a.type, 0.0)
                fix = b.and_(b.fcmp_ordered("!=", r, zero),
                             b.xor(b.fcmp_ordered("<", r, zero), b.fcmp_ordered("<", c, zero)))
                r = b.select(fix, b.fadd(r, c), r)
                copysign = self.mod.intrinsic(f"llvm.copysign.{_suffix(a.type)}", a.type, [a.type, a.type])
                return b.select(b.fcmp_ordered("==", r, zero), b.call(copysign, [zero, c]), r)
            raise UnsupportedError(f"'{op}' on {dtype}")
        signed = dtype.is_signed
        if op == "add":
            return b.add(a, c)
        if op == "sub":
            return b.sub(a, c)
        if op == "mul":
            return b.mul(a, c)
        if op == "and":
            return b.and_(a, c)
        if op == "or":
            return b.or_(a, c)
        if op == "xor":
            return b.xor(a, c)
        if op in ("min", "max"):
            pred = "<" if op == "min" else ">"
            cmp = b.icmp_signed(pred, a, c) if signed else b.icmp_unsigned(pred, a, c)
            return b.select(cmp, a, c)
        if op in ("floordiv", "mod"):
            return self.int_divmod(op, a, c, signed)
        if op in ("shl", "shr"):
            bits = ir.Constant(a.type, a.type.width)
            in_range = b.icmp_unsigned("<", c, bits)
            if op == "shl":
                return b.select(in_range, b.shl(a, c), ir.Constant(a.type, 0))
            if signed:
                return b.ashr(a, b.select(in_range, c, ir.Constant(a.type, a.type.width - 1)))
            return b.select(in_range, b.lshr(a, c), ir.Constant(a.type, 0))
        if op == "pow":
            return self.int_pow(a, c, signed)
        raise UnsupportedError(f"'{op}' on {dtype}")

    def int_divmod(self, op: str, a: ir.Value, c: ir.Value, signed: bool) -> ir.Value:
        b = self.builder
        t = a.type
        zero, one = ir.Constant(t, 0), ir.Constant(t, 1)
        is_zero = b.icmp_unsigned("==", c, zero)
        if not signed:
            safe = b.select(is_zero, one, c)
            if op == "floordiv":
                return b.select(is_zero, zero, b.udiv(a, safe))
            return b.select(is_zero, a, b.urem(a, safe))
        # Avoid the two undefined cases: x / 0 and MIN / -1 (which wraps to MIN, remainder 0).
        minus_one = ir.Constant(t, -1)
        overflow = b.and_(b.icmp_signed("==", a, ir.Constant(t, -(1 << (t.width - 1)))),
                          b.icmp_signed("==", c, minus_one))
        safe = b.select(b.or_(is_zero, overflow), one, c)
        q = b.sdiv(a, safe)
        r = b.srem(a, safe)
        # Round toward negative infinity: adjust when the remainder and divisor differ in sign.
        adjust = b.and_(b.icmp_signed("!=", r, zero), b.icmp_signed("<", b.xor(r, safe), zero))
        if op == "floordiv":
            q = b.select(adjust, b.sub(q, one), q)
            return b.select(is_zero, zero, q)
        r = b.select(adjust, b.add(r, safe), r)
        return b.select(is_zero, a, r)

    def int_pow(self, a: ir.Value, c: ir.Value, signed: bool) -> ir.Value:
        """Exponentiation by squaring with wrap-around; a negative exponent gives 0
        (1 for a base of 1, ±1 for a base of -1), as integer division would."""
        b = self.builder
        t = a.type
        result, base, exp = self.entry_alloca(t), self.entry_alloca(t), self.entry_alloca(t)
        b.store(ir.Constant(t, 1), result)
        b.store(a, base)
        b.store(c, exp)
        head = self.func.append_basic_block("pow.head")
        body = self.func.append_basic_block("pow.body")
        done = self.func.append_basic_block("pow.done")
        b.branch(head)
        b.position_at_end(head)
        e = b.load(exp)
        b.cbranch(b.icmp_signed(">", e, ir.Constant(t, 0)) if signed else b.icmp_unsigned(">", e, ir.Constant(t, 0)),
                  body, done)
        b.position_at_end(body)
        odd = b.icmp_unsigned("!=", b.and_(e, ir.Constant(t, 1)), ir.Constant(t, 0))
        r = b.load(result)
        bv = b.load(base)
        b.store(b.select(odd, b.mul(r, bv), r), result)
        b.store(b.mul(bv, bv), base)
        b.store(b.lshr(e, ir.Constant(t, 1)), exp)
        b.branch(head)
        b.position_at_end(done)
        value = b.load(result)
        if not signed:
            return value
        negative = b.icmp_signed("<", c, ir.Constant(t, 0))
        one = ir.Constant(t, 1)
        is_one = b.icmp_signed("==", a, one)
        is_minus_one = b.icmp_signed("==", a, ir.Constant(t, -1))
        odd_exp = b.icmp_unsigned("!=", b.and_(c, one), ir.Constant(t, 0))
        neg_value = b.select(is_one, one, b.select(is_minus_one, b.select(odd_exp, ir.Constant(t, -1), one),
                                                   ir.Constant(t, 0)))
        return b.select(negative, neg_value, value)

    def unary(self, op: str, a: ir.Value, dtype: DType) -> ir.Value:
        b = self.builder
        if op == "neg":
            return b.fneg(a) if dtype.is_float else b.sub(ir.Constant(a.type, 0), a)
        if op == "not":
            return b.xor(a, ir.Constant(a.type, -1 if not dtype.is_bool else 1))
        if op == "abs":
            if dtype.is_float:
                return b.call(self.mod.intrinsic(f"llvm.fabs.{_suffix(a.type)}", a.type, [a.type]), [a])
            if not dtype.is_signed:
                return a
            return b.select(b.icmp_signed("<", a, ir.Constant(a.type, 0)), b.sub(ir.Constant(a.type, 0), a), a)
        if op in mathlib.OPS and dtype.is_float:  # intentc's own: vectorisable, the same bits on every target
            return mathlib.call(b, self.mod.module, op, a)
        if op == "sqrt":  # IEEE, correctly rounded everywhere
            return b.call(self.mod.intrinsic(f"llvm.sqrt.{_suffix(a.type)}", a.type, [a.type]), [a])
        raise UnsupportedError(f"'{op}' on {dtype}")

    def compare(self, pred: str, a: ir.Value, c: ir.Value, dtype: DType) -> ir.Value:
        b = self.builder
        symbol = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}[pred]
        if dtype.is_float:
            # Every comparison with NaN is false except !=, as in IEEE and Python.
            return b.fcmp_unordered(symbol, a, c) if pred == "ne" else b.fcmp_ordered(symbol, a, c)
        if dtype.is_signed:
            return b.icmp_signed(symbol, a, c)
        return b.icmp_unsigned(symbol, a, c)

    def cast(self, a: ir.Value, src: DType, dst: DType) -> ir.Value:
        b = self.builder
        to = reg_type(dst)
        if src == dst:
            return a
        if src.kind == "mx" or dst.kind == "mx":  # OCP Microscaling conversions
            return mx_llvm.cast(b, a, src, dst, reg_type)
        if dst.is_bool:
            if src.is_float:
                return b.fcmp_unordered("!=", a, ir.Constant(a.type, 0.0))
            return b.icmp_unsigned("!=", a, ir.Constant(a.type, 0))
        if src.is_bool:
            return b.uitofp(a, to) if dst.is_float else b.zext(a, to)
        if src.is_float and dst.is_float:
            if src.bits < dst.bits:
                return b.fpext(a, to)
            return b.fptrunc(a, to) if src.bits > dst.bits else a
        if src.is_float:
            name = "llvm.fptosi.sat" if dst.is_signed else "llvm.fptoui.sat"
            return b.call(self.mod.intrinsic(f"{name}.{_suffix(to)}.{_suffix(a.type)}", to, [a.type]), [a])
        if dst.is_float:
            return b.sitofp(a, to) if src.is_signed else b.uitofp(a, to)
        if src.bits == dst.bits:
            return a
        if src.bits > dst.bits:
            return b.trunc(a, to)
        return b.sext(a, to) if src.is_signed else b.zext(a, to)


class KernelEmitter(FunctionEmitter):
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
        for param, arg in zip(self.kernel.params, self.func.args):
            if not isinstance(param, P.TensorSym):
                continue
            data_slot = self.entry_alloca(PTR, f"{param.name}.data")
            rank = max(1, param.rank)
            shape = self.entry_alloca(ir.ArrayType(I64, rank), f"{param.name}.shape")
            strides = self.entry_alloca(ir.ArrayType(I64, rank), f"{param.name}.strides")
            code, bits = dlpack_dtype(param.dtype)
            rc = b.call(self.mod.check_tensor, [
                arg, kname, self.mod.cstring(param.name), ir.Constant(I32, param.rank), ir.Constant(I8, code),
                ir.Constant(I8, bits), ir.Constant(I32, int(param.writable)), data_slot, shape, strides])
            with b.if_then(b.icmp_signed("!=", rc, ir.Constant(I32, 0)), likely=False):
                b.ret(rc)
            self.data[param.name] = b.load(data_slot, typ=PTR)
            for axis in range(param.rank):
                index = [ir.Constant(I32, 0), ir.Constant(I32, axis)]
                self.fields[(param.name, "shape", axis)] = b.load(b.gep(shape, index, inbounds=True), typ=I64)
                self.fields[(param.name, "stride", axis)] = b.load(b.gep(strides, index, inbounds=True), typ=I64)
        self.stmts(self.kernel.body)
        self.finish()


class TaskEmitter(FunctionEmitter):
    """``int32_t task(closure, first_block, end_block)`` running one parallel loop's blocks."""

    def __init__(self, mod, func, kernel, loop: P.Loop, captured, tensors, closure_type):
        super().__init__(mod, func, kernel)
        self.loop_stmt = loop
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
        self.loop(self.loop_stmt.var, begin, end, self.loop_stmt.body)
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


def emit_module(program: P.Program, triple: str, manifest: str | None = None,
                order_check: tuple[P.Program, P.Program] | None = None, restore: str | None = None) -> str:
    """LLVM IR text of the program; ``manifest`` is embedded as ``intent_module_manifest``.
    ``order_check``: the (increasing, decreasing) point-order bodies of an --sanitize=order build.
    ``restore``: the name of a sanitizer whose refusals must leave every tensor the kernel may
    write as it was (each entry snapshots them and restores them when the body returns
    INTENT_E_SANITIZER)."""
    emitter = ModuleEmitter(program, triple)
    if manifest is not None:
        data = bytearray(manifest.encode("utf-8")) + b"\0"
        const = ir.Constant(ir.ArrayType(I8, len(data)), data)
        var = ir.GlobalVariable(emitter.module, const.type, name="intent_module_manifest")
        var.global_constant = True
        var.initializer = const
    return emitter.emit(order_check, restore)
