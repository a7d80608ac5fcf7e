"""Small utilities for passes that rewrite KIR: cloning with a value map, use queries."""
from __future__ import annotations

from intentc.kir.core import Block, Op, Value


def clone_op(op: Op, mapping: dict[int, Value]) -> Op:
    """A deep copy of ``op`` whose operands are remapped; its results are added to ``mapping``."""
    operands = [mapping.get(id(v), v) for v in op.operands]
    regions = [clone_block(region, mapping) for region in op.regions]
    new = Op(op.name, operands, [r.type for r in op.results], dict(op.attrs), regions, op.span,
             [r.hint for r in op.results])
    for old, fresh in zip(op.results, new.results):
        mapping[id(old)] = fresh
    return new


def clone_block(block: Block, mapping: dict[int, Value]) -> Block:
    args = []
    for arg in block.args:
        fresh = Value(arg.type, arg.hint)
        mapping[id(arg)] = fresh
        args.append(fresh)
    return Block(args, [clone_op(op, mapping) for op in block.ops])


def replace_uses(block: Block, mapping: dict[int, Value]) -> None:
    """Rewrite operands inside ``block`` (recursively) through ``mapping``."""
    for op in block.ops:
        op.operands = [mapping.get(id(v), v) for v in op.operands]
        for region in op.regions:
            replace_uses(region, mapping)
