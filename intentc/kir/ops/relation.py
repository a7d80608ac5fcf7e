"""Relation KIR ops: domains, extents, broadcasts, reshapes and views, and the shape checks.

A domain is an ordered 1-D set of index coordinates (D1); ``subregion`` and ``view`` select
part of a domain or a tensor (D4, D5); ``broadcast``, ``reshape``, ``permute`` and ``join``
relate tensor shapes (S2, S4, S5, S6); ``bcast_extent``, ``assert_eq`` and ``assert_true``
hold the run-time checks the shapes need (S1, S3).
"""
from __future__ import annotations

from intentc.kir.core import Op
from intentc.kir.ops.definition import (BOOL_T, CHECK, DOMAIN_T, INDEX_T, INT_A, STR_A, TENSOR, VALUE, Attr, OpDef,
                                        Operand, declare, list_of, many, need, one_of, optional)
from intentc.kir.types import DTYPES, INDEX, TensorType, element_dtype

VIEW_AXES = ("fix", "range")
CHECK_CODES = ("bounds", "domain", "shape", "sanitizer")  # the status an assert_true fails with


def _check_axis(op: Op) -> None:
    need(0 <= op.attrs["axis"] < op.operands[0].type.rank, op, "axis out of range")


def _check_broadcast(op: Op) -> None:
    """broadcast(x, e0..e{r-1}) {map}: result[i] = x[j] where source axis k aligns to result
    axis map[k]; a source axis of extent 1 repeats (S2). Scalars broadcast with an empty map."""
    src, res = op.operands[0].type, op.result.type
    need(len(op.operands) == 1 + res.rank, op, "needs one extent operand per result axis")
    mapping = op.attrs["map"]
    src_rank = src.rank if isinstance(src, TensorType) else 0
    need(len(mapping) == src_rank, op, "map needs one entry per source axis")
    need(all(0 <= m < res.rank for m in mapping) and list(mapping) == sorted(set(mapping)), op,
         "map must be increasing result axes")
    need(element_dtype(src) == res.dtype, op, "broadcast keeps the dtype")


def _check_indices(op: Op) -> None:
    res = op.result.type
    need(res.dtype == INDEX and res.rank == 1, op, "result is index[len]")


def _check_reshape(op: Op) -> None:
    src, res = op.operands[0].type, op.result.type
    need(src.dtype == res.dtype, op, "reshape never changes the dtype (S4)")
    need(len(op.operands) == 1 + res.rank, op, "needs one index extent per result axis")


def _check_permute(op: Op) -> None:
    src, res, perm = op.operands[0].type, op.result.type, op.attrs["perm"]
    need(sorted(perm) == list(range(src.rank)), op, "perm is a permutation")
    need(res == TensorType(src.dtype, tuple(src.shape[p] for p in perm)), op, "result shape follows perm")


def _check_join(op: Op) -> None:
    a, b = (v.type for v in op.operands)
    need(a.dtype == b.dtype and a.rank == b.rank, op, "joins two tensors of one dtype and rank")
    need(op.result.type.rank == a.rank + 1 and op.result.type.shape[-1] == 2, op, "adds a trailing axis of 2")


def _check_view(op: Op) -> None:
    src, axes = op.operands[0].type, op.attrs["axes"]
    need(len(axes) == src.rank, op, "one entry of axes per source axis")
    need(len(op.operands) == 1 + sum(1 if a == "fix" else 2 for a in axes), op, "operands follow axes")
    need(op.result.type.rank == sum(1 for a in axes if a == "range"), op, "ranges are kept, fixes dropped")


def _check_assert_true(op: Op) -> None:
    need(all(v.type in (INDEX, DTYPES["f64"]) for v in op.operands[1:]), op,
         "message arguments are index or f64 values")


def _domain_query(name: str) -> OpDef:
    return OpDef(name, "relation", operands=(Operand("domain", DOMAIN_T),), results=(Operand("result", INDEX_T),))


_MESSAGE = {"what": Attr(STR_A), "rule": Attr(STR_A)}  # the check's message and the spec rule it enforces

OPS = declare(
    # domain(begin, end, step): [begin, end) by step; a step <= 0 fails (D1)
    OpDef("domain", "relation", operands=(Operand("begin", INDEX_T), Operand("end", INDEX_T), Operand("step", INDEX_T)),
          results=(Operand("result", DOMAIN_T),), attrs={"axis_of": optional(INT_A)}, effects=CHECK),
    OpDef("dim", "relation", operands=(Operand("source", TENSOR),), results=(Operand("result", INDEX_T),),
          attrs={"axis": Attr(INT_A)}, check=_check_axis),
    # present(x): whether the optional tensor parameter x was given (optional_params.py)
    OpDef("present", "relation", operands=(Operand("source", TENSOR),), results=(Operand("result", BOOL_T),)),
    OpDef("axis", "relation", operands=(Operand("source", TENSOR),), results=(Operand("result", DOMAIN_T),),
          attrs={"axis": Attr(INT_A)}, check=_check_axis),
    *(_domain_query(name) for name in ("dom_begin", "dom_end", "dom_step", "dom_len")),
    # subregion(d, a, b): the members of d in [a, b); requires d.begin <= a <= b <= d.end (D4, D5)
    OpDef("subregion", "relation", operands=(Operand("source", DOMAIN_T), Operand("begin", INDEX_T),
                                             Operand("end", INDEX_T)),
          results=(Operand("result", DOMAIN_T),), effects=CHECK),
    # indices(d): the 1-D index tensor of d's source coordinates, in order (C1, D6)
    OpDef("indices", "relation", operands=(Operand("domain", DOMAIN_T),), results=(Operand("result", TENSOR),),
          check=_check_indices),
    # reshape(x, e0..ek): the same elements in logical row-major order with new extents (S4);
    # split names the operand of a scaled contraction whose blocks the reshape exposes (T4)
    OpDef("reshape", "relation", operands=(Operand("source", TENSOR), many("extents", INDEX_T)),
          results=(Operand("result", TENSOR),), attrs={"split": optional(STR_A)}, check=_check_reshape),
    # permute(x) {perm}: result axis k is source axis perm[k] (S5)
    OpDef("permute", "relation", operands=(Operand("source", TENSOR),), results=(Operand("result", TENSOR),),
          attrs={"perm": Attr(list_of(INT_A))}, check=_check_permute),
    # join(a, b): shape(a) + [2]; result[..., 0] = a, result[..., 1] = b (S6)
    OpDef("join", "relation", operands=(Operand("a", TENSOR), Operand("b", TENSOR)),
          results=(Operand("result", TENSOR),), check=_check_join),
    # view(x, ...) {axes}: per source axis either "fix" (one index, axis dropped) or "range"
    # (begin and end, axis kept and counted from 0); sema emits its bounds checks as assert_true
    OpDef("view", "relation", operands=(Operand("source", TENSOR), many("bounds", INDEX_T)),
          results=(Operand("result", TENSOR),), attrs={"axes": Attr(list_of(one_of("a view axis", VIEW_AXES)))},
          check=_check_view),
    # broadcast holds no check: bcast_extent does (S3)
    OpDef("broadcast", "relation", operands=(Operand("source", VALUE), many("extents", INDEX_T)),
          results=(Operand("result", TENSOR),), attrs={"map": Attr(list_of(INT_A))}, check=_check_broadcast),
    OpDef("bcast_extent", "relation", operands=(Operand("a", INDEX_T), Operand("b", INDEX_T)),
          results=(Operand("result", INDEX_T),), attrs={"what": Attr(STR_A)}, effects=CHECK),
    OpDef("assert_eq", "relation", operands=(Operand("a", INDEX_T), Operand("b", INDEX_T)), attrs=_MESSAGE,
          effects=CHECK),
    # assert_true(cond, args...) {what, rule, code?}: fail unless cond; ``what`` formats the args
    # (printf: %lld/%llu for index values, %g and the like for f64 ones); ``code`` names the
    # status (bounds, domain, sanitizer; without it: shape)
    OpDef("assert_true", "relation", operands=(Operand("cond", BOOL_T), many("args")),
          attrs={**_MESSAGE, "code": optional(one_of("a status", CHECK_CODES))}, effects=CHECK,
          check=_check_assert_true),
)
