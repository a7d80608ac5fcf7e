"""``I.region_fold`` and ``I.region_scan`` (R0-R10): surface, checks and KIR.

    summary = I.region_fold(axis, (x, ...), summarize=f, combine=g, identity=e, captures=(c, ...))
    out, final = I.region_scan(axis, (a, b, ...), summarize=f, combine=g, identity=e,
                               apply=h, emit=k, init=s0, captures=(c, ...))

Components are tensors whose axis 0 runs over the ordinals of the domain ``axis`` (one
ordered source axis, R2); the compiler slices them into contiguous segments of its
choosing. The helpers become regions of the op (R7): ``summarize(slices..., captures...)
-> Summary``, ``combine(Summary, Summary) -> Summary``, ``apply(Summary, State) -> State``,
``emit(slices..., State, captures...) -> outputs``. Their types must agree (R3, R7); they
must be pure (R4); they may use a slice only as a whole tensor — no element access, no
extent, no axis of a slice — so nothing can observe a segment's position or size (R5).

``region_op`` builds either op with the function builder ``b`` (``BUILTINS``: this
module's handlers for builtins.py); ``check_region_helpers`` checks R4/R5 on the built
module, helpers included.
"""
from __future__ import annotations

from intentc.diagnostics import error
from intentc.kir.core import Block, Function, Module, Op, Value
from intentc.kir.ops import effects
from intentc.kir.types import INDEX, TensorType
from intentc.parse import ast
from intentc.sema.values import FunctionRef, TupleValue, items_of

_REGION_OPS = ("region_fold", "region_scan")
# Ops that would let a helper see where or how long its segment is (R5), or have effects (R4).
_POSITIONAL = {"load": "reads an element of a slice", "dom_len": "takes the length of a domain",
               "domain": "builds a domain", "axis": "takes an axis", "subregion": "takes a subregion",
               "indices": "takes coordinates", "view": "slices a slice"}
_EXTENT_SINKS = {"broadcast", "bcast_extent", "assert_eq", "reshape", "dim"}


def _helper(b, node, role: str, rule: str):
    if node is None:
        raise error(f"this region operation needs {role}=<helper>", None, rule=rule)
    ref = b.expr(node)
    if not isinstance(ref, FunctionRef) or b.signatures[ref.name].kind != "fn":
        raise error(f"{role} must name an @intent.fn helper", node.span, rule=rule)
    return ref


def _values(b, node) -> list:
    return [] if node is None else items_of(b.expr(node))


def _call_region(b, ref: FunctionRef, args: list[Value], extra: list, span, role: str, rule: str,
                 expect: list | None = None) -> Block:
    """A region whose body calls ``ref`` on (args..., extra...) and yields its results."""
    block = Block(list(args))
    saved = b.block
    b.block = block
    try:
        sig = b.signatures[ref.name]
        flat_types = []
        for ann in sig.params:
            flat_types += [i.type for i in ann.items] if ann.items else [ann.type]
        operands = list(args) + list(extra)
        if len(operands) != len(flat_types):
            raise error(f"{role} '{ref.name}' takes {len(flat_types)} value(s) but the operation passes "
                        f"{len(operands)}", span, rule=rule, hint=_region_hint(role))
        for k, (value, want) in enumerate(zip(operands, flat_types)):
            got = value.type
            ok = got == want or (isinstance(got, TensorType) and isinstance(want, TensorType)
                                 and got.dtype == want.dtype and got.rank == want.rank)
            if not ok:
                raise error(f"{role} '{ref.name}': argument {k + 1} is {got} but the helper declares {want}",
                            span, rule=rule, hint=_region_hint(role))
        results = [a.type for a in sig.results]
        if expect is not None and results != expect:
            raise error(f"{role} '{ref.name}' returns ({', '.join(map(str, results))}) but "
                        f"({', '.join(map(str, expect))}) is needed", span, rule=rule,
                        hint=_region_hint(role))
        op = b.emit("call", operands, results, {"callee": ref.name}, span=span)
        block.ops.append(Op("yield", list(op.results), span=span))
        return block
    finally:
        b.block = saved


def _region_hint(role: str) -> str:
    return {"summarize": "summarize(slices..., captures...) -> Summary",
            "combine": "combine(Summary, Summary) -> Summary",
            "apply": "apply(Summary, State) -> State",
            "emit": "emit(slices..., State, captures...) -> output slice(s)"}[role]


def _components(b, node, span):
    items = _values(b, node)
    if not items:
        raise error("a region operation needs at least one component tensor", span, rule="R2")
    for item in items:
        if not isinstance(item, Value) or not isinstance(item.type, TensorType) or item.type.rank < 1:
            raise error("components are tensors sliced along their first axis", node.span, rule="R2",
                        hint="pass (x,) or (a, b); use I.indices(axis) for coordinates (R5)")
    return items


def region_op(b, name: str, node: ast.Call):
    kw = {k.name: k.value for k in node.keywords}
    allowed = {"summarize", "combine", "identity", "captures"} | (
        {"apply", "emit", "init"} if name == "region_scan" else set())
    for key in kw:
        if key not in allowed:
            raise error(f"unexpected argument '{key}' of I.{name}", node.span, rule="R1",
                        hint="accepted: " + ", ".join(sorted(allowed)))
    if len(node.args) != 2:
        raise error(f"I.{name}(axis, (components...), summarize=..., ...) takes an axis and components",
                    node.span, rule="R2")
    span = node.span
    domain = b.domain_of(b.expr(node.args[0]), node.args[0].span)
    comps = _components(b, node.args[1], span)
    captures = _values(b, kw.get("captures"))
    length = b.emit("dom_len", [domain], [INDEX], span=span).result
    for comp in comps:  # axis 0 of every component runs over the axis's ordinals (R2)
        extent = b.index_value(b.shape_of(comp)[0], span)
        b.emit("assert_eq", [extent, length], span=span, attrs={
            "what": f"{name}: a component has %lld rows but the axis has %lld members", "rule": "R2"})
    slices = [Value(TensorType(c.type.dtype, (None,) + c.type.shape[1:]), f"slice{k}")
              for k, c in enumerate(comps)]
    summarize = _helper(b, kw.get("summarize"), "summarize", "R2")
    summary_types = [a.type for a in b.signatures[summarize.name].results]
    summarize_region = _call_region(b, summarize, slices, captures, span, "summarize", "R2")
    combine = _helper(b, kw.get("combine"), "combine", "R3")
    accs = [Value(t, f"a{k}") for k, t in enumerate(summary_types)]
    items = [Value(t, f"b{k}") for k, t in enumerate(summary_types)]
    combine_region = _call_region(b, combine, accs + items, [], span, "combine", "R3", expect=summary_types)
    identity = _values(b, kw.get("identity"))
    if len(identity) != len(summary_types):
        raise error(f"the identity has {len(identity)} item(s) but the summary has {len(summary_types)}",
                    kw["identity"].span if "identity" in kw else span, rule="R2")
    identity = [b.scalar_of(v, t, span, "the identity") for v, t in zip(identity, summary_types)]
    if name == "region_fold":
        op = b.emit("region_fold", [domain] + comps + identity, summary_types, {"ncomp": len(comps)},
                       [summarize_region, combine_region], span=span)
        results = list(op.results)
        return results[0] if len(results) == 1 else TupleValue(tuple(results))
    init = _values(b, kw.get("init"))
    apply = _helper(b, kw.get("apply"), "apply", "R6")
    apply_sig = b.signatures[apply.name]
    state_types = [a.type for a in apply_sig.results]
    if len(init) != len(state_types):
        raise error(f"init has {len(init)} item(s) but apply returns {len(state_types)}",
                    kw["init"].span if "init" in kw else span, rule="R6")
    init = [b.scalar_of(v, t, span, "the initial state") for v, t in zip(init, state_types)]
    s_args = [Value(t, f"s{k}") for k, t in enumerate(summary_types)]
    st_args = [Value(t, f"st{k}") for k, t in enumerate(state_types)]
    apply_region = _call_region(b, apply, s_args + st_args, [], span, "apply", "R6", expect=state_types)
    emit = _helper(b, kw.get("emit"), "emit", "R6")
    e_slices = [Value(s.type, s.hint) for s in slices]
    e_states = [Value(t, f"st{k}") for k, t in enumerate(state_types)]
    emit_region = _call_region(b, emit, e_slices + e_states, captures, span, "emit", "R6")
    out_types = [a.type for a in b.signatures[emit.name].results]
    for t in out_types:
        if not isinstance(t, TensorType) or t.rank < 1:
            raise error(f"emit '{emit.name}' must return tensors with the slice's members on axis 0", span,
                        rule="R7")
    result_types = [TensorType(t.dtype, (None,) + t.shape[1:]) for t in out_types] + state_types
    op = b.emit("region_scan", [domain] + comps + identity + init, result_types,
                   {"ncomp": len(comps), "nsummary": len(summary_types)},
                   [summarize_region, combine_region, apply_region, emit_region], span=span)
    for result in op.results[:len(out_types)]:
        b.shapes[id(result)] = [length] + [b.emit("dim", [result], [INDEX], {"axis": k}).result
                                              for k in range(1, result.type.rank)]
    return TupleValue(tuple(op.results))



BUILTINS = {name: region_op for name in _REGION_OPS}

def check_region_helpers(module: Module) -> None:
    """R4/R5 on every helper used by a region op (and the helpers it calls)."""
    functions = {f.name: f for f in module.functions}
    for func in module.functions:
        for op in func.walk():
            if op.name not in _REGION_OPS:
                continue
            roles = ["summarize", "combine"] + (["apply", "emit"] if op.name == "region_scan" else [])
            for role, region in zip(roles, op.regions):
                for inner in region.ops:
                    if inner.name == "call":
                        _check_helper(functions, functions[inner.attrs["callee"]], role, op.name,
                                      positional=role in ("summarize", "emit"), seen=set())


def _check_helper(functions, helper: Function, role: str, opname: str, positional: bool, seen: set) -> None:
    if helper.name in seen:
        return
    seen.add(helper.name)
    tainted: set[int] = set()
    for op in helper.walk():
        if op.name in ("store", "buffer") or any(e.kind in ("write", "atomic", "rng") for e in effects(op)):
            raise error(f"helper '{helper.name}' (the {role} of {opname}) has an effect: '{op.name}'", op.span,
                        rule="R4", hint="region helpers are pure: compute and return values only")
        if op.name == "call":
            _check_helper(functions, functions[op.attrs["callee"]], role, opname, positional, seen)
        if not positional:
            continue
        if op.name == "dim":
            tainted.update(id(r) for r in op.results)
            continue
        uses_taint = any(id(v) in tainted for v in op.operands)
        if op.name in _POSITIONAL and (op.name != "load" or isinstance(op.operands[0].type, TensorType)):
            raise error(f"helper '{helper.name}' (the {role} of {opname}) {_POSITIONAL[op.name]}: that would "
                        f"observe where a segment lies or how long it is", op.span, rule="R5",
                        hint="use slices only as whole tensors (pointwise ops, reductions, scans); pass "
                             "I.indices(axis) as a component for absolute coordinates")
        if uses_taint and op.name not in _EXTENT_SINKS:
            raise error(f"helper '{helper.name}' (the {role} of {opname}) computes with a slice's extent",
                        op.span, rule="R5", hint="the segment length is chosen by the compiler and unobservable")

