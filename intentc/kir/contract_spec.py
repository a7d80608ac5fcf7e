"""The einsum-style specification of a binary contraction (T3), e.g. ``"bmk,bkn->bmn"``.

One letter names one axis. Every letter of the result appears in at least one operand;
a letter in both operands is *paired*: a **batch** axis when the result keeps it, a
**reduction** axis when it does not. A letter of one operand that the result keeps is a
**free** axis. What a binary multiply-add contraction cannot express is refused: a letter
twice in one operand (a diagonal), twice in the result, or summed in one operand only.

The canonical layout the lowering computes in is ``[batch..., free_a..., free_b...]``
(each group in result order); the result is a permutation of it. Reductions run in
row-major order over the reduction letters as they appear in the first operand ("k
order"), which is the order the reference interpreter accumulates in.
"""
from __future__ import annotations

from dataclasses import dataclass


class SpecError(Exception):
    """A malformed specification: ``message`` and an optional ``hint``."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint


@dataclass(frozen=True)
class ContractSpec:
    a: str  # the letters of the first operand's axes, in order
    b: str
    out: str

    @property
    def batch(self) -> str:
        return "".join(c for c in self.out if c in self.a and c in self.b)

    @property
    def free_a(self) -> str:
        return "".join(c for c in self.out if c in self.a and c not in self.b)

    @property
    def free_b(self) -> str:
        return "".join(c for c in self.out if c in self.b and c not in self.a)

    @property
    def reduced(self) -> str:
        return "".join(c for c in self.a if c in self.b and c not in self.out)

    @property
    def canonical(self) -> str:
        """The letters of the canonical result layout: batch, free of a, free of b."""
        return self.batch + self.free_a + self.free_b

    @property
    def perm(self) -> list[int]:
        """Result axis k is canonical axis perm[k]."""
        return [self.canonical.index(c) for c in self.out]

    def __str__(self) -> str:
        return f"{self.a},{self.b}->{self.out}"


def parse_spec(text: str) -> ContractSpec:
    """Parse ``"ab,bc->ac"`` (spaces ignored); raises SpecError naming what is wrong."""
    if not isinstance(text, str):
        raise SpecError("the specification must be a string literal such as \"ij,jk->ik\"")
    compact = "".join(text.split())
    if "..." in compact:
        raise SpecError("'...' (implicit broadcast axes) is not supported in a contraction",
                        hint="name every axis with a letter, e.g. \"bij,bjk->bik\"")
    if compact.count("->") != 1:
        raise SpecError(f"the specification \"{text}\" needs exactly one '->' before the result axes",
                        hint="write the result explicitly, e.g. \"ij,jk->ik\" (\"i,i->\" for a scalar)")
    inputs, out = compact.split("->")
    parts = inputs.split(",")
    if len(parts) != 2:
        raise SpecError(f"a contraction takes exactly two operands, but \"{text}\" names {len(parts)}",
                        hint="for one operand use I.sum / I.transpose; chain I.contract for more")
    a, b = parts
    for what, letters in (("the first operand", a), ("the second operand", b), ("the result", out)):
        bad = [c for c in letters if not ("a" <= c <= "z" or "A" <= c <= "Z")]
        if bad:
            raise SpecError(f"'{bad[0]}' in {what} of \"{text}\" is not an axis letter",
                            hint="axes are named by single letters a-z, A-Z")
        twice = sorted({c for c in letters if letters.count(c) > 1})
        if twice:
            if what == "the result":
                raise SpecError(f"axis '{twice[0]}' appears twice in the result of \"{text}\"")
            raise SpecError(f"axis '{twice[0]}' appears twice in {what} of \"{text}\": a diagonal is not a "
                            "binary multiply-add contraction", hint="each operand names each of its axes once")
    for c in out:
        if c not in a and c not in b:
            raise SpecError(f"result axis '{c}' of \"{text}\" is not an axis of either operand")
    for what, letters, other in (("first", a, b), ("second", b, a)):
        for c in letters:
            if c not in other and c not in out:
                raise SpecError(f"axis '{c}' of the {what} operand is neither paired with the other operand nor "
                                f"kept in the result of \"{text}\"",
                                hint=f"a contraction sums only paired axes; reduce it first (I.sum(x, axis=...)) "
                                     f"or keep it in the result")
    return ContractSpec(a, b, out)


def default_acc(dtype):
    """The accumulator dtype when ``acc=`` is not given: f16/bf16 -> f32, 8/16-bit integers -> i32,
    every other numeric dtype accumulates in itself. None for bool."""
    from intentc.kir.types import DTYPES

    if dtype.is_bool:
        return None
    if dtype.is_float:
        return DTYPES["f32"] if dtype.bits < 32 else dtype
    if dtype.kind == "index":
        return DTYPES["i64"]
    return DTYPES["i32"] if dtype.bits < 32 else dtype


def acc_allowed(operand, acc) -> bool:
    """An accumulator holds every product of two operand elements' dtype exactly as a value
    range: floats accumulate in a float at least as wide, integers in an integer at least as
    wide (signed operands in a signed one; unsigned ones in an unsigned or a wider signed one)."""
    if operand.is_bool or acc.is_bool or acc.kind == "index":
        return False
    if operand.is_float:
        return acc.kind == "float" and acc.bits >= max(operand.bits, 32 if operand.kind == "bfloat" else 0)
    if not acc.is_int:
        return False
    if operand.kind == "index":
        return acc.is_signed and acc.bits == 64
    if operand.is_signed:
        return acc.is_signed and acc.bits >= operand.bits
    return acc.bits >= operand.bits if not acc.is_signed else acc.bits > operand.bits
