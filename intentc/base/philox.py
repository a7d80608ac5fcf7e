"""The constants of Philox4x32-10 (Random123), the counter-based generator of ``I.philox``
(N1): the interpreter (``intentc/interp/memory.py``) computes it and the lowering
(``intentc/lower/memory_lowering.py``) emits it from these same numbers.

Each of the ``ROUNDS`` rounds multiplies two counter words by ``PHILOX_M`` (32x32 -> 64
bits) and, from the second round on, bumps the two key words by the Weyl constants
``PHILOX_W`` (u32 wrap-around).
"""
from __future__ import annotations

PHILOX_M = (0xD2511F53, 0xCD9E8D57)
PHILOX_W = (0x9E3779B9, 0xBB67AE85)
ROUNDS = 10
