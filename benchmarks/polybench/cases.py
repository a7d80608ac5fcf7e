"""PolyBench/C 4.2.1 kernels at its datasets (f64; floyd-warshall i32).

Inputs are random but shaped like PolyBench's: matrices the kernels keep stable (lu and
trisolv diagonally dominant, durbin's r decaying so that |alpha| < 1). Results are
compared with the C loop built -O3 -march=native (serial). Contractions are fused and
regrouped (T3) and reductions regrouped (T1), so a sum of K terms of size ~1 may move by
~K * 2^-53 relative: 1e-9 relative (1e-10 absolute) is far above that for K <= 4000 and far
below any indexing error. The stencils round exactly as the C does: they are compared
with the same tolerance for uniformity.
"""
from __future__ import annotations

import numpy as np

from realworld_support import Dataset, Kernel, f64, i32, ptr

try:
    import scipy.linalg as _scipy_linalg
except ImportError:  # the NumPy column of trisolv, lu and durbin needs SciPy
    _scipy_linalg = None

F64_TOLERANCE = dict(rtol=1e-9, atol=1e-10,
                     tolerance="f64 sums of at most a few thousand terms, regrouped and fused")


def _sets(*pairs):
    return tuple(Dataset(label, dims) for label, dims in pairs)


def _u(rng, *shape):
    return rng.random(shape)


# ------------------------------------------------------------------------- linear algebra

def _gemm_setup(d, rng):
    return dict(C=_u(rng, d["NI"], d["NJ"]), A=_u(rng, d["NI"], d["NK"]), B=_u(rng, d["NK"], d["NJ"]))


def _gemm_numpy(a, d):
    a["C"] *= 1.2
    a["C"] += 1.5 * (a["A"] @ a["B"])


GEMM = Kernel(
    name="polybench/gemm", intent_source="polybench/gemm.intent", intent_symbol="gemm",
    c_source="polybench/gemm.c", c_symbol="gemm",
    tiny=Dataset("MINI", dict(NI=20, NJ=25, NK=30)),
    quick=_sets(("MEDIUM", dict(NI=200, NJ=220, NK=240))),
    full=_sets(("LARGE", dict(NI=1000, NJ=1100, NK=1200))),
    setup=_gemm_setup, mutated=("C",), results=("C",),
    intent_call=lambda k, a, d: k(1.5, 1.2, a["C"], a["A"], a["B"]),
    c_call=lambda fn, a, d: fn(i32(d["NI"]), i32(d["NJ"]), i32(d["NK"]), f64(1.5), f64(1.2),
                               ptr(a["C"]), ptr(a["A"]), ptr(a["B"])),
    numpy_call=_gemm_numpy, numpy_label="NumPy (OpenBLAS)",
    flops=lambda d: 2.0 * d["NI"] * d["NJ"] * d["NK"], **F64_TOLERANCE)


def _2mm_setup(d, rng):
    return dict(A=_u(rng, d["NI"], d["NK"]), B=_u(rng, d["NK"], d["NJ"]), C=_u(rng, d["NJ"], d["NL"]),
                D=_u(rng, d["NI"], d["NL"]), tmp=np.zeros((d["NI"], d["NJ"])))


def _2mm_numpy(a, d):
    a["D"] *= 1.2
    a["D"] += (1.5 * (a["A"] @ a["B"])) @ a["C"]


MM2 = Kernel(
    name="polybench/2mm", intent_source="polybench/2mm.intent", intent_symbol="mm2",
    c_source="polybench/2mm.c", c_symbol="mm2",
    tiny=Dataset("MINI", dict(NI=16, NJ=18, NK=22, NL=24)),
    quick=_sets(("MEDIUM", dict(NI=180, NJ=190, NK=210, NL=220))),
    full=_sets(("LARGE", dict(NI=800, NJ=900, NK=1100, NL=1200))),
    setup=_2mm_setup, mutated=("D", "tmp"), results=("D",),
    intent_call=lambda k, a, d: k(1.5, 1.2, a["A"], a["B"], a["C"], a["D"]),
    c_call=lambda fn, a, d: fn(i32(d["NI"]), i32(d["NJ"]), i32(d["NK"]), i32(d["NL"]), f64(1.5), f64(1.2),
                               ptr(a["tmp"]), ptr(a["A"]), ptr(a["B"]), ptr(a["C"]), ptr(a["D"])),
    numpy_call=_2mm_numpy, numpy_label="NumPy (OpenBLAS)",
    flops=lambda d: 2.0 * d["NI"] * d["NJ"] * (d["NK"] + d["NL"]), **F64_TOLERANCE)


def _atax_setup(d, rng):
    return dict(A=_u(rng, d["M"], d["N"]), x=_u(rng, d["N"]), y=np.zeros(d["N"]), tmp=np.zeros(d["M"]))


ATAX = Kernel(
    name="polybench/atax", intent_source="polybench/atax.intent", intent_symbol="atax",
    c_source="polybench/atax.c", c_symbol="atax",
    tiny=Dataset("MINI", dict(M=38, N=42)),
    quick=_sets(("LARGE", dict(M=1900, N=2100))),
    full=_sets(("LARGE", dict(M=1900, N=2100)), ("EXTRALARGE", dict(M=1800, N=2200))),
    setup=_atax_setup, mutated=("y", "tmp"), results=("y",),
    intent_call=lambda k, a, d: k(a["A"], a["x"], out=a["y"]),
    c_call=lambda fn, a, d: fn(i32(d["M"]), i32(d["N"]), ptr(a["A"]), ptr(a["x"]), ptr(a["y"]), ptr(a["tmp"])),
    numpy_call=lambda a, d: np.matmul(a["A"].T, a["A"] @ a["x"], out=a["y"]), numpy_label="NumPy (OpenBLAS)",
    flops=lambda d: 4.0 * d["M"] * d["N"], bytes=lambda d: 2.0 * 8 * d["M"] * d["N"], **F64_TOLERANCE)


def _mvt_setup(d, rng):
    n = d["N"]
    return dict(A=_u(rng, n, n), y1=_u(rng, n), y2=_u(rng, n), x1=_u(rng, n), x2=_u(rng, n))


def _mvt_numpy(a, d):
    a["x1"] += a["A"] @ a["y1"]
    a["x2"] += a["A"].T @ a["y2"]


MVT = Kernel(
    name="polybench/mvt", intent_source="polybench/mvt.intent", intent_symbol="mvt",
    c_source="polybench/mvt.c", c_symbol="mvt",
    tiny=Dataset("MINI", dict(N=40)),
    quick=_sets(("LARGE", dict(N=2000))),
    full=_sets(("LARGE", dict(N=2000)), ("EXTRALARGE", dict(N=4000))),
    setup=_mvt_setup, mutated=("x1", "x2"), results=("x1", "x2"),
    intent_call=lambda k, a, d: k(a["A"], a["y1"], a["y2"], a["x1"], a["x2"]),
    c_call=lambda fn, a, d: fn(i32(d["N"]), ptr(a["A"]), ptr(a["y1"]), ptr(a["y2"]), ptr(a["x1"]), ptr(a["x2"])),
    numpy_call=_mvt_numpy, numpy_label="NumPy (OpenBLAS)",
    flops=lambda d: 4.0 * d["N"] ** 2, bytes=lambda d: 2.0 * 8 * d["N"] ** 2, **F64_TOLERANCE)


def _gemver_setup(d, rng):
    n = d["N"]
    arrays = {name: _u(rng, n) for name in ("u1", "v1", "u2", "v2", "w", "x", "y", "z")}
    arrays["A"] = _u(rng, n, n)
    return arrays


def _gemver_numpy(a, d):
    A = a["A"]
    A += np.outer(a["u1"], a["v1"])
    A += np.outer(a["u2"], a["v2"])
    a["x"] += 1.2 * (A.T @ a["y"]) + a["z"]
    a["w"] += 1.5 * (A @ a["x"])


GEMVER = Kernel(
    name="polybench/gemver", intent_source="polybench/gemver.intent", intent_symbol="gemver",
    c_source="polybench/gemver.c", c_symbol="gemver",
    tiny=Dataset("MINI", dict(N=40)),
    quick=_sets(("LARGE", dict(N=2000))),
    full=_sets(("LARGE", dict(N=2000)), ("EXTRALARGE", dict(N=4000))),
    setup=_gemver_setup, mutated=("A", "w", "x"), results=("A", "w", "x"),
    intent_call=lambda k, a, d: k(1.5, 1.2, a["A"], a["u1"], a["v1"], a["u2"], a["v2"], a["w"], a["x"],
                                  a["y"], a["z"]),
    c_call=lambda fn, a, d: fn(i32(d["N"]), f64(1.5), f64(1.2), ptr(a["A"]), ptr(a["u1"]), ptr(a["v1"]),
                               ptr(a["u2"]), ptr(a["v2"]), ptr(a["w"]), ptr(a["x"]), ptr(a["y"]), ptr(a["z"])),
    numpy_call=_gemver_numpy, numpy_label="NumPy (OpenBLAS)",
    flops=lambda d: 10.0 * d["N"] ** 2, bytes=lambda d: 4.0 * 8 * d["N"] ** 2, **F64_TOLERANCE)


# ----------------------------------------------------------------------------- stencils

def _jacobi_setup(d, rng):
    return dict(A=_u(rng, d["N"], d["N"]), B=_u(rng, d["N"], d["N"]))


def _jacobi_numpy(a, d):
    A, B = a["A"], a["B"]
    for _ in range(d["TSTEPS"]):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])


JACOBI2D = Kernel(
    name="polybench/jacobi-2d", intent_source="polybench/jacobi2d.intent", intent_symbol="jacobi2d",
    c_source="polybench/jacobi2d.c", c_symbol="jacobi2d",
    tiny=Dataset("MINI", dict(TSTEPS=20, N=30)),
    quick=_sets(("MEDIUM", dict(TSTEPS=100, N=250))),
    full=_sets(("LARGE", dict(TSTEPS=500, N=1300))),
    setup=_jacobi_setup, mutated=("A", "B"), results=("A", "B"),
    intent_call=lambda k, a, d: k(d["TSTEPS"], a["A"], a["B"]),
    c_call=lambda fn, a, d: fn(i32(d["TSTEPS"]), i32(d["N"]), ptr(a["A"]), ptr(a["B"])),
    numpy_call=_jacobi_numpy,
    flops=lambda d: 10.0 * d["TSTEPS"] * (d["N"] - 2) ** 2, **F64_TOLERANCE)


def _seidel_setup(d, rng):
    return dict(A=_u(rng, d["N"], d["N"]))


SEIDEL2D = Kernel(
    name="polybench/seidel-2d", intent_source="polybench/seidel2d.intent", intent_symbol="seidel2d",
    c_source="polybench/seidel2d.c", c_symbol="seidel2d",
    tiny=Dataset("MINI", dict(TSTEPS=20, N=40)),
    quick=_sets(("MEDIUM", dict(TSTEPS=100, N=400))),
    # LARGE (500 steps of 2000 x 2000) is ~15 s of serial C per call: MEDIUM keeps the suite short.
    full=_sets(("MEDIUM", dict(TSTEPS=100, N=400))),
    setup=_seidel_setup, mutated=("A",), results=("A",),
    intent_call=lambda k, a, d: k(d["TSTEPS"], a["A"]),
    c_call=lambda fn, a, d: fn(i32(d["TSTEPS"]), i32(d["N"]), ptr(a["A"])),
    numpy_call=None, c_parallel=False,
    flops=lambda d: 9.0 * d["TSTEPS"] * (d["N"] - 2) ** 2, **F64_TOLERANCE)


def _heat_setup(d, rng):
    n = d["N"]
    return dict(A=_u(rng, n, n, n), B=_u(rng, n, n, n))


def _heat_numpy(a, d):
    def step(dst, s):
        c = s[1:-1, 1:-1, 1:-1]
        dst[1:-1, 1:-1, 1:-1] = (0.125 * (s[2:, 1:-1, 1:-1] - 2.0 * c + s[:-2, 1:-1, 1:-1])
                                 + 0.125 * (s[1:-1, 2:, 1:-1] - 2.0 * c + s[1:-1, :-2, 1:-1])
                                 + 0.125 * (s[1:-1, 1:-1, 2:] - 2.0 * c + s[1:-1, 1:-1, :-2]) + c)
    for _ in range(d["TSTEPS"]):
        step(a["B"], a["A"])
        step(a["A"], a["B"])


HEAT3D = Kernel(
    name="polybench/heat-3d", intent_source="polybench/heat3d.intent", intent_symbol="heat3d",
    c_source="polybench/heat3d.c", c_symbol="heat3d",
    tiny=Dataset("MINI", dict(TSTEPS=20, N=10)),
    quick=_sets(("MEDIUM", dict(TSTEPS=100, N=40))),
    full=_sets(("LARGE", dict(TSTEPS=500, N=120))),
    setup=_heat_setup, mutated=("A", "B"), results=("A", "B"),
    intent_call=lambda k, a, d: k(d["TSTEPS"], a["A"], a["B"]),
    c_call=lambda fn, a, d: fn(i32(d["TSTEPS"]), i32(d["N"]), ptr(a["A"]), ptr(a["B"])),
    numpy_call=_heat_numpy,
    flops=lambda d: 2 * 15.0 * d["TSTEPS"] * (d["N"] - 2) ** 3, **F64_TOLERANCE)


# ------------------------------------------------------------------------ data mining etc.

def _covariance_setup(d, rng):
    return dict(data=_u(rng, d["N"], d["M"]), cov=np.zeros((d["M"], d["M"])), mean=np.zeros(d["M"]))


def _covariance_numpy(a, d):
    centred = a["data"] - a["data"].mean(axis=0)
    np.matmul(centred.T, centred, out=a["cov"])
    a["cov"] /= d["N"] - 1.0


COVARIANCE = Kernel(
    name="polybench/covariance", intent_source="polybench/covariance.intent", intent_symbol="covariance",
    c_source="polybench/covariance.c", c_symbol="covariance",
    tiny=Dataset("MINI", dict(M=28, N=32)),
    quick=_sets(("MEDIUM", dict(M=240, N=260))),
    full=_sets(("LARGE", dict(M=1200, N=1400))),
    # the C centres `data` in place: it is restored before each call
    setup=_covariance_setup, mutated=("data", "cov", "mean"), results=("cov",),
    intent_call=lambda k, a, d: k(a["data"], out=a["cov"]),
    c_call=lambda fn, a, d: fn(i32(d["M"]), i32(d["N"]), ptr(a["data"]), ptr(a["cov"]), ptr(a["mean"])),
    numpy_call=_covariance_numpy, numpy_label="NumPy (OpenBLAS)",
    # PolyBench's count: the upper triangle only
    flops=lambda d: 1.0 * d["M"] * (d["M"] + 1) * d["N"], **F64_TOLERANCE)


def _floyd_setup(d, rng):
    n = d["N"]
    paths = rng.integers(1, 100, (n, n), dtype=np.int32)
    paths[rng.random((n, n)) < 0.5] = 999  # PolyBench's "no edge" weight
    np.fill_diagonal(paths, 0)
    return dict(paths=paths)


def _floyd_numpy(a, d):
    p = a["paths"]
    for k in range(d["N"]):
        np.minimum(p, p[:, k:k + 1] + p[k], out=p)


FLOYD_WARSHALL = Kernel(
    name="polybench/floyd-warshall", intent_source="polybench/floyd_warshall.intent",
    intent_symbol="floyd_warshall", c_source="polybench/floyd_warshall.c", c_symbol="floyd_warshall",
    tiny=Dataset("MINI", dict(N=60)),
    quick=_sets(("MEDIUM", dict(N=500))),
    # LARGE (N = 2800) is ~22e9 updates, several seconds per call for each contender.
    full=_sets(("MEDIUM", dict(N=500)),),
    setup=_floyd_setup, mutated=("paths",), results=("paths",),
    intent_call=lambda k, a, d: k(a["paths"]),
    c_call=lambda fn, a, d: fn(i32(d["N"]), ptr(a["paths"])),
    numpy_call=_floyd_numpy,
    flops=lambda d: 2.0 * d["N"] ** 3, rtol=0.0, atol=0.0, tolerance="integers: exact")


def _trisolv_setup(d, rng):
    n = d["N"]
    L = np.tril(_u(rng, n, n)) / n
    np.fill_diagonal(L, 1.0 + _u(rng, n))
    return dict(L=L, b=_u(rng, n), x=np.zeros(n))


def _trisolv_numpy(a, d):
    a["x"][...] = _scipy_linalg.solve_triangular(a["L"], a["b"], lower=True, check_finite=False)


TRISOLV = Kernel(
    name="polybench/trisolv", intent_source="polybench/trisolv.intent", intent_symbol="trisolv",
    c_source="polybench/trisolv.c", c_symbol="trisolv",
    tiny=Dataset("MINI", dict(N=40)),
    quick=_sets(("LARGE", dict(N=2000))),
    full=_sets(("LARGE", dict(N=2000)), ("EXTRALARGE", dict(N=4000))),
    setup=_trisolv_setup, mutated=("x",), results=("x",),
    intent_call=lambda k, a, d: k(a["L"], a["b"], a["x"]),
    c_call=lambda fn, a, d: fn(i32(d["N"]), ptr(a["L"]), ptr(a["x"]), ptr(a["b"])),
    numpy_call=_trisolv_numpy if _scipy_linalg else None, numpy_label="SciPy (LAPACK trsv)",
    c_parallel=False, flops=lambda d: 1.0 * d["N"] ** 2, bytes=lambda d: 4.0 * d["N"] ** 2, **F64_TOLERANCE)


def _lu_setup(d, rng):
    n = d["N"]
    A = _u(rng, n, n)
    A += np.diag(A.sum(axis=0) + 1.0)  # column-dominant: no pivot would ever move a row
    return dict(A=A)


def _lu_numpy(a, d):
    packed, pivots = _scipy_linalg.lu_factor(a["A"], check_finite=False)
    if not np.array_equal(pivots, np.arange(d["N"])):
        raise ValueError("LAPACK pivoted: the comparison with an unpivoted LU is void")
    a["A"][...] = packed


LU = Kernel(
    name="polybench/lu", intent_source="polybench/lu.intent", intent_symbol="lu",
    c_source="polybench/lu.c", c_symbol="lu",
    tiny=Dataset("MINI", dict(N=40)),
    quick=_sets(("MEDIUM", dict(N=400))),
    full=_sets(("LARGE", dict(N=2000))),
    setup=_lu_setup, mutated=("A",), results=("A",),
    intent_call=lambda k, a, d: k(a["A"]),
    c_call=lambda fn, a, d: fn(i32(d["N"]), ptr(a["A"])),
    numpy_call=_lu_numpy if _scipy_linalg else None, numpy_label="SciPy (LAPACK getrf)",
    c_parallel=False, flops=lambda d: 2.0 / 3.0 * d["N"] ** 3, **F64_TOLERANCE)


def _durbin_setup(d, rng):
    n = d["N"]
    return dict(r=0.4 * 0.8 ** np.arange(n) * (0.5 + 0.5 * _u(rng, n)), y=np.zeros(n), z=np.zeros(n))


def _durbin_numpy(a, d):
    r = a["r"]
    column = np.concatenate(([1.0], r[:-1]))
    a["y"][...] = _scipy_linalg.solve_toeplitz(column, -r, check_finite=False)


DURBIN = Kernel(
    name="polybench/durbin", intent_source="polybench/durbin.intent", intent_symbol="durbin",
    c_source="polybench/durbin.c", c_symbol="durbin",
    tiny=Dataset("MINI", dict(N=40)),
    quick=_sets(("LARGE", dict(N=2000))),
    full=_sets(("LARGE", dict(N=2000)), ("EXTRALARGE", dict(N=4000))),
    setup=_durbin_setup, mutated=("y", "z"), results=("y",),
    intent_call=lambda k, a, d: k(a["r"], a["y"]),
    c_call=lambda fn, a, d: fn(i32(d["N"]), ptr(a["r"]), ptr(a["y"]), ptr(a["z"])),
    numpy_call=_durbin_numpy if _scipy_linalg else None, numpy_label="SciPy (Levinson)",
    c_parallel=False, flops=lambda d: 3.0 * d["N"] ** 2, **F64_TOLERANCE)


KERNELS = (GEMM, MM2, ATAX, MVT, GEMVER, JACOBI2D, SEIDEL2D, HEAT3D, COVARIANCE, FLOYD_WARSHALL,
           TRISOLV, LU, DURBIN)
