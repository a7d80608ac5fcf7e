"""Memory KIR ops: element loads and stores, logical buffers, indexed memory, atomics and
counter-based RNG (spec §8-§10).

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

- ``load(t, i_0..i_{r-1}) {inbounds?}`` -> element;  ``store(t, i_0..i_{r-1}, value) {inbounds?}``
- ``buffer(e0..e{r-1}) {dtype}`` -> kernel-local mutable storage (a logical buffer, M2)
- ``gather(src, i_0..i_{r-1}[, mask, fill]) {space, masked}`` -> element or tensor
- ``scatter(dst, i_0..i_{r-1}, vals[, mask][, marker]) {space, masked, unique, check_unique?}``
- ``scatter_reduce(dst, i_0..i_{r-1}, vals, identity[, mask]) {space, masked, combine} [combine]``
- ``atomic_rmw(t, i_0..i_{r-1}, value) {op, order}`` -> old value
- ``atomic_cas(t, i_0..i_{r-1}, expected, desired) {order}`` -> old value
- ``atomic_load(t, i_0..i_{r-1}) {order}`` -> value;  ``atomic_store(t, i..., value) {order}``
- ``philox(k0, k1, c0, c1, c2, c3)`` -> four u32 words (Philox4x32-10), scalars or one shape

``inbounds`` (one bool per axis) marks the indices proven inside the extents, whose bounds
check lowering leaves out (D5); ``check_unique`` marks a scatter whose injectivity is checked
at run time through the trailing ``marker`` operand (``--sanitize=unique``, M4).
"""
from __future__ import annotations

from intentc.kir.core import Op
from intentc.kir.ops.definition import (BOOL_A, INDEX_T, PURE, SCALAR, STR_A, TENSOR, VALUE, Attr,
                                        Effect, OpDef, Operand, check_combine, declare, element_is, list_of, many,
                                        need, one_of, optional)
from intentc.kir.types import BOOL, INDEX, DType, TensorType

SPACES = ("value", "external", "buffer")
RMW_OPS = ("add", "sub", "min", "max", "and", "or", "xor", "exchange")
ORDERS = ("relaxed", "acquire", "release", "acq_rel")
COMBINES = ("add", "mul", "min", "max", "and", "or", "xor")  # the builtin scatter_reduce combines
U32 = DType("u32", "uint", 32)

_INBOUNDS = {"inbounds": optional(list_of(BOOL_A))}


# ---- element loads and stores, buffers -------------------------------------------------------
def _check_load(op: Op) -> None:
    t = op.operands[0].type
    need(len(op.operands) == 1 + t.rank, op, f"needs {t.rank} indices")
    need(op.result.type == t.dtype, op, "yields one element of the tensor's dtype")


def _check_store(op: Op) -> None:
    t = op.operands[0].type
    need(len(op.operands) == 2 + t.rank, op, f"needs {t.rank} indices and a value")
    need(op.operands[-1].type == t.dtype, op, "value must have the tensor's dtype")


def _check_buffer(op: Op) -> None:
    need(len(op.operands) == op.result.type.rank, op, "one extent per axis")


# ---- indexed memory -------------------------------------------------------------------------------
def _indices_ok(op: Op, indices, shape) -> None:
    for v in indices:
        if isinstance(v.type, TensorType):
            need(v.type.dtype == INDEX and v.type.shape == shape, op,
                 "tensor indices are index tensors of the access's shape")
        else:
            need(v.type == INDEX, op, "indices are index values")


def _access_shape(op: Op, values) -> tuple | None:
    shapes = {v.type.shape for v in values if isinstance(v.type, TensorType)}
    need(len(shapes) <= 1, op, "tensor indices, mask and values share one shape")
    return next(iter(shapes)) if shapes else None


def _check_gather(op: Op) -> None:
    src = op.operands[0].type
    masked = op.attrs["masked"]
    need(len(op.operands) == 1 + src.rank + 2 * masked, op, "operands are the source, one index per axis[, mask, fill]")
    indices = op.operands[1:1 + src.rank]
    shape = _access_shape(op, indices + (op.operands[1 + src.rank:2 + src.rank] if masked else []))
    _indices_ok(op, indices, shape)
    need(op.result.type == (TensorType(src.dtype, shape) if shape is not None else src.dtype), op,
         "the result has the source dtype and the indices' shape")
    if masked:
        mask, fill = op.operands[1 + src.rank:]
        need(element_is(mask.type, BOOL), op, "the mask is bool")
        need(fill.type == src.dtype, op, "the fill is a scalar of the source dtype (M3)")


def _check_scatter(op: Op) -> None:
    dst = op.operands[0].type
    masked = op.attrs["masked"]
    extra = 1 if op.name == "scatter_reduce" else 0
    marker = 1 if op.attrs.get("check_unique") else 0
    need(len(op.operands) == 2 + dst.rank + extra + masked + marker, op,
         "operands are the destination, one index per axis, the values[, identity][, mask][, marker]")
    if marker:
        need(isinstance(op.operands[-1].type, TensorType) and op.operands[-1].type.rank == dst.rank, op,
             "the marker is shaped like the destination")
    need(op.attrs["space"] in ("external", "buffer"), op, "writes go to an external view or a buffer (M2)")
    indices = op.operands[1:1 + dst.rank]
    vals = op.operands[1 + dst.rank]
    rest = op.operands[2 + dst.rank:len(op.operands) - marker]
    shape = _access_shape(op, indices + [vals] + rest[extra:])
    _indices_ok(op, indices, shape)
    need(element_is(vals.type, dst.dtype), op, "values have the destination dtype")
    need(vals.type == (TensorType(dst.dtype, shape) if shape is not None else dst.dtype), op,
         "values have the access's shape")
    if extra:
        need(rest[0].type == dst.dtype, op, "the identity is a scalar of the destination dtype")
        check_combine(op, 0, [dst.dtype])
    if masked:
        need(element_is(rest[extra].type, BOOL), op, "the mask is bool")


_ATOMIC_VALUES = {"atomic_rmw": 1, "atomic_cas": 2, "atomic_load": 0, "atomic_store": 1}


def _check_atomic(op: Op) -> None:
    t = op.operands[0].type
    order = op.attrs["order"]
    values = _ATOMIC_VALUES[op.name]
    need(len(op.operands) == 1 + t.rank + values, op, f"needs {t.rank} indices and {values} value(s)")
    need(all(v.type == INDEX for v in op.operands[1:1 + t.rank]), op, "indices are index scalars")
    need(all(v.type == t.dtype for v in op.operands[1 + t.rank:]), op, "values have the tensor's dtype")
    need(not t.dtype.is_bool, op, "atomics on bool are not supported")
    if op.name == "atomic_store":
        need(order in ("relaxed", "release"), op, "an atomic store is relaxed or release")
    else:
        need(op.result.type == t.dtype, op, "yields the (old) value")
    if op.name == "atomic_load":
        need(order in ("relaxed", "acquire"), op, "an atomic load is relaxed or acquire")
    if op.name == "atomic_rmw" and op.attrs["op"] in ("and", "or", "xor"):
        need(t.dtype.is_int, op, "bitwise atomics need an integer dtype")


def _check_philox(op: Op) -> None:
    shapes = {v.type.shape for v in op.operands + op.results if isinstance(v.type, TensorType)}
    need(len(shapes) <= 1, op, "operands share one shape")
    for v in op.operands + op.results:
        need(element_is(v.type, U32), op, "words are u32")
    if shapes:
        need(all(isinstance(r.type, TensorType) for r in op.results), op, "tensor operands give tensor words")


# ---- effects per op instance (M2) -----------------------------------------------------------------
def _gather_effects(op: Op) -> tuple[Effect, ...]:
    space = op.attrs.get("space")
    if space == "value":
        return PURE
    return (Effect("buffer_read" if space == "buffer" else "read", 0), Effect("check"))


def _scatter_effects(op: Op) -> tuple[Effect, ...]:
    kind = "reduce" if op.name == "scatter_reduce" else \
        "buffer_write" if op.attrs.get("space") == "buffer" else "write"
    return (Effect(kind, 0), Effect("check"))


def _atomic(name: str, attrs: dict) -> OpDef:
    return OpDef(name, "memory", operands=(Operand("tensor", TENSOR), many("indices_and_values")),
                 results=() if name == "atomic_store" else (Operand("old", SCALAR),),
                 attrs={"order": Attr(one_of("a memory order", ORDERS)), **attrs, **_INBOUNDS},
                 effects=(Effect("atomic", 0), Effect("check")), check=_check_atomic)


_SPACE = {"space": Attr(one_of("a memory space", SPACES)), "masked": Attr(BOOL_A)}
_WORD = VALUE  # a u32 scalar or tensor; the check says u32

OPS = declare(
    OpDef("load", "memory", operands=(Operand("tensor", TENSOR), many("indices", INDEX_T)),
          results=(Operand("element", SCALAR),), attrs=_INBOUNDS, effects=(Effect("read", 0), Effect("check")),
          check=_check_load),
    OpDef("store", "memory", operands=(Operand("tensor", TENSOR), many("indices", INDEX_T), Operand("value", SCALAR)),
          attrs=_INBOUNDS, effects=(Effect("write", 0), Effect("check")), check=_check_store),
    OpDef("buffer", "memory", operands=(many("extents", INDEX_T),), results=(Operand("buffer", TENSOR),),
          attrs={"dtype": Attr(STR_A)}, effects=(Effect("alloc"),), check=_check_buffer),
    OpDef("gather", "memory", operands=(Operand("source", TENSOR), many("indices_mask_fill")),
          results=(Operand("result", VALUE),), attrs=_SPACE, effects=_gather_effects, check=_check_gather),
    OpDef("scatter", "memory", operands=(Operand("dest", TENSOR), many("indices_values_mask")),
          attrs={**_SPACE, "unique": Attr(BOOL_A), "check_unique": optional(BOOL_A)},
          effects=_scatter_effects, check=_check_scatter),
    OpDef("scatter_reduce", "memory", operands=(Operand("dest", TENSOR), many("indices_values_identity_mask")),
          attrs={**_SPACE, "combine": Attr(one_of("a builtin combine or 'helper'", COMBINES + ("helper",)))},
          regions=1, effects=_scatter_effects, check=_check_scatter),
    _atomic("atomic_rmw", {"op": Attr(one_of("an atomic operation", RMW_OPS))}),
    _atomic("atomic_cas", {}),
    _atomic("atomic_load", {}),
    _atomic("atomic_store", {}),
    OpDef("philox", "memory", operands=tuple(Operand(n, _WORD) for n in ("k0", "k1", "c0", "c1", "c2", "c3")),
          results=tuple(Operand(f"r{k}", _WORD) for k in range(4)), effects=(Effect("rng"),), check=_check_philox),
)
