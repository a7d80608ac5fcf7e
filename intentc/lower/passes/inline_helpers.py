"""Inline every call of an ``@intent.fn`` helper into its caller.

Before: kernels may contain ``call`` ops of helpers (which may call other helpers).
After: kernels contain no ``call``; each call is replaced by a copy of the callee body
with parameters bound to the operands and the callee's ``return`` operands in place of
the call results. Helpers are pure and their relations pass through unchanged (C2), so
the inlined program means what the call meant. Helpers stay in the module for ``explain``.
"""
from __future__ import annotations

from intentc.kir.core import Block, Function, Module, Op, Value
from intentc.kir.rewrite import clone_op, replace_uses
from intentc.kir.types import INDEX, TensorType


def run(module: Module) -> Module:
    functions = {f.name: f for f in module.functions}
    for func in module.kernels:
        _inline_block(func.body, functions, depth=0)
    return module


def _inline_block(block: Block, functions: dict[str, Function], depth: int) -> None:
    if depth > 64:
        raise RecursionError("helper calls nest more than 64 deep (recursion is not supported)")
    new_ops: list[Op] = []
    results_map = {}
    for op in block.ops:
        op.operands = [results_map.get(id(v), v) for v in op.operands]
        if op.regions:
            for region in op.regions:
                replace_uses(region, results_map)
                _inline_block(region, functions, depth)
        if op.name != "call":
            new_ops.append(op)
            continue
        callee = functions[op.attrs["callee"]]
        mapping = {id(arg): _as_declared(operand, arg.type, new_ops)
                   for arg, operand in zip(callee.args, op.operands)}
        # Inline the callee's own calls first, so its return sees their results too.
        inlined = Block([], [clone_op(inner, mapping) for inner in callee.body.ops])
        _inline_block(inlined, functions, depth + 1)
        ret = inlined.ops.pop()
        new_ops += inlined.ops
        for result, value in zip(op.results, ret.operands):
            results_map[id(result)] = value
    block.ops = new_ops


def _as_declared(operand: Value, declared, out: list[Op]) -> Value:
    """``operand`` as a value of the parameter's declared type. A helper is generic over
    extents, so a caller may pass ``tensor<f32[1, ?]>`` for ``tensor<f32[?, ?]>``; the
    helper's body was typed with the declared type, so it gets the operand through a
    whole view (the identity relation) of that type."""
    if operand.type == declared or not isinstance(declared, TensorType):
        return operand
    operands = [operand]
    for axis in range(declared.rank):
        zero = Op("const", [], [INDEX], {"value": 0})
        extent = Op("dim", [operand], [INDEX], {"axis": axis})
        out += [zero, extent]
        operands += [zero.result, extent.result]
    view = Op("view", operands, [declared], {"axes": ["range"] * declared.rank}, result_hints=[operand.hint])
    out.append(view)
    return view.result
