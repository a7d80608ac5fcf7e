"""Row-accumulation schedule: reductions whose kept axis is the innermost one.

A reduction over the leading axes of a row-major tensor (``I.sum(x, axis=(0, 1))`` of a
``[B, T, C]`` tensor, ``I.contract("ij,i->j", A, v)``, ``"ji,j->i"``) folded one result
element at a time walks each column with a stride of a whole row and unravels every
reduction ordinal into coordinates with a division and a modulo. This schedule
accumulates whole rows instead, the way an ``axpy`` loop does: the result's single axis
(the operand's innermost) is cut into blocks of ``ROW_BLOCK_BYTES`` of accumulators,
one block per task; each task sets its accumulators to the identity, then for every row,
in reduction order, combines the row's elements of its block into them, four rows per
pass over the block. The inner loop
runs over contiguous elements and independent accumulators (it vectorises without any
regrouping), the row coordinates are computed once per row, and the block stays in L1.

Every result element still combines its items one at a time in reduction order, starting
from the identity — the order of the sequential fold — so the values are those of the
plain schedule (bit for bit), for any combine and any number of threads: block
boundaries depend on the extent only.
"""
from __future__ import annotations

from typing import Callable

from intentc.kir.core import Block, Value
from intentc.lower.kir_builder import KirBuilder

ROW_BLOCK_BYTES = 16384  # accumulators of one task: they stay in L1 while the rows stream by
ROWS_AT_ONCE = 4  # rows combined per pass over a block: four streams in flight, a quarter of
# the accumulator loads and stores (and no store-to-load stalls when a row and the block
# happen to be 4 KiB apart)


def accumulate_rows(b: KirBuilder, rows: Value, width: Value, itemsize: int, identity: list[Value],
                    row_items: Callable[[Value], Callable[[Value], list[Value]]], combine: Block,
                    targets: list[tuple[Value, Callable[[Value], list[Value]]]]) -> None:
    """For j in [0, width): ``targets[i]`` buffer at ``index(j)`` = the fold over rows r in
    [0, rows), in order, of ``row_items(r)(j)[i]`` with ``combine``, from ``identity``.
    ``row_items(r)`` is called before the loop over the row's elements: what depends on the
    row only (its coordinates) is computed once per row."""
    block = b.c(max(1, ROW_BLOCK_BYTES // max(1, itemsize)))
    blocks = b.ceil_div(width, block)
    groups = b.ix("floordiv", rows, b.c(ROWS_AT_ONCE))
    done = b.ix("mul", groups, b.c(ROWS_AT_ONCE))

    def task(points):
        start = b.ix("mul", points[0], block)
        length = b.ix("min", block, b.ix("sub", width, start))

        def column(t):
            return b.ix("add", start, t)

        def clear(t):
            j = column(t)
            for (buf, index), value in zip(targets, identity):
                b.put(buf, index(j), value)

        def rows_from(first: Value, count: int):
            at_rows = [row_items(first if k == 0 else b.ix("add", first, b.c(k))) for k in range(count)]

            def update(t):
                j = column(t)
                accs = [b.get(buf, index(j)) for buf, index in targets]
                for at_row in at_rows:  # one row after the other: the sequential order
                    accs = b.apply(combine, accs, at_row(j))
                for (buf, index), value in zip(targets, accs):
                    b.put(buf, index(j), value)
            b.parallel([length], lambda points: update(points[0]))

        b.parallel([length], lambda points: clear(points[0]))
        b.loop(groups, lambda g: rows_from(b.ix("mul", g, b.c(ROWS_AT_ONCE)), ROWS_AT_ONCE))
        b.loop(b.ix("sub", rows, done), lambda r: rows_from(b.ix("add", done, r), 1))

    b.parallel([blocks], task, grain=1)


def reduce_rows(b: KirBuilder, inputs: list[Value], identity: list[Value], axes: list[int], extents: list[Value],
                buffers: list[Value | None], keepdims: bool, combine: Block, span) -> bool:
    """A tensor-valued ``reduce`` at the top of a kernel whose one kept axis is the innermost
    one, scheduled by rows; False (nothing emitted) for any other reduction."""
    rank = len(extents)
    if b.depth != 0 or not axes or [a for a in range(rank) if a not in axes] != [rank - 1]:
        return False
    width = extents[rank - 1]
    reduced = [extents[a] for a in axes]
    targets = []
    for buf, x in zip(buffers, inputs):
        if buf is None:  # an unused component still carries the combine's state
            buf = b.buffer(x.type.dtype, [width], span)
            targets.append((buf, lambda j: [j]))
        elif keepdims:
            targets.append((buf, lambda j: [b.c(0)] * (rank - 1) + [j]))
        else:
            targets.append((buf, lambda j: [j]))

    def row_items(r):
        row = dict(zip(axes, b.unravel(r, reduced)))

        def items(j):
            coords = dict(row)
            coords[rank - 1] = j
            point = [coords[a] for a in range(rank)]
            return [b.element(x, point, span, proven=True) for x in inputs]
        return items

    accumulate_rows(b, b.product(reduced), width, max(x.type.dtype.itemsize for x in inputs), identity, row_items,
                    combine, targets)
    return True


def contract_rows(b: KirBuilder, op, spec, acc, extent: dict, combine: Block) -> Value | None:
    """A contraction at the top of a kernel with one result letter that is the innermost
    axis of each operand naming it (``"ij,i->j"``, ``"ji,j->i"``, ``"i,ij->j"``,
    ``"btc,btc->c"``, ``"pqn,pq->n"``), scheduled by rows:
    ``result[j] += acc(a[r, j]) * acc(b[r, j])`` for each reduction point r in k order.
    None (nothing emitted) for any other contraction."""
    if b.depth != 0 or len(spec.out) != 1:
        return None
    (free,) = spec.out
    a, v = op.operands
    if any(free in letters and letters[-1] != free for letters in (spec.a, spec.b)):
        return None
    if b.used is not None and id(op.result) not in b.used and id(op.result) not in b.destination:
        return None
    reduced = spec.reduced  # k order: as the first operand names them
    result = b.result_buffer(op.result, acc, [extent[free]], op.span)
    if result is None:
        return None
    counts = [extent[c] for c in reduced]

    def row_items(r):
        row = dict(zip(reduced, b.unravel(r, counts)))

        def items(j):
            coords = dict(row)
            coords[free] = j
            x = b.as_dtype(b.element(a, [coords[c] for c in spec.a], op.span, proven=True), acc)
            y = b.as_dtype(b.element(v, [coords[c] for c in spec.b], op.span, proven=True), acc)
            return [b.emit("mul", [x, y], [acc]).result]
        return items

    accumulate_rows(b, b.product(counts), extent[free], acc.itemsize, [b.scalar(acc, 0)], row_items, combine,
                    [(result, lambda j: [j])])
    return result
