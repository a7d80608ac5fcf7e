"""The lowering pipeline, in order. Each step is a pass in ``passes/`` (one per file).

KIR -> KIR:        inline_helpers, expand_tensor_exprs, prove_bounds
KIR -> physical:   to_physical
physical -> same:  propagate_constants, specialize_unit_stride, schedule_parallel
"""
from __future__ import annotations

from intentc.kir.core import Module
from intentc.kir.verifier import verify_module
from intentc.lower import program as P
from intentc.lower.passes import check_laws, check_unique
from intentc.lower.passes import (expand_tensor_exprs, inline_helpers, keep_all_checks, propagate_constants,
                                  prove_bounds, schedule_parallel, serialize_points, specialize_unit_stride,
                                  to_physical)

KIR_PASSES = [
    ("inline_helpers", inline_helpers.run),
    ("expand_tensor_exprs", expand_tensor_exprs.run),
    ("prove_bounds", prove_bounds.run),
]
PHYSICAL_PASSES = [
    ("propagate_constants", propagate_constants.run),
    ("specialize_unit_stride", specialize_unit_stride.run),
    ("schedule_parallel", schedule_parallel.run),
]
PASS_NAMES = [name for name, _ in KIR_PASSES] + ["to_physical"] + [name for name, _ in PHYSICAL_PASSES]


SANITIZERS = ("bounds", "order", "unique", "race", "laws")  # race: order and unique (driver.py)


def lower(module: Module, verify_each: bool = True, print_after: str | None = None, log=None,
          sanitize: frozenset = frozenset(), point_order: str | None = None) -> P.Program:
    """Run every pass; verify KIR after each KIR pass; ``log(name, text)`` gets the IR
    after the pass named ``print_after`` (or after every pass for ``"all"``).

    ``sanitize``: ``"bounds"`` keeps every bounds check (no proof removes one); ``"unique"``
    checks scatters asserted unique; ``"laws"`` checks the laws of region helpers (R2, R6).
    ``point_order``: ``"increasing"`` or ``"decreasing"`` runs parallel points serially in
    that order (the two bodies of an ``--sanitize=order`` build)."""
    from intentc.kir.printer import print_module

    if "unique" in sanitize:  # scatters asserted unique are checked at run time (M4)
        module = check_unique.run(module)
    if "laws" in sanitize:  # region ops check their helpers' laws at run time (R2, R6; region_laws.py)
        module = check_laws.run(module)
    for name, run in KIR_PASSES:
        if name == "prove_bounds" and "bounds" in sanitize:
            module = keep_all_checks.run(module)
            continue
        module = run(module)
        if verify_each:
            verify_module(module)
        if log and print_after in (name, "all"):
            log(name, print_module(module))
    program = to_physical.run(module)
    if log and print_after in ("to_physical", "all"):
        log("to_physical", P.format_program(program))
    for name, run in PHYSICAL_PASSES:
        program = run(program)
        if log and print_after in (name, "all"):
            log(name, P.format_program(program))
    if point_order is not None:
        program = serialize_points.run(program, reverse=point_order == "decreasing")
    return program
