"""Expand tile nests into loops (T3): a contraction's ``contract_tiles`` nest becomes the parallel
loop over the MC x NC blocks of C with its register-tiled micro-kernel (vector accumulators over
the K blocks, edge tiles through the scratch buffer).

Before: a physical program in which ``to_physical`` left a ``TileNest`` for each KIR op of kind
``contract_tiles`` (its operands as tensors and expressions, its results as variables, its
attributes). After: none of them remains; each is replaced, where it stood, by the statements of
``intentc/lower/contract_tiles.py``, whose docstring describes the scheme. The values computed
are the KIR op's (``intentc/interp/lowered.py`` defines them); only the loop structure is chosen
here. New variables get fresh names beside the kernel's (``intentc/lower/names.py``).
"""
from __future__ import annotations

from intentc.lower import program as P
from intentc.lower.contract_tiles import lower_contract_tiles
from intentc.lower.tile_nests import expand_nests

KINDS = ("contract_tiles",)


def run(program: P.Program) -> P.Program:
    return expand_nests(program, KINDS, lower_contract_tiles)
