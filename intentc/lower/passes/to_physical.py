"""Translate a kernel's KIR into the physical loop program.

Before: KIR kernels with helpers inlined, no tensor-valued ops, accesses marked
``inbounds`` where proven.
After: a ``program.Kernel`` per KIR kernel in which
- every SSA value is a mutable variable assigned once per execution of its block;
  loop carries and ``if`` results are variables assigned by the ``yield``s (through
  temporaries, so a yield that swaps carries stays correct);
- domains are (begin, end, step) with a checked positive step (D1) and an ordinal count
  ``len = ceil((end - begin) / step)`` or 0 (D2); ordered loops iterate the ordinal in
  order (O2) and compute the point ``begin + t * step``;
- ``parallel`` becomes a ``parallel`` loop over the first domain whose body nests
  ``point`` loops over the others (a nested ``parallel`` runs as ``point`` loops inside
  its task);
- element accesses compute ``offset = sum(index_k * stride_k)`` and, on axes not proven
  in bounds, check ``0 <= index_k < extent_k`` first (D5: never clamped);
- ``assert_eq`` and ``bcast_extent`` become checks with messages naming the values (S1, S3).

With a remark sink it records where each loop comes from (``remarks.LoopOrigin``: the source
construct's span and the user's names of its points), for the physical passes' remarks.
"""
from __future__ import annotations

from intentc.base import math_catalog
from intentc.kir.core import Block, Function, Module, Op, Value
from intentc.kir.types import BOOL, DTYPES, INDEX, TensorType
from intentc.lower import program as P
from intentc.lower.names import NameSupply
from intentc.lower.remarks import loop_origin

ATOMIC_OPS = ("atomic_rmw", "atomic_cas", "atomic_load", "atomic_store")

FOLD_CHAINS = 8  # independent chains of an ordered fold (instruction-level parallelism)
CHAIN_SKEW = 17  # elements by which chunks are shortened so their starts do not alias in the cache
_CODES = {"S1": "INTENT_E_SHAPE", "S3": "INTENT_E_SHAPE"}
_PURE_EXPR = {"add", "sub", "mul", "div", "floordiv", "mod", "pow", "min", "max", "and", "or", "xor", "shl", "shr",
              *math_catalog.NEW_BINARY}


def run(module: Module, remarks=None) -> P.Program:
    return P.Program(module.name, tuple(_KernelLowering(func, remarks).run() for func in module.kernels))


class _KernelLowering:
    def __init__(self, func: Function, remarks=None):
        self.func = func
        self.remarks = remarks
        self.vars: dict[int, P.Var] = {}
        self.tensors: dict[int, P.TensorSym] = {}
        self.domains: dict[int, tuple[P.Expr, P.Expr, P.Expr, P.Expr]] = {}
        self.names = NameSupply()
        self.parallel_depth = 0
        self.fast = False  # inside a combine that grants regrouping

    def fresh(self, hint: str, dtype) -> P.Var:
        return self.names.fresh(hint, dtype)

    def var(self, value: Value) -> P.Var:
        if id(value) not in self.vars:
            var = self.vars[id(value)] = self.fresh(value.hint, value.type)
            if self.remarks is not None and var.name == value.hint:  # remarks may show it if the user wrote it
                self.remarks.note_name(self.func, var.name)
        return self.vars[id(value)]

    def read(self, value: Value) -> P.Expr:
        return P.read(self.var(value))

    def note_loop(self, ordinal: P.Var, op: Op, point: Value | None = None) -> None:
        """Record the source of the loop over ``ordinal`` that ``op`` makes (remarks only)."""
        if self.remarks is not None:
            self.remarks.origins[(self.func.name, ordinal.name)] = loop_origin(op, point)

    def where(self, op: Op) -> str:
        if op.span is None:
            return ""
        return f" (at {op.span.location()})".replace("%", "%%")

    def run(self) -> P.Kernel:
        params = []
        for param, arg in zip(self.func.params, self.func.args):
            if isinstance(arg.type, TensorType):
                sym = P.TensorSym(param.name, arg.type.dtype, arg.type.rank, param.mutable or param.result)
                self.tensors[id(arg)] = sym
                self.names.add(param.name)
                params.append(sym)
            else:
                var = P.Var(param.name, arg.type)
                self.names.add(param.name)
                self.vars[id(arg)] = var
                params.append(var)
        body = self.block(self.func.body)
        results = tuple(p.name for p in self.func.params if p.result)
        return P.Kernel(self.func.name, tuple(params), tuple(body), self.func.name, results)

    # -- blocks -----------------------------------------------------------------------------
    def block(self, block: Block) -> list[P.Stmt]:
        out: list[P.Stmt] = []
        for op in block.ops:
            out += self.op(op)
        return out

    def assign(self, value: Value, expr: P.Expr) -> list[P.Stmt]:
        return [P.Assign(self.var(value), expr)]

    def op(self, op: Op) -> list[P.Stmt]:
        name = op.name
        if name == "const":
            return self.assign(op.result, P.Const(op.result.type, op.attrs["value"]))
        if name in _PURE_EXPR:
            a, b = (self.read(v) for v in op.operands)
            return self.assign(op.result, P.Binary(op.result.type, name, a, b, self.fast))
        if name in ("neg", "not", "abs", "exp", "log", "tanh", "sqrt", *math_catalog.UNARY):
            return self.assign(op.result, P.Unary(op.result.type, name, self.read(op.operands[0])))
        if name == "fma":
            a, b, c = (self.read(v) for v in op.operands)
            return self.assign(op.result, P.MulAdd(op.result.type, a, b, c, fused=True))
        if name == "cmp":
            a, b = (self.read(v) for v in op.operands)
            return self.assign(op.result, P.Compare(BOOL, op.attrs["pred"], a, b))
        if name == "select":
            c, a, b = (self.read(v) for v in op.operands)
            return self.assign(op.result, P.Select(op.result.type, c, a, b))
        if name == "cast":
            return self.assign(op.result, P.Cast(op.result.type, self.read(op.operands[0]),
                                                 bool(op.attrs.get("in_range"))))
        if name == "present":  # an optional tensor was given: its descriptor was not NULL
            sym = self.tensors[id(op.operands[0])]
            return self.assign(op.result, P.Compare(BOOL, "ne", P.Field(INDEX, sym, "present", 0), P.Const(INDEX, 0)))
        if name == "dim":
            return self.assign(op.result, P.Field(INDEX, self.tensors[id(op.operands[0])], "shape", op.attrs["axis"]))
        if name == "domain":
            return self.domain(op)
        if name == "subregion":
            return self.subregion(op)
        if name in ("dom_begin", "dom_end", "dom_step", "dom_len"):
            parts = self.domains[id(op.operands[0])]
            return self.assign(op.result, parts[("dom_begin", "dom_end", "dom_step", "dom_len").index(name)])
        if name == "assert_eq":
            a, b = (self.read(v) for v in op.operands)
            return [P.Check(P.Compare(BOOL, "eq", a, b), _CODES.get(op.attrs.get("rule"), "INTENT_E_SHAPE"),
                            f"{self.func.name}: {op.attrs['what']}{self.where(op)}", (a, b))]
        if name == "assert_true":
            code = {"bounds": "INTENT_E_BOUNDS", "domain": "INTENT_E_DOMAIN", "sanitizer": "INTENT_E_SANITIZER"}.get(
                op.attrs.get("code"), "INTENT_E_SHAPE")
            return [P.Check(self.read(op.operands[0]), code, f"{self.func.name}: {op.attrs['what']}{self.where(op)}",
                            tuple(self.read(v) for v in op.operands[1:]))]
        if name == "bcast_extent":
            return self.bcast_extent(op)
        if name == "load":
            checks, offset = self.address(op, op.operands[0], op.operands[1:])
            sym = self.tensors[id(op.operands[0])]
            return checks + self.assign(op.result, P.Load(sym.dtype, sym, offset))
        if name == "store":
            checks, offset = self.address(op, op.operands[0], op.operands[1:-1])
            sym = self.tensors[id(op.operands[0])]
            return checks + [P.Store(sym, offset, self.read(op.operands[-1]))]
        if name == "if":
            return self.if_op(op)
        if name == "for":
            return self.for_op(op)
        if name == "while":
            return self.while_op(op)
        if name == "parallel":
            return self.parallel_op(op)
        if name == "fold":
            return self.fold_op(op)
        if name in P.TILE_KINDS:  # T3-T5, R9: expanded by the expand_* physical passes
            return [self.tile_nest(op)]
        if name == "buffer":
            sym = P.TensorSym(self.fresh(op.result.hint or "buf", INDEX).name, op.result.type.dtype,
                              op.result.type.rank, True, "heap")
            self.tensors[id(op.result)] = sym
            return [P.Alloc(sym, tuple(self.read(v) for v in op.operands))]
        if name in ("return", "yield", "condition"):
            return []
        if name in ATOMIC_OPS:  # M6: program.Atomic on the checked element address
            return lower_atomic(self, op)
        raise NotImplementedError(f"no physical lowering for KIR op '{name}'")

    def tile_nest(self, op: Op) -> P.TileNest:
        """The op as a ``TileNest``: its tensors, then its scalars as expressions, its results as
        variables, its attributes, and a ``lane_chains`` op's combine as a template."""
        kinds = [isinstance(v.type, TensorType) for v in op.operands]
        assert kinds == sorted(kinds, reverse=True), f"{op.name}: tensor operands come first"
        tensors = tuple(self.tensors[id(v)] for v in op.operands if isinstance(v.type, TensorType))
        scalars = tuple(self.read(v) for v in op.operands if not isinstance(v.type, TensorType))
        results = tuple(self.var(r) for r in op.results)
        attrs = tuple((key, _frozen(value)) for key, value in op.attrs.items())
        combine = _lane_combine(op.regions[0]) if op.name == "lane_chains" else None
        if self.remarks is not None:  # the loops its expansion makes come from this op (in program order)
            self.remarks.tile_origins.setdefault(self.func.name, []).append(loop_origin(op))
        return P.TileNest(op.name, tensors, scalars, results, attrs, combine)

    # -- relations ---------------------------------------------------------------------------
    def domain(self, op: Op) -> list[P.Stmt]:
        begin, end, step = (self.read(v) for v in op.operands)
        out: list[P.Stmt] = []
        step_const = self._const_value(op.operands[2])
        if step_const is None or step_const <= 0:
            out.append(P.Check(P.Compare(BOOL, "gt", step, P.Const(INDEX, 0)), "INTENT_E_DOMAIN",
                               f"{self.func.name}: a domain step must be positive, got %lld{self.where(op)}",
                               (step,)))
        length = self.fresh("len", INDEX)
        begin_const = self._const_value(op.operands[0])
        if begin_const == 0:  # [0, end): end - 0 cannot wrap
            diff = P.Binary(INDEX, "sub", end, begin)
            if step_const == 1:
                count = P.Binary(INDEX, "max", diff, P.Const(INDEX, 0))
            else:
                # ceil(diff / step) for diff > 0 without overflow: (diff - 1) / step + 1.
                ceil = P.Binary(INDEX, "add", P.Binary(INDEX, "floordiv", P.Binary(INDEX, "sub", diff, P.Const(INDEX, 1)),
                                                        step), P.Const(INDEX, 1))
                count = P.Select(INDEX, P.Compare(BOOL, "gt", diff, P.Const(INDEX, 0)), ceil, P.Const(INDEX, 0))
            out.append(P.Assign(length, count))
        else:
            # Any 64-bit bounds: end - begin is up to 2^64 - 1, exact in unsigned arithmetic (D3).
            count = P.Select(INDEX, P.Compare(BOOL, "gt", end, begin),
                             _ordinal_ceil(P.Binary(INDEX, "sub", end, begin), step), P.Const(INDEX, 0))
            out.append(P.Assign(length, count))
            if step_const is None or step_const < 3:  # only steps 1 and 2 can count past 2^63 - 1
                out.append(P.Check(P.Compare(BOOL, "ge", P.read(length), P.Const(INDEX, 0)), "INTENT_E_DOMAIN",
                                   f"{self.func.name}: the domain [%lld, %lld) by %lld has more than 2^63 - 1 "
                                   f"members (D1){self.where(op)}", (begin, end, step)))
        self.domains[id(op.result)] = (begin, end, step, P.read(length))
        return out

    def subregion(self, op: Op) -> list[P.Stmt]:
        """Members of the source in [a, b), after checking source.begin <= a <= b <= source.end (D4, D5)."""
        src_begin, src_end, step, _ = self.domains[id(op.operands[0])]
        a, b = self.read(op.operands[1]), self.read(op.operands[2])
        ok = P.Binary(BOOL, "and", P.Binary(BOOL, "and", P.Compare(BOOL, "le", src_begin, a), P.Compare(BOOL, "le", a, b)),
                      P.Compare(BOOL, "le", b, src_end))
        message = (f"{self.func.name}: subregion [%lld, %lld) is not within its source domain [%lld, %lld); "
                   f"bounds are never clamped (D5){self.where(op)}")
        out: list[P.Stmt] = [P.Check(ok, "INTENT_E_BOUNDS", message, (a, b, src_begin, src_end))]
        begin = self.fresh("sub_begin", INDEX)
        # Ordinals of the first source members at or after a and b: ceil((x - src_begin) / step),
        # exact for any 64-bit bounds (the differences lie in [0, 2^64), unsigned arithmetic, D3).
        first = self.fresh("sub_first", INDEX)
        out.append(P.Assign(first, _ordinal_ceil(P.Binary(INDEX, "sub", a, src_begin), step)))
        out.append(P.Assign(begin, P.Binary(INDEX, "add", src_begin, P.Binary(INDEX, "mul", P.read(first), step))))
        length = self.fresh("sub_len", INDEX)
        last = _ordinal_ceil(P.Binary(INDEX, "sub", b, src_begin), step)
        out.append(P.Assign(length, P.Binary(INDEX, "sub", last, P.read(first))))
        self.domains[id(op.result)] = (P.read(begin), b, step, P.read(length))
        return out

    def _const_value(self, value: Value):
        for op in self.func.walk():
            if op.name == "const" and op.results and op.results[0] is value:
                return op.attrs["value"]
        return None

    def bcast_extent(self, op: Op) -> list[P.Stmt]:
        a, b = (self.read(v) for v in op.operands)
        one = P.Const(INDEX, 1)
        ok = P.Binary(BOOL, "or", P.Compare(BOOL, "eq", a, b),
                      P.Binary(BOOL, "or", P.Compare(BOOL, "eq", a, one), P.Compare(BOOL, "eq", b, one)))
        message = (f"{self.func.name}: incompatible broadcast ({op.attrs.get('what', 'extents')}): "
                   f"%lld and %lld are neither equal nor 1{self.where(op)}")
        return [P.Check(ok, "INTENT_E_SHAPE", message, (a, b)),
                P.Assign(self.var(op.result), P.Select(INDEX, P.Compare(BOOL, "eq", a, one), b, a))]

    def address(self, op: Op, tensor: Value, indices) -> tuple[list[P.Stmt], P.Expr]:
        sym = self.tensors[id(tensor)]
        proven = op.attrs.get("inbounds", [False] * sym.rank)
        checks: list[P.Stmt] = []
        offset: P.Expr | None = None
        for axis, index in enumerate(indices):
            i = self.read(index)
            extent = P.Field(INDEX, sym, "shape", axis)
            if not proven[axis]:
                ok = P.Binary(BOOL, "and", P.Compare(BOOL, "ge", i, P.Const(INDEX, 0)), P.Compare(BOOL, "lt", i, extent))
                checks.append(P.Check(ok, "INTENT_E_BOUNDS",
                                      f"{self.func.name}: index %lld is out of range [0, %lld) on axis {axis} of "
                                      f"'{sym.name}'{self.where(op)}", (i, extent)))
            term = P.Binary(INDEX, "mul", i, P.Field(INDEX, sym, "stride", axis))
            offset = term if offset is None else P.Binary(INDEX, "add", offset, term)
        return checks, offset if offset is not None else P.Const(INDEX, 0)

    # -- control -----------------------------------------------------------------------------------
    def yields(self, block: Block, targets: list[P.Var], name: str = "yield") -> list[P.Stmt]:
        term = block.ops[-1]
        assert term.name == name
        values = [self.read(v) for v in term.operands]
        if len(targets) <= 1:
            return [P.Assign(t, v) for t, v in zip(targets, values)]
        temps = [self.fresh(t.name + "_next", t.dtype) for t in targets]
        return [P.Assign(t, v) for t, v in zip(temps, values)] + \
               [P.Assign(t, P.read(tmp)) for t, tmp in zip(targets, temps)]

    def if_op(self, op: Op) -> list[P.Stmt]:
        targets = [self.var(r) for r in op.results]
        then = self.block(op.regions[0]) + self.yields(op.regions[0], targets)
        orelse = self.block(op.regions[1]) + self.yields(op.regions[1], targets)
        return [P.If(self.read(op.operands[0]), tuple(then), tuple(orelse))]

    def bind_carries(self, op: Op, args: list[Value]) -> tuple[list[P.Var], list[P.Stmt]]:
        carries = [self.var(r) for r in op.results]
        for arg, var in zip(args, carries):
            self.vars[id(arg)] = var
        return carries, []

    def for_op(self, op: Op) -> list[P.Stmt]:
        domain, inits = op.operands[0], op.operands[1:]
        body = op.regions[0]
        carries = [self.var(r) for r in op.results]
        out = [P.Assign(c, self.read(v)) for c, v in zip(carries, inits)]
        for arg, var in zip(body.args[1:], carries):
            self.vars[id(arg)] = var
        ordinal = self.fresh("t", INDEX)
        self.note_loop(ordinal, op, body.args[0])
        point = self.point(body.args[0], domain, ordinal)
        stmts = [point] + self.block(body) + self.yields(body, carries)
        begin, end, step, length = self.domains[id(domain)]
        out.append(P.Loop(ordinal, length, tuple(stmts), "serial"))
        return out

    def point(self, arg: Value, domain: Value, ordinal: P.Var) -> P.Stmt:
        begin, _end, step, _length = self.domains[id(domain)]
        return P.Assign(self.var(arg), P.Binary(INDEX, "add", begin, P.Binary(INDEX, "mul", P.read(ordinal), step)))

    def while_op(self, op: Op) -> list[P.Stmt]:
        cond_block, body = op.regions
        carries = [self.var(r) for r in op.results]
        out = [P.Assign(c, self.read(v)) for c, v in zip(carries, op.operands)]
        for arg, var in zip(cond_block.args, carries):
            self.vars[id(arg)] = var
        for arg, var in zip(body.args, carries):
            self.vars[id(arg)] = var
        cond_stmts = self.block(cond_block)
        cond = self.read(cond_block.ops[-1].operands[0])
        stmts = self.block(body) + self.yields(body, carries)
        out.append(P.While(tuple(cond_stmts), cond, tuple(stmts)))
        return out

    def fold_op(self, op: Op) -> list[P.Stmt]:
        """acc = identity; for t in [0, n): acc = combine(acc, element(t)).

        With ``reassoc`` (a builtin associative, commutative combine, T1) one chain whose
        arithmetic is marked ``fast`` so LLVM vectorises it. Otherwise (a helper's combine,
        or an ordered reduction) FOLD_CHAINS contiguous chunks are folded in one interleaved
        loop — independent dependency chains — and their results combined in chunk order:
        regrouped, never permuted, every operation exact."""
        element, combine = op.regions
        k = len(op.results)
        accs = [self.var(r) for r in op.results]
        count = self.read(op.operands[0])
        identity = [self.read(v) for v in op.operands[1:]]

        def step(chain: list[P.Var], index: P.Expr) -> list[P.Stmt]:
            ordinal = self.fresh("t_at", INDEX)
            self.vars[id(element.args[0])] = ordinal
            stmts = [P.Assign(ordinal, index)] + self.block(element)
            for arg, acc in zip(combine.args[:k], chain):
                self.vars[id(arg)] = acc
            for arg, item in zip(combine.args[k:], element.ops[-1].operands):
                self.vars[id(arg)] = self.var(item)
            return stmts + self.block(combine) + self.yields(combine, chain)

        saved, self.fast = self.fast, bool(op.attrs.get("reassoc"))
        try:
            if op.attrs.get("reassoc"):
                t = self.fresh("t", INDEX)
                self.note_loop(t, op)
                out = [P.Assign(a, v) for a, v in zip(accs, identity)]
                out.append(P.Loop(t, count, tuple(step(accs, P.read(t))), "serial"))
                return out
            chains = [[self.fresh(f"{a.name}_c{j}", a.dtype) for a in accs] for j in range(FOLD_CHAINS)]
            out = [P.Assign(a, v) for chain in chains for a, v in zip(chain, identity)]
            chunk = self.fresh("chunk", INDEX)
            # Chunks a little shorter than count / FOLD_CHAINS, so that the chains' addresses are not a
            # multiple of 4 KiB apart (cache-set conflicts); the last chain finishes the remainder.
            chunk_size = P.Binary(INDEX, "sub", P.Binary(INDEX, "floordiv", count, P.Const(INDEX, FOLD_CHAINS)),
                                  P.Const(INDEX, CHAIN_SKEW))
            out.append(P.Assign(chunk, P.Binary(INDEX, "max", chunk_size, P.Const(INDEX, 0))))
            t = self.fresh("t", INDEX)
            self.note_loop(t, op)
            body = []
            for j, chain in enumerate(chains):
                at = P.Binary(INDEX, "add", P.Binary(INDEX, "mul", P.Const(INDEX, j), P.read(chunk)), P.read(t))
                body += step(chain, at)
            out.append(P.Loop(t, P.read(chunk), tuple(body), "serial"))
            tail = self.fresh("t", INDEX)
            self.note_loop(tail, op)
            start = P.Binary(INDEX, "mul", P.read(chunk), P.Const(INDEX, FOLD_CHAINS))
            out.append(P.Loop(tail, P.Binary(INDEX, "sub", count, start),
                              tuple(step(chains[-1], P.Binary(INDEX, "add", start, P.read(tail)))), "serial"))
            out += [P.Assign(a, P.read(c)) for a, c in zip(accs, chains[0])]
            for chain in chains[1:]:
                for arg, acc in zip(combine.args[:k], accs):
                    self.vars[id(arg)] = acc
                for arg, value in zip(combine.args[k:], chain):
                    self.vars[id(arg)] = value
                out += self.block(combine) + self.yields(combine, accs)
            return out
        finally:
            self.fast = saved

    def parallel_op(self, op: Op) -> list[P.Stmt]:
        body = op.regions[0]
        self.parallel_depth += 1
        try:
            inner = self.block(body)
        finally:
            self.parallel_depth -= 1
        ordinals = [self.fresh(f"t_{arg.hint or 'p'}", INDEX) for arg in body.args]
        for ordinal, arg in zip(ordinals, body.args):
            self.note_loop(ordinal, op, arg)
        stmts = tuple(inner)
        for depth in reversed(range(len(op.operands))):
            domain = op.operands[depth]
            point = self.point(body.args[depth], domain, ordinals[depth])
            kind = "parallel" if depth == 0 and self.parallel_depth == 0 else "point"
            grain = P.Const(INDEX, op.attrs["grain"]) if kind == "parallel" and "grain" in op.attrs else None
            stmts = (P.Loop(ordinals[depth], self.domains[id(domain)][3], (point,) + stmts, kind, grain),)
        return list(stmts)


def _frozen(value):
    """An attribute value with its lists as tuples (physical nodes are immutable)."""
    return tuple(_frozen(v) for v in value) if isinstance(value, (list, tuple)) else value


def _lane_combine(combine: Block) -> P.LaneCombine:
    """A combine region (pure scalar ops, then ``yield``) as a ``LaneCombine`` template: the
    region's arguments ``arg0, ...``, one assignment ``c0, ...`` per op, the ops' hints."""
    env: dict[int, P.Read] = {}
    args = []
    for k, arg in enumerate(combine.args):
        var = P.Var(f"arg{k}", arg.type)
        args.append(var)
        env[id(arg)] = P.read(var)
    body, hints = [], []
    for op in combine.ops:
        if op.name == "yield":
            return P.LaneCombine(tuple(args), tuple(body), tuple(hints), tuple(env[id(v)] for v in op.operands))
        a = [env[id(v)] for v in op.operands]
        t = op.result.type
        if op.name == "const":
            expr = P.Const(t, op.attrs["value"])
        elif op.name == "cmp":
            expr = P.Compare(BOOL, op.attrs["pred"], a[0], a[1])
        elif op.name == "select":
            expr = P.Select(t, a[0], a[1], a[2])
        elif len(a) == 2:
            expr = P.Binary(t, op.name, a[0], a[1])
        else:
            expr = P.Unary(t, op.name, a[0])
        var = P.Var(f"c{len(body)}", t)
        body.append(P.Assign(var, expr))
        hints.append(op.result.hint or "lane")
        env[id(op.result)] = P.read(var)
    raise ValueError("a combine without yield")


def lower_atomic(lowering, op: Op) -> list:
    """An atomic op (M6, A1, A2): a ``program.Atomic`` expression on the element's address,
    after the element's bounds checks."""
    tensor = op.operands[0]
    rank = tensor.type.rank
    checks, offset = lowering.address(op, tensor, op.operands[1:1 + rank])
    sym = lowering.tensors[id(tensor)]
    values = [lowering.read(v) for v in op.operands[1 + rank:]]
    kind = {"atomic_rmw": op.attrs.get("op"), "atomic_cas": "cas", "atomic_load": "load",
            "atomic_store": "store"}[op.name]
    expr = P.Atomic(sym.dtype, sym, offset, kind, op.attrs["order"], *values)
    if op.results:
        return checks + lowering.assign(op.result, expr)
    return checks + [P.Assign(lowering.fresh("stored", sym.dtype), expr)]


_U64 = DTYPES["u64"]


def _ordinal_ceil(diff: P.Expr, step: P.Expr) -> P.Expr:
    """ceil(diff / step) with ``diff`` read as an unsigned 64-bit count (0 for 0): the number of
    members a domain of that span and step has, exact for every span up to 2^64 - 1."""
    span, stride = P.Cast(_U64, diff), P.Cast(_U64, step)
    ceil = P.Binary(_U64, "add", P.Binary(_U64, "floordiv", P.Binary(_U64, "sub", span, P.Const(_U64, 1)), stride),
                    P.Const(_U64, 1))
    return P.Cast(INDEX, P.Select(_U64, P.Compare(BOOL, "eq", span, P.Const(_U64, 0)), P.Const(_U64, 0), ceil))
