"""Remarks on run-time checks: which element accesses keep their bounds check and why, which lost
it, and the extent checks a kernel makes once per call. ``prove_bounds`` and ``keep_all_checks``
call ``bounds_remarks`` after marking the accesses (only with a remark sink)."""
from __future__ import annotations

from intentc.kir.types import TensorType

ACCESSES = ("load", "store", "atomic_rmw", "atomic_cas", "atomic_load", "atomic_store")  # element accesses


def bounds_remarks(func, remarks, pass_name: str, built_in_bounds: dict, representable=None) -> None:
    """Remarks on ``func``'s element accesses, one per source construct: the checks removed (proven,
    or built in bounds by fusion) and those that stay, with the reason; and its extent checks."""
    by_span: dict = {}
    for op in func.walk():
        if op.name in ACCESSES and isinstance(op.operands[0].type, TensorType) and op.span is not None:
            by_span.setdefault((op.span.start, op.span.end), (op.span, []))[1].append(op)
        elif op.name == "assert_eq" and op.span is not None and op.attrs.get("rule") == "S1":
            what = _equation(op.attrs.get("what", ""))
            remarks.add("analysis", pass_name, func.name, op.span, f"extent check stays, once per call (S1): {what}")
    for span, ops in by_span.values():
        removed, built, kept = [], [], []
        for op in ops:
            tensor = _name(op.operands[0], op.span)
            marks = op.attrs.get("inbounds", [False] * op.operands[0].type.rank)
            for axis, proven in enumerate(marks):
                entry = tensor if op.operands[0].type.rank == 1 else f"{tensor} (axis {axis})"
                if proven:
                    fused = axis < len(built_in_bounds.get(id(op), ())) and built_in_bounds[id(op)][axis]
                    (built if fused else removed).append(entry)
                else:
                    why = "--sanitize=bounds keeps every check" if representable is None else \
                        "the index is not an affine function of loop points (it is read from data, or non-affine, " \
                        "C6)" if not representable(op, axis) else \
                        "the loop domains do not bound the index within the extent (D5)"
                    kept.append(f"{entry}: {why}")
        text = span.text.strip().split("\n", 1)[0]
        if kept:
            remarks.add("missed", pass_name, func.name, span,
                        f"bounds check not removed on `{text}`: " + "; ".join(dict.fromkeys(kept)))
        reasons = []
        if removed:
            reasons.append(f"{', '.join(dict.fromkeys(removed))} proven within the extents from the loop domains (D5)")
        if built:
            reasons.append(f"{', '.join(dict.fromkeys(built))} indexed by the points of the expression's own "
                           "domain, in bounds by construction")
        if reasons:
            remarks.add("applied", pass_name, func.name, span,
                        f"bounds checks removed on `{text}`: " + "; ".join(reasons))


def _equation(what: str) -> str:
    """An extent check's failure message (``A = %lld but B = %lld``) as the equation it checks."""
    head, colon, equation = what.partition(": ")
    if not colon:
        head, equation = "", what
    left, but, right = equation.partition(" but ")
    if not but:
        return what.replace(" %lld", "").replace("%lld", "")
    left = left.replace(" = %lld", "")
    if " = %lld" in right:
        right = right.replace(" = %lld", "")
    elif right.startswith("the signature declares"):
        right = "the extent the signature declares"
    elif right.startswith("the kernel's result needs"):
        right = "the extent of the kernel's result"
    else:
        right = right.replace(" %lld", "").replace("%lld", "")
    return f"{head}{': ' if head else ''}{left} must equal {right}"


def _name(value, span) -> str:
    """The tensor as the source names it: its variable, or the text before the subscript."""
    if value.hint:
        return value.hint.split(".")[0]
    text = span.text.strip()
    return text.split("[", 1)[0] if "[" in text and text.split("[", 1)[0].isidentifier() else "a tensor"
