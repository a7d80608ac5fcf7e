"""Lark parse tree -> Intent AST (intentc.parse.ast), keeping a span on every node."""
from __future__ import annotations

import re

from lark import Token, Transformer, v_args

from intentc.diagnostics import error
from intentc.parse import ast
from intentc.source import SourceFile, Span

class _Decorator(tuple):
    def __new__(cls, dotted: str, span: Span):
        return super().__new__(cls, (dotted, span))


# Number literals as Python writes them: an underscore only between two digits (or right
# after a base prefix). The grammar's INT and FLOAT tokens are looser, so that a misplaced
# underscore is a diagnostic naming the literal rather than a syntax error.
_DIGITS = r"[0-9](?:_?[0-9])*"
_INT_SYNTAX = re.compile(rf"0[xX](?:_?[0-9a-fA-F])+|0[bB](?:_?[01])+|{_DIGITS}")
_FLOAT_SYNTAX = re.compile(rf"(?:(?:{_DIGITS})?\.{_DIGITS}|{_DIGITS}\.?)(?:[eE][+-]?{_DIGITS})?")


def _bad_number(raw: str, span: Span):
    if raw[:2].lower() in ("0x", "0b") and not raw[2:].strip("_"):
        base = "hexadecimal" if raw[1] in "xX" else "binary"
        return error(f"the {base} literal '{raw}' has no digits", span,
                     hint=f"write digits after {raw[:2]}, e.g. {raw[:2]}1")
    return error(f"invalid number literal '{raw}'", span,
                 hint="an underscore may only stand between two digits, e.g. 1_000 or 0xff_ff")


_DECORATOR_KINDS = {"intent.kernel": "kernel", "intent.fn": "fn", "I.kernel": "kernel", "I.fn": "fn"}


@v_args(meta=True)
class ToAst(Transformer):
    def __init__(self, source: SourceFile):
        super().__init__()
        self.source = source

    # -- helpers ------------------------------------------------------------------
    def _span(self, meta) -> Span:
        if getattr(meta, "empty", True):
            return Span(self.source, 0, 0)
        return Span(self.source, meta.start_pos, meta.end_pos)

    def _tok(self, token: Token) -> Span:
        return Span(self.source, token.start_pos, token.end_pos)

    # -- top level ------------------------------------------------------------------
    def start(self, meta, children):
        imports, functions, constants = [], [], []
        for child in children:
            if isinstance(child, (ast.Import, ast.FromImport)):
                imports.append(child)
            elif isinstance(child, ast.FunctionDef):
                functions.append(child)
            elif isinstance(child, ast.Assign) and isinstance(child.target, ast.Name):
                constants.append(ast.ConstantDef(child.span, child.target.id, None, child.value, child.target.span))
            elif isinstance(child, ast.AnnAssign):
                constants.append(ast.ConstantDef(child.span, child.target.id, child.annotation, child.value,
                                                 child.target.span))
            else:
                span = getattr(child, "span", None)
                raise error("only imports, constants (NAME = value) and decorated functions may appear at the top "
                            "level of a module", span,
                            hint="put statements inside an @intent.kernel or @intent.fn function")
        return ast.Module(self._span(meta), tuple(imports), tuple(functions), tuple(constants))

    def import_stmt(self, meta, children):
        module, alias = children
        return ast.Import(self._span(meta), module, str(alias) if alias is not None else None)

    def from_import(self, meta, children):
        module, names = children
        return ast.FromImport(self._span(meta), module, tuple(names))

    def import_names(self, meta, children):
        return [c for c in children if c is not None]

    def import_name(self, meta, children):
        name, alias = children
        return ast.ImportName(self._span(meta), str(name), str(alias if alias is not None else name))

    def dotted_name(self, meta, children):
        return ".".join(str(c) for c in children)

    def decorator(self, meta, children):
        span = self._span(meta)  # ends after the line break; point at the decorator itself
        text = span.text.split("#", 1)[0].rstrip()
        return _Decorator(children[0], Span(self.source, span.start, span.start + max(1, len(text))))

    def funcdef(self, meta, children):
        decorators = [c for c in children if isinstance(c, _Decorator)]
        rest = [c for c in children if not isinstance(c, _Decorator)]
        name_token, params, returns, body = rest
        if len(decorators) != 1:
            raise error("a function needs exactly one decorator: @intent.kernel or @intent.fn",
                        decorators[1][1] if decorators else self._tok(name_token))
        dotted, dspan = decorators[0]
        kind = _DECORATOR_KINDS.get(dotted)
        if kind is None:
            raise error(f"unknown decorator '@{dotted}'", dspan,
                        hint="use @intent.kernel for entry points or @intent.fn for helpers")
        return ast.FunctionDef(self._span(meta), kind, str(name_token), tuple(params or ()), returns,
                               body, self._tok(name_token))

    def parameters(self, meta, children):
        return [c for c in children if c is not None]

    def param(self, meta, children):
        name, mut, annotation, default = children
        return ast.Param(self._span(meta), str(name), annotation, mut is not None, default)

    def suite(self, meta, children):
        return tuple(children)

    # -- statements -------------------------------------------------------------------
    def assign(self, meta, children):
        target, value = children
        return ast.Assign(self._span(meta), target, value)

    def annassign(self, meta, children):
        target, annotation, value = children
        if not isinstance(target, ast.Name):
            raise error("an annotated assignment needs a plain name on the left", target.span,
                        hint="write `name: dtype = value`")
        return ast.AnnAssign(self._span(meta), target, annotation, value)

    def augassign(self, meta, children):
        target, op, value = children
        return ast.AugAssign(self._span(meta), target, str(op)[:-1], value)

    def expr_stmt(self, meta, children):
        return ast.ExprStmt(self._span(meta), children[0])

    def return_stmt(self, meta, children):
        return ast.Return(self._span(meta), children[0])

    def pass_stmt(self, meta, children):
        return ast.Pass(self._span(meta))

    def break_stmt(self, meta, children):
        return ast.Break(self._span(meta))

    def continue_stmt(self, meta, children):
        return ast.Continue(self._span(meta))

    def if_stmt(self, meta, children):
        cond, body, *rest = children
        else_body = rest[-1] if rest and (rest[-1] is None or isinstance(rest[-1], tuple)) else None
        elifs = [c for c in rest if isinstance(c, ast.If)]
        orelse = else_body or ()
        for clause in reversed(elifs):
            orelse = (ast.If(clause.span, clause.cond, clause.body, orelse),)
        return ast.If(self._span(meta), cond, body, orelse)

    def elif_clause(self, meta, children):
        cond, body = children
        return ast.If(self._span(meta), cond, body, ())

    def else_clause(self, meta, children):
        return children[0]

    def for_stmt(self, meta, children):
        targets, iterable, body = children
        return ast.For(self._span(meta), targets, iterable, body)

    def for_target(self, meta, children):
        return tuple(ast.Name(self._tok(t), str(t)) for t in children)

    def while_stmt(self, meta, children):
        cond, body = children
        return ast.While(self._span(meta), cond, body)

    # -- expressions ------------------------------------------------------------------
    def tuple_expr(self, meta, children):
        return ast.TupleExpr(self._span(meta), tuple(c for c in children if c is not None))

    def conditional(self, meta, children):
        then, cond, orelse = children
        return ast.Conditional(self._span(meta), cond, then, orelse)

    def _chain_bool(self, meta, children, op):
        result = children[0]
        for operand in children[1:]:
            result = ast.BoolOp(result.span.join(operand.span), op, result, operand)
        return result

    def or_expr(self, meta, children):
        return self._chain_bool(meta, children, "or")

    def and_expr(self, meta, children):
        return self._chain_bool(meta, children, "and")

    def not_expr(self, meta, children):
        return ast.UnaryOp(self._span(meta), "not", children[1])

    def compare(self, meta, children):
        # a < b < c means (a < b) and (b < c), as in Python.
        operands = children[0::2]
        ops = children[1::2]
        result = None
        for index, op in enumerate(ops):
            left, right = operands[index], operands[index + 1]
            cmp = ast.Compare(left.span.join(right.span), str(op), left, right)
            result = cmp if result is None else ast.BoolOp(result.span.join(cmp.span), "and", result, cmp)
        return result

    def membership(self, meta, children):
        element, domain = children
        return ast.Membership(self._span(meta), element, domain)

    def identity(self, meta, children):  # `x is None`: only an optional parameter's check (sema)
        left, right = children
        return ast.Compare(self._span(meta), "is", left, right)

    def non_identity(self, meta, children):
        left, _not, right = children
        return ast.Compare(self._span(meta), "is not", left, right)

    def non_membership(self, meta, children):
        element, _not, domain = children
        return ast.Membership(self._span(meta), element, domain, negated=True)

    def binary(self, meta, children):
        result = children[0]
        for index in range(1, len(children), 2):
            op, right = children[index], children[index + 1]
            result = ast.BinOp(result.span.join(right.span), str(op), result, right)
        return result

    def unary(self, meta, children):
        op, operand = children
        return ast.UnaryOp(self._span(meta), str(op), operand)

    def power(self, meta, children):
        base, _op, exponent = children
        return ast.BinOp(self._span(meta), "**", base, exponent)

    def call(self, meta, children):
        func, arguments = children
        args, keywords = [], []
        for argument in arguments or ():
            if isinstance(argument, ast.Keyword):
                keywords.append(argument)
            elif keywords:
                raise error("a positional argument follows a keyword argument", argument.span)
            else:
                args.append(argument)
        return ast.Call(self._span(meta), func, tuple(args), tuple(keywords))

    def arguments(self, meta, children):
        return [c for c in children if c is not None]

    def keyword(self, meta, children):
        name, value = children
        return ast.Keyword(self._span(meta), str(name), value)

    def subscript(self, meta, children):
        value, indices = children
        return ast.Subscript(self._span(meta), value, tuple(indices))

    def subscripts(self, meta, children):
        return [c for c in children if c is not None]

    def slice(self, meta, children):
        parts = [c for c in children if not (isinstance(c, Token) and c.type == "COLON")]
        colons = [c for c in children if isinstance(c, Token) and c.type == "COLON"]
        lower, upper = parts[0], parts[1]
        step = parts[2] if len(colons) == 2 else None
        return ast.Slice(self._span(meta), lower, upper, step)

    def attribute(self, meta, children):
        value, name = children
        return ast.Attribute(self._span(meta), value, str(name))

    def name(self, meta, children):
        return ast.Name(self._span(meta), str(children[0]))

    def int_literal(self, meta, children):
        raw = str(children[0])
        if not _INT_SYNTAX.fullmatch(raw):
            raise _bad_number(raw, self._span(meta))
        text = raw.replace("_", "")
        if len(text) > 1 and text[0] == "0" and text[1].isdigit() and text.strip("0"):
            raise error(f"an integer literal cannot start with 0: '{text}'", self._span(meta),
                        hint=f"write {text.lstrip('0')}")
        if len(text) > 1100:  # more than 4096 bits in any base: no dtype holds it
            raise error("this integer literal is too long for any dtype", self._span(meta),
                        hint="integer dtypes hold at most 64 bits")
        return ast.Constant(self._span(meta), int(text, 0))

    def float_literal(self, meta, children):
        raw = str(children[0])
        if not _FLOAT_SYNTAX.fullmatch(raw):
            raise _bad_number(raw, self._span(meta))
        return ast.Constant(self._span(meta), float(raw.replace("_", "")))

    def true_literal(self, meta, children):
        return ast.Constant(self._span(meta), True)

    def false_literal(self, meta, children):
        return ast.Constant(self._span(meta), False)

    def none_literal(self, meta, children):
        return ast.Constant(self._span(meta), None)

    def string_literal(self, meta, children):
        text = str(children[0])
        return ast.Constant(self._span(meta), text[1:-1])

    def paren(self, meta, children):
        return children[0]

    def list_display(self, meta, children):
        items = [c for c in (children[0] or []) if c is not None]
        for item in items:
            if isinstance(item, ast.Keyword):
                raise error("a list holds values, not keyword arguments", item.span)
        return ast.TupleExpr(self._span(meta), tuple(items))

    def empty_tuple(self, meta, children):
        return ast.TupleExpr(self._span(meta), ())
