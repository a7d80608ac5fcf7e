"""The builtins of the ``I`` namespace: one table from name to handler.

Each family module contributes the ``BUILTINS`` dict of its handlers (pointwise math,
the math library's functions (``math_builtins.py``), domains, relations, reductions and
scans, region operations, contractions and histograms, scaled and sparse contractions,
memory); this module merges them, refusing a name claimed twice, and adds the forms
that exist only to be explained. A handler is ``handler(builder, name, node) -> value``
and checks its own arguments (keywords included). The "unknown builtin" hint lists exactly the table's names.
"""
from __future__ import annotations

import difflib

from intentc.diagnostics import error
from intentc.parse import ast
from intentc.sema.arguments import no_keywords
from intentc.sema.contract import BUILTINS as CONTRACT
from intentc.sema.domains import BUILTINS as DOMAINS
from intentc.sema.math_builtins import BUILTINS as MATH
from intentc.sema.memory import BUILTINS as MEMORY
from intentc.sema.pointwise import BUILTINS as POINTWISE
from intentc.sema.regions import BUILTINS as REGIONS
from intentc.sema.relations import BUILTINS as RELATIONS
from intentc.sema.scaled import BUILTINS as SCALED
from intentc.sema.structured import BUILTINS as STRUCTURED


def _parallel(b, name: str, node: ast.Call):
    no_keywords(name, node)
    raise error("I.parallel(...) is only iterated by a for loop", node.span, rule="P1",
                hint="write `for p in I.parallel(domain):`")


def _state_stream(b, name: str, node: ast.Call):
    no_keywords(name, node)
    raise error("there is no I.state_stream: a body re-segmented by a compiler-chosen extent has no "
                "unique meaning", node.func.span, rule="R0",
                hint="use I.region_fold / I.region_scan with summarize and combine helpers, or an ordered "
                     "for loop with carries")


def _partition(b, name: str, node: ast.Call):
    no_keywords(name, node)
    raise error("there is no I.partition: observable parts are ordinary domains and subregions",
                node.func.span, rule="L2",
                hint="write the parts' bounds yourself, e.g. axis[lo:hi]; unobservable blocking is the "
                     "compiler's job")


def merge(*tables: dict) -> dict:
    """One table from several; a name in two of them is a compiler bug."""
    merged: dict = {}
    for table in tables:
        for name, handler in table.items():
            if name in merged:
                raise ValueError(f"builtin I.{name} is defined twice")
            merged[name] = handler
    return merged


# I.minimum / I.maximum of two or more operands are math_builtins' (pointwise's take two).
_POINTWISE = {name: handler for name, handler in POINTWISE.items() if name not in MATH}
BUILTINS = merge(_POINTWISE, MATH, DOMAINS, RELATIONS, STRUCTURED, REGIONS, CONTRACT, SCALED, MEMORY,
                 {"parallel": _parallel})
# Names that are not builtins, with a diagnostic saying what to write instead (not listed).
NOT_BUILTINS = {"state_stream": _state_stream, "partition": _partition}


def call_builtin(b, name: str, node: ast.Call):
    """``I.name(...)``: the handler's value, or a diagnostic for a name that is no builtin."""
    handler = BUILTINS.get(name) or NOT_BUILTINS.get(name)
    if handler is not None:
        return handler(b, name, node)
    no_keywords(name, node)  # keyword arguments are reported before the unknown name
    known = sorted(BUILTINS)
    close = difflib.get_close_matches(name, known, n=1)
    raise error(f"unknown builtin I.{name}", node.func.span,
                hint=(f"did you mean I.{close[0]}? " if close else "") + "the builtins are "
                + ", ".join(f"I.{k}" for k in known) + " (docs/language.md)")
