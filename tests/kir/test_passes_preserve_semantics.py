"""The KIR passes keep every kernel's meaning: each kernel of each sample (and benchmark
kernel) is run in the reference interpreter on the KIR the front end builds and on the KIR
after each pass of ``intentc.lower.pipeline.KIR_PASSES`` (whatever that list holds), on the
same small inputs, and the results must agree.

Once a pass has turned returned tensors into caller-provided result parameters
(``Param.result``, from ``expand_tensor_exprs`` on), the kernel is called with arrays of the
declared result extents for them, filled with a sentinel so that an element the lowered
kernel fails to write shows. Returned tensors and ``mut`` parameters are compared: integers,
bools and microscaled codes exactly; floats bit for bit (NaN matches NaN), or, when the
kernel has float reductions, scans, folds, region ops, contractions or histograms, within
``REGROUPED`` of ``tests/conftest.py`` (relative to the largest magnitude compared, at least
the inputs' norm): the lowering regroups those (T1-T7, R3). The inputs are valid (ragged
offsets, sparse metadata and MX blocks are prepared per kernel), so every kernel runs to the
end before the passes, and must after each of them.

Lowered KIR holds ops that only lowering builds (``contract_tiles``, ``lane_chains``,
``scaled_tiles``, ``sparse24_tiles``, ``csr_tiles``); the interpreter runs them through
``intentc/interp/lowered.py``, so this test checks those handlers as well.
"""
from __future__ import annotations

import copy
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from conftest import REGROUPED, REGROUPING  # noqa: E402
from intentc.driver import frontend, read_source  # noqa: E402
from intentc.kir.extents import evaluate as evaluate_extent  # noqa: E402
from intentc import KernelError  # noqa: E402
from intentc.interp import Interpreter  # noqa: E402
from intentc.interp.numeric import numpy_dtype  # noqa: E402
from intentc.kir.types import TensorType  # noqa: E402
from intentc.lower import region_lowering  # noqa: E402
from intentc.lower.pipeline import KIR_PASSES  # noqa: E402

PROGRAMS = sorted(REPO.glob("samples/*.intent")) + sorted(REPO.glob("benchmarks/kernels/*.intent"))
LOWERED_ONLY = {"contract_tiles", "lane_chains", "scaled_tiles", "sparse24_tiles", "csr_tiles"}


# Region scans are cut into sub-segments of ``region_lowering.CHAIN_SEGMENT`` members and
# emitted as groups of lane chains; the interpreter runs lowered loops element by element, so
# the passes here cut them shorter (a multiple of a cache line's f32 members, like the real
# size): one full group of chains then needs ~800 members instead of ~33,000. The lowering
# reads the size when it runs, and the lowered ops carry it (``lane_chains``' ``segment``).
TEST_CHAIN_SEGMENT = 64 + 32


def _stages(path: Path) -> list[tuple[str, object]]:
    """(stage, module): the front end's KIR, then the KIR after each KIR pass (each a copy,
    so that no pass can change an earlier stage)."""
    module = frontend(read_source(str(path)), str(path))
    stages = [("frontend", copy.deepcopy(module))]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(region_lowering, "CHAIN_SEGMENT", TEST_CHAIN_SEGMENT)
        for name, run in KIR_PASSES:
            module = run(module)
            stages.append((name, copy.deepcopy(module)))
    return stages


_STAGES: dict[Path, list] = {}


def stages_of(path: Path) -> list[tuple[str, object]]:
    if path not in _STAGES:
        _STAGES[path] = _stages(path)
    return _STAGES[path]


KERNELS = [(path, func.name) for path in PROGRAMS for func in frontend(read_source(str(path)), str(path)).kernels]


# ---- inputs -------------------------------------------------------------------------------------
def _random(rng, dtype, shape):
    nd = numpy_dtype(dtype)
    if dtype.kind == "mx":  # any byte is a code; scales near 1 so that sums stay finite
        if dtype.name == "e8m0":
            return rng.integers(120, 134, shape, dtype=np.uint8).view(nd)
        return rng.integers(0, 256, shape, dtype=np.uint8).view(nd)
    if dtype.is_bool:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.is_float:
        return rng.uniform(-4, 4, shape).astype(nd)
    if dtype.name == "u32":  # philox keys and counters: any word
        return rng.integers(0, 2 ** 32, shape, dtype=np.uint64).astype(nd)
    return rng.integers(0, 4, shape).astype(nd)  # small: valid indices, bins and loop counts


def _scalar(rng, dtype):
    if dtype.is_float:
        return float(rng.uniform(-2, 2))
    if dtype.is_bool:
        return True
    return int(rng.integers(1, 6))


def _offsets(rng, rows: int) -> np.ndarray:
    """Offsets of ``rows`` rows of 0 to 3 stored values each (some rows empty, some longer)."""
    lengths = rng.integers(0, 4, rows)
    lengths[:2] = (0, 3)
    return np.concatenate([[0], np.cumsum(rng.permutation(lengths))]).astype(np.int64)


def _ragged(rng, sizes: dict) -> dict:
    """ragged_csr: a valid relation of R rows (offsets from 0, non-decreasing, G2)."""
    offsets = _offsets(rng, sizes["R"])
    given = {"offsets": offsets, "NNZ": int(offsets[-1]), "R1": sizes["R"] + 1}
    if "C" in sizes:  # spmv_csr: columns of x
        given["cols"] = rng.integers(0, sizes["C"], int(offsets[-1])).astype(np.int64)
    return given


def _csr(rng, sizes: dict) -> dict:
    """csr_spmm: valid compressed sparse rows (columns in [0, K), T5)."""
    offsets = _offsets(rng, sizes["R1"] - 1)
    nnz = int(offsets[-1])
    return {"offsets": offsets, "NNZ": nnz, "columns": rng.integers(0, sizes["K"], nnz).astype(np.int64)}


def _sparse24(rng, sizes: dict) -> dict:
    """sparse24_matmul: two kept values per group of four, in increasing positions (T5)."""
    pairs = [(i, j) for i in range(4) for j in range(i + 1, 4)]
    meta = np.array([a | b << 2 for a, b in pairs], np.uint8)[rng.integers(0, len(pairs), (sizes["M"], sizes["Q"]))]
    return {"meta": meta, "H": 2 * sizes["Q"], "K": 4 * sizes["Q"]}


def _mxfp8(rng, sizes: dict) -> dict:
    """mxfp8_matmul: K = 32 G (T4)."""
    return {"K": 32 * sizes["G"]}


def _decaying(rng, sizes: dict) -> dict:
    """linear_recurrence: |a| < 1, so that the state stays finite over N steps (an overflow
    turns into inf or NaN depending on the grouping, which the regrouping may change)."""
    return {"a": rng.uniform(-0.95, 0.95, sizes["N"]).astype(np.float32)}


# Per kernel: extents that differ from the default, and parameters that must hold valid data.
SIZES = {
    # at least one full group of lane chains (lane_lowering: LANES chains of TEST_CHAIN_SEGMENT members)
    "linear_recurrence": {"N": 8 * TEST_CHAIN_SEGMENT + 37},
    "final_state": {"N": 8 * TEST_CHAIN_SEGMENT + 37},
    "selective_scan": {"D": 2, "T": 6},  # each (d, state) pair is a scan with long lowered helper bodies
    "broadcast_add": {"M": 5, "N": 7, "P": 1, "Q": 7},  # b broadcasts along M (S2)
    "csr_spmm": {"R1": 9, "K": 7, "N": 19},
    "sparse24_matmul": {"M": 7, "Q": 3, "N": 37},
    "mxfp8_matmul": {"M": 9, "G": 2, "N": 35},
    "mxfp4_matmul": {"M": 9, "G": 2, "N": 35},
    "sgemm": {"M": 13, "K": 9, "N": 21},
}
VALID = {"csr_row_sums": _ragged, "segment_max": _ragged, "spmv_csr": _ragged, "csr_spmm": _csr,
         "sparse24_matmul": _sparse24, "mxfp8_matmul": _mxfp8, "linear_recurrence": _decaying,
         "final_state": _decaying}


def _arguments(func, rng) -> tuple[list, dict]:
    """Arguments for ``func`` and the extent of every name they fix."""
    names = [e for p in func.params for e in p.extents if isinstance(e, str)]
    sizes = {name: 5 + 2 * k for k, name in enumerate(dict.fromkeys(names))}
    sizes.update(SIZES.get(func.name, {}))
    given = VALID[func.name](rng, sizes) if func.name in VALID else {}
    sizes.update({k: v for k, v in given.items() if isinstance(v, int)})
    args = []
    for param, value in zip(func.params, func.args):
        if isinstance(value.type, TensorType):
            shape = tuple(e if isinstance(e, int) else evaluate_extent(e, sizes) for e in param.extents)
            args.append(given[param.name] if param.name in given else _random(rng, value.type.dtype, shape))
        else:
            args.append(_scalar(rng, value.type))
    return args, sizes


# ---- running one stage ------------------------------------------------------------------------------
SENTINEL = {"f": -12345.5, "i": 0x5A, "u": 0x5A, "b": True}  # what no lowered kernel may leave


def _result_arrays(func, front, sizes: dict) -> list[np.ndarray]:
    """Caller-provided arrays for ``func``'s result parameters, in result order."""
    arrays = []
    for t, extents in zip(front.result_types, front.result_extents):
        shape = tuple(e if isinstance(e, int) else evaluate_extent(e, sizes) for e in extents)
        array = np.zeros(shape, numpy_dtype(t.dtype))
        if array.dtype.kind in SENTINEL:
            array[...] = SENTINEL[array.dtype.kind]
        arrays.append(array)
    assert sum(p.result for p in func.params) == len(arrays), f"{func.name}: result parameters differ from results"
    return arrays


def _run(module, front, kernel: str, args: list, sizes: dict):
    """('error', code) or ('ok', results, mutated arguments) of one stage's kernel."""
    func = module.function(kernel)
    copies = copy.deepcopy(args)
    outs = _result_arrays(func, front, sizes) if any(p.result for p in func.params) else []
    try:
        with np.errstate(all="ignore"):
            returned = Interpreter(module).call(kernel, *copies, *outs)
    except KernelError as exc:
        return ("error", exc.code)
    results = outs or ([] if returned is None else list(returned) if isinstance(returned, tuple) else [returned])
    mutated = [copies[k] for k, p in enumerate(func.params[:len(args)]) if p.mutable]
    return ("ok", results, mutated)


def _regroups(func_module, kernel: str) -> bool:
    """The kernel (or a helper it calls) has a float operation the lowering may regroup."""
    seen, todo = set(), [kernel]
    while todo:
        func = func_module.function(todo.pop())
        seen.add(func.name)
        for op in func.walk():
            if op.name == "call" and op.attrs["callee"] not in seen:
                todo.append(op.attrs["callee"])
            if op.name in REGROUPING and any(getattr(getattr(v.type, "dtype", v.type), "is_float", False)
                                             for v in list(op.operands) + list(op.results)):
                return True
    return False


def _norm(args: list) -> float:
    total = 0.0
    for a in args:
        if isinstance(a, np.ndarray) and a.dtype.kind == "f" and a.size:
            x = a.astype(np.float64)
            total += float(np.sum(x[np.isfinite(x)] ** 2))
    return float(np.sqrt(total))


def _assert_agree(got: np.ndarray, want: np.ndarray, what: str, relative: float | None, floor: float) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape, \
        f"{what}: {got.dtype}{list(got.shape)} after the pass, {want.dtype}{list(want.shape)} before"
    if want.dtype.kind in "biu":
        same = got == want
    elif want.dtype.kind != "f" and want.dtype.itemsize == 1:  # microscaled codes
        same = got.view(np.uint8) == want.view(np.uint8)
    else:
        g64, w64 = got.astype(np.float64), want.astype(np.float64)
        nan = np.isnan(g64) & np.isnan(w64)
        if relative is None:
            same = nan | ((g64 == w64) & (np.signbit(g64) == np.signbit(w64)))
        else:
            finite = np.isfinite(g64) & np.isfinite(w64)
            scale = max([floor, 1e-300] + [float(np.abs(x[finite]).max()) for x in (g64, w64) if finite.any()])
            with np.errstate(invalid="ignore"):
                same = nan | np.where(finite, np.abs(g64 - w64) <= relative * scale, g64 == w64)
    if not np.all(same):
        bad = np.argwhere(~np.asarray(same))[:4]
        detail = ", ".join(f"{tuple(int(i) for i in p)}: {got[tuple(p)]!r} vs {want[tuple(p)]!r}" for p in bad)
        raise AssertionError(f"{what} differs at {detail}")


def test_the_corpus_holds_every_sample():
    assert len(PROGRAMS) >= 20 and any(p.stem == "sgemm" for p in PROGRAMS)


def test_every_lowered_only_op_runs(monkeypatch):
    """Each op only lowering builds is executed by some lowered kernel here, so that the
    comparison below checks its handler (``intentc/interp/lowered.py``)."""
    from intentc.interp import lowered, registry

    ran = set()
    for name, handler in lowered.HANDLERS.items():
        def counted(it, op, env, handler=handler):
            ran.add(op.name)
            return handler(it, op, env)
        monkeypatch.setitem(registry.HANDLERS, name, counted)
    for path, kernel in KERNELS:
        stages = stages_of(path)
        lowered = stages[-1][1]
        if any(op.name in LOWERED_ONLY for op in lowered.function(kernel).walk()):
            front = stages[0][1].function(kernel)
            args, sizes = _arguments(front, np.random.default_rng(sum(map(ord, kernel))))
            assert _run(lowered, front, kernel, args, sizes)[0] == "ok", kernel
    assert ran == LOWERED_ONLY, f"never executed: {sorted(LOWERED_ONLY - ran)}"


def test_the_interpreter_defines_every_declared_op():
    from intentc.interp.registry import HANDLERS
    from intentc.kir.ops import REGISTRY

    assert not sorted(set(REGISTRY) - set(HANDLERS))


@pytest.mark.parametrize("path,kernel", KERNELS, ids=[f"{p.stem}.{k}" for p, k in KERNELS])
def test_kir_passes_preserve_the_kernel(path, kernel):
    stages = stages_of(path)
    front = stages[0][1].function(kernel)
    rng = np.random.default_rng(sum(map(ord, kernel)))
    args, sizes = _arguments(front, rng)
    expected = _run(stages[0][1], front, kernel, args, sizes)
    # Every kernel runs to the end on these inputs, so results (not only refusals) are compared.
    assert expected[0] == "ok", f"{kernel}: its inputs fail before any pass: KernelError {expected[1]}"
    regroups = _regroups(stages[0][1], kernel)
    for stage, module in stages[1:]:
        got = _run(module, front, kernel, args, sizes)
        assert got[0] == expected[0], f"{kernel} after {stage}: {got[:2]}, before the passes: {expected[:2]}"
        if got[0] == "error":
            assert got[1] == expected[1], f"{kernel} after {stage}: KernelError {got[1]}, before: {expected[1]}"
            continue
        for kind, index in (("result", 1), ("mut parameter", 2)):
            assert len(got[index]) == len(expected[index])
            for k, (g, w) in enumerate(zip(got[index], expected[index])):
                g, w = np.asarray(g), np.asarray(w)
                tolerance = REGROUPED.get({2: "f16", 4: "f32", 8: "f64"}.get(w.dtype.itemsize)) if regroups else None
                _assert_agree(g, w, f"{kernel} after {stage}: {kind} {k}", tolerance, _norm(args))
