"""The state of building one function's KIR, and the emission primitives every part uses.

``BuilderState`` declares every field the builder has (set in its constructor, nowhere
else) and the primitives that append ops: ``emit``, ``const``, ``index_value``,
``shape_of``, ``shaped_like``, ``region`` and ``domain_of``. The expression builder
(expressions.py) adds evaluation and typing on top; statements, relations and the
builtin families are functions of a builder ``b`` that use these fields and methods.
"""
from __future__ import annotations

from intentc.diagnostics import error
from intentc.kir.core import Block, Op, Value
from intentc.kir.types import DOMAIN, INDEX, DType, TensorType
from intentc.parse import ast
from intentc.sema.mx import check_mx
from intentc.sema.shapes import Extent
from intentc.sema.signatures import Signature
from intentc.sema.values import FunctionRef


class BuilderState:
    """What the builder knows while it walks one function."""

    def __init__(self, signatures: dict[str, Signature], fn: ast.FunctionDef, module_scope: dict | None = None):
        """``fn`` is normalised already (sema/normalize.py); ``module_scope`` holds the names its
        module binds at the top level (sema/imports.py; default: the functions of ``signatures``)."""
        self.signatures = signatures  # every function of the module, by KIR name
        if module_scope is None:
            module_scope = {name: FunctionRef(name, sig.kind) for name, sig in signatures.items()}
        self.module_scope = module_scope  # name -> FunctionRef, ConstantRef or ModuleRef
        self.fn = fn
        self.sig = signatures[fn.name]
        self.block = Block()  # where emit() appends; region() swaps it
        self.scope: dict[str, object] = {}  # name -> Value, Literal, TupleValue or a reference
        self.readonly: dict[str, str] = {}  # name -> why it cannot be assigned
        self.shapes: dict[int, list[Extent]] = {}  # tensor value id -> its extents (S1)
        self.params: dict[int, str] = {}  # tensor parameter value id -> name
        self.mutable: set[int] = set()  # ids of tensors that may be written (mut parameters, buffers)
        self.buffers: set[int] = set()  # ids of logical buffers (I.buffer), a memory space (M2)
        # id(view, reshape or permutation of a writable tensor) -> its relation op: a window (windows.py)
        self.windows: dict[int, Op] = {}
        self.relation_roots: dict[int, Value] = {}  # id(relation result) -> the tensor it reads
        self.point_domains: dict[int, Value] = {}  # id(loop point) -> the domain it ranges over
        self.axis_extents: dict[int, object] = {}  # id(domain made by x.axis(k)) -> that axis' extent
        self.defining_op: dict[int, Op] = {}  # id(value) -> the op that made it (emit)
        self.tensor_carries: dict[int, list] = {}  # id(loop statement) -> its carried tensors (tensor_carries.py)
        self.named_extents: dict[str, tuple[Value, str]] = {}  # extent name -> (its shape value, where from)
        self.parallel_outer: set[str] | None = None  # names defined outside the innermost I.parallel (P2)
        self.carry_args: set[int] = set()  # ids of loop-carried region arguments (O2)
        # id(value) -> the literal a name was assigned: its dtype was only the literal's default,
        # so a loop that carries it may give it the dtype its body computes (statements.py).
        self.literal_values: dict[int, object] = {}
        # id(carried region argument) -> (name, literal) when the carried name held a literal.
        self.literal_carries: dict[int, tuple[str, object]] = {}
        # id(value) -> (condition, literal, literal) of `1 if c else 0`: its dtype too is only the
        # literals' default, and it takes the dtype it meets (expressions.py).
        self.literal_choices: dict[int, tuple] = {}

    def emit(self, name, operands, result_types=(), attrs=None, regions=None, span=None, hint="") -> Op:
        """Append an op to the current block; MX values only move and convert (sema/mx.py)."""
        check_mx(name, operands, result_types, span)
        op = Op(name, operands, list(result_types), attrs, regions, span,
                [hint] * len(result_types) if hint else None)
        self.block.ops.append(op)
        for result in op.results:
            self.defining_op[id(result)] = op
        return op

    def const(self, value, dtype: DType, span=None) -> Value:
        """A scalar constant."""
        return self.emit("const", [], [dtype], {"value": value}, span=span).result

    def index_value(self, extent: Extent, span=None) -> Value:
        """A static extent as an index constant; a runtime extent is its value already."""
        if isinstance(extent, int):
            return self.const(extent, INDEX, span)
        return extent

    def shape_of(self, value: Value) -> list[Extent]:
        """The extents of a tensor (``dim`` ops for axes not known yet); [] for a scalar."""
        if isinstance(value.type, TensorType):
            shape = self.shapes.get(id(value))
            if shape is None:
                shape = [self.emit("dim", [value], [INDEX], {"axis": k}).result if e is None else e
                         for k, e in enumerate(value.type.shape)]
                self.shapes[id(value)] = shape
            return shape
        return []

    def region(self, args: list[Value], scope: dict, build) -> tuple[Block, dict]:
        """Build a region body with ``scope`` as its starting scope; return it and the final scope."""
        saved_block, saved_scope = self.block, self.scope
        self.block, self.scope = Block(args), dict(scope)
        try:
            build()
            return self.block, self.scope
        finally:
            self.block, self.scope = saved_block, saved_scope

    def shaped_like(self, result: Value, operand: Value) -> Value:
        """Record that a pointwise result has its (already broadcast) operand's extents."""
        if isinstance(operand.type, TensorType):
            self.shapes[id(result)] = self.shape_of(operand)
        return result

    def domain_of(self, value, span) -> Value:
        """``value`` if it is a domain, else a D1 diagnostic."""
        if isinstance(value, Value) and value.type == DOMAIN:
            return value
        raise error("expected a domain", span, rule="D1",
                    hint="iterate I.domain(begin, end, step), x.axis(k), or I.parallel(...)")
