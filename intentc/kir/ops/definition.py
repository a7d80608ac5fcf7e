"""The vocabulary in which every KIR op is declared once.

An ``OpDef`` says, as data, what an op looks like: its operands (each with a type
constraint; at most one group is variadic), its results, its typed attributes (required or
optional), how many regions it has, whether it ends a block, its effects and an optional
op-local ``check`` for the rules a declaration cannot state (operand types that must agree,
counts that follow an attribute). ``intentc.kir.verifier`` reads the declarations; the
family modules next to this one hold them; ``intentc.kir.ops`` collects them.

Effects are queries on the IR (P3, R4, M4):

- ``pure``       no effect; may be reordered, duplicated or removed when unused;
- ``check``      may fail at run time with an error (bounds D5, shapes S1/S3, domains D1);
- ``read``       reads the tensor operand ``operand`` (an external view: M2);
- ``write``      writes the tensor operand ``operand``;
- ``control``    structured control whose effects are those of its regions;
- and the memory kinds of ``memory.py`` (``buffer_read``, ``atomic``, ``rng``, ...).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from intentc.kir.core import Block, Op
from intentc.kir.types import BOOL, DOMAIN, INDEX, DType, TensorType, Type


class VerifyError(Exception):
    pass


@dataclass(frozen=True)
class Effect:
    kind: str  # pure | check | read | write | control | alloc | buffer_read | ...
    operand: int | None = None


PURE = (Effect("pure"),)
CHECK = (Effect("check"),)
CONTROL = (Effect("control"),)


# ---- type constraints (on operand and result values) -------------------------------------------
@dataclass(frozen=True)
class TypeConstraint:
    """A named predicate on a KIR type; ``what`` reads in 'must be <what>'."""

    what: str
    holds: Callable[[Type], bool]


def _is_tensor(type_: Type) -> bool:
    return isinstance(type_, TensorType)


def _element(type_: Type) -> DType | None:
    return type_.dtype if isinstance(type_, TensorType) else type_ if isinstance(type_, DType) else None


ANY = TypeConstraint("any type", lambda t: True)
INDEX_T = TypeConstraint("index", lambda t: t == INDEX)
BOOL_T = TypeConstraint("bool", lambda t: t == BOOL)
DOMAIN_T = TypeConstraint("a domain", lambda t: t == DOMAIN)
SCALAR = TypeConstraint("a scalar", lambda t: isinstance(t, DType))
TENSOR = TypeConstraint("a tensor", _is_tensor)
VALUE = TypeConstraint("a scalar or a tensor", lambda t: _element(t) is not None)
FLOATS = TypeConstraint("a float scalar or tensor", lambda t: _element(t) is not None and _element(t).is_float)
INTS = TypeConstraint("an integer scalar or tensor", lambda t: _element(t) is not None and _element(t).is_int)
INTS_OR_BOOLS = TypeConstraint("an integer or bool scalar or tensor",
                               lambda t: _element(t) is not None and (_element(t).is_int or _element(t).is_bool))


def tensor_of_rank(rank: int) -> TypeConstraint:
    return TypeConstraint(f"a tensor of rank {rank}", lambda t: _is_tensor(t) and t.rank == rank)


# ---- attribute constraints (on the JSON values of ``Op.attrs``) ---------------------------------
@dataclass(frozen=True)
class AttrConstraint:
    """A named predicate on an attribute value; ``what`` reads in 'must be <what>'."""

    what: str
    holds: Callable[[object], bool]


BOOL_A = AttrConstraint("a bool", lambda v: isinstance(v, bool))
INT_A = AttrConstraint("an int", lambda v: isinstance(v, int) and not isinstance(v, bool))
STR_A = AttrConstraint("a string", lambda v: isinstance(v, str))
NUMBER_A = AttrConstraint("a bool, int or float", lambda v: isinstance(v, (bool, int, float)))
DICT_A = AttrConstraint("an object", lambda v: isinstance(v, dict))


def list_of(item: AttrConstraint) -> AttrConstraint:
    """A JSON list (a tuple built in memory prints as one too)."""
    return AttrConstraint(f"a list, each item {item.what}",
                          lambda v: isinstance(v, (list, tuple)) and all(item.holds(x) for x in v))


def either(*choices: AttrConstraint) -> AttrConstraint:
    return AttrConstraint(" or ".join(c.what for c in choices), lambda v: any(c.holds(v) for c in choices))


def one_of(what: str, names: tuple[str, ...]) -> AttrConstraint:
    return AttrConstraint(f"{what} ({', '.join(names)})", lambda v: isinstance(v, str) and v in names)


# ---- the declaration of one op -------------------------------------------------------------------
@dataclass(frozen=True)
class Operand:
    """An operand (or, with ``variadic``, a group of zero or more operands) of one constraint."""

    name: str
    type: TypeConstraint = ANY
    variadic: bool = False


Result = Operand  # results are declared like operands


def many(name: str, type_: TypeConstraint = ANY) -> Operand:
    return Operand(name, type_, variadic=True)


@dataclass(frozen=True)
class Attr:
    type: AttrConstraint
    required: bool = True


def optional(type_: AttrConstraint) -> Attr:
    return Attr(type_, required=False)


@dataclass(frozen=True, eq=False)
class OpDef:
    """Everything the verifier and the passes may ask of an op name.

    ``effects`` is a tuple, or a function of the op when they depend on its attributes
    (the memory space of an access, M2). ``check`` runs after the declared rules hold."""

    name: str
    family: str
    operands: tuple[Operand, ...] = ()
    results: tuple[Result, ...] = ()
    attrs: dict[str, Attr] = field(default_factory=dict)
    regions: int = 0
    terminator: bool = False
    effects: tuple[Effect, ...] | Callable[[Op], tuple[Effect, ...]] = PURE
    check: Callable[[Op], None] | None = None
    rule: str = ""  # the spec rules the op's form serves, quoted in verifier messages

    def __post_init__(self):
        for group in (self.operands, self.results):
            assert sum(d.variadic for d in group) <= 1, f"{self.name}: at most one variadic group"

    def effects_of(self, op: Op) -> tuple[Effect, ...]:
        return self.effects(op) if callable(self.effects) else self.effects


def declare(*defs: OpDef) -> dict[str, OpDef]:
    """A family's ops by name (each name declared once)."""
    table = {}
    for definition in defs:
        assert definition.name not in table, f"op '{definition.name}' declared twice"
        table[definition.name] = definition
    return table


# ---- helpers of the op-local checks ------------------------------------------------------------
def need(cond: bool, op: Op, message: str) -> None:
    if not cond:
        raise VerifyError(f"'{op.name}': {message}")


def element_is(type_: Type, dtype: DType) -> bool:
    return _element(type_) == dtype


def shaped_like(type_: Type, dtype: DType) -> Type:
    """``dtype`` as a scalar, or as a tensor of ``type_``'s shape when ``type_`` is a tensor."""
    return TensorType(dtype, type_.shape) if isinstance(type_, TensorType) else dtype


def yield_types(op: Op, block: Block, name: str = "yield") -> list[Type]:
    """The types a region passes to its terminator ``name``."""
    term = block.ops[-1] if block.ops and block.ops[-1].name == name else None
    need(term is not None, op, f"region must end with '{name}'")
    return [v.type for v in term.operands]


def check_combine(op: Op, region_index: int, types: list[Type]) -> None:
    """A combine region takes (acc..., item...) of the accumulator types and yields the accumulators."""
    combine = op.regions[region_index]
    need([a.type for a in combine.args] == types + types, op, "combine takes (acc..., item...) of the acc types")
    need(yield_types(op, combine) == types, op, "combine yields the acc types")
