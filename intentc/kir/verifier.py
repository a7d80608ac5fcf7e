"""Checks that KIR is well formed: structure first (SSA dominance, terminators, known ops),
then each op against its declaration in ``intentc.kir.ops`` (operand and result counts and
types, every attribute's presence and type, no undeclared attribute, the op's own check),
then the few cross-op rules (no carries or ``return`` inside ``parallel``, P2/P4; calls match
their callee)."""
from __future__ import annotations

from intentc.kir.core import Block, Function, Module, Op
from intentc.kir.ops import OpDef, VerifyError, opdef
from intentc.kir.ops.definition import Operand
from intentc.kir.types import compatible


def verify_module(module: Module) -> None:
    functions = {f.name: f for f in module.functions}
    if len(functions) != len(module.functions):
        raise VerifyError("two functions share a name")
    for func in module.functions:
        verify_function(func, functions)


def verify_function(func: Function, functions: dict[str, Function] | None = None) -> None:
    visible = {id(v) for v in func.args}
    try:
        _verify_block(func.body, visible, functions or {}, func, in_parallel=False)
        term = func.body.ops[-1] if func.body.ops else None
        if term is None or term.name != "return":
            raise VerifyError("function body must end with 'return'")
        if len(term.operands) != len(func.result_types) or not all(
                compatible(v.type, t) for v, t in zip(term.operands, func.result_types)):
            raise VerifyError("'return' operands do not match the function's result types")
    except VerifyError as exc:
        raise VerifyError(f"in @{func.name}: {exc}") from None


def _verify_block(block: Block, visible: set[int], functions, func: Function, in_parallel: bool) -> None:
    visible = set(visible) | {id(a) for a in block.args}
    for index, op in enumerate(block.ops):
        definition = opdef(op.name)
        for operand in op.operands:
            if id(operand) not in visible:
                raise VerifyError(f"'{op.name}' uses a value that does not dominate it")
        if definition.terminator and index != len(block.ops) - 1:
            raise VerifyError(f"'{op.name}' must be the last op of its block")
        if len(op.regions) != definition.regions:
            raise VerifyError(f"'{op.name}' must have {definition.regions} regions")
        if op.name == "return" and in_parallel:
            raise VerifyError("'return' inside 'parallel' (P4)")
        for region in op.regions:
            _verify_block(region, visible, functions, func, in_parallel or op.name == "parallel")
        verify_op(op, definition)
        if op.name == "call":
            _verify_call(op, functions)
        visible.update(id(r) for r in op.results)
    if block is not func.body and (not block.ops or not opdef(block.ops[-1].name).terminator):
        raise VerifyError("a region must end with a terminator")


def verify_op(op: Op, definition: OpDef) -> None:
    """``op`` against its declaration: operands, results, attributes, then the op's own check."""
    where = f" ({definition.rule})" if definition.rule else ""
    _verify_values(op, "operand", op.operands, definition.operands, where)
    _verify_values(op, "result", op.results, definition.results, where)
    for name, attr in definition.attrs.items():
        if name not in op.attrs:
            if attr.required:
                raise VerifyError(f"'{op.name}': needs a '{name}' attribute{where}")
        elif not attr.type.holds(op.attrs[name]):
            raise VerifyError(f"'{op.name}': attribute '{name}' must be {attr.type.what}, "
                              f"got {op.attrs[name]!r}{where}")
    unknown = sorted(set(op.attrs) - set(definition.attrs))
    if unknown:
        raise VerifyError(f"'{op.name}': undeclared attribute{'s' if len(unknown) > 1 else ''} "
                          f"{', '.join(repr(n) for n in unknown)}")
    if definition.check is not None:
        definition.check(op)


def _verify_values(op: Op, kind: str, values: list, declared: tuple[Operand, ...], where: str) -> None:
    """Match ``values`` to the declared operands (or results): the fixed ones before and after
    the one variadic group, which takes the rest."""
    variadic = next((k for k, d in enumerate(declared) if d.variadic), None)
    fixed = len(declared) - (variadic is not None)
    if variadic is None and len(values) != fixed:
        raise VerifyError(f"'{op.name}': expects {fixed} {kind}s, has {len(values)}{where}")
    if variadic is not None and len(values) < fixed:
        raise VerifyError(f"'{op.name}': expects at least {fixed} {kind}s, has {len(values)}{where}")
    if variadic is None:
        groups = [(d, [v]) for d, v in zip(declared, values)]
    else:
        after = len(declared) - variadic - 1
        tail = len(values) - after
        groups = [(d, [v]) for d, v in zip(declared[:variadic], values[:variadic])]
        groups.append((declared[variadic], values[variadic:tail]))
        groups += [(d, [v]) for d, v in zip(declared[variadic + 1:], values[tail:])]
    for definition, group in groups:
        for value in group:
            if not definition.type.holds(value.type):
                raise VerifyError(f"'{op.name}': {kind} '{definition.name}' must be {definition.type.what}, "
                                  f"got {value.type}{where}")


def _verify_call(op: Op, functions) -> None:
    callee = functions.get(op.attrs["callee"])
    if callee is None:
        raise VerifyError(f"call of unknown function @{op.attrs['callee']}")
    if callee.kind != "fn":
        raise VerifyError(f"@{callee.name} is a kernel; only @intent.fn helpers can be called")
    if len(op.operands) != len(callee.params) or len(op.results) != len(callee.result_types):
        raise VerifyError(f"call of @{callee.name} has the wrong number of operands or results")
    for operand, arg in zip(op.operands, callee.args):
        if not compatible(operand.type, arg.type):
            raise VerifyError(f"call of @{callee.name}: operand type {operand.type} != {arg.type}")
    if not all(compatible(r.type, t) for r, t in zip(op.results, callee.result_types)):
        raise VerifyError(f"call of @{callee.name}: result types differ")
