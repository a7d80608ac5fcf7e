"""Control KIR ops: structured loops and branches, helper calls and the terminators.

``for`` visits a domain's points in order with loop carries; ``parallel`` runs every point
of its domains exactly once, in any order, with no carries (P1, P2; no ``return`` inside,
P4, which the verifier checks across ops); ``if`` runs one of two regions (O1); ``while``
runs its condition region, then its body, while the condition holds; ``call`` runs an
``@intent.fn`` helper (the verifier matches it against its callee).
"""
from __future__ import annotations

from intentc.kir.core import Op
from intentc.kir.ops.definition import (BOOL_T, CONTROL, DOMAIN_T, INT_A, STR_A, Attr, OpDef, Operand, declare, many,
                                        need, optional, yield_types)
from intentc.kir.types import BOOL, INDEX


def _check_for(op: Op) -> None:
    carries = [v.type for v in op.operands[1:]]
    body = op.regions[0]
    need([a.type for a in body.args] == [INDEX] + carries, op, "region args are (index, carries...)")
    need(yield_types(op, body) == carries, op, "yield must pass the carries")
    need([r.type for r in op.results] == carries, op, "results are the final carries")


def _check_parallel(op: Op) -> None:
    need(op.operands, op, "needs one or more domains")
    body = op.regions[0]
    need([a.type for a in body.args] == [INDEX] * len(op.operands), op, "one index argument per domain")
    need(yield_types(op, body) == [], op, "no loop-carried values (P2)")


def _check_if(op: Op) -> None:
    types = [r.type for r in op.results]
    for region in op.regions:
        need(not region.args, op, "regions take no arguments")
        need(yield_types(op, region) == types, op, "both branches yield the result types")


def _check_while(op: Op) -> None:
    carries = [v.type for v in op.operands]
    cond, body = op.regions
    need([a.type for a in cond.args] == carries and [a.type for a in body.args] == carries, op,
         "both regions take the carries")
    term = cond.ops[-1] if cond.ops and cond.ops[-1].name == "condition" else None
    need(term is not None and len(term.operands) == 1 and term.operands[0].type == BOOL, op,
         "the condition region ends with 'condition' of a bool")
    need(yield_types(op, body) == carries, op, "the body yields the carries")
    need([r.type for r in op.results] == carries, op, "results are the final carries")


def _terminator(name: str) -> OpDef:
    return OpDef(name, "control", operands=(many("values"),), terminator=True)


OPS = declare(
    OpDef("for", "control", operands=(Operand("domain", DOMAIN_T), many("carries")), results=(many("carries"),),
          regions=1, effects=CONTROL, check=_check_for),
    # grain: the number of points a worker takes at a time (set by lowering)
    OpDef("parallel", "control", operands=(many("domains", DOMAIN_T),), attrs={"grain": optional(INT_A)},
          regions=1, effects=CONTROL, check=_check_parallel, rule="P2"),
    OpDef("if", "control", operands=(Operand("cond", BOOL_T),), results=(many("results"),), regions=2,
          effects=CONTROL, check=_check_if, rule="O1"),
    OpDef("while", "control", operands=(many("carries"),), results=(many("carries"),), regions=2, effects=CONTROL,
          check=_check_while),
    OpDef("call", "control", operands=(many("args"),), results=(many("results"),),
          attrs={"callee": Attr(STR_A)}, effects=CONTROL),
    _terminator("yield"),
    _terminator("condition"),
    _terminator("return"),
)
