"""How sparse contractions (T5, ``sparse_contract``) are lowered: only stored values are
multiplied, so the work is proportional to the stored entries, not to M * K * N.

1. The metadata is checked first, in the interpreter's order (``kir/ops/scaled.py``'s ``CHECKS``):
   each check is a blocked fold (the same blocks for every thread count) that finds the
   first violation, then one ``assert_true`` names it. Nothing is written before.
2. At the top of a kernel ``b`` is packed, converted to the accumulator dtype, into
   panels of ``NR`` columns ``[N/NR][K][NR]`` (zero padded), so every stored value
   multiplies ``NR`` consecutive floats of one row of ``b``.
   - 2:4: the stored values and their columns (``4q + position``, decoded from the
     metadata) are packed in panels of ``MR`` rows ``[M/MR][K/2][MR]``; a ``sparse24_tiles``
     op computes each ``MR x NR`` tile of the result in registers: for every stored value
     of each row, one vector multiply and add per vector of the panel row it selects.
   - CSR: a ``csr_tiles`` op walks each row's stored values in storage order, one vector
     multiply and add per vector of the selected panel row.
   Products and sums are rounded one by one (``mul_add``), as the interpreter does.
   Tiles on the edges compute each element alone with the same operations in the same
   order, so every element is accumulated in the interpreter's order by one task: the
   result does not depend on the thread count.
3. Inside ``I.parallel`` each result element is one ordered ``fold`` over its row's
   stored values.
"""
from __future__ import annotations

from intentc.kir.core import Block, Op, Value
from intentc.kir.ops.scaled import CHECKS
from intentc.kir.types import BOOL, DTYPES, INDEX
from intentc.lower.kir_builder import KirBuilder

I32 = DTYPES["i32"]
U8 = DTYPES["u8"]
VECTOR_BYTES = 64
MR, VECTORS = 4, 4  # 2:4 register tile: MR rows x VECTORS vectors
CSR_VECTORS = 4
MC, NC = 64, 256  # 2:4 blocks of the result per task
CSR_ROWS = 16  # rows per CSR task


def lanes_of(acc) -> int:
    return max(1, VECTOR_BYTES // acc.itemsize)


class SparseExpansion:
    """Materialises ``sparse_contract`` ops (T5) with the kernel's builder."""

    def __init__(self, b: KirBuilder):
        self.b = b

    def materialize_sparse_contract(self, op: Op, replace: dict) -> None:
        acc = DTYPES[op.attrs["acc"]]
        b = op.operands[-1]
        k, n = self.b.extent(b, 0), self.b.extent(b, 1)
        if op.attrs["format"] == "2:4":
            values, meta = op.operands[:2]
            m, half = self.b.extent(values, 0), self.b.extent(values, 1)
            groups = self.b.extent(meta, 1)
            self.check_two_four(op, meta, m, groups)
            result = self.two_four_tiled(op, acc, m, half, k, n) if self.b.depth == 0 \
                else self.sparse_folds(op, acc, m, n, half, self.two_four_term(op, acc))
        else:
            offsets, columns, values = op.operands[:3]
            m = self.b.ix("sub", self.b.extent(offsets, 0), self.b.c(1))
            self.check_csr(op, offsets, columns, m, k)
            result = self.csr_tiled(op, acc, m, k, n) if self.b.depth == 0 else self.csr_folds(op, acc, m, n)
        if result is not None:
            replace[id(op.result)] = result

    # -- checks ----------------------------------------------------------------------------------
    def first_where(self, count: Value, bad_at, span) -> Value:
        """The smallest t in [0, count) with bad_at(t), else count (a blocked min fold)."""
        x, y = Value(INDEX, "x"), Value(INDEX, "y")
        combine = Block([x, y], [Op("min", [x, y], [INDEX])])
        combine.ops.append(Op("yield", [combine.ops[0].result]))

        def element(t):
            return [self.b.emit("select", [bad_at(t), t, count], [INDEX]).result]

        if self.b.depth == 0:
            return self.b.blocked_fold(count, [count], element, combine, span)[0]
        return self.b.fold(count, [count], element, combine, span)[0]

    def fail_unless(self, ok: Value, check: str, args, span) -> None:
        """assert_true(ok) with the message of ``check``; ``args()`` builds the message's
        values inside a branch taken only when the check fails (they may read at the
        failing position)."""
        code, what = CHECKS[check]

        def failing():
            return list(args())

        def fine():
            return [self.b.c(0)] * what.count("%lld")

        branch = Op("if", [ok], [INDEX] * what.count("%lld"), None,
                    [self.b.with_block([], fine), self.b.with_block([], failing)])
        self.b.out.append(branch)
        self.b.emit("assert_true", [ok] + list(branch.results), span=span, attrs={"what": what, "rule": "T5",
                                                                                "code": code})

    def lt(self, a: Value, b: Value) -> Value:
        return self.b.emit("cmp", [a, b], [BOOL], {"pred": "lt"}).result

    def as_index(self, v: Value) -> Value:
        return v if v.type == INDEX else self.b.emit("cast", [v], [INDEX]).result

    def meta_positions(self, v: Value) -> tuple[Value, Value, Value]:
        """(first, second, valid) of a 2:4 metadata byte as index values."""
        v = self.as_index(v)
        first = self.b.ix("and", v, self.b.c(3))
        second = self.b.ix("and", self.b.ix("shr", v, self.b.c(2)), self.b.c(3))
        high = self.b.ix("shr", v, self.b.c(4))
        zero = self.b.emit("cmp", [high, self.b.c(0)], [BOOL], {"pred": "eq"}).result
        valid = self.b.emit("and", [zero, self.lt(first, second)], [BOOL]).result
        return first, second, valid

    def check_two_four(self, op: Op, meta: Value, m: Value, groups: Value) -> None:
        count = self.b.ix("mul", m, groups)

        def bad_at(t):
            r, q = self.b.unravel(t, [m, groups])
            valid = self.meta_positions(self.b.element(meta, [r, q], op.span, proven=True))[2]
            return self.b.emit("not", [valid], [BOOL]).result

        first = self.first_where(count, bad_at, op.span)
        ok = self.b.emit("cmp", [first, count], [BOOL], {"pred": "eq"}).result

        def args():
            r, q = self.b.unravel(first, [m, groups])
            return [r, q, self.as_index(self.b.element(meta, [r, q], op.span, proven=True))]

        self.fail_unless(ok, "meta24", args, op.span)

    def check_csr(self, op: Op, offsets: Value, columns: Value, m: Value, k: Value) -> None:
        def off(i):
            return self.as_index(self.b.element(offsets, [i], op.span, proven=True))

        zero = self.b.c(0)
        start = off(zero)
        self.fail_unless(self.b.emit("cmp", [start, zero], [BOOL], {"pred": "eq"}).result, "csr_first",
                         lambda: [start], op.span)
        down = self.first_where(m, lambda r: self.lt(off(self.b.ix("add", r, self.b.c(1))), off(r)), op.span)
        self.fail_unless(self.b.emit("cmp", [down, m], [BOOL], {"pred": "eq"}).result, "csr_order",
                         lambda: [down, off(down), off(self.b.ix("add", down, self.b.c(1)))], op.span)
        nnz = self.b.extent(columns, 0)
        end = off(m)
        self.fail_unless(self.b.emit("cmp", [end, nnz], [BOOL], {"pred": "le"}).result, "csr_end",
                         lambda: [end, nnz], op.span)

        def column(p):
            return self.as_index(self.b.element(columns, [p], op.span, proven=True))

        def outside(p):
            col = column(p)
            below = self.lt(col, zero)
            above = self.b.emit("cmp", [col, k], [BOOL], {"pred": "ge"}).result
            return self.b.emit("or", [below, above], [BOOL]).result

        bad = self.first_where(end, outside, op.span)
        self.fail_unless(self.b.emit("cmp", [bad, end], [BOOL], {"pred": "eq"}).result, "csr_column",
                         lambda: [bad, column(bad), k], op.span)

    # -- inside I.parallel: folds -------------------------------------------------------------------
    def sparse_folds(self, op: Op, acc, m, n, count_of, term) -> Value | None:
        """out[i, j] = ordered fold of term(i, j, t) over t in [0, count_of(i))."""
        out = self.b.result_buffer(op.result, acc, [m, n], op.span)
        if out is None:
            return None
        x, y = Value(acc, "x"), Value(acc, "y")
        combine = Block([x, y], [Op("add", [x, y], [acc])])
        combine.ops.append(Op("yield", [combine.ops[0].result]))
        zero = self.b.emit("const", [], [acc], {"value": 0.0}).result

        def body(points):
            i, j = points
            count = count_of(i) if callable(count_of) else count_of
            (value,) = self.b.fold(count, [zero], lambda t: [term(i, j, t)], combine, op.span, ordered=True)
            self.b.out.append(Op("store", [out, i, j, value], attrs={"inbounds": [True, True]}))

        self.b.parallel([m, n], body)
        return out

    def operand(self, x: Value, index: list[Value], acc, span) -> Value:
        value = self.b.element(x, index, span, proven=True)
        return value if value.type == acc else self.b.emit("cast", [value], [acc]).result

    def two_four_term(self, op: Op, acc):
        values, meta, b = op.operands

        def term(i, j, t):
            q, half = self.b.ix("floordiv", t, self.b.c(2)), self.b.ix("and", t, self.b.c(1))
            first, second, _ = self.meta_positions(self.b.element(meta, [i, q], op.span, proven=True))
            is_second = self.b.emit("cmp", [half, self.b.c(1)], [BOOL], {"pred": "eq"}).result
            position = self.b.emit("select", [is_second, second, first], [INDEX]).result
            col = self.b.ix("add", self.b.ix("mul", q, self.b.c(4)), position)
            return self.b.emit("mul", [self.operand(values, [i, t], acc, op.span),
                                     self.operand(b, [col, j], acc, op.span)], [acc]).result
        return term

    def csr_folds(self, op: Op, acc, m, n) -> Value | None:
        offsets, columns, values, b = op.operands

        def off(i):
            return self.as_index(self.b.element(offsets, [i], op.span, proven=True))

        def count_of(i):
            return self.b.ix("sub", off(self.b.ix("add", i, self.b.c(1))), off(i))

        def term(i, j, t):
            p = self.b.ix("add", off(i), t)
            col = self.as_index(self.b.element(columns, [p], op.span, proven=True))
            return self.b.emit("mul", [self.operand(values, [p], acc, op.span),
                                     self.operand(b, [col, j], acc, op.span)], [acc]).result

        return self.sparse_folds(op, acc, m, n, count_of, term)

    # -- at the top of a kernel: packed panels and register tiles -------------------------------------
    def pack_b(self, b: Value, acc, k: Value, n: Value, nr: int, span) -> tuple[Value, Value]:
        """b as [panels][K][NR] panels of the accumulator dtype, zero past N."""
        panels = self.b.ceil_div(n, self.b.c(nr))
        bp = self.b.buffer(acc, [self.b.product([panels, k, self.b.c(nr)])], span)
        zero = self.b.emit("const", [], [acc], {"value": 0.0}).result
        last = self.b.ix("sub", n, self.b.c(1))

        def body(points):
            p, kk = points
            first = self.b.ix("mul", p, self.b.c(nr))
            base = self.b.ix("mul", self.b.ix("add", self.b.ix("mul", p, k), kk), self.b.c(nr))

            def lane(w, edge: bool):
                col = self.b.ix("add", first, w)
                value = self.operand(b, [kk, self.b.ix("min", col, last) if edge else col], acc, span)
                if edge:
                    value = self.b.emit("select", [self.lt(col, n), value, zero], [acc]).result
                self.b.out.append(Op("store", [bp, self.b.ix("add", base, w), value], attrs={"inbounds": [True]}))

            def panel(edge: bool):
                self.b.loop(self.b.c(nr), lambda w: lane(w, edge))
                return []

            full = self.b.emit("cmp", [self.b.ix("add", first, self.b.c(nr)), n], [BOOL], {"pred": "le"}).result
            self.b.out.append(Op("if", [full], [], None, [self.b.with_block([], lambda: panel(False)),
                                                        self.b.with_block([], lambda: panel(True))]))

        self.b.parallel([panels, k], body)
        return bp, panels

    def two_four_tiled(self, op: Op, acc, m, half, k, n) -> Value | None:
        values, meta, b = op.operands
        out = self.b.result_buffer(op.result, acc, [m, n], op.span)
        if out is None:
            return None
        lanes = lanes_of(acc)
        nr = VECTORS * lanes
        bp, _ = self.pack_b(b, acc, k, n, nr, op.span)
        # Stored values and their columns in panels of MR rows: [M/MR][K/2][MR].
        rows = self.b.ceil_div(m, self.b.c(MR))
        size = self.b.product([rows, half, self.b.c(MR)])
        vals = self.b.buffer(acc, [size], op.span)
        cols = self.b.buffer(I32, [size], op.span)
        zero = self.b.emit("const", [], [acc], {"value": 0.0}).result
        last = self.b.ix("sub", m, self.b.c(1))

        def body(points):
            pa, w = points
            row = self.b.ix("add", self.b.ix("mul", pa, self.b.c(MR)), w)
            inside = self.lt(row, m)
            safe = self.b.ix("min", row, last)

            def element(t):
                q, second = self.b.ix("floordiv", t, self.b.c(2)), self.b.ix("and", t, self.b.c(1))
                code = self.as_index(self.b.element(meta, [safe, q], op.span, proven=True))
                position = self.b.ix("and", self.b.ix("shr", code, self.b.ix("mul", second, self.b.c(2))), self.b.c(3))
                col = self.b.ix("add", self.b.ix("mul", q, self.b.c(4)), position)
                at = self.b.ix("add", self.b.ix("mul", self.b.ix("add", self.b.ix("mul", pa, half), t), self.b.c(MR)), w)
                value = self.b.emit("select", [inside, self.operand(values, [safe, t], acc, op.span), zero],
                                  [acc]).result
                col = self.b.emit("select", [inside, col, self.b.c(0)], [INDEX]).result
                self.b.out.append(Op("store", [vals, at, value], attrs={"inbounds": [True]}))
                self.b.out.append(Op("store", [cols, at, self.b.emit("cast", [col], [I32]).result],
                                   attrs={"inbounds": [True]}))

            self.b.loop(half, element)

        self.b.parallel([rows, self.b.c(MR)], body)
        self.b.out.append(Op("sparse24_tiles", [vals, cols, bp, out, m, n, k, half], [], {
            "mr": MR, "vectors": VECTORS, "lanes": lanes, "mc": MC, "nc": NC}, span=op.span))
        return out

    def csr_tiled(self, op: Op, acc, m, k, n) -> Value | None:
        offsets, columns, values, b = op.operands
        out = self.b.result_buffer(op.result, acc, [m, n], op.span)
        if out is None:
            return None
        lanes = lanes_of(acc)
        nr = CSR_VECTORS * lanes
        bp, _ = self.pack_b(b, acc, k, n, nr, op.span)
        mem = [self.in_memory_1d(x, op.span) for x in (offsets, columns, values)]
        self.b.out.append(Op("csr_tiles", mem + [bp, out, m, n, k], [], {
            "vectors": CSR_VECTORS, "lanes": lanes, "rows": CSR_ROWS}, span=op.span))
        return out

    def in_memory_1d(self, x: Value, span) -> Value:
        if id(x) in self.b.params:
            return x
        extent = self.b.extent(x, 0)
        buf = self.b.buffer(x.type.dtype, [extent], span)
        self.b.parallel([extent], lambda p: self.b.out.append(Op(
            "store", [buf, p[0], self.b.element(x, [p[0]], span, proven=True)], attrs={"inbounds": [True]})))
        return buf
