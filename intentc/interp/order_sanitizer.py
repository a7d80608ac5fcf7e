"""The interpreter's order sanitizer (``sanitize="order"``, P1, P3).

A correct program cannot observe the order in which the points of an ``I.parallel``
loop run (P1); a result that depends on it is a race (P3). The sanitizer runs the kernel
three times from copies of the same arguments, with the points forward, reversed and
shuffled, and compares the bytes of everything written: the result and every argument.
"""
from __future__ import annotations

import copy

import numpy as np

from intentc.base.status import E_SANITIZER, KernelError
from intentc.interp.machine import Interpreter
from intentc.kir.core import Module


def run_in_every_order(module: Module, kernel: str, args, out, kwargs: dict, seed: int):
    """Run ``kernel`` with parallel points forward, reversed and shuffled (from ``seed``),
    each from a copy of the same arguments; raise ``KernelError(INTENT_E_SANITIZER)`` when
    a result or a written argument differs, else write the forward run into the caller's
    arrays and return its result."""
    runs = []
    for order in ("forward", "reverse", "shuffle"):
        a, o, k = copy.deepcopy((list(args), out, dict(kwargs)))
        interpreter = Interpreter(module, parallel_order=order, seed=seed)
        with np.errstate(all="ignore"):
            result = interpreter.call(kernel, *a, out=o, **k)
        runs.append((order, result, a, o, k))
    first = runs[0]
    for order, result, a, o, k in runs[1:]:
        pairs = [("the result", first[1], result)]
        pairs += [(f"argument {i}", x, y) for i, (x, y) in enumerate(zip(first[2], a))]
        pairs += [(f"'{name}'", first[4][name], k[name]) for name in k]
        for what, x, y in pairs:
            xs = x if isinstance(x, tuple) else (x,)
            ys = y if isinstance(y, tuple) else (y,)
            for xa, ya in zip(xs, ys):
                if isinstance(xa, np.ndarray) and not np.array_equal(xa.view(np.uint8), ya.view(np.uint8)):
                    raise KernelError(E_SANITIZER, f"{kernel}: order sanitizer: {what} differs between the "
                                                   f"forward and the {order} order of I.parallel points; the "
                                                   f"result depends on the order of points, which P1 forbids "
                                                   f"(a race, P3)")
    # The forward run is the result; write it into the caller's arrays.
    for original, written in zip(args, first[2]):
        if isinstance(original, np.ndarray) and original.flags.writeable:
            original[...] = written
    if out is not None:
        for original, written in zip(out if isinstance(out, (tuple, list)) else (out,),
                                     first[3] if isinstance(first[3], (tuple, list)) else (first[3],)):
            original[...] = written
    return first[1]
