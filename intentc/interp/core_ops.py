"""The meaning of the core KIR ops: constants, arithmetic, casts, domains, relations of
tensors, loads and stores, control flow, calls, ``contract`` and ``histogram``.

Part of the reference interpreter (``intentc/interp/``; ``registry.py`` collects
``HANDLERS``). Every handler is ``handler(it, op, env)``: ``it`` the running
``Interpreter``, ``env`` the values by ``id``; a terminator returns its operands. The
scalar and elementwise arithmetic is ``numeric.py``.

Control
    ``if`` runs one region and yields its values; ``for`` visits a domain's points in
    order with loop carries; ``while`` runs its condition region, then its body, while
    the condition holds; ``parallel`` runs every point of the product of its domains
    exactly once (row-major by default; ``parallel_order`` picks another order, which a
    correct program cannot observe, P1); ``call`` interprets the helper.

Checks (``KernelError`` with the status codes of the C ABI, docs/abi.md)
    domain step <= 0 (-7, D1); element index outside ``[0, extent)`` of the tensor or
    tensor value accessed, and a subregion outside its source (-6, D5); ``assert_eq``
    and ``bcast_extent`` (-4, S1/S3); ``assert_true`` with its code. The argument checks
    of a call are in ``calling.py``.

Tensor values are evaluated eagerly where they are defined, in program order: a tensor
value (a view, reshape or permutation of a tensor the kernel writes included) is a
snapshot of what it read there. A parameter itself is a view of the caller's memory:
its loads see the kernel's earlier writes.
"""
from __future__ import annotations

import math

import numpy as np

from intentc.base import math_catalog
from intentc.base.status import E_BOUNDS, E_DOMAIN, E_SHAPE, KernelError
from intentc.interp.numeric import (MAX_LENGTH, Domain, binary, cast, compare, fused_multiply_add, int_to_float,
                                    numpy_dtype, scalar_of, unary, wrap)
from intentc.kir.contract_spec import parse_spec
from intentc.kir.core import Op, Value
from intentc.kir.types import DTYPES, INDEX, TensorType, element_dtype


def _is_tensor(value: Value) -> bool:
    return isinstance(value.type, TensorType)


def _op_const(it, op: Op, env: dict):
    plan = it.plans.get(id(op))
    if plan is None or plan[-1] is not op:
        dtype = op.results[0].type
        value = op.attrs["value"]
        if dtype.is_float:
            value = numpy_dtype(dtype).type(float(value))
        elif dtype.is_bool:
            value = bool(value)
        else:
            value = wrap(int(value), dtype)
        plan = it.plans[id(op)] = (id(op.results[0]), value, op)
    env[plan[0]] = plan[1]


def _operand_plan(it, op: Op) -> tuple:
    """(result id, operand ids, element dtype of the first operand, whether it is a tensor,
    the op), worked out once per op and call."""
    plan = it.plans.get(id(op))
    if plan is None or plan[-1] is not op:
        first = op.operands[0]
        plan = it.plans[id(op)] = (id(op.results[0]), [id(v) for v in op.operands], element_dtype(first.type),
                                   _is_tensor(first), op)
    return plan


def _op_binary(it, op: Op, env: dict):
    result, (a, b), dtype, tensor, _ = _operand_plan(it, op)
    env[result] = binary(op.name, dtype, env[a], env[b], tensor)


def _op_unary(it, op: Op, env: dict):
    result, (a,), dtype, tensor, _ = _operand_plan(it, op)
    env[result] = unary(op.name, dtype, env[a], tensor)


def _op_fma(it, op: Op, env: dict):
    result, (a, b, c), dtype, _, _ = _operand_plan(it, op)
    env[result] = fused_multiply_add(dtype, env[a], env[b], env[c])


def _op_cmp(it, op: Op, env: dict):
    result, (a, b), dtype, tensor, _ = _operand_plan(it, op)
    env[result] = compare(op.attrs["pred"], dtype, env[a], env[b], tensor)


def _op_select(it, op: Op, env: dict):
    c, a, b = (env[id(v)] for v in op.operands)
    if _is_tensor(op.result):
        env[id(op.result)] = np.where(c, a, b)
    else:
        env[id(op.result)] = a if c else b


def _op_cast(it, op: Op, env: dict):
    a = op.operands[0]
    env[id(op.result)] = cast(env[id(a)], element_dtype(a.type), element_dtype(op.result.type), _is_tensor(a))


def _op_domain(it, op: Op, env: dict):
    begin, end, step = (env[id(v)] for v in op.operands)
    if step <= 0:
        raise KernelError(E_DOMAIN, f"{it.kernel_name}: a domain step must be positive, got {step}{it.where(op)}")
    domain = Domain(begin, end, step)
    if domain.length > MAX_LENGTH:
        raise KernelError(E_DOMAIN, f"{it.kernel_name}: the domain [{begin}, {end}) by {step} has more than "
                                    f"2^63 - 1 members (D1){it.where(op)}")
    env[id(op.result)] = domain


def _op_dim(it, op: Op, env: dict):
    extent = env[id(op.operands[0])].shape[op.attrs["axis"]]
    env[id(op.result)] = int(extent) if op.name == "dim" else Domain(0, int(extent), 1)


def _op_dom_query(it, op: Op, env: dict):
    d = env[id(op.operands[0])]
    # An empty subregion's first member may lie past 2^63 - 1; read as an index it wraps, as
    # the compiled code computes it.
    env[id(op.result)] = {"dom_begin": wrap(d.begin, INDEX), "dom_end": d.end, "dom_step": d.step,
                          "dom_len": d.length}[op.name]


def _op_broadcast(it, op: Op, env: dict):
    """``result[i] = x[j]`` where source axis k sits on result axis ``map[k]`` and a source
    axis of extent 1 repeats (S2); a scalar fills the whole result."""
    source = env[id(op.operands[0])]
    shape = tuple(env[id(v)] for v in op.operands[1:])
    dtype = op.result.type.dtype
    if not _is_tensor(op.operands[0]):
        env[id(op.result)] = np.full(shape, source, dtype=numpy_dtype(dtype))
        return
    expanded = [1] * len(shape)
    for k, axis in enumerate(op.attrs["map"]):
        expanded[axis] = source.shape[k]
    env[id(op.result)] = _snapshot(it, np.broadcast_to(source.reshape(expanded), shape))


def _op_bcast_extent(it, op: Op, env: dict):
    """The broadcast of two extents (S2, S3): equal, or one of them 1 (0 with 1 gives 0)."""
    a, b = (env[id(v)] for v in op.operands)
    if not (a == b or a == 1 or b == 1):
        what = op.attrs.get("what", "extents")
        raise KernelError(E_SHAPE, f"{it.kernel_name}: incompatible broadcast ({what}): {a} and {b} are "
                                   f"neither equal nor 1{it.where(op)}")
    env[id(op.result)] = b if a == 1 else a


def _op_assert_eq(it, op: Op, env: dict):
    a, b = (env[id(v)] for v in op.operands)
    if a != b:
        what = op.attrs.get("what", "%lld != %lld").replace("%lld", "{}").format(a, b)
        raise KernelError(E_SHAPE, f"{it.kernel_name}: {what}{it.where(op)}")


def _op_assert_true(it, op: Op, env: dict):
    """Fail unless the condition holds; ``code`` says which status (bounds, domain, else shape)."""
    cond, *args = (env[id(v)] for v in op.operands)
    if not cond:
        code = {"bounds": E_BOUNDS, "domain": E_DOMAIN}.get(op.attrs.get("code"), E_SHAPE)
        what = op.attrs.get("what", "check failed").replace("%lld", "{}").format(*args)
        raise KernelError(code, f"{it.kernel_name}: {what}{it.where(op)}")


def _op_subregion(it, op: Op, env: dict):
    """``d[a:b]``: the members of ``d`` in ``[a, b)``, keeping their source coordinates (D4,
    D6); requires ``d.begin <= a <= b <= d.end``, never clamped (D5)."""
    d, a, b = (env[id(v)] for v in op.operands)
    if not d.begin <= a <= b <= d.end:
        raise KernelError(E_BOUNDS, f"{it.kernel_name}: subregion [{a}, {b}) is not within its source domain "
                                      f"[{d.begin}, {d.end}); bounds are never clamped (D5){it.where(op)}")
    first = d.begin + -((d.begin - a) // d.step) * d.step  # the first member at or after a
    env[id(op.result)] = Domain(first, b, d.step)


def _op_indices(it, op: Op, env: dict):
    """The domain's members (source coordinates, D6) as a 1-D index tensor."""
    d = env[id(op.operands[0])]
    env[id(op.result)] = np.array([d.point(k) for k in range(d.length)], dtype=np.int64)


def _snapshot(it, array: np.ndarray) -> np.ndarray:
    """A relation of a tensor the kernel writes, as a value: a copy, so that it keeps what
    it saw here (program order); relations of read-only tensors stay NumPy views."""
    if any(np.may_share_memory(array, written) for written in it.written):
        return array.copy()
    return array


def _op_view(it, op: Op, env: dict):
    """``x[r, a:b]``: a "fix" axis takes one index and is dropped, a "range" axis keeps
    ``[begin, end)`` counted from 0 (sema checked the bounds). Like every tensor value it
    is what ``x`` held here: later writes to ``x`` do not show through it."""
    source = env[id(op.operands[0])]
    values = iter(env[id(v)] for v in op.operands[1:])
    key = []
    for kind in op.attrs["axes"]:
        if kind == "fix":
            key.append(next(values))
        else:
            begin, end = next(values), next(values)
            key.append(slice(begin, end))
    env[id(op.result)] = _snapshot(it, source[tuple(key)])


def _op_reshape(it, op: Op, env: dict):
    """The same elements in logical row-major order with new extents (S4)."""
    source = env[id(op.operands[0])]
    env[id(op.result)] = _snapshot(it, np.reshape(source, tuple(env[id(v)] for v in op.operands[1:])))


def _op_permute(it, op: Op, env: dict):
    """Result axis k is source axis ``perm[k]`` (S5)."""
    env[id(op.result)] = _snapshot(it, np.transpose(env[id(op.operands[0])], op.attrs["perm"]))


def _op_join(it, op: Op, env: dict):
    """``result[..., 0] = a``, ``result[..., 1] = b`` (S6)."""
    a, b = (env[id(v)] for v in op.operands)
    env[id(op.result)] = np.stack([a, b], axis=-1)


def element(it, op: Op, env: dict, tensor: Value, indices: list[Value]) -> tuple:
    """The checked element position of an access (D5: out of range is an error, never clamped)."""
    array = env[id(tensor)]
    position = tuple(env[id(v)] for v in indices)
    for axis, (i, extent) in enumerate(zip(position, array.shape)):
        if not 0 <= i < extent:
            name = it.names.get(id(tensor)) or tensor.hint or "tensor"
            raise KernelError(E_BOUNDS, f"{it.kernel_name}: index {i} is out of range [0, {extent}) on axis "
                                          f"{axis} of '{name}'{it.where(op)}")
    return array, position


def _op_load(it, op: Op, env: dict):
    tensor = op.operands[0]
    array, position = element(it, op, env, tensor, op.operands[1:])
    env[id(op.result)] = scalar_of(array[position], tensor.type.dtype)


def _op_store(it, op: Op, env: dict):
    tensor = op.operands[0]
    array, position = element(it, op, env, tensor, op.operands[1:-1])
    array[position] = env[id(op.operands[-1])]


def _op_if(it, op: Op, env: dict):
    region = op.regions[0] if env[id(op.operands[0])] else op.regions[1]
    for result, value in zip(op.results, it.run_block(region, env)):
        env[id(result)] = value


def _op_for(it, op: Op, env: dict):
    """Ordered iteration (O2): the domain's points in increasing order, with carries."""
    domain = env[id(op.operands[0])]
    carries = [env[id(v)] for v in op.operands[1:]]
    body = op.regions[0]
    index, args = body.args[0], body.args[1:]
    for ordinal in range(domain.length):
        env[id(index)] = domain.point(ordinal)
        for arg, value in zip(args, carries):
            env[id(arg)] = value
        carries = it.run_block(body, env)
    for result, value in zip(op.results, carries):
        env[id(result)] = value


def _op_while(it, op: Op, env: dict):
    """The condition region sees the carries; while it yields True the body runs."""
    carries = [env[id(v)] for v in op.operands]
    cond, body = op.regions
    while True:
        for arg, value in zip(cond.args, carries):
            env[id(arg)] = value
        (go,) = it.run_block(cond, env)
        if not go:
            break
        for arg, value in zip(body.args, carries):
            env[id(arg)] = value
        carries = it.run_block(body, env)
    for result, value in zip(op.results, carries):
        env[id(result)] = value


def _op_parallel(it, op: Op, env: dict):
    """Every point of the product of the domains runs exactly once (P1); no carries (P2).
    The order is row-major unless the interpreter was asked for another one."""
    domains = [env[id(v)] for v in op.operands]
    lengths = [d.length for d in domains]
    count = math.prod(lengths)
    body = op.regions[0]
    for flat in it.order(count):
        rest = flat
        for axis in reversed(range(len(domains))):
            rest, ordinal = divmod(rest, lengths[axis])
            env[id(body.args[axis])] = domains[axis].point(ordinal)
        it.run_block(body, env)


def _op_call(it, op: Op, env: dict):
    callee = it.functions[op.attrs["callee"]]
    results = it.run_function(callee, [env[id(v)] for v in op.operands])
    for result, value in zip(op.results, results):
        env[id(result)] = value


def _op_contract(it, op: Op, env: dict):
    """``contract`` (T3): ``result[out] = sum over the reduction axes of acc(a) * acc(b)``.

    Both operands convert to the accumulator dtype (exactly: it is at least as wide), and
    the sum starts at 0 and adds one reduction point at a time in k order (row-major over
    the reduction letters in the first operand's order), rounding each product and each
    sum to the accumulator (integers wrap). Batch and free axes follow the spec. The
    compiled code may fuse each multiply-add and regroup the sum, which T3/T7 grant, so
    float results may differ from this order by rounding; integer results never differ."""
    spec = parse_spec(op.attrs["spec"])
    acc = DTYPES[op.attrs["acc"]]
    nd = numpy_dtype(acc)
    a, b = (np.asarray(env[id(v)]) for v in op.operands)
    extent = dict(zip(spec.b, b.shape))
    extent.update(zip(spec.a, a.shape))
    reduced = list(spec.reduced)

    def aligned(x: np.ndarray, letters: str) -> np.ndarray:
        """x with the result's axes (extent 1 where x lacks one), then the reduction axes."""
        kept = [c for c in spec.out if c in letters]
        y = np.transpose(x, [letters.index(c) for c in kept + reduced])
        shape = [extent[c] if c in letters else 1 for c in spec.out] + [extent[c] for c in reduced]
        return y.reshape(shape).astype(nd)

    xa, xb = aligned(a, spec.a), aligned(b, spec.b)
    shape = tuple(extent[c] for c in spec.out)
    total = np.zeros(shape + (1,), nd)  # a trailing unit axis keeps scalars arrays
    with np.errstate(all="ignore"):
        for point in np.ndindex(*(extent[c] for c in reduced)):
            index = (Ellipsis,) + point + (None,)
            total = np.add(total, np.multiply(xa[index], xb[index], dtype=nd), dtype=nd)
    total = total[..., 0]
    env[id(op.result)] = total if spec.out else scalar_of(total[()], acc)


def _op_histogram(it, op: Op, env: dict):
    """``histogram`` (T6): one count (``i64``), or one sum of weights, per bin of ``[0, n)``.

    Float values (``range`` form), in the binning dtype (the values' dtype; f32 for f16):
    ``v`` counts when ``lo <= v <= hi`` (NaN never does), in bin
    ``min(floor((v - lo) * s), n - 1)`` with ``s = n / (hi - lo)`` computed once, each
    operation rounded to the binning dtype; so ``hi`` itself is in the last bin, as in
    NumPy. Integer values are bin indices: ``v`` counts in bin ``v`` when ``0 <= v < n``
    (as an index: 64-bit, so u64 values above 2**63 are out of range). Weights (the
    values' shape) add in row-major element order in their dtype (integers wrap); the
    compiled code may regroup each bin's sum, which T6 grants like a sum."""
    ranged, weighted = op.attrs["range"], op.attrs["weighted"]
    values = np.asarray(env[id(op.operands[0])]).reshape(-1)
    n = env[id(op.operands[1])]
    with np.errstate(all="ignore"):
        if ranged:
            binning = op.operands[2].type
            nd = numpy_dtype(binning)
            lo, hi = (nd.type(env[id(v)]) for v in op.operands[2:4])
            v = values.astype(nd)
            scale = np.divide(int_to_float(n, binning), np.subtract(hi, lo, dtype=nd), dtype=nd)
            valid = (v >= lo) & (v <= hi)
            t = np.multiply(np.subtract(v[valid], lo, dtype=nd), scale, dtype=nd)
            t = t.astype(np.float64)  # as the compiled code converts: NaN -> 0, saturating
            t[np.isnan(t)] = 0.0
            bins = np.floor(np.minimum(t, n - 1)).astype(np.int64)
        else:
            v = values.astype(np.int64)  # as index values: u64 wraps to negative
            valid = (v >= 0) & (v < n)
            bins = v[valid]
    if not weighted:
        env[id(op.result)] = np.bincount(bins, minlength=n).astype(np.int64)
        return
    weights = np.asarray(env[id(op.operands[-1])]).reshape(-1)[valid]
    total = np.zeros(n, weights.dtype)
    with np.errstate(all="ignore"):
        np.add.at(total, bins, weights)  # unbuffered: element by element, in order
    env[id(op.result)] = total


class AbsentTensor(np.ndarray):
    """What an absent optional tensor parameter is bound to: an empty array of its rank and
    dtype (its extents are never checked, optional_params.py), recognised by ``present``."""


def _op_present(it, op: Op, env: dict):
    env[id(op.result)] = not isinstance(env[id(op.operands[0])], AbsentTensor)


def _op_terminator(it, op: Op, env: dict):
    return [env[id(v)] for v in op.operands]


HANDLERS = {
    "const": _op_const, "cmp": _op_cmp, "select": _op_select, "cast": _op_cast,
    "domain": _op_domain, "dim": _op_dim, "axis": _op_dim, "broadcast": _op_broadcast,
    "bcast_extent": _op_bcast_extent, "assert_eq": _op_assert_eq, "assert_true": _op_assert_true,
    "subregion": _op_subregion, "indices": _op_indices, "view": _op_view, "reshape": _op_reshape,
    "permute": _op_permute, "join": _op_join, "load": _op_load, "store": _op_store,
    "if": _op_if, "for": _op_for, "while": _op_while, "parallel": _op_parallel, "call": _op_call,
    "yield": _op_terminator, "condition": _op_terminator, "return": _op_terminator, "present": _op_present,
}
for _name in ("add", "sub", "mul", "div", "floordiv", "mod", "pow", "min", "max", "and", "or", "xor", "shl", "shr",
              *math_catalog.NEW_BINARY):
    HANDLERS[_name] = _op_binary
for _name in ("neg", "not", "abs", "exp", "log", "sqrt", "tanh", *math_catalog.UNARY):
    HANDLERS[_name] = _op_unary
for _name in ("dom_begin", "dom_end", "dom_step", "dom_len"):
    HANDLERS[_name] = _op_dom_query
HANDLERS["fma"] = _op_fma
HANDLERS["contract"] = _op_contract
HANDLERS["histogram"] = _op_histogram
