"""Fusion remarks: which tensor expressions ``expand_tensor_exprs`` computed inside which loop.

``expand_tensor_exprs`` computes each tensor expression element by element where it is read
(P6): its element operations land in the body of the loop that reads them, and keep the span
of the expression they come from. So the spans of the tensor-valued ops before the pass, found
again inside a loop after it, say what was fused into that loop; an expression whose span
names a buffer after it was materialised instead. The pipeline calls ``tensor_expressions``
before the pass and ``fusion_remarks`` after it, when remarks are asked for; neither changes
the module.
"""
from __future__ import annotations

from intentc.kir.types import TensorType
from intentc.lower.remarks import location, loop_origin, source_text

_LOOPS = ("parallel", "for", "fold", "while")
_SHOWN = 6  # expressions named per loop; the rest are counted
_VIEWS = ("dim", "view", "slice", "row")  # reading these moves no data: not worth a remark
_STRUCTURED = ("reduce", "scan", "region_fold", "region_scan", "contract", "histogram", "scaled_contract",
               "sparse_contract")  # tensor expressions even when their value is a scalar (I.sum(x))


def tensor_expressions(module) -> dict:
    """Kernel name -> {(start, end): span} of the ops that make tensor values or reduce tensors
    (before expansion)."""
    out = {}
    for func in module.kernels:
        found = out.setdefault(func.name, {})
        for op in func.walk():
            if op.span is not None and op.name not in _VIEWS and (
                    op.name in _STRUCTURED or any(isinstance(r.type, TensorType) for r in op.results)):
                found.setdefault((op.span.start, op.span.end), op.span)
    return out


def fusion_remarks(module, expressions: dict, remarks) -> None:
    """Remarks on each loop of the expanded ``module`` that computes tensor expressions."""
    for func in module.kernels:
        spans = expressions.get(func.name, {})
        if not spans:
            continue
        buffers = {id(op.result) for op in func.walk() if op.name == "buffer"}
        for op in func.walk():
            if op.name not in _LOOPS:
                continue
            origin = loop_origin(op, op.regions[0].args[0] if op.regions and op.regions[0].args else None)
            if op.span is None and origin.span is not None and any(
                    inner.name == "store" and id(inner.operands[0]) in buffers for inner in _body_ops(op)):
                remarks.add("analysis", "expand_tensor_exprs", func.name, origin.span,
                            f"materialised: `{source_text(origin.span)}` is computed into a buffer of its own (its "
                            "values, or its blocks' partial results) before it is read")
            own = (origin.span.start, origin.span.end) if origin.span is not None else None
            inside = []
            for inner in _body_ops(op):
                key = (inner.span.start, inner.span.end) if inner.span is not None else None
                if key in spans and key != own and key not in inside:
                    inside.append(key)
            if not inside:
                continue
            inside.sort()
            names = [f"`{source_text(spans[k], 40)}` ({location(spans[k])})" for k in inside[:_SHOWN]]
            more = f" and {len(inside) - _SHOWN} more" if len(inside) > _SHOWN else ""
            remarks.add("applied", "expand_tensor_exprs", func.name, origin.span,
                        f"fused into {origin.describe()}: {', '.join(names)}{more}, computed where they are read, "
                        "with no buffer between them (P6)")


def _body_ops(loop):
    """The ops of ``loop``'s regions and of the non-loop ops nested in them (an ``if``'s
    branches), not those of nested loops, which get remarks of their own."""
    for region in loop.regions:
        for op in region.ops:
            yield op
            if op.name not in _LOOPS:
                yield from _body_ops(op)
