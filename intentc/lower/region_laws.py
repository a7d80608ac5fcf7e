"""The run-time checks of ``--sanitize=laws``: region helpers must obey their laws (R2, R6, R7).

``check_region_laws(regions, op)`` is called by ``region_lowering`` at the start of
``materialize_region_fold`` / ``materialize_region_scan`` for an op the ``check_laws``
pass marked. It emits, where the op stands (at the top of a kernel or inside a parallel
point), code that runs *before* the op's own evaluation, serially and in a fixed order,
and fails the call with ``INTENT_E_SANITIZER`` at the first law that does not hold:

1. identity laws: ``combine(identity, identity) == identity`` (a segmentation may meet two
   empty segments), ``combine(identity, x) == x`` and ``combine(x, identity) == x`` with
   ``x = summarize(whole axis)`` (R2); for ``region_scan`` also ``apply(identity, s) == s``
   with ``s`` the initial state (R6);
2. for every pair of adjacent segments ``A = [a, b)``, ``B = [b, c)`` of several
   segmentations of the axis (below): ``summarize(A ++ B) == combine(summarize(A),
   summarize(B))`` (R2); for ``region_scan`` also ``apply(combine(sA, sB), s) ==
   apply(sB, apply(sA, s))`` and ``emit(A ++ B, s) == concat(emit(A, s), emit(B,
   apply(sA, s)))``, element by element, after checking that each ``emit`` returned one
   output member per member of its slice (R6, R7).

Segmentations of ``n`` members, computed at run time from ``n`` only (deterministic, the
same for every call with that ``n``; ``segment_pairs(n)`` lists the pairs in Python):
``[0, 0, n]`` (an empty first slice), ``[0, 1, n]``, ``[0, n - 1, n]``, ``[0, n, n]`` (an
empty last slice); ``RANDOM_SEGMENTATIONS`` segmentations of ``RANDOM_CUTS`` cuts drawn
by a Park-Miller generator seeded with ``n`` (cut ``i`` in the ``i``-th of ``RANDOM_CUTS``
equal strata of ``[0, n]``: at the stratum's start, its end, one past its start, or
anywhere in it, so that empty and one-member slices occur at every size); and
``[0, o, o + 1, .., o + w, n]`` with ``w = min(n, SINGLE_MEMBERS)`` single members from a
pseudo-random offset ``o``. Each segmentation costs O(n) helper work (the pairs of one
segmentation cover each member about twice), so a call does a constant multiple of the
op's own work.

Floats compare with the interpreter's rule (``base/laws.LAW_TOLERANCE``): equal,
both NaN, or finite with ``|p - q| <= law_tolerance(dtype) * M``, ``M`` the largest finite
magnitude among the float values of the law's instance (both sides, the summaries and
states they combine, every output member of both sides for the emit law; at least 1);
integers and bools exactly. The message names the law, the helpers that appear in it, the
segments and both sides' values (all summary or state components, or the first differing
member of an ``emit`` output).

The kernel entry of a laws build (``emit_llvm``, ``restore``) copies the tensors the
kernel may write and puts the copy back when the call returns ``INTENT_E_SANITIZER``, so
a law that fails leaves them as they were, even when other points or earlier statements
had written them.

Helpers are inlined into the checks with the parallel-point expansion (``depth`` > 0):
nested reductions and scans are plain ordered loops, as in the op's own segments.
"""
from __future__ import annotations

from intentc.kir.core import Op, Value
from intentc.base.laws import law_tolerance
from intentc.kir.types import BOOL, DTYPES, INDEX, TensorType

STRUCTURAL = 4  # [0, 0, n], [0, 1, n], [0, n - 1, n], [0, n, n]: one pair of segments each
RANDOM_SEGMENTATIONS = 3
RANDOM_CUTS = 5  # cuts per random segmentation: RANDOM_CUTS pairs of adjacent segments
SINGLE_MEMBERS = 1024  # members on their own in the window segmentation
SEED = 20240611
MODULUS = 2147483647  # 2^31 - 1: Park-Miller "minimal standard" generator
MULTIPLIER = 48271
F64, U64 = DTYPES["f64"], DTYPES["u64"]


def check_region_laws(regions, op: Op) -> None:
    """Emit the law checks of the marked region op ``op`` at the builder's insertion point
    (``regions``: the ``RegionExpansion`` that inlines and slices the helpers)."""
    regions.b.depth += 1  # serial code: helpers expand as in a parallel point's segment
    try:
        _Laws(regions, op).run()
    finally:
        regions.b.depth -= 1


class _Laws:
    def __init__(self, regions, op: Op):
        self.x, self.op = regions.b, op  # the kernel's builder
        self.inline_region, self.segment_views = regions.inline_region, regions.segment_views
        n_comp = op.attrs["ncomp"]
        self.domain = op.operands[0]
        self.comps = op.operands[1:1 + n_comp]
        self.scan = op.name == "region_scan"
        if self.scan:
            m = op.attrs["nsummary"]
            self.ids = op.operands[1 + n_comp:1 + n_comp + m]
            self.init = op.operands[1 + n_comp + m:]
        else:
            self.ids, self.init = op.operands[1 + n_comp:], []
        roles = ("summarize", "combine", "apply", "emit")
        self.regions = dict(zip(roles, op.regions))
        self.names = {role: op.attrs["check_laws"].get(role, "(builtin)") for role in roles}

    # -- emitting -------------------------------------------------------------------------------
    def emit(self, name: str, operands: list[Value], dtype, attrs=None) -> Value:
        return self.x.emit(name, operands, [dtype], attrs).result

    def cmp(self, pred: str, a: Value, b: Value) -> Value:
        return self.emit("cmp", [a, b], BOOL, {"pred": pred})

    def c(self, value: int) -> Value:
        return self.x.c(value)

    def ix(self, name: str, a: Value, b: Value) -> Value:
        return self.x.ix(name, a, b)

    def select(self, cond: Value, a: Value, b: Value) -> Value:
        return self.emit("select", [cond, a, b], a.type)

    def const(self, dtype, value) -> Value:
        return self.emit("const", [], dtype, {"value": value})

    def call(self, role: str, args: list[Value]) -> list[Value]:
        return self.inline_region(self.regions[role], list(args))

    def summarize(self, start: Value, stop: Value) -> list[Value]:
        return self.call("summarize", self.segment_views(self.comps, start, stop))

    def loop(self, count: Value, body) -> None:
        """An ordered loop over t in [0, count); ``body(t)`` emits its ops."""
        t = Value(INDEX, "t")

        def build():
            body(t)
            return []

        region = self.x.with_block([t], build)
        self.x.out.append(Op("for", [self.x.domain(count)], [], None, [region]))

    def carried_loop(self, count: Value, start: Value, step) -> Value:
        """An ordered loop over t in [0, count) carrying one value: ``step(t, value)`` gives the next."""
        t, carried = Value(INDEX, "t"), Value(start.type, "m")
        region = self.x.with_block([t, carried], lambda: [step(t, carried)])
        loop = Op("for", [self.x.domain(count), start], [start.type], None, [region])
        self.x.out.append(loop)
        return loop.results[0]

    def helpers(self, *roles: str) -> str:
        return ", ".join(f"{role} '{self.names[role]}'" for role in roles)

    def fail_unless(self, ok: Value, message: str, args: list[Value]) -> None:
        self.x.emit("assert_true", [ok] + list(args), attrs={
            "what": f"laws sanitizer: {message}", "rule": message[:2],
            "code": "sanitizer"}, span=self.op.span)

    # -- comparing and showing values ---------------------------------------------------------
    def f64(self, v: Value) -> Value:
        return v if v.type == F64 else self.emit("cast", [v], F64)

    def finite_abs(self, v: Value) -> Value:
        """|v| in f64 when finite, else 0."""
        a = self.emit("abs", [self.f64(v)], F64)
        return self.select(self.cmp("lt", a, self.const(F64, float("inf"))), a, self.const(F64, 0.0))

    def magnitude(self, values: list[Value], start: Value | None = None) -> Value:
        """max(1, the largest finite magnitude among the float ``values``), in f64."""
        m = start if start is not None else self.const(F64, 1.0)
        for v in values:
            if v.type.is_float:
                m = self.emit("max", [m, self.finite_abs(v)], F64)
        return m

    def close(self, p: Value, q: Value, scale: Value) -> Value:
        """``p`` and ``q`` agree: equal (integers, bools, equal infinities), both NaN, or finite with
        |p - q| <= law_tolerance(dtype) * scale."""
        same = self.cmp("eq", p, q)
        if not p.type.is_float:
            return same
        both_nan = self.emit("and", [self.cmp("ne", p, p), self.cmp("ne", q, q)], BOOL)
        p64, q64 = self.f64(p), self.f64(q)
        inf = self.const(F64, float("inf"))
        finite = self.emit("and", [self.cmp("lt", self.emit("abs", [p64], F64), inf),
                                   self.cmp("lt", self.emit("abs", [q64], F64), inf)], BOOL)
        diff = self.emit("abs", [self.emit("sub", [p64, q64], F64)], F64)
        bound = self.emit("mul", [self.const(F64, law_tolerance(p.type.name)), scale], F64)
        near = self.emit("and", [finite, self.cmp("le", diff, bound)], BOOL)
        return self.emit("or", [same, self.emit("or", [both_nan, near], BOOL)], BOOL)

    def all_close(self, ps: list[Value], qs: list[Value], scale: Value) -> Value:
        ok = self.const(BOOL, True)
        for p, q in zip(ps, qs):
            ok = self.emit("and", [ok, self.close(p, q, scale)], BOOL)
        return ok

    def show_one(self, v: Value) -> tuple[str, Value]:
        dtype = v.type
        if dtype.is_float:
            return ("%.17g" if dtype.bits == 64 else "%.9g"), (v if dtype == F64 else self.emit("cast", [v], F64))
        # Message arguments are index or f64 values (assert_true): u64 keeps its bits.
        return ("%llu" if dtype == U64 else "%lld"), (v if dtype == INDEX else self.emit("cast", [v], INDEX))

    def show(self, values: list[Value]) -> tuple[str, list[Value]]:
        shown = [self.show_one(v) for v in values]
        return "(" + ", ".join(f for f, _ in shown) + ")", [a for _, a in shown]

    def check_same(self, got: list[Value], want: list[Value], message: str, extra: list[Value] = (),
                   context: list[Value] = ()) -> None:
        """Fail unless ``got`` equals ``want`` within the tolerance scaled by the magnitudes of both
        and of ``context`` (the other values of the law); ``message`` has ``{got}`` and ``{want}``
        placeholders (both tuples shown in full) and ends with the ``%lld`` conversions of ``extra``."""
        got_fmt, got_args = self.show(got)
        want_fmt, want_args = self.show(want)
        scale = self.magnitude(list(got) + list(want) + list(context))
        self.fail_unless(self.all_close(got, want, scale), message.format(got=got_fmt, want=want_fmt),
                         got_args + want_args + list(extra))

    # -- the laws -------------------------------------------------------------------------------
    def run(self) -> None:
        n = self.emit("dom_len", [self.domain], INDEX)
        self.identity_laws(n)

        def body(t):
            a, b, c = segments(self, n, t)
            self.pair_laws(a, b, c)

        self.loop(pair_count(self, n), body)

    def identity_laws(self, n: Value) -> None:
        x = self.x
        names = _escape(self.helpers("summarize", "combine"))
        ids = list(self.ids)
        self.check_same(self.call("combine", ids + ids), ids,
                        f"R2 identity law fails for {names}: combine(identity, identity) = {{got}} "
                        f"but identity = {{want}}")
        whole = self.summarize(x.c(0), n)
        for label, args in (("combine(identity, x)", ids + whole), ("combine(x, identity)", whole + ids)):
            self.check_same(self.call("combine", args), whole,
                            f"R2 identity law fails for {names}: {label} = {{got}} but x = {{want}} "
                            f"(x = summarize([0, %lld)))", [n])
        if self.scan:
            self.check_same(self.call("apply", ids + list(self.init)), list(self.init),
                            f"R6 identity action fails for {_escape(self.helpers('apply'))}: "
                            f"apply(identity, s) = {{got}} but s = {{want}} (s: the initial state)")

    def pair_laws(self, a: Value, b: Value, c: Value) -> None:
        segments = "with A = [%lld, %lld), B = [%lld, %lld)"
        bounds = [a, b, b, c]
        sa, sb = self.summarize(a, b), self.summarize(b, c)
        joined = self.summarize(a, c)
        parts = self.call("combine", sa + sb)
        self.check_same(joined, parts,
                        f"R2 homomorphism fails for {_escape(self.helpers('summarize', 'combine'))}: "
                        f"summarize(A ++ B) = {{got}} but combine(summarize(A), summarize(B)) = {{want}} {segments}",
                        bounds, context=sa + sb)
        if not self.scan:
            return
        init = list(self.init)
        both = self.call("apply", parts + init)
        after_a = self.call("apply", sa + init)
        stepwise = self.call("apply", sb + after_a)
        self.check_same(both, stepwise,
                        f"R6 action law fails for {_escape(self.helpers('summarize', 'combine', 'apply'))}: "
                        f"apply(combine(a, b), s) = {{got}} but apply(b, apply(a, s)) = {{want}} "
                        f"(a = summarize(A), b = summarize(B), s the initial state) {segments}",
                        bounds, context=sa + sb + parts + init + after_a)
        self.emit_law(a, b, c, init, after_a)

    def emit_law(self, a: Value, b: Value, c: Value, init: list[Value], after_a: list[Value]) -> None:
        """emit(A ++ B, s) == concat(emit(A, s), emit(B, apply(sA, s))), member by member (floats:
        the tolerance scaled by the largest magnitude among every output member on both sides
        and the two states)."""
        x = self.x
        whole = self.call("emit", self.segment_views(self.comps, a, c) + init)
        first = self.call("emit", self.segment_views(self.comps, a, b) + init)
        second = self.call("emit", self.segment_views(self.comps, b, c) + after_a)
        emit_name = _escape(self.helpers("emit"))
        names = _escape(self.helpers("summarize", "apply", "emit"))
        outputs = [(k, pieces) for k, pieces in enumerate(zip(whole, first, second))
                   if isinstance(pieces[0].type, TensorType) and pieces[0].type.rank == 1]  # others: refused later
        label = {k: f" (output {k})" if len(whole) > 1 else "" for k, _ in outputs}
        for k, pieces in outputs:
            for piece, start, stop in zip(pieces, (a, a, b), (c, b, c)):
                have, length = x.extent(piece, 0), x.ix("sub", stop, start)
                self.fail_unless(self.cmp("eq", have, length),
                                 f"R7 membership fails for {emit_name}: it returned %lld members{label[k]} for "
                                 f"the slice [%lld, %lld) of %lld members", [have, start, stop, length])
        scale = self.magnitude(init + after_a)
        for k, pieces in outputs:
            if pieces[0].type.dtype.is_float:
                for piece in pieces:
                    scale = self.carried_loop(x.extent(piece, 0), scale, lambda u, m, piece=piece: self.magnitude(
                        [x.element(piece, [u], self.op.span, proven=True)], start=m))
        split = x.ix("sub", b, a)
        for k, (joined, p, q) in outputs:
            for piece, offset, count, origin in ((p, x.c(0), split, a), (q, split, x.ix("sub", c, b), b)):
                def compare(u, joined=joined, piece=piece, offset=offset, origin=origin, output=label[k]):
                    got = x.element(joined, [x.ix("add", offset, u)], self.op.span, proven=True)
                    want = x.element(piece, [u], self.op.span, proven=True)
                    got_fmt, got_arg = self.show_one(got)
                    want_fmt, want_arg = self.show_one(want)
                    self.fail_unless(
                        self.close(got, want, scale),
                        f"R6 emit law fails for {names}: at member %lld{output}, emit(A ++ B, s) = {got_fmt} but "
                        f"concat(emit(A, s), emit(B, apply(summarize(A), s))) = {want_fmt} with "
                        f"A = [%lld, %lld), B = [%lld, %lld), s the initial state",
                        [x.ix("add", origin, u), got_arg, want_arg, a, b, b, c])

                self.loop(count, compare)


# -- segmentations ---------------------------------------------------------------------------------
# Written once over an arithmetic ``ar`` (``c``, ``ix``, ``cmp``, ``select``): the checks build
# them as KIR index ops, ``segment_pairs`` evaluates them on Python integers (tests, docs).
def pair_count(ar, n):
    """How many pairs of adjacent segments are checked for an axis of ``n`` members."""
    fixed = STRUCTURAL + RANDOM_SEGMENTATIONS * RANDOM_CUTS + 1  # + 1: the window's last pair
    return ar.ix("add", ar.c(fixed), ar.ix("min", n, ar.c(SINGLE_MEMBERS)))


def segments(ar, n, t):
    """(a, b, c): the pair of adjacent segments [a, b), [b, c) number ``t`` (module docstring)."""
    zero, one = ar.c(0), ar.c(1)
    # Structural: [0, mid, n] with mid = 0, min(1, n), max(n - 1, 0), n.
    mid = ar.select(ar.cmp("eq", t, zero), zero,
                    ar.select(ar.cmp("eq", t, one), ar.ix("min", one, n),
                              ar.select(ar.cmp("eq", t, ar.c(2)), ar.ix("max", ar.ix("sub", n, one), zero), n)))
    # Random: segmentation r, its pair j (cuts j, j + 1, j + 2 of 0, c_1 .. c_K, n).
    u = ar.ix("sub", t, ar.c(STRUCTURAL))
    r, j = ar.ix("floordiv", u, ar.c(RANDOM_CUTS)), ar.ix("mod", u, ar.c(RANDOM_CUTS))
    cuts = [_cut(ar, n, r, ar.ix("add", j, ar.c(d))) for d in range(3)]
    # A window of single members: cuts 0, o, o + 1, .., o + w, n; pair q has cuts q, q + 1, q + 2.
    q = ar.ix("sub", u, ar.c(RANDOM_SEGMENTATIONS * RANDOM_CUTS))
    w = ar.ix("min", n, ar.c(SINGLE_MEMBERS))
    o = ar.ix("mod", _draw(ar, n, ar.c(-1), zero), ar.ix("add", ar.ix("sub", n, w), one))

    def single(i):
        inner = ar.ix("add", o, ar.ix("sub", i, one))
        return ar.select(ar.cmp("eq", i, zero), zero, ar.select(ar.cmp("eq", i, ar.ix("add", w, ar.c(2))), n, inner))

    singles = [single(ar.ix("add", q, ar.c(d))) for d in range(3)]
    structural = ar.cmp("lt", t, ar.c(STRUCTURAL))
    random = ar.cmp("lt", t, ar.c(STRUCTURAL + RANDOM_SEGMENTATIONS * RANDOM_CUTS))
    fixed = [zero, mid, n]
    return tuple(ar.select(structural, f, ar.select(random, cut, one_by_one))
                 for f, cut, one_by_one in zip(fixed, cuts, singles))


def _cut(ar, n, r, i):
    """Cut ``i`` (0 .. RANDOM_CUTS + 1) of random segmentation ``r``: 0, then one cut in each
    stratum [n (i - 1) / K, n i / K] (so the cuts never decrease), then n."""
    K = RANDOM_CUTS
    lo = ar.ix("floordiv", ar.ix("mul", n, ar.ix("sub", i, ar.c(1))), ar.c(K))
    hi = ar.ix("floordiv", ar.ix("mul", n, i), ar.c(K))
    h = _draw(ar, n, r, i)
    mode = ar.ix("mod", h, ar.c(4))  # the stratum's start, its end, one past its start, anywhere in it
    width = ar.ix("add", ar.ix("sub", hi, lo), ar.c(1))
    anywhere = ar.ix("add", lo, ar.ix("mod", ar.ix("floordiv", h, ar.c(4)), width))
    inner = ar.select(ar.cmp("eq", mode, ar.c(0)), lo,
                      ar.select(ar.cmp("eq", mode, ar.c(1)), hi,
                                ar.select(ar.cmp("eq", mode, ar.c(2)), ar.ix("min", ar.ix("add", lo, ar.c(1)), hi),
                                          anywhere)))
    return ar.select(ar.cmp("eq", i, ar.c(0)), ar.c(0), ar.select(ar.cmp("eq", i, ar.c(K + 1)), n, inner))


def _draw(ar, n, r, i):
    """A pseudo-random value in [0, 2^31 - 1) from (n, r, i): two Park-Miller steps."""
    m = ar.c(MODULUS)
    h = ar.ix("add", ar.ix("mul", ar.ix("mod", n, m), ar.c(MULTIPLIER)),
              ar.ix("add", ar.ix("mul", ar.ix("mod", r, m), ar.c(69621)),
                    ar.ix("add", ar.ix("mul", i, ar.c(16807)), ar.c(SEED))))
    h = ar.ix("add", ar.ix("mod", h, m), ar.c(1))
    for _ in range(2):
        h = ar.ix("mod", ar.ix("mul", h, ar.c(MULTIPLIER)), m)
    return h


class _Integers:
    """The arithmetic of ``segments`` on Python integers (// and % round toward -inf, as in KIR)."""

    @staticmethod
    def c(value):
        return value

    @staticmethod
    def ix(name, a, b):
        ops = {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b, "floordiv": lambda: a // b,
               "mod": lambda: a % b, "min": lambda: min(a, b), "max": lambda: max(a, b)}
        return ops[name]()

    @staticmethod
    def cmp(pred, a, b):
        return {"eq": a == b, "lt": a < b}[pred]

    @staticmethod
    def select(cond, a, b):
        return a if cond else b


def segment_pairs(n: int) -> list[tuple[int, int, int]]:
    """Every (a, b, c) checked for an axis of ``n`` members, in order: what the compiled checks compute."""
    return [segments(_Integers, n, t) for t in range(pair_count(_Integers, n))]


def _escape(text: str) -> str:
    """Helper names go into a printf format."""
    return text.replace("%", "%%")
