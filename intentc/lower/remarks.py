"""Schedule remarks: what the lowering and code generation decided about each loop nest, in source terms.

A pass that decides something a user may want to know — a loop is threaded or not, collapsed,
versioned for unit strides, a bounds check removed or kept, a loop vectorised — records a
``Remark`` in the ``RemarkSink`` it is given (``kind``: ``applied``, ``missed`` with the reason,
or ``analysis``), in the spirit of LLVM's ``-Rpass``/``-Rpass-missed`` and Halide's schedule
printing. Passes run without a sink by default and record nothing; with one they emit exactly
the same program (recording reads the IR, never changes it).

Remarks speak in the program's terms: the span of the construct (the ``for`` statement, the
expression whose elements a loop computes), its source text and the names the user wrote,
never the physical program's variable names. ``to_physical`` records where each physical loop
came from (``LoopOrigin``, keyed by the loop variable's name, unique in its kernel) so that the
physical passes can say which source loop they changed.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace

from intentc.diagnostics import Diagnostic
from intentc.lower import program as P
from intentc.source import Span

KINDS = ("applied", "missed", "analysis")


@dataclass(frozen=True)
class Remark:
    """One decision: ``kind`` (KINDS; a ``missed`` message starts with what did not happen,
    "not threaded: ...", then why), the pass (or code-generation step) that made it, the
    kernel, the span of the source construct it is about (None: the kernel as a whole) and a
    message in source terms."""

    kind: str
    pass_name: str
    kernel: str
    span: Span | None
    message: str

    def sort_key(self) -> tuple:
        where = (self.span.source.path, self.span.start, self.span.end) if self.span is not None else ("", -1, -1)
        return where  # remarks of one construct keep the order the passes made them in

    def diagnostic(self) -> Diagnostic:
        """The remark as a diagnostic of severity ``remark`` (rendered like an error: location,
        ``remark[pass]: message``, the source line, a caret)."""
        return Diagnostic(self.message, _first_line(self.span), self.pass_name, severity="remark")

    def as_json(self) -> dict:
        out = {"kind": self.kind, "pass": self.pass_name, "kernel": self.kernel, "message": self.message}
        if self.span is not None:
            out.update(file=self.span.source.path, line=self.span.line, column=self.span.column,
                       source=source_text(self.span))
        return out


@dataclass(frozen=True)
class LoopOrigin:
    """Where a physical loop comes from: the span of its source construct, the names of its
    points as the user wrote them (empty for a loop the compiler made over an expression's
    elements), and what the construct is (``parallel``, ``for``, ``reduction``, ``elements``)."""

    span: Span | None
    names: tuple[str, ...]
    construct: str
    carries: tuple[str, ...] = ()  # the variables an ordered loop updates, as the user named them

    def describe(self) -> str:
        """The loop in a user's words: "the parallel loop over i", "the reduction `I.sum(x)`"."""
        names = ", ".join(self.names)
        if self.construct == "parallel" and names:
            return f"the parallel loop over {names}"
        if self.construct == "for" and names:
            return f"the ordered loop over {names}"
        text = source_text(self.span)
        if text.startswith("return "):  # a returned expression's elements
            text = text[len("return "):]
        if self.construct == "reduction":
            return f"the reduction `{text}`" if text else "a reduction"
        if self.construct == "tiles":
            return f"the register-tiled loop nest of `{text}`" if text else "a register-tiled loop nest"
        return f"the loop over the elements of `{text}`" if text else "a loop the compiler made"


@dataclass
class RemarkSink:
    """Collects the remarks of one compilation and the origins of its physical loops."""

    remarks: list = field(default_factory=list)
    origins: dict = field(default_factory=dict)  # (kernel, loop variable name) -> LoopOrigin
    kernel_spans: dict = field(default_factory=dict)  # kernel name -> Span of its definition
    user_names: dict = field(default_factory=dict)  # kernel name -> physical variables named as in the source
    tile_origins: dict = field(default_factory=dict)  # kernel name -> LoopOrigin of each tile nest, in order

    def add(self, kind: str, pass_name: str, kernel: str, span: Span | None, message: str) -> None:
        assert kind in KINDS, kind
        remark = Remark(kind, pass_name, kernel, span if span is not None else self.kernel_spans.get(kernel), message)
        if remark not in self.remarks:  # a nest's two unit-stride versions say the same thing once
            self.remarks.append(remark)

    def note_name(self, func, name: str) -> None:
        """Record that variable ``name`` of kernel ``func`` (a KIR function) is a name of its source."""
        if func.span is not None and re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", func.span.text):
            self.user_names.setdefault(func.name, set()).add(name)

    def origin(self, kernel: str, var_name: str) -> LoopOrigin | None:
        return self.origins.get((kernel, var_name))

    def sorted(self) -> list[Remark]:
        """The remarks in source order (file, position, kind, pass, message): stable across runs."""
        return sorted(self.remarks, key=Remark.sort_key)


def loop_origin(op, point=None) -> LoopOrigin:
    """The ``LoopOrigin`` of a loop op: its span, or the first span inside it for a loop the
    lowering made over an expression's elements; the user's name of ``point`` for a loop the
    user wrote."""
    span = op.span or _first_span(op)
    written = span is not None and span.text.startswith("for ")
    if op.name == "fold":
        return LoopOrigin(span, (), "reduction")
    if written and point is not None and point.hint:
        carries = tuple(r.hint.split(".")[0] for r in op.results if r.hint)
        return LoopOrigin(span, (point.hint.split(".")[0],), "parallel" if op.name == "parallel" else "for", carries)
    return LoopOrigin(span, (), "elements")


def _first_span(op):
    for region in op.regions:
        for inner in region.ops:
            span = inner.span or _first_span(inner)
            if span is not None:
                return span
    return None


def note_tile_nests(program, remarks) -> dict:
    """Before a tile-nest expansion: per kernel, each tile nest's (kind, origin) under the name of
    the last loop with an origin before it in program order (None at the start). The tile nests
    still in the program are those ``to_physical`` recorded, in the same order."""
    anchors = {}
    for kernel in program.kernels:
        pending = list(remarks.tile_origins.get(kernel.name, ()))
        last, found = None, {}
        for s in P.walk_stmts(kernel.body):
            if isinstance(s, P.Loop) and remarks.origin(kernel.name, s.var.name) is not None:
                last = s.var.name
            elif isinstance(s, P.TileNest) and pending:
                found.setdefault(last, []).append((s.kind, pending.pop(0)))
        anchors[kernel.name] = found
    return anchors


def adopt_tile_loops(program, anchors: dict, remarks) -> None:
    """After a tile-nest expansion: each new loop (one without an origin) takes the origin of the
    expanded tile nest that stood after the same loop with an origin; the nests of the kinds
    left for a later pass keep their place in ``tile_origins``."""
    for kernel in program.kernels:
        left = {s.kind for s in P.walk_stmts(kernel.body) if isinstance(s, P.TileNest)}
        found = {anchor: [origin for kind, origin in nests if kind not in left]
                 for anchor, nests in anchors.get(kernel.name, {}).items()}
        last = None
        for s in P.walk_stmts(kernel.body):
            if not isinstance(s, P.Loop):
                continue
            origin = remarks.origin(kernel.name, s.var.name)
            if origin is not None and origin.construct != "tiles":
                last = s.var.name
            elif origin is None and found.get(last):
                remarks.origins[(kernel.name, s.var.name)] = replace(found[last][0], construct="tiles")
        remarks.tile_origins[kernel.name] = [origin for nests in anchors.get(kernel.name, {}).values()
                                             for kind, origin in nests if kind in left]


def select(remarks, which: str = "all") -> list[Remark]:
    """The remarks of one kind (``which`` in KINDS) or all of them."""
    return [r for r in remarks if which == "all" or r.kind == which]


def render_text(remarks) -> str:
    """Remarks as diagnostics' text, one after the other."""
    return "".join(r.diagnostic().render_plain() + "\n" for r in remarks)


def render_json(remarks) -> str:
    """Remarks as one JSON document (``{"remarks": [...]}``), for tools."""
    return json.dumps({"remarks": [r.as_json() for r in remarks]}, indent=1, sort_keys=True) + "\n"


def source_text(span: Span | None, limit: int = 60) -> str:
    """The first line of the source under ``span``, stripped and shortened to ``limit`` characters."""
    if span is None:
        return ""
    text = span.text.strip().split("\n", 1)[0].rstrip()
    if text.endswith(":") and text.startswith("for "):
        text = text[:-1]
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _first_line(span: Span | None) -> Span | None:
    """``span`` cut at the end of its first line (a ``for`` statement's caret under its header)."""
    if span is None:
        return None
    text = span.text
    cut = text.find("\n")
    return span if cut < 0 else Span(span.source, span.start, span.start + len(text[:cut].rstrip()))


def definition_line(span: Span | None) -> Span | None:
    """A kernel's span narrowed to its ``def`` line (past its decorator), for remarks about the kernel."""
    if span is None:
        return None
    text = span.text
    at = text.find("def ")
    at = 0 if at < 0 else at
    end = text.find("\n", at)
    return Span(span.source, span.start + at, span.start + (len(text) if end < 0 else end))


def location(span: Span | None) -> str:
    """``line:col`` of a span, for messages that name another construct."""
    return f"{span.line}:{span.column}" if span is not None else "?"
