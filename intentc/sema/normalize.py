"""Normalises break, continue and early return into structured control (O3).

Before: loops and functions may contain ``break``, ``continue`` and ``return`` anywhere.
After: none of them remains except one ``return`` as the last statement of a function.
Exits become boolean flag variables (names a user cannot write, e.g. ``.brk1``); every
statement that follows a possible exit is guarded by ``if not flags``; a ``for`` loop
that may break becomes a ``while`` over its domain so that it stops early. Illegal exits
are diagnosed here: ``break`` and ``return`` inside ``I.parallel`` (P4).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

from intentc.diagnostics import error
from intentc.parse import ast


def is_parallel_loop(stmt: ast.For) -> bool:
    func = stmt.iter.func if isinstance(stmt.iter, ast.Call) else None
    return (isinstance(func, ast.Attribute) and func.attr == "parallel"
            and isinstance(func.value, ast.Name) and func.value.id == "I")


@dataclass(frozen=True)
class _Loop:
    brk: str | None  # flag set by break (None: no break in this loop)
    cont: str | None  # flag set by continue
    parallel: bool


@dataclass(frozen=True)
class _Ctx:
    loop: _Loop | None
    ret: str | None  # flag set by an early return
    retval: str | tuple[str, ...] | None  # variable(s) that hold the returned value, one per tuple item
    kind: str  # kernel or fn


def _contains(stmts, kinds, stop_at_loops: bool) -> bool:
    for stmt in stmts:
        if isinstance(stmt, kinds):
            return True
        if isinstance(stmt, ast.If):
            if _contains(stmt.body, kinds, stop_at_loops) or _contains(stmt.orelse, kinds, stop_at_loops):
                return True
        elif isinstance(stmt, (ast.For, ast.While)):
            if not stop_at_loops and _contains(stmt.body, kinds, stop_at_loops):
                return True
    return False


class _Normalizer:
    def __init__(self):
        self.counter = itertools.count(1)

    def fresh(self, base: str) -> str:
        return f".{base}{next(self.counter)}"

    def function(self, fn: ast.FunctionDef) -> ast.FunctionDef:
        body = list(fn.body)
        # A trailing `return` is the function's natural exit; only earlier ones need a flag.
        tail = body.pop() if body and isinstance(body[-1], ast.Return) else None
        needs_flag = _contains(body, (ast.Return,), stop_at_loops=False)
        ret = self.fresh("ret") if needs_flag else None
        retval = self.fresh("retval") if needs_flag and fn.returns is not None else None
        if retval and isinstance(fn.returns, ast.TupleExpr):  # one SSA variable per item, so branches merge
            retval = tuple(f"{retval}_{k}" for k in range(len(fn.returns.elts)))
        ctx = _Ctx(None, ret, retval, fn.kind)
        new_body = []
        if ret:
            new_body.append(_assign(ret, False, fn.span))
        if retval:
            new_body.append(_placeholder(retval, fn))
        if tail is not None and ret and tail.value is not None:
            # The trailing value is computed where the statements before it ran (inside their
            # guards), so that it sees the names they defined.
            body.append(_assign_expr(retval, tail.value, tail.span))
            tail = ast.Return(tail.span, _ref(retval, tail.span))
        new_body += self.block(body, ctx)
        if tail is not None:
            new_body.append(tail)
        elif retval and _always_returns(body):
            new_body.append(ast.Return(fn.span, _ref(retval, fn.span)))
        elif retval:
            raise error(f"helper '{fn.name}' can reach its end without returning a value", fn.name_span,
                        rule="O3", hint="end the function with a return statement")
        if tail is None and retval is None and fn.returns is not None and fn.kind == "fn":
            raise error(f"helper '{fn.name}' must end with a return statement", fn.name_span, rule="O3")
        return replace(fn, body=tuple(new_body))

    def block(self, stmts, ctx: _Ctx) -> list[ast.Stmt]:
        out: list[ast.Stmt] = []
        for index, stmt in enumerate(stmts):
            new, may_exit = self.stmt(stmt, ctx)
            out += new
            rest = stmts[index + 1:]
            if may_exit and rest:
                flags = self._flags(ctx)
                out.append(_guard(self.block(rest, ctx), flags, rest[0].span))
                break
        return out

    def _flags(self, ctx: _Ctx) -> list[str]:
        flags = [ctx.ret] if ctx.ret else []
        if ctx.loop:
            flags += [f for f in (ctx.loop.brk, ctx.loop.cont) if f]
        return flags

    def stmt(self, stmt: ast.Stmt, ctx: _Ctx) -> tuple[list[ast.Stmt], bool]:
        if isinstance(stmt, ast.Break):
            if ctx.loop is None:
                raise error("'break' outside a loop", stmt.span, rule="O3")
            if ctx.loop.parallel:
                raise error("'break' is illegal inside I.parallel: points are unordered", stmt.span,
                            rule="P4", hint="use 'continue' to skip this point, or an ordered for/while loop")
            return [_assign(ctx.loop.brk, True, stmt.span)], True
        if isinstance(stmt, ast.Continue):
            if ctx.loop is None:
                raise error("'continue' outside a loop", stmt.span, rule="O3")
            return [_assign(ctx.loop.cont, True, stmt.span)], True
        if isinstance(stmt, ast.Return):
            if ctx.loop is not None and ctx.loop.parallel:
                raise error("'return' is illegal inside I.parallel: it would stop other points", stmt.span,
                            rule="P4", hint="use 'continue' to skip this point")
            if ctx.kind == "kernel" and stmt.value is not None:
                raise error("a kernel returns its result only as its last statement", stmt.span, rule="O3",
                            hint="compute the result, then return it at the end of the kernel")
            out = []
            if stmt.value is not None:
                out.append(_assign_expr(ctx.retval, stmt.value, stmt.span))
            out.append(_assign(ctx.ret, True, stmt.span))
            return out, True
        if isinstance(stmt, ast.If):
            body = self.block(stmt.body, ctx)
            orelse = self.block(stmt.orelse, ctx)
            exits = (ast.Break, ast.Continue, ast.Return)
            may_exit = _contains(stmt.body, exits, True) or _contains(stmt.orelse, exits, True) or (
                ctx.ret is not None and (_contains(stmt.body, (ast.Return,), False)
                                         or _contains(stmt.orelse, (ast.Return,), False)))
            return [replace(stmt, body=tuple(body), orelse=tuple(orelse))], may_exit
        if isinstance(stmt, (ast.For, ast.While)):
            return self.loop(stmt, ctx)
        return [stmt], False

    def loop(self, stmt, ctx: _Ctx) -> tuple[list[ast.Stmt], bool]:
        parallel = isinstance(stmt, ast.For) and is_parallel_loop(stmt)
        has_break = _contains(stmt.body, (ast.Break,), True)
        has_cont = _contains(stmt.body, (ast.Continue,), True)
        has_ret = ctx.ret is not None and _contains(stmt.body, (ast.Return,), False)
        loop = _Loop(self.fresh("brk") if has_break else None, self.fresh("cont") if has_cont else None, parallel)
        inner_ctx = _Ctx(loop, ctx.ret, ctx.retval, ctx.kind)
        body = self.block(list(stmt.body), inner_ctx)
        if loop.cont:
            body = [_assign(loop.cont, False, stmt.span)] + body
        stops = [f for f in (loop.brk, ctx.ret if has_ret else None) if f]
        out: list[ast.Stmt] = []
        if loop.brk:
            out.append(_assign(loop.brk, False, stmt.span))
        if not stops:
            return out + [replace(stmt, body=tuple(body))], False
        span = stmt.span
        if isinstance(stmt, ast.While):
            cond = ast.BoolOp(span, "and", _not_any(stops, span), stmt.cond)
            return out + [ast.While(span, cond, tuple(body))], has_ret
        # An ordered for loop that may stop early becomes a while loop over its domain.
        dom, pos = self.fresh("dom"), self.fresh("pos")
        iterable, ordinal = stmt.iter, None
        if (len(stmt.targets) == 2 and isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name)
                and iterable.func.id == "enumerate" and len(iterable.args) == 1 and not iterable.keywords):
            iterable, ordinal = iterable.args[0], stmt.targets[0]
        name = stmt.targets[-1] if len(stmt.targets) == 1 or ordinal is not None else None
        if name is None:
            raise error("an ordered for loop iterates one domain and binds one name", stmt.span, rule="O2")
        out.append(ast.Assign(span, ast.Name(span, dom), iterable))
        out.append(ast.Assign(span, ast.Name(span, pos), _builtin(".dom_begin", dom, span)))
        step = ast.Assign(span, ast.Name(span, pos), ast.BinOp(span, "+", ast.Name(span, pos),
                                                                _builtin(".dom_step", dom, span)))
        cond = ast.BoolOp(span, "and", _not_any(stops, span),
                          ast.Compare(span, "<", ast.Name(span, pos), _builtin(".dom_end", dom, span)))
        prefix = [ast.Assign(span, name, ast.Name(span, pos))]
        if ordinal is not None:  # enumerate's local ordinal: (i - begin) // step (D6)
            offset = ast.BinOp(span, "-", ast.Name(span, pos), _builtin(".dom_begin", dom, span))
            prefix.append(ast.Assign(span, ordinal, ast.BinOp(span, "//", offset, _builtin(".dom_step", dom, span))))
        body = prefix + body + [step]
        return out + [ast.While(span, cond, tuple(body))], has_ret


def _always_returns(stmts) -> bool:
    """Whether every path through ``stmts`` ends in a ``return`` (loops may run zero times)."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, ast.Return):
        return True
    return isinstance(last, ast.If) and _always_returns(last.body) and _always_returns(last.orelse)


def _placeholder(name: str, fn: ast.FunctionDef) -> ast.Assign:
    """``name = <a value of the declared result type>``, so that the result variable is defined on
    every path (SSA merges need both sides); every path that reaches the end overwrites it."""
    span = fn.span

    def value(annotation):
        if isinstance(annotation, ast.TupleExpr):
            return ast.TupleExpr(span, tuple(value(item) for item in annotation.elts))
        if isinstance(annotation, ast.Subscript):
            raise error(f"helper '{fn.name}' returns a tensor, so it can return only at its end", annotation.span,
                        rule="O3", hint="compute the result on every path, then return it once at the end")
        dtype = annotation.id if isinstance(annotation, ast.Name) else getattr(annotation, "attr", None)
        cast = ast.Attribute(span, ast.Name(span, "I"), "cast")
        return ast.Call(span, cast, (ast.Constant(span, False if dtype == "bool" else 0), annotation), ())

    return _assign_expr(name, value(fn.returns), span)


def _builtin(name: str, arg: str, span) -> ast.Call:
    return ast.Call(span, ast.Name(span, name), (ast.Name(span, arg),), ())


def _assign(name: str, value: bool, span) -> ast.Assign:
    return ast.Assign(span, ast.Name(span, name), ast.Constant(span, value))


def _ref(name: str | tuple[str, ...], span) -> ast.Expr:
    if isinstance(name, tuple):
        return ast.TupleExpr(span, tuple(ast.Name(span, n) for n in name))
    return ast.Name(span, name)


def _assign_expr(name: str | tuple[str, ...], value: ast.Expr, span) -> ast.Assign:
    return ast.Assign(span, _ref(name, span), value)


def _not_any(flags: list[str], span) -> ast.Expr:
    expr = ast.UnaryOp(span, "not", ast.Name(span, flags[0]))
    for flag in flags[1:]:
        expr = ast.BoolOp(span, "and", expr, ast.UnaryOp(span, "not", ast.Name(span, flag)))
    return expr


def _guard(stmts, flags: list[str], span) -> ast.If:
    return ast.If(span, _not_any(flags, span), tuple(stmts), ())


def normalize_function(fn: ast.FunctionDef) -> ast.FunctionDef:
    return _Normalizer().function(fn)
