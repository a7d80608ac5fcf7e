"""Expand tile nests into loops (R3, R9, T2): each ``lane_chains`` nest becomes vector code (one
chain per lane, LANES x LANES transposes in registers, the combine applied lane-wise, streaming
stores for large outputs) behind a unit-stride test, and the scalar loop of the same chains
otherwise.

Before: a physical program in which ``to_physical`` left a ``TileNest`` for each KIR op of kind
``lane_chains`` (its operands as tensors and expressions, its results as variables, its
attributes). After: none of them remains; each is replaced, where it stood, by the statements of
``intentc/lower/lane_lowering.py``, whose docstring describes the scheme. The values computed
are the KIR op's (``intentc/interp/lowered.py`` defines them); only the loop structure is chosen
here. New variables get fresh names beside the kernel's (``intentc/lower/names.py``).
"""
from __future__ import annotations

from intentc.lower import program as P
from intentc.lower.lane_lowering import lower_lane_chains
from intentc.lower.tile_nests import expand_nests

KINDS = ("lane_chains",)


def run(program: P.Program) -> P.Program:
    return expand_nests(program, KINDS, lower_lane_chains)
