"""Physical expressions (counts, grains, offsets) written in the source's terms, for remarks.

A count in the physical program reads the lowering's own variables (``len``, ``sub_len``,
``v_4``); a remark shows it as the user would write it: the variables the source names stay
(``N``, ``T``), the others are replaced by their definitions, tensor fields read as
``x.shape[0]``, and constants fold. ``Terms.text`` returns None when the result is too long to
help (a remark then says "a run-time count").
"""
from __future__ import annotations

from collections import Counter

from intentc.lower import program as P

_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "div": "/", "mod": "%"}
_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "//": 2, "/": 2, "%": 2}
_LIMIT = 48


class Terms:
    """The definitions of one kernel's variables that are assigned once, and the names it may show."""

    def __init__(self, kernel: P.Kernel, shown: set):
        counts = Counter(s.var for s in P.walk_stmts(kernel.body) if isinstance(s, (P.Assign, P.Loop)))
        self.defs = {s.var: s.value for s in P.walk_stmts(kernel.body)
                     if isinstance(s, P.Assign) and counts[s.var] == 1}
        self.shown = set(shown) | {p.name for p in kernel.params if isinstance(p, P.Var)}
        # A tensor's extent that the source names (``N: index = x.shape[0]``), also through the
        # entry's extent checks (``check eq(v, N)`` with ``v = out.shape[0]``): shown by that name.
        self.extent_names = {}
        for var, value in self.defs.items():
            if isinstance(value, P.Field) and value.kind == "shape" and var.name in self.shown:
                self.extent_names.setdefault((value.tensor.name, value.axis), var.name)
        for s in kernel.body:
            if isinstance(s, P.Check) and isinstance(s.cond, P.Compare) and s.cond.pred == "eq":
                a, b = s.cond.a, s.cond.b
                if isinstance(a, P.Read) and isinstance(b, P.Read) and b.var.name in self.shown:
                    field = self.defs.get(a.var)
                    if isinstance(field, P.Field) and field.kind == "shape":
                        self.extent_names.setdefault((field.tensor.name, field.axis), b.var.name)

    def value(self, e: P.Expr, depth: int = 0):
        """``e`` as an integer when it folds to one (its variables' definitions substituted)."""
        if isinstance(e, P.Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
            return e.value
        if isinstance(e, P.Read) and e.var in self.defs and depth < 12:
            return self.value(self.defs[e.var], depth + 1)
        if isinstance(e, P.Cast) and e.dtype.kind in ("int", "uint", "index"):
            return self.value(e.a, depth + 1)
        if isinstance(e, P.Select) and isinstance(e.cond, P.Compare) and e.cond.pred in ("eq", "ne", "gt", "lt"):
            a, b = self.value(e.cond.a, depth + 1), self.value(e.cond.b, depth + 1)
            if a is None or b is None:
                return None
            holds = {"eq": a == b, "ne": a != b, "gt": a > b, "lt": a < b}[e.cond.pred]
            return self.value(e.a if holds else e.b, depth + 1)
        if isinstance(e, P.Binary) and e.op in ("add", "sub", "mul", "floordiv", "max", "min"):
            a, b = self.value(e.a, depth + 1), self.value(e.b, depth + 1)
            if a is None or b is None or (e.op == "floordiv" and b == 0):
                return None
            return {"add": a + b, "sub": a - b, "mul": a * b, "floordiv": a // b if b else 0,
                    "max": max(a, b), "min": min(a, b)}[e.op]
        return None

    def _through(self, e: P.Expr) -> P.Expr:
        """``e`` with the definitions of the variables the source does not name substituted at its top."""
        for _ in range(12):
            if isinstance(e, P.Read) and e.var.name not in self.shown and e.var in self.defs:
                e = self.defs[e.var]
            elif isinstance(e, P.Cast):
                e = e.a
            elif isinstance(e, P.Binary) and e.op in ("add", "sub") and self.value(e.b) == 0:
                e = e.a
            elif self._ordinal_ceil(e) is not None and self._ordinal_ceil(e)[1] == 1:
                e = self._ordinal_ceil(e)[0]
            else:
                break
        return e

    def _ordinal_ceil(self, e: P.Expr):
        """(span, step value) when ``e`` is ``select(span == 0, 0, (span - 1) // step + 1)``, as
        ``to_physical`` counts a domain's members (casts aside), else None."""
        while isinstance(e, P.Cast):
            e = e.a
        if not (isinstance(e, P.Select) and isinstance(e.cond, P.Compare) and e.cond.pred == "eq"
                and self.value(e.cond.b) == 0 and self.value(e.a) == 0):
            return None
        plus = e.b
        if not (isinstance(plus, P.Binary) and plus.op == "add" and self.value(plus.b) == 1
                and isinstance(plus.a, P.Binary) and plus.a.op == "floordiv"):
            return None
        span = e.cond.a
        while isinstance(span, P.Cast):
            span = span.a
        return span, self.value(plus.a.b)

    def text(self, e: P.Expr, count: bool = False) -> str | None:
        """``e`` in source terms, or None when it is longer than a remark can show. ``count``:
        ``e`` counts iterations, so ``max(x, 0)`` (an empty domain's zero) reads as ``x``."""
        shown = self._text(e, 0, count)
        return shown[0] if shown is not None and len(shown[0]) <= _LIMIT else None

    def _text(self, e: P.Expr, depth: int, count: bool):
        """(text, precedence: 3 for atoms) or None."""
        folded = self.value(e)
        if folded is not None:
            return (str(folded), 3)
        if depth > 12:
            return None
        if isinstance(e, P.Field) and e.kind == "shape" and (e.tensor.name, e.axis) in self.extent_names:
            return (self.extent_names[(e.tensor.name, e.axis)], 3)
        if isinstance(e, P.Field) and e.tensor.storage == "heap":  # a buffer the source does not name
            return None
        if isinstance(e, P.Field):
            return (f"{e.tensor.name}.{e.kind}[{e.axis}]", 3) if e.kind in ("shape", "stride") else None
        if isinstance(e, P.Read):
            if e.var.name in self.shown or e.var not in self.defs:
                return (e.var.name, 3) if e.var.name in self.shown else None
            return self._text(self.defs[e.var], depth + 1, count)
        if isinstance(e, P.Cast):
            return self._text(e.a, depth + 1, count)
        ceil = self._ordinal_ceil(e)
        if ceil is not None:  # a domain's member count: ceil(span / step), 0 for an empty span
            span, step = ceil
            if step == 1:
                return self._text(span, depth + 1, count)
            inner = self._text(span, depth + 1, count)
            return (f"ceil(({inner[0]}) / {step})", 3) if inner and step is not None else None
        if isinstance(e, P.Binary) and e.op in ("max", "min"):
            a, b = self.value(e.a), self.value(e.b)
            if count and e.op == "max" and (a in (0, 1) or b in (0, 1)):  # a count clamped at 0 (or 1)
                return self._text(e.b if a in (0, 1) else e.a, depth + 1, count)
            x, y = self._text(e.a, depth + 1, count), self._text(e.b, depth + 1, count)
            return (f"{e.op}({x[0]}, {y[0]})", 3) if x and y else None
        if isinstance(e, P.Binary) and e.op in ("add", "sub") and self.value(e.b) is not None:
            inner = self._through(e.a)
            if isinstance(inner, P.Binary) and inner.op in ("add", "sub") and self.value(inner.b) is not None:
                # (x - 1) - 1 reads x - 2
                total = (self.value(inner.b) if inner.op == "add" else -self.value(inner.b)) + \
                    (self.value(e.b) if e.op == "add" else -self.value(e.b))
                op = "add" if total >= 0 else "sub"
                return self._text(P.Binary(e.dtype, op, inner.a, P.Const(e.dtype, abs(total))), depth + 1, count)
        if isinstance(e, P.Binary) and e.op in _SYMBOLS:
            a, b = self.value(e.a), self.value(e.b)
            if e.op in ("add", "sub") and b == 0 or e.op == "mul" and b == 1 or e.op == "floordiv" and b == 1:
                return self._text(e.a, depth + 1, count)
            if e.op == "add" and a == 0 or e.op == "mul" and a == 1:
                return self._text(e.b, depth + 1, count)
            x, y = self._text(e.a, depth + 1, count), self._text(e.b, depth + 1, count)
            if x is None or y is None:
                return None
            symbol = _SYMBOLS[e.op]
            level = _PRECEDENCE[symbol]
            left = x[0] if x[1] >= level else f"({x[0]})"
            right = y[0] if y[1] > level else f"({y[0]})"
            return (f"{left} {symbol} {right}", level)
        return None
