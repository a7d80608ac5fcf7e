"""The interpreter proper: runs the functions of a KIR module one op at a time.

``Interpreter.run_block`` looks each op up in the one handler table
(``intentc/interp/registry.py``) and calls ``handler(interpreter, op, env)``; ``env``
maps ``id(value)`` to the value's Python value (the representation is in ``numeric.py``).
The interpreter also holds what handlers share during a run: the kernel's name and
parameter names (for messages), the arrays its ``mut`` parameters write, the order of
``parallel`` points, the sanitizer asked for, and per-op plans worked out once per call.
"""
from __future__ import annotations

import random

import numpy as np

from intentc.interp.calling import KernelCall
from intentc.interp.registry import HANDLERS
from intentc.kir.core import Block, Function, Module, Op

PARALLEL_ORDERS = ("forward", "reverse", "shuffle")
# None; "laws" (region ops, structured.py); "order" (order_sanitizer.py); "race", "unique",
# "race,unique" (memory.py)
SANITIZERS = (None, "laws", "order", "race", "unique", "race,unique")


class Interpreter:
    """Executes the functions of one KIR module.

    ``parallel_order`` is ``"forward"`` (row-major), ``"reverse"`` or ``"shuffle"`` (a
    fresh permutation for every ``parallel`` op executed, from ``seed``)."""

    def __init__(self, module: Module, parallel_order: str = "forward", seed: int = 0, sanitize: str | None = None):
        if sanitize not in SANITIZERS:
            raise ValueError(f"sanitize must be one of {SANITIZERS}, got {sanitize!r}")
        self.sanitize = sanitize
        self.seed = seed
        if parallel_order not in PARALLEL_ORDERS:
            raise ValueError(f"parallel_order must be one of {', '.join(PARALLEL_ORDERS)}, got {parallel_order!r}")
        self.module = module
        self.functions = {f.name: f for f in module.functions}
        self.parallel_order = parallel_order
        self.rng = random.Random(seed)
        self.kernel_name = ""
        self.names: dict[int, str] = {}
        self.written: list[np.ndarray] = []  # the arrays of the kernel's mut parameters
        self.plans: dict[int, tuple] = {}  # per op (alive while this interpreter runs): what it needs

    # -- the calling convention of a loaded kernel ----------------------------------------
    def call(self, kernel: str, *args, out=None, **kwargs):
        """Call ``kernel`` as ``intentc.load(...).<kernel>`` would (``calling.py``)."""
        func = self.functions.get(kernel)
        if func is None or func.kind != "kernel":
            known = ", ".join(f.name for f in self.module.kernels)
            raise AttributeError(f"module {self.module.name} has no kernel '{kernel}' (kernels: {known})")
        call = KernelCall(self, func)
        return call.run(args, kwargs, out)

    # -- functions, blocks and ops ----------------------------------------------------------
    def run_function(self, func: Function, args: list) -> list:
        env: dict[int, object] = {}
        for value, arg in zip(func.args, args):
            env[id(value)] = arg
        return self.run_block(func.body, env)

    def run_block(self, block: Block, env: dict) -> list:
        """Run a block's ops; return the operands of its terminator."""
        for op in block.ops:
            handler = HANDLERS.get(op.name)
            if handler is None:
                raise NotImplementedError(f"the interpreter has no meaning for KIR op '{op.name}'")
            result = handler(self, op, env)
            if result is not None:
                return result
        return []

    def where(self, op: Op) -> str:
        return f" (at {op.span.location()})" if op.span is not None else ""

    def order(self, count: int):
        if self.parallel_order == "forward":
            return range(count)
        if self.parallel_order == "reverse":
            return range(count - 1, -1, -1)
        ordinals = list(range(count))
        self.rng.shuffle(ordinals)
        return ordinals
