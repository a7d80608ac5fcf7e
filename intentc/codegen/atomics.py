"""``program.Atomic`` -> LLVM atomic instructions (M6, A1, A2), for every target.

- RMW ``add sub and or xor exchange`` and integer ``min max`` are one ``atomicrmw`` (``fadd`` /
  ``fsub`` on floats; ``exchange`` of a float goes through its integer bits);
- float ``min``/``max`` keep intentc's meaning (NaN propagates, -0.0 < +0.0): a
  compare-and-swap loop on the bits, computing the new value with the emitter's own
  ``minimum``/``maximum``;
- ``cas`` is ``cmpxchg`` on the (integer) bits, returning the old value — so floats compare
  by representation, as the interpreter does; ``load``/``store`` are atomic load/store.

Orders map to LLVM's: relaxed -> monotonic, acquire, release, acq_rel (a ``cmpxchg`` fails
with the order's load part: acquire for acquire/acq_rel, else monotonic). The emitter's
``atomic_scope`` chooses the synchronisation scope (A2): empty (the whole system) on CPUs;
the GPU emitter sets ``syncscope("device")`` — the one kernel invocation that shares the
atomic objects runs on one device — and there the order of an RMW is carried by fences
(PTX ``fence.acq_rel.gpu``) around a relaxed ``atom``.
"""
from __future__ import annotations

from llvmlite import ir

from intentc.codegen.llvm_types import mem_type
from intentc.lower import program as P

_ORDERS = {"relaxed": "monotonic", "acquire": "acquire", "release": "release", "acq_rel": "acq_rel"}
_FAILURE = {"relaxed": "monotonic", "acquire": "acquire", "release": "monotonic", "acq_rel": "acquire"}


def _bits_type(t: ir.Type) -> ir.IntType:
    if isinstance(t, ir.IntType):
        return t
    return ir.IntType({ir.HalfType: 16, ir.FloatType: 32, ir.DoubleType: 64}[type(t)])


def emit_atomic(fe, e: P.Atomic) -> ir.Value:
    """The old value (for a store: the stored one) of the atomic access ``e``."""
    b = fe.builder
    dtype = e.dtype
    ty = mem_type(dtype)
    ptr = fe.address(e.tensor, e.offset)
    scope = getattr(fe, "atomic_scope", "")
    order = scope + _ORDERS[e.order]
    align = dtype.itemsize
    if e.op == "load":
        return b.load_atomic(ptr, order, align, typ=ty)
    value = fe.expr(e.a)
    if e.op == "store":  # (IRBuilder.store_atomic still expects typed pointers)
        b._insert(ir.instructions.StoreAtomicInstr(b.block, value, ptr, order, align))
        return value
    bits = _bits_type(ty)
    if e.op == "cas":
        expected, desired = value, fe.expr(e.b)
        if bits is not ty:
            expected, desired = b.bitcast(expected, bits), b.bitcast(desired, bits)
        pair = b.cmpxchg(ptr, expected, desired, order, _FAILURE[e.order])
        old = b.extract_value(pair, 0)
        return b.bitcast(old, ty) if bits is not ty else old
    if dtype.is_float:
        if e.op in ("add", "sub") and dtype.kind != "bfloat":  # (bf16: its bits, updated in f32 below)
            return _rmw(b, "fadd" if e.op == "add" else "fsub", ptr, value, e.order, scope)
        if e.op == "exchange":
            return b.bitcast(_rmw(b, "xchg", ptr, b.bitcast(value, bits), e.order, scope), ty)
        return _cas_loop(fe, ptr, value, ty, bits, lambda old: fe.binary(e.op, old, value, dtype), e.order, scope)
    name = {"add": "add", "sub": "sub", "and": "and", "or": "or", "xor": "xor", "exchange": "xchg",
            "min": "min" if dtype.is_signed else "umin", "max": "max" if dtype.is_signed else "umax"}[e.op]
    return _rmw(b, name, ptr, value, e.order, scope)


def _rmw(b, name: str, ptr, value, order: str, scope: str) -> ir.Value:
    """``atomicrmw``; with a GPU scope, the order is carried by explicit fences around a relaxed
    RMW (the NVPTX backend drops the ordering of ``atomicrmw``; cmpxchg, load and store keep it)."""
    if not scope or order == "relaxed":
        return b.atomic_rmw(name, ptr, value, scope + _ORDERS[order])
    target = scope[len('syncscope("'):-len('") ')]
    if order in ("release", "acq_rel"):
        b.fence("release", target)
    old = b.atomic_rmw(name, ptr, value, scope + "monotonic")
    if order in ("acquire", "acq_rel"):
        b.fence("acquire", target)
    return old


def _cas_loop(fe, ptr, value, ty, bits, update, order: str, scope: str) -> ir.Value:
    """old = *ptr; repeat: new = update(old); cmpxchg(ptr, old, new) until it takes."""
    b = fe.builder
    current = fe.entry_alloca(bits, "cas.old")
    b.store(b.load_atomic(ptr, scope + "monotonic", _align(ty), typ=bits), current)
    head = fe.func.append_basic_block("cas.head")
    done = fe.func.append_basic_block("cas.done")
    b.branch(head)
    b.position_at_end(head)
    old_bits = b.load(current)
    new = update(b.bitcast(old_bits, ty))
    pair = b.cmpxchg(ptr, old_bits, b.bitcast(new, bits), scope + _ORDERS[order], _FAILURE[order])
    b.store(b.extract_value(pair, 0), current)
    b.cbranch(b.extract_value(pair, 1), done, head)
    b.position_at_end(done)
    return b.bitcast(old_bits, ty)


def _align(ty: ir.Type) -> int:
    return {ir.HalfType: 2, ir.FloatType: 4, ir.DoubleType: 8}.get(type(ty), max(1, getattr(ty, "width", 8) // 8))
