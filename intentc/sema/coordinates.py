"""The coordinates of an element access as the unique-store proof and the race check compare them.

An access names one element of a tensor by one index per axis. Two steps bring every access
to the tensor's own axes, so that an access written through a view and the same access
written with full indices are compared alike (C4):

- **composition**: a read through a relation value (``view``, ``permute``, a ``broadcast``
  of static extents) maps its indices onto the source's axes, exactly as the relation
  defines them (a view fixes its dropped axes and adds its begins); a ``reshape`` has no
  affine composition, so such a read is left undecided (C6);
- **linear groups**: consecutive axes indexed ``L // E1, L % E1`` (deeper: ``L // E2 // E1,
  (L // E1) % E2 ... ``) with invariant positive divisors — the row-major decomposition a
  write through a reshape composes to, or an author's own — are an injective function of
  ``L`` alone, so the group counts as the one coordinate ``L``; and ``L = X * F + j`` with
  ``F`` invariant and ``0 <= j < F`` proven from ``j``'s domain is in turn the pair
  ``(X, j)``.

Each access becomes a *layout* (how many tensor axes each coordinate covers) and one value
per coordinate; two accesses are compared coordinate by coordinate only with equal layouts.
"""
from __future__ import annotations

from intentc.kir.core import Value
from intentc.kir.provenance import Affine
from intentc.kir.types import TensorType


class Coordinates:
    """Coordinates of accesses over the facts of one kernel's ``memory_checks._Checker``."""

    def __init__(self, checker, parallels: list, points: list[int]):
        self.c = checker
        self.parallels = parallels
        self.points = points

    # -- linear groups ---------------------------------------------------------------------------
    def of_indices(self, indices: list[Value]) -> tuple[list, list[Value]]:
        """(layout, one value per coordinate) of indices into a tensor's own axes. A layout
        entry is 1 for a plain axis, or (axes, divisors, factors) for a linear group."""
        layout: list = []
        values: list[Value] = []
        e = len(indices) - 1
        while e >= 0:
            group = self._group_ending(indices, e)
            if group is None:
                parts, factors = self._raveled(indices[e])
                layout.insert(0, (1, (), factors) if factors else 1)
                values[:0] = parts
                e -= 1
                continue
            start, linear, divisors = group
            parts, factors = self._raveled(linear)
            layout.insert(0, (e - start + 1, divisors, factors))
            values[:0] = parts
            e = start - 1
        return layout, values

    def _group_ending(self, indices: list[Value], end: int):
        """(first axis, L, divisor forms) when axes ``first..end`` are the row-major
        decomposition of ``L``."""
        op = self.c.defs.get(id(indices[end]))
        if op is None or op.name != "mod" or not self._invariant(op.operands[1]):
            return None
        linear, divisor = op.operands
        divisors = [self.c.prov.affine(divisor)]
        current = self._floordiv(linear, divisor)
        k = end - 1
        while current is not None and k >= 0:
            if indices[k] is current:
                return k, linear, tuple(divisors)
            step = self.c.defs.get(id(indices[k]))
            if step is None or step.name != "mod" or step.operands[0] is not current or \
                    not self._invariant(step.operands[1]):
                return None
            divisors.append(self.c.prov.affine(step.operands[1]))
            current = self._floordiv(current, step.operands[1])
            k -= 1
        return None

    def _floordiv(self, value: Value, divisor: Value) -> Value | None:
        """The result of ``value // divisor`` in this kernel, if one was computed."""
        for op in self.c.uses.get(id(value), ()):
            if op.name == "floordiv" and op.operands[0] is value and self._same(op.operands[1], divisor):
                return op.result
        return None

    def _raveled(self, linear: Value) -> tuple[list[Value], tuple]:
        """``X * F + j`` with ``0 <= j < F`` proven: the coordinates of X, then j (and the
        factors F, outermost first)."""
        op = self.c.defs.get(id(linear))
        if op is not None and op.name == "add":
            for scaled, last in (op.operands, tuple(reversed(op.operands))):
                mul = self.c.defs.get(id(scaled))
                if mul is None or mul.name != "mul":
                    continue
                for head, factor in (mul.operands, tuple(reversed(mul.operands))):
                    if self._invariant(factor, positive=False) and self._within(last, factor):
                        parts, factors = self._raveled(head)
                        return parts + [last], factors + (self.c.prov.affine(factor),)
        return self._raveled_after_offset(linear)

    def _raveled_after_offset(self, linear: Value) -> tuple[list[Value], tuple]:
        """``Off + X * F + j`` (summands in any order) with ``Off`` the same for every point
        (``dinp[b, t2, 2 * C + h * hs + i]``, a window at an offset): the coordinates Off,
        then those of X, then j. The points see one Off, so (X, j) alone decides the element;
        the layout records the offsets, so only accesses with the same offsets compare."""
        summands = self._summands(linear, 8)
        offsets = [v for v in summands if self._offset(v)]
        rest = [v for v in summands if not self._offset(v)]
        if len(rest) != 2:
            return [linear], ()
        for scaled, last in (rest, rest[::-1]):
            mul = self.c.defs.get(id(scaled))
            if mul is None or mul.name != "mul":
                continue
            for head, factor in (mul.operands, tuple(reversed(mul.operands))):
                if self._invariant(factor, positive=False) and self._within(last, factor):
                    parts, factors = self._raveled(head)
                    return offsets + parts + [last], (("offset", len(offsets)),) + factors + \
                        (self.c.prov.affine(factor),)
        return [linear], ()

    def _summands(self, value: Value, depth: int) -> list[Value]:
        op = self.c.defs.get(id(value))
        if depth and op is not None and op.name == "add":
            return [v for operand in op.operands for v in self._summands(operand, depth - 1)]
        return [value]

    def _offset(self, value: Value) -> bool:
        """An affine summand free of the points and of anything that varies within them."""
        form = self.c.scalar_form(value)
        return form is not None and \
            all(self.c.classify(k, self.parallels, self.points) == "invariant" for k, _ in form.terms)

    def _within(self, index: Value, extent: Value) -> bool:
        prov = self.c.prov
        if not prov.representable(index):
            return False
        if prov.representable(extent):
            lowers, uppers = prov.bounds(prov.affine(index))
            top = prov.affine(extent)
            if any(prov.provably_nonnegative(lo) for lo in lowers) and \
                    any(prov.provably_nonnegative(top - hi) for hi in uppers):
                return True
        return self._within_domain(index, extent)

    def _within_domain(self, index: Value, extent: Value) -> bool:
        """``p + c`` with the point ``p`` over a unit-step domain ``[begin, end)``, where
        ``begin + c >= 0`` and ``extent - end - c`` is a constant ``>= 0`` as polynomials:
        the window ``x[h * F:(h + 1) * F]`` has the extent ``(h + 1) * F - h * F``, which is
        ``F``, and ``F = C // NH`` is an opaque atom that both sides share."""
        prov = self.c.prov
        form = prov.affine(index)
        if len(form.terms) != 1 or form.terms[0][1] != 1:
            return False
        domain = prov.point_domain.get(form.terms[0][0])
        op = self.c.defs.get(id(domain)) if domain is not None else None
        if op is None or op.name != "domain" or prov._const(op.operands[2]) != 1 or \
                not prov.representable(op.operands[0]) or \
                not prov.provably_nonnegative(prov.affine(op.operands[0]).shift(form.const)):
            return False
        gap = _poly_add(self._polynomial(extent), _poly_scale(self._polynomial(op.operands[1]), -1))
        return set(gap) <= {()} and gap.get((), 0) - form.const >= 0

    def _polynomial(self, value: Value, depth: int = 0) -> dict:
        """``value`` as a polynomial of opaque atoms (``{monomial: coefficient}``, a monomial a
        sorted tuple of atom keys) through ``+ - *`` of index values; anything else is an atom."""
        prov = self.c.prov
        const = prov._const(value)
        if const is not None:
            return {(): const} if const else {}
        op = self.c.defs.get(id(value))
        if op is not None and depth < 16 and op.name in ("add", "sub", "mul", "neg"):
            parts = [self._polynomial(v, depth + 1) for v in op.operands]
            if op.name == "add":
                return _poly_add(*parts)
            if op.name == "sub":
                return _poly_add(parts[0], _poly_scale(parts[1], -1))
            if op.name == "neg":
                return _poly_scale(parts[0], -1)
            product: dict = {}
            for ma, ca in parts[0].items():
                for mb, cb in parts[1].items():
                    product = _poly_add(product, {tuple(sorted(ma + mb)): ca * cb})
            return product
        return {(prov.find(id(value)),): 1}

    def _invariant(self, value: Value, positive: bool = True) -> bool:
        """A divisor or factor that is the same for every point: affine in values defined
        outside the parallel loops (an opaque one, ``hs = C // NH``, is an atom), and for a
        divisor positive-or-checked (an extent, or a constant > 0). A factor ``F`` of
        ``X * F + j`` needs no sign: ``0 <= j < F`` is proven, so no point writes when ``F <= 0``."""
        prov = self.c.prov
        const = prov._const(value)
        if const is not None:
            return const > 0
        form = self.c.scalar_form(value)
        if form is None:
            return False
        return all(self.c.classify(k, self.parallels, self.points) == "invariant" for k, _ in form.terms) and \
            (not positive or prov.provably_nonnegative(form) or not form.terms)

    def _same(self, a: Value, b: Value) -> bool:
        if a is b:
            return True
        ca, cb = self.c.prov._const(a), self.c.prov._const(b)
        return ca is not None and ca == cb

    # -- composition through relations --------------------------------------------------------
    def of_access(self, op) -> tuple[list[int], list[Affine | None]] | None:
        """(layout, affine form per coordinate) of a load, store or atomic on the tensor's own
        axes; None when the access has tensor indices or reads through a reshape (undecided)."""
        value = op.operands[0]
        indices = op.operands[1:1 + value.type.rank]
        if any(isinstance(v.type, TensorType) for v in indices):
            return None
        forms = [self.c.scalar_form(v) for v in indices]
        if self.c.defs.get(id(value)) is None or self.c.defs[id(value)].name == "buffer":
            layout, values = self.of_indices(list(indices))
            return layout, [self.c.scalar_form(v) for v in values]
        while True:
            rel = self.c.defs.get(id(value))
            if rel is None or rel.name == "buffer":
                return [1] * len(forms), forms
            if rel.name == "view":
                mapped, position, k = [], 1, 0
                for kind in rel.attrs["axes"]:
                    if kind == "fix":
                        mapped.append(self.c.scalar_form(rel.operands[position]))
                        position += 1
                    else:
                        begin = self.c.scalar_form(rel.operands[position])
                        mapped.append(None if begin is None or forms[k] is None else begin + forms[k])
                        position += 2
                        k += 1
                forms = mapped
            elif rel.name == "permute":
                mapped = [None] * len(forms)
                for k, axis in enumerate(rel.attrs["perm"]):
                    mapped[axis] = forms[k]
                forms = mapped
            elif rel.name == "broadcast":
                source = rel.operands[0]
                if not isinstance(source.type, TensorType):
                    return None
                mapped = []
                for k, axis in enumerate(rel.attrs["map"]):
                    static = source.type.shape[k]
                    if static == 1:
                        mapped.append(Affine(0))
                    elif static is not None and static == rel.result.type.shape[axis]:
                        mapped.append(forms[axis])
                    else:
                        return None
                forms = mapped
            else:
                return None  # a reshape (no affine composition) or a computed value
            value = rel.operands[0]


def _poly_add(a: dict, b: dict) -> dict:
    total = dict(a)
    for monomial, coeff in b.items():
        total[monomial] = total.get(monomial, 0) + coeff
    return {m: c for m, c in total.items() if c}


def _poly_scale(a: dict, factor: int) -> dict:
    return {m: c * factor for m, c in a.items() if c * factor}
