"""Unique stores (M4) and races (P3, A3) as queries on the KIR of each kernel.

For every write into a tensor shared by the points of enclosing ``parallel`` loops (a
parameter, or a buffer defined outside them) the destination relation must be *provably
injective*: distinct points (and, for a scatter, distinct lanes) write distinct elements.
The proof uses the affine forms of ``provenance.py``: each index is ``c + sum(a_k * atom_k)``;
an atom is a *point* (of a parallel loop the tensor is shared by, or a lane coordinate of a
scatter), *invariant* (defined outside those loops) or *varying* (anything else: inner loop
points, data read inside). Proven injective when

1. the axes free of varying atoms, as linear maps of the points, have full column rank
   (``out[i]``, ``out[2*i+1]``, ``out[j, i]``, ``out[n-1-i]``, ``out[i, k]`` with an inner k);
2. or one axis is ``(±p + c) % m`` with ``p`` ranging over exactly ``m`` consecutive
   coordinates (a rotation: a permutation of ``[0, m)``);
   or one axis is ``j (+ invariant)`` with ``j`` an ordered-loop point over the members
   ``s[offsets[g]:offsets[g+1]]`` of the parallel point ``g`` of a ragged relation whose
   offsets ``I.ragged`` validated (G2): segments of distinct points are disjoint;
3. or one axis is ``pos[p] (+ c)`` where ``pos`` is an inclusive or exclusive ``I.cumsum`` of
   ``w >= 0`` (``I.cast`` of a bool tensor ``f``, or ``I.where(f, k > 0, 0)``) and the write only
   happens where ``w[p] >= 1`` (an enclosing ``if f[p]`` or a scatter mask ``f``): positions of
   written points strictly increase (stream compaction);
4. or the author asserts it: ``I.scatter(..., unique=True)`` (checked by ``sanitize="unique"``).

Indices are first brought to the tensor's own axes (``coordinates.py``): a read through a
view or permutation is composed onto the tensor's indices, a group of axes indexed
``L // E, L % E`` counts as the one coordinate ``L``, and ``X * F + j`` with ``0 <= j < F``
proven as the pair ``(X, j)``; a read through a relation defined outside a parallel loop
reads the value the relation took there, which the loop's writes cannot change.

Otherwise the write is a compile error citing M4 (hint: ``I.scatter_reduce``). When every
axis is free of varying atoms, executes unconditionally in its points and the map is not
injective, two points provably write one element: the error cites P3 and names them. Two
different accesses of one shared tensor (a write and a read, two writes, an atomic and a
plain access) conflict provably when their maps have equal point coefficients and a
non-zero integer point difference carries one onto the other (``out[i] = out[i + 1]``):
a P3 (or A3) error. Conflicts the analysis cannot decide are left to ``sanitize="race"``.
Atomics and ``scatter_reduce`` may collide with each other (M5, M6).

Also sets each gather/scatter's ``space`` from the root of its relation (M2).
"""
from __future__ import annotations

from intentc.diagnostics import CompileError, error
from intentc.kir.core import Function, Module, Op, Value
from intentc.kir.provenance import Affine, Provenance
from intentc.sema.coordinates import Coordinates
from intentc.sema.injectivity import InjectiveWrites
from intentc.sema.lattice import coefficient, integer_solution, matrix_rank, null_vector
from intentc.kir.types import TensorType

_RELATION_OPS = ("view", "reshape", "permute", "broadcast")
_WRITES = ("store", "scatter")
_ATOMIC = ("atomic_rmw", "atomic_cas", "atomic_load", "atomic_store", "scatter_reduce")
_HINT = ("colliding writes that combine belong in I.scatter_reduce(dst, idx, vals, combine=\"add\") or an "
         "atomic (I.atomic_add); if the indices are unique by construction, assert it with "
         "I.scatter(dst, idx, vals, unique=True) and test with sanitize=\"unique\"")


def check_memory(module: Module) -> None:
    diagnostics = []
    for func in module.kernels:
        try:
            _Checker(func).run()
        except CompileError as exc:
            diagnostics += exc.diagnostics
    if diagnostics:
        raise CompileError(diagnostics)


class _Access:
    def __init__(self, op: Op, root: Value, kind: str, parallels: list, conditional: list, guards: list,
                 taken_at: tuple | None = None):
        self.op = op
        self.root = root
        # A read through a relation value (a view of the tensor) reads what the relation saw where
        # it was defined: the parallel loops enclosing that definition (None: a direct access).
        self.taken_at = taken_at
        self.kind = kind  # read | write | atomic
        self.parallels = parallels  # enclosing parallel ops, outermost first
        self.conditional = conditional  # per enclosing parallel: something between may skip the access
        self.guards = guards  # (condition value, branch taken) of enclosing ifs


class _Checker:
    def __init__(self, func: Function):
        self.func = func
        self.defs: dict[int, Op] = {}
        self.uses: dict[int, list[Op]] = {}  # value id -> the ops that read it
        self.scope: dict[int, tuple] = {}  # value id -> enclosing parallel ops
        self.loop_domain: dict[int, Value] = {}  # ordered loop point -> its domain
        self.accesses: list[_Access] = []
        self.validated: list[tuple[Value, Value]] = []  # (offsets tensor, outer domain) checked by I.ragged
        for arg in func.args:
            self.scope[id(arg)] = ()
        self.prov = Provenance(func)

    # -- walking ---------------------------------------------------------------------------------------------
    def run(self) -> None:
        self._walk(self.func.body, [], [], [])
        self._spaces()
        errors = []
        for access in self.accesses:
            try:
                if access.kind == "write" and not access.op.attrs.get("unique"):
                    self._check_unique(access)
                elif access.op.name == "scatter_reduce" and self.shared(access):
                    self._check_atomic_reduce(access)
            except CompileError as exc:
                errors += exc.diagnostics
        if not errors:
            try:
                self._check_pairs()
            except CompileError as exc:
                errors += exc.diagnostics
        if errors:
            raise CompileError(errors)

    def _walk(self, block, parallels: list, conditional: list, guards: list) -> None:
        for arg in block.args:
            self.scope.setdefault(id(arg), tuple(parallels))
        for op in block.ops:
            for r in op.results:
                self.defs[id(r)] = op
                self.scope[id(r)] = tuple(parallels)
            for v in op.operands:
                self.uses.setdefault(id(v), []).append(op)
            self._access(op, parallels, conditional, guards)
            if op.name == "assert_true" and op.attrs.get("rule") == "G2":
                self._note_validation(op)
            if op.name == "parallel":
                self._walk(op.regions[0], parallels + [op], conditional + [False], guards)
            elif op.name == "for":
                self.loop_domain[id(op.regions[0].args[0])] = op.operands[0]
                self._walk(op.regions[0], parallels, [True] * len(conditional), guards)
            elif op.name == "if":
                for region, taken in zip(op.regions, (True, False)):
                    self._walk(region, parallels, [True] * len(conditional), guards + [(op.operands[0], taken)])
            else:
                for region in op.regions:
                    self._walk(region, parallels, [True] * len(conditional), guards)

    def _access(self, op: Op, parallels, conditional, guards) -> None:
        name = op.name
        if name in ("load", "gather"):
            kind = "read"
        elif name in _WRITES:
            kind = "write"
        elif name in _ATOMIC:
            kind = "atomic"
        else:
            return
        if not op.operands or not isinstance(op.operands[0].type, TensorType):
            return
        root = self.root(op.operands[0])
        if root is None:
            return  # an immutable tensor value: a pure selection, no memory effect
        taken_at = None
        if op.operands[0] is not root:  # through relations: the one on the tensor itself read it
            value = op.operands[0]
            while self.defs[id(value)].operands[0] is not root:
                value = self.defs[id(value)].operands[0]
            taken_at = self.scope.get(id(value), ())
        self.accesses.append(_Access(op, root, kind, list(parallels), list(conditional), list(guards), taken_at))

    def root(self, value: Value) -> Value | None:
        """The parameter or buffer a relation of tensors reads, or None for a computed value."""
        while True:
            op = self.defs.get(id(value))
            if op is None:
                return value  # a parameter
            if op.name == "buffer":
                return value
            if op.name in _RELATION_OPS:
                value = op.operands[0]
                continue
            return None

    def _spaces(self) -> None:
        for op in self.func.walk():
            if op.name in ("gather", "scatter", "scatter_reduce"):
                root = self.root(op.operands[0])
                op.attrs["space"] = "value" if root is None else \
                    "buffer" if self.defs.get(id(root)) is not None else "external"

    def _note_validation(self, op: Op) -> None:
        """I.ragged's check loop: assert_true(cmp(offsets[g], offsets[g+1])) inside for g in outer."""
        cmp = self.defs.get(id(op.operands[0]))
        if cmp is None or len(op.operands) < 2:
            return
        g = op.operands[1]
        for operand in cmp.operands:
            load = self._through_cast(operand)
            if load is not None and load.name == "load" and load.operands[1] is g and id(g) in self.loop_domain:
                self.validated.append((load.operands[0], self.loop_domain[id(g)]))
                return

    def _through_cast(self, value: Value) -> Op | None:
        op = self.defs.get(id(value))
        while op is not None and op.name == "cast":
            op = self.defs.get(id(op.operands[0]))
        return op

    # -- affine forms ----------------------------------------------------------------------------------------------
    def shared(self, access: _Access) -> list[Op]:
        """The enclosing parallel loops whose points share the accessed tensor."""
        inside = self.scope.get(id(access.root), ())
        return [p for p in access.parallels if p not in inside and not _single_point(self, p)
                and (access.taken_at is None or p in access.taken_at)]

    def point_keys(self, parallels: list[Op]) -> list[int]:
        return [id(a) for p in parallels for a in p.regions[0].args]

    def classify(self, key: int, parallels: list[Op], points: list[int]) -> str:
        if key in points:
            return "point"
        value = self.prov.values.get(key)
        inside = self.scope.get(key, ())
        if value is None or any(p in inside for p in parallels):
            return "varying"
        return "invariant"

    def scalar_form(self, value: Value) -> Affine | None:
        if not self.prov.representable(value) and not self._affine_over_invariants(value):
            return None
        return self.prov.affine(value)

    def _affine_over_invariants(self, value: Value) -> bool:
        """Affine as ``Provenance.representable`` says, except that a value defined outside
        every parallel loop (``I.cast(a, index)`` of a parameter) counts as one invariant atom:
        it is the same for every point."""
        op = self.defs.get(id(value))
        if op is None or self.scope.get(id(value), ()) == () or self.prov.representable(value):
            return True
        if op.name in ("add", "sub", "neg"):
            return all(self._affine_over_invariants(v) for v in op.operands)
        if op.name == "mul":
            a, b = op.operands
            return (self.prov._const(a) is not None and self._affine_over_invariants(b)) or \
                (self.prov._const(b) is not None and self._affine_over_invariants(a))
        return False

    def lane_form(self, value: Value, lanes: list[int]) -> Affine | None:
        """The affine form of one lane of a scatter's index tensor, over lane coordinate keys."""
        if not isinstance(value.type, TensorType):
            return self.scalar_form(value)
        op = self.defs.get(id(value))
        if op is None:
            return None
        if op.name == "broadcast":
            source = op.operands[0]
            if not isinstance(source.type, TensorType):
                return self.scalar_form(source)
            sub = []
            for k, axis in enumerate(op.attrs["map"]):
                if source.type.shape[k] == 1:
                    sub.append(None)
                elif self._extent(source, k) is op.operands[1 + axis] or source.type.shape[k] is not None:
                    sub.append(lanes[axis])
                else:
                    return None
            return self.lane_form(source, [s for s in sub]) if None not in sub else None
        if op.name == "indices":
            begin, step = self._domain_begin_step(op.operands[0])
            if begin is None:
                return None
            return begin + Affine.atom(lanes[0]).scale(step)
        if op.name in ("add", "sub"):
            a, b = (self.lane_form(v, lanes) for v in op.operands)
            if a is None or b is None:
                return None
            return a + b if op.name == "add" else a - b
        if op.name == "neg":
            a = self.lane_form(op.operands[0], lanes)
            return a.scale(-1) if a is not None else None
        if op.name == "mul":
            forms = [self.lane_form(v, lanes) for v in op.operands]
            if None in forms:
                return None
            a, b = forms
            if not a.terms:
                return b.scale(a.const)
            if not b.terms:
                return a.scale(b.const)
        return None

    def _extent(self, tensor: Value, axis: int):
        for op in self.func.walk():
            if op.name == "dim" and op.operands[0] is tensor and op.attrs.get("axis") == axis:
                return op.results[0]
        return None

    def _domain_begin_step(self, domain: Value) -> tuple[Affine | None, int]:
        op = self.defs.get(id(domain))
        if op is None:
            return None, 0
        if op.name == "domain":
            step = self.prov._const(op.operands[2])
            begin = self.scalar_form(op.operands[0])
            return (begin, step) if step else (None, 0)
        if op.name == "subregion":
            _, step = self._domain_begin_step(op.operands[0])
            if step == 1:
                return self.scalar_form(op.operands[1]), 1
        return None, 0

    # -- M4: unique stores ---------------------------------------------------------------------------------------
    def _check_unique(self, access: _Access) -> None:
        op = access.op
        parallels = self.shared(access)
        tensor_lanes = op.name == "scatter" and any(isinstance(v.type, TensorType) for v in op.operands[1:])
        if not parallels and not tensor_lanes:
            return
        rank = access.root.type.rank
        indices = op.operands[1:1 + rank]
        lanes = []
        if tensor_lanes:
            shape_rank = next(v.type.rank for v in op.operands[1:] if isinstance(v.type, TensorType))
            lanes = [-(k + 1) for k in range(shape_rank)]
        points = self.point_keys(parallels)
        columns = points + lanes
        coordinates = indices if tensor_lanes else Coordinates(self, parallels, points).of_indices(list(indices))[1]
        forms = [self.lane_form(v, lanes) if tensor_lanes else self.scalar_form(v) for v in coordinates]
        clean, unknown, varying = [], False, []
        for form in forms:
            if form is None:
                unknown = True
                continue
            moving = [k for k, _ in form.terms if k >= 0 and self.classify(k, parallels, points) == "varying"]
            if moving:
                varying += [self.prov.values[k].hint or "a value" for k in moving if k in self.prov.values]
                continue
            clean.append(form)
        matrix = [[coefficient(form, c) for c in columns] for form in clean]
        if matrix_rank(matrix) == len(columns):
            return
        proofs = InjectiveWrites(self)
        if proofs.ragged_disjoint(access, parallels, indices) or proofs.monotone(access, parallels, indices, lanes) \
                or proofs.rotation(parallels, indices):
            return
        where = self._points_text(parallels, lanes)
        name = _tensor_name(self.func, access.root)
        conditional = any(access.conditional[access.parallels.index(p)] for p in parallels) or \
            (access.guards and any(_inside(self, access, g) for g in access.guards)) or \
            bool(op.attrs.get("masked"))
        if not unknown and not varying and not conditional and parallels and not lanes:
            d = self._point_difference(matrix, [0] * len(matrix), parallels)
            if d is not None:
                raise error(f"data race: {self._pair_text(parallels, d)} both write the same element of '{name}'",
                            op.span, rule="P3",
                            hint="give every point its own element (e.g. out[i]), or combine the colliding "
                                 "writes with I.scatter_reduce or an atomic (I.atomic_add)")
        what = "data-derived or not affine (C6)" if unknown else \
            f"not injective: it depends on {', '.join(dict.fromkeys(varying))}, which " \
            f"{'varies' if len(set(varying)) == 1 else 'vary'} within one point" if varying else "not injective"
        raise error(f"cannot prove that this write into '{name}' is unique (M4): its index relation over "
                    f"{where} is {what}", op.span, rule="M4", hint=_HINT)

    def _check_atomic_reduce(self, access: _Access) -> None:
        """Inside parallel points a scatter_reduce into a shared tensor combines each lane with an
        atomic: only exact combines keep the result independent of the order (M5, M6)."""
        op = access.op
        dtype = access.root.type.dtype
        combine = op.attrs.get("combine")
        if combine in (("add", "min", "max", "and", "or", "xor") if dtype.is_int else ("min", "max")):
            return
        name = _tensor_name(self.func, access.root)
        what = f"a helper combine" if combine == "helper" else f'combine="{combine}" on {dtype}'
        raise error(f"scatter_reduce into '{name}' from the points of I.parallel with {what}: the atomic updates "
                    "would combine in an order that changes the result", op.span, rule="M5",
                    hint="call I.scatter_reduce outside I.parallel on whole tensors (it is privatised and combined "
                         "in a fixed order), or reduce integers (add/min/max/and/or/xor) or float min/max")

    def _points_text(self, parallels, lanes) -> str:
        names = [a.hint or "p" for p in parallels for a in p.regions[0].args]
        parts = []
        if names:
            parts.append("the points (" + ", ".join(names) + ") of I.parallel")
        if lanes:
            parts.append("the lanes of the scatter")
        return " and ".join(parts)

    def _pair_text(self, parallels, d) -> str:
        first, second = self._point_texts(parallels, d)
        return f"the points ({first}) and ({second})"

    def _point_texts(self, parallels, d) -> tuple[str, str]:
        names = [a.hint or f"p{k}" for k, a in enumerate(a for p in parallels for a in p.regions[0].args)]
        shifted = ", ".join(n if c == 0 else f"{n} {'+' if c > 0 else '-'} {abs(c)}" for n, c in zip(names, d))
        return ", ".join(names), shifted

    # -- the point set -------------------------------------------------------------------------------------
    def _point_difference(self, matrix, delta, parallels) -> list[int] | None:
        """A non-zero difference ``d`` between two points of ``parallels`` (both in the point set:
        a multiple of each domain's step, within its span) with ``M d = delta``, or None when
        no such pair is proven. Points of ``I.domain(b, e, s)`` are ``b + s*k``, so ``d = s*k``
        and the system is solved for the integer ``k``."""
        lattice = [self._point_lattice(domain) for p in parallels for domain in p.operands]
        scaled = [[m * (step or 1) for m, (step, _) in zip(row, lattice)] for row in matrix]
        k = integer_solution(scaled, delta, len(lattice)) if any(delta) else null_vector(scaled, len(lattice))
        if k is None or not any(k):
            return None
        d = []
        for kj, (step, span) in zip(k, lattice):
            if kj and (step is None or (span is not None and abs(kj * step) > span)):
                return None  # an unknown step, or the second point lies outside the domain
            d.append(kj * (step or 1))
        return d

    def _point_lattice(self, domain: Value) -> tuple[int | None, int | None]:
        """(step, the largest distance between two of its points) of a parallel loop's domain;
        None where it is not a constant."""
        op = self.defs.get(id(domain))
        if op is None or op.name != "domain":
            return (1, None) if op is not None and op.name == "subregion" and \
                self._point_lattice(op.operands[0])[0] == 1 else (None, None)
        begin, end, step = (self.prov._const(v) for v in op.operands)
        if step is None or step <= 0:
            return None, None
        if begin is None or end is None:
            return step, None
        count = max(0, -(-(end - begin) // step))
        return step, max(0, count - 1) * step

    # -- P3 / A3: provable conflicts between two accesses ---------------------------------------------------
    def _check_pairs(self) -> None:
        by_root: dict[int, list[_Access]] = {}
        for access in self.accesses:
            by_root.setdefault(id(access.root), []).append(access)
        for group in by_root.values():
            writes = [a for a in group if a.kind in ("write", "atomic") and a.op.name != "atomic_load"]
            position = {id(a): k for k, a in enumerate(group)}  # program order: a stable choice
            for w in writes:
                for other in group:
                    if other is w or (other.kind == "atomic" and w.kind == "atomic"):
                        continue
                    if other.kind != "read" and position[id(other)] > position[id(w)] and other in writes:
                        continue  # each pair of writes once, reported at the later one
                    self._pair(w, other)

    def _pair(self, w: _Access, other: _Access) -> None:
        parallels = [p for p in self.shared(w) if p in other.parallels and p in self.shared(other)]
        if not parallels:
            return
        for access in (w, other):
            if any(access.conditional[access.parallels.index(p)] for p in parallels) or access.op.attrs.get("masked"):
                return
        points = self.point_keys(parallels)
        coordinates = Coordinates(self, parallels, points)
        cw, co = coordinates.of_access(w.op), coordinates.of_access(other.op)
        if cw is None or co is None or cw[0] != co[0]:
            return  # tensor indices, a read through a reshape, or different layouts: undecided
        fw, fo = cw[1], co[1]
        if None in fw or None in fo:
            return
        matrix, delta = [], []
        for a, b in zip(fw, fo):
            for form in (a, b):
                if any(self.classify(k, parallels, points) == "varying" for k, _ in form.terms):
                    return
            if [coefficient(a, c) for c in points] != [coefficient(b, c) for c in points]:
                return
            inv_a = Affine(0, tuple((k, c) for k, c in a.terms if k not in points))
            inv_b = Affine(0, tuple((k, c) for k, c in b.terms if k not in points))
            if inv_a != inv_b:
                return
            matrix.append([coefficient(a, c) for c in points])
            delta.append(b.const - a.const)  # W(p + d) = O(p)  <=>  M d = c_O - c_W
        d = self._point_difference(matrix, delta, parallels)
        if d is None:
            return
        name = _tensor_name(self.func, w.root)
        atomic = "atomic" in (w.kind, other.kind)
        verb = {"read": "reads", "write": "writes", "atomic": "updates atomically"}
        plain, writer = self._point_texts(parallels, d)
        line = f" at line {other.op.span.line}" if other.op.span is not None else ""
        raise error(f"data race on '{name}': point ({writer}) {verb[w.kind]} the element that point ({plain}) "
                    f"{verb[other.kind]}{line}",
                    w.op.span, rule="A3" if atomic else "P3",
                    hint="points of I.parallel may not touch each other's elements unless every access is atomic; "
                         "read from an input and write to a separate output, or use atomics throughout")


# ---- helpers ----------------------------------------------------------------------------------------------------
def _tensor_name(func: Function, value: Value) -> str:
    for param, arg in zip(func.params, func.args):
        if arg is value:
            return param.name
    return value.hint or "the buffer"


def _single_point(checker: _Checker, parallel: Op) -> bool:
    """A parallel loop over domains of statically at most one point has no second point."""
    for domain in parallel.operands:
        op = checker.defs.get(id(domain))
        if op is None or op.name != "domain":
            return False
        consts = [checker.prov._const(v) for v in op.operands]
        if None in consts or consts[2] <= 0 or consts[1] - consts[0] > consts[2]:
            return False
    return True


def _inside(checker: _Checker, access: _Access, guard) -> bool:
    """Whether a guarding ``if`` sits inside one of the parallel loops the tensor is shared by."""
    cond, _ = guard
    inside = checker.scope.get(id(cond), ())
    return any(p in inside for p in checker.shared(access))
