"""Replacing a program's tile nests by their loops: what the ``expand_*`` physical passes share.

``expand_nests(program, kinds, expand)`` rebuilds every kernel with each ``TileNest`` whose kind
is in ``kinds`` replaced by ``expand(names, nest)`` — wherever it stands, nested statements
included — where ``names`` is the kernel's ``NameSupply`` (fresh names avoid every name the
kernel holds). Everything else is kept as it is.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

from intentc.lower import program as P
from intentc.lower.names import NameSupply

Expansion = Callable[[NameSupply, P.TileNest], list]


def expand_nests(program: P.Program, kinds: tuple[str, ...], expand: Expansion) -> P.Program:
    kernels = []
    for kernel in program.kernels:
        names = NameSupply.of_kernel(kernel)
        kernels.append(replace(kernel, body=_block(kernel.body, kinds, expand, names)))
    return replace(program, kernels=tuple(kernels))


def _block(stmts, kinds, expand: Expansion, names: NameSupply) -> tuple[P.Stmt, ...]:
    out: list[P.Stmt] = []
    for s in stmts:
        if isinstance(s, P.TileNest) and s.kind in kinds:
            out += expand(names, s)
        else:
            out.append(P.map_blocks(s, lambda block: _block(block, kinds, expand, names)))
    return tuple(out)
