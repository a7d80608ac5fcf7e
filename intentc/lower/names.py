"""Fresh variable names for the physical program.

One rule for every pass that adds variables (``to_physical`` and the tile-nest expansions): a
hint is used as it is when the kernel does not hold that name yet, and otherwise gets the
next number of a per-kernel counter (``acc``, ``acc_7``). The emitters keep one stack slot per
name, so a fresh name must differ from every variable and tensor of the kernel.
"""
from __future__ import annotations

import itertools

from intentc.lower import program as P


class NameSupply:
    """The names a kernel holds, and fresh ones beside them."""

    def __init__(self, taken=()):
        self.names: set[str] = set(taken)
        self.counter = itertools.count()

    @classmethod
    def of_kernel(cls, kernel: P.Kernel) -> "NameSupply":
        """A supply that avoids every name in ``kernel``: parameters, variables, buffers."""
        taken = {p.name for p in kernel.params}
        for s in P.walk_stmts(kernel.body):
            taken.update(v.name for v in P.stmt_defines(s))
            if isinstance(s, P.Alloc):
                taken.add(s.tensor.name)
            for e in P.stmt_exprs(s):
                taken.update(x.var.name for x in P.walk_expr(e) if isinstance(x, P.Read))
        return cls(taken)

    def add(self, name: str) -> None:
        self.names.add(name)

    def fresh(self, hint: str, dtype) -> P.Var:
        base = (hint or "v").replace(".", "_")
        name = base
        while name in self.names:
            name = f"{base}_{next(self.counter)}"
        self.names.add(name)
        return P.Var(name, dtype)
