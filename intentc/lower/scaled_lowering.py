"""How microscaled contractions (T4, ``scaled_contract``) are lowered.

At the top of a kernel the contraction becomes one ``scaled_tiles`` op over the codes
themselves — there is no dequantised copy of ``a`` or ``b``:

1. ``expand_tensor_exprs`` decodes the scales into two small f32 buffers (``sa32[M, G]``
   and ``sb32[G, N]``, the latter transposed so that a tile's column scales are one
   vector), and the values of every code of ``a``'s and ``b``'s formats into a table
   ``[2, 256]``. ``a`` and ``b`` are read where they are: parameters (and the ``block=``
   reshape of a ``[M, K]`` or ``[K, N]`` parameter) through their strides; any other
   expression is first copied, as codes, into a buffer.
2. ``to_physical`` lowers ``scaled_tiles`` (``scaled_tiles.py``) to a ``parallel``
   loop over ``MC x NC`` blocks of the result; each ``MR x NR`` register tile walks the
   blocks ``g`` and their elements ``c`` in order: ``NR`` codes of a row of ``b`` are
   loaded as vectors and decoded in registers (``mx_llvm.decode``) and multiplied by the
   column scales, each row's code of ``a`` is looked up in the table and multiplied by
   its row scale, and the tile accumulates the products with fused multiply-adds.
   On the right edge whole rows take the remaining columns one vector at a time; what
   is left (and tiles on strides that are not unit along N) computes each element alone
   with both codes looked up in the table: the same operations in the same order.

Each result element is accumulated by one task, in ``k = g * C + c`` order, with one
fused multiply-add per product (the interpreter's definition), so the result has the
interpreter's bits and is the same for every thread count. Inside ``I.parallel`` (or when an operand cannot be tiled) each result element is
one ``fold`` over ``(g, c)``.
"""
from __future__ import annotations

from intentc.kir.core import Block, Op, Value
from intentc.kir.types import DTYPES
from intentc.lower.kir_builder import KirBuilder

F32 = DTYPES["f32"]
U8 = DTYPES["u8"]
MR, VECTORS, LANES = 8, 2, 16  # register tile: MR rows x VECTORS vectors of LANES f32
MC, NC = 128, 256  # blocks of the result per task (multiples of MR and of VECTORS * LANES)


class ScaledExpansion:
    """Materialises ``scaled_contract`` ops (T4) with the kernel's builder."""

    def __init__(self, b: KirBuilder):
        self.b = b

    def materialize_scaled_contract(self, op: Op, replace: dict) -> None:
        a, sa, b, sb = op.operands
        m, g, c = (self.b.extent(a, axis) for axis in range(3))
        n = self.b.extent(b, 2)
        if self.b.depth == 0:
            result = self.scaled_tiled(op, m, g, c, n)
        else:
            result = self.scaled_folds(op, m, g, c, n)
        if result is not None:
            replace[id(op.result)] = result

    def decoded(self, x: Value, index: list[Value], span) -> Value:
        value = self.b.element(x, index, span, proven=True)
        return self.b.emit("cast", [value], [F32]).result

    def scaled_folds(self, op: Op, m, g, c, n) -> Value | None:
        """One fold over (g, c) per result element (inside I.parallel)."""
        a, sa, b, sb = op.operands
        out = self.b.result_buffer(op.result, F32, [m, n], op.span)
        if out is None:
            return None
        x, y = Value(F32, "x"), Value(F32, "y")
        combine = Block([x, y], [Op("add", [x, y], [F32])])
        combine.ops.append(Op("yield", [combine.ops[0].result]))
        zero = self.b.emit("const", [], [F32], {"value": 0.0}).result

        def body(points):
            i, j = points

            def element(t):
                gg, cc = self.b.unravel(t, [g, c])
                xa = self.b.emit("mul", [self.decoded(a, [i, gg, cc], op.span), self.decoded(sa, [i, gg], op.span)],
                               [F32]).result
                xb = self.b.emit("mul", [self.decoded(b, [gg, cc, j], op.span), self.decoded(sb, [j, gg], op.span)],
                               [F32]).result
                return [self.b.emit("mul", [xa, xb], [F32]).result]

            (value,) = self.b.fold(self.b.ix("mul", g, c), [zero], element, combine, op.span, ordered=True)
            self.b.out.append(Op("store", [out, i, j, value], attrs={"inbounds": [True, True]}))

        self.b.parallel([m, n], body)
        return out

    # -- the tiled form ------------------------------------------------------------------------
    def in_memory(self, x: Value, role: str, span) -> tuple[Value, list]:
        """``x`` as a tensor in memory and, per logical axis, (memory axis, times C?): a
        parameter or buffer as is, the block= split of a 2-D one through its strides, any
        other expression copied (as codes) into a buffer."""
        if id(x) in self.b.params:
            return x, [[axis, 1] for axis in range(3)]
        op = self.b.defs.get(id(x))
        if op is not None and op.name == "reshape" and op.attrs.get("split") == role \
                and id(op.operands[0]) in self.b.params:
            source = op.operands[0]
            return source, ([[0, 1], [1, "C"], [1, 1]] if role == "a" else [[0, "C"], [0, 1], [1, 1]])
        extents = [self.b.extent(x, axis) for axis in range(x.type.rank)]
        buf = self.b.buffer(x.type.dtype, extents, span)

        def body(points):
            value = self.b.element(x, list(points), span, proven=True)
            self.b.out.append(Op("store", [buf] + list(points) + [value], attrs={"inbounds": [True] * len(points)}))

        self.b.parallel(extents, body)
        return buf, [[axis, 1] for axis in range(3)]

    def scaled_tiled(self, op: Op, m, g, c, n) -> Value | None:
        a, sa, b, sb = op.operands
        out = self.b.result_buffer(op.result, F32, [m, n], op.span)
        if out is None:
            return None
        a_mem, a_axes = self.in_memory(a, "a", op.span)
        b_mem, b_axes = self.in_memory(b, "b", op.span)
        sa32 = self.b.buffer(F32, [m, g], op.span)
        sb32 = self.b.buffer(F32, [g, n], op.span)
        self.b.parallel([m, g], lambda p: self.b.out.append(Op(
            "store", [sa32, p[0], p[1], self.decoded(sa, [p[0], p[1]], op.span)], attrs={"inbounds": [True, True]})))
        self.b.parallel([g, n], lambda p: self.b.out.append(Op(
            "store", [sb32, p[0], p[1], self.decoded(sb, [p[1], p[0]], op.span)], attrs={"inbounds": [True, True]})))
        fa, fb = a.type.dtype, b.type.dtype
        table = self.b.buffer(F32, [self.b.c(2), self.b.c(256)], op.span)  # the values of a's and b's codes

        def entry(t):
            byte = self.b.emit("cast", [t], [U8]).result
            for row, dtype in ((0, fa), (1, fb)):
                code = self.b.emit("cast", [byte], [dtype]).result
                self.b.out.append(Op("store", [table, self.b.c(row), t, self.b.emit("cast", [code], [F32]).result],
                                   attrs={"inbounds": [True, True]}))

        self.b.loop(self.b.c(256), entry)
        self.b.out.append(Op("scaled_tiles", [a_mem, sa32, b_mem, sb32, table, out, m, n, g, c], [], {
            "fa": fa.name, "fb": fb.name, "a_axes": a_axes, "b_axes": b_axes,
            "mr": MR, "vectors": VECTORS, "lanes": LANES, "mc": MC, "nc": NC}, span=op.span))
        return out
