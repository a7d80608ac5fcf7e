"""Mark element accesses whose indices are proven in bounds, so they need no run-time check.

Before: ``load``/``store`` ops may carry ``inbounds`` (set by earlier passes that built
them in bounds); others are checked at run time (D5: never clamped).
After: an axis of an access is marked in bounds when its index is the point of a
``parallel``/``for`` over ``domain(b, e, s)`` with a constant ``b >= 0`` and ``e`` provably
equal to the tensor's extent on that axis. Equality comes only from identity of shape
values, from ``dim`` of the same tensor axis, from equal static extents, and from
``assert_eq`` checks that executed earlier on the same path (S1) — never from names or
shapes that merely look alike (C6). Anything else stays checked.
"""
from __future__ import annotations

from intentc.kir.core import Block, Function, Module, Op, Value
from intentc.kir.types import TensorType


def run(module: Module) -> Module:
    for func in module.kernels:
        _Prover(func).block(func.body)
    return module


class _Prover:
    def __init__(self, func: Function):
        self.parent: dict[int, int] = {}
        self.defs: dict[int, Op] = {}
        self.index_domain: dict[int, Value] = {}  # loop point -> its domain value
        self.dims: dict[tuple[int, int], int] = {}  # (tensor, axis) -> representative
        for op in func.walk():
            for result in op.results:
                self.defs[id(result)] = op

    def find(self, key: int) -> int:
        while self.parent.get(key, key) != key:
            key = self.parent[key]
        return key

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[ra] = rb

    def extent_key(self, value: Value):
        """A key for an index value: constants by value, everything else by identity."""
        op = self.defs.get(id(value))
        if op is not None and op.name == "const":
            return ("const", op.attrs["value"])
        return id(value)

    def block(self, block: Block) -> None:
        for op in block.ops:
            if op.name == "dim":
                tensor, axis = op.operands[0], op.attrs["axis"]
                key = (id(tensor), axis)
                static = tensor.type.shape[axis]
                if static is not None:
                    self.union(self.extent_key(op.result), self.find_const(static))
                if key in self.dims:
                    self.union(id(op.result), self.dims[key])
                else:
                    self.dims[key] = id(op.result)
            elif op.name == "assert_eq":
                self.union(self.extent_key(op.operands[0]), self.extent_key(op.operands[1]))
            elif op.name in ("parallel", "for"):
                domains = op.operands if op.name == "parallel" else op.operands[:1]
                for arg, domain in zip(op.regions[0].args, domains):
                    self.index_domain[id(arg)] = domain
            elif op.name in ("load", "store"):
                self.access(op)
            # Facts found inside a region hold only there: give each region a copy.
            for region in op.regions:
                saved = dict(self.parent), dict(self.dims)
                self.block(region)
                self.parent, self.dims = saved

    def find_const(self, value: int):
        return ("const", value)

    def access(self, op: Op) -> None:
        tensor = op.operands[0]
        rank = tensor.type.rank if isinstance(tensor.type, TensorType) else 0
        indices = op.operands[1:1 + rank]
        proven = list(op.attrs.get("inbounds", [False] * rank))
        for axis, index in enumerate(indices):
            if proven[axis]:
                continue
            domain = self.index_domain.get(id(index))
            dom_op = self.defs.get(id(domain)) if domain is not None else None
            if dom_op is None or dom_op.name != "domain":
                continue
            begin, end, _step = dom_op.operands
            begin_op = self.defs.get(id(begin))
            if begin_op is None or begin_op.name != "const" or begin_op.attrs["value"] < 0:
                continue
            extent = self.dims.get((id(tensor), axis))
            static = tensor.type.shape[axis]
            end_root = self.find(self.extent_key(end))
            if (extent is not None and self.find(extent) == end_root) or \
                    (static is not None and self.find(self.find_const(static)) == end_root):
                proven[axis] = True
        if any(proven):
            op.attrs["inbounds"] = proven
