"""Indexing and tensor relations: subregions, views, reshape, permute, transpose, join.

- ``d[a:b]`` is the subregion of a domain (D4), checked and never clamped (D5); a
  strided selection is not a subregion (D7);
- ``x[r, a:b, :]`` is a view: fixed axes dropped, ranges kept and counted from 0, every
  bound checked at run time (D5); strided views do not exist (D7);
- ``I.reshape`` keeps the elements in logical row-major order (S4, C4), ``I.permute`` /
  ``I.transpose`` reorder axes (S5, C4), ``I.join`` pairs two tensors of one shape along
  a new last axis of extent 2 (S6);
- ``x.axis(k)`` is the domain of axis ``k``; ``x.reshape`` / ``.transpose`` / ``.permute``
  are the method forms.

Every function takes the function builder ``b`` and returns KIR values.
"""
from __future__ import annotations

from intentc.diagnostics import error, quote
from intentc.kir.core import Value
from intentc.kir.types import BOOL, DOMAIN, INDEX, TensorType
from intentc.parse import ast
from intentc.sema.arguments import arity, no_keywords
from intentc.sema.shapes import same_extent, static_shape
from intentc.sema.values import Literal, literal_as
from intentc.sema.windows import note_relation


def subregion(b, domain: Value, node: ast.Subscript) -> Value:
    """``d[a:b]``: the contiguous members of ``d`` in ``[a, b)`` (D4); checked, never clamped (D5)."""
    if len(node.indices) != 1 or not isinstance(node.indices[0], ast.Slice):
        raise error("a domain is sliced with one range `d[begin:end]`", node.span, rule="D4",
                    hint="to pick single coordinates, iterate the domain")
    piece = node.indices[0]
    if piece.step is not None:
        backward = isinstance(piece.step, ast.UnaryOp) and piece.step.op == "-"
        if backward:
            raise error("a reversed selection is not a subregion: a domain runs upward (D1) and its members "
                        "keep their order", piece.step.span, rule="D7",
                        hint="iterate upward and mirror the coordinate: `for k in I.domain(0, n): i = n - 1 - k`; "
                             "or read the tensor reversed, x[::-1] (a gather: an indexed relation)")
        raise error("a strided selection is not a subregion: its members are not contiguous", piece.step.span,
                    rule="D7", hint="use I.domain(begin, end, step) or an index tensor (an indexed relation)")
    begin = b.as_index(b.expr(piece.lower), piece.lower.span) if piece.lower is not None else \
        b.emit("dom_begin", [domain], [INDEX], span=node.span).result
    end = b.as_index(b.expr(piece.upper), piece.upper.span) if piece.upper is not None else \
        b.emit("dom_end", [domain], [INDEX], span=node.span).result
    return b.emit("subregion", [domain, begin, end], [DOMAIN], span=node.span).result


def element_indices(b, node: ast.Subscript, tensor: Value) -> list[Value]:
    rank = tensor.type.rank
    if len(node.indices) != rank:
        given = len(node.indices)
        raise error(f"{quote(node.value.span) or 'this tensor'} has {rank} ax{'is' if rank == 1 else 'es'} "
                    f"but {given} ind{'ex is' if given == 1 else 'ices are'} given", node.span,
                    hint=f"give one index per axis, e.g. [{', '.join('ijklmn'[k % 6] for k in range(rank))}]")
    out = []
    for item in node.indices:
        if isinstance(item, ast.Slice):
            raise error("slices are not supported yet in this position", item.span, rule="D4",
                        hint="index elements one by one inside a loop")
        out.append(b.as_index(b.expr(item), item.span))
    return out


def view(b, tensor: Value, node: ast.Subscript) -> Value:
    """``x[r, a:b, :]``: fixed axes are dropped, ranges kept and counted from 0; every bound
    is checked against the extent at run time, never clamped (D5)."""
    rank = tensor.type.rank
    if len(node.indices) != rank:
        raise error(f"this tensor has {rank} axes but {len(node.indices)} indices are given", node.span,
                    hint="give one index or range per axis; `:` keeps a whole axis")
    shape = b.shape_of(tensor)
    axes, operands, extents = [], [tensor], []
    for axis, item in enumerate(node.indices):
        extent_v = b.index_value(shape[axis], item.span)
        if not isinstance(item, ast.Slice):
            axes.append("fix")
            index = b.as_index(b.expr(item), item.span)
            check_le(b, b.const(0, INDEX, item.span), index, item.span)
            ok = b.emit("cmp", [index, extent_v], [BOOL], {"pred": "lt"}, span=item.span).result
            b.emit("assert_true", [ok, index, extent_v], span=item.span, attrs={
                "what": f"index %lld is out of range [0, %lld) on axis {axis}", "rule": "D5", "code": "bounds"})
            operands.append(index)
            continue
        if item.step is not None:  # reads are gathers (strided.py); this is a write through one
            raise error("cannot write through a slice with a step: it is an indexed relation, not a view (D7)",
                        item.step.span, rule="D7",
                        hint="write the elements in a parallel loop, e.g. `for i in I.parallel(x.axis(0)): "
                             "out[n - 1 - i] = x[i]`, or scatter them: I.scatter(out, idx, vals)")
        begin = b.as_index(b.expr(item.lower), item.lower.span) if item.lower else b.const(0, INDEX)
        if item.upper is not None:
            end = b.as_index(b.expr(item.upper), item.upper.span)
            extent = b.emit("sub", [end, begin], [INDEX], span=item.span).result
        else:
            end = b.index_value(shape[axis], item.span)
            extent = shape[axis] if item.lower is None else \
                b.emit("sub", [end, begin], [INDEX], span=item.span).result
        zero = b.const(0, INDEX, item.span)
        ok = b.emit("and", [b.emit("and", [cmp(b, "le", zero, begin, item.span),
                                                  cmp(b, "le", begin, end, item.span)], [BOOL]).result,
                               cmp(b, "le", end, extent_v, item.span)], [BOOL]).result
        b.emit("assert_true", [ok, begin, end, extent_v], span=item.span, attrs={
            "what": f"slice [%lld, %lld) is not within [0, %lld) on axis {axis}; bounds are never clamped",
            "rule": "D5", "code": "bounds"})
        axes.append("range")
        operands += [begin, end]
        extents.append(extent)
    static = static_shape(extents)
    op = b.emit("view", operands, [TensorType(tensor.type.dtype, static)], {"axes": axes}, span=node.span)
    b.shapes[id(op.result)] = extents
    note_relation(b, op)
    return op.result


def cmp(b, pred: str, x: Value, y: Value, span) -> Value:
    return b.emit("cmp", [x, y], [BOOL], {"pred": pred}, span=span).result


def check_le(b, x: Value, y: Value, span) -> None:
    b.emit("assert_true", [cmp(b, "le", x, y, span), y], span=span, attrs={
        "what": "index %lld is negative", "rule": "D5", "code": "bounds"})


def extent_list(b, node) -> list:
    if not isinstance(node, ast.TupleExpr):
        raise error("extents are given as a list, e.g. [2, -1]", node.span, rule="S4")
    return [(b.expr(e), e.span) for e in node.elts]


def reshape(b, tensor: Value, node, span) -> Value:
    """Same elements in logical row-major order (S4); at most one extent is inferred (-1),
    and only when unique: the other extents must not multiply to 0."""
    items = extent_list(b, node)
    inferred = [k for k, (v, _) in enumerate(items) if isinstance(v, Literal) and v.value == -1]
    if len(inferred) > 1:
        raise error("reshape can infer at most one extent (-1)", span, rule="S4")
    old = b.shape_of(tensor)
    count_old = product(b, old, span)
    known: list = []
    for k, (value, item_span) in enumerate(items):
        if k in inferred:
            continue
        if isinstance(value, Literal):
            known.append(literal_as(value, INDEX, "S4"))
            if known[-1] < 0:
                raise error(f"an extent cannot be negative ({value.value})", item_span, rule="S4")
        else:
            known.append(b.as_index(value, item_span))
    count_known = product(b, known, span)
    new: list = []
    if inferred:
        if isinstance(count_known, int) and count_known == 0:
            raise error("reshape cannot infer an extent when the other extents multiply to 0: "
                        "any value would do, so the result is not unique", span, rule="S4",
                        hint="give every extent explicitly")
        known_v = b.index_value(count_known, span)
        zero = b.const(0, INDEX, span)
        nonzero = b.emit("cmp", [known_v, zero], [BOOL], {"pred": "ne"}, span=span).result
        b.emit("assert_true", [nonzero], span=span, attrs={
            "what": "reshape cannot infer an extent: the other extents multiply to 0 (S4)", "rule": "S4"})
        old_v = b.index_value(count_old, span)
        if isinstance(count_old, int) and isinstance(count_known, int):
            if count_old % count_known:
                raise error(f"cannot reshape {count_old} elements into extents whose product {count_known} "
                            "does not divide it", span, rule="S4")
            inferred_extent = count_old // count_known
        else:
            rem = b.emit("mod", [old_v, known_v], [INDEX], span=span).result
            b.emit("assert_eq", [rem, zero], span=span, attrs={
                "what": "reshape: the element count leaves a remainder %lld (must be %lld) (S4)", "rule": "S4"})
            inferred_extent = b.emit("floordiv", [old_v, known_v], [INDEX], span=span).result
        it = iter(known)
        new = [inferred_extent if k in inferred else next(it) for k in range(len(items))]
    else:
        new = known
        if isinstance(count_old, int) and isinstance(count_known, int):
            if count_old != count_known:
                raise error(f"reshape keeps the element count: {count_old} elements cannot become "
                            f"{count_known}", span, rule="S4")
        else:
            b.emit("assert_eq", [b.index_value(count_known, span), b.index_value(count_old, span)],
                      span=span, attrs={"what": "reshape to %lld elements from %lld elements (S4)", "rule": "S4"})
    static = static_shape(new)
    operands = [tensor] + [b.index_value(e, span) for e in new]
    op = b.emit("reshape", operands, [TensorType(tensor.type.dtype, static)], span=span)
    b.shapes[id(op.result)] = new
    note_relation(b, op)
    return op.result


def product(b, extents, span):
    total = 1
    for extent in extents:
        if isinstance(total, int) and isinstance(extent, int):
            total *= extent
        else:
            total = b.emit("mul", [b.index_value(total, span), b.index_value(extent, span)], [INDEX],
                              span=span).result
    return total


def permute(b, tensor: Value, perm: list[int], span) -> Value:
    rank = tensor.type.rank
    if sorted(perm) != list(range(rank)):
        raise error(f"{list(perm)} is not a permutation of the {rank} axes", span, rule="S5")
    shape = b.shape_of(tensor)
    result = TensorType(tensor.type.dtype, tuple(tensor.type.shape[p] for p in perm))
    op = b.emit("permute", [tensor], [result], {"perm": list(perm)}, span=span)
    b.shapes[id(op.result)] = [shape[p] for p in perm]
    note_relation(b, op)
    return op.result


def join(b, first, second, span) -> Value:
    for v in (first, second):
        if not isinstance(v, Value) or not isinstance(v.type, TensorType):
            raise error("I.join takes two tensors", span, rule="S6")
    if first.type.dtype != second.type.dtype:
        raise error(f"I.join needs one dtype, got {first.type.dtype} and {second.type.dtype}", span, rule="S6")
    if first.type.rank != second.type.rank:
        raise error(f"I.join needs one shape, got ranks {first.type.rank} and {second.type.rank}", span, rule="S6")
    sa, sb = b.shape_of(first), b.shape_of(second)
    for axis, (ea, eb) in enumerate(zip(sa, sb)):
        if same_extent(ea, eb):
            continue
        if isinstance(ea, int) and isinstance(eb, int):
            raise error(f"I.join needs one shape: axis {axis} is {ea} and {eb}", span, rule="S6")
        b.emit("assert_eq", [b.index_value(ea, span), b.index_value(eb, span)], span=span,
                  attrs={"what": f"I.join needs one shape: axis {axis} is %lld and %lld", "rule": "S6"})
    result = TensorType(first.type.dtype, first.type.shape + (2,))
    op = b.emit("join", [first, second], [result], span=span)
    b.shapes[id(op.result)] = list(sa) + [2]
    return op.result


def int_list(node, what: str) -> list[int]:
    if not isinstance(node, ast.TupleExpr) or not all(
            isinstance(e, ast.Constant) and isinstance(e.value, int) for e in node.elts):
        raise error(f"{what} is a list of integer literals", node.span)
    return [e.value for e in node.elts]


def tensor_method(b, tensor: Value, name: str, node: ast.Call):
    if name == "reshape":
        arity(node, 1)
        return reshape(b, tensor, node.args[0], node.span)
    if name == "transpose":
        arity(node, 0)
        return permute(b, tensor, list(reversed(range(tensor.type.rank))), node.span)
    if name == "permute":
        arity(node, 1)
        return permute(b, tensor, int_list(node.args[0], "a permutation"), node.span)
    if name == "axis":
        k = literal_int(node, 0, "axis")
        if not 0 <= k < tensor.type.rank:
            raise error(f"axis {k} is out of range for a tensor with {tensor.type.rank} axes", node.span)
        extent = b.shape_of(tensor)[k]
        zero, one = b.const(0, INDEX, node.span), b.const(1, INDEX, node.span)
        domain = b.emit("domain", [zero, b.index_value(extent, node.span), one], [DOMAIN],
                        span=node.span, attrs={"axis_of": k}).result
        b.axis_extents[id(domain)] = extent  # its points need no check against this axis (windows.py)
        return domain
    raise error(f"tensors have no method '.{name}'", node.func.span,
                hint="available: .axis(k), .reshape([...]), .transpose(), .permute([...])")


def literal_int(node: ast.Call, position: int, what: str) -> int:
    if len(node.args) <= position or not isinstance(node.args[position], ast.Constant) \
            or not isinstance(node.args[position].value, int) or isinstance(node.args[position].value, bool):
        raise error(f"{what} must be an integer literal", node.span)
    return node.args[position].value


def _relation_builtin(b, name: str, node: ast.Call):
    """``I.reshape(x, [...])``, ``I.permute(x, [...])``, ``I.transpose(x)``, ``I.join(a, b)``."""
    no_keywords(name, node)
    args = node.args
    values = [b.expr(a) for a in args[:1]]
    if name == "join":
        arity(node, 2)
        return join(b, values[0], b.expr(args[1]), node.span)
    tensor = values[0] if values else None
    if not isinstance(tensor, Value) or not isinstance(tensor.type, TensorType):
        raise error(f"I.{name} takes a tensor first", node.span)
    if name == "transpose":
        arity(node, 1)
        return permute(b, tensor, list(reversed(range(tensor.type.rank))), node.span)
    arity(node, 2)
    if name == "reshape":
        return reshape(b, tensor, args[1], node.span)
    return permute(b, tensor, int_list(args[1], "a permutation"), node.span)


BUILTINS = {name: _relation_builtin for name in ("reshape", "permute", "transpose", "join")}
