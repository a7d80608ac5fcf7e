"""What each KIR op means: families, operand/result rules, effects and local verification.

Every op name is registered here once. Effects are queries on the IR (P3, R4, M4):

- ``pure``       no effect; may be reordered, duplicated or removed when unused;
- ``check``      may fail at run time with an error (bounds D5, shapes S1/S3, domains D1);
- ``read``       reads the tensor operand ``operand`` (an external view: M2);
- ``write``      writes the tensor operand ``operand``;
- ``control``    structured control whose effects are those of its regions.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from intentc.kir.core import Op
from intentc.kir.types import BOOL, DOMAIN, DTYPES, INDEX, DType, TensorType, element_dtype


class VerifyError(Exception):
    pass


@dataclass(frozen=True)
class Effect:
    kind: str  # pure | check | read | write | control
    operand: int | None = None


@dataclass(frozen=True)
class OpDef:
    name: str
    family: str
    effects: tuple[Effect, ...]
    verify: Callable[[Op], None]
    regions: int = 0
    terminator: bool = False


REGISTRY: dict[str, OpDef] = {}

PURE = (Effect("pure"),)
CHECK = (Effect("check"),)
CONTROL = (Effect("control"),)


def _register(name, family, effects, verify, regions=0, terminator=False):
    REGISTRY[name] = OpDef(name, family, tuple(effects), verify, regions, terminator)


def _need(cond: bool, op: Op, message: str) -> None:
    if not cond:
        raise VerifyError(f"'{op.name}': {message}")


def _arity(op: Op, operands: int, results: int) -> None:
    _need(len(op.operands) == operands, op, f"expects {operands} operands, has {len(op.operands)}")
    _need(len(op.results) == results, op, f"expects {results} results, has {len(op.results)}")


# ---- core: constants, arithmetic, comparisons, casts ------------------------------
BINARY_OPS = ("add", "sub", "mul", "div", "floordiv", "mod", "pow", "min", "max", "and", "or", "xor", "shl", "shr")
UNARY_OPS = ("neg", "not", "abs", "exp", "log", "tanh", "sqrt")
FLOAT_ONLY = {"div", "exp", "log", "tanh", "sqrt"}
INT_OR_BOOL_ONLY = {"and", "or", "xor", "not"}
INT_ONLY = {"shl", "shr"}
CMP_PREDICATES = ("lt", "le", "gt", "ge", "eq", "ne")


def _verify_const(op: Op) -> None:
    _arity(op, 0, 1)
    _need(isinstance(op.result.type, DType), op, "result must be a scalar")
    _need("value" in op.attrs, op, "needs a 'value' attribute")


def _check_dtype_class(op: Op, dtype: DType) -> None:
    if op.name in FLOAT_ONLY:
        _need(dtype.is_float, op, f"needs a float dtype, got {dtype}")
    if op.name in INT_OR_BOOL_ONLY:
        _need(dtype.is_int or dtype.is_bool, op, f"needs an integer or bool dtype, got {dtype}")
    if op.name in INT_ONLY:
        _need(dtype.is_int, op, f"needs an integer dtype, got {dtype}")


def _verify_binary(op: Op) -> None:
    _arity(op, 2, 1)
    a, b = op.operands
    _need(a.type == b.type, op, f"operand types differ: {a.type} and {b.type}")
    _need(op.result.type == a.type, op, "result type must equal the operand type")
    _check_dtype_class(op, element_dtype(a.type))


def _verify_unary(op: Op) -> None:
    _arity(op, 1, 1)
    _need(op.result.type == op.operands[0].type, op, "result type must equal the operand type")
    _check_dtype_class(op, element_dtype(op.operands[0].type))


def _shaped_like(type_, dtype: DType):
    return TensorType(dtype, type_.shape) if isinstance(type_, TensorType) else dtype


def _verify_cmp(op: Op) -> None:
    _arity(op, 2, 1)
    a, b = op.operands
    _need(a.type == b.type, op, f"operand types differ: {a.type} and {b.type}")
    _need(op.attrs.get("pred") in CMP_PREDICATES, op, f"unknown predicate {op.attrs.get('pred')!r}")
    _need(op.result.type == _shaped_like(a.type, BOOL), op, "result must be bool-shaped like the operands")


def _verify_select(op: Op) -> None:
    _arity(op, 3, 1)
    cond, a, b = op.operands
    _need(a.type == b.type == op.result.type, op, "both choices and the result need one type")
    _need(cond.type == _shaped_like(a.type, BOOL), op, "the condition must be bool-shaped like the choices")


def _verify_cast(op: Op) -> None:
    _arity(op, 1, 1)
    src = op.operands[0].type
    _need(op.result.type == _shaped_like(src, element_dtype(op.result.type)), op,
          "a cast changes only the dtype")


for _name in BINARY_OPS:
    _register(_name, "core", PURE, _verify_binary)
for _name in UNARY_OPS:
    _register(_name, "core", PURE, _verify_unary)
_register("const", "core", PURE, _verify_const)
_register("cmp", "core", PURE, _verify_cmp)
_register("select", "core", PURE, _verify_select)
_register("cast", "core", PURE, _verify_cast)


# ---- relations: domains, extents, broadcasts ------------------------------------------
def _verify_domain(op: Op) -> None:
    _arity(op, 3, 1)
    _need(all(v.type == INDEX for v in op.operands), op, "begin, end and step must be index")
    _need(op.result.type == DOMAIN, op, "result must be a domain")


def _verify_dim(op: Op) -> None:
    _arity(op, 1, 1)
    t = op.operands[0].type
    _need(isinstance(t, TensorType), op, "operand must be a tensor")
    _need(0 <= op.attrs.get("axis", -1) < t.rank, op, "axis out of range")
    _need(op.result.type == (INDEX if op.name == "dim" else DOMAIN), op, "wrong result type")


def _verify_domain_query(op: Op) -> None:
    _arity(op, 1, 1)
    _need(op.operands[0].type == DOMAIN and op.result.type == INDEX, op, "maps a domain to an index")


def _verify_broadcast(op: Op) -> None:
    """broadcast(x, e0..e{r-1}) {map}: result[i] = x[j] where source axis k aligns to result
    axis map[k]; a source axis of extent 1 repeats (S2). Scalars broadcast with an empty map."""
    src = op.operands[0].type
    res = op.result.type
    _need(isinstance(res, TensorType), op, "result must be a tensor")
    _need(len(op.operands) == 1 + res.rank, op, "needs one extent operand per result axis")
    _need(all(v.type == INDEX for v in op.operands[1:]), op, "extents must be index")
    mapping = op.attrs.get("map", [])
    src_rank = src.rank if isinstance(src, TensorType) else 0
    _need(len(mapping) == src_rank, op, "map needs one entry per source axis")
    _need(all(0 <= m < res.rank for m in mapping) and list(mapping) == sorted(set(mapping)), op,
          "map must be increasing result axes")
    _need(element_dtype(src) == res.dtype, op, "broadcast keeps the dtype")


def _verify_subregion(op: Op) -> None:
    """subregion(d, a, b): the members of d in [a, b); requires d.begin <= a <= b <= d.end (D4, D5)."""
    _arity(op, 3, 1)
    _need(op.operands[0].type == DOMAIN, op, "the source must be a domain")
    _need(op.operands[1].type == INDEX and op.operands[2].type == INDEX, op, "bounds must be index")
    _need(op.result.type == DOMAIN, op, "result must be a domain")


def _verify_indices(op: Op) -> None:
    """indices(d): the 1-D index tensor of d's source coordinates, in order (C1, D6)."""
    _arity(op, 1, 1)
    _need(op.operands[0].type == DOMAIN, op, "operand must be a domain")
    res = op.result.type
    _need(isinstance(res, TensorType) and res.dtype == INDEX and res.rank == 1, op, "result is index[len]")


def _verify_reshape(op: Op) -> None:
    """reshape(x, e0..ek): the same elements in logical row-major order with new extents (S4)."""
    src, res = op.operands[0].type, op.result.type
    _need(isinstance(src, TensorType) and isinstance(res, TensorType), op, "maps a tensor to a tensor")
    _need(src.dtype == res.dtype, op, "reshape never changes the dtype (S4)")
    _need(len(op.operands) == 1 + res.rank and all(v.type == INDEX for v in op.operands[1:]), op,
          "needs one index extent per result axis")


def _verify_permute(op: Op) -> None:
    """permute(x) {perm}: result axis k is source axis perm[k] (S5)."""
    _arity(op, 1, 1)
    src, res = op.operands[0].type, op.result.type
    perm = op.attrs.get("perm", [])
    _need(isinstance(src, TensorType) and sorted(perm) == list(range(src.rank)), op, "perm is a permutation")
    _need(res == TensorType(src.dtype, tuple(src.shape[p] for p in perm)), op, "result shape follows perm")


def _verify_join(op: Op) -> None:
    """join(a, b): shape(a) + [2]; result[..., 0] = a, result[..., 1] = b (S6)."""
    _arity(op, 2, 1)
    a, b = (v.type for v in op.operands)
    _need(isinstance(a, TensorType) and isinstance(b, TensorType) and a.dtype == b.dtype and a.rank == b.rank, op,
          "joins two tensors of one dtype and rank")
    _need(op.result.type.rank == a.rank + 1 and op.result.type.shape[-1] == 2, op, "adds a trailing axis of 2")


def _verify_view(op: Op) -> None:
    """view(x, ...) {axes}: per source axis either "fix" (one index, axis dropped) or
    "range" (begin and end, axis kept and counted from 0); checked like a subregion (D5)."""
    src = op.operands[0].type
    axes = op.attrs.get("axes", [])
    _need(isinstance(src, TensorType) and len(axes) == src.rank, op, "one entry of axes per source axis")
    _need(len(op.operands) == 1 + sum(1 if a == "fix" else 2 for a in axes), op, "operands follow axes")
    _need(op.result.type.rank == sum(1 for a in axes if a == "range"), op, "ranges are kept, fixes dropped")


def _verify_bcast_extent(op: Op) -> None:
    _arity(op, 2, 1)
    _need(all(v.type == INDEX for v in op.operands) and op.result.type == INDEX, op, "index operands")


def _verify_assert_true(op: Op) -> None:
    """assert_true(cond, args...) {what}: fail unless cond; ``what`` formats the args (printf:
    ``%lld``/``%llu`` for index values, ``%g`` and the like for f64 ones)."""
    _need(op.operands and op.operands[0].type == BOOL and not op.results, op, "checks a bool")
    _need(all(v.type in (INDEX, DTYPES["f64"]) for v in op.operands[1:]), op,
          "message arguments are index or f64 values")


def _verify_assert_eq(op: Op) -> None:
    _arity(op, 2, 0)
    _need(op.operands[0].type == op.operands[1].type == INDEX, op, "compares two index values")


_register("domain", "relation", CHECK, _verify_domain)
_register("dim", "relation", PURE, _verify_dim)
_register("subregion", "relation", CHECK, _verify_subregion)
_register("indices", "relation", PURE, _verify_indices)
_register("reshape", "relation", PURE, _verify_reshape)
_register("permute", "relation", PURE, _verify_permute)
_register("join", "relation", PURE, _verify_join)
_register("view", "relation", PURE, _verify_view)  # sema emits its bounds checks as assert_true
_register("axis", "relation", PURE, _verify_dim)
for _name in ("dom_begin", "dom_end", "dom_step", "dom_len"):
    _register(_name, "relation", PURE, _verify_domain_query)
_register("broadcast", "relation", PURE, _verify_broadcast)  # bcast_extent holds the check
_register("bcast_extent", "relation", CHECK, _verify_bcast_extent)
_register("assert_eq", "relation", CHECK, _verify_assert_eq)
_register("assert_true", "relation", CHECK, _verify_assert_true)


# ---- memory: element loads and stores ---------------------------------------------------
def _verify_load(op: Op) -> None:
    t = op.operands[0].type
    _need(isinstance(t, TensorType), op, "first operand must be a tensor")
    _need(len(op.operands) == 1 + t.rank, op, f"needs {t.rank} indices")
    _need(all(v.type == INDEX for v in op.operands[1:]), op, "indices must be index")
    _need(len(op.results) == 1 and op.result.type == t.dtype, op, "yields one element")


def _verify_store(op: Op) -> None:
    t = op.operands[0].type
    _need(isinstance(t, TensorType), op, "first operand must be a tensor")
    _need(len(op.operands) == 2 + t.rank, op, f"needs {t.rank} indices and a value")
    _need(all(v.type == INDEX for v in op.operands[1:-1]), op, "indices must be index")
    _need(op.operands[-1].type == t.dtype, op, "value must have the tensor's dtype")
    _need(not op.results, op, "has no results")


_register("load", "memory", (Effect("read", 0), Effect("check")), _verify_load)
_register("store", "memory", (Effect("write", 0), Effect("check")), _verify_store)


# ---- structured: reduce, scan, fold (T1, T2) and logical buffers -----------------------------
def _verify_combine(op: Op, region_index: int, types: list) -> None:
    combine = op.regions[region_index]
    _need([a.type for a in combine.args] == types + types, op, "combine takes (acc..., item...) of the acc types")
    _need(_yield_types(op, combine) == types, op, "combine yields the acc types")


def _verify_reduce(op: Op) -> None:
    """reduce(x0..xk-1, id0..idk-1) {axes, keepdims} [combine]: folds the axes with a typed
    pure combine declared associative and commutative (T1)."""
    k = op.attrs.get("arity", 0)
    _need(k >= 1 and len(op.operands) == 2 * k and len(op.results) == k, op, "k inputs, k identities, k results")
    inputs, ids = op.operands[:k], op.operands[k:]
    _need(all(isinstance(v.type, TensorType) for v in inputs), op, "inputs are tensors")
    rank = inputs[0].type.rank
    _need(all(v.type.rank == rank for v in inputs), op, "inputs share one shape")
    _need([v.type for v in ids] == [v.type.dtype for v in inputs], op, "identities have the input dtypes")
    axes = op.attrs.get("axes", [])
    _need(axes == sorted(set(axes)) and all(0 <= a < rank for a in axes) and axes, op, "axes are distinct, sorted")
    _need(len(op.regions) == 1, op, "has a combine region")
    _verify_combine(op, 0, [v.type for v in ids])


def _verify_scan(op: Op) -> None:
    """scan(x0..xk-1, id0..idk-1) {axis, exclusive, reverse} [combine]: prefixes in member
    order with a typed pure associative combine (T2)."""
    k = op.attrs.get("arity", 0)
    extra = k if op.attrs.get("has_init") else 0  # an initial running value (default: the identity)
    _need(k >= 1 and len(op.operands) == 2 * k + extra and len(op.results) == k, op,
          "k inputs, k identities, [k initial values,] k results")
    inputs, ids = op.operands[:k], op.operands[k:2 * k]
    _need(all(isinstance(v.type, TensorType) for v in inputs), op, "inputs are tensors")
    _need([v.type for v in op.operands[2 * k:]] in ([], [v.type for v in ids]), op, "init has the identity types")
    _need([r.type for r in op.results] == [v.type for v in inputs], op, "results have the input types")
    _need(0 <= op.attrs.get("axis", -1) < inputs[0].type.rank, op, "axis in range")
    _need(len(op.regions) == 1, op, "has a combine region")
    _verify_combine(op, 0, [v.type for v in ids])


def _verify_fold(op: Op) -> None:
    """fold(n, id...) [element(t) -> items, combine]: acc = id; for t in [0, n): acc = combine(acc, item(t)).
    The lowered form of reduce; with {"reassoc": true} the grouping is free (T1)."""
    _need(op.operands and op.operands[0].type == INDEX, op, "first operand is the count")
    types = [v.type for v in op.operands[1:]]
    _need([r.type for r in op.results] == types, op, "results have the identity types")
    _need(len(op.regions) == 2, op, "has an element and a combine region")
    element = op.regions[0]
    _need([a.type for a in element.args] == [INDEX], op, "element region takes the ordinal")
    _need(_yield_types(op, element) == types, op, "element region yields one item per accumulator")
    _verify_combine(op, 1, types)


def _verify_buffer(op: Op) -> None:
    """buffer(e0..ek-1) {dtype}: kernel-local mutable storage (a logical buffer, M2)."""
    res = op.result.type
    _need(isinstance(res, TensorType) and len(op.operands) == res.rank, op, "one extent per axis")
    _need(all(v.type == INDEX for v in op.operands), op, "extents are index")


def _verify_region_fold(op: Op) -> None:
    """region_fold(axis, comps..., ids...) {ncomp} [summarize(slices...), combine]: the summary of
    the whole axis under any order-preserving segmentation (R2, R3)."""
    n = op.attrs.get("ncomp", 0)
    _need(op.operands and op.operands[0].type == DOMAIN, op, "first operand is the axis domain")
    comps, ids = op.operands[1:1 + n], op.operands[1 + n:]
    _need(n >= 1 and all(isinstance(c.type, TensorType) for c in comps), op, "components are tensors")
    _need([r.type for r in op.results] == [v.type for v in ids], op, "results have the summary types")
    _need(len(op.regions) == 2, op, "has summarize and combine regions")
    _need(len(op.regions[0].args) == n, op, "summarize takes one slice per component")
    _need(_yield_types(op, op.regions[0]) == [v.type for v in ids], op, "summarize yields a summary")
    _verify_combine(op, 1, [v.type for v in ids])


def _verify_region_scan(op: Op) -> None:
    """region_scan(axis, comps..., ids..., init...) {ncomp, nsummary}
    [summarize, combine, apply(summary..., state...), emit(slices..., state...)] -> outputs..., final state (R6, R7)."""
    n, m = op.attrs.get("ncomp", 0), op.attrs.get("nsummary", 0)
    _need(op.operands and op.operands[0].type == DOMAIN, op, "first operand is the axis domain")
    ids = op.operands[1 + n:1 + n + m]
    init = op.operands[1 + n + m:]
    _need(len(op.regions) == 4, op, "has summarize, combine, apply and emit regions")
    _verify_combine(op, 1, [v.type for v in ids])
    _need(_yield_types(op, op.regions[2]) == [v.type for v in init], op, "apply yields a state")
    outputs = op.results[:len(op.results) - len(init)]
    _need([r.type for r in op.results[len(outputs):]] == [v.type for v in init], op, "final state results")
    _need(all(isinstance(r.type, TensorType) for r in outputs), op, "outputs are tensors")


_register("region_fold", "structured", PURE, _verify_region_fold, regions=2)
_register("region_scan", "structured", PURE, _verify_region_scan, regions=4)
_register("reduce", "structured", PURE, _verify_reduce, regions=1)
_register("scan", "structured", PURE, _verify_scan, regions=1)
_register("fold", "structured", PURE, _verify_fold, regions=2)
_register("buffer", "memory", (Effect("alloc"),), _verify_buffer)


# ---- structured: contraction and histogram (T3, T6) ---------------------------------------------
def _verify_contract(op: Op) -> None:
    """contract(a, b) {spec, acc}: result[out] = the sum over the reduction axes, in k order,
    of acc(a[...]) * acc(b[...]), accumulated in ``acc`` (T3; intentc/kir/contract_spec.py)."""
    from intentc.kir.contract_spec import SpecError, acc_allowed, parse_spec
    from intentc.kir.types import DTYPES

    _arity(op, 2, 1)
    try:
        spec = parse_spec(op.attrs.get("spec"))
    except SpecError as exc:
        raise VerifyError(f"'contract': {exc.message}") from None
    a, b = (v.type for v in op.operands)
    _need(isinstance(a, TensorType) and isinstance(b, TensorType), op, "operands are tensors")
    _need(a.rank == len(spec.a) and b.rank == len(spec.b), op, "the spec names one letter per operand axis")
    _need(a.dtype == b.dtype, op, f"operands share one dtype, got {a.dtype} and {b.dtype}")
    acc = DTYPES.get(op.attrs.get("acc"))
    _need(acc is not None and acc_allowed(a.dtype, acc), op, f"acc {op.attrs.get('acc')} for {a.dtype} operands")
    static: dict[str, int] = {}
    for letters, shape in ((spec.a, a.shape), (spec.b, b.shape)):
        for letter, extent in zip(letters, shape):
            if extent is not None:
                _need(static.setdefault(letter, extent) == extent, op, f"paired axis '{letter}' has two extents")
    res = op.result.type
    if not spec.out:
        _need(res == acc, op, "a contraction to no axes yields one acc scalar")
        return
    _need(isinstance(res, TensorType) and res.dtype == acc and res.rank == len(spec.out), op,
          "the result is an acc tensor with the spec's result axes")
    _need(all(e is None or static.get(c, e) == e for c, e in zip(spec.out, res.shape)), op,
          "result extents follow the operands")


def _verify_histogram(op: Op) -> None:
    """histogram(values, n, [lo, hi], [weights]) {range, weighted}: counts (i64) or summed
    weights per bin of ``[0, n)`` (T6); see intentc/sema/contract.py for the binning."""
    ranged, weighted = bool(op.attrs.get("range")), bool(op.attrs.get("weighted"))
    _need(len(op.operands) == 2 + 2 * ranged + weighted and len(op.results) == 1, op,
          "operands are values, n, [lo, hi], [weights]")
    values, n = op.operands[0].type, op.operands[1].type
    _need(isinstance(values, TensorType), op, "values are a tensor")
    _need(n == INDEX, op, "the bin count is an index")
    _need(values.dtype.is_float if ranged else values.dtype.is_int, op,
          "float values are binned by a range, integer values are bin indices")
    if ranged:
        lo, hi = (v.type for v in op.operands[2:4])
        binning = values.dtype if values.dtype.bits >= 32 else DType("f32", "float", 32)
        _need(lo == hi == binning, op, f"lo and hi are {binning} scalars (the binning dtype)")
    res = op.result.type
    want = op.operands[-1].type.dtype if weighted else INDEX
    _need(isinstance(res, TensorType) and res.rank == 1 and res.dtype.bits == want.bits
          and res.dtype.is_int == want.is_int, op, "the result is one count (or weight sum) per bin")
    if weighted:
        _need(isinstance(op.operands[-1].type, TensorType) and op.operands[-1].type.shape == values.shape, op,
              "weights have the values' shape")


def _verify_contract_tiles(op: Op) -> None:
    """contract_tiles(ap, bp, c, scratch, batch, m, n, k) {acc, mr, nr, lanes, mc, nc, kc}: the
    lowered form of contract: c[b, i, j] = sum over k of the packed panels ap * bp
    (intentc/lower/contract_lowering.py)."""
    _need(len(op.operands) == 8 and not op.results, op, "four tensors and four index sizes")
    tensors = [v.type for v in op.operands[:4]]
    _need(all(isinstance(t, TensorType) for t in tensors) and [t.rank for t in tensors[:2]] == [1, 1]
          and tensors[2].rank in (2, 3) and tensors[3].rank == 1, op,
          "packed panels and scratch are flat, c is [m, n] or [batch, m, n]")
    _need(len({t.dtype for t in tensors}) == 1 and tensors[0].dtype.name == op.attrs.get("acc"), op,
          "tensors hold the accumulator dtype")
    _need(all(v.type == INDEX for v in op.operands[4:]), op, "sizes are index")
    mr, nr, lanes = (op.attrs.get(k, 0) for k in ("mr", "nr", "lanes"))
    _need(mr > 0 and lanes > 0 and nr > 0 and nr % lanes == 0, op, "tile sizes")


_register("contract", "structured", PURE, _verify_contract)
_register("histogram", "structured", PURE, _verify_histogram)
_register("contract_tiles", "structured",
          (Effect("read", 0), Effect("read", 1), Effect("read", 2), Effect("write", 2), Effect("write", 3)),
          _verify_contract_tiles)


# ---- control: structured loops and branches ------------------------------------------------
def _terminator(block, name):
    return block.ops[-1] if block.ops and block.ops[-1].name == name else None


def _yield_types(op: Op, block, name="yield"):
    term = _terminator(block, name)
    _need(term is not None, op, f"region must end with '{name}'")
    return [v.type for v in term.operands]


def _verify_for(op: Op) -> None:
    _need(len(op.regions) == 1, op, "has one region")
    _need(op.operands and op.operands[0].type == DOMAIN, op, "first operand is the domain")
    carries = [v.type for v in op.operands[1:]]
    body = op.regions[0]
    _need([a.type for a in body.args] == [INDEX] + carries, op, "region args are (index, carries...)")
    _need(_yield_types(op, body) == carries, op, "yield must pass the carries")
    _need([r.type for r in op.results] == carries, op, "results are the final carries")


def _verify_parallel(op: Op) -> None:
    _need(len(op.regions) == 1, op, "has one region")
    _need(op.operands and all(v.type == DOMAIN for v in op.operands), op, "operands are domains")
    body = op.regions[0]
    _need([a.type for a in body.args] == [INDEX] * len(op.operands), op, "one index argument per domain")
    _need(_yield_types(op, body) == [], op, "no loop-carried values (P2)")
    _need(not op.results, op, "has no results (P2)")


def _verify_if(op: Op) -> None:
    _need(len(op.operands) == 1 and op.operands[0].type == BOOL, op, "condition is a scalar bool (O1)")
    _need(len(op.regions) == 2, op, "has a then and an else region")
    types = [r.type for r in op.results]
    for region in op.regions:
        _need(not region.args, op, "regions take no arguments")
        _need(_yield_types(op, region) == types, op, "both branches yield the result types")


def _verify_while(op: Op) -> None:
    _need(len(op.regions) == 2, op, "has a condition and a body region")
    carries = [v.type for v in op.operands]
    cond, body = op.regions
    _need([a.type for a in cond.args] == carries and [a.type for a in body.args] == carries, op,
          "both regions take the carries")
    term = _terminator(cond, "condition")
    _need(term is not None and len(term.operands) == 1 and term.operands[0].type == BOOL, op,
          "the condition region ends with 'condition' of a bool")
    _need(_yield_types(op, body) == carries, op, "the body yields the carries")
    _need([r.type for r in op.results] == carries, op, "results are the final carries")


def _verify_any(op: Op) -> None:
    pass


def _verify_call(op: Op) -> None:
    _need(isinstance(op.attrs.get("callee"), str), op, "needs a 'callee' attribute")


_register("for", "control", CONTROL, _verify_for, regions=1)
_register("parallel", "control", CONTROL, _verify_parallel, regions=1)
_register("if", "control", CONTROL, _verify_if, regions=2)
_register("while", "control", CONTROL, _verify_while, regions=2)
_register("call", "control", CONTROL, _verify_call)
_register("yield", "control", PURE, _verify_any, terminator=True)
_register("condition", "control", PURE, _verify_any, terminator=True)
_register("return", "control", PURE, _verify_any, terminator=True)


def opdef(name: str) -> OpDef:
    try:
        return REGISTRY[name]
    except KeyError:
        raise VerifyError(f"unknown op '{name}'") from None


def effects(op: Op) -> tuple[Effect, ...]:
    """The op's effects; for memory ops they depend on what is accessed (M2, ops_memory.py)."""
    from intentc.kir.ops_memory import instance_effects

    return instance_effects(op) or opdef(op.name).effects


def is_pure(op: Op) -> bool:
    return effects(op) == PURE and not op.regions


from intentc.kir import ops_memory  # noqa: E402,F401  (registers gather, scatter, atomics, philox)
from intentc.kir import ops_scaled  # noqa: E402,F401  (registers scaled_contract, sparse_contract: T4, T5)


def _verify_lane_chains(op: Op) -> None:
    """lane_chains(ins..., outs..., first, starts...) {n_in, n_out, k, lanes, segment, picks,
    exclusive} {combine}: ``lanes`` independent chains of an ordered fold or scan over
    sub-segments of ``segment`` members (intentc/lower/lane_lowering.py)."""
    a = op.attrs
    n_in, n_out, k, lanes = (a.get(name, -1) for name in ("n_in", "n_out", "k", "lanes"))
    _need(n_in > 0 and n_out >= 0 and k > 0 and lanes > 0 and a.get("segment", 0) > 0, op, "sizes")
    _need(len(op.operands) == n_in + n_out + 1 + lanes * k and len(op.results) == lanes * k, op,
          "inputs, outputs, first and an accumulator tuple per chain; a final tuple per chain")
    tensors = op.operands[:n_in + n_out]
    _need(all(isinstance(v.type, TensorType) and v.type.rank == 1 for v in tensors), op, "tensors are one-axis")
    _need(op.operands[n_in + n_out].type == INDEX, op, "first is an index")
    _need(len(op.regions) == 1 and len(op.regions[0].args) == k + n_in, op, "combine takes (accs, items)")
    _need(len(a.get("picks", ())) == n_out and all(0 <= p < k for p in a["picks"]), op, "a pick per output")


def _lane_chains_effects(op: Op) -> tuple[Effect, ...]:
    n_in, n_out = op.attrs["n_in"], op.attrs["n_out"]
    return tuple(Effect("read", i) for i in range(n_in)) + tuple(Effect("write", n_in + o) for o in range(n_out))


_register("lane_chains", "structured", (Effect("read", 0),), _verify_lane_chains, regions=1)
ops_memory.DYNAMIC_EFFECTS["lane_chains"] = _lane_chains_effects
