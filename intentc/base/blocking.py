"""How a privatized ``scatter_reduce`` groups its lanes (M5): one rule for the interpreter
and the compiled code.

A float ``add``/``mul`` or a helper combine gives bits that depend on the grouping, so
the grouping is prescribed: the lanes are cut into ``privatized_blocks(n, size)``
consecutive blocks, each folded in order into a private copy of the destination, and the
copies are merged in block order. The interpreter (``intentc/interp/memory.py``) runs
this rule and the lowering (``intentc/lower/memory_lowering.py``) emits it, so results
are the same on every target and thread count.
"""
from __future__ import annotations

MIN_BLOCK = 4096  # lanes per block, at least
MAX_BLOCKS = 1024  # blocks per scatter_reduce, at most (before the private-memory cap)
PRIVATE_LIMIT = 1 << 22  # elements of private copies a privatized scatter_reduce may use
_EXACT = ("min", "max")  # exact on floats too (IEEE minimum/maximum); ints: every builtin


def privatized_blocks(n: int, size: int) -> tuple[int, int]:
    """(lanes per block, blocks) of a privatized scatter_reduce of ``n`` lanes into ``size``
    elements: blocks of at least MIN_BLOCK lanes, at most MAX_BLOCKS blocks, and at most
    PRIVATE_LIMIT private elements. Depends on the sizes only, never on the thread count."""
    if n <= 0:
        return MIN_BLOCK, 0
    per = -(-n // MAX_BLOCKS)
    block = max(per, MIN_BLOCK)
    blocks = -(-n // block)
    cap = max(1, PRIVATE_LIMIT // max(size, 1))
    if blocks > cap:
        block = -(-n // cap)
        blocks = -(-n // block)
    return block, blocks


def exact_combine(op) -> bool:
    """Whether every order of combining a ``scatter_reduce`` op's lanes gives the same bits
    (so no grouping is prescribed): integer and bool combines, and ``min``/``max``, are
    exact; float ``add``/``mul`` and helper combines are not. ``op`` is a KIR
    ``scatter_reduce`` (its ``combine`` attribute and its destination's dtype are read)."""
    combine = op.attrs.get("combine")
    dtype = op.operands[0].type.dtype
    if combine == "helper":
        return False
    return not dtype.is_float or combine in _EXACT
