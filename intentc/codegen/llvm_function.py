"""One LLVM function being emitted from physical statements: its stack slots and tensor views.

Stack slots go to the function's first block (``allocas``), which falls through to the body,
so that LLVM promotes them to registers; there is one slot per variable name. A tensor is a
data pointer with extents and strides: parameters' come from the argument checks (kernel
entries) or the closure (tasks), kernel-local buffers keep theirs in stack slots, allocated
where the program says (possibly in a branch) and freed on return.

A kernel entry's argument checks (``check_arguments``) run before its body, in the C
runtime's order (docs/abi.md): every tensor through ``intent_check_tensor`` in declaration
order, then the extent expressions of the parameters in 64-bit arithmetic that must not
overflow (``INTENT_E_SHAPE``), then ``intent_check_aliasing`` over all tensors, which
refuses written tensors that overlap (``INTENT_E_ALIAS``) and points inputs that overlap
an output at a copy freed on return. Only then are the data pointers, extents and strides
read into registers.
"""
from __future__ import annotations

from llvmlite import ir

from intentc.codegen.abi import STATUS, dlpack_dtype
from intentc.codegen.llvm_arith import ArithmeticEmitter
from intentc.codegen.llvm_exprs import ExpressionEmitter
from intentc.codegen.llvm_stmts import StatementEmitter
from intentc.codegen.llvm_types import I1, I8, I32, I64, PTR, mem_type, reg_type
from intentc.kir.extents import build as build_extent
from intentc.kir.extents import is_expression
from intentc.kir.extents import names as extent_names
from intentc.lower import program as P

# IntentArgView (runtime_c/intent_runtime.h): name, data, shape, strides, ndim, bits, written, copy.
ARG_VIEW = ir.LiteralStructType([PTR, PTR, PTR, PTR, I32, I32, I32, I32])


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
        self.owned: list[ir.AllocaInstr] = []  # other memory freed on return (the copies of aliased inputs)
        # Scalar results: (stack slot the body writes, the caller's pointer, dtype), copied on success.
        self.scalar_results: list[tuple[ir.AllocaInstr, ir.Value, object]] = []

    def entry_alloca(self, type_: ir.Type, name: str = "") -> ir.AllocaInstr:
        """Stack slots live in the first block so that LLVM promotes them to registers."""
        return self.allocas.alloca(type_, name=name)

    def finish(self) -> None:
        if not self.builder.block.is_terminated:
            for slot, pointer, dtype in self.scalar_results:  # written only on success (docs/abi.md)
                self.builder.store(self.builder.load(slot, typ=mem_type(dtype)), pointer)
            self.ret(ir.Constant(I32, 0))
        self.allocas.branch(self.func.blocks[1])

    def ret(self, code: ir.Value) -> None:
        """Return ``code``, freeing this function's buffers first."""
        for slot in [s for s, _, _ in self.heap.values()] + self.owned:
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

    # ---- a kernel entry's argument checks ------------------------------------------------------
    def check_arguments(self, kname: ir.Value, abi: dict | None) -> None:
        """The entry checks of docs/abi.md for the tensor parameters (``abi``: the kernel's
        manifest entry, whose extent expressions are checked for overflow; None: none)."""
        b = self.builder
        scalar_results = P.scalar_results(self.kernel)
        tensors = [(p, a) for p, a in zip(self.kernel.params, self.func.args)
                   if isinstance(p, P.TensorSym) and p.name not in scalar_results]
        for param, arg in zip(self.kernel.params, self.func.args):
            if param.name in scalar_results:  # a rank-0 tensor in a stack slot, no descriptor
                slot = self.entry_alloca(mem_type(param.dtype), f"{param.name}.value")
                self.data[param.name] = slot
                self.scalar_results.append((slot, arg, param.dtype))
        views = {}
        optional = {p["name"] for p in (abi or {}).get("params", []) if p.get("optional")}
        for param, arg in tensors:
            data_slot = self.entry_alloca(PTR, f"{param.name}.data")
            rank = max(1, param.rank)
            shape = self.entry_alloca(ir.ArrayType(I64, rank), f"{param.name}.shape")
            strides = self.entry_alloca(ir.ArrayType(I64, rank), f"{param.name}.strides")
            code, bits = dlpack_dtype(param.dtype)

            def check(param=param, arg=arg, data_slot=data_slot, shape=shape, strides=strides, code=code, bits=bits):
                rc = b.call(self.mod.check_tensor, [
                    arg, kname, self.mod.cstring(param.name), ir.Constant(I32, param.rank), ir.Constant(I8, code),
                    ir.Constant(I8, bits), ir.Constant(I32, int(param.writable)), data_slot, shape, strides])
                with b.if_then(b.icmp_signed("!=", rc, ir.Constant(I32, 0)), likely=False):
                    b.ret(rc)

            if param.name in optional:  # a NULL descriptor: absent, no data, extents 0 (never checked)
                absent = b.icmp_unsigned("==", arg, ir.Constant(PTR, None))
                with b.if_else(absent) as (then, otherwise):
                    with then:
                        b.store(ir.Constant(PTR, None), data_slot)
                        b.store(ir.Constant(ir.ArrayType(I64, rank), [0] * rank), shape)
                        b.store(ir.Constant(ir.ArrayType(I64, rank), [0] * rank), strides)
                    with otherwise:
                        check()
                self.fields[(param.name, "present", 0)] = b.select(absent, ir.Constant(I64, 0), ir.Constant(I64, 1))
            else:
                check()
            views[param.name] = (data_slot, shape, strides)
        if abi is not None:
            self._check_extent_expressions(kname, abi, views)
        data = self._check_aliasing(kname, tensors, views)
        for param, _ in tensors:
            _, shape, strides = views[param.name]
            self.data[param.name] = data[param.name]
            for axis in range(param.rank):
                index = [ir.Constant(I32, 0), ir.Constant(I32, axis)]
                self.fields[(param.name, "shape", axis)] = b.load(b.gep(shape, index, inbounds=True), typ=I64)
                self.fields[(param.name, "stride", axis)] = b.load(b.gep(strides, index, inbounds=True), typ=I64)

    def _check_aliasing(self, kname: ir.Value, tensors: list, views: dict) -> dict:
        """``intent_check_aliasing`` over every tensor (when overlap is possible at all: a
        written tensor beside another tensor, or of rank 2 or more); the data pointers after it."""
        b = self.builder
        written = [p for p, _ in tensors if p.writable]
        if not written or (len(tensors) == 1 and written[0].rank < 2):
            return {p.name: b.load(views[p.name][0], typ=PTR) for p, _ in tensors}
        array = self.entry_alloca(ir.ArrayType(ARG_VIEW, len(tensors)), "views")
        for k, (param, _) in enumerate(tensors):
            data_slot, shape, strides = views[param.name]
            storage = 4 if param.dtype.bits == 4 else 8 * param.dtype.itemsize
            fields = [self.mod.cstring(param.name), b.load(data_slot, typ=PTR), shape, strides,
                      ir.Constant(I32, param.rank), ir.Constant(I32, storage), ir.Constant(I32, int(param.writable)),
                      ir.Constant(I32, 0)]
            for f, value in enumerate(fields):
                b.store(value, b.gep(array, [ir.Constant(I32, 0), ir.Constant(I32, k), ir.Constant(I32, f)],
                                     inbounds=True))
        scratch = self.entry_alloca(PTR, "aliased.copies")
        self.allocas.store(ir.Constant(PTR, None), scratch)
        check = self.mod.intrinsic("intent_check_aliasing", I32, [PTR, I32, PTR, PTR])
        rc = b.call(check, [kname, ir.Constant(I32, len(tensors)), array, scratch])
        with b.if_then(b.icmp_signed("!=", rc, ir.Constant(I32, 0)), likely=False):
            b.ret(rc)
        self.owned.append(scratch)
        return {param.name: b.load(b.gep(array, [ir.Constant(I32, 0), ir.Constant(I32, k), ir.Constant(I32, 1)],
                                          inbounds=True), typ=PTR)
                for k, (param, _) in enumerate(tensors)}

    def _check_extent_expressions(self, kname: ir.Value, abi: dict, views: dict) -> None:
        """Every extent expression of the kernel's parameters (a result's ``R * C``) evaluated
        from the inputs' extents without overflowing int64, else ``INTENT_E_SHAPE``: a wrapped
        product could otherwise equal a small tensor's extent."""
        b = self.builder
        params = abi.get("params", [])
        first: dict[str, tuple[str, int]] = {}
        for p in params:  # each name's value: the first tensor input naming it (S1)
            if p.get("kind") == "tensor" and not p.get("result") and not p.get("optional"):
                for axis, e in enumerate(p.get("extents", ())):
                    if isinstance(e, str) and e.isidentifier() and p["name"] in views:
                        first.setdefault(e, (p["name"], axis))
        scalars = {p.name: p for p in self.kernel.params if isinstance(p, P.Var)}
        for p in params:
            for e in p.get("extents", ()):
                uses_scalar = isinstance(e, str) and any(n in scalars for n in extent_names(e))
                if not is_expression(e) and not uses_scalar:
                    continue
                overflow = [ir.Constant(I1, 0)]

                def lookup(name):
                    if name not in first and name in scalars:  # an integer scalar parameter (S1)
                        var = scalars[name]
                        value = b.load(self.slot(var))
                        if var.dtype.bits < 64:
                            value = b.zext(value, I64) if var.dtype.kind == "uint" else b.sext(value, I64)
                        return value
                    owner, axis = first[name]
                    shape = views[owner][1]
                    return b.load(b.gep(shape, [ir.Constant(I32, 0), ir.Constant(I32, axis)], inbounds=True), typ=I64)

                def binary(op, x, y):
                    if op == "floordiv":  # as kir/extents.evaluate: floor division, by 0 gives 0
                        zero, one = ir.Constant(I64, 0), ir.Constant(I64, 1)
                        safe = b.select(b.icmp_signed("==", y, zero), one, y)
                        q, r = b.sdiv(x, safe), b.srem(x, safe)
                        adjust = b.and_(b.icmp_signed("!=", r, zero),
                                        b.icmp_signed("!=", b.icmp_signed("<", r, zero), b.icmp_signed("<", safe, zero)))
                        q = b.sub(q, b.zext(adjust, I64))
                        return b.select(b.icmp_signed("==", y, zero), zero, q)
                    name = {"add": "sadd", "sub": "ssub", "mul": "smul"}[op]
                    f = self.mod.intrinsic(f"llvm.{name}.with.overflow.i64", ir.LiteralStructType([I64, I1]), [I64, I64])
                    pair = b.call(f, [x, y])
                    overflow[0] = b.or_(overflow[0], b.extract_value(pair, 1))
                    return b.extract_value(pair, 0)

                try:
                    value = build_extent(e, lookup, lambda v: ir.Constant(I64, v), binary)
                except KeyError:  # a name no tensor input carries: the body's own checks apply
                    continue
                with b.if_then(overflow[0], likely=False):
                    message = self.mod.cstring(f"%s: the extent {e} of '{p['name']}' does not fit in 64 bits")
                    b.ret(b.call(self.mod.intent_error, [ir.Constant(I32, STATUS["INTENT_E_SHAPE"]), message,
                                                         kname]))
                if p.get("result") and uses_scalar:  # a scalar argument can make it negative
                    with b.if_then(b.icmp_signed("<", value, ir.Constant(I64, 0)), likely=False):
                        message = self.mod.cstring(f"%s: the result extent {e} is %lld, which is negative")
                        b.ret(b.call(self.mod.intent_error, [ir.Constant(I32, STATUS["INTENT_E_SHAPE"]), message,
                                                             kname, value]))
