"""The KIR ops: every op declared once (``definition.OpDef``), by family, in one registry.

Families: ``arith`` (constants, arithmetic, comparisons, casts), ``relation`` (domains,
extents, broadcasts, views and shape checks), ``memory`` (loads, stores, buffers, indexed
memory, atomics, RNG), ``structured`` (reductions, scans, folds, region ops, contraction,
histogram), ``control`` (loops, branches, calls, terminators), ``scaled`` (microscaled and
sparse contractions) and ``lowered`` (the forms only lowering builds). The verifier
(``intentc.kir.verifier``) checks ops against these declarations; passes ask ``effects``.
"""
from __future__ import annotations

from intentc.kir.core import Op
from intentc.kir.ops import arith, control, lowered, memory, relation, scaled, structured
from intentc.kir.ops.arith import BINARY_OPS, CMP_PREDICATES, FLOAT_ONLY, INT_ONLY, INT_OR_BOOL_ONLY, UNARY_OPS
from intentc.kir.ops.definition import CHECK, CONTROL, PURE, Effect, OpDef, VerifyError
from intentc.kir.ops.memory import COMBINES, ORDERS, RMW_OPS, SPACES
from intentc.kir.ops.scaled import CHECKS, MX_ELEMENTS

FAMILIES = (arith, relation, memory, structured, control, scaled, lowered)


def _collect() -> dict[str, OpDef]:
    registry: dict[str, OpDef] = {}
    for family in FAMILIES:
        for name, definition in family.OPS.items():
            assert name not in registry, f"op '{name}' declared by two families"
            registry[name] = definition
    return registry


REGISTRY: dict[str, OpDef] = _collect()


def opdef(name: str) -> OpDef:
    try:
        return REGISTRY[name]
    except KeyError:
        raise VerifyError(f"unknown op '{name}'") from None


def effects(op: Op) -> tuple[Effect, ...]:
    """The op's effects; for memory ops they depend on what is accessed (M2, memory.py)."""
    return opdef(op.name).effects_of(op)


def is_pure(op: Op) -> bool:
    return effects(op) == PURE and not op.regions


__all__ = ["REGISTRY", "OpDef", "Effect", "VerifyError", "PURE", "CHECK", "CONTROL", "opdef", "effects", "is_pure",
           "BINARY_OPS", "UNARY_OPS", "FLOAT_ONLY", "INT_ONLY", "INT_OR_BOOL_ONLY", "CMP_PREDICATES",
           "SPACES", "RMW_OPS", "ORDERS", "COMBINES", "MX_ELEMENTS", "CHECKS"]
