"""Proofs that a write is unique when the rank test of ``memory_checks.py`` does not decide (M4, G2).

Each answers, for one write shared by the points of a parallel loop, whether the destination
relation is still injective (proofs 2 and 3 of ``memory_checks.py``'s docstring):

- ``rotation``: one axis is ``(±p + c) % m`` with the point ``p`` over exactly ``m``
  consecutive coordinates (a permutation of ``[0, m)``);
- ``ragged_disjoint``: one axis is an ordered-loop point over the members
  ``s[offsets[g]:offsets[g+1]]`` of the parallel point ``g`` of a ragged relation whose
  offsets ``I.ragged`` validated (G2): distinct points' segments are disjoint;
- ``monotone``: one axis is ``pos[p] (+ c)`` with ``pos`` an ``I.cumsum`` of weights
  ``w >= 0`` and the write guarded by ``w[p] >= 1``: written positions strictly increase
  (stream compaction).

They read the checker's facts (definitions, affine forms, loop domains, validated offsets)
and change nothing.
"""
from __future__ import annotations

from intentc.kir.core import Op, Value
from intentc.sema.lattice import coefficient


class InjectiveWrites:
    """The proofs over the facts of one kernel's ``memory_checks._Checker``."""

    def __init__(self, checker):
        self.c = checker

    def ragged_disjoint(self, access, parallels, indices) -> bool:
        if len(parallels) != 1 or len(parallels[0].regions[0].args) != 1:
            return False
        g = parallels[0].regions[0].args[0]
        for index in indices:
            form = self.c.scalar_form(index)
            if form is None:
                continue
            loops = [(k, c) for k, c in form.terms if k in self.c.loop_domain]
            rest = [k for k, _ in form.terms if k not in self.c.loop_domain]
            if len(loops) != 1 or loops[0][1] not in (1, -1):
                continue
            if any(self.c.classify(k, parallels, []) == "varying" for k in rest):
                continue
            sub = self.c.defs.get(id(self.c.loop_domain[loops[0][0]]))
            if sub is None or sub.name != "subregion":
                continue
            lo, hi = (self.c._through_cast(v) for v in sub.operands[1:])
            if lo is None or hi is None or lo.name != "load" or hi.name != "load" or lo.operands[0] is not \
                    hi.operands[0]:
                continue
            if lo.operands[1] is not g or self.c.scalar_form(hi.operands[1]) != self.c.scalar_form(g).shift(1):
                continue
            if self._validated(lo.operands[0], parallels[0].operands[0]):
                return True
        return False

    def rotation(self, parallels, indices) -> bool:
        """``(±p + c) % m`` with the point ``p`` ranging over exactly ``m`` consecutive
        coordinates: a permutation of [0, m), since ``%`` rounds toward -inf."""
        if len(parallels) != 1 or len(parallels[0].regions[0].args) != 1:
            return False
        p = parallels[0].regions[0].args[0]
        domain = self.c.defs.get(id(parallels[0].operands[0]))
        if domain is None or domain.name != "domain" or self.c.prov._const(domain.operands[2]) != 1:
            return False
        length = self.c.prov.affine(domain.operands[1]) - self.c.prov.affine(domain.operands[0])
        for index in indices:
            op = self.c.defs.get(id(index))
            if op is None or op.name != "mod" or not self.c.prov.representable(op.operands[0]):
                continue
            form = self.c.prov.affine(op.operands[0])
            if coefficient(form, id(p)) not in (1, -1) or not self.c.prov.representable(op.operands[1]):
                continue
            rest = [k for k, _ in form.terms if k != id(p)]
            if any(self.c.classify(k, parallels, [id(p)]) != "invariant" for k in rest):
                continue
            if self.c.prov.affine(op.operands[1]) == length:
                return True
        return False

    def _validated(self, offsets: Value, domain: Value) -> bool:
        for tensor, outer in self.c.validated:
            if tensor is offsets and _same_domain(self.c, outer, domain):
                return True
        return False

    def monotone(self, access, parallels, indices, lanes) -> bool:
        """Stream compaction: index pos[p] (+ c) with pos a cumsum of w >= 0 and w[p] >= 1 where written."""
        if len(parallels) + (1 if lanes else 0) != 1 or len(lanes) > 1:
            return False
        op = access.op
        for index in indices:
            if lanes:
                scan, at = self._scan_lane(index)
                if scan is None or not op.attrs.get("masked"):
                    continue
                weights = scan.operands[0]
                if self._implies_positive(op.operands[-1], weights, None, lanes=True):
                    return True
                continue
            if len(parallels[0].regions[0].args) != 1:
                return False
            p = parallels[0].regions[0].args[0]
            scan, at = self._scan_element(index)
            if scan is None or at is not p:
                continue
            weights = scan.operands[0]
            for cond, taken in access.guards:
                if taken and self._implies_positive(cond, weights, p):
                    return True
            if op.attrs.get("masked") and self._implies_positive(op.operands[-1], weights, p):
                return True
        return False

    def _scan_element(self, index: Value):
        """(scan op, position) when ``index`` is ``cast(load(S, position)) (+ const)`` of a cumsum S."""
        op = self.c.defs.get(id(index))
        while op is not None and op.name in ("add", "sub", "cast"):
            if op.name == "cast":
                index = op.operands[0]
            else:
                consts = [self.c.prov._const(v) for v in op.operands]
                if consts[1] is None:
                    return None, None
                index = op.operands[0]
            op = self.c.defs.get(id(index))
        if op is None or op.name != "load":
            return None, None
        scan = self._cumsum(op.operands[0])
        return (scan, op.operands[1]) if scan is not None and len(op.operands) == 2 else (None, None)

    def _scan_lane(self, index: Value):
        op = self.c.defs.get(id(index))
        while op is not None and op.name in ("cast", "add", "sub", "broadcast"):
            if op.name in ("add", "sub"):
                other = op.operands[1]
                oop = self.c.defs.get(id(other))
                if oop is not None and oop.name == "broadcast":
                    other = oop.operands[0]
                if not _is_const_op(self.c, other):
                    return None, None
            index = op.operands[0]
            op = self.c.defs.get(id(index))
        scan = self._cumsum(index)
        return (scan, None) if scan is not None else (None, None)

    def _cumsum(self, value: Value) -> Op | None:
        op = self.c.defs.get(id(value))
        if op is None or op.name != "scan" or op.attrs.get("arity") != 1 or op.attrs.get("reverse"):
            return None
        if op.attrs.get("has_init") or op.operands[0].type.rank != 1 or not op.operands[0].type.dtype.is_int:
            return None
        body = [o.name for o in op.regions[0].ops]
        if body != ["add", "yield"]:
            return None
        return op if self._nonnegative(op.operands[0]) else None

    def _nonnegative(self, weights: Value) -> bool:
        op = self.c.defs.get(id(weights))
        if op is None:
            return False
        if op.name == "cast":
            return op.operands[0].type.dtype.is_bool
        if op.name == "select":
            return all(self._const_at_least(v, 0) for v in op.operands[1:])
        return False

    def _const_at_least(self, value: Value, bound: int) -> bool:
        op = self.c.defs.get(id(value))
        if op is not None and op.name == "broadcast":
            value = op.operands[0]
            op = self.c.defs.get(id(value))
        return op is not None and op.name == "const" and isinstance(op.attrs.get("value"), int) and \
            op.attrs["value"] >= bound

    def _implies_positive(self, cond: Value, weights: Value, point, lanes: bool = False) -> bool:
        """Whether ``cond`` (at the point, or lane-wise) implies weights >= 1 there."""
        wop = self.c.defs.get(id(weights))
        if wop is None:
            return False
        flags = wop.operands[0] if wop.name in ("cast", "select") else None
        if wop.name == "select" and not self._const_at_least(wop.operands[1], 1):
            return False
        if flags is None:
            return False
        if lanes:
            return cond is flags
        cop = self.c.defs.get(id(cond))
        return cop is not None and cop.name == "load" and cop.operands[0] is flags and cop.operands[1] is point


def _same_domain(checker, a: Value, b: Value) -> bool:
    if a is b:
        return True
    oa, ob = checker.defs.get(id(a)), checker.defs.get(id(b))
    if oa is None or ob is None or oa.name != "domain" or ob.name != "domain":
        return False
    return all(checker.prov.affine(x) == checker.prov.affine(y) for x, y in zip(oa.operands, ob.operands))


def _is_const_op(checker, value: Value) -> bool:
    op = checker.defs.get(id(value))
    return op is not None and op.name == "const"
