"""The physical program's verifier: the invariants the emitters (``codegen/``) rely on.

``verify_program(program)`` returns None or raises ``PhysicalVerifyError`` naming the kernel
and the statement. It checks, per kernel:

- *names*: a variable name has one type in the whole kernel and a tensor name one symbol (the
  emitters keep one stack slot per variable name and one data pointer per tensor name);
  parameters are distinct scalars (``Var``) or tensors of storage ``param``;
- *definitions*: every variable is assigned on every path before it is read (a loop's index
  only inside the loop; what a loop body assigns is not known after the loop, which may run
  zero times; a ``while``'s condition body runs at least once); every buffer is allocated on
  every path before it is used; the index of a loop is assigned by nothing else in its body;
- *types*: each expression's type follows from its operands as ``physical_text`` describes
  (addresses and counts are ``index``, conditions ``bool``, vector lanes consistent, a Load or
  Store moves its tensor's element or a vector of them), assignments keep their variable's type,
  check arguments match the message's conversions (``%lld`` an integer, ``%g``/``%e``/``%f`` f64);
- *loops*: kinds ``serial``, ``point`` or ``parallel``; only a parallel loop has a grain; a
  parallel loop's body (an outlined task, with its own copies of the variables it reads)
  assigns no variable defined outside it, since the write would be lost;
- *memory*: stores and atomic writes go to writable tensors; atomics carry the operands of
  their operation; a streaming store writes a vector and is followed by a ``fence`` before the
  task (the enclosing parallel loop's body) or the kernel ends, so other threads see it (M6).
"""
from __future__ import annotations

import re

from intentc.base import math_catalog
from intentc.kir.types import BOOL, DTYPES, INDEX
from intentc.lower import program as P

LOOP_KINDS = ("serial", "point", "parallel")
BINARY_OPS = (frozenset("add sub mul div floordiv mod pow min max and or xor shl shr".split())
              | set(math_catalog.NEW_BINARY))
UNARY_OPS = frozenset("neg not abs exp log tanh sqrt".split()) | set(math_catalog.UNARY)
COMPARE_PREDS = frozenset("lt le gt ge eq ne".split())
ATOMIC_OPS = frozenset("add sub min max and or xor exchange cas load store".split())
ATOMIC_ORDERS = frozenset(("relaxed", "acquire", "release", "acq_rel"))
FIELD_KINDS = frozenset(("shape", "stride", "address", "present"))
F64 = DTYPES["f64"]
_CONVERSION = re.compile(r"%[-+ #0]*\d*(?:\.\d+)?(lld|[gef])")


class PhysicalVerifyError(ValueError):
    """The physical program breaks an invariant the code generators rely on."""


def verify_program(program: P.Program) -> None:
    names = [k.name for k in program.kernels]
    if len(set(names)) != len(names):
        raise PhysicalVerifyError(f"module {program.module}: two kernels share a name")
    for kernel in program.kernels:
        _Kernel(kernel).verify()


def _show(node) -> str:
    if isinstance(node, P.Expr):
        return P.format_expr(node)
    return P.format_stmts((node,))[0].strip()


class _Kernel:
    def __init__(self, kernel: P.Kernel):
        self.kernel = kernel
        self.var_types: dict[str, object] = {}
        self.tensors: dict[str, P.TensorSym] = {}
        self.where: P.Stmt | None = None  # the statement being checked

    def fail(self, why: str) -> None:
        at = f" in `{_show(self.where)}`" if self.where is not None else ""
        raise PhysicalVerifyError(f"kernel {self.kernel.name}: {why}{at}")

    # -- names -----------------------------------------------------------------------------------
    def var(self, var: P.Var) -> None:
        known = self.var_types.setdefault(var.name, var.dtype)
        if known != var.dtype:
            self.fail(f"the variable '{var.name}' has two types, {known} and {var.dtype}")

    def tensor(self, tensor: P.TensorSym) -> None:
        known = self.tensors.setdefault(tensor.name, tensor)
        if known != tensor:
            self.fail(f"the tensor name '{tensor.name}' stands for two different tensors")

    def verify(self) -> None:
        k = self.kernel
        defined: set[str] = set()
        tensors: set[str] = set()
        for p in k.params:
            if isinstance(p, P.TensorSym):
                if p.storage != "param":
                    self.fail(f"the parameter '{p.name}' is not of storage 'param'")
                self.tensor(p)
                tensors.add(p.name)
            elif isinstance(p, P.Var):
                self.var(p)
                defined.add(p.name)
            else:
                self.fail(f"a parameter is neither a Var nor a TensorSym: {p!r}")
        names = [p.name for p in k.params]
        if len(set(names)) != len(names):
            self.fail("two parameters share a name")
        unknown = [r for r in k.result_params if r not in self.tensors]
        if unknown:
            self.fail(f"the result '{unknown[0]}' is not a tensor parameter")
        self.block(k.body, defined, tensors, frozenset())
        self.where = None
        if self.streaming_pending(k.body, False):
            self.fail("a streaming store is not followed by a fence before the kernel ends")

    # -- statements -------------------------------------------------------------------------------
    def block(self, stmts, defined: set, tensors: set, task_outer: frozenset) -> None:
        """Check ``stmts`` in order; ``defined``/``tensors`` (updated) are the variables and
        buffers known on every path; ``task_outer``: variables defined outside the innermost
        enclosing parallel loop, which its body must not assign."""
        for s in stmts:
            self.stmt(s, defined, tensors, task_outer)

    def stmt(self, s: P.Stmt, defined: set, tensors: set, task_outer: frozenset) -> None:
        self.where = s
        if not isinstance(s, P.Stmt):
            self.fail(f"not a statement: {s!r}")
        if isinstance(s, P.Loop):
            self.loop(s, defined, tensors, task_outer)
            return
        if isinstance(s, P.While):  # the condition body runs at least once; the body perhaps never
            self.block(s.cond_body, defined, tensors, task_outer)
            self.where = s
            self.expr(s.cond, defined, tensors)
            self.condition(s.cond)
            self.block(s.body, set(defined), set(tensors), task_outer)
            return
        for e in P.stmt_exprs(s):
            self.expr(e, defined, tensors)
        if isinstance(s, P.Assign):
            self.var(s.var)
            if s.value.dtype != s.var.dtype:
                self.fail(f"a {s.value.dtype} value is assigned to '{s.var.name}' of type {s.var.dtype}")
            if s.var.name in task_outer:
                self.fail(f"the parallel loop's body assigns '{s.var.name}', defined outside it")
            defined.add(s.var.name)
        elif isinstance(s, P.Store):
            self.access(s.tensor, s.offset, tensors)
            if not s.tensor.writable:
                self.fail(f"a store to the read-only tensor '{s.tensor.name}'")
            self.element(s.value.dtype, s.tensor)
            if s.streaming and not isinstance(s.value.dtype, P.VectorType):
                self.fail("a streaming store of a scalar (streaming stores write whole vectors)")
        elif isinstance(s, P.Alloc):
            t = s.tensor
            self.tensor(t)
            if t.storage != "heap" or not t.writable or t.rank != len(s.extents):
                self.fail(f"the buffer '{t.name}' must be a writable heap tensor of rank {len(s.extents)}")
            for e in s.extents:
                self.index(e, "a buffer extent")
            tensors.add(t.name)
        elif isinstance(s, P.If):
            self.condition(s.cond)
            then_defined, then_tensors = set(defined), set(tensors)
            self.block(s.then, then_defined, then_tensors, task_outer)
            else_defined, else_tensors = set(defined), set(tensors)
            self.block(s.orelse, else_defined, else_tensors, task_outer)
            defined |= then_defined & else_defined
            tensors |= then_tensors & else_tensors
        elif isinstance(s, P.Check):
            self.condition(s.cond)
            self.check_message(s)
        elif isinstance(s, P.TileNest):
            self.tile_nest(s, defined, tensors, task_outer)
        elif not isinstance(s, P.Fence):
            self.fail(f"unknown statement {type(s).__name__}")

    def tile_nest(self, s: P.TileNest, defined: set, tensors: set, task_outer: frozenset) -> None:
        if s.kind not in P.TILE_KINDS:
            self.fail(f"unknown tile nest kind '{s.kind}'")
        for t in s.tensors:
            self.tensor(t)
            if t.name not in tensors:
                self.fail(f"the tensor '{t.name}' is used before it is allocated")
        if (s.combine is not None) != (s.kind == "lane_chains"):
            self.fail("a lane_chains nest, and only one, has a combine")
        if s.combine is not None:
            self.lane_combine(s.combine)
        for v in s.results:
            self.var(v)
            if v.name in task_outer:
                self.fail(f"the parallel loop's body assigns '{v.name}', defined outside it")
            defined.add(v.name)

    def lane_combine(self, c: P.LaneCombine) -> None:
        """A combine template: single operations on its own earlier variables, typed as the
        kernel's expressions are; its yields are its variables."""
        if len(c.hints) != len(c.body):
            self.fail("a combine template needs one hint per assignment")
        known = {a.name: a.dtype for a in c.args}
        for assign in c.body:
            e = assign.value
            if not isinstance(assign, P.Assign) or not isinstance(e, (P.Const, P.Binary, P.Unary, P.Compare,
                                                                        P.Select)):
                self.fail("a combine template assigns single operations")
            for x in P.expr_children(e):
                if not isinstance(x, P.Read) or known.get(x.var.name) != x.dtype:
                    self.fail(f"a combine template reads '{P.format_expr(x)}', not one of its earlier variables")
            problem = self.expr_type_error(e, set(known), set())
            if problem or e.dtype != assign.var.dtype or assign.var.name in known:
                self.fail(f"a combine template's '{assign.var.name}' is mistyped or assigned twice")
            known[assign.var.name] = assign.var.dtype
        if any(not isinstance(y, P.Read) or known.get(y.var.name) != y.dtype for y in c.yields):
            self.fail("a combine template yields values it does not define")

    def loop(self, s: P.Loop, defined: set, tensors: set, task_outer: frozenset) -> None:
        self.expr(s.count, defined, tensors)
        self.index(s.count, "a loop count")
        if s.kind not in LOOP_KINDS:
            self.fail(f"unknown loop kind '{s.kind}'")
        if s.grain is not None:
            if s.kind != "parallel":
                self.fail(f"a {s.kind} loop has a grain (only parallel loops run in tasks)")
            self.expr(s.grain, defined, tensors)
            self.index(s.grain, "a grain")
        self.var(s.var)
        if s.var.dtype != INDEX:
            self.fail(f"the loop index '{s.var.name}' is {s.var.dtype}, not index")
        if s.var.name in task_outer or s.var.name in defined:
            self.fail(f"the loop index '{s.var.name}' is defined outside the loop")
        reassigned = [x for x in P.walk_stmts(s.body) if s.var in P.stmt_defines(x)]
        if reassigned:
            self.where = reassigned[0]
            self.fail(f"the loop body assigns its index '{s.var.name}'")
        if s.kind == "parallel":
            task_outer = frozenset(defined)
        self.block(s.body, set(defined) | {s.var.name}, set(tensors), task_outer)

    # -- memory ----------------------------------------------------------------------------------
    def check_message(self, s: P.Check) -> None:
        if not s.code.startswith("INTENT_E_"):
            self.fail(f"'{s.code}' is not a status code")
        text = s.message.replace("%%", "")
        conversions = _CONVERSION.findall(text)
        if len(conversions) != text.count("%"):
            self.fail("the message has a conversion other than %lld (integers) or %g, %e, %f (f64)")
        if len(conversions) != len(s.args):
            self.fail(f"the message takes {len(conversions)} values but the check has {len(s.args)}")
        for conversion, a in zip(conversions, s.args):
            wanted = "an integer" if conversion == "lld" else "f64"
            scalar = not isinstance(a.dtype, P.VectorType)
            if not (scalar and (a.dtype.is_int if conversion == "lld" else a.dtype == F64)):
                self.fail(f"the message's %{conversion} takes {wanted}, not {a.dtype}")

    def streaming_pending(self, stmts, pending: bool) -> bool:
        """Whether a streaming store is still unfenced after ``stmts``; a parallel loop's body
        must fence its own before its task ends."""
        for s in stmts:
            self.where = s
            if isinstance(s, P.Store) and s.streaming:
                pending = True
            elif isinstance(s, P.Fence):
                pending = False
            elif isinstance(s, P.Loop) and s.kind == "parallel":
                if self.streaming_pending(s.body, False):
                    self.fail("a streaming store is not followed by a fence before its task ends")
            elif isinstance(s, P.If):
                pending = self.streaming_pending(s.then, pending) or self.streaming_pending(s.orelse, pending)
            elif isinstance(s, P.While):  # the condition body runs at least once, the body perhaps never
                pending = self.streaming_pending(s.cond_body, pending)
                pending = self.streaming_pending(s.body, pending) or pending
            elif isinstance(s, P.Loop):  # a serial or point loop, perhaps never entered
                pending = self.streaming_pending(s.body, pending) or pending
        return pending

    def access(self, tensor: P.TensorSym, offset: P.Expr, tensors: set) -> None:
        self.tensor(tensor)
        if tensor.name not in tensors:
            self.fail(f"the buffer '{tensor.name}' is used before it is allocated")
        self.index(offset, "an element offset")

    def element(self, dtype, tensor: P.TensorSym) -> None:
        elem = dtype.elem if isinstance(dtype, P.VectorType) else dtype
        if elem != tensor.dtype:
            self.fail(f"a {dtype} value moves to or from the {tensor.dtype} tensor '{tensor.name}'")

    # -- expressions -----------------------------------------------------------------------------
    def index(self, e: P.Expr, what: str) -> None:
        if e.dtype != INDEX:
            self.fail(f"{what} is {e.dtype}, not index: `{_show(e)}`")

    def condition(self, e: P.Expr) -> None:
        if e.dtype != BOOL:
            self.fail(f"a condition is {e.dtype}, not bool: `{_show(e)}`")

    def expr(self, e: P.Expr, defined: set, tensors: set) -> None:
        if not isinstance(e, P.Expr):
            self.fail(f"not an expression: {e!r}")
        for sub in P.expr_children(e):
            self.expr(sub, defined, tensors)
        why = self.expr_type_error(e, defined, tensors)
        if why:
            self.fail(f"{why}: `{_show(e)}`")

    def expr_type_error(self, e: P.Expr, defined: set, tensors: set) -> str | None:
        t = e.dtype
        vector = isinstance(t, P.VectorType)
        if isinstance(e, P.Const):
            return "a vector constant (use splat)" if vector else None
        if isinstance(e, P.Read):
            self.var(e.var)
            if e.var.name not in defined:
                return f"'{e.var.name}' is read where it is not assigned on every path"
            return None if t == e.var.dtype else f"a read of {e.var.dtype} typed {t}"
        if isinstance(e, P.Binary):
            if e.op not in BINARY_OPS:
                return f"unknown operation '{e.op}'"
            return None if t == e.a.dtype == e.b.dtype else "operands and result of different types"
        if isinstance(e, P.Unary):
            if e.op not in UNARY_OPS:
                return f"unknown operation '{e.op}'"
            return None if t == e.a.dtype else "operand and result of different types"
        if isinstance(e, P.Compare):
            if e.pred not in COMPARE_PREDS:
                return f"unknown comparison '{e.pred}'"
            return None if t == BOOL and e.a.dtype == e.b.dtype else "a comparison must compare equal types to bool"
        if isinstance(e, P.Select):
            cond = e.cond.dtype
            ok_cond = cond == BOOL or (isinstance(cond, P.VectorType) and cond.elem == BOOL and vector
                                       and cond.lanes == t.lanes)
            if not ok_cond or not t == e.a.dtype == e.b.dtype:
                return "a select needs a bool and two values of its type"
            return None
        if isinstance(e, P.Cast):
            a = e.a.dtype
            if isinstance(a, P.VectorType) != vector or (vector and a.lanes != t.lanes):
                return "a cast between a scalar and a vector or of different lanes"
            return None
        if isinstance(e, P.Splat):
            return None if vector and e.a.dtype == t.elem else "a splat makes a vector of its scalar's type"
        if isinstance(e, P.Pack):
            if not vector or t.lanes != len(e.elems) or any(x.dtype != t.elem for x in e.elems):
                return "a pack needs one scalar of the element type per lane"
            return None
        if isinstance(e, P.Lane):
            a = e.a.dtype
            if not isinstance(a, P.VectorType) or not 0 <= e.index < a.lanes or t != a.elem:
                return "a lane must be one of its vector's, of the element type"
            return None
        if isinstance(e, P.Shuffle):
            a = e.a.dtype
            if not isinstance(a, P.VectorType) or e.b.dtype != a:
                return "a shuffle takes two vectors of one type"
            if any(not 0 <= m < 2 * a.lanes for m in e.mask) or t != P.VectorType(a.elem, len(e.mask)):
                return "a shuffle's mask must pick lanes of its operands"
            return None
        if isinstance(e, P.MulAdd):
            return None if t == e.a.dtype == e.b.dtype == e.c.dtype else "a muladd of different types"
        if isinstance(e, P.Field):
            self.tensor(e.tensor)
            if e.tensor.name not in tensors:
                return f"the buffer '{e.tensor.name}' is used before it is allocated"
            if e.kind not in FIELD_KINDS or t != INDEX:
                return "a field is an index: shape, stride, address or present"
            limit = 1 if e.kind in ("address", "present") else e.tensor.rank
            return None if 0 <= e.axis < limit else f"axis {e.axis} of a rank-{e.tensor.rank} tensor"
        if isinstance(e, P.Load):
            self.access(e.tensor, e.offset, tensors)
            self.element(t, e.tensor)
            return None
        if isinstance(e, P.Atomic):
            return self.atomic_error(e, tensors)
        return f"unknown expression {type(e).__name__}"

    def atomic_error(self, e: P.Atomic, tensors: set) -> str | None:
        self.access(e.tensor, e.offset, tensors)
        if e.op not in ATOMIC_OPS or e.order not in ATOMIC_ORDERS:
            return f"unknown atomic '{e.op}.{e.order}'"
        if e.dtype != e.tensor.dtype:
            return "an atomic's value is its tensor's element"
        wanted = {"load": 0, "cas": 2}.get(e.op, 1)
        operands = [x for x in (e.a, e.b) if x is not None]
        if len(operands) != wanted or (wanted == 1 and e.a is None):
            return f"atomic {e.op} takes {wanted} operands"
        if any(x.dtype != e.dtype for x in operands):
            return "an atomic's operands are of its tensor's element type"
        if e.op != "load" and not e.tensor.writable:
            return f"an atomic write to the read-only tensor '{e.tensor.name}'"
        return None
