"""The meaning of the structured KIR ops: reduce, scan, fold, buffer, region_fold, region_scan.

Part of the reference interpreter (``intentc/interp/``; ``registry.py`` collects
``HANDLERS``). Each op is defined by the most direct evaluation of its contract:

- ``reduce`` folds each output position's reduced elements in row-major order with its
  combine region, starting from the identity (any other order is equal when the combine
  is associative and commutative, T1);
- ``scan`` combines left to right along its axis (right to left with ``reverse``),
  starting from ``init`` when given (else the identity), and writes the running value
  after (inclusive) or before (exclusive) each member (T2);
- ``region_fold`` is ``combine(identity, summarize(whole axis))`` and ``region_scan``
  outputs ``emit(whole axis, init)`` with final state ``apply(summarize(whole), init)``:
  one segment, which every lawful segmentation equals (R2, R6, R8).

With ``sanitize="laws"`` the region ops are also evaluated under several random
segmentations (empty and one-member slices included) and each law is checked; a
violation raises ``LawViolation`` naming the law, the helpers, the slices and the values.
Floats compare with a tolerance of 1e-4 (f16: 1e-2; ``intentc/base/laws.py``) relative to the
largest magnitude among the law's values (at least 1): laws hold only up to rounding.
"""
from __future__ import annotations

import math
import random

import numpy as np

from intentc.base.laws import law_tolerance
from intentc.base.status import E_ALLOC, E_SHAPE, KernelError
from intentc.interp.numeric import numpy_dtype, scalar_of
from intentc.kir.core import Op
from intentc.kir.types import TensorType


class LawViolation(Exception):
    """A region helper breaks one of the laws its operation declares (R2, R6)."""


def _element(array, position, dtype):
    return scalar_of(array[position], dtype)


def _combine(it, region, accs, items):
    env = {}
    for arg, value in zip(region.args, list(accs) + list(items)):
        env[id(arg)] = value
    return it.run_block(region, env)


def _op_reduce(it, op: Op, env: dict):
    k = op.attrs["arity"]
    arrays = [env[id(v)] for v in op.operands[:k]]
    ids = [env[id(v)] for v in op.operands[k:]]
    dtypes = [v.type.dtype for v in op.operands[:k]]
    axes, keepdims = op.attrs["axes"], op.attrs["keepdims"]
    shape = arrays[0].shape
    kept = [a for a in range(len(shape)) if a not in axes]
    reduced_shape = [shape[a] for a in axes]
    out_shape = tuple(shape[a] for a in kept)
    results = [np.empty(out_shape, dtype=numpy_dtype(t)) for t in dtypes]
    for out_pos in np.ndindex(*out_shape):
        accs = list(ids)
        for red_pos in np.ndindex(*reduced_shape):
            position = [0] * len(shape)
            for a, i in zip(kept, out_pos):
                position[a] = i
            for a, i in zip(axes, red_pos):
                position[a] = i
            items = [_element(arr, tuple(position), t) for arr, t in zip(arrays, dtypes)]
            accs = _combine(it, op.regions[0], accs, items)
        for res, acc in zip(results, accs):
            res[out_pos] = acc
    for result, value in zip(op.results, results):
        if isinstance(result.type, TensorType):
            if keepdims:
                value = value.reshape(tuple(1 if a in axes else shape[a] for a in range(len(shape))))
            env[id(result)] = value
        else:
            env[id(result)] = _element(value, (), result.type)


def _op_scan(it, op: Op, env: dict):
    k = op.attrs["arity"]
    arrays = [env[id(v)] for v in op.operands[:k]]
    ids = [env[id(v)] for v in op.operands[2 * k:]] if op.attrs.get("has_init") else \
        [env[id(v)] for v in op.operands[k:2 * k]]
    dtypes = [v.type.dtype for v in op.operands[:k]]
    axis, exclusive, reverse = op.attrs["axis"], op.attrs["exclusive"], op.attrs["reverse"]
    shape = arrays[0].shape
    results = [np.empty(shape, dtype=arr.dtype) for arr in arrays]
    other = [a for a in range(len(shape)) if a != axis]
    for outer in np.ndindex(*[shape[a] for a in other]):
        accs = list(ids)
        steps = range(shape[axis] - 1, -1, -1) if reverse else range(shape[axis])
        for i in steps:
            position = [0] * len(shape)
            for a, j in zip(other, outer):
                position[a] = j
            position[axis] = i
            position = tuple(position)
            items = [_element(arr, position, t) for arr, t in zip(arrays, dtypes)]
            new = _combine(it, op.regions[0], accs, items)
            for res, value in zip(results, accs if exclusive else new):
                res[position] = value
            accs = new
    for result, value in zip(op.results, results):
        env[id(result)] = value


def _op_fold(it, op: Op, env: dict):
    count = env[id(op.operands[0])]
    accs = [env[id(v)] for v in op.operands[1:]]
    element, combine = op.regions
    for t in range(count):
        env[id(element.args[0])] = t
        items = it.run_block(element, env)
        accs = _combine(it, combine, accs, items)
    for result, value in zip(op.results, accs):
        env[id(result)] = value


def _op_buffer(it, op: Op, env: dict):
    shape = tuple(int(env[id(v)]) for v in op.operands)
    dtype = numpy_dtype(op.result.type.dtype)
    size = 0 if 0 in shape else math.prod(shape) * dtype.itemsize
    if size > (1 << 63) - 1:  # as the compiled allocation refuses it
        raise KernelError(E_SHAPE, f"{it.kernel_name}: the buffer '{op.result.hint or 'buf'}' has more bytes than "
                                   f"64 bits can count")
    try:
        env[id(op.result)] = np.zeros(shape, dtype=dtype)
    except MemoryError:
        raise KernelError(E_ALLOC, f"{it.kernel_name}: out of memory for a buffer of {size} bytes") from None


# -- region operations -----------------------------------------------------------------------------
def _helper_runner(it, outer: dict):
    """``run(region, args)``: a helper region evaluated on ``args``. Its captures are values
    of the enclosing scope (``outer``), which it reads but never changes."""
    def run(region, args):
        env = dict(outer)
        env.update((id(a), v) for a, v in zip(region.args, args))
        return it.run_block(region, env)
    return run


def _callee(region) -> str:
    calls = [o.attrs["callee"] for o in region.ops if o.name == "call"]
    return calls[0] if calls else "(builtin)"


def _slices(comps, start, stop):
    return [c[start:stop] for c in comps]


def _magnitude(values) -> float:
    scale = 1.0
    for value in values:
        arr = np.asarray(value)
        if arr.dtype.kind == "f" and arr.size:
            finite = np.abs(arr[np.isfinite(arr)].astype(np.float64))
            if finite.size:
                scale = max(scale, float(finite.max()))
    return scale


def _close(a, b, scale: float) -> bool:
    a_arr, b_arr = np.asarray(a), np.asarray(b)
    if a_arr.shape != b_arr.shape:
        return False
    if a_arr.dtype.kind == "f" or b_arr.dtype.kind == "f":
        tol = law_tolerance("f16" if a_arr.dtype == np.float16 else "f32")
        a64, b64 = a_arr.astype(np.float64), b_arr.astype(np.float64)
        both_nan = np.isnan(a64) & np.isnan(b64)
        same = a64 == b64  # equal infinities included
        finite = np.isfinite(a64) & np.isfinite(b64)
        with np.errstate(invalid="ignore"):
            near = finite & (np.abs(a64 - b64) <= tol * scale)
        return bool(np.all(both_nan | same | near))
    return bool(np.array_equal(a_arr, b_arr))


def _same(xs, ys, context=()) -> bool:
    """The two sides of a law agree; ``context``: the other values of the law's instance."""
    scale = _magnitude(list(xs) + list(ys) + list(context))
    return len(xs) == len(ys) and all(_close(x, y, scale) for x, y in zip(xs, ys))


def _show(values) -> str:
    return "(" + ", ".join(np.array2string(np.asarray(v), precision=6, threshold=8) for v in values) + ")"


def _segmentations(n: int, rng: random.Random, trials: int = 6):
    yield [0, n]
    for _ in range(trials):
        cuts = sorted(rng.randint(0, n) for _ in range(rng.randint(1, 5)))
        yield [0] + cuts + [n]  # repeated cuts give empty slices; adjacent cuts one-member slices
    yield list(range(n + 1))  # every member on its own


def _check_fold_laws(it, op: Op, comps, ids, n: int, run):
    summarize, combine = op.regions[0], op.regions[1]
    names = f"summarize '{_callee(summarize)}', combine '{_callee(combine)}'"
    whole = run(summarize, _slices(comps, 0, n))
    both_ids = run(combine, list(ids) + list(ids))  # a segmentation may meet two empty segments
    if not _same(both_ids, list(ids)):
        raise LawViolation(f"R2 identity law fails for {names}: combine(identity, identity) = {_show(both_ids)} "
                           f"but identity = {_show(ids)}")
    for label, got in (("combine(identity, x)", run(combine, list(ids) + whole)),
                       ("combine(x, identity)", run(combine, whole + list(ids)))):
        if not _same(got, whole):
            raise LawViolation(f"R2 identity law fails for {names}: {label} = {_show(got)} but x = {_show(whole)}")
    rng = random.Random(it.seed)
    for cuts in _segmentations(n, rng):
        for a, b, c in zip(cuts, cuts[1:], cuts[2:]):
            joined = run(summarize, _slices(comps, a, c))
            sa, sb = run(summarize, _slices(comps, a, b)), run(summarize, _slices(comps, b, c))
            parts = run(combine, sa + sb)
            if not _same(joined, parts, sa + sb):
                raise LawViolation(
                    f"R2 homomorphism fails for {names}: summarize(A ++ B) = {_show(joined)} but "
                    f"combine(summarize(A), summarize(B)) = {_show(parts)} with A = [{a}, {b}), B = [{b}, {c})")
    return whole


def _op_region_fold(it, op: Op, env: dict):
    n_comp = op.attrs["ncomp"]
    comps = [env[id(v)] for v in op.operands[1:1 + n_comp]]
    ids = [env[id(v)] for v in op.operands[1 + n_comp:]]
    n = env[id(op.operands[0])].length
    run = _helper_runner(it, env)
    if getattr(it, "sanitize", None) == "laws":
        _check_fold_laws(it, op, comps, ids, n, run)
    whole = run(op.regions[0], _slices(comps, 0, n))
    for result, value in zip(op.results, run(op.regions[1], list(ids) + whole)):
        env[id(result)] = value


def _op_region_scan(it, op: Op, env: dict):
    n_comp, m = op.attrs["ncomp"], op.attrs["nsummary"]
    comps = [env[id(v)] for v in op.operands[1:1 + n_comp]]
    ids = [env[id(v)] for v in op.operands[1 + n_comp:1 + n_comp + m]]
    init = [env[id(v)] for v in op.operands[1 + n_comp + m:]]
    n = env[id(op.operands[0])].length
    summarize, combine, apply, emit = op.regions
    run = _helper_runner(it, env)
    if getattr(it, "sanitize", None) == "laws":
        _check_scan_laws(it, op, comps, ids, init, n, run)
    outputs = run(emit, _slices(comps, 0, n) + init)
    final = run(apply, run(summarize, _slices(comps, 0, n)) + init)
    for result, value in zip(op.results, [np.array(o) for o in outputs] + list(final)):
        env[id(result)] = value


def _check_scan_laws(it, op: Op, comps, ids, init, n: int, run):
    whole = _check_fold_laws(it, op, comps, ids, n, run)
    summarize, combine, apply, emit = op.regions
    names = f"apply '{_callee(apply)}', emit '{_callee(emit)}'"
    got = run(apply, list(ids) + init)
    if not _same(got, init):
        raise LawViolation(f"R6 identity action fails for {names}: apply(identity, s) = {_show(got)} "
                           f"but s = {_show(init)}")
    rng = random.Random(it.seed + 1)
    for cuts in _segmentations(n, rng):
        for a, b, c in zip(cuts, cuts[1:], cuts[2:]):
            sa = run(summarize, _slices(comps, a, b))
            sb = run(summarize, _slices(comps, b, c))
            combined, after_a = run(combine, sa + sb), run(apply, sa + init)
            both = run(apply, combined + init)
            stepwise = run(apply, sb + after_a)
            if not _same(both, stepwise, sa + sb + combined + init + after_a):
                raise LawViolation(f"R6 action law fails for {names}: apply(combine(a, b), s) = {_show(both)} but "
                                   f"apply(b, apply(a, s)) = {_show(stepwise)} with a = [{a}, {b}), b = [{b}, {c})")
            joined = run(emit, _slices(comps, a, c) + init)
            first = run(emit, _slices(comps, a, b) + init)
            second = run(emit, _slices(comps, b, c) + after_a)
            concat = [np.concatenate([np.asarray(x), np.asarray(y)]) for x, y in zip(first, second)]
            if not _same(joined, concat, init + after_a):
                raise LawViolation(f"R6 emit law fails for {names}: emit(A ++ B, s) = {_show(joined)} but "
                                   f"concat(emit(A, s), emit(B, apply(summarize(A), s))) = {_show(concat)} "
                                   f"with A = [{a}, {b}), B = [{b}, {c})")
    del whole


HANDLERS = {"reduce": _op_reduce, "scan": _op_scan, "fold": _op_fold, "buffer": _op_buffer,
            "region_fold": _op_region_fold, "region_scan": _op_region_scan}
