"""Inline every call of an ``@intent.fn`` helper into its caller.

Before: kernels may contain ``call`` ops of helpers (which may call other helpers).
After: kernels contain no ``call``; each call is replaced by a copy of the callee body
with parameters bound to the operands and the callee's ``return`` operands in place of
the call results. Helpers are pure and their relations pass through unchanged (C2), so
the inlined program means what the call meant. Helpers stay in the module for ``explain``.
"""
from __future__ import annotations

from intentc.kir.core import Block, Function, Module, Op
from intentc.kir.rewrite import clone_op, replace_uses


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
        mapping = {id(arg): operand for arg, operand in zip(callee.args, op.operands)}
        body_ops = [clone_op(inner, mapping) for inner in callee.body.ops]
        ret = body_ops.pop()
        inlined = Block([], body_ops)
        _inline_block(inlined, functions, depth + 1)
        new_ops += inlined.ops
        for result, value in zip(op.results, ret.operands):
            results_map[id(result)] = value
    block.ops = new_ops
