"""The interpreter's entry point for a KIR module: ``interpret_module``.

``intentc.interpret`` (``intentc/driver.py``) parses and checks a source first, then
calls this; a caller holding a KIR ``Module`` can call it directly.
"""
from __future__ import annotations

import numpy as np

from intentc.interp.machine import Interpreter
from intentc.interp.order_sanitizer import run_in_every_order
from intentc.kir.core import Module


def interpret_module(module: Module, kernel: str, *args, out=None, parallel_order: str = "forward", seed: int = 0,
                     sanitize: str | None = None, **kwargs):
    """Run ``kernel`` of a KIR module (as the front end builds it, before lowering).

    Arguments, ``out=``, returned tensors and ``KernelError``s follow the calling
    convention of a kernel loaded with ``intentc.load``: read-only inputs are never
    written, ``mut`` parameters are written in place, returned tensors are new arrays
    shaped by the declared extents. ``parallel_order`` ("forward", "reverse" or "shuffle"
    with ``seed``) picks the order in which ``parallel`` points run. ``sanitize="laws"``
    checks the laws of every region op under random segmentations
    (``structured.LawViolation``); ``sanitize="order"`` runs every order and compares
    (``order_sanitizer.py``); ``sanitize="race"`` reports conflicting accesses of two
    parallel points (``memory.RaceError``, P3) and ``sanitize="unique"`` a ``unique=True``
    scatter that writes one element twice (``memory.UniqueViolation``, M4);
    ``"race,unique"`` does both. (A kernel whose parameters are named ``parallel_order``,
    ``seed`` or ``sanitize`` can be run with ``Interpreter(module).call(...)``.)
    """
    if sanitize == "order":
        return run_in_every_order(module, kernel, args, out, kwargs, seed)
    interpreter = Interpreter(module, parallel_order=parallel_order, seed=seed, sanitize=sanitize)
    with np.errstate(all="ignore"):
        return interpreter.call(kernel, *args, out=out, **kwargs)
