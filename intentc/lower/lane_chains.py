"""The ``lane_chains`` KIR op: independent chains of an ordered fold or scan, one per vector lane (R3, R9, T2).

A region scan cuts its axis into sub-segments (``region_lowering``); a group of LANES
consecutive sub-segments is folded (its summaries) or scanned (its emit) as LANES
independent chains by one ``lane_chains`` op (:func:`lane_chains_op`): chain ``j`` starts
from its own accumulator tuple and combines the members ``(first + j) * segment + t`` of
each input for ``t`` in ``[0, segment)``; an emit writes the picked state components to its
outputs at the same positions (before the combine when ``exclusive``). Its results are the
chains' final tuples, chain-major. ``to_physical`` lowers it (``lane_lowering.py``).

The combine must be straight-line lane-wise arithmetic (``lane_combinable``): helpers that
call math functions, divide integers or carry booleans keep the scalar chains.
"""
from __future__ import annotations

from intentc.kir.core import Block, Op, Value
from intentc.kir.rewrite import clone_block
from intentc.kir.types import INDEX, TensorType

LANES = 8
BINARY = {"add", "sub", "mul", "min", "max", "and", "or", "xor"}
UNARY = {"neg", "abs", "not"}
_BOOL_RESULTS = {"cmp", "and", "or", "xor", "not"}


def lane_combinable(combine: Block) -> bool:
    """Whether ``combine`` is straight-line lane-wise arithmetic on non-boolean scalars."""
    if any(isinstance(a.type, TensorType) or a.type.is_bool or a.type == INDEX for a in combine.args):
        return False
    for op in combine.ops[:-1]:
        if op.regions or len(op.results) != 1 or op.name not in BINARY | UNARY | {"const", "cmp", "select"}:
            return False
        t = op.result.type
        if isinstance(t, TensorType) or t == INDEX or (t.is_bool and op.name not in _BOOL_RESULTS):
            return False
    term = combine.ops[-1] if combine.ops else None
    return term is not None and term.name == "yield" and not any(v.type.is_bool for v in term.operands)


def lane_chains_op(combine: Block, inputs: list[Value], outputs: list[Value], picks: list[int], first: Value,
                   starts: list[list[Value]], segment: int, exclusive: bool) -> Op:
    """The ``lane_chains`` op of LANES chains (``starts``: each chain's accumulator tuple)."""
    k = len(starts[0])
    flat = [v for start in starts for v in start]
    return Op("lane_chains", list(inputs) + list(outputs) + [first] + flat, [v.type for v in flat],
              {"n_in": len(inputs), "n_out": len(outputs), "k": k, "lanes": len(starts), "segment": segment,
               "picks": list(picks), "exclusive": bool(exclusive)}, [clone_block(combine, {})])
