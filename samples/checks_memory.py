"""Python-side checks of the indexed-memory, atomics, ragged and RNG samples (``checks.py``
merges ``MEMORY_CHECKS`` into its ``CHECKS``): each calls the compiled kernels with NumPy
arrays and compares with NumPy — exactly, except sums that ``I.sum`` may regroup (T1),
which are compared within a relative bound of 1e-5 of the absolute sum."""
from __future__ import annotations

import numpy as np

E_DTYPE, E_SHAPE, E_BOUNDS = -2, -4, -6

PHILOX_KAT = [  # Random123 kat_vectors for Philox4x32-10: counter, key, output
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


def _tally(name: str):
    from checks import _Tally  # lazily: checks.py imports this module at its end

    return _Tally(name)


def _close(t, got, want, scale, what: str) -> None:
    got = np.asarray(got)
    assert got.dtype == np.float32, f"{what}: dtype {got.dtype}"
    bad = np.abs(got.astype(np.float64) - want) > 1e-5 * scale + 1e-6
    assert not bad.any(), f"{what}: {got[bad][:3]} vs {want[bad][:3]}"
    t.matched += 1


# ---------------------------------------------------------------------------- ragged_csr
def _csr(rng, rows: int, max_len: int, cols: int):
    lengths = rng.integers(0, max_len + 1, rows)
    lengths[3::5] = 0  # empty rows
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    nnz = int(offsets[-1])
    return offsets, rng.uniform(-10, 10, nnz).astype(np.float32), rng.integers(0, max(cols, 1), nnz)


def check_ragged_csr(m) -> str:
    t = _tally("ragged_csr")
    rng = np.random.default_rng(41)
    for rows, max_len, ncols in ((0, 3, 2), (1, 4, 3), (9, 6, 4), (2000, 50, 700)):
        offsets, values, cols = _csr(rng, rows, max_len, ncols)
        x = rng.uniform(-1, 1, ncols).astype(np.float32)
        starts, ends = offsets[:-1], offsets[1:]
        sums = np.array([values[a:b].astype(np.float64).sum() for a, b in zip(starts, ends)])
        scale = np.array([np.abs(values[a:b]).astype(np.float64).sum() for a, b in zip(starts, ends)])
        got = np.full(rows, 7, np.float32)
        m.csr_row_sums(values, offsets, got)
        _close(t, got, sums, scale, f"csr_row_sums rows={rows}")
        maxima = np.array([values[a:b].max() if b > a else -np.inf for a, b in zip(starts, ends)], np.float32)
        got = np.zeros(rows, np.float32)
        m.segment_max(values, offsets, got)
        t.same(got, maxima, f"segment_max rows={rows}")
        prods = values.astype(np.float64) * x[cols]
        y = np.array([prods[a:b].sum() for a, b in zip(starts, ends)])
        yscale = np.array([np.abs(prods[a:b]).sum() for a, b in zip(starts, ends)])
        got = np.zeros(rows, np.float32)
        m.spmv_csr(values, cols, offsets, x, got)
        _close(t, got, y, yscale, f"spmv_csr rows={rows}")
    # Strided views of the values and the offsets.
    offsets, values, cols = _csr(rng, 50, 8, 10)
    vbig = np.zeros(2 * values.size + 1, np.float32)
    vbig[1::2] = values
    obig = np.zeros(3 * offsets.size, np.int64)
    obig[::3] = offsets
    got = np.zeros(50, np.float32)
    m.segment_max(vbig[1::2], obig[::3], got)
    want = np.array([values[a:b].max() if b > a else -np.inf for a, b in zip(offsets[:-1], offsets[1:])], np.float32)
    t.same(got, want, "segment_max strided views")
    # Offsets that are no ragged relation: refused before anything is written (G2).
    sums = np.full(5, 3, np.float32)
    for bad in ([0, 2, 1, 3, 4, 5], [0, 1, 2, 3, 4, 99], [-1, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4]):
        t.refused_call(f"csr_row_sums offsets {bad}",
                       lambda: m.csr_row_sums(np.ones(5, np.float32), np.array(bad, np.int64), sums), E_BOUNDS, sums)
    return t.summary()


# ---------------------------------------------------------------------------- gather_scatter
def check_gather_scatter(m) -> str:
    t = _tally("gather_scatter")
    rng = np.random.default_rng(43)
    for n in (0, 1, 8, 1000, 65537):
        x = rng.uniform(-9, 9, n).astype(np.float32)
        idx = rng.integers(-3, n + 3, n)
        idx[::7] = np.iinfo(np.int64).min  # far out of range: those lanes touch nothing
        valid = (idx >= 0) & (idx < n)
        t.same(m.gather_masked(x, idx), np.where(valid, x[np.where(valid, idx, 0)] if n else x, 0).astype(np.float32),
               f"gather_masked N={n}")
        flags = rng.integers(0, 2, n).astype(bool)
        out = np.full(n, -1, np.float32)
        count = np.zeros(1, np.int64)
        m.stream_compact(x, flags, out, count)
        want = np.full(n, -1, np.float32)
        want[:flags.sum()] = x[flags]
        t.same(out, want, f"stream_compact N={n}")
        t.same(count, np.array([flags.sum()]), f"stream_compact count N={n}")
    for r, c, n in ((0, 3, 4), (5, 1, 9), (40, 7, 300)):
        table = rng.uniform(-9, 9, (r, c)).astype(np.float32)
        rows = rng.integers(-2, r + 2, n)
        ok = (rows >= 0) & (rows < r)
        want = np.full((n, c), -1, np.float32)
        want[ok] = table[rows[ok]]
        out = np.zeros((n, c), np.float32)
        m.gather_rows(table, rows, out)
        t.same(out, want, f"gather_rows R={r} C={c} N={n}")
        if r and c > 1:  # a transposed table (strided rows)
            out = np.zeros((n, c), np.float32)
            m.gather_rows(np.asfortranarray(table), rows, out)
            t.same(out, want, f"gather_rows column-major R={r}")
    x = np.ones(4, np.float32)
    t.refused_call("gather_masked idx extent 5", lambda: m.gather_masked(x, np.zeros(5, np.int64)), E_SHAPE)
    t.refused_call("gather_masked idx is i32", lambda: m.gather_masked(x, np.zeros(4, np.int32)), E_DTYPE)
    return t.summary()


# ---------------------------------------------------------------------------- histogram_scatter_reduce
def _blocked_sums(values, weights, start):
    """The float grouping scatter_reduce defines: in-order block sums, added in block order."""
    n = values.size
    block = max(-(-n // 1024), 4096)
    sums = start.copy()
    parts = []
    for b in range(0, n, block):
        part = np.zeros(256, np.float32)
        for v, w in zip(values[b:b + block].tolist(), weights[b:b + block]):
            if 0 <= v < 256:
                part[v] = np.float32(part[v] + w)
        parts.append(part)
    for part in parts:
        sums = (sums + part).astype(np.float32)
    return sums


def check_histogram_scatter_reduce(m) -> str:
    t = _tally("histogram_scatter_reduce")
    rng = np.random.default_rng(47)
    for n in (0, 1, 5000, 20000):
        values = rng.integers(-20, 300, n)
        weights = rng.uniform(-1, 1, n).astype(np.float32)
        counts = np.arange(256, dtype=np.int64)
        sums = np.full(256, 0.5, np.float32)
        want_sums = _blocked_sums(values, weights, sums)
        m.histogram256(values, weights, counts, sums)
        ok = (values >= 0) & (values < 256)
        t.same(counts, np.arange(256) + np.bincount(values[ok], minlength=256), f"counts N={n}")
        t.same(sums, want_sums, f"sums N={n} (bit for bit)")
        _close(t, sums, 0.5 + np.bincount(values[ok], weights[ok].astype(np.float64), minlength=256),
               np.full(256, max(1.0, float(np.abs(weights).sum()))), f"sums N={n} vs NumPy")
    counts, sums = np.zeros(255, np.int64), np.zeros(256, np.float32)
    t.refused_call("255 bins", lambda: m.histogram256(np.zeros(3, np.int64), np.zeros(3, np.float32), counts, sums),
                   E_SHAPE, counts, sums)
    return t.summary()


# ---------------------------------------------------------------------------- atomic_counter
def check_atomic_counter(m) -> str:
    t = _tally("atomic_counter")
    rng = np.random.default_rng(53)
    for n in (0, 1, 33, 200001):
        flags = rng.integers(0, 3, n) == 0
        taken = np.zeros(n, bool)
        count = np.zeros(1, np.int64)
        m.claim_slots(flags, taken, count)
        t.same(count, np.array([flags.sum()]), f"claim_slots count N={n}")
        t.same(taken, np.arange(n) < flags.sum(), f"claim_slots taken N={n}")
        keys, weights = rng.integers(-3, 19, n), rng.integers(-100, 100, n)
        counts, totals, first = np.zeros(16, np.int64), np.zeros(16, np.int64), np.full(16, n, np.int64)
        m.bucket_stats(keys, weights, counts, totals, first)
        ok = (keys >= 0) & (keys < 16)
        t.same(counts, np.bincount(keys[ok], minlength=16), f"bucket counts N={n}")
        t.same(totals, np.bincount(keys[ok], weights[ok], minlength=16).astype(np.int64), f"bucket totals N={n}")
        want_first = np.full(16, n, np.int64)
        np.minimum.at(want_first, keys[ok], np.nonzero(ok)[0])
        t.same(first, want_first, f"bucket first N={n}")
    t.refused_call("taken extent N+1", lambda: m.claim_slots(np.zeros(3, bool), np.zeros(4, bool),
                                                             np.zeros(1, np.int64)), E_SHAPE)
    return t.summary()


# ---------------------------------------------------------------------------- philox_rng
def _philox(key, counters):
    """Philox4x32-10 on uint32 arrays, written from the Random123 description."""
    k0, k1 = (np.asarray(k, np.uint64) for k in key)
    c0, c1, c2, c3 = (np.asarray(c, np.uint64) for c in counters)
    low = np.uint64(0xFFFFFFFF)
    for r in range(10):
        if r:
            k0, k1 = (k0 + np.uint64(0x9E3779B9)) & low, (k1 + np.uint64(0xBB67AE85)) & low
        p0, p1 = np.uint64(0xD2511F53) * c0, np.uint64(0xCD9E8D57) * c2
        c0, c1, c2, c3 = (p1 >> np.uint64(32)) ^ c1 ^ k0, p1 & low, (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & low
    return np.array([c0, c1, c2, c3]).astype(np.uint32)


def check_philox_rng(m) -> str:
    t = _tally("philox_rng")
    for ctr, key, want in PHILOX_KAT:
        out = np.zeros((4, 2), np.uint32)
        m.philox_counters(np.array(key, np.uint32), np.array([[c, c] for c in ctr], np.uint32), out)
        t.same(out[:, 0], np.array(want, np.uint32), f"known-answer vector key={key[0]:08x}")
        t.same(out[:, 1], np.array(want, np.uint32), f"known-answer vector key={key[0]:08x} (lane 2)")
    for n, seed in ((0, 1), (3, 5), (4097, 0xDEADBEEF)):
        i = np.arange(n, dtype=np.uint64)
        zero = np.zeros(n, np.uint32)
        words = np.zeros((4, n), np.uint32)
        m.philox_words(seed, words)
        t.same(words, _philox((np.full(n, seed, np.uint32), zero),
                              (i.astype(np.uint32), (i >> np.uint64(32)).astype(np.uint32), zero, zero)),
               f"philox_words N={n}")
        floats = np.zeros((4, n), np.float32)
        m.uniform_f32(seed, floats)
        u = _philox((np.full(n, seed, np.uint32), np.ones(n, np.uint32)), (i.astype(np.uint32), zero, zero, zero))
        t.same(floats, ((u >> 8).astype(np.float32) * np.float32(2.0 ** -24)), f"uniform_f32 N={n}")
        assert floats.size == 0 or (floats.min() >= 0 and floats.max() < 1)
        hits = np.zeros(1, np.int64)
        m.monte_carlo_pi(seed, n, hits)
        u = _philox((np.full(n, seed, np.uint32), np.full(n, 2, np.uint32)), (i.astype(np.uint32), zero, zero, zero))
        x, y = ((u[:2] >> 8).astype(np.float32) * np.float32(2.0 ** -24))
        t.same(hits, np.array([np.count_nonzero(x * x + y * y < np.float32(1))]), f"monte_carlo_pi N={n}")
        data = np.linspace(-3, 3, n).astype(np.float32)
        u = _philox((np.full(n, seed, np.uint32), np.full(n, 3, np.uint32)), (i.astype(np.uint32), zero, zero, zero))
        keep = (u[0] >> 8).astype(np.float32) * np.float32(2.0 ** -24) >= np.float32(0.3)
        t.same(m.dropout_mask(data, 0.3, seed), np.where(keep, data / (np.float32(1) - np.float32(0.3)), 0).astype(np.float32),
               f"dropout_mask N={n}")
    out = np.zeros((3, 5), np.uint32)
    t.refused_call("out has 3 rows", lambda: m.philox_words(1, out), E_SHAPE, out)
    return t.summary()


MEMORY_CHECKS = {
    "ragged_csr": check_ragged_csr,
    "gather_scatter": check_gather_scatter,
    "histogram_scatter_reduce": check_histogram_scatter_reduce,
    "atomic_counter": check_atomic_counter,
    "philox_rng": check_philox_rng,
}
