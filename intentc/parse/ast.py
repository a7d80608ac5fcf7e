"""The Intent abstract syntax tree: frozen dataclasses, every node with a span."""
from __future__ import annotations

from dataclasses import dataclass, field

from intentc.source import Span


@dataclass(frozen=True)
class Node:
    span: Span = field(compare=False, repr=False)


# ---- expressions ------------------------------------------------------------
@dataclass(frozen=True)
class Expr(Node):
    pass


@dataclass(frozen=True)
class Name(Expr):
    id: str


@dataclass(frozen=True)
class Constant(Expr):
    value: object  # int, float, bool, str or None


@dataclass(frozen=True)
class BinOp(Expr):
    op: str  # + - * / // % ** & | ^ << >>
    left: Expr
    right: Expr


@dataclass(frozen=True)
class UnaryOp(Expr):
    op: str  # - + ~ not
    operand: Expr


@dataclass(frozen=True)
class Compare(Expr):
    op: str  # < <= > >= == != is, is not (`x is None`: optional parameters only)
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Membership(Expr):
    """``element in domain`` (``negated`` for ``not in``)."""

    element: Expr
    domain: Expr
    negated: bool = False


@dataclass(frozen=True)
class BoolOp(Expr):
    op: str  # and, or (short-circuit)
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Conditional(Expr):
    cond: Expr
    then: Expr
    orelse: Expr


@dataclass(frozen=True)
class Keyword(Node):
    name: str
    value: Expr


@dataclass(frozen=True)
class Call(Expr):
    func: Expr
    args: tuple[Expr, ...]
    keywords: tuple[Keyword, ...]


@dataclass(frozen=True)
class Slice(Expr):
    lower: Expr | None
    upper: Expr | None
    step: Expr | None


@dataclass(frozen=True)
class Subscript(Expr):
    value: Expr
    indices: tuple[Expr, ...]


@dataclass(frozen=True)
class Attribute(Expr):
    value: Expr
    attr: str


@dataclass(frozen=True)
class TupleExpr(Expr):
    elts: tuple[Expr, ...]


# ---- statements ---------------------------------------------------------------
@dataclass(frozen=True)
class Stmt(Node):
    pass


@dataclass(frozen=True)
class Assign(Stmt):
    target: Expr  # Name, TupleExpr of Names, or Subscript
    value: Expr


@dataclass(frozen=True)
class AnnAssign(Stmt):
    target: Name
    annotation: Expr
    value: Expr


@dataclass(frozen=True)
class AugAssign(Stmt):
    target: Expr
    op: str
    value: Expr


@dataclass(frozen=True)
class ExprStmt(Stmt):
    value: Expr


@dataclass(frozen=True)
class Return(Stmt):
    value: Expr | None


@dataclass(frozen=True)
class Pass(Stmt):
    pass


@dataclass(frozen=True)
class Break(Stmt):
    pass


@dataclass(frozen=True)
class Continue(Stmt):
    pass


@dataclass(frozen=True)
class If(Stmt):
    cond: Expr
    body: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...]


@dataclass(frozen=True)
class For(Stmt):
    targets: tuple[Name, ...]
    iter: Expr
    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class While(Stmt):
    cond: Expr
    body: tuple[Stmt, ...]


# ---- top level ------------------------------------------------------------------
@dataclass(frozen=True)
class Param(Node):
    name: str
    annotation: Expr
    mutable: bool
    default: Expr | None = None  # `eps: f32 = 1e-5`, `bias: f32[C] | None = None`


@dataclass(frozen=True)
class FunctionDef(Node):
    kind: str  # "kernel" or "fn"
    name: str
    params: tuple[Param, ...]
    returns: Expr | None
    body: tuple[Stmt, ...]
    name_span: Span = field(compare=False, repr=False)


@dataclass(frozen=True)
class Import(Node):
    """``import intent as I``, ``import common``, ``import lib.common as common``."""

    module: str
    alias: str | None  # None: ``import common`` binds the name ``common``


@dataclass(frozen=True)
class ImportName(Node):
    name: str
    alias: str  # the name it is bound to (``name`` itself without ``as``)


@dataclass(frozen=True)
class FromImport(Node):
    """``from common import layernorm_row, EPS as eps``."""

    module: str
    names: tuple[ImportName, ...]


@dataclass(frozen=True)
class ConstantDef(Node):
    """A module-level constant: ``EPS = 1e-5`` or ``EPS: f64 = 1e-5``."""

    name: str
    annotation: Expr | None
    value: Expr
    name_span: Span = field(compare=False, repr=False)


@dataclass(frozen=True)
class Module(Node):
    imports: tuple[Import | FromImport, ...]
    functions: tuple[FunctionDef, ...]
    constants: tuple[ConstantDef, ...] = ()
