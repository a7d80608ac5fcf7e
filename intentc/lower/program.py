"""The physical program: a small imperative loop IR that codegen turns into LLVM IR.

It is what KIR becomes for one target: mutable scalar variables instead of SSA, loops
over ordinal counts with an explicit kind (``serial``, ``parallel`` = thread tasks over
blocks of ``grain`` iterations), element addresses as explicit offsets from a tensor's
data pointer using its extents and strides, and explicit run-time checks that return an
error code. All nodes are frozen dataclasses; passes build new trees. Each node's children
are the fields annotated as expressions or statement lists (``child_fields``), which every
traversal uses. The text form is ``format_program`` / ``physical_text.parse_program``; the
invariants the code generators rely on are ``physical_verifier``'s.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

from intentc.kir.types import DType


# ---- symbols -------------------------------------------------------------------------
@dataclass(frozen=True)
class Var:
    name: str
    dtype: DType


@dataclass(frozen=True)
class TensorSym:
    """A tensor parameter after the ABI checks: a data pointer, extents and strides."""

    name: str
    dtype: DType
    rank: int
    writable: bool
    storage: str = "param"  # "param": an argument; "heap": a kernel-local buffer (Alloc)


# ---- expressions ------------------------------------------------------------------------
@dataclass(frozen=True)
class Expr:
    dtype: DType


@dataclass(frozen=True)
class Const(Expr):
    value: object


@dataclass(frozen=True)
class Read(Expr):
    var: Var


def read(var: Var) -> Read:
    return Read(var.dtype, var)


@dataclass(frozen=True)
class Binary(Expr):
    op: str  # the KIR names: add sub mul div floordiv mod pow min max and or xor shl shr
    a: Expr
    b: Expr
    fast: bool = False  # the operation grants regrouping (a reduction's combine, T1)


@dataclass(frozen=True)
class Unary(Expr):
    op: str  # neg not abs exp log tanh sqrt
    a: Expr


@dataclass(frozen=True)
class Compare(Expr):
    pred: str
    a: Expr
    b: Expr


@dataclass(frozen=True)
class Select(Expr):
    cond: Expr
    a: Expr
    b: Expr


@dataclass(frozen=True)
class Cast(Expr):
    a: Expr
    in_range: bool = False  # float -> int of a value known finite and in range: no saturation needed


@dataclass(frozen=True)
class VectorType:
    """``lanes`` elements of ``elem`` in one register. A ``Load`` of this dtype reads
    ``lanes`` consecutive elements from its offset; a ``Store`` of such a value writes them
    (the micro-kernels of ``contract_lowering``)."""

    elem: DType
    lanes: int

    name = property(lambda self: f"{self.elem.name}x{self.lanes}")
    kind = property(lambda self: self.elem.kind)
    bits = property(lambda self: self.elem.bits)
    itemsize = property(lambda self: self.elem.itemsize)
    is_int = property(lambda self: self.elem.is_int)
    is_signed = property(lambda self: self.elem.is_signed)
    is_float = property(lambda self: self.elem.is_float)
    is_bool = property(lambda self: self.elem.is_bool)

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Splat(Expr):
    """The scalar ``a`` in every lane of a vector (``dtype`` is a ``VectorType``)."""

    a: Expr


@dataclass(frozen=True)
class Pack(Expr):
    """A vector whose lane ``j`` is the scalar ``elems[j]``."""

    elems: tuple[Expr, ...]


@dataclass(frozen=True)
class Lane(Expr):
    """Lane ``index`` (a constant) of the vector ``a``, as a scalar."""

    a: Expr
    index: int


@dataclass(frozen=True)
class Shuffle(Expr):
    """Lane ``j`` of the result is lane ``mask[j]`` of the concatenation of vectors ``a`` and
    ``b`` (LLVM's shufflevector: indices from ``lanes`` on pick from ``b``)."""

    a: Expr
    b: Expr
    mask: tuple[int, ...]


@dataclass(frozen=True)
class MulAdd(Expr):
    """``a * b + c`` on scalars or vectors. Floats may fuse the two into one rounding (a
    contraction grants it, T3/T7); integers wrap. ``fused``: always one rounding (``I.fma``)."""

    a: Expr
    b: Expr
    c: Expr
    fused: bool = False


@dataclass(frozen=True)
class Field(Expr):
    """A tensor's extent (``shape``) or element stride (``stride``) on one axis (index), the
    address of its first element in bytes (``address``, axis 0), or 1 when an optional tensor
    parameter was given and 0 when its descriptor was NULL (``present``, axis 0)."""

    tensor: TensorSym
    kind: str
    axis: int


@dataclass(frozen=True)
class Load(Expr):
    tensor: TensorSym
    offset: Expr  # in elements from the data pointer


@dataclass(frozen=True)
class Atomic(Expr):
    """An atomic access of one element (M6): ``op`` is an RMW operation (add sub min max and or
    xor exchange: ``a`` is the operand), ``cas`` (``a`` expected, ``b`` desired), ``load`` or
    ``store`` (``a`` the value); ``order`` relaxed/acquire/release/acq_rel. The value is the
    element's old value (for ``store``: the stored one). It is evaluated exactly once, where
    its ``Assign`` stands."""

    tensor: TensorSym
    offset: Expr
    op: str
    order: str
    a: Expr | None = None
    b: Expr | None = None


# ---- statements -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Stmt:
    pass


@dataclass(frozen=True)
class Assign(Stmt):
    var: Var
    value: Expr


@dataclass(frozen=True)
class Store(Stmt):
    """Write ``value`` at ``offset``. ``streaming``: a vector at an address aligned to its
    size, written past the caches (non-temporal) since nothing reads it soon; a ``Fence``
    must follow before another thread may read it."""

    tensor: TensorSym
    offset: Expr
    value: Expr
    streaming: bool = False


@dataclass(frozen=True)
class Fence(Stmt):
    """Every store before it (streaming ones included) is visible before any access after it."""


@dataclass(frozen=True)
class Alloc(Stmt):
    """Allocate a row-major buffer with these extents for ``tensor`` (freed when the call ends)."""

    tensor: TensorSym
    extents: tuple[Expr, ...]


@dataclass(frozen=True)
class If(Stmt):
    cond: Expr
    then: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...] = ()


@dataclass(frozen=True)
class Loop(Stmt):
    """``for var in [0, count)`` in order; ``parallel`` loops run blocks of ``grain``
    consecutive iterations as thread tasks (the grain depends only on the problem)."""

    var: Var
    count: Expr
    body: tuple[Stmt, ...]
    kind: str = "serial"
    grain: Expr | None = None


@dataclass(frozen=True)
class While(Stmt):
    """Run ``cond_body``, then test ``cond``; while true, run ``body`` and repeat."""

    cond_body: tuple[Stmt, ...]
    cond: Expr
    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class Check(Stmt):
    """Fail the call with status ``code`` unless ``cond`` holds; ``message`` is a printf
    format whose ``%lld`` conversions take ``args`` (index values)."""

    cond: Expr
    code: str
    message: str
    args: tuple[Expr, ...] = ()


@dataclass(frozen=True)
class LaneCombine:
    """A region scan's combine as a template (``TileNest.combine`` of a ``lane_chains`` nest):
    ``body`` computes ``yields`` from ``args``, one single-operation assignment per KIR op
    (``Const``, ``Binary``, ``Unary``, ``Compare`` or ``Select`` of reads of earlier template
    variables). Its variables are the template's own, not the kernel's: an expansion makes a
    fresh kernel variable, named after ``hints[k]``, for each instance of ``body[k]``."""

    args: tuple[Var, ...]
    body: tuple["Assign", ...]
    hints: tuple[str, ...]
    yields: tuple["Read", ...]


TILE_KINDS = ("contract_tiles", "scaled_tiles", "sparse24_tiles", "csr_tiles", "lane_chains")


@dataclass(frozen=True)
class TileNest(Stmt):
    """A register-tiled loop nest that is not expanded yet: ``to_physical`` leaves one per KIR
    tile op (``kind``, one of TILE_KINDS) and the ``expand_*`` physical passes replace it by its
    loops, so none reaches code generation. ``tensors`` and ``scalars`` are the op's operands (its
    tensors first), ``results`` the variables it assigns, ``attrs`` the op's attributes (lists
    as tuples) and ``combine`` a ``lane_chains`` nest's combine."""

    kind: str
    tensors: tuple[TensorSym, ...]
    scalars: tuple[Expr, ...]
    results: tuple[Var, ...] = ()
    attrs: tuple[tuple[str, object], ...] = ()
    combine: LaneCombine | None = None

    def attr(self, key: str):
        return dict(self.attrs)[key]


@dataclass(frozen=True)
class Kernel:
    name: str
    params: tuple  # Var (scalars) or TensorSym, in ABI order
    body: tuple[Stmt, ...]
    source_name: str = ""
    result_params: tuple[str, ...] = ()
    manifest: dict = field(default_factory=dict, compare=False)


def scalar_results(kernel: Kernel) -> set[str]:
    """The kernel's scalar results: rank-0 result parameters (a kernel cannot declare a rank-0
    tensor result), passed in C as a pointer to one element and written on success."""
    ranks = {p.name: p.rank for p in kernel.params if isinstance(p, TensorSym)}
    return {name for name in kernel.result_params if ranks.get(name) == 0}


@dataclass(frozen=True)
class Program:
    module: str
    kernels: tuple[Kernel, ...]


# ---- printing (explain --stage physical) ----------------------------------------------------------
# The text is also the physical program's serial form: ``physical_text.parse_program`` reads it
# back. Types that follow from the operands (a Binary's is its operands', a Compare's bool, a
# Load's its tensor's element, a Read's its variable's declaration) are not printed.
def format_expr(e: Expr) -> str:
    if isinstance(e, Const):
        return f"{e.value!r}:{e.dtype}"
    if isinstance(e, Read):
        return e.var.name
    if isinstance(e, Binary):
        return f"{e.op}{'.fast' if e.fast else ''}({format_expr(e.a)}, {format_expr(e.b)})"
    if isinstance(e, Unary):
        return f"{e.op}({format_expr(e.a)})"
    if isinstance(e, Compare):
        return f"{e.pred}({format_expr(e.a)}, {format_expr(e.b)})"
    if isinstance(e, Select):
        return f"select({format_expr(e.cond)}, {format_expr(e.a)}, {format_expr(e.b)})"
    if isinstance(e, Cast):
        return f"cast<{e.dtype}{' in_range' if e.in_range else ''}>({format_expr(e.a)})"
    if isinstance(e, Field):
        return f"{e.tensor.name}.{e.kind}[{e.axis}]"
    if isinstance(e, Splat):
        return f"splat<{e.dtype}>({format_expr(e.a)})"
    if isinstance(e, Pack):
        return f"pack<{e.dtype}>({', '.join(format_expr(x) for x in e.elems)})"
    if isinstance(e, Lane):
        return f"{format_expr(e.a)}[lane {e.index}]"
    if isinstance(e, Shuffle):
        return f"shuffle({format_expr(e.a)}, {format_expr(e.b)}, {list(e.mask)})"
    if isinstance(e, MulAdd):
        return f"{'fma' if e.fused else 'muladd'}({format_expr(e.a)}, {format_expr(e.b)}, {format_expr(e.c)})"
    if isinstance(e, Atomic):
        args = "".join(", " + format_expr(x) for x in (e.a, e.b) if x is not None)
        return f"atomic_{e.op}.{e.order}(&{e.tensor.name}.data[{format_expr(e.offset)}]{args})"
    if isinstance(e, Load):
        lanes = f" x{e.dtype.lanes}" if isinstance(e.dtype, VectorType) else ""
        return f"{e.tensor.name}.data[{format_expr(e.offset)}{lanes}]"
    raise TypeError(e)


def format_stmts(stmts, indent: str = "") -> list[str]:
    lines = []
    for s in stmts:
        if isinstance(s, Assign):
            lines.append(f"{indent}{s.var.name}: {s.var.dtype} = {format_expr(s.value)}")
        elif isinstance(s, Store):
            streaming = " (streaming)" if s.streaming else ""
            lines.append(f"{indent}{s.tensor.name}.data[{format_expr(s.offset)}] = {format_expr(s.value)}{streaming}")
        elif isinstance(s, Fence):
            lines.append(f"{indent}fence")
        elif isinstance(s, If):
            lines.append(f"{indent}if {format_expr(s.cond)}:")
            lines += format_stmts(s.then, indent + "  ") or [indent + "  pass"]
            if s.orelse:
                lines.append(f"{indent}else:")
                lines += format_stmts(s.orelse, indent + "  ")
        elif isinstance(s, Loop):
            grain = f" grain={format_expr(s.grain)}" if s.grain is not None else ""
            lines.append(f"{indent}for {s.var.name} in {s.kind}(0, {format_expr(s.count)}){grain}:")
            lines += format_stmts(s.body, indent + "  ") or [indent + "  pass"]
        elif isinstance(s, While):
            lines.append(f"{indent}while:")
            lines += format_stmts(s.cond_body, indent + "    ")
            lines.append(f"{indent}  test {format_expr(s.cond)}")
            lines.append(f"{indent}  body:")
            lines += format_stmts(s.body, indent + "    ")
        elif isinstance(s, Alloc):
            extents = ", ".join(format_expr(e) for e in s.extents)
            lines.append(f"{indent}{s.tensor.name} = alloc {s.tensor.dtype}[{extents}]")
        elif isinstance(s, Check):
            args = "".join(", " + format_expr(a) for a in s.args)
            lines.append(f"{indent}check {format_expr(s.cond)} else {s.code} {s.message!r}{args}")
        elif isinstance(s, TileNest):
            lines += _format_tile_nest(s, indent)
        else:
            raise TypeError(s)
    return lines


def _format_tile_nest(s: TileNest, indent: str) -> list[str]:
    tensors = ", ".join(t.name for t in s.tensors)
    scalars = ", ".join(format_expr(e) for e in s.scalars)
    results = "".join(f"{', ' if k else ' -> '}{v.name}: {v.dtype}" for k, v in enumerate(s.results))
    head = f"{indent}tiles {s.kind}[{tensors}]({scalars}) {dict(s.attrs)!r}{results}"
    if s.combine is None:
        return [head]
    c = s.combine
    args = ", ".join(f"{a.name}: {a.dtype}" for a in c.args)
    lines = [head + ":", f"{indent}  combine({args}) hints {c.hints!r}:"]
    lines += format_stmts(c.body, indent + "    ")
    lines.append(f"{indent}    yield {', '.join(format_expr(y) for y in c.yields)}")
    return lines


def format_program(program: Program) -> str:
    out = [f"physical module {program.module}"]
    for kernel in program.kernels:
        params = ", ".join(
            f"{p.name}: {p.dtype}[rank {p.rank}]{' mut' if p.writable else ''}" if isinstance(p, TensorSym)
            else f"{p.name}: {p.dtype}" for p in kernel.params)
        out.append(f"\nkernel {kernel.name}({params}):")
        if kernel.source_name != kernel.name:
            out.append(f"  source {kernel.source_name!r}")
        if kernel.result_params:
            out.append(f"  results {', '.join(kernel.result_params)}")
        out += format_stmts(kernel.body, "  ")
    return "\n".join(out) + "\n"


# ---- children: declared once, by the fields' annotations ----------------------------------------
# A node's children are the fields annotated with one of these forms; every traversal (map_expr,
# map_stmts, walk_stmts, the emitters' read/write analyses, the GPU planner) goes through
# ``child_fields`` so that adding a field to a node class updates them all.
EXPR, OPTIONAL_EXPR, EXPRS, BLOCK, DEFINES, DEFINES_ALL = (
    "expr", "optional expr", "exprs", "block", "defines", "defines all")
_CHILD_ANNOTATIONS = {"Expr": EXPR, "Expr | None": OPTIONAL_EXPR, "tuple[Expr, ...]": EXPRS,
                      "tuple[Stmt, ...]": BLOCK}
_CHILD_FIELDS: dict[type, tuple[tuple[str, str], ...]] = {}


def child_fields(cls: type) -> tuple[tuple[str, str], ...]:
    """``(field name, role)`` of every child of a node class, in field order. Roles: ``expr``,
    ``optional expr`` (None or an Expr), ``exprs`` (a tuple of Expr), ``block`` (a tuple of
    Stmt), ``defines`` (the Var a statement assigns: ``Assign.var``, ``Loop.var``), ``defines all``
    (the Vars it assigns: ``TileNest.results``)."""
    found = _CHILD_FIELDS.get(cls)
    if found is None:
        found = []
        for f in fields(cls):
            role = _CHILD_ANNOTATIONS.get(f.type)
            if role is None and f.type == "Var" and issubclass(cls, Stmt):
                role = DEFINES
            elif role is None and f.type == "tuple[Var, ...]" and issubclass(cls, Stmt):
                role = DEFINES_ALL
            if role is not None:
                found.append((f.name, role))
        found = _CHILD_FIELDS[cls] = tuple(found)
    return found


def _exprs_of(node) -> list[Expr]:
    out = []
    for name, role in child_fields(type(node)):
        value = getattr(node, name)
        if role == EXPR or (role == OPTIONAL_EXPR and value is not None):
            out.append(value)
        elif role == EXPRS:
            out.extend(value)
    return out


def expr_children(e: Expr) -> list[Expr]:
    """The operand expressions of ``e``, in field order."""
    return _exprs_of(e)


def stmt_exprs(s: Stmt) -> list[Expr]:
    """The expressions directly in ``s`` (not those of its nested statements), in field order."""
    return _exprs_of(s)


def stmt_blocks(s: Stmt) -> list[tuple[Stmt, ...]]:
    """The statement lists nested directly in ``s`` (an If's branches, a loop's body, ...)."""
    return [getattr(s, name) for name, role in child_fields(type(s)) if role == BLOCK]


def stmt_defines(s: Stmt) -> list[Var]:
    """The variables ``s`` itself assigns (an Assign's target, a loop's index, a tile nest's results)."""
    out = []
    for name, role in child_fields(type(s)):
        if role == DEFINES:
            out.append(getattr(s, name))
        elif role == DEFINES_ALL:
            out.extend(getattr(s, name))
    return out


def walk_expr(e: Expr):
    """Every node of ``e``, ``e`` included (pre-order)."""
    yield e
    for sub in expr_children(e):
        yield from walk_expr(sub)


# ---- rewriting ------------------------------------------------------------------------------------
def _map_children(node, on_expr, on_block):
    """``node`` rebuilt with ``on_expr`` applied to each child expression and ``on_block`` to
    each nested statement list, in field order; a node without children is returned as is."""
    changes = {}
    for name, role in child_fields(type(node)):
        value = getattr(node, name)
        if role == EXPR or (role == OPTIONAL_EXPR and value is not None):
            changes[name] = on_expr(value)
        elif role == EXPRS:
            changes[name] = tuple(on_expr(x) for x in value)
        elif role == BLOCK:
            changes[name] = on_block(value)
    return replace(node, **changes) if changes else node


def map_expr(e: Expr, fn) -> Expr:
    """Rebuild ``e`` bottom-up, applying ``fn`` to every node (children first)."""
    return fn(_map_children(e, lambda x: map_expr(x, fn), None))


def map_stmts(stmts, fn) -> tuple[Stmt, ...]:
    """Apply ``fn`` to every expression inside ``stmts`` (recursively)."""
    return tuple(_map_children(s, lambda e: map_expr(e, fn), lambda block: map_stmts(block, fn)) for s in stmts)


def map_blocks(s: Stmt, fn) -> Stmt:
    """``s`` rebuilt with ``fn`` applied to each statement list nested directly in it."""
    return _map_children(s, lambda e: e, fn)


def walk_stmts(stmts):
    """Every statement in ``stmts``, nested ones included (pre-order)."""
    for s in stmts:
        yield s
        for block in stmt_blocks(s):
            yield from walk_stmts(block)
