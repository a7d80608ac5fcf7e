"""Coordinate provenance and range analysis of index values (C1-C6).

For every ``index`` value of a function it answers:

- its **coordinate expression**: an affine form ``c0 + sum(c_k * atom_k)`` over atoms
  (loop points, extents, parameters and other opaque values), built through constants,
  ``add``/``sub``/``neg``, multiplication by a constant, domain queries and helpers'
  inlined bodies (C2, C5). Anything else — ``i * i``, a data-derived ``idx[i]``, a
  division — is an opaque atom of its own: its expression is *unknown* (C6) and no
  range is claimed for it;
- its **source**: the domain (or subregion) a loop point ranges over (C1, D6);
- its **bounds**: lower and exclusive upper bounds as affine forms, from the domains
  of the points it depends on. A subregion's point ranges over ``[a, b)`` and, because
  ``source.begin <= a <= b <= source.end`` is checked (D4, D5), over its source too;
  both are tried.

Extents are equal only when they are the same value, ``dim`` of the same tensor axis,
equal constants, or joined by an ``assert_eq`` that executed earlier (S1). Nothing is
inferred from names or from shapes that look alike (C6).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

from intentc.kir.core import Block, Function, Op, Value
from intentc.kir.types import INDEX, TensorType


@dataclass(frozen=True)
class Affine:
    const: int
    terms: tuple[tuple[int, int], ...] = ()  # (atom key, coefficient), sorted, no zero coefficients

    @staticmethod
    def atom(key: int) -> "Affine":
        return Affine(0, ((key, 1),))

    def __add__(self, other: "Affine") -> "Affine":
        merged = dict(self.terms)
        for key, coeff in other.terms:
            merged[key] = merged.get(key, 0) + coeff
        return Affine(self.const + other.const, tuple(sorted((k, c) for k, c in merged.items() if c)))

    def scale(self, factor: int) -> "Affine":
        if factor == 0:
            return Affine(0)
        return Affine(self.const * factor, tuple((k, c * factor) for k, c in self.terms))

    def __sub__(self, other: "Affine") -> "Affine":
        return self + other.scale(-1)

    def shift(self, amount: int) -> "Affine":
        return Affine(self.const + amount, self.terms)


@dataclass(frozen=True)
class IndexRelation:
    """What the analysis knows of one index value."""

    expr: Affine | None  # None: not representable (C6)
    source: Value | None  # the domain a loop point ranges over
    lower: tuple[Affine, ...]  # candidate lower bounds (inclusive)
    upper: tuple[Affine, ...]  # candidate upper bounds (exclusive)


class Provenance:
    def __init__(self, func: Function):
        self.func = func
        self.defs: dict[int, Op] = {}
        self.values: dict[int, Value] = {}
        for arg in func.args:
            self.values[id(arg)] = arg
        for op in func.walk():
            for result in op.results:
                self.defs[id(result)] = op
                self.values[id(result)] = result
            for region in op.regions:
                for arg in region.args:
                    self.values[id(arg)] = arg
        self.parent: dict[int, int] = {}
        self.point_domain: dict[int, Value] = {}  # loop point -> domain
        self.nonnegative: set[int] = set()  # atoms known >= 0 (extents, lengths)
        self.dims: dict[tuple[int, int], int] = {}
        self._affine: dict[int, Affine | None] = {}
        self.facts_at: dict[int, tuple[dict, dict]] = {}  # access op -> (parent, dims) snapshot
        self._walk(func.body)

    # -- equalities (S1) -------------------------------------------------------------------------
    def find(self, key: int) -> int:
        while self.parent.get(key, key) != key:
            key = self.parent[key]
        return key

    def _union(self, a: Value, b: Value) -> None:
        ka, kb = self.find(id(a)), self.find(id(b))
        ca, cb = self._const(a), self._const(b)
        if ca is not None and cb is not None:
            return
        if ka != kb:
            # Keep a constant as the representative so that extents fold to numbers.
            if cb is None and ca is not None:
                ka, kb = kb, ka
            self.parent[ka] = kb

    def _const(self, value: Value):
        op = self.defs.get(id(value))
        if op is not None and op.name == "const" and value.type == INDEX:
            return op.attrs["value"]
        return None

    def _walk(self, block: Block) -> None:
        for op in block.ops:
            if op.name == "dim":
                key = (id(op.operands[0]), op.attrs["axis"])
                self.nonnegative.add(id(op.result))
                static = op.operands[0].type.shape[op.attrs["axis"]]
                if key in self.dims:
                    self.parent[self.find(id(op.result))] = self.find(self.dims[key])
                else:
                    self.dims[key] = id(op.result)
                if static is not None:
                    self.static_extent(id(op.result), static)
            elif op.name == "dom_len":
                self.nonnegative.add(id(op.result))
            elif op.name == "assert_eq":
                self._union(*op.operands)
            elif op.name in ("parallel", "for"):
                domains = op.operands if op.name == "parallel" else op.operands[:1]
                for arg, domain in zip(op.regions[0].args, domains):
                    self.point_domain[id(arg)] = domain
            elif op.name in ("load", "store") or op.name.startswith("atomic_"):
                self.facts_at[id(op)] = (dict(self.parent), dict(self.dims))
            for region in op.regions:
                saved = dict(self.parent), dict(self.dims)
                self._walk(region)
                self.parent, self.dims = saved

    def static_extent(self, key: int, value: int) -> None:
        self._static = getattr(self, "_static", {})
        self._static[key] = value

    # -- expressions (C5) ----------------------------------------------------------------------------
    def affine(self, value: Value) -> Affine:
        """The affine form of an index value; opaque values are atoms of their own."""
        cached = self._affine.get(id(value))
        if cached is not None:
            return cached
        building = self.__dict__.setdefault("_building", set())
        if id(value) in building:  # an equality that refers to itself (M == M - 0): its class is an atom
            return Affine.atom(self.find(id(value)))
        building.add(id(value))
        try:
            result = self._build(value)
        finally:
            building.discard(id(value))
        self._affine[id(value)] = result
        return result

    def representable(self, value: Value) -> bool:
        """False when the value is not an affine function of points, extents and parameters (C6)."""
        op = self.defs.get(id(value))
        if op is None or op.name in ("const", "dim", "dom_len"):
            return True
        if op.name in ("add", "sub", "neg"):
            return all(self.representable(v) for v in op.operands)
        if op.name == "mul":
            a, b = op.operands
            return (self._const(a) is not None and self.representable(b)) or \
                (self._const(b) is not None and self.representable(a))
        if op.name in ("dom_begin", "dom_end", "dom_step"):
            return self._domain_part(op) is not None and self.representable(self._domain_part(op))
        if op.name == "floordiv":
            return self._const(op.operands[1]) == 1 and self.representable(op.operands[0])
        if op.name == "cast":
            return op.operands[0].type == INDEX
        return False

    def _build(self, value: Value) -> Affine:
        const = self._const(value)
        if const is not None:
            return Affine(const)
        op = self.defs.get(id(value))
        root = self.find(id(value))
        if root != id(value) and root in self.values:
            return self.affine(self.values[root])
        static = getattr(self, "_static", {}).get(root)
        if static is not None:
            return Affine(static)
        if op is None:
            return Affine.atom(root)
        if op.name == "add":
            return self.affine(op.operands[0]) + self.affine(op.operands[1])
        if op.name == "sub":
            return self.affine(op.operands[0]) - self.affine(op.operands[1])
        if op.name == "neg":
            return self.affine(op.operands[0]).scale(-1)
        if op.name == "mul":
            a, b = op.operands
            if self._const(a) is not None:
                return self.affine(b).scale(self._const(a))
            if self._const(b) is not None:
                return self.affine(a).scale(self._const(b))
        if op.name == "floordiv" and self._const(op.operands[1]) == 1:
            return self.affine(op.operands[0])
        if op.name in ("dom_begin", "dom_end", "dom_step"):
            part = self._domain_part(op)
            if part is not None:
                return self.affine(part)
        return Affine.atom(root)

    def _domain_part(self, op: Op) -> Value | None:
        """dom_begin/end/step of a domain built by ``domain`` (or a unit-step subregion)."""
        dom = self.defs.get(id(op.operands[0]))
        if dom is None:
            return None
        index = ("dom_begin", "dom_end", "dom_step").index(op.name)
        if dom.name == "domain":
            return dom.operands[index]
        if dom.name == "subregion" and index == 1:
            return dom.operands[2]
        return None

    # -- ranges ------------------------------------------------------------------------------------------
    def domain_bounds(self, domain: Value) -> tuple[list[Affine], list[Affine]]:
        """Candidate (inclusive lower, exclusive upper) bounds of a domain's members."""
        op = self.defs.get(id(domain))
        if op is None:
            return [], []
        if op.name == "domain":
            return [self.affine(op.operands[0])], [self.affine(op.operands[1])]
        if op.name == "subregion":
            lower, upper = self.domain_bounds(op.operands[0])
            return [self.affine(op.operands[1])] + lower, [self.affine(op.operands[2])] + upper
        return [], []

    def relation(self, value: Value) -> IndexRelation:
        expr = self.affine(value) if self.representable(value) else None
        source = self.point_domain.get(id(value))
        if expr is None:
            return IndexRelation(None, source, (), ())
        lowers, uppers = self.bounds(expr)
        return IndexRelation(expr, source, tuple(lowers), tuple(uppers))

    def bounds(self, expr: Affine, limit: int = 16) -> tuple[list[Affine], list[Affine]]:
        """Candidate lower (inclusive) and upper (exclusive) bounds of ``expr``, with every
        loop point replaced by its domain's bounds."""
        points = [(k, c) for k, c in expr.terms if k in self.point_domain]
        fixed = Affine(expr.const, tuple((k, c) for k, c in expr.terms if k not in self.point_domain))
        options = []
        for key, coeff in points:
            lows, highs = self.domain_bounds(self.point_domain[key])
            if not lows or not highs:
                return [], []
            options.append([(coeff, lo, hi) for lo in lows for hi in highs])
        lowers, uppers = [], []
        for combo in itertools.islice(itertools.product(*options), limit):
            low, high_incl = fixed, fixed
            for coeff, lo, hi in combo:
                last = hi.shift(-1)
                low = low + (lo.scale(coeff) if coeff > 0 else last.scale(coeff))
                high_incl = high_incl + (last.scale(coeff) if coeff > 0 else lo.scale(coeff))
            lowers.append(low)
            uppers.append(high_incl.shift(1))
        return lowers, uppers

    def provably_nonnegative(self, expr: Affine) -> bool:
        return expr.const >= 0 and all(c > 0 and self.find(k) in self._nonneg_roots() for k, c in expr.terms)

    def _nonneg_roots(self) -> set[int]:
        return {self.find(k) for k in self.nonnegative}

    def in_bounds(self, access: Op, axis: int) -> bool:
        """Whether index ``axis`` of a load/store is proven within ``[0, extent)``."""
        saved = self.parent, self.dims
        self.parent, self.dims = self.facts_at.get(id(access), saved)
        self._affine = {}
        try:
            tensor = access.operands[0]
            index = access.operands[1 + axis]
            if not self.representable(index):
                return False
            static = tensor.type.shape[axis]
            dim_key = self.dims.get((id(tensor), axis))
            if dim_key is not None:
                extent = self.affine(self.values[dim_key])
            elif static is not None:
                extent = Affine(static)
            else:
                return False
            lowers, uppers = self.bounds(self.affine(index))
            return any(self.provably_nonnegative(lo) for lo in lowers) and \
                any(self.provably_nonnegative(extent - hi) for hi in uppers)
        finally:
            self.parent, self.dims = saved
            self._affine = {}

    # -- text for explain --------------------------------------------------------------------------------
    def describe(self, affine: Affine | None, names) -> str:
        if affine is None:
            return "unknown"
        parts = []
        for key, coeff in affine.terms:
            value = self.values.get(key)
            name = names(value) if value is not None else f"?{key}"
            parts.append(name if coeff == 1 else f"-{name}" if coeff == -1 else f"{coeff}*{name}")
        if affine.const or not parts:
            parts.append(str(affine.const))
        return " + ".join(parts).replace("+ -", "- ")


def annotate(func: Function, names) -> dict[int, list[str]]:
    """Comment lines for ``explain``: provenance of index values, fate of bounds checks."""
    prov = Provenance(func)
    notes: dict[int, list[str]] = {}
    for op in func.walk():
        lines = []
        for result in op.results:
            if result.type == INDEX and op.name != "const":
                rel = prov.relation(result)
                if rel.expr is None:
                    lines.append(f"{names(result)} = unknown (C6)")
                    continue
                text = f"{names(result)} = {prov.describe(rel.expr, names)}"
                if text == f"{names(result)} = {names(result)}":
                    continue
                if any(k in prov.point_domain for k, _ in rel.expr.terms) and rel.lower:
                    text += f", in [{prov.describe(rel.lower[0], names)}, {prov.describe(rel.upper[0], names)})"
                lines.append(text)
        for region in op.regions:
            for arg in region.args:
                if arg in prov.point_domain.values() or id(arg) in prov.point_domain:
                    rel = prov.relation(arg)
                    text = f"{names(arg)}: point of {names(rel.source)}"
                    if rel.lower:
                        text += f", in [{prov.describe(rel.lower[0], names)}, {prov.describe(rel.upper[0], names)})"
                    lines.append(text)
        if op.name in ("load", "store") and isinstance(op.operands[0].type, TensorType):
            rank = op.operands[0].type.rank
            marked = op.attrs.get("inbounds", [False] * rank)
            fate = ["proven" if marked[k] or prov.in_bounds(op, k) else "checked" for k in range(rank)]
            lines.append(f"bounds of {names(op.operands[0])}: " + ", ".join(f"axis {k} {f}" for k, f in enumerate(fate)))
        if lines:
            notes[id(op)] = lines
    return notes
