"""The KIR data structures: values, ops with regions, blocks, functions, modules.

An op is generic (name, operands, results, attributes, regions); what an op name
means — its operand/result rules, effects and verification — lives in
``intentc.kir.ops``. Regions are single blocks with arguments (structured control).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from intentc.kir.types import Type
from intentc.source import Span


class Value:
    """An SSA value: the result of an op or an argument of a block."""

    __slots__ = ("type", "hint")

    def __init__(self, type_: Type, hint: str = ""):
        self.type = type_
        self.hint = hint

    def __repr__(self) -> str:
        return f"<Value {self.hint or '?'}: {self.type}>"


class Block:
    """A region body: arguments and an ordered list of ops ending in a terminator."""

    __slots__ = ("args", "ops")

    def __init__(self, args: list[Value] | None = None, ops: list["Op"] | None = None):
        self.args = list(args or [])
        self.ops = list(ops or [])

    def walk(self) -> Iterator["Op"]:
        for op in self.ops:
            yield from op.walk()


class Op:
    __slots__ = ("name", "operands", "results", "attrs", "regions", "span")

    def __init__(self, name: str, operands: list[Value], result_types: list[Type] | None = None,
                 attrs: dict | None = None, regions: list[Block] | None = None,
                 span: Span | None = None, result_hints: list[str] | None = None):
        self.name = name
        self.operands = list(operands)
        hints = result_hints or [""] * len(result_types or [])
        self.results = [Value(t, h) for t, h in zip(result_types or [], hints)]
        self.attrs = dict(attrs or {})
        self.regions = list(regions or [])
        self.span = span

    @property
    def result(self) -> Value:
        assert len(self.results) == 1, f"{self.name} has {len(self.results)} results"
        return self.results[0]

    def walk(self) -> Iterator["Op"]:
        """This op, then every op nested in its regions (pre-order)."""
        yield self
        for region in self.regions:
            yield from region.walk()

    def __repr__(self) -> str:
        return f"<Op {self.name}>"


@dataclass
class Param:
    """A function parameter as the ABI sees it (the value itself is a body block argument)."""

    name: str
    mutable: bool = False
    extents: tuple[str | int, ...] = ()  # named or literal extents for tensors (S1)
    result: bool = False  # a returned tensor, passed by the caller as an output (ABI)
    optional: bool = False  # a tensor that may be absent (NULL descriptor, None in Python)
    default: tuple = ()  # () or (the value a Python caller who omits the argument passes,)


@dataclass
class Function:
    name: str
    kind: str  # "kernel" (exported entry) or "fn" (pure helper)
    params: list[Param]
    result_types: list[Type]
    body: Block
    result_extents: list[tuple[str | int, ...]] = field(default_factory=list)
    span: Span | None = None

    @property
    def args(self) -> list[Value]:
        return self.body.args

    def walk(self) -> Iterator[Op]:
        return self.body.walk()


@dataclass
class Module:
    name: str
    functions: list[Function] = field(default_factory=list)

    def function(self, name: str) -> Function:
        for func in self.functions:
            if func.name == name:
                return func
        raise KeyError(name)

    @property
    def kernels(self) -> list[Function]:
        return [f for f in self.functions if f.kind == "kernel"]
