"""The meaning of the memory KIR ops: gather, scatter, scatter_reduce, atomics, philox.

Part of the reference interpreter (``intentc/interp/``; ``registry.py`` collects ``HANDLERS``
and ``SANITIZED``); the op forms are documented in ``intentc/kir/ops/memory.py``.

- ``gather`` reads ``src`` at the index relation; a masked-off lane reads nothing (no bounds
  check either) and yields ``fill`` (M3). Every active index is checked (D5).
- ``scatter`` checks every active index first, then writes the active lanes in row-major
  order; nothing is written when a check fails. ``sanitize="unique"`` reports a location
  written twice by one scatter (the ``unique=True`` assertion, M4).
- ``scatter_reduce`` checks every active index first, then ``dst[j] = combine(dst[j], v)``.
  Integer builtin combines and ``min``/``max`` are exact, so the order does not matter and
  the lanes are combined in row-major order. ``add``/``mul`` on floats and helper combines
  are defined with the grouping the compiled code uses, so that results are identical on
  every target and thread count (``intentc/base/blocking.py``): the lanes are cut into
  ``privatized_blocks(n, size(dst))`` consecutive blocks; block ``b`` folds its lanes in
  order into a private copy of ``dst`` that starts at the identity; then every element of
  ``dst`` is combined with the private copies in block order:
  ``dst[j] = combine(...combine(dst[j], p_0[j])..., p_{B-1}[j])``.
- ``atomic_rmw/cas/load/store`` act on one element and return the old value (M6); the
  interpreter runs points one at a time, so every order is sequentially consistent.
- ``philox`` is Philox4x32-10 (Random123): ten rounds of two 32x32->64 multiplies with the
  key bumped by the Weyl constants between rounds; u32 wrap-around (N1;
  ``intentc/base/philox.py``).

Sanitizers (``Interpreter(sanitize=...)``)
    ``"race"``: every ``parallel`` op records, per point, the elements its body reads and
    writes (loads, stores, gathers, scatters of tensors in memory; atomics count as atomic
    accesses). Two different points touching one element, at least one writing and not both
    atomically, raise ``RaceError`` naming both points, the element and both source lines
    (P3, A3). Scatter-reduce lanes count as atomic (M5).
    ``"unique"``: a scatter made with ``unique=True`` that writes one element twice (within
    the op, or from two points of a parallel loop) raises ``UniqueViolation`` (M4).
"""
from __future__ import annotations

import math

import numpy as np

from intentc.base.blocking import exact_combine, privatized_blocks
from intentc.base.philox import PHILOX_M, PHILOX_W, ROUNDS
from intentc.base.status import E_BOUNDS, KernelError
from intentc.interp.core_ops import HANDLERS as PLAIN
from intentc.interp.core_ops import element
from intentc.interp.numeric import float_binary, int_binary, numpy_dtype, scalar_of
from intentc.kir.core import Op
from intentc.kir.types import TensorType


class SanitizerError(Exception):
    """A run-time violation found by a sanitizer of the reference interpreter."""


class RaceError(SanitizerError):
    """Two parallel points access one element, at least one writes, not both atomically (P3, A3)."""


class UniqueViolation(SanitizerError):
    """A scatter asserted unique (``unique=True``) writes one element twice (M4)."""


# ---- element positions -------------------------------------------------------------------------------------
def _lanes(env: dict, values, shape) -> list[np.ndarray]:
    """Each value as an array of the access's shape (scalars repeat)."""
    out = []
    for v in values:
        x = env[id(v)]
        out.append(np.broadcast_to(np.asarray(x), shape) if shape is not None else np.asarray(x).reshape(()))
    return out


def _shape(op: Op, env: dict):
    """The access's shape (that of its tensor indices, mask or values), or None for one lane."""
    for v in op.operands[1:]:
        if isinstance(v.type, TensorType):
            return tuple(env[id(v)].shape)
    return None


def _check(it, op: Op, array: np.ndarray, tensor, indices: list[np.ndarray], active: np.ndarray) -> None:
    """D5 on every active lane: the first failing lane (row-major) is reported."""
    for axis, (idx, extent) in enumerate(zip(indices, array.shape)):
        bad = active & ((idx < 0) | (idx >= extent))
        if bad.any():
            first = np.argwhere(bad.reshape(-1))[0][0]
            value = int(idx.reshape(-1)[first])
            name = it.names.get(id(tensor)) or tensor.hint or "tensor"
            raise KernelError(E_BOUNDS, f"{it.kernel_name}: index {value} is out of range [0, {extent}) on axis "
                                        f"{axis} of '{name}'{it.where(op)}")


def _access(it, op: Op, env: dict, rank: int):
    """(array, index arrays, active lanes, shape) of a gather/scatter-like op."""
    tensor = op.operands[0]
    array = env[id(tensor)]
    shape = _shape(op, env)
    indices = [a.astype(np.int64) for a in _lanes(env, op.operands[1:1 + rank], shape)]
    if op.attrs.get("masked"):
        active = _lanes(env, [op.operands[-1] if op.name != "gather" else op.operands[1 + rank]], shape)[0]
        active = active.astype(bool)
    else:
        active = np.ones(shape if shape is not None else (), bool)
    return tensor, array, indices, active, shape


# ---- gather / scatter ----------------------------------------------------------------------------------------------
def _op_gather(it, op: Op, env: dict):
    src = op.operands[0]
    rank = src.type.rank
    tensor, array, indices, active, shape = _access(it, op, env, rank)
    _check(it, op, array, tensor, indices, active)
    dtype = src.type.dtype
    fill = env[id(op.operands[-1])] if op.attrs.get("masked") else None
    if shape is None:
        if bool(active):
            position = tuple(int(i) for i in indices)
            _record(it, op, array, [position], "read")
            env[id(op.result)] = scalar_of(array[position], dtype)
        else:
            env[id(op.result)] = fill
        return
    result = np.empty(shape, dtype=numpy_dtype(dtype))
    if fill is not None:
        result[...] = fill
    where = np.nonzero(active)
    if where[0].size:
        picked = tuple(idx[where] for idx in indices)
        result[where] = array[picked]
        if op.attrs.get("space") != "value":
            _record(it, op, array, list(zip(*[p.tolist() for p in picked])), "read")
    env[id(op.result)] = result


def _scatter_lanes(it, op: Op, env: dict):
    dst = op.operands[0]
    rank = dst.type.rank
    tensor, array, indices, active, shape = _access(it, op, env, rank)
    _check(it, op, array, tensor, indices, active)
    vals = _lanes(env, [op.operands[1 + rank]], shape)[0]
    order = np.nonzero(active.reshape(-1))[0]
    positions = [tuple(int(idx.reshape(-1)[k]) for idx in indices) for k in order]
    values = [vals.reshape(-1)[k] for k in order]
    return array, positions, values


def _op_scatter(it, op: Op, env: dict):
    array, positions, values = _scatter_lanes(it, op, env)
    if op.attrs.get("unique") and "unique" in _modes(it):
        seen: dict = {}
        for lane, position in enumerate(positions):
            if position in seen:
                raise UniqueViolation(
                    f"M4: a scatter asserted unique=True writes element {list(position)} of "
                    f"'{_name(it, op.operands[0])}' twice (active lanes {seen[position]} and {lane}){it.where(op)}")
            seen[position] = lane
    _record(it, op, array, positions, "write", unique=bool(op.attrs.get("unique")))
    dtype = op.operands[0].type.dtype
    for position, value in zip(positions, values):
        array[position] = scalar_of(value, dtype)


def _op_scatter_reduce(it, op: Op, env: dict):
    array, positions, values = _scatter_lanes(it, op, env)
    dtype = op.operands[0].type.dtype
    rank = op.operands[0].type.rank
    identity = env[id(op.operands[2 + rank])]
    region = op.regions[0]
    _record(it, op, array, positions, "atomic")

    def combine(a, b):
        local = {id(region.args[0]): a, id(region.args[1]): b}
        return it.run_block(region, local)[0]

    values = [scalar_of(v, dtype) for v in values]
    if exact_combine(op):
        for position, value in zip(positions, values):
            array[position] = combine(scalar_of(array[position], dtype), value)
        return
    # The prescribed grouping: in-order folds per block, merged in block order.
    n = _count_lanes(op, env)
    block, blocks = privatized_blocks(n, array.size)
    lane_of = _active_lane_numbers(op, env)
    private = [dict() for _ in range(blocks)]
    for lane, position, value in zip(lane_of, positions, values):
        part = private[lane // block]
        part[position] = combine(part.get(position, identity), value)
    for position in np.ndindex(*array.shape):
        acc = scalar_of(array[position], dtype)
        for part in private:
            acc = combine(acc, part.get(position, identity))
        array[position] = acc


def _count_lanes(op: Op, env: dict) -> int:
    shape = _shape(op, env)
    return int(np.prod(shape)) if shape is not None else 1


def _active_lane_numbers(op: Op, env: dict) -> list[int]:
    shape = _shape(op, env)
    if not op.attrs.get("masked"):
        return list(range(int(np.prod(shape)) if shape is not None else 1))
    mask = env[id(op.operands[-1])]
    active = np.broadcast_to(np.asarray(mask), shape if shape is not None else ()).reshape(-1)
    return [int(k) for k in np.nonzero(active)[0]]


# ---- atomics -------------------------------------------------------------------------------------------------------------
def _op_atomic(it, op: Op, env: dict):
    t = op.operands[0]
    rank = t.type.rank
    array, position = element(it, op, env, t, op.operands[1:1 + rank])
    _record(it, op, array, [position], "atomic")
    dtype = t.type.dtype
    old = scalar_of(array[position], dtype)
    args = [env[id(v)] for v in op.operands[1 + rank:]]
    if op.name == "atomic_load":
        env[id(op.result)] = old
        return
    if op.name == "atomic_store":
        array[position] = args[0]
        return
    if op.name == "atomic_cas":
        expected, desired = args
        if _same_bits(old, expected, dtype):
            array[position] = desired
        env[id(op.result)] = old
        return
    kind = op.attrs["op"]
    value = args[0]
    if kind == "exchange":
        new = value
    elif dtype.is_float:
        new = float_binary(kind, dtype, old, value)
    else:
        new = int_binary(kind, dtype, old, value)
    array[position] = new
    env[id(op.result)] = old


def _same_bits(a, b, dtype) -> bool:
    """cmpxchg compares representations: floats by their bits (NaN == the same NaN, -0.0 != 0.0)."""
    if dtype.is_float:
        nd = numpy_dtype(dtype)
        return np.asarray(a, nd).tobytes() == np.asarray(b, nd).tobytes()
    return a == b


# ---- philox (N1) --------------------------------------------------------------------------------------------------------------

def philox4x32(key, counter):
    """Philox4x32-10 of a 2-word key and a 4-word counter: four u32 words. Works on Python
    ints or on NumPy uint32 arrays (elementwise)."""
    array = any(isinstance(w, np.ndarray) for w in list(key) + list(counter))
    if array:
        k0, k1 = (np.asarray(w, np.uint64) for w in key)
        c = [np.asarray(w, np.uint64) for w in counter]
        mask = np.uint64(0xFFFFFFFF)
        shift = np.uint64(32)
        m0, m1 = np.uint64(PHILOX_M[0]), np.uint64(PHILOX_M[1])
        w0, w1 = np.uint64(PHILOX_W[0]), np.uint64(PHILOX_W[1])
    else:
        k0, k1 = (int(w) for w in key)
        c = [int(w) for w in counter]
        mask, shift = 0xFFFFFFFF, 32
        m0, m1 = PHILOX_M
        w0, w1 = PHILOX_W
    for r in range(ROUNDS):
        if r:
            k0 = (k0 + w0) & mask
            k1 = (k1 + w1) & mask
        p0 = m0 * c[0]
        p1 = m1 * c[2]
        hi0, lo0 = p0 >> shift, p0 & mask
        hi1, lo1 = p1 >> shift, p1 & mask
        c = [hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0]
    if array:
        return [np.asarray(w, np.uint64).astype(np.uint32) for w in c]
    return c


def _op_philox(it, op: Op, env: dict):
    words = [env[id(v)] for v in op.operands]
    if any(isinstance(v.type, TensorType) for v in op.operands):
        shape = np.broadcast_shapes(*(np.shape(w) for w in words))
        words = [np.broadcast_to(np.asarray(w, np.uint32), shape) for w in words]
    out = philox4x32(words[:2], words[2:])
    for result, value in zip(op.results, out):
        env[id(result)] = value if isinstance(result.type, TensorType) else int(value)


# ---- the race sanitizer (P3, A3) -----------------------------------------------------------------------------------------
def _modes(it) -> set:
    value = getattr(it, "sanitize", None) or ""
    return set(value.split(",")) if value else set()


def _name(it, tensor) -> str:
    return it.names.get(id(tensor)) or tensor.hint or "tensor"


class _Tracker:
    """The elements touched by the points of one running ``parallel`` op."""

    def __init__(self, op: Op, names: list[str]):
        self.op = op
        self.names = names
        self.point: tuple = ()
        self.writes: dict = {}   # address -> (point, op, kind, tensor name, element)
        self.reads: dict = {}    # address -> [(point, op, name, element), ...] (two distinct points at most)
        self.keep: list = []     # arrays seen, so that no address is reused while this runs

    def where(self, point) -> str:
        return ", ".join(f"{n} = {v}" for n, v in zip(self.names, point))


def _address(array: np.ndarray, position) -> int:
    return array.__array_interface__["data"][0] + sum(int(i) * s for i, s in zip(position, array.strides))


def _line(it, op: Op) -> str:
    return f"line {op.span.line}" if op.span is not None else "an unknown line"


def _record(it, op: Op, array: np.ndarray, positions, kind: str, unique: bool = False) -> None:
    trackers = getattr(it, "race_trackers", None)
    if not trackers:
        return
    check_race = "race" in _modes(it)
    check_unique = unique and "unique" in _modes(it)
    name = _name(it, op.operands[0])
    for tracker in trackers:
        tracker.keep.append(array)
        point = tracker.point
        for position in positions:
            address = _address(array, position)
            element = f"{name}[{', '.join(str(int(i)) for i in position)}]"
            wrote = tracker.writes.get(address)
            if kind == "read":
                if wrote is not None and wrote[0] != point and check_race:
                    _race(it, tracker, wrote, (point, op, "reads", element))
                readers = tracker.reads.setdefault(address, [])
                if len(readers) < 2 and all(r[0] != point for r in readers):
                    readers.append((point, op, "reads", element))
                continue
            atomic = kind == "atomic"
            if wrote is not None and wrote[0] != point:
                if check_unique and wrote[2] == "unique":
                    raise UniqueViolation(
                        f"M4: a scatter asserted unique=True writes {element} from two points: "
                        f"({tracker.where(wrote[0])}) at {_line(it, wrote[1])} and ({tracker.where(point)}) at "
                        f"{_line(it, op)}")
                if check_race and not (atomic and wrote[2] == "atomic"):
                    _race(it, tracker, wrote, (point, op, "writes", element))
            if check_race:
                for reader in tracker.reads.get(address, ()):
                    if reader[0] != point:
                        _race(it, tracker, (reader[0], reader[1], "read", reader[3]), (point, op, "writes", element))
            if wrote is None or wrote[0] == point:
                tracker.writes[address] = (point, op, "atomic" if atomic else "unique" if unique else "write",
                                           element)


def _race(it, tracker: _Tracker, first, second) -> None:
    p1, op1, kind1, element = first
    p2, op2, what2, _ = second
    verb1 = {"atomic": "updates atomically", "unique": "writes", "write": "writes", "read": "reads",
             "reads": "reads"}.get(kind1, kind1)
    raise RaceError(f"P3: data race on {element}: point ({tracker.where(p1)}) {verb1} it at {_line(it, op1)} and "
                    f"point ({tracker.where(p2)}) {what2} it at {_line(it, op2)}; conflicting accesses from "
                    f"different points must be atomic (I.atomic_*) or a reduction (I.scatter_reduce)")


def _op_parallel(it, op: Op, env: dict):
    """``parallel`` with the race/unique sanitizer: the same points in the same order, with
    every element access recorded per point."""
    if not (_modes(it) & {"race", "unique"}):
        return PLAIN["parallel"](it, op, env)
    domains = [env[id(v)] for v in op.operands]
    lengths = [d.length for d in domains]
    body = op.regions[0]
    names = [a.hint or f"p{k}" for k, a in enumerate(body.args)]
    tracker = _Tracker(op, names)
    trackers = getattr(it, "race_trackers", None)
    if trackers is None:
        trackers = it.race_trackers = []
    trackers.append(tracker)
    try:
        for flat in it.order(math.prod(lengths)):
            rest, point = flat, [0] * len(domains)
            for axis in reversed(range(len(domains))):
                rest, ordinal = divmod(rest, lengths[axis])
                point[axis] = domains[axis].point(ordinal)
                env[id(body.args[axis])] = point[axis]
            tracker.point = tuple(point)
            it.run_block(body, env)
    finally:
        trackers.pop()


def _op_load(it, op: Op, env: dict):
    PLAIN["load"](it, op, env)
    if getattr(it, "race_trackers", None):
        array, position = element(it, op, env, op.operands[0], op.operands[1:])
        _record(it, op, array, [position], "read")


def _op_store(it, op: Op, env: dict):
    PLAIN["store"](it, op, env)
    if getattr(it, "race_trackers", None):
        array, position = element(it, op, env, op.operands[0], op.operands[1:-1])
        _record(it, op, array, [position], "write")


HANDLERS = {"gather": _op_gather, "scatter": _op_scatter, "scatter_reduce": _op_scatter_reduce,
            "atomic_rmw": _op_atomic, "atomic_cas": _op_atomic, "atomic_load": _op_atomic,
            "atomic_store": _op_atomic, "philox": _op_philox}
SANITIZED = {"parallel": _op_parallel, "load": _op_load, "store": _op_store}
