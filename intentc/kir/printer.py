"""KIR -> text. The form is generic and line-oriented so that ``parser.py`` reads it back:

    kernel @saxpy(%a: f32, %x: tensor<f32[?]> ["N"], %out: tensor<f32[?]> mut ["N"]) -> () {
      %n:index = dim(%x) {"axis": 0}
      %r:f32 = for(%d, %init) {
        ^(%i:index, %acc:f32)
        ...
        yield(%next)
      }
      return()
    }

Attributes are a JSON object; value names come from source names, made unique.
"""
from __future__ import annotations

import json
import re

from intentc.kir.core import Block, Function, Module, Op, Value

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class _Namer:
    def __init__(self):
        self.names: dict[int, str] = {}
        self.used: set[str] = set()
        self.counter = 0

    def define(self, value: Value) -> str:
        if id(value) in self.names:
            return f"%{self.names[id(value)]}"
        hint = value.hint if _IDENT.match(value.hint or "") else ""
        name = hint
        if not name or name in self.used:
            base = hint or ""
            while True:
                name = f"{base}.{self.counter}" if base else str(self.counter)
                self.counter += 1
                if name not in self.used:
                    break
        self.used.add(name)
        self.names[id(value)] = name
        return f"%{name}"

    def use(self, value: Value) -> str:
        name = self.names.get(id(value))
        return f"%{name}" if name is not None else "%<undefined>"


def _attrs(op: Op) -> str:
    if not op.attrs:
        return ""
    return " " + json.dumps(op.attrs, sort_keys=True)


def _name_block(block: Block, namer: _Namer, with_args: bool) -> None:
    """Assign every name in printing order first, so annotations can refer to any value."""
    if with_args:
        for arg in block.args:
            namer.define(arg)
    for op in block.ops:
        for result in op.results:
            namer.define(result)
        for region in op.regions:
            _name_block(region, namer, with_args=True)


def _print_block(block: Block, namer: _Namer, indent: str, lines: list[str], with_args: bool, notes=None) -> None:
    if with_args:
        args = ", ".join(f"{namer.define(a)}:{a.type}" for a in block.args)
        lines.append(f"{indent}^({args})")
    for op in block.ops:
        _print_op(op, namer, indent, lines, notes)


def _print_op(op: Op, namer: _Namer, indent: str, lines: list[str], notes=None) -> None:
    for note in (notes or {}).get(id(op), ()):
        lines.append(f"{indent}// {note}")
    operands = ", ".join(namer.use(v) for v in op.operands)
    head = f"{op.name}({operands}){_attrs(op)}"
    # Region arguments are named before results so that names read in definition order.
    if op.results:
        results = ", ".join(f"{namer.define(r)}:{r.type}" for r in op.results)
        head = f"{results} = {head}"
    if not op.regions:
        lines.append(indent + head)
        return
    lines.append(f"{indent}{head} {{")
    for index, region in enumerate(op.regions):
        _print_block(region, namer, indent + "  ", lines, with_args=True, notes=notes)
        lines.append(f"{indent}}}" + (" {" if index + 1 < len(op.regions) else ""))


def print_function(func: Function, annotate=None) -> str:
    """``annotate(func, name_of) -> {id(op): [comment lines]}`` adds ``//`` comments
    (the parser skips them), e.g. the provenance shown by ``intentc explain``."""
    namer = _Namer()
    for value in func.args:
        namer.define(value)
    _name_block(func.body, namer, with_args=False)
    notes = annotate(func, lambda v: namer.use(v)) if annotate else None
    params = []
    for param, value in zip(func.params, func.args):
        text = f"{namer.define(value)}: {value.type}"
        if param.result:
            text += " result"
        elif param.mutable:
            text += " mut"
        if param.optional:
            text += " optional"
        if param.extents:
            text += " " + json.dumps(list(param.extents))
        if param.default:
            text += " default=" + json.dumps(param.default[0])
        params.append(text)
    results = ", ".join(str(t) for t in func.result_types)
    extents = ""
    if any(func.result_extents):
        extents = " " + json.dumps([list(e) for e in func.result_extents])
    lines = [f"{func.kind} @{func.name}({', '.join(params)}) -> ({results}){extents} {{"]
    _print_block(func.body, namer, "  ", lines, with_args=False, notes=notes)
    lines.append("}")
    return "\n".join(lines)


def print_module(module: Module, annotate=None) -> str:
    parts = [f"module @{module.name}"]
    for func in module.functions:
        parts.append(print_function(func, annotate))
    return "\n\n".join(parts) + "\n"
