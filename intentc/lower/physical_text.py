"""The physical program's text form: ``print_program`` writes it, ``parse_program`` reads it back.

The text is the one ``intentc explain --stage physical`` shows (``program.format_program``);
``parse_program(print_program(p)) == p`` for every program that ``physical_verifier`` accepts.
The printer leaves out what the verifier's typing rules imply, and the parser restores it:

- a ``Read``'s type is its variable's, declared once per kernel (a parameter ``x: T``, an
  assignment ``x: T = ...``, a loop ``for x in ...`` of type index);
- a tensor is a parameter ``x: T[rank R]`` (``mut``: writable) or a buffer ``x = alloc T[e, ...]``
  (kernel-local, writable, of rank the number of extents);
- ``Binary``, ``Unary``, ``Select`` and ``MulAdd`` have their (first value) operand's type,
  ``Compare`` bool, ``Lane`` its vector's element, ``Shuffle`` a vector of as many lanes as its
  mask, ``Field`` index, ``Load`` and ``Atomic`` their tensor's element (``x.data[o x4]``: a vector
  of 4).

Statement lines, nested by two spaces (a ``while``'s two bodies by four)::

    x: T = EXPR                          t.data[EXPR] = EXPR [(streaming)]
    t = alloc T[EXPR, ...]               fence
    check EXPR else CODE 'message'[, EXPR...]
    if EXPR: / else:                     for i in KIND(0, EXPR)[ grain=EXPR]:
    while: <cond body> test EXPR body: <body>
    pass                                 (an empty if-branch or loop body)
    tiles KIND[T, ...](EXPR, ...) {ATTRS}[ -> x: T, ...]
    tiles lane_chains[...](...) {...} -> ...:   combine(a: T, ...) hints (...): <assignments> yield x, ...

A tile nest's ``{ATTRS}`` is a Python dict literal; a ``lane_chains`` nest's combine template
is nested below it, with variables of its own (they are not the kernel's).

A kernel header ``kernel NAME(PARAMS):`` may be followed by ``source 'NAME'`` (the name its
errors quote, when it is not the kernel's) and ``results NAME, ...`` (the result parameters).
"""
from __future__ import annotations

import ast
import re
from intentc.base import math_catalog
from intentc.kir.types import BOOL, DTYPES, INDEX, DType
from intentc.lower import program as P

print_program = P.format_program

BINARY_OPS = (frozenset("add sub mul div floordiv mod pow min max and or xor shl shr".split())
              | set(math_catalog.NEW_BINARY))
UNARY_OPS = frozenset("neg not abs exp log tanh sqrt".split()) | set(math_catalog.UNARY)
COMPARE_PREDS = frozenset("lt le gt ge eq ne".split())
FIELD_KINDS = frozenset(("shape", "stride", "address", "present"))
_CALLS = BINARY_OPS | UNARY_OPS | COMPARE_PREDS | {"select", "muladd", "fma", "shuffle"}

_TOKEN = re.compile(r"""\s*(?:
    (?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
  | (?P<number>-?\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>[()\[\],<>:&.=-])
)""", re.VERBOSE)
_ASSIGN = re.compile(r"([A-Za-z_]\w*): (\S+) = ")
_FOR = re.compile(r"for ([A-Za-z_]\w*) in ")
_ALLOC = re.compile(r"([A-Za-z_]\w*) = alloc ")
_TILES = re.compile(r"tiles ([a-z0-9_]+)\[([^\]]*)\]\((.*)\) (\{.*\})(?: -> (.*?))?(:?)$")
_COMBINE = re.compile(r"combine\((.*)\) hints (\(.*\)):$")
_HEADER = re.compile(r"kernel ([A-Za-z_][\w.]*)\((.*)\):$")
_TENSOR_PARAM = re.compile(r"([A-Za-z_]\w*): (\S+)\[rank (\d+)\]( mut)?$")
_SCALAR_PARAM = re.compile(r"([A-Za-z_]\w*): (\S+)$")


class PhysicalParseError(ValueError):
    """The text is not a physical program; the message names the line."""


def parse_dtype(text: str) -> DType | P.VectorType:
    """``f32``, ``index``, ... or a vector ``f32x8``."""
    if text in DTYPES:
        return DTYPES[text]
    match = re.fullmatch(r"(\w+?)x(\d+)", text)
    if match and match.group(1) in DTYPES:
        return P.VectorType(DTYPES[match.group(1)], int(match.group(2)))
    raise ValueError(f"unknown type '{text}'")


# ---- expressions -------------------------------------------------------------------------------
class _Expressions:
    """Recursive descent over the tokens of one line's expression text."""

    def __init__(self, text: str, scope: "_Scope"):
        self.tokens, pos = [], 0
        text = text.rstrip()
        while pos < len(text):
            match = _TOKEN.match(text, pos)
            if not match or match.end() == pos:
                raise ValueError(f"unexpected text {text[pos:]!r}")
            kind = match.lastgroup
            self.tokens.append((kind, match.group(kind)))
            pos = match.end()
        self.pos = 0
        self.scope = scope

    # -- tokens
    def peek(self, offset: int = 0) -> tuple[str, str] | None:
        k = self.pos + offset
        return self.tokens[k] if k < len(self.tokens) else None

    def at(self, value: str, offset: int = 0) -> bool:
        token = self.peek(offset)
        return token is not None and token[1] == value and token[0] != "string"

    def take(self, value: str | None = None, kind: str | None = None) -> str:
        token = self.peek()
        if token is None:
            raise ValueError(f"expected {value or kind}, found the end of the line")
        if (value is not None and (token[1] != value or token[0] == "string")) or (kind and token[0] != kind):
            raise ValueError(f"expected {value or kind}, found {token[1]!r}")
        self.pos += 1
        return token[1]

    def done(self) -> bool:
        return self.pos == len(self.tokens)

    def finish(self) -> None:
        if not self.done():
            raise ValueError(f"unexpected {self.peek()[1]!r}")

    def int_(self) -> int:
        return int(self.take(kind="number"))

    def dtype(self) -> DType | P.VectorType:
        return parse_dtype(self.take(kind="name"))

    def args(self) -> list[P.Expr]:
        self.take("(")
        out = []
        while not self.at(")"):
            if out:
                self.take(",")
            out.append(self.expr())
        self.take(")")
        return out

    # -- grammar
    def expr(self) -> P.Expr:
        e = self.primary()
        while self.at("[") and self.at("lane", 1):  # x[lane 3]
            self.take("[")
            self.take("lane")
            index = self.int_()
            self.take("]")
            e = P.Lane(e.dtype.elem, e, index)
        return e

    def primary(self) -> P.Expr:
        token = self.peek()
        if token is None:
            raise ValueError("expected an expression, found the end of the line")
        kind, text = token
        if kind == "number" or (text == "-" and self.at("inf", 1)) or (text in ("True", "False", "inf", "nan")
                                                                         and self.at(":", 1)):
            return self.const()
        name = self.take(kind="name")
        if self.at(".") and self.peek(1) and self.peek(1)[1] in FIELD_KINDS | {"data"}:
            return self.tensor_access(self.scope.tensor(name))
        if name.startswith("atomic_") and self.at("."):
            return self.atomic(name[len("atomic_"):])
        if self.at("<"):
            return self.typed(name)
        fast = False
        if name in BINARY_OPS and self.at(".") and self.at("fast", 1):
            self.take(".")
            self.take("fast")
            fast = True
        if name in _CALLS and self.at("("):
            return self.call(name, fast)
        return P.read(self.scope.var(name))

    def const(self) -> P.Const:
        if self.at("-"):
            self.take("-")
            self.take("inf")
            value: object = float("-inf")
        else:
            kind, text = self.tokens[self.pos]
            self.pos += 1
            value = {"True": True, "False": False, "inf": float("inf"), "nan": float("nan")}.get(text) \
                if kind == "name" else ast.literal_eval(text)
        self.take(":")
        return P.Const(self.dtype(), value)

    def tensor_access(self, tensor: P.TensorSym) -> P.Expr:
        self.take(".")
        what = self.take(kind="name")
        self.take("[")
        if what in FIELD_KINDS:
            axis = self.int_()
            self.take("]")
            return P.Field(INDEX, tensor, what, axis)
        offset = self.expr()
        dtype = tensor.dtype
        token = self.peek()
        if token and token[0] == "name" and re.fullmatch(r"x\d+", token[1]):
            self.pos += 1
            dtype = P.VectorType(tensor.dtype, int(token[1][1:]))
        self.take("]")
        return P.Load(dtype, tensor, offset)

    def atomic(self, op: str) -> P.Atomic:
        self.take(".")
        order = self.take(kind="name")
        self.take("(")
        self.take("&")
        tensor = self.scope.tensor(self.take(kind="name"))
        self.take(".")
        self.take("data")
        self.take("[")
        offset = self.expr()
        self.take("]")
        operands = []
        while self.at(","):
            self.take(",")
            operands.append(self.expr())
        self.take(")")
        if len(operands) > 2:
            raise ValueError("an atomic takes at most two operands")
        a, b = (operands + [None, None])[:2]
        return P.Atomic(tensor.dtype, tensor, offset, op, order, a, b)

    def typed(self, name: str) -> P.Expr:
        self.take("<")
        dtype = self.dtype()
        in_range = False
        if name == "cast" and self.at("in_range"):
            self.take("in_range")
            in_range = True
        self.take(">")
        args = self.args()
        if name == "cast" and len(args) == 1:
            return P.Cast(dtype, args[0], in_range)
        if name == "splat" and len(args) == 1:
            return P.Splat(dtype, args[0])
        if name == "pack":
            return P.Pack(dtype, tuple(args))
        raise ValueError(f"'{name}<...>' with {len(args)} operands is not an expression")

    def call(self, name: str, fast: bool) -> P.Expr:
        if name == "shuffle":
            self.take("(")
            a = self.expr()
            self.take(",")
            b = self.expr()
            self.take(",")
            self.take("[")
            mask = []
            while not self.at("]"):
                if mask:
                    self.take(",")
                mask.append(self.int_())
            self.take("]")
            self.take(")")
            return P.Shuffle(P.VectorType(a.dtype.elem, len(mask)), a, b, tuple(mask))
        args = self.args()
        arity = {"select": 3, "muladd": 3, "fma": 3, **dict.fromkeys(BINARY_OPS | COMPARE_PREDS, 2),
                 **dict.fromkeys(UNARY_OPS, 1)}.get(name)
        if arity is None:
            raise ValueError(f"unknown operation '{name}'")
        if len(args) != arity:
            raise ValueError(f"'{name}' takes {arity} operands, not {len(args)}")
        if name == "select":
            return P.Select(args[1].dtype, *args)
        if name in ("muladd", "fma"):
            return P.MulAdd(args[0].dtype, *args, fused=name == "fma")
        if name in BINARY_OPS:
            return P.Binary(args[0].dtype, name, args[0], args[1], fast)
        if name in COMPARE_PREDS:
            return P.Compare(BOOL, name, *args)
        return P.Unary(args[0].dtype, name, args[0])


# ---- kernels -----------------------------------------------------------------------------------
class _Scope:
    """A kernel's variables (one type per name, all declared before the body is read) and
    tensors (parameters, then each buffer as its ``alloc`` line is read)."""

    def __init__(self):
        self.vars: dict[str, P.Var] = {}
        self.tensors: dict[str, P.TensorSym] = {}

    def declare(self, name: str, dtype) -> P.Var:
        var = P.Var(name, dtype)
        if self.vars.setdefault(name, var) != var:
            raise ValueError(f"'{name}' is declared as {self.vars[name].dtype} and as {dtype}")
        return var

    def var(self, name: str) -> P.Var:
        if name not in self.vars:
            raise ValueError(f"'{name}' is not a variable of this kernel")
        return self.vars[name]

    def tensor(self, name: str) -> P.TensorSym:
        if name not in self.tensors:
            raise ValueError(f"'{name}' is not a tensor of this kernel")
        return self.tensors[name]

    def add_tensor(self, sym: P.TensorSym) -> None:
        if self.tensors.setdefault(sym.name, sym) != sym:
            raise ValueError(f"the tensor '{sym.name}' is declared twice, differently")


class _Lines:
    """The indented lines of one kernel, parsed into statements."""

    def __init__(self, lines: list[tuple[int, int, str]], scope: _Scope):
        self.lines = lines  # (line number, indent, text)
        self.pos = 0
        self.scope = scope

    def exprs(self, text: str) -> _Expressions:
        return _Expressions(text, self.scope)

    def expr(self, text: str) -> P.Expr:
        parser = self.exprs(text)
        e = parser.expr()
        parser.finish()
        return e

    def block(self, indent: int) -> tuple[P.Stmt, ...]:
        out = []
        while self.pos < len(self.lines) and self.lines[self.pos][1] >= indent:
            number, at, text = self.lines[self.pos]
            if at != indent:
                raise PhysicalParseError(f"line {number}: unexpected indentation")
            self.pos += 1
            try:
                stmt = self.stmt(text, indent)
            except PhysicalParseError:  # from a nested block: it names its own line
                raise
            except (ValueError, IndexError, AttributeError) as exc:
                raise PhysicalParseError(f"line {number}: {exc}: {text.strip()}") from None
            if stmt is not None:
                out.append(stmt)
        return tuple(out)

    def expect(self, indent: int, text: str) -> None:
        if self.pos >= len(self.lines) or self.lines[self.pos][1:] != (indent, text):
            where = f"line {self.lines[self.pos][0]}" if self.pos < len(self.lines) else "the end"
            raise PhysicalParseError(f"{where}: expected '{text}' at indent {indent}")
        self.pos += 1

    def stmt(self, text: str, indent: int) -> P.Stmt | None:
        if text == "pass":
            return None
        if text == "fence":
            return P.Fence()
        if text.startswith("if ") and text.endswith(":"):
            cond = self.expr(text[3:-1])
            then = self.block(indent + 2)
            orelse = ()
            if self.pos < len(self.lines) and self.lines[self.pos][1:] == (indent, "else:"):
                self.pos += 1
                orelse = self.block(indent + 2)
            return P.If(cond, then, orelse)
        if text == "while:":
            cond_body = self.block(indent + 4)
            if self.pos >= len(self.lines) or self.lines[self.pos][1] != indent + 2 \
                    or not self.lines[self.pos][2].startswith("test "):
                raise ValueError("a while needs its 'test' line")
            cond = self.expr(self.lines[self.pos][2][5:])
            self.pos += 1
            self.expect(indent + 2, "body:")
            return P.While(cond_body, cond, self.block(indent + 4))
        if match := _FOR.match(text):
            return self.loop(match.group(1), text[match.end():], indent)
        if text.startswith("check "):
            return self.check(text[6:])
        if match := _ALLOC.match(text):
            return self.alloc(match.group(1), text[match.end():])
        if match := _ASSIGN.match(text):
            return P.Assign(self.scope.var(match.group(1)), self.expr(text[match.end():]))
        if match := _TILES.match(text):
            return self.tile_nest(match, indent)
        return self.store(text)

    def tile_nest(self, match: re.Match, indent: int) -> P.TileNest:
        kind, tensors, scalars, attrs, results, has_combine = match.groups()
        syms = tuple(self.scope.tensor(t.strip()) for t in tensors.split(",") if t.strip())
        p = self.exprs(f"({scalars})")
        exprs = tuple(p.args())
        p.finish()
        variables = tuple(self.scope.var(name) for name, _ in _results(results))
        frozen = tuple((key, _frozen(value)) for key, value in ast.literal_eval(attrs).items())
        combine = self.lane_combine(indent + 2) if has_combine else None
        return P.TileNest(kind, syms, exprs, variables, frozen, combine)

    def lane_combine(self, indent: int) -> P.LaneCombine:
        """The combine template below a lane_chains nest, read in a scope of its own."""
        if self.pos >= len(self.lines) or self.lines[self.pos][1] != indent:
            raise ValueError("a lane_chains nest needs its combine line")
        number, _, text = self.lines[self.pos]
        match = _COMBINE.match(text)
        if not match:
            raise PhysicalParseError(f"line {number}: expected 'combine(ARGS) hints (...):'")
        self.pos += 1
        own = _Scope()
        args = tuple(own.declare(name, dtype) for name, dtype in _results(match.group(1)))
        body_lines = []
        while self.pos < len(self.lines) and self.lines[self.pos][1] > indent:
            body_lines.append(self.lines[self.pos])
            self.pos += 1
        if not body_lines or not body_lines[-1][2].startswith("yield "):
            raise PhysicalParseError(f"line {number}: a combine template ends with 'yield'")
        _declare(body_lines[:-1], own)
        reader = _Lines(body_lines[:-1], own)
        body = reader.block(indent + 2)
        yields = reader.exprs(f"({body_lines[-1][2][len('yield '):]})")
        values = tuple(yields.args())
        yields.finish()
        return P.LaneCombine(args, body, ast.literal_eval(match.group(2)), values)

    def loop(self, name: str, rest: str, indent: int) -> P.Loop:
        p = self.exprs(rest)
        kind = p.take(kind="name")
        p.take("(")
        p.take("0")
        p.take(",")
        count = p.expr()
        p.take(")")
        grain = None
        if p.at("grain"):
            p.take("grain")
            p.take("=")
            grain = p.expr()
        p.take(":")
        p.finish()
        return P.Loop(self.scope.var(name), count, self.block(indent + 2), kind, grain)

    def check(self, rest: str) -> P.Check:
        p = self.exprs(rest)
        cond = p.expr()
        p.take("else")
        code = p.take(kind="name")
        message = ast.literal_eval(p.take(kind="string"))
        args = []
        while p.at(","):
            p.take(",")
            args.append(p.expr())
        p.finish()
        return P.Check(cond, code, message, tuple(args))

    def alloc(self, name: str, rest: str) -> P.Alloc:
        p = self.exprs(rest)
        dtype = p.dtype()
        p.take("[")
        extents = []
        while not p.at("]"):
            if extents:
                p.take(",")
            extents.append(p.expr())
        p.take("]")
        p.finish()
        sym = P.TensorSym(name, dtype, len(extents), True, "heap")
        self.scope.add_tensor(sym)
        return P.Alloc(sym, tuple(extents))

    def store(self, text: str) -> P.Store:
        p = self.exprs(text)
        tensor = self.scope.tensor(p.take(kind="name"))
        p.take(".")
        p.take("data")
        p.take("[")
        offset = p.expr()
        p.take("]")
        p.take("=")
        value = p.expr()
        streaming = False
        if p.at("("):
            p.take("(")
            p.take("streaming")
            p.take(")")
            streaming = True
        p.finish()
        return P.Store(tensor, offset, value, streaming)


def _results(text: str | None) -> list[tuple[str, object]]:
    """``x: T, y: T`` as (name, type) pairs."""
    out = []
    for part in filter(None, (x.strip() for x in (text or "").split(","))):
        name, _, dtype = part.partition(": ")
        out.append((name, parse_dtype(dtype)))
    return out


def _frozen(value):
    return tuple(_frozen(v) for v in value) if isinstance(value, (list, tuple)) else value


def _declare(lines: list[tuple[int, int, str]], scope: _Scope) -> None:
    """Every variable's type, from its declarations (uses may come before them in the text: a
    loop-carried value is read at the top of a body and assigned at its end). A combine
    template's lines are skipped: its variables are its own."""
    template_at = None
    for number, indent, text in lines:
        if template_at is not None and indent > template_at:
            continue
        template_at = None
        try:
            if match := _TILES.match(text):
                for name, dtype in _results(match.group(5)):
                    scope.declare(name, dtype)
                if match.group(6):
                    template_at = indent
            elif match := _ASSIGN.match(text):
                scope.declare(match.group(1), parse_dtype(match.group(2)))
            elif match := _FOR.match(text):
                scope.declare(match.group(1), INDEX)
        except ValueError as exc:
            raise PhysicalParseError(f"line {number}: {exc}") from None


def _kernel(header: tuple[int, str], lines: list[tuple[int, int, str]]) -> P.Kernel:
    number, text = header
    match = _HEADER.match(text)
    if not match:
        raise PhysicalParseError(f"line {number}: expected 'kernel NAME(PARAMS):'")
    name = match.group(1)
    scope = _Scope()
    params = []
    for part in filter(None, (x.strip() for x in match.group(2).split(", "))):
        try:
            if m := _TENSOR_PARAM.match(part):
                sym = P.TensorSym(m.group(1), parse_dtype(m.group(2)), int(m.group(3)), bool(m.group(4)))
                scope.add_tensor(sym)
                params.append(sym)
            elif m := _SCALAR_PARAM.match(part):
                params.append(scope.declare(m.group(1), parse_dtype(m.group(2))))
            else:
                raise ValueError(f"not a parameter: {part!r}")
        except ValueError as exc:
            raise PhysicalParseError(f"line {number}: {exc}") from None
    source_name, results = name, ()
    if lines and lines[0][2].startswith("source "):
        source_name = ast.literal_eval(lines[0][2][len("source "):])
        lines = lines[1:]
    if lines and lines[0][2].startswith("results "):
        results = tuple(x.strip() for x in lines[0][2][len("results "):].split(","))
        lines = lines[1:]
    _declare(lines, scope)
    reader = _Lines(lines, scope)
    body = reader.block(2)
    if reader.pos != len(lines):
        raise PhysicalParseError(f"line {lines[reader.pos][0]}: unexpected indentation")
    return P.Kernel(name, tuple(params), body, source_name, results)


def parse_program(text: str) -> P.Program:
    """The program printed as ``text`` (raises ``PhysicalParseError`` naming the line)."""
    lines = [(n, len(line) - len(line.lstrip(" ")), line.strip())
             for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not lines or not lines[0][2].startswith("physical module "):
        raise PhysicalParseError("line 1: expected 'physical module NAME'")
    module = lines[0][2][len("physical module "):].strip()
    kernels, k = [], 1
    while k < len(lines):
        number, indent, header = lines[k]
        if indent != 0:
            raise PhysicalParseError(f"line {number}: expected a kernel header")
        end = k + 1
        while end < len(lines) and lines[end][1] > 0:
            end += 1
        kernels.append(_kernel((number, header), lines[k + 1:end]))
        k = end
    return P.Program(module, tuple(kernels))
