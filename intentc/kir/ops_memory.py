"""KIR ops of indexed memory, atomics and counter-based RNG (spec §8-§10).

Every indexed access carries one index relation (M1): per source axis an ``index``
operand that is a scalar (the same coordinate for every element) or an ``index`` tensor
of the result's shape (a data-derived or computed coordinate per element), plus, when
``masked``, a validity ``mask`` (bool, scalar or of the result's shape) — M3: an invalid
read lane touches nothing and yields ``fill``, an invalid write lane has no effect.

``space`` (set by sema from the relation's root) says what is accessed (M2):
``value`` an immutable tensor value (a pure gather), ``external`` a kernel parameter
(an external view), ``buffer`` a logical buffer (``I.buffer``). Effects follow it:

- ``gather``          value: pure; external: read; buffer: buffer_read (+ check: bounds)
- ``scatter``         external: write; buffer: buffer_write; must be injective (M4)
- ``scatter_reduce``  reduce: colliding writes combined with a typed combine (M5)
- ``atomic_*``        atomic, with the memory order in ``order`` (M6, A1, A2)
- ``philox``          rng: pure and stateless (N1, N2); marked so R4 can reject it

Op forms (operands in order; ``r`` = the source/destination rank):

- ``gather(src, i_0..i_{r-1}[, mask, fill]) {space, masked}`` -> element or tensor
- ``scatter(dst, i_0..i_{r-1}, vals[, mask]) {space, masked, unique}``
- ``scatter_reduce(dst, i_0..i_{r-1}, vals, identity[, mask]) {space, masked, combine} [combine]``
- ``atomic_rmw(t, i_0..i_{r-1}, value) {op, order}`` -> old value
- ``atomic_cas(t, i_0..i_{r-1}, expected, desired) {order}`` -> old value
- ``atomic_load(t, i_0..i_{r-1}) {order}`` -> value;  ``atomic_store(t, i..., value) {order}``
- ``philox(k0, k1, c0, c1, c2, c3)`` -> four u32 words (Philox4x32-10), scalars or one shape
"""
from __future__ import annotations

from intentc.kir.core import Op
from intentc.kir.ops import CHECK, PURE, Effect, OpDef, REGISTRY, VerifyError, _need, _yield_types
from intentc.kir.types import BOOL, INDEX, DType, TensorType

SPACES = ("value", "external", "buffer")
RMW_OPS = ("add", "sub", "min", "max", "and", "or", "xor", "exchange")
ORDERS = ("relaxed", "acquire", "release", "acq_rel")
COMBINES = ("add", "mul", "min", "max", "and", "or", "xor")  # the builtin scatter_reduce combines
U32 = DType("u32", "uint", 32)


def _indices_ok(op: Op, indices, shape) -> None:
    for v in indices:
        if isinstance(v.type, TensorType):
            _need(v.type.dtype == INDEX and v.type.shape == shape, op,
                  "tensor indices are index tensors of the access's shape")
        else:
            _need(v.type == INDEX, op, "indices are index values")


def _access_shape(op: Op, values) -> tuple | None:
    shapes = {v.type.shape for v in values if isinstance(v.type, TensorType)}
    _need(len(shapes) <= 1, op, "tensor indices, mask and values share one shape")
    return next(iter(shapes)) if shapes else None


def _verify_gather(op: Op) -> None:
    src = op.operands[0].type
    _need(isinstance(src, TensorType), op, "the source is a tensor")
    masked = bool(op.attrs.get("masked"))
    _need(op.attrs.get("space") in SPACES, op, f"space is one of {', '.join(SPACES)}")
    _need(len(op.operands) == 1 + src.rank + 2 * masked and len(op.results) == 1, op,
          "operands are the source, one index per axis[, mask, fill]")
    indices = op.operands[1:1 + src.rank]
    shape = _access_shape(op, indices + (op.operands[1 + src.rank:2 + src.rank] if masked else []))
    _indices_ok(op, indices, shape)
    res = op.result.type
    _need(res == (TensorType(src.dtype, shape) if shape is not None else src.dtype), op,
          "the result has the source dtype and the indices' shape")
    if masked:
        mask, fill = op.operands[1 + src.rank:]
        _need(element_is(mask.type, BOOL), op, "the mask is bool")
        _need(fill.type == src.dtype, op, "the fill is a scalar of the source dtype (M3)")


def element_is(type_, dtype: DType) -> bool:
    return (type_.dtype if isinstance(type_, TensorType) else type_) == dtype


def _verify_scatter(op: Op) -> None:
    dst = op.operands[0].type
    _need(isinstance(dst, TensorType), op, "the destination is a tensor")
    masked = bool(op.attrs.get("masked"))
    extra = 1 if op.name == "scatter_reduce" else 0
    marker = 1 if op.attrs.get("check_unique") else 0  # --sanitize=unique (lower/passes/check_unique.py)
    _need(len(op.operands) == 2 + dst.rank + extra + masked + marker and not op.results, op,
          "operands are the destination, one index per axis, the values[, identity][, mask][, marker]")
    if marker:
        _need(isinstance(op.operands[-1].type, TensorType) and op.operands[-1].type.rank == dst.rank, op,
              "the marker is shaped like the destination")
    _need(op.attrs.get("space") in ("external", "buffer"), op, "writes go to an external view or a buffer (M2)")
    indices = op.operands[1:1 + dst.rank]
    vals = op.operands[1 + dst.rank]
    rest = op.operands[2 + dst.rank:len(op.operands) - marker]
    shape = _access_shape(op, indices + [vals] + rest[extra:])
    _indices_ok(op, indices, shape)
    _need(element_is(vals.type, dst.dtype), op, "values have the destination dtype")
    _need(vals.type == (TensorType(dst.dtype, shape) if shape is not None else dst.dtype), op,
          "values have the access's shape")
    if extra:
        _need(rest[0].type == dst.dtype, op, "the identity is a scalar of the destination dtype")
        _need(op.attrs.get("combine") in COMBINES + ("helper",), op, "combine names a builtin or 'helper'")
        _need(len(op.regions) == 1, op, "has a combine region")
        combine = op.regions[0]
        _need([a.type for a in combine.args] == [dst.dtype, dst.dtype], op, "combine takes (acc, item)")
        _need(_yield_types(op, combine) == [dst.dtype], op, "combine yields the accumulator")
    if masked:
        _need(element_is(rest[extra].type, BOOL), op, "the mask is bool")


def _verify_atomic(op: Op) -> None:
    t = op.operands[0].type
    _need(isinstance(t, TensorType), op, "the atomic object is an element of a tensor")
    order = op.attrs.get("order")
    _need(order in ORDERS, op, f"order is one of {', '.join(ORDERS)}")
    values = {"atomic_rmw": 1, "atomic_cas": 2, "atomic_load": 0, "atomic_store": 1}[op.name]
    _need(len(op.operands) == 1 + t.rank + values, op, f"needs {t.rank} indices and {values} value(s)")
    _need(all(v.type == INDEX for v in op.operands[1:1 + t.rank]), op, "indices are index scalars")
    _need(all(v.type == t.dtype for v in op.operands[1 + t.rank:]), op, "values have the tensor's dtype")
    _need(not t.dtype.is_bool, op, "atomics on bool are not supported")
    if op.name == "atomic_store":
        _need(not op.results, op, "has no result")
        _need(order in ("relaxed", "release"), op, "an atomic store is relaxed or release")
    else:
        _need(len(op.results) == 1 and op.result.type == t.dtype, op, "yields the (old) value")
    if op.name == "atomic_load":
        _need(order in ("relaxed", "acquire"), op, "an atomic load is relaxed or acquire")
    if op.name == "atomic_rmw":
        _need(op.attrs.get("op") in RMW_OPS, op, f"op is one of {', '.join(RMW_OPS)}")
        if op.attrs.get("op") in ("and", "or", "xor"):
            _need(t.dtype.is_int, op, "bitwise atomics need an integer dtype")


def _verify_philox(op: Op) -> None:
    _need(len(op.operands) == 6 and len(op.results) == 4, op, "takes a 2-word key and a 4-word counter, yields 4")
    shapes = {v.type.shape for v in op.operands + op.results if isinstance(v.type, TensorType)}
    _need(len(shapes) <= 1, op, "operands share one shape")
    for v in op.operands + op.results:
        _need(element_is(v.type, U32), op, "words are u32")
    if shapes:
        _need(all(isinstance(r.type, TensorType) for r in op.results), op, "tensor operands give tensor words")


# ---- effects per op instance (M2) ---------------------------------------------------------------------
def _gather_effects(op: Op) -> tuple[Effect, ...]:
    space = op.attrs.get("space")
    if space == "value":
        return PURE
    return (Effect("buffer_read" if space == "buffer" else "read", 0), Effect("check"))


def _scatter_effects(op: Op) -> tuple[Effect, ...]:
    kind = "reduce" if op.name == "scatter_reduce" else \
        "buffer_write" if op.attrs.get("space") == "buffer" else "write"
    return (Effect(kind, 0), Effect("check"))


def _register(name, verify, effects, regions=0) -> None:
    static = effects if isinstance(effects, tuple) else CHECK
    REGISTRY[name] = OpDef(name, "memory", static, verify, regions)
    if callable(effects):
        DYNAMIC_EFFECTS[name] = effects


DYNAMIC_EFFECTS: dict = {}

_register("gather", _verify_gather, _gather_effects)
_register("scatter", _verify_scatter, _scatter_effects)
_register("scatter_reduce", _verify_scatter, _scatter_effects, regions=1)
for _name in ("atomic_rmw", "atomic_cas", "atomic_load", "atomic_store"):
    _register(_name, _verify_atomic, (Effect("atomic", 0), Effect("check")))
_register("philox", _verify_philox, (Effect("rng"),))


def instance_effects(op: Op) -> tuple[Effect, ...] | None:
    """The effects of this op instance when they depend on its attributes, else None."""
    dynamic = DYNAMIC_EFFECTS.get(op.name)
    return dynamic(op) if dynamic else None


__all__ = ["VerifyError", "instance_effects", "RMW_OPS", "ORDERS", "COMBINES"]
