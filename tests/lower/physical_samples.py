"""The physical program of every sample and benchmark kernel after each physical pass.

``stages()`` lowers each source like ``pipeline.lower`` does (the KIR passes, ``to_physical``,
then ``pipeline.PHYSICAL_PASSES`` in order) and also applies ``serialize_points`` (both point
orders) to the last program; ``laws=True`` adds the laws sanitizer's KIR pass first, which
makes the region helpers' run-time law checks (a larger, different program). Cached per session.
"""
from __future__ import annotations

import functools
from pathlib import Path

from intentc.driver import frontend, read_source
from intentc.lower import pipeline
from intentc.lower import program as P
from intentc.lower.passes import check_laws, serialize_points, to_physical

REPO = Path(__file__).resolve().parents[2]
SOURCES = sorted(REPO.glob("samples/*.intent")) + sorted(REPO.glob("benchmarks/kernels/*.intent"))


@functools.lru_cache(maxsize=None)
def stages(source: Path, laws: bool = False) -> tuple[tuple[str, P.Program], ...]:
    """``(pass name, program after it)`` for one source, in pipeline order."""
    path = str(source.relative_to(REPO))
    module = frontend(read_source(source), path)
    if laws:
        module = check_laws.run(module)
    for entry in pipeline.passes_for(stage=pipeline.KIR):
        module = entry.run(module)
    program = to_physical.run(module)
    out = [("to_physical", program)]
    for entry in pipeline.passes_for(stage=pipeline.PHYSICAL):
        program = entry.run(program)
        out.append((entry.name, program))
    for reverse in (False, True):
        out.append((f"serialize_points(reverse={reverse})", serialize_points.run(program, reverse=reverse)))
    return tuple(out)


def source_id(source: Path) -> str:
    return source.stem if source.parent.name == "samples" else f"{source.parent.name}/{source.stem}"
