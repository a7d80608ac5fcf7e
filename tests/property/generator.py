"""Hypothesis strategies that build random, well-typed Intent programs.

``modules(kernels=12)`` draws a ``Module``: many independent kernels (each with its own
``@intent.fn`` helpers) in one source text, so that one compiler build covers many
programs. Each ``Kernel`` knows its parameters, so ``arguments(kernel, draw)`` makes
inputs for it. Every choice is drawn from hypothesis, so a failing module shrinks to a
small one.

Three shapes of kernel:

- ``expr``: a returned whole-tensor expression over tensor parameters whose extents are
  ``M``/``N``, size-one axes (static ``1``, or ``P``/``Q`` that are 1 or ``M``/``N`` at run
  time) and scalars: arithmetic, comparisons, casts, literals, ``I.where``,
  ``I.minimum``/``I.maximum``, tensor helpers (broadcasting, S2/S3);
- ``parallel``: ``I.parallel`` over one or two domains (or one nested in another) whose
  body computes scalars with if/elif/else, ordered ``for`` and ``while`` loops with
  carries, ``break``/``continue``, helper calls, and writes ``out[i] = ...`` (each point
  its own element: unique writes, P3);
- ``ordered``: ordered loops over the data at kernel level with carries, writing a few
  results.

What is left out on purpose: ``exp``, ``log`` and float ``**`` (their results may differ
within the documented ULP bound, which comparisons and cancellation would magnify),
data-dependent loop bounds (they could run for a long time), and out-of-range accesses
(whose error could come from any of several points). Integer arithmetic overflows
freely: wrap-around is part of what is tested.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

INTS = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")
FLOATS = ("f16", "f32", "f64")
DTYPES = ("i32", "f32", "i64", "u8", "bool", "f64", "i8", "u32", "f16", "i16", "u16", "u64", "index")
NUMPY = {"bool": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "index": np.int64,
         "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "f16": np.float16,
         "f32": np.float32, "f64": np.float64}
BITS = {"i8": 8, "i16": 16, "i32": 32, "i64": 64, "index": 64, "u8": 8, "u16": 16, "u32": 32, "u64": 64}


def is_int(dt: str) -> bool:
    return dt in BITS


def int_range(dt: str) -> tuple[int, int]:
    bits = BITS[dt]
    if dt.startswith("u"):
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


# ---------------------------------------------------------------------------------------
# what a generated kernel looks like to the test
# ---------------------------------------------------------------------------------------
@dataclass
class Param:
    name: str
    dtype: str
    extents: tuple = ()  # () for a scalar; names (M, N, P, Q) or 1
    mutable: bool = False

    @property
    def tensor(self) -> bool:
        return bool(self.extents) or self.mutable

    def declaration(self) -> str:
        if not self.extents:
            return f"{self.name}: {self.dtype}"
        mut = "mut " if self.mutable else ""
        return f"{self.name}: {mut}{self.dtype}[{', '.join(str(e) for e in self.extents)}]"


@dataclass
class Kernel:
    name: str
    kind: str
    params: list[Param]
    text: str  # helpers and the kernel

    def __str__(self) -> str:
        return self.text


@dataclass
class Module:
    kernels: list[Kernel] = field(default_factory=list)

    @property
    def source(self) -> str:
        return "import intent as I\n\n" + "\n".join(k.text for k in self.kernels)


# ---------------------------------------------------------------------------------------
# scopes
# ---------------------------------------------------------------------------------------
@dataclass
class Scope:
    values: dict = field(default_factory=dict)  # scalar name -> dtype (readable)
    assignable: set = field(default_factory=set)  # names this block may reassign
    tensors: dict = field(default_factory=dict)  # tensor name -> (dtype, extents)
    points: dict = field(default_factory=dict)  # index name -> the extent it ranges over
    shifted: set = field(default_factory=set)  # points that are >= 1 (so `p - 1` is in range too)

    def child(self) -> "Scope":
        return Scope(dict(self.values), set(self.assignable), dict(self.tensors), dict(self.points),
                     set(self.shifted))


@dataclass
class Helper:
    name: str
    params: list[str]  # dtypes
    result: str


class _Gen:
    """One kernel's worth of choices, all drawn from hypothesis."""

    def __init__(self, draw, prefix: str):
        self.draw = draw
        self.prefix = prefix
        self.counter = 0
        self.helpers: list[Helper] = []
        self.tensor_helpers: list[tuple[str, int, str]] = []  # (name, rank, dtype)
        self.in_helper = False
        self.pending: list[str] = []  # combine helpers made while generating a kernel body

    def combiner(self, dt: str) -> tuple[str, str]:
        """(name, identity) of a new associative and commutative combine helper on ``dt``
        (exact: integers wrap, bools are bits)."""
        if dt == "bool":
            op, identity = self.pick([("&", "True"), ("|", "False"), ("^", "False")])
        else:
            low, high = int_range(dt)
            op, identity = self.pick([("+", "0"), ("*", "1"), ("|", "0"), ("^", "0"), ("&", str(high if low == 0 else -1)),
                                      ("I.minimum", str(high)), ("I.maximum", f"({low})" if low < 0 else str(low))])
        name = f"{self.prefix}_c{self.counter}"
        self.counter += 1
        body = f"I.minimum(a, b)" if op == "I.minimum" else f"I.maximum(a, b)" if op == "I.maximum" else f"a {op} b"
        self.pending += ["@intent.fn", f"def {name}(a: {dt}, b: {dt}) -> {dt}:", f"    return {body}", ""]
        return name, identity

    # -- drawing ---------------------------------------------------------------------------
    def pick(self, options):
        return self.draw(st.sampled_from(list(options)))

    def number(self, low: int, high: int) -> int:
        return self.draw(st.integers(low, high))

    def maybe(self, chance: int = 50) -> bool:
        """True with about ``chance`` percent (shrinks to False)."""
        return self.draw(st.integers(0, 99)) < chance

    def fresh(self, base: str) -> str:
        self.counter += 1
        return f"{base}{self.counter}"

    # -- literals ----------------------------------------------------------------------------
    def literal(self, dt: str) -> str:
        if dt == "bool":
            return self.pick(["True", "False"])
        if dt in FLOATS:
            value = self.pick([1.0, 0.0, 2.0, 0.5, -1.5, 3.25, -0.0, 100.0, -7.0, 1e-3, 255.5, 60000.0,
                               "I.inf", "I.nan", "-I.inf"])
            return value if isinstance(value, str) else repr(value)
        low, high = int_range(dt)
        bits = BITS[dt]
        value = self.pick([1, 2, 0, 3, -1, 7, 100, bits - 1, bits, high, low, -100, 12345, high // 3])
        if not low <= value <= high:
            value = self.number(low, high) if self.maybe(30) else 1
        return str(value) if value >= 0 else f"({value})"

    # -- scalar expressions --------------------------------------------------------------------
    def leaves(self, dt: str, scope: Scope) -> list[str]:
        found = [name for name, t in scope.values.items() if t == dt]
        for name, (t, extents) in scope.tensors.items():
            if t != dt:
                continue
            index = self.index_for(extents, scope)
            if index is not None:
                found.append(f"{name}[{index}]")
            if (is_int(dt) or dt == "bool") and dt != "index" and self.maybe(10):
                # whole-tensor reductions: exact on integers (wrap-around) and bools
                if self.maybe(30):
                    combine, identity = self.combiner(dt)
                    found.append(f"I.reduce({name}, combine={combine}, identity={identity})")
                else:
                    found.append(f"I.{self.pick(['any', 'all'] if dt == 'bool' else ['sum', 'max', 'min', 'prod'])}"
                                 f"({name})")
        return found

    def index_for(self, extents, scope: Scope) -> str | None:
        """An in-bounds index expression for each axis, from the loop points in scope."""
        parts = []
        for extent in extents:
            if self.maybe(2):  # now and then an index that may be out of range: both must refuse (D5)
                points = list(scope.points) or ["0"]
                parts.append(self.pick([f"({self.pick(points)} + {self.number(1, 2)})", f"({self.pick(points)} - 1)",
                                        f"({self.pick(points)} * 2)", "(-1)", "1"]))
                continue
            if extent == 1:
                parts.append("0")
                continue
            if extent == 2:  # the pair axis of I.join
                points = list(scope.points)
                parts.append(self.pick(["0", "1"] + [f"({q} % 2)" for q in points]))
                continue
            if extent == "MN":  # a row-major flattening of an [M, N] tensor
                rows = [p for p, e in scope.points.items() if e == "M"]
                cols = [p for p, e in scope.points.items() if e == "N"]
                if not rows or not cols:
                    return None
                parts.append(f"(({self.pick(rows)} * N) + {self.pick(cols)})")
                continue
            points = [p for p, e in scope.points.items() if e == extent]
            if not points:
                return None
            p = points[self.number(0, len(points) - 1)]
            form = self.number(0, 9)
            if form == 7 and p in scope.shifted:
                parts.append(f"({p} - 1)")
            elif form == 8:
                parts.append(f"({extent} - 1 - {p})")
            elif form == 9:
                parts.append(f"(({p} + {self.number(1, 3)}) % {extent})")
            else:
                parts.append(p)
        return ", ".join(parts)

    def typed(self, dt: str, scope: Scope, depth: int) -> str:
        """An expression of dtype ``dt`` that is not a bare literal."""
        text, literal = self.expr(dt, scope, depth)
        if not literal:
            return text
        leaves = self.leaves(dt, scope)
        if leaves:
            return self.pick(leaves)
        others = [t for t in self.available(scope) if t != dt]
        if others and self.maybe(80):
            src = self.pick(others)
            return f"I.cast({self.pick(self.leaves(src, scope))}, {dt})"
        default = "bool" if dt == "bool" else "f32" if dt in FLOATS else "i64"
        value = self.literal(default) if default != "i64" else str(self.number(-3, 300))
        return f"I.cast({value}, {dt})"

    def available(self, scope: Scope) -> list[str]:
        """The dtypes that have a variable or an element load in scope."""
        found = {t for t in scope.values.values()}
        found |= {t for t, extents in scope.tensors.values()
                  if all(e == 1 or e in scope.points.values() for e in extents)}
        return sorted(found)

    def dtype(self, scope: Scope) -> str:
        """A dtype, mostly one the scope has values of (so that data flows)."""
        have = self.available(scope)
        if have and self.maybe(75):
            return self.pick(have)
        return self.pick(DTYPES)

    def expr(self, dt: str, scope: Scope, depth: int) -> tuple[str, bool]:
        """(text, is a bare literal) of a scalar expression of dtype ``dt``."""
        leaves = self.leaves(dt, scope)
        if depth <= 0 or self.maybe(25):
            if leaves and self.maybe(85):
                return self.pick(leaves), False
            return self.literal(dt), True
        kinds = ["binary", "unary", "cast", "where", "cond"]
        if dt == "bool":
            kinds = ["compare", "binary", "unary", "cast", "where", "logic", "compare"]
            if "index" in self.available(scope):
                kinds.append("member")
        else:
            kinds.append("minmax")
        if any(h.result == dt for h in self.helpers):
            kinds.append("call")
        kind = self.pick(kinds)
        d = depth - 1
        if kind == "binary":
            ops = ["&", "|", "^"] if dt == "bool" else ["+", "-", "*", "/", "//", "%"] if dt in FLOATS else \
                ["+", "-", "*", "//", "%", "&", "|", "^", "<<", ">>", "**"]
            op = self.pick(ops)
            a, b = self.typed(dt, scope, d), self.expr(dt, scope, d)[0]
            if self.maybe():
                a, b = b, a
            return f"({a} {op} {b})", False
        if kind == "unary":
            ops = ["~"] if dt == "bool" else ["-", "I.abs", "I.sqrt"] if dt in FLOATS else ["-", "~", "I.abs"]
            op = self.pick(ops)
            a = self.typed(dt, scope, d)
            return (f"{op}({a})" if op.startswith("I.") else f"({op}{a})"), False
        if kind == "cast":
            src = self.dtype(scope)
            if src == dt:
                src = self.pick([t for t in DTYPES if t != dt])
            return f"I.cast({self.typed(src, scope, d)}, {dt})", False
        if kind == "where":
            c = self.typed("bool", scope, d) if self.maybe(70) else self.expr("bool", scope, d)[0]
            a, b = self.typed(dt, scope, d), self.expr(dt, scope, d)[0]
            if self.maybe():
                a, b = b, a
            return f"I.where({c}, {a}, {b})", False
        if kind == "cond":
            c = self.typed("bool", scope, d)
            a, b = self.typed(dt, scope, d), self.expr(dt, scope, d)[0]
            if self.maybe():
                a, b = b, a
            return f"({a} if {c} else {b})", False
        if kind == "minmax":
            a, b = self.typed(dt, scope, d), self.expr(dt, scope, d)[0]
            return f"I.{self.pick(['minimum', 'maximum'])}({a}, {b})", False
        if kind == "call":
            helper = self.pick([h for h in self.helpers if h.result == dt])
            args = ", ".join(self.expr(t, scope, d)[0] for t in helper.params)
            return f"{helper.name}({args})", False
        if kind == "compare":
            t = self.dtype(scope)
            ops = ["==", "!="] if t == "bool" else ["<", "<=", ">", ">=", "==", "!="]
            a, b = self.typed(t, scope, d), self.expr(t, scope, d)[0]
            if self.maybe():
                a, b = b, a
            return f"({a} {self.pick(ops)} {b})", False
        if kind == "member":
            value = self.typed("index", scope, d)
            axes = [n for n, (_t, e) in scope.tensors.items() if e and e[0] != 1 and e[0] != "MN"]
            if axes and self.maybe():
                domain = f"{self.pick(axes)}.axis(0)"
            else:
                domain = f"I.domain({self.number(-3, 3)}, {self.number(0, 9)}, {self.number(1, 3)})"
            return f"({value} {self.pick(['in', 'not in'])} {domain})", False
        # logic: short-circuit and/or/not on scalar bools
        op = self.pick(["and", "or", "not"])
        if op == "not":
            return f"(not {self.typed('bool', scope, d)})", False
        return f"({self.typed('bool', scope, d)} {op} {self.typed('bool', scope, d)})", False

    # -- statements ------------------------------------------------------------------------------
    def block(self, scope: Scope, depth: int, count: int, ctx: dict) -> list[str]:
        lines: list[str] = []
        for _ in range(count):
            lines += self.statement(scope, depth, ctx)
        return lines

    def statement(self, scope: Scope, depth: int, ctx: dict) -> list[str]:
        kinds = ["define", "define", "assign"]
        if depth > 0:
            kinds += ["if", "for", "while"]
        if ctx.get("loop"):
            kinds.append("exit")
        if ctx.get("point"):
            kinds += ["write", "skip"]
        if ctx.get("returns"):
            kinds.append("return")
        if ctx.get("kernel_return"):
            kinds += ["kernel_return", "slot_write"]
        kind = self.pick(kinds)
        if kind == "assign" and not scope.assignable:
            kind = "define"
        if kind == "define":
            dt = self.dtype(scope)
            name = self.fresh("v")
            value = self.expr(dt, scope, self.number(1, 3))[0]
            scope.values[name] = dt
            scope.assignable.add(name)
            return [f"{name}: {dt} = {value}"]
        if kind == "assign":
            name = self.pick(sorted(scope.assignable))
            dt = scope.values[name]
            return [f"{name}: {dt} = {self.expr(dt, scope, self.number(1, 3))[0]}"]
        if kind == "if":
            lines = [f"if {self.typed('bool', scope, 2)}:"]
            lines += _indent(self.block(scope.child(), depth - 1, self.number(1, 3), ctx))
            for _ in range(self.number(0, 2)):
                lines.append(f"elif {self.typed('bool', scope, 2)}:")
                lines += _indent(self.block(scope.child(), depth - 1, self.number(1, 2), ctx))
            if self.maybe():
                lines.append("else:")
                lines += _indent(self.block(scope.child(), depth - 1, self.number(1, 2), ctx))
            return lines
        if kind == "for":
            point = self.fresh("k")
            inner = scope.child()
            loop_ctx = dict(ctx, loop=True)
            axes = [(name, extents) for name, (_t, extents) in scope.tensors.items() if extents and extents[0] != 1]
            axes = [(n, e) for n, e in axes if e[0] != "MN"]
            if axes and self.maybe(60):
                name, extents = self.pick(axes)
                extent = extents[0]
                domain = self.pick([f"{name}.axis(0)", f"{name}.axis(0)[I.minimum(1, {extent}):{extent}]",
                                    f"{name}.axis(0)[0:I.maximum(0, {extent} - 2)]",
                                    f"{name}.axis(0)[I.minimum(2, {extent}):]"])
                if self.maybe(30):
                    ordinal = self.fresh("e")
                    inner.values[ordinal] = "index"
                    header = f"for {ordinal}, {point} in enumerate({domain}):"
                else:
                    header = f"for {point} in {domain}:"
                inner.points[point] = extent
            else:
                begin, end, step = self.number(-2, 2), self.number(0, 5), self.number(1, 3)
                header = f"for {point} in I.domain({begin}, {end}, {step}):" if step > 1 or self.maybe() else \
                    f"for {point} in I.domain({begin}, {end}):"
            inner.values[point] = "index"
            return [header] + _indent(self.block(inner, depth - 1, self.number(1, 3), loop_ctx))
        if kind == "while":
            counter = self.fresh("w")
            dt = self.pick(["i32", "index", "u8", "i64"])
            limit = self.number(0, 4)
            inner = scope.child()
            inner.values[counter] = dt
            cond = f"{counter} < {limit}"
            if self.maybe(40):
                cond = f"({cond}) and {self.typed('bool', scope, 1)}"
            lines = [f"{counter}: {dt} = 0", f"while {cond}:", f"    {counter}: {dt} = {counter} + 1"]
            lines += _indent(self.block(inner, depth - 1, self.number(1, 3), dict(ctx, loop=True)))
            scope.values[counter] = dt  # readable after the loop (its final count), never reassigned
            return lines
        if kind == "exit":
            return [f"if {self.typed('bool', scope, 2)}:", f"    {self.pick(['break', 'continue'])}"]
        if kind == "skip":  # `continue` of the parallel point itself (only outside ordered loops)
            if ctx.get("loop"):
                return self.statement(scope, depth, dict(ctx, point=False))
            return [f"if {self.typed('bool', scope, 2)}:", "    continue"]
        if kind == "write":
            return [self.write(scope, ctx)]
        if kind == "kernel_return":
            return [f"if {self.typed('bool', scope, 2)}:", "    return"]
        if kind == "slot_write":
            out, dt, slots = ctx["kernel_return"]
            return [f"{out}[{self.number(0, slots - 1)}] = {self.expr(dt, scope, 2)[0]}"]
        # return from a helper
        return [f"if {self.typed('bool', scope, 2)}:", f"    return {self.expr(ctx['returns'], scope, 2)[0]}"]

    def write(self, scope: Scope, ctx: dict) -> str:
        out, dt, index = ctx["point"]
        return f"{out}[{index}] = {self.expr(dt, scope, 4)[0]}"

    # -- helpers -----------------------------------------------------------------------------------
    def helper(self) -> list[str]:
        name = f"{self.prefix}_h{len(self.helpers)}"
        params = [self.pick(DTYPES) for _ in range(self.number(1, 3))]
        result = self.pick(DTYPES)
        scope = Scope()
        names = []
        for k, dt in enumerate(params):
            names.append(f"a{k}")
            scope.values[f"a{k}"] = dt
        sig = ", ".join(f"{n}: {t}" for n, t in zip(names, params))
        body = self.block(scope, 2, self.number(0, 4), {"returns": result})
        body.append(f"return {self.expr(result, scope, 3)[0]}")
        self.helpers.append(Helper(name, params, result))
        return ["@intent.fn", f"def {name}({sig}) -> {result}:"] + _indent(body) + [""]

    def tensor_helper(self) -> list[str]:
        name = f"{self.prefix}_t{len(self.tensor_helpers)}"
        rank = self.number(1, 2)
        dt = self.pick(DTYPES)
        extents = ("S", "T")[-rank:] if rank == 2 else ("S",)
        scope = TensorScope({"x": (dt, extents)}, {"s": dt})
        value, _shape = self.tensor_expr(dt, scope, 3, require_tensor=True)
        self.tensor_helpers.append((name, rank, dt))
        return ["@intent.fn", f"def {name}(x: {dt}[{', '.join(extents)}], s: {dt}) -> {dt}[{', '.join(extents)}]:",
                f"    return {value}", ""]

    # -- whole-tensor expressions --------------------------------------------------------------------
    def tensor_expr(self, dt: str, scope: "TensorScope", depth: int, require_tensor=False) -> tuple[str, tuple | None]:
        """(text, symbolic shape aligned from the right, or None for a scalar)."""
        text, shape, literal = self._tensor_expr(dt, scope, depth)
        if (require_tensor and shape is None) or literal:
            leaf = scope.tensor_leaf(self, dt)
            if leaf is not None:
                name, extents = leaf
                return (f"({name} + {text})" if dt not in ("bool",) else f"({name} ^ {text})"), \
                    _broadcast(tuple(extents), shape)
            if literal:
                return f"I.cast({self.literal('f32' if dt in FLOATS else 'bool' if dt == 'bool' else 'u8')}, {dt})", \
                    None
        return text, shape

    def _tensor_expr(self, dt, scope, depth) -> tuple[str, tuple | None, bool]:
        if depth <= 0 or self.maybe(20):
            choice = self.number(0, 9)
            if choice < 6:
                leaf = scope.tensor_leaf(self, dt)
                if leaf is not None:
                    return leaf[0], tuple(leaf[1]), False
            if choice < 8 and dt in scope.scalars.values():
                return self.pick([n for n, t in scope.scalars.items() if t == dt]), None, False
            return self.literal(dt), None, True
        kinds = ["binary", "binary", "unary", "cast", "where"]
        if dt == "bool":
            kinds += ["compare", "compare"]
        elif dt != "index":
            kinds.append("minmax")
        if self.tensor_helpers and any(t == dt for _n, _r, t in self.tensor_helpers):
            kinds.append("call")
        if (is_int(dt) and dt != "index") or dt == "bool":
            kinds += ["reduce"] + (["scan"] if dt != "bool" else [])  # exact: integers wrap
        kind = self.pick(kinds)
        d = depth - 1
        if kind in ("reduce", "scan"):
            a, sa = self.tensor_expr(dt, scope, d, require_tensor=True)
            if sa is None:
                return a, None, False
            axis = self.number(0, len(sa) - 1)
            custom = self.maybe(30)
            if kind == "scan":
                flags = "".join([", exclusive=True" if self.maybe(30) else "", ", reverse=True" if self.maybe(30) else ""])
                if custom:
                    combine, identity = self.combiner(dt)
                    return f"I.scan({a}, combine={combine}, identity={identity}, axis={axis}{flags})", sa, False
                return f"I.{self.pick(['cumsum', 'cumprod'])}({a}, axis={axis}{flags})", sa, False
            shape = tuple(frozenset({1}) if k == axis else e for k, e in enumerate(sa))
            if custom:
                combine, identity = self.combiner(dt)
                return f"I.reduce({a}, combine={combine}, identity={identity}, axis={axis}, keepdims=True)", shape, False
            name = self.pick(["any", "all"] if dt == "bool" else ["sum", "max", "min", "prod"])
            return f"I.{name}({a}, axis={axis}, keepdims=True)", shape, False
        if kind in ("binary", "minmax"):
            if kind == "binary":
                ops = ["&", "|", "^"] if dt == "bool" else ["+", "-", "*", "/", "//", "%"] if dt in FLOATS else \
                    ["+", "-", "*", "//", "%", "&", "|", "^", "<<", ">>", "**"]
            a, sa = self.tensor_expr(dt, scope, d)
            b, sb, _ = self._tensor_expr(dt, scope, d)
            if self.maybe():
                a, b, sa, sb = b, a, sb, sa
            shape = _broadcast(sa, sb)
            if kind == "minmax":
                return f"I.{self.pick(['minimum', 'maximum'])}({a}, {b})", shape, False
            return f"({a} {self.pick(ops)} {b})", shape, False
        if kind == "unary":
            ops = ["~"] if dt == "bool" else ["-", "I.abs", "I.sqrt"] if dt in FLOATS else ["-", "~", "I.abs"]
            op = self.pick(ops)
            a, sa = self.tensor_expr(dt, scope, d)
            return (f"{op}({a})" if op.startswith("I.") else f"({op}{a})"), sa, False
        if kind == "cast":
            src = self.pick([t for t in DTYPES if t != dt])
            a, sa = self.tensor_expr(src, scope, d)
            return f"I.cast({a}, {dt})", sa, False
        if kind == "where":
            c, sc = self.tensor_expr("bool", scope, d)
            a, sa = self.tensor_expr(dt, scope, d)
            b, sb, _ = self._tensor_expr(dt, scope, d)
            if self.maybe():
                a, b, sa, sb = b, a, sb, sa
            return f"I.where({c}, {a}, {b})", _broadcast(_broadcast(sc, sa), sb), False
        if kind == "call":
            options = [(n, r) for n, r, t in self.tensor_helpers if t == dt]
            name, rank = self.pick(options)
            for _ in range(3):
                a, sa = self.tensor_expr(dt, scope, d, require_tensor=True)
                if sa is not None and len(sa) == rank:
                    s, _ = self.tensor_expr(dt, scope.scalars_only(), 0)
                    return f"{name}({a}, {s})", sa, False
            return self._tensor_expr(dt, scope, 0)
        t = self.pick(DTYPES)
        ops = ["==", "!="] if t == "bool" else ["<", "<=", ">", ">=", "==", "!="]
        a, sa = self.tensor_expr(t, scope, d)
        b, sb, _ = self._tensor_expr(t, scope, d)
        if self.maybe():
            a, b, sa, sb = b, a, sb, sa
        return f"({a} {self.pick(ops)} {b})", _broadcast(sa, sb), False

    # -- kernels -------------------------------------------------------------------------------------
    def expr_kernel(self, name: str) -> Kernel:
        helper_lines = []
        for _ in range(self.number(0, 2)):
            helper_lines += self.tensor_helper()
        scope = TensorScope({}, {}, allow_new=True)
        for _ in range(self.number(0, 2)):
            scope.scalars[f"s{len(scope.scalars)}"] = self.pick(DTYPES)
        values, types = [], []
        for _ in range(self.number(1, 2)):  # one result, or a tuple of two
            dt = self.pick(DTYPES)
            value, shape = self.tensor_expr(dt, scope, self.number(1, 5), require_tensor=True)
            if shape is None:  # a scalar expression, broadcast to a declared shape
                scope.tensors.setdefault("shape", ("bool", ("M", "N")))
                shape = ("M", "N")
            values.append(value)
            types.append(f"{dt}[{', '.join(str(_result_extent(axis)) for axis in shape)}]")
        params = [Param(n, t, tuple(e)) for n, (t, e) in scope.tensors.items()]
        params += [Param(n, t) for n, t in scope.scalars.items()]
        order = self.draw(st.permutations(range(len(params))))
        params = [params[k] for k in order]
        sig = ", ".join(p.declaration() for p in params)
        result = types[0] if len(types) == 1 else f"({', '.join(types)})"
        lines = helper_lines + self.pending + ["@intent.kernel", f"def {name}({sig}) -> {result}:",
                                f"    return {', '.join(values)}" if len(values) == 1 else
                                f"    return ({', '.join(values)})", ""]
        return Kernel(name, "expr", params, "\n".join(lines))

    def tensor_locals(self, params: list[Param], scope: Scope, two: bool) -> list[str]:
        """Kernel-level tensor values the points read: whole-tensor expressions over the
        parameters, and for [M, N] data a transpose and a row-major flattening."""
        lines = []
        tensors = {p.name: (p.dtype, p.extents) for p in params if p.extents and not p.mutable}
        scalars = {p.name: p.dtype for p in params if not p.extents}
        for _ in range(self.number(0, 2)):
            dt = self.dtype(scope)
            local = TensorScope(tensors, scalars)
            if local.tensor_leaf(self, dt) is None and not self.maybe(30):
                continue
            name = self.fresh("t")
            value, shape = self.tensor_expr(dt, local, self.number(1, 3))
            if shape is None:
                lines.append(f"{name}: {dt} = {value}")
                scope.values[name] = dt
            else:
                lines.append(f"{name} = {value}")
                scope.tensors[name] = (dt, tuple(_result_extent(axis) for axis in shape))
        if self.maybe(25):  # the coordinates of a domain, or two tensors side by side
            pairs = [(a, b) for a in tensors for b in tensors if a < b and tensors[a] == tensors[b]]
            name = self.fresh("t")
            if pairs and self.maybe():
                a, b = self.pick(pairs)
                lines.append(f"{name} = I.join({a}, {b})")
                scope.tensors[name] = (tensors[a][0], tuple(tensors[a][1]) + (2,))
            else:
                axes = [n for n, (_t, e) in tensors.items() if e[0] not in (1, "MN")]
                if axes:
                    source = self.pick(axes)
                    lines.append(f"{name} = I.indices({source}.axis(0))")
                    scope.tensors[name] = ("index", (tensors[source][1][0],))
        full = [n for n, (_t, e) in tensors.items() if e == ("M", "N")]
        if two and full and self.maybe(40):
            source = self.pick(full)
            name = self.fresh("t")
            if self.maybe():
                lines.append(f"{name} = {source}.transpose()")
                scope.tensors[name] = (tensors[source][0], ("N", "M"))
            else:
                lines.append(f"{name} = {source}.reshape([-1])")
                scope.tensors[name] = (tensors[source][0], ("MN",))
        return lines

    def parallel_kernel(self, name: str) -> Kernel:
        helper_lines = []
        for _ in range(self.number(0, 2)):
            helper_lines += self.helper()
        shape_kind = self.pick(["1d", "2d", "nested", "rows", "sub", "tri"])
        two = shape_kind not in ("1d", "sub")
        extents = ("M", "N") if two else ("N",)
        params: list[Param] = []
        for k in range(self.number(1, 3)):
            if two:
                shape = self.pick([("M", "N"), ("M", "N"), ("N",), ("M", 1), (1, "N"), ("M",)])
            else:
                shape = self.pick([("N",), ("N",), (1,)])
            params.append(Param(f"x{k}", self.dtype(Scope()), shape))
        if not any(p.extents == extents for p in params):
            params.insert(0, Param("x", self.pick(DTYPES), extents))
        for k in range(self.number(0, 2)):
            params.append(Param(f"s{k}", self.pick(DTYPES)))
        out_dt = self.pick(DTYPES)
        out = Param("o", out_dt, extents, mutable=True)
        params.append(out)
        scope = Scope()
        for p in params:
            if p.extents and not p.mutable:
                scope.tensors[p.name] = (p.dtype, p.extents)
            elif not p.extents:
                scope.values[p.name] = p.dtype
        lines = self.tensor_locals(params, scope, two)
        lines += self.block(scope, 1, self.number(0, 2), {})  # kernel-level values the points read
        returned = None
        if self.maybe(25):
            # A returned value computed before the points write `o` (it may read `o`
            # whole): a snapshot in program order, never fused past the writes.
            visible = {n: v for n, v in scope.tensors.items() if set(v[1]) <= {"M", "N", 1} and len(v[1]) <= 2}
            visible["o"] = (out_dt, extents)
            rdt = self.pick(DTYPES)
            value, shape = self.tensor_expr(rdt, TensorScope(visible, {}), self.number(1, 3), require_tensor=True)
            shape = shape or extents
            lines.append(f"snapshot = {value}")
            returned = f"{rdt}[{', '.join(str(_result_extent(axis)) for axis in shape)}]"
        anchor = next(p for p in params if p.extents == extents)
        body_scope = scope.child()
        body_scope.assignable = set()
        if shape_kind == "nested":
            header = [f"for i in I.parallel({anchor.name}.axis(0)):",
                      f"    for j in I.parallel({anchor.name}.axis(1)):"]
        elif shape_kind == "tri":  # the inner domain depends on the outer point
            header = [f"for i in I.parallel({anchor.name}.axis(0)):",
                      "    for j in I.parallel(I.domain(0, I.minimum(i + 1, N))):"]
        elif shape_kind == "2d":
            header = [f"for i, j in I.parallel({anchor.name}.axis(0), {anchor.name}.axis(1)):"]
        elif shape_kind == "sub":  # a subregion: points keep their source coordinates (D6)
            header = [f"for i in I.parallel({anchor.name}.axis(0)[I.minimum(1, N):N]):"]
            body_scope.shifted.add("i")
        else:
            header = [f"for i in I.parallel({anchor.name}.axis(0)):"]
        body_scope.points = {"i": "M", "j": "N"} if shape_kind in ("2d", "nested", "tri") else \
            {"i": "M"} if shape_kind == "rows" else {"i": "N"}
        for point in body_scope.points:
            body_scope.values[point] = "index"
        body: list[str] = []
        full = [n for n, (_t, e) in scope.tensors.items() if e == ("M", "N")]
        if two and full and self.maybe(40):  # views of this point's row or column
            source = self.pick(full)
            view = self.fresh("r")
            if shape_kind == "rows" or self.maybe():
                body.append(f"{view} = {source}[i, :]")
                body_scope.tensors[view] = (scope.tensors[source][0], ("N",))
            else:
                body.append(f"{view} = {source}[:, j]")
                body_scope.tensors[view] = (scope.tensors[source][0], ("M",))
        if shape_kind == "rows":
            # one point per row; the row's elements in an ordered loop, each written once
            body += self.block(body_scope, 1, self.number(0, 2), {})
            column = self.fresh("c")
            inner = body_scope.child()
            inner.points[column] = "N"
            inner.values[column] = "index"
            ctx = {"point": ("o", out_dt, f"i, {column}")}
            loop = self.block(inner, 1, self.number(0, 3), ctx) + [self.write(inner, ctx)]
            body += [f"for {column} in {anchor.name}.axis(1):"] + _indent(loop)
        else:
            index = ", ".join(body_scope.points)
            if self.maybe(20):  # the point's own output element may be read back (no other point's)
                body_scope.values[f"o[{index}]"] = out_dt
            ctx = {"point": ("o", out_dt, index)}
            body += self.block(body_scope, 2, self.number(0, 3), ctx)
            body.append(self.write(body_scope, ctx))
        body_indent = "        " if len(header) == 2 else "    "
        lines += header + [body_indent + line for line in body]
        signature = f"def {name}({', '.join(p.declaration() for p in params)}):"
        if returned is not None:
            lines.append("return snapshot")
            signature = signature[:-1] + f" -> {returned}:"
        kernel = ["@intent.kernel", signature]
        return Kernel(name, "parallel", params, "\n".join(helper_lines + self.pending + kernel + _indent(lines) + [""]))

    def ordered_kernel(self, name: str) -> Kernel:
        helper_lines = []
        for _ in range(self.number(0, 2)):
            helper_lines += self.helper()
        params = [Param(f"x{k}", self.dtype(Scope()), ("N",)) for k in range(self.number(1, 2))]
        params += [Param(f"s{k}", self.pick(DTYPES)) for k in range(self.number(0, 2))]
        slots = self.number(1, 4)
        out_dt = self.pick(DTYPES)
        params.append(Param("out", out_dt, (slots,), mutable=True))
        scope = Scope()
        for p in params:
            if p.extents and not p.mutable:
                scope.tensors[p.name] = (p.dtype, p.extents)
            elif not p.extents:
                scope.values[p.name] = p.dtype
        lines = self.tensor_locals(params, scope, False)
        lines += self.block(scope, 3, self.number(1, 5), {"kernel_return": ("out", out_dt, slots)})
        for k in range(slots):
            lines.append(f"out[{k}] = {self.expr(out_dt, scope, 3)[0]}")
        kernel = ["@intent.kernel", f"def {name}({', '.join(p.declaration() for p in params)}):"]
        return Kernel(name, "ordered", params, "\n".join(helper_lines + self.pending + kernel + _indent(lines) + [""]))


class TensorScope:
    """Tensor parameters of an ``expr`` kernel; new ones are made on demand."""

    SHAPES = [("M", "N"), ("N",), (1, "N"), ("M", 1), ("P", "N"), ("M", "Q"), (1,), ("Q",), ("P", 1), (1, 1)]

    def __init__(self, tensors: dict, scalars: dict, allow_new: bool = False):
        self.tensors = dict(tensors)
        self.scalars = dict(scalars)
        self.allow_new = allow_new

    def tensor_leaf(self, gen: _Gen, dt: str):
        have = [(n, e) for n, (t, e) in self.tensors.items() if t == dt]
        if have and (not self.allow_new or len(self.tensors) >= 5 or gen.maybe(60)):
            name, extents = gen.pick(have)
            if gen.maybe(15):  # a whole view: a relation, not a copy (a snapshot if the kernel writes it)
                return f"{name}[{', '.join(':' for _ in extents)}]", extents
            return name, extents
        if not self.allow_new:
            return None
        name = f"x{len(self.tensors)}"
        extents = gen.pick(self.SHAPES)
        self.tensors[name] = (dt, extents)
        return name, extents

    def scalars_only(self) -> "TensorScope":
        return TensorScope({}, self.scalars)


def _broadcast(a: tuple | None, b: tuple | None) -> tuple | None:
    """Symbolic broadcast of two shapes (S2): per axis from the right, the set of names."""
    if a is None:
        return b
    if b is None:
        return a
    rank = max(len(a), len(b))
    out = []
    for k in range(rank):
        names = set()
        for s in (a, b):
            offset = k - (rank - len(s))
            if offset >= 0:
                item = s[offset]
                names |= item if isinstance(item, frozenset) else {item}
        out.append(frozenset(names))
    return tuple(out)


def _result_extent(axis) -> str | int:
    """The declared result extent of a broadcast axis: M/N if any operand had it, else
    the runtime size-one partner P/Q, else 1."""
    names = axis if isinstance(axis, frozenset) else {axis}
    for name in ("M", "N", "P", "Q"):
        if name in names:
            return name
    return 1


def _indent(lines: list[str]) -> list[str]:
    return ["    " + line for line in lines]


# ---------------------------------------------------------------------------------------
# strategies
# ---------------------------------------------------------------------------------------
KINDS = ("parallel", "expr", "ordered")


@st.composite
def kernels(draw, name: str = "k0", kinds=KINDS) -> Kernel:
    gen = _Gen(draw, name)
    kind = gen.pick(kinds)
    return getattr(gen, f"{kind}_kernel")(name)


@st.composite
def modules(draw, count: int = 12, kinds=KINDS) -> Module:
    """``count`` independent kernels of the given kinds in one module."""
    return Module([draw(kernels(f"k{k}", kinds)) for k in range(count)])


# ---------------------------------------------------------------------------------------
# inputs
# ---------------------------------------------------------------------------------------
def values(rng: np.random.Generator, dt: str, shape) -> np.ndarray:
    """Random values of ``dt`` with edge values mixed in (MIN, MAX, 0, -1, NaN, inf, -0.0)."""
    size = int(np.prod(shape)) if shape else 1
    nd = NUMPY[dt]
    if dt == "bool":
        out = rng.integers(0, 2, size).astype(bool)
    elif dt in FLOATS:
        pool = np.array([0.0, -0.0, 1.0, -1.0, 0.5, 2.5, -3.0, 7.0, 1e3, -1e4, np.inf, -np.inf, np.nan, 1e-3,
                         60000.0, 0.25], np.float64)
        out = np.where(rng.random(size) < 0.5, rng.choice(pool, size), rng.normal(0, 50, size)).astype(nd)
    else:
        low, high = int_range(dt)
        edges = np.array([low, high, 0, 1, 2, 3, high // 2] + ([-1, -2, low + 1] if low < 0 else []), dtype=object)
        small = rng.integers(-20 if low < 0 else 0, 40, size)
        full = rng.integers(low, high, size, dtype=nd, endpoint=True)
        pick = rng.random(size)
        out = np.where(pick < 0.4, small, np.where(pick < 0.7, full, rng.choice(edges, size))).astype(nd)
    return out.reshape(shape) if shape else out.reshape(())


def layout(rng: np.random.Generator, array: np.ndarray) -> np.ndarray:
    """The same values in a random memory layout (contiguous, strided, column-major)."""
    choice = rng.integers(0, 4)
    if array.ndim == 0 or choice == 0:
        return array
    if choice == 1:
        big = np.zeros(array.shape[:-1] + (2 * array.shape[-1] + 1,), array.dtype)
        view = big[..., 1::2]
        view[...] = array
        return view
    if choice == 2:
        return np.asfortranarray(array)
    return np.ascontiguousarray(array[..., ::-1])[..., ::-1]


def arguments(kernel: Kernel, extents: dict, rng: np.random.Generator) -> list:
    args = []
    for p in kernel.params:
        if p.extents:
            shape = tuple(e if isinstance(e, int) else extents[e] for e in p.extents)
            args.append(layout(rng, values(rng, p.dtype, shape)))
        else:
            value = values(rng, p.dtype, ())[()]
            args.append(value.item() if p.dtype != "f16" else float(value))
    return args


def extent_values(draw) -> dict:
    m = draw(st.integers(0, 4))
    n = draw(st.integers(0, 6))
    return {"M": m, "N": n, "P": draw(st.sampled_from([1, m])), "Q": draw(st.sampled_from([1, n]))}
