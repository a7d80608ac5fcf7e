"""The one handler table of the interpreter: KIR op name -> ``handler(it, op, env)``.

Each family module defines the meaning of some ops in a ``HANDLERS`` dict of its own and
imports nothing of this module; this module collects them, in ``FAMILIES`` order, and
refuses two families defining one op. The race/unique sanitizer's ``memory.SANITIZED``
then replaces ``parallel``, ``load`` and ``store`` on purpose (its handlers run the plain
ones of ``core_ops`` unless a race or unique sanitizer is on).

Adding a family of ops: write ``intentc/interp/<family>.py`` with a docstring saying
which ops it defines and which spec rules it serves, and a ``HANDLERS`` dict of
functions ``handler(it, op, env)``: ``it`` is the running ``machine.Interpreter``
(``it.run_block(region, env)`` runs a region, ``it.kernel_name`` and ``it.where(op)``
make messages), ``env`` maps ``id(value)`` to values, a terminator returns its operands,
any other handler ``None``. It may import ``intentc.base``, ``intentc.kir``,
``numeric.py`` (the scalar rules) and ``core_ops.py`` (``element`` for a checked access),
never ``machine.py`` or this module. Then import it here and add its ``HANDLERS`` to
``FAMILIES``; ``tests/e2e/test_differential_samples.py`` checks that every op the front
end emits has a meaning.
"""
from __future__ import annotations

from intentc.interp import core_ops, lowered, memory, scaled, structured

FAMILIES = (
    ("core_ops", core_ops.HANDLERS),
    ("structured", structured.HANDLERS),  # reduce, scan, fold, buffer, region_fold, region_scan (T1, T2, R2-R8)
    ("memory", memory.HANDLERS),  # gather, scatter, scatter_reduce, atomics, philox (M1-M6, N1)
    ("scaled", scaled.HANDLERS),  # scaled_contract (T4), sparse_contract (T5)
    ("lowered", lowered.HANDLERS),  # contract_tiles, lane_chains, scaled_tiles, sparse24_tiles, csr_tiles
)


def _collect() -> dict:
    table: dict = {}
    owner: dict = {}
    for family, handlers in FAMILIES:
        for name, handler in handlers.items():
            if name in table:
                raise RuntimeError(f"KIR op '{name}' has a meaning in both {owner[name]} and {family}")
            table[name] = handler
            owner[name] = family
    table.update(memory.SANITIZED)  # parallel, load, store with the race/unique sanitizer's records
    return table


HANDLERS = _collect()
