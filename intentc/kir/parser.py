"""Text -> KIR, the inverse of ``printer.py``: ``print(parse(text)) == text`` for printed modules."""
from __future__ import annotations

import json
import re

from intentc.kir.core import Block, Function, Module, Op, Param, Value
from intentc.kir.types import parse_type


class KirSyntaxError(Exception):
    def __init__(self, line_no: int, message: str):
        super().__init__(f"line {line_no}: {message}")


_VALUE_NAME = re.compile(r"%[A-Za-z0-9_.]+")
_VALUE_DEF = re.compile(r"%([A-Za-z0-9_.]+):(tensor<[^>]*>|[A-Za-z0-9_]+)")
_FUNC_HEAD = re.compile(r"^(kernel|fn) @([A-Za-z_][A-Za-z0-9_.]*)\((.*)\) -> \((.*?)\)(.*)\{$")
_PARAM = re.compile(r"^%([A-Za-z0-9_.]+): (tensor<[^>]*>|[A-Za-z0-9_]+)( mut| result)?( optional)?( \[.*?\])?"
                    r"( default=\S+)?$")
_OP = re.compile(r"^(?:(.*?) = )?([a-z_][a-z0-9_]*)\((.*?)\)(.*)$")


def _split_top(text: str) -> list[str]:
    """Split on commas that are not nested inside <>, [] or ()."""
    parts, depth, current = [], 0, []
    for char in text:
        if char in "<[(":
            depth += 1
        elif char in ">])":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    tail = "".join(current).strip()
    if tail:
        parts.append(tail)
    return parts


class _Reader:
    def __init__(self, text: str):
        self.lines = [(n + 1, line.strip()) for n, line in enumerate(text.splitlines())]
        self.lines = [(n, l) for n, l in self.lines if l and not l.startswith("//")]
        self.pos = 0
        self.scope: dict[str, Value] = {}
        # Uses before the definition (in text order) are read as forward references, so that
        # the verifier, not the parser, reports the dominance error.
        self.forward: dict[str, tuple[Value, int]] = {}

    def peek(self) -> tuple[int, str]:
        if self.pos >= len(self.lines):
            raise KirSyntaxError(self.lines[-1][0] if self.lines else 0, "unexpected end of input")
        return self.lines[self.pos]

    def next(self) -> tuple[int, str]:
        item = self.peek()
        self.pos += 1
        return item

    def define(self, line_no: int, name: str, type_text: str) -> Value:
        if name in self.scope:
            raise KirSyntaxError(line_no, f"%{name} is defined twice")
        hint = "" if name[0].isdigit() else name.split(".")[0]
        value = self.forward.pop(name, (Value(None, ""), line_no))[0]
        value.type, value.hint = parse_type(type_text), hint
        self.scope[name] = value
        return value

    def use(self, line_no: int, token: str) -> Value:
        token = token.strip()
        if not _VALUE_NAME.fullmatch(token):
            raise KirSyntaxError(line_no, f"use of undefined value {token}")
        if token[1:] not in self.scope:
            return self.forward.setdefault(token[1:], (Value(None, ""), line_no))[0]
        return self.scope[token[1:]]

    # -- structure ---------------------------------------------------------------------------
    def module(self) -> Module:
        line_no, line = self.next()
        if not line.startswith("module @"):
            raise KirSyntaxError(line_no, "expected 'module @name'")
        module = Module(line[len("module @"):].strip())
        while self.pos < len(self.lines):
            module.functions.append(self.function())
        return module

    def function(self) -> Function:
        line_no, line = self.next()
        match = _FUNC_HEAD.match(line)
        if not match:
            raise KirSyntaxError(line_no, "expected a function header")
        kind, name, params_text, results_text, extents_text = match.groups()
        self.scope, self.forward = {}, {}
        params, args = [], []
        for item in _split_top(params_text):
            pm = _PARAM.match(item)
            if not pm:
                raise KirSyntaxError(line_no, f"bad parameter {item!r}")
            pname, ptype, mut, optional, extents, default = pm.groups()
            args.append(self.define(line_no, pname, ptype))
            params.append(Param(pname.split(".")[0], bool(mut), tuple(json.loads(extents)) if extents else (),
                                result=mut == " result", optional=bool(optional),
                                default=(json.loads(default[len(" default="):]),) if default else ()))
        result_types = [parse_type(t) for t in _split_top(results_text)]
        extents_text = extents_text.strip()
        result_extents = [tuple(e) for e in json.loads(extents_text)] if extents_text else [() for _ in result_types]
        body = Block(args)
        self.ops_until_close(body)
        for missing, (_, use_line) in self.forward.items():
            raise KirSyntaxError(use_line, f"use of undefined value %{missing}")
        return Function(name, kind, params, result_types, body, result_extents)

    def ops_until_close(self, block: Block) -> str:
        """Read ops into ``block`` up to a closing line; return that line ('}' or '} {')."""
        while True:
            line_no, line = self.peek()
            if line in ("}", "} {"):
                self.pos += 1
                return line
            block.ops.append(self.op())

    def op(self) -> Op:
        line_no, line = self.next()
        has_regions = line.endswith(" {")
        if has_regions:
            line = line[:-2]
        match = _OP.match(line)
        if not match:
            raise KirSyntaxError(line_no, f"cannot read op {line!r}")
        results_text, name, operands_text, attrs_text = match.groups()
        operands = [self.use(line_no, t) for t in _split_top(operands_text)]
        attrs = {}
        if attrs_text.strip():
            try:
                attrs = json.loads(attrs_text.strip())
            except json.JSONDecodeError as exc:
                raise KirSyntaxError(line_no, f"bad attributes: {exc}") from None
        op = Op(name, operands, [], attrs, [])
        # Results are named before region arguments, in the printer's order.
        if results_text:
            for item in _split_top(results_text):
                vm = _VALUE_DEF.fullmatch(item)
                if not vm:
                    raise KirSyntaxError(line_no, f"bad result {item!r}")
                op.results.append(self.define(line_no, *vm.groups()))
        regions = op.regions
        if has_regions:
            while True:
                region = Block()
                arg_line_no, arg_line = self.next()
                if not (arg_line.startswith("^(") and arg_line.endswith(")")):
                    raise KirSyntaxError(arg_line_no, "a region starts with '^(args)'")
                for item in _split_top(arg_line[2:-1]):
                    vm = _VALUE_DEF.fullmatch(item)
                    if not vm:
                        raise KirSyntaxError(arg_line_no, f"bad region argument {item!r}")
                    region.args.append(self.define(arg_line_no, *vm.groups()))
                regions.append(region)
                if self.ops_until_close(region) == "}":
                    break
        return op


def parse_module(text: str) -> Module:
    return _Reader(text).module()
