"""NVPTX code of a contraction's tile launch (``gpu_contract.py`` says what it computes and
how it maps onto blocks; this module writes the IR).

``ContractTiles`` is a mixin of the PTX kernel emitter: ``contract_tiles(nest)`` emits the
block-stride loop over the tiles of C, each tile's K loop with its two shared-memory
buffers, and the predicated stores of its accumulators. ``prepare_kernel`` expands, before
planning, the nests that do not get a tile launch (nested in other statements, or an
accumulator with no GPU tiling) into the CPU's loops.
"""
from __future__ import annotations

from dataclasses import replace

from llvmlite import ir

from intentc.codegen import gpu_contract as G
from intentc.codegen.llvm_types import I8, I32, I64, reg_type
from intentc.lower import program as P
from intentc.lower.contract_tiles import lower_contract_tiles
from intentc.lower.names import NameSupply

I16 = ir.IntType(16)
F32 = ir.FloatType()


def prepare_kernel(kernel: P.Kernel, keep_top_level: bool = True) -> P.Kernel:
    """``kernel`` with every ``contract_tiles`` nest that will not be a tile launch expanded
    into the loops ``expand_contract_tiles`` makes on CPUs (all of them unless
    ``keep_top_level``)."""
    names = NameSupply.of_kernel(kernel)

    def block(stmts, top: bool):
        out = []
        for s in stmts:
            if isinstance(s, P.TileNest) and s.kind == "contract_tiles":
                if top and keep_top_level and G.tile_config(kernel, s) is not None:
                    out.append(s)
                else:
                    out += lower_contract_tiles(names, s)
            else:
                out.append(P.map_blocks(s, lambda inner: block(inner, False)))
        return tuple(out)

    if not any(isinstance(s, P.TileNest) and s.kind == "contract_tiles" for s in P.walk_stmts(kernel.body)):
        return kernel
    return replace(kernel, body=block(kernel.body, True))


def has_tile_nests(kernel: P.Kernel) -> bool:
    return any(isinstance(s, P.TileNest) and s.kind == "contract_tiles" for s in kernel.body)


class ContractTiles:
    """Mixin of ``GpuKernelEmitter``: the tile launch of a ``contract_tiles`` nest."""

    _tile_shared: ir.GlobalVariable | None = None  # made on first use

    def tile_shared(self, config: G.TileConfig) -> ir.Value:
        """The block-shared bytes of the kernel's tile buffers (one array for all its nests)."""
        if self._tile_shared is None:
            size = max(c.shared_bytes for _phase, c in self.plan.tiles.values())
            array = ir.ArrayType(I8, size)
            buffer = ir.GlobalVariable(self.mod.module, array, f"{self.kernel.name}.tiles", addrspace=3)
            buffer.linkage = "internal"
            buffer.initializer = ir.Constant(array, ir.Undefined)
            buffer.align = 16
            buffer.type = ir.PointerType(addrspace=3)  # opaque: bytes loaded and stored with any type
            self._tile_shared = buffer
        return self._tile_shared

    def contract_tiles(self, s: P.TileNest) -> None:
        phase, config = self.plan.tiles[id(s)]
        b = self.builder
        if self.phase is None:
            self._tiles(s, config)
            return
        with b.if_then(b.icmp_signed("==", self.phase, ir.Constant(I32, phase))):
            self._tiles(s, config)

    # -- shared pieces ---------------------------------------------------------------------------
    def _c(self, v: int) -> ir.Constant:
        return ir.Constant(I64, v)

    def _ceil_div(self, a: ir.Value, d: int) -> ir.Value:
        b = self.builder
        return b.sdiv(b.add(a, self._c(d - 1)), self._c(d))

    def _tiles(self, s: P.TileNest, config: G.TileConfig) -> None:
        """The block-stride loop over the tiles of C (tile ``bb · tiles_m · tiles_n + …``)."""
        b = self.builder
        ap, bp, c = s.tensors[:3]
        batch, m, n, k = (self.expr(x) for x in s.scalars)
        mr, nr = s.attr("mr"), s.attr("nr")
        geometry = {
            "m": m, "n": n, "k": k, "mr": mr, "nr": nr, "ap": ap, "bp": bp, "c": c,
            "mp": b.mul(self._ceil_div(m, mr), self._c(mr)), "np": b.mul(self._ceil_div(n, nr), self._c(nr))}
        tiles_m, tiles_n = self._ceil_div(m, config.bm), self._ceil_div(n, config.bn)
        per = b.mul(tiles_m, tiles_n)
        total = b.mul(batch, per)
        ktiles = self._ceil_div(k, config.bk)
        slot = self.entry_alloca(I64, "tile")
        emit = self._ffma_tile if config.engine == "ffma" else self._mma_tile

        def tile(index):
            bb = b.sdiv(index, per)
            rest = b.srem(index, per)
            m0 = b.mul(b.sdiv(rest, tiles_n), self._c(config.bm))
            n0 = b.mul(b.srem(rest, tiles_n), self._c(config.bn))
            emit(config, geometry, bb, m0, n0, ktiles)

        self.strided_loop(slot, self.sreg("ctaid.x"), total, self.sreg("nctaid.x"), tile)

    def _panel_address(self, g: dict, which: str, bb, row, t, elem_type) -> tuple:
        """(address, inside) of element (row, t) of packed panel ``ap``/``bp`` of batch
        ``bb``: ``(bb · padded + row - row % w) · k + t · w + row % w`` when ``row`` and
        ``t`` are inside, else the panel's first element (in bounds: only tiles of a
        non-empty C run, and only while ``k > 0``)."""
        b = self.builder
        tensor, width, padded, rows = ((g["ap"], g["mr"], g["mp"], g["m"]) if which == "a"
                                       else (g["bp"], g["nr"], g["np"], g["n"]))
        inside = b.and_(b.icmp_signed("<", row, rows), b.icmp_signed("<", t, g["k"]))
        within = b.srem(row, self._c(width))
        offset = b.add(b.add(b.mul(b.add(b.mul(bb, padded), b.sub(row, within)), g["k"]),
                             b.mul(t, self._c(width))), within)
        offset = b.select(inside, offset, self._c(0))
        return b.gep(self.data_ptr(tensor.name), [offset], source_etype=elem_type), inside

    def _panel_value(self, g: dict, which: str, bb, row, t, acc_type) -> ir.Value:
        """Element (row, t) of a packed panel, 0 past the edge."""
        b = self.builder
        address, inside = self._panel_address(g, which, bb, row, t, acc_type)
        value = b.load(address, typ=acc_type, align=g["ap"].dtype.itemsize)
        return b.select(inside, value, ir.Constant(acc_type, 0))

    def _copy_async(self, g: dict, which: str, bb, row, t, elem_type, size: int, shared) -> None:
        """``cp.async.ca.shared.global`` of one panel element into ``shared``; 0 past the
        edge (a source size of 0 bytes zero-fills the destination)."""
        b = self.builder
        address, inside = self._panel_address(g, which, bb, row, t, elem_type)
        if address.type.addrspace != 1:
            address = b.addrspacecast(address, ir.PointerType(addrspace=1))
        fn = self.mod.intrinsic(f"llvm.nvvm.cp.async.ca.shared.global.{size}.s", ir.VoidType(),
                                [ir.PointerType(addrspace=3), ir.PointerType(addrspace=1), I32])
        b.call(fn, [shared, address, b.select(inside, ir.Constant(I32, size), ir.Constant(I32, 0))])

    def _store_c(self, g: dict, bb, row, col, value) -> None:
        b = self.builder
        c = g["c"]
        with b.if_then(b.and_(b.icmp_signed("<", row, g["m"]), b.icmp_signed("<", col, g["n"]))):
            offset = b.add(b.mul(row, self.field(c.name, "stride", c.rank - 2)),
                           b.mul(col, self.field(c.name, "stride", c.rank - 1)))
            if c.rank == 3:
                offset = b.add(offset, b.mul(bb, self.field(c.name, "stride", 0)))
            b.store(value, b.gep(self.data_ptr(c.name), [offset], source_etype=value.type), align=c.dtype.itemsize)

    def _k_loop(self, ktiles, fetch, put, compute) -> None:
        """K tile 0 into buffer 0; then for each K tile: fetch the next into registers,
        multiply the current buffer, store the next into the other buffer, ``bar.sync``."""
        b = self.builder
        with b.if_then(b.icmp_signed(">", ktiles, self._c(0))):
            fetch(self._c(0))
            put(self._c(0))
            self.barrier()
            kslot = self.entry_alloca(I64, "ktile")

            def step(kt):
                following = b.add(kt, self._c(1))
                more = b.icmp_signed("<", following, ktiles)
                with b.if_then(more):
                    fetch(following)
                compute(b.srem(kt, self._c(2)))
                with b.if_then(more):
                    put(b.srem(following, self._c(2)))
                self.barrier()

            self.strided_loop(kslot, self._c(0), ktiles, self._c(1), step)

    def _k_loop_async(self, ktiles, issue, compute) -> None:
        """K tile 0 copied (cp.async) into buffer 0; then for each K tile: wait for this
        thread's copies, ``bar.sync`` (every thread's copies have landed, and every thread
        is done with the other buffer), start the copies of the next tile into the other
        buffer, multiply the current one. A last ``bar.sync`` frees the buffers."""
        b = self.builder
        commit = self.mod.intrinsic("llvm.nvvm.cp.async.commit.group", ir.VoidType(), [])
        wait = self.mod.intrinsic("llvm.nvvm.cp.async.wait.group", ir.VoidType(), [I32])
        with b.if_then(b.icmp_signed(">", ktiles, self._c(0))):
            issue(self._c(0), self._c(0))
            b.call(commit, [])
            kslot = self.entry_alloca(I64, "ktile")

            def step(kt):
                b.call(wait, [ir.Constant(I32, 0)])
                self.barrier()
                following = b.add(kt, self._c(1))
                with b.if_then(b.icmp_signed("<", following, ktiles)):
                    issue(following, b.srem(following, self._c(2)))
                    b.call(commit, [])
                compute(b.srem(kt, self._c(2)))

            self.strided_loop(kslot, self._c(0), ktiles, self._c(1), step)
            self.barrier()

    def _shared_at(self, config, byte_offset) -> ir.Value:
        return self.builder.gep(self.tile_shared(config), [byte_offset], source_etype=I8)

    # -- exact FFMA tiles --------------------------------------------------------------------------
    def _ffma_tile(self, config, g, bb, m0, n0, ktiles) -> None:
        b = self.builder
        acc = g["ap"].dtype
        ty = reg_type(acc)
        size = acc.itemsize
        tm, tn = G.FFMA_THREAD_TILE
        columns = config.bn // tn  # threads along n
        rows = G.THREADS // columns  # threads along m
        bm, bn, bk = config.bm, config.bn, config.bk
        tid = self.sreg("tid.x")
        tx, ty_ = b.srem(tid, self._c(columns)), b.sdiv(tid, self._c(columns))
        zero = ir.Constant(ty, 0)
        accs = [[self.entry_alloca(ty, f"c{i}_{j}") for j in range(tn)] for i in range(tm)]
        for row in accs:
            for cell in row:
                b.store(zero, cell)
        per_a, per_b = bm * bk // G.THREADS, bn * bk // G.THREADS
        staged_a = [self.entry_alloca(ty, f"sa{q}") for q in range(per_a if config.copies != "cp.async" else 0)]
        staged_b = [self.entry_alloca(ty, f"sb{q}") for q in range(per_b if config.copies != "cp.async" else 0)]
        b_base = 2 * bm * bk * size

        def a_slot(q):  # element q of this thread's share of the A tile: (row e % BM, k e // BM)
            e = b.add(tid, self._c(q * G.THREADS))
            return b.srem(e, self._c(bm)), b.sdiv(e, self._c(bm))

        def b_slot(q):
            e = b.add(tid, self._c(q * G.THREADS))
            return b.srem(e, self._c(bn)), b.sdiv(e, self._c(bn))

        def fetch(kt):
            k0 = b.mul(kt, self._c(bk))
            for q, cell in enumerate(staged_a):
                i, t = a_slot(q)
                b.store(self._panel_value(g, "a", bb, b.add(m0, i), b.add(k0, t), ty), cell)
            for q, cell in enumerate(staged_b):
                j, t = b_slot(q)
                b.store(self._panel_value(g, "b", bb, b.add(n0, j), b.add(k0, t), ty), cell)

        def put(buf):
            for q, cell in enumerate(staged_a):
                i, t = a_slot(q)
                at = b.mul(b.add(b.mul(b.add(b.mul(buf, self._c(bk)), t), self._c(bm)), i), self._c(size))
                b.store(b.load(cell, typ=ty), self._shared_at(config, at))
            for q, cell in enumerate(staged_b):
                j, t = b_slot(q)
                at = b.mul(b.add(b.mul(b.add(b.mul(buf, self._c(bk)), t), self._c(bn)), j), self._c(size))
                b.store(b.load(cell, typ=ty), self._shared_at(config, b.add(at, self._c(b_base))))

        def compute(buf):
            for kk in range(bk):
                row_a = b.mul(b.add(b.mul(buf, self._c(bk)), self._c(kk)), self._c(bm))
                row_b = b.mul(b.add(b.mul(buf, self._c(bk)), self._c(kk)), self._c(bn))
                avals = [b.load(self._shared_at(config, b.mul(b.add(row_a, b.add(ty_, self._c(rows * i))),
                                                               self._c(size))), typ=ty) for i in range(tm)]
                bvals = [b.load(self._shared_at(config, b.add(self._c(b_base), b.mul(
                    b.add(row_b, b.add(tx, self._c(columns * j))), self._c(size)))), typ=ty) for j in range(tn)]
                for i in range(tm):
                    for j in range(tn):
                        cell = accs[i][j]
                        b.store(self._fma(avals[i], bvals[j], b.load(cell, typ=ty)), cell)

        def issue(kt, buf):  # cp.async straight into the buffer: no staging registers
            k0 = b.mul(kt, self._c(bk))
            for q in range(per_a):
                i, t = a_slot(q)
                at = b.mul(b.add(b.mul(b.add(b.mul(buf, self._c(bk)), t), self._c(bm)), i), self._c(size))
                self._copy_async(g, "a", bb, b.add(m0, i), b.add(k0, t), ty, size, self._shared_at(config, at))
            for q in range(per_b):
                j, t = b_slot(q)
                at = b.mul(b.add(b.mul(b.add(b.mul(buf, self._c(bk)), t), self._c(bn)), j), self._c(size))
                self._copy_async(g, "b", bb, b.add(n0, j), b.add(k0, t), ty, size,
                                 self._shared_at(config, b.add(at, self._c(b_base))))

        if config.copies == "cp.async":
            self._k_loop_async(ktiles, issue, compute)
        else:
            self._k_loop(ktiles, fetch, put, compute)
        for i in range(tm):
            for j in range(tn):
                row = b.add(m0, b.add(ty_, self._c(rows * i)))
                col = b.add(n0, b.add(tx, self._c(columns * j)))
                self._store_c(g, bb, row, col, b.load(accs[i][j], typ=ty))

    def _fma(self, x, y, z) -> ir.Value:
        """One rounding for floats (``fma.rn``); integers multiply and add, wrapping."""
        b = self.builder
        if isinstance(x.type, ir.IntType):
            return b.add(b.mul(x, y), z)
        suffix = "f32" if isinstance(x.type, ir.FloatType) else "f64"
        return b.call(self.mod.intrinsic(f"llvm.fma.{suffix}", x.type, [x.type] * 3), [x, y, z])

    # -- tensor-core tiles -----------------------------------------------------------------------
    def _narrow(self, value, operand: str) -> ir.Value:
        """A panel element (exact in ``operand``) as ``operand``'s bits."""
        b = self.builder
        if operand == "f16":
            return b.bitcast(b.fptrunc(value, ir.HalfType()), I16)
        if operand == "bf16":  # the f32 of a bf16: its upper half
            return b.trunc(b.lshr(b.bitcast(value, I32), ir.Constant(I32, 16)), I16)
        return b.trunc(value, I8)

    def _mma_tile(self, config, g, bb, m0, n0, ktiles) -> None:
        b = self.builder
        operand = config.operand
        acc_ty = F32 if config.accumulator == "f32" else I32
        narrow_ty = I8 if operand in ("i8", "u8") else I16
        size = 1 if narrow_ty is I8 else 2
        bm, bn, bk, pitch = config.bm, config.bn, config.bk, G.MMA_PITCH
        wm_tiles, wn_tiles = G.MMA_WARP_TILES
        tid = self.sreg("tid.x")
        warp, lane = b.sdiv(tid, self._c(32)), b.srem(tid, self._c(32))
        warp_m, warp_n = b.sdiv(warp, self._c(G.MMA_WARPS[1])), b.srem(warp, self._c(G.MMA_WARPS[1]))
        accs = [[[self.entry_alloca(acc_ty, f"d{i}_{j}_{r}") for r in range(4)] for j in range(wn_tiles)]
                for i in range(wm_tiles)]
        for i in range(wm_tiles):
            for j in range(wn_tiles):
                for cell in accs[i][j]:
                    b.store(ir.Constant(acc_ty, 0), cell)
        per_a, per_b = bm * bk // G.THREADS, bn * bk // G.THREADS
        staged_a = [self.entry_alloca(narrow_ty, f"sa{q}") for q in range(per_a)]
        staged_b = [self.entry_alloca(narrow_ty, f"sb{q}") for q in range(per_b)]
        b_base = 2 * bm * pitch
        wide = reg_type(g["ap"].dtype)

        def a_slot(q):  # (row e // BK, k e % BK): a row's K tile is contiguous in shared memory
            e = b.add(tid, self._c(q * G.THREADS))
            return b.sdiv(e, self._c(bk)), b.srem(e, self._c(bk))

        def b_slot(q):  # (column e % BN, k e // BN): consecutive threads read consecutive columns
            e = b.add(tid, self._c(q * G.THREADS))
            return b.srem(e, self._c(bn)), b.sdiv(e, self._c(bn))

        def fetch(kt):
            k0 = b.mul(kt, self._c(bk))
            for q, cell in enumerate(staged_a):
                i, t = a_slot(q)
                b.store(self._narrow(self._panel_value(g, "a", bb, b.add(m0, i), b.add(k0, t), wide), operand), cell)
            for q, cell in enumerate(staged_b):
                j, t = b_slot(q)
                b.store(self._narrow(self._panel_value(g, "b", bb, b.add(n0, j), b.add(k0, t), wide), operand), cell)

        def put(buf):  # A as [BM][K tile], B as [BN][K tile] (k contiguous), rows `pitch` bytes apart
            for q, cell in enumerate(staged_a):
                i, t = a_slot(q)
                at = b.add(b.mul(b.add(b.mul(buf, self._c(bm)), i), self._c(pitch)), b.mul(t, self._c(size)))
                b.store(b.load(cell, typ=narrow_ty), self._shared_at(config, at))
            for q, cell in enumerate(staged_b):
                j, t = b_slot(q)
                at = b.add(b.mul(b.add(b.mul(buf, self._c(bn)), j), self._c(pitch)), b.mul(t, self._c(size)))
                b.store(b.load(cell, typ=narrow_ty), self._shared_at(config, b.add(at, self._c(b_base))))

        group = b.sdiv(lane, self._c(8))  # the 8x8 matrix whose row this lane addresses
        within = b.srem(lane, self._c(8))

        def compute(buf):
            for step in range(G.MMA_ROW_BYTES // 32):  # one mma k slice: 32 bytes of a row
                a_frags = []
                for i in range(wm_tiles):
                    row = b.add(b.add(b.mul(warp_m, self._c(wm_tiles * 16)), self._c(16 * i)),
                                b.add(b.mul(b.srem(group, self._c(2)), self._c(8)), within))
                    column = b.add(self._c(32 * step), b.mul(b.sdiv(group, self._c(2)), self._c(16)))
                    at = b.add(b.mul(b.add(b.mul(buf, self._c(bm)), row), self._c(pitch)), column)
                    a_frags.append(self._ldmatrix4(config, at))
                b_frags = []
                for pair in range(0, wn_tiles, 2):  # x4: two n8 tiles, both k halves
                    row = b.add(b.add(b.mul(warp_n, self._c(wn_tiles * 8)), self._c(8 * pair)),
                                b.add(b.mul(b.sdiv(group, self._c(2)), self._c(8)), within))
                    column = b.add(self._c(32 * step), b.mul(b.srem(group, self._c(2)), self._c(16)))
                    at = b.add(self._c(b_base), b.add(b.mul(b.add(b.mul(buf, self._c(bn)), row), self._c(pitch)),
                                                      column))
                    regs = self._ldmatrix4(config, at)
                    b_frags += [regs[0:2], regs[2:4]]
                for i in range(wm_tiles):
                    for j in range(wn_tiles):
                        self._mma(config, a_frags[i], b_frags[j], accs[i][j], acc_ty)

        self._k_loop(ktiles, fetch, put, compute)
        for i in range(wm_tiles):
            for j in range(wn_tiles):
                for r in range(4):  # register r: row lane/4 + 8 (r / 2), column 2 (lane % 4) + r % 2
                    row = b.add(m0, b.add(b.add(b.mul(warp_m, self._c(wm_tiles * 16)), self._c(16 * i + 8 * (r // 2))),
                                          b.sdiv(lane, self._c(4))))
                    col = b.add(n0, b.add(b.add(b.mul(warp_n, self._c(wn_tiles * 8)), self._c(8 * j + r % 2)),
                                          b.mul(b.srem(lane, self._c(4)), self._c(2))))
                    self._store_c(g, bb, row, col, b.load(accs[i][j][r], typ=acc_ty))

    def _ldmatrix4(self, config, byte_offset) -> list:
        b = self.builder
        regs = ir.LiteralStructType([I32] * 4)
        fn = self.mod.intrinsic("llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16", regs, [ir.PointerType(addrspace=3)])
        out = b.call(fn, [self._shared_at(config, byte_offset)])
        return [b.extract_value(out, r) for r in range(4)]

    def _mma(self, config, a_regs, b_regs, cells, acc_ty) -> None:
        b = self.builder
        if config.operand == "f16":
            half2 = ir.VectorType(ir.HalfType(), 2)
            operands = [b.bitcast(x, half2) for x in a_regs + b_regs]
            types = [half2] * 6
        else:
            operands, types = list(a_regs) + list(b_regs), [I32] * 6
        result = ir.LiteralStructType([acc_ty] * 4)
        fn = self.mod.intrinsic(f"llvm.nvvm.mma.{config.intrinsic}", result, types + [acc_ty] * 4)
        out = b.call(fn, operands + [b.load(cell, typ=acc_ty) for cell in cells])
        for r, cell in enumerate(cells):
            b.store(b.extract_value(out, r), cell)
