"""Expand tile nests into loops (T4): a microscaled contraction's ``scaled_tiles`` nest becomes its
register-tiled loop nest over the codes, decoded through the tables and scaled per block.

Before: a physical program in which ``to_physical`` left a ``TileNest`` for each KIR op of kind
``scaled_tiles`` (its operands as tensors and expressions, its results as variables, its
attributes). After: none of them remains; each is replaced, where it stood, by the statements of
``intentc/lower/scaled_tiles.py``, whose docstring describes the scheme. The values computed are
the KIR op's (``intentc/interp/lowered.py`` defines them); only the loop structure is chosen
here. New variables get fresh names beside the kernel's (``intentc/lower/names.py``).
"""
from __future__ import annotations

from intentc.lower import program as P
from intentc.lower.scaled_tiles import lower_scaled_tiles
from intentc.lower.tile_nests import expand_nests

KINDS = ("scaled_tiles",)


def run(program: P.Program) -> P.Program:
    return expand_nests(program, KINDS, lower_scaled_tiles)
