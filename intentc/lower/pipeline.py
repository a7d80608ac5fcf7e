"""The lowering pipeline: one ordered list of passes (``PASSES``), each in ``passes/`` (one per file).

``lower()`` walks the list, runs each pass whose condition holds for the build's options,
verifies the IR after it (KIR always; the physical program when verification is on, see
``verify_each_requested``) and prints it when asked (``explain --print-after``).
``docs/passes.md`` lists the passes as this list runs them.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

from intentc.diagnostics import error
from intentc.kir.core import Module
from intentc.kir.printer import print_module
from intentc.kir.verifier import verify_module
from intentc.lower import program as P
from intentc.lower.fusion_remarks import fusion_remarks, tensor_expressions
from intentc.lower.physical_verifier import verify_program
from intentc.lower.passes import (check_laws, check_unique, collapse_point_nests, expand_contract_tiles, expand_lane_chains,
                                  expand_scaled_tiles, expand_sparse_tiles, expand_tensor_exprs, inline_helpers,
                                  keep_all_checks, propagate_constants, prove_bounds, schedule_parallel,
                                  serialize_points, specialize_unit_stride, to_physical)
from intentc.lower.remarks import adopt_tile_loops, definition_line, note_tile_nests

SANITIZERS = ("bounds", "order", "unique", "race", "laws")  # race: order and unique (driver.py)

KIR, TO_PHYSICAL, PHYSICAL = "kir", "kir->physical", "physical"  # what a pass takes -> what it makes


@dataclass(frozen=True)
class Options:
    """What a build asks of the lowering: ``sanitize`` (names from SANITIZERS) and
    ``point_order`` (``"increasing"``/``"decreasing"``: parallel points run serially in that
    order, the two bodies of an ``--sanitize=order`` build; None: parallel) and ``target``
    (``"cpu"``, or ``"gpu"`` for the ``sm_XX`` targets, whose code generator maps a
    contraction's tile nest onto thread blocks itself)."""
    sanitize: frozenset = frozenset()
    point_order: str | None = None
    target: str = "cpu"


@dataclass(frozen=True)
class Condition:
    """When a pass runs: always (``option`` empty), or when ``option`` (``"sanitize"``: the
    sanitizer ``value`` is on; ``"point_order"``: the order is ``value``; ``"target"``: the
    build's target kind is ``value``) holds, or — with
    ``negated`` — when it does not."""
    option: str = ""
    value: str = ""
    negated: bool = False

    def holds(self, options: Options) -> bool:
        if not self.option:
            return True
        if self.option == "sanitize":
            holds = self.value in options.sanitize
        elif self.option == "point_order":
            holds = options.point_order == self.value
        elif self.option == "target":
            holds = options.target == self.value
        else:
            raise ValueError(f"unknown pass condition option '{self.option}'")
        return holds != self.negated

    def __str__(self) -> str:
        if not self.option:
            return "always"
        if self.option == "target":
            return f"{'not ' if self.negated else ''}on {self.value.upper()} targets"
        text = f"--sanitize={self.value}" if self.option == "sanitize" else \
            f"point order {self.value} (a --sanitize=order body)"
        return f"without {text}" if self.negated else text


ALWAYS = Condition()


@dataclass(frozen=True)
class Pass:
    """One pass of the pipeline: ``run`` takes the IR of ``stage``'s left side and returns
    that of its right side (KIR -> KIR, KIR -> physical, physical -> physical)."""
    name: str
    stage: str
    run: Callable
    guarantee: str  # what holds after it (the pass file's docstring says more)
    condition: Condition = ALWAYS
    module: str = ""  # the file that holds it, for the docs (passes/<name>.py by default)
    remarks: bool = False  # ``run`` takes ``remarks=`` (a RemarkSink or None) and records its decisions

    @property
    def source(self) -> str:
        return self.module or f"intentc/lower/passes/{self.name}.py"


def _sanitizer(name: str, negated: bool = False) -> Condition:
    return Condition("sanitize", name, negated)


PASSES: tuple[Pass, ...] = (
    Pass("check_unique", KIR, check_unique.run,
         "every scatter asserted unique gets a zero-filled marker buffer; its expansion marks each written "
         "element atomically and fails on a second write (M4)", _sanitizer("unique")),
    Pass("check_laws", KIR, check_laws.run,
         "every region_fold/region_scan names its helpers by role; its expansion first checks their laws "
         "under several segmentations (R2, R6)", _sanitizer("laws")),
    Pass("inline_helpers", KIR, inline_helpers.run, "no call remains in kernels"),
    Pass("expand_tensor_exprs", KIR, expand_tensor_exprs.run,
         "no tensor expression remains: each is computed element by element where it is read (P6); "
         "structured and memory ops are loops over buffers or the outputs; returned tensors are result "
         "parameters (S1)"),
    Pass("prove_bounds", KIR, prove_bounds.run, "accesses proven in bounds by provenance carry inbounds (D5)",
         _sanitizer("bounds", negated=True), remarks=True),
    Pass("keep_all_checks", KIR, keep_all_checks.run, "no access carries inbounds: every one is checked (D5)",
         _sanitizer("bounds"), remarks=True),
    Pass("to_physical", TO_PHYSICAL, to_physical.run,
         "the loop program: variables, ordinal loops, explicit addresses and checks; each tile and "
         "lane-chain op is a tile nest, expanded by the passes below", remarks=True),
    Pass("expand_contract_tiles", PHYSICAL, expand_contract_tiles.run,
         "no contract_tiles nest remains: each is the parallel loop over blocks of C with its "
         "register-tiled micro-kernel (T3); on GPU targets the nest reaches the code generator, which "
         "maps it onto thread blocks (codegen/gpu_contract.py)", Condition("target", "cpu")),
    Pass("expand_scaled_tiles", PHYSICAL, expand_scaled_tiles.run,
         "no scaled_tiles nest remains: each is the register-tiled loop nest over the codes (T4)"),
    Pass("expand_sparse_tiles", PHYSICAL, expand_sparse_tiles.run,
         "no sparse24_tiles or csr_tiles nest remains: each is the register-tiled loop nest over the "
         "stored values (T5)"),
    Pass("expand_lane_chains", PHYSICAL, expand_lane_chains.run,
         "no lane_chains nest remains: each is vector code over one chain per lane, with the scalar "
         "loop of the same chains for strided tensors (R9)"),
    Pass("propagate_constants", PHYSICAL, propagate_constants.run,
         "variables assigned one constant are replaced by it (unit steps become literal)"),
    Pass("collapse_point_nests", PHYSICAL, collapse_point_nests.run,
         "a parallel loop whose points are a point loop of heavy points is one parallel loop over both",
         remarks=True),
    Pass("specialize_unit_stride", PHYSICAL, specialize_unit_stride.run,
         "each parallel nest has a contiguous fast path and a strided general path", remarks=True),
    Pass("schedule_parallel", PHYSICAL, schedule_parallel.run,
         "each parallel loop has a grain that depends on the problem size only", remarks=True),
    Pass("serialize_points", PHYSICAL, serialize_points.run_increasing,
         "parallel loops run their points serially, in increasing order (P1)", Condition("point_order", "increasing")),
    Pass("serialize_points_reversed", PHYSICAL, serialize_points.run_decreasing,
         "parallel loops run their points serially, in decreasing order (P1)", Condition("point_order", "decreasing"),
         "intentc/lower/passes/serialize_points.py"),
)
PASS_NAMES = [p.name for p in PASSES]
# Remarks on a pass that the pass itself does not record: (note(input, sink), report(output,
# note, sink)). Only with a remark sink; they change nothing. The tile-nest expansions' new
# loops take the origin of the nest they replace.
REMARK_OBSERVERS = {"expand_tensor_exprs": (lambda ir, sink: tensor_expressions(ir), fusion_remarks),
                    **{name: (note_tile_nests, adopt_tile_loops)
                       for name in ("expand_contract_tiles", "expand_scaled_tiles", "expand_sparse_tiles",
                                    "expand_lane_chains")}}
KIR_PASSES = [(p.name, p.run) for p in PASSES if p.stage == KIR]  # every KIR -> KIR pass, by name
PHYSICAL_PASSES = [(p.name, p.run) for p in PASSES if p.stage == PHYSICAL]


def passes_for(options: Options = Options(), stage: str | None = None) -> list[Pass]:
    """The entries of PASSES that a build with ``options`` runs, in order (of one ``stage``
    when given): ``passes_for(stage=KIR)`` are a default build's KIR passes."""
    return [p for p in PASSES if p.condition.holds(options) and (stage is None or p.stage == stage)]

# The physical program's verifier (``verify_program(program)``, raising on a malformed
# program), run after every pass that makes or changes one when verification is on.
PHYSICAL_VERIFIER: Callable[[P.Program], None] | None = verify_program

VERIFY_EACH_ENV = "INTENTC_VERIFY_EACH"


def pass_table() -> str:
    """PASSES as a Markdown table, in the order they run (``docs/passes.md`` holds it)."""
    rows = ["| pass | stage | runs | file | guarantee |", "|---|---|---|---|---|"]
    for entry in PASSES:
        rows.append(f"| `{entry.name}` | {entry.stage} | {entry.condition} | `{entry.source}` | {entry.guarantee} |")
    return "\n".join(rows) + "\n"


def verify_each_requested() -> bool:
    """Whether the debug verification of every pass's output is on for this process
    (``INTENTC_VERIFY_EACH=1``; ``intentc build/explain --verify-each`` set it)."""
    return os.environ.get(VERIFY_EACH_ENV, "") not in ("", "0")


def lower(module: Module, verify_each: bool | None = None, print_after: str | None = None, log=None,
          sanitize: frozenset = frozenset(), point_order: str | None = None, target: str = "cpu",
          physical_verifier: Callable[[P.Program], None] | None = None, remarks=None) -> P.Program:
    """Run the passes of PASSES whose conditions hold, in order, and return the physical program.

    The KIR verifier runs after every KIR pass, always (it changes nothing). With
    ``verify_each`` (default: ``verify_each_requested()``) the physical verifier
    (``physical_verifier``, default PHYSICAL_VERIFIER) runs after every physical pass.
    ``log(name, text)`` gets the IR after the pass named ``print_after`` (or after every pass
    for ``"all"``).

    ``sanitize``: ``"bounds"`` keeps every bounds check (no proof removes one); ``"unique"``
    checks scatters asserted unique (M4); ``"laws"`` checks the laws of region helpers (R2, R6).
    ``point_order``, ``target``: see ``Options``. ``remarks``: a ``remarks.RemarkSink`` that the
    passes marked ``remarks`` record their decisions in (the program is the same with or without it)."""
    if print_after not in (None, "all", *PASS_NAMES):
        raise error(f"unknown lowering pass '{print_after}'", hint="passes: " + ", ".join(PASS_NAMES) + ", all")
    options = Options(frozenset(sanitize), point_order, target)
    if verify_each is None:
        verify_each = verify_each_requested()
    verify_physical = (physical_verifier or PHYSICAL_VERIFIER) if verify_each else None
    if remarks is not None:  # a remark about a kernel as a whole points at its definition
        remarks.kernel_spans.update((func.name, definition_line(func.span)) for func in module.kernels)
    ir = module
    for entry in PASSES:
        if not entry.condition.holds(options):
            continue
        observer = REMARK_OBSERVERS.get(entry.name) if remarks is not None else None
        noted = observer[0](ir, remarks) if observer else None
        ir = entry.run(ir, remarks=remarks) if entry.remarks and remarks is not None else entry.run(ir)
        if observer:
            observer[1](ir, noted, remarks)
        if entry.stage == KIR:
            verify_module(ir)
        elif verify_physical is not None:
            verify_physical(ir)
        if log and print_after in (entry.name, "all"):
            log(entry.name, print_module(ir) if entry.stage == KIR else P.format_program(ir))
    return ir
