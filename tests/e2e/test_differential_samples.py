"""Every kernel of every sample in samples/, compiled vs interpreted (the ``differential``
fixture), on inputs built from the kernel's signature: zero, one and larger extents,
contiguous, strided, reversed and transposed views, preallocated (strided) ``out=``,
special float values, broadcasting shapes, and calls the ABI must refuse."""
from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

import intentc

from intentc.driver import load_module
from intentc.interp.numeric import numpy_dtype
from intentc.kir.types import TensorType

REPO = Path(__file__).resolve().parents[2]
SAMPLES = sorted(p for p in (REPO / "samples").glob("*.intent"))
KERNELS = [(path, func.name) for path in SAMPLES for func in load_module(str(path)).kernels]

SPECIAL_FLOATS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -3.5, 65504.0]


def test_every_sample_is_covered():
    assert len(SAMPLES) >= 5, "samples/ lost its programs"
    assert {p.stem for p in SAMPLES} >= {"saxpy", "broadcast_add", "row_scale", "clamp", "collatz_steps"}


# Ops that only lowering passes create (they never reach the interpreter, which runs KIR
# as the front end builds it).
LOWERING_ONLY = {"contract_tiles", "scaled_tiles", "sparse24_tiles", "csr_tiles", "lane_chains"}


def test_interpreter_defines_every_op():
    """The interpreter is the definition of every op the front end can emit."""
    from intentc.interp.registry import HANDLERS
    from intentc.kir.ops import REGISTRY

    missing = sorted(set(REGISTRY) - set(HANDLERS) - LOWERING_ONLY)
    assert not missing, f"KIR ops without a meaning in intentc/interp/: {missing}"


def _values(rng, dtype, shape):
    nd = numpy_dtype(dtype)
    if nd.kind not in "biuf":  # MX codes (ml_dtypes, one per byte): any byte is a code
        if nd.name.startswith("float8_e8m0"):  # scales near 1, so that sums do not overflow
            return rng.integers(118, 137, shape, dtype=np.uint8).view(nd)
        return rng.integers(0, 256, shape, dtype=np.uint8).view(nd)
    if dtype.is_bool:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.is_float:
        values = rng.uniform(-100, 100, shape).astype(nd)
        flat = values.reshape(-1)
        if flat.size >= 8:  # sprinkle special values
            picks = rng.choice(flat.size, size=min(len(SPECIAL_FLOATS), flat.size // 4), replace=False)
            flat[picks] = np.array(SPECIAL_FLOATS[:len(picks)], nd)
        return values
    info = np.iinfo(nd)
    if dtype.bits <= 16:
        return rng.integers(info.min, info.max, shape, dtype=nd, endpoint=True)
    # Mostly small values (so loops like collatz end), some edge values.
    values = rng.integers(-50 if dtype.is_signed else 0, 300, shape).astype(nd)
    flat = values.reshape(-1)
    edges = [info.min, info.max, 0, 1] + ([-1] if dtype.is_signed else [])
    for k, e in enumerate(edges[: flat.size // 3]):
        flat[k * 3] = e
    return values


def _layout(array: np.ndarray, layout: str, rng) -> np.ndarray:
    """The same values as a view with another memory layout."""
    if layout == "contiguous" or array.ndim == 0:
        return array
    if layout == "strided":  # every other element on the last axis, inside a larger buffer
        shape = array.shape[:-1] + (2 * array.shape[-1] + 1,)
        big = np.zeros(shape, array.dtype)
        view = big[..., 1::2]
        view[...] = array
        return view
    if layout == "reversed":
        return np.ascontiguousarray(array[..., ::-1])[..., ::-1]
    if layout == "transposed":  # column-major storage
        return np.asfortranarray(array)
    if layout == "readonly":
        array = array.copy()
        array.flags.writeable = False
        return array
    raise ValueError(layout)


def _ssm_domain(name: str, values: np.ndarray) -> np.ndarray:
    """selective_scan: a state-space model decays (delta >= 0 and a <= 0, so every step
    multiplies the state by exp(delta * a) in (0, 1]) and its inputs are finite. Outside
    that, states overflow, and the compiled code's composed segment maps (R8) turn
    infinities into NaN at other places than the interpreter's serial loop (inf * 0 of an
    underflowed product of decays): both are the operation's meaning rounded differently.
    NaN inputs stay (they propagate alike)."""
    values = np.where(np.isinf(values), np.sign(values), values).astype(values.dtype)
    if name == "delta":
        return np.abs(values) * np.float32(1e-3)
    if name == "a":
        return -np.abs(values) * np.float32(0.16)
    return values


# Kernels whose random inputs are first mapped into the domain they are defined for:
# ``DOMAINS[kernel](param name, values) -> values``.
DOMAINS = {"selective_scan": _ssm_domain}


def _args(func, sizes: dict, rng, layout="contiguous", shapes: dict | None = None):
    """Arguments for ``func``: extents from ``sizes`` (by extent name), or a param's shape
    from ``shapes``; mut parameters get a sentinel-filled array in the same layout; the
    values of a kernel in ``DOMAINS`` mapped into its domain."""
    args = []
    for param, value in zip(func.params, func.args):
        t = value.type
        if isinstance(t, TensorType):
            shape = (shapes or {}).get(param.name) or tuple(e if isinstance(e, int) else sizes[e]
                                                            for e in param.extents)
            array = _values(rng, t.dtype, shape)
            if func.name in DOMAINS:
                array = DOMAINS[func.name](param.name, array)
            args.append(_layout(array, "contiguous" if param.mutable and layout == "readonly" else layout, rng))
        else:
            dtype = t
            if dtype.is_float:
                args.append(float(rng.uniform(-4, 4)))
            elif dtype.is_bool:
                args.append(bool(rng.integers(0, 2)))
            else:
                args.append(int(rng.integers(1, 200)))
    return args


def _extent_names(func) -> list[str]:
    names = []
    for param in func.params:
        for e in param.extents:
            if isinstance(e, str) and e not in names:
                names.append(e)
    return names


LAYOUTS = ["contiguous", "strided", "reversed", "transposed", "readonly"]
SIZES = [0, 1, 3, 17, 64]


@pytest.mark.parametrize("path,kernel", KERNELS, ids=[f"{p.stem}.{k}" for p, k in KERNELS])
def test_sample_kernel(differential, path, kernel):
    source = path.read_text()
    func = load_module(source).function(kernel)
    names = _extent_names(func)
    rng = np.random.default_rng(abs(hash(kernel)) % 1000)
    succeeded = 0
    for size, layout in itertools.product(SIZES, LAYOUTS):
        sizes = {name: size + 2 * k for k, name in enumerate(names)} if size else {n: 0 for n in names}
        # Extents named only once are broadcast partners: give them the shape of their
        # partner axis (same name order) so that the call is valid.
        sizes = _partner_sizes(func, sizes)
        run = differential(source, kernel, *_args(func, sizes, rng, layout))
        # Random offsets are no ragged relation: such kernels refuse them before writing (G2);
        # a sample may also refuse some extents (stencil3 needs N >= 1, csr_spmm R1 >= 1).
        # Both sides alike: the fixture compares the refusals.
        assert run.error is None or isinstance(run.error, intentc.KernelError), \
            f"{kernel} {sizes} {layout}: {run.error!r}"
        succeeded += run.error is None
    if not _validates_data(func):
        assert succeeded >= (len(SIZES) - 2) * len(LAYOUTS), f"{kernel}: only {succeeded} calls succeeded"


def _validates_data(func) -> bool:
    """The kernel refuses inputs that are not a valid relation or format (ragged offsets,
    G2; compressed sparse rows, 2:4 metadata, T5; MX blocks of 32, T4), which random
    inputs seldom are (their own checks, run below through the interpreter, use valid ones)."""
    return _validates_offsets(func) or any(op.name in ("sparse_contract", "scaled_contract") for op in func.walk())


def _validates_offsets(func) -> bool:
    """The kernel checks a ragged relation's offsets at run time (I.ragged, G2)."""
    return any(op.name == "assert_true" and op.attrs.get("rule") == "G2" for op in func.walk())


def _tied_last_extent(func, k: int) -> bool:
    """Parameter k's last extent is a literal or a name another parameter shares (S1), so a
    longer last axis must be refused; an extent named once is any size the caller likes."""
    extents = func.params[k].extents
    if not extents or isinstance(extents[-1], int):
        return bool(extents)
    return any(extents[-1] in p.extents for j, p in enumerate(func.params) if j != k)


def _partner_sizes(func, sizes: dict) -> dict:
    """Give each extent that only one parameter names the extent of the axis it lines up
    with (from the end) in the first parameter of the same rank, so broadcasts are valid."""
    counts = {}
    for param in func.params:
        for e in param.extents:
            if isinstance(e, str):
                counts[e] = counts.get(e, 0) + 1
    first = next((p for p in func.params if p.extents), None)
    out = dict(sizes)
    for param in func.params:
        if param is first or len(param.extents) != len(first.extents):
            continue
        for mine, theirs in zip(param.extents, first.extents):
            if isinstance(mine, str) and counts[mine] == 1 and isinstance(theirs, str):
                out[mine] = out[theirs]
    return out


# ---- kernels with returned tensors: out= buffers --------------------------------------
def _valid_csr(sizes: dict, rng):
    """csr_spmm: a valid CSR relation (offsets from 0, non-decreasing, columns in [0, K))."""
    rows, k, n = sizes["R1"] - 1, sizes["K"], sizes["N"]
    counts = rng.integers(0, 3, rows)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    nnz = int(offsets[-1])
    columns = rng.integers(0, k, nnz).astype(np.int64)
    return [offsets, columns, rng.uniform(-4, 4, nnz).astype(np.float32),
            rng.uniform(-4, 4, (k, n)).astype(np.float32)]


def _valid_sparse24(sizes: dict, rng):
    """sparse24_matmul: two kept values per group of four, increasing positions (T5)."""
    m, q, n = sizes["M"], sizes["Q"], sizes["N"]
    pairs = [(i, j) for i in range(4) for j in range(i + 1, 4)]
    meta = np.array([p[0] | p[1] << 2 for p in pairs], np.uint8)[rng.integers(0, len(pairs), (m, q))]
    return [rng.uniform(-4, 4, (m, 2 * q)).astype(np.float32), meta,
            rng.uniform(-4, 4, (4 * q, n)).astype(np.float32)]


def _valid_mxfp8(sizes: dict, rng):
    """mxfp8_matmul: K = 32·G (T4); codes any byte, scales near 1."""
    m, g, n = sizes["M"], sizes["G"], sizes["N"]
    f8, e8 = numpy_dtype(_dtype("f8e4m3")), numpy_dtype(_dtype("e8m0"))
    codes = lambda shape: rng.integers(0, 256, shape, dtype=np.uint8).view(f8)
    scales = lambda shape: rng.integers(120, 134, shape, dtype=np.uint8).view(e8)
    return [codes((m, 32 * g)), scales((m, g)), codes((32 * g, n)), scales((n, g))]


def _dtype(name: str):
    from intentc.kir.types import DTYPES

    return DTYPES[name]


VALID_ARGUMENTS = {"csr_spmm": _valid_csr, "sparse24_matmul": _valid_sparse24, "mxfp8_matmul": _valid_mxfp8}


RETURNING = [(p, k) for p, k in KERNELS if load_module(str(p)).function(k).result_types]


@pytest.mark.parametrize("path,kernel", RETURNING, ids=[f"{p.stem}.{k}" for p, k in RETURNING])
def test_out_buffers(differential, path, kernel):
    source = path.read_text()
    func = load_module(source).function(kernel)
    rng = np.random.default_rng(5)
    sizes = _partner_sizes(func, {n: 5 + k for k, n in enumerate(_extent_names(func))})
    from intentc.kir.extents import evaluate

    shapes = [tuple(e if isinstance(e, int) else evaluate(e, sizes) for e in ext) for ext in func.result_extents]
    dtypes = [numpy_dtype(t.dtype) for t in func.result_types]

    def outs(first):
        """One out= buffer per result: ``first(shape, dtype)`` for the first, zeros for the rest."""
        made = [first(shape, nd) if k == 0 else np.zeros(shape, nd) for k, (shape, nd) in enumerate(zip(shapes, dtypes))]
        return made[0] if len(made) == 1 else tuple(made)

    def args():
        """Random arguments, or for kernels that check their data (T4, T5, G2) valid ones."""
        valid = VALID_ARGUMENTS.get(kernel)
        return valid(sizes, rng) if valid else _args(func, sizes, rng)

    for layout in ("contiguous", "strided", "transposed"):
        out = outs(lambda shape, nd: _layout(np.full(shape, 7, nd), layout, rng))
        run = differential(source, kernel, *args(), out=out)
        assert run.error is None, run.error
        results = run.result if isinstance(run.result, tuple) else (run.result,)
        buffers = run.out if isinstance(run.out, list) else [run.out]
        assert all(r is b for r, b in zip(results, buffers)), "the kernel must return its out= buffers"
    # The first result's buffer wrong: extent, dtype, rank, read-only, zero stride (when an
    # axis has more than one element, where a zero stride aliases elements).
    readonly = np.zeros(shapes[0], dtypes[0])
    readonly.flags.writeable = False
    cases = [(lambda shape, nd: np.zeros(tuple(s + 1 for s in shape), nd), -4),
             (lambda shape, nd: np.zeros(shape, np.int8 if nd != np.int8 else np.uint8), -2),
             (lambda shape, nd: np.zeros(shape + (1,), nd), -3),
             (lambda shape, nd: readonly, -5)]
    if any(e > 1 for e in shapes[0]):
        cases.append((lambda shape, nd: np.lib.stride_tricks.as_strided(
            np.zeros(1, nd), shape=shape, strides=(0,) * len(shape)), -5))
    for make, code in cases:
        run = differential(source, kernel, *args(), out=outs(make))
        assert run.error is not None and run.error.code == code, (code, run.error)


# ---- broadcasting (S2, S3) -----------------------------------------------------------------
BROADCAST = (REPO / "samples" / "broadcast_add.intent").read_text()


@pytest.mark.parametrize("m,n", [(3, 5), (1, 1), (0, 4), (4, 0), (0, 0), (17, 33)])
def test_broadcast_add_shapes(differential, m, n):
    rng = np.random.default_rng(m * 100 + n)
    x = _values(rng, _f32(), (m, n))
    for p, q in {(m, n), (1, n), (m, 1), (1, 1)}:
        b = _values(rng, _f32(), (p, q))
        run = differential(BROADCAST, "broadcast_add", x, b)
        assert run.error is None
        np.testing.assert_array_equal(run.result, x + b)
    # Transposed and strided operands.
    if m and n:
        b = _layout(_values(rng, _f32(), (1, n)), "strided", rng)
        assert differential(BROADCAST, "broadcast_add", _layout(x, "transposed", rng), b).error is None


@pytest.mark.parametrize("xshape,bshape", [((3, 5), (2, 5)), ((3, 5), (3, 4)), ((3, 5), (0, 5)), ((0, 5), (2, 5)),
                                           ((3, 0), (3, 2)), ((4, 4), (4,))])
def test_broadcast_add_refused(differential, xshape, bshape):
    rng = np.random.default_rng(1)
    run = differential(BROADCAST, "broadcast_add", _values(rng, _f32(), xshape), _values(rng, _f32(), bshape))
    assert run.error is not None and run.error.code == (-3 if len(bshape) != 2 else -4)


def test_add_row_bias_broadcasting(differential):
    rng = np.random.default_rng(2)
    for m, n in ((4, 6), (0, 6), (4, 0), (1, 1)):
        x, bias = _values(rng, _f32(), (m, n)), _values(rng, _f32(), (n,))
        run = differential(BROADCAST, "add_row_bias", x, bias, 1.5)
        assert run.error is None
        np.testing.assert_array_equal(run.result, (x + bias) * np.float32(1.5))
    run = differential(BROADCAST, "add_row_bias", _values(rng, _f32(), (4, 6)), _values(rng, _f32(), (5,)), 1.0)
    assert run.error.code == -4


def _f32():
    from intentc.kir.types import F32

    return F32


# ---- bad calls: both sides refuse with the same code ---------------------------------------
@pytest.mark.parametrize("path,kernel", KERNELS, ids=[f"{p.stem}.{k}" for p, k in KERNELS])
def test_refused_calls(differential, path, kernel):
    source = path.read_text()
    func = load_module(source).function(kernel)
    rng = np.random.default_rng(3)
    sizes = _partner_sizes(func, {n: 4 + k for k, n in enumerate(_extent_names(func))})
    good = _args(func, sizes, rng)
    tensors = [k for k, v in enumerate(good) if isinstance(v, np.ndarray)]
    seen = set()
    for k in tensors:
        arg = good[k]
        wrong_dtype = arg.astype(np.float64 if arg.dtype != np.float64 else np.float32)
        cases = [(wrong_dtype, -2), (arg[..., None], -3)]
        if _tied_last_extent(func, k):
            cases.append((np.concatenate([arg, arg], axis=-1), -4))
        for bad, code in cases:
            args = list(good)
            args[k] = bad
            run = differential(source, kernel, *args)
            assert run.error is not None and run.error.code == code, \
                f"{kernel}: argument {k} {bad.shape} {bad.dtype}: {run.error!r}"
            seen.add(run.error.code)
        if func.params[k].mutable:
            readonly = arg.copy()
            readonly.flags.writeable = False
            args = list(good)
            args[k] = readonly
            assert differential(source, kernel, *args).error.code == -5
    assert seen == {-2, -3} | ({-4} if any(_tied_last_extent(func, k) for k in tensors) else set())


# ---- every sample's own Python check, every call compiled vs interpreted -----------------
class DifferentialModule:
    """Stands in for ``intentc.load(sample)`` in the samples' own checks (samples/checks*.py):
    every kernel call goes through the ``differential`` fixture (compiled and interpreted on
    copies, compared), then the compiled results are written back into the caller's
    arrays (``mut`` parameters, ``out=`` buffers) and returned as the loader would, so the
    check's own expectations still apply. Anything else is the compiled module's."""

    # Calls with more elements than this run compiled only (the check still compares them
    # with its reference): the interpreter takes about a microsecond per KIR op.
    LARGEST = 20_000

    def __init__(self, differential, source: str, module):
        self._differential = differential
        self._source = source
        self._module = module
        self._kernels = {f.name: f for f in load_module(source).kernels}
        self.calls = 0
        self.compiled_only = 0

    def __getattr__(self, name):
        if name in self.__dict__.get("_kernels", {}):
            return lambda *args, out=None, **kwargs: self._call(name, args, kwargs, out)
        return getattr(self._module, name)

    def _call(self, name, args, kwargs, out):
        arrays = [a for a in list(args) + list(kwargs.values()) + _as_list(out) if isinstance(a, np.ndarray)]
        if sum(a.size for a in arrays) > self.LARGEST:
            self.compiled_only += 1
            return getattr(self._module, name)(*args, out=out, **kwargs)
        self.calls += 1
        run = self._differential(self._source, name, *args, out=out, **kwargs)
        if run.error is not None:
            raise run.error
        func = self._kernels[name]
        names = [p.name for p in func.params]
        for k, value in enumerate(args):  # mut parameters: written in place
            if isinstance(value, np.ndarray) and func.params[k].mutable:
                value[...] = run.args[k]
        for key, value in kwargs.items():
            if isinstance(value, np.ndarray) and func.params[names.index(key)].mutable:
                value[...] = run.kwargs[key]
        if out is None:
            return run.result
        buffers = list(out) if isinstance(out, (tuple, list)) else [out]
        written = run.out if isinstance(run.out, list) else [run.out]
        for buffer, value in zip(buffers, written):
            buffer[...] = value
        return buffers[0] if len(buffers) == 1 else tuple(buffers)


def _as_list(out) -> list:
    if out is None:
        return []
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _sample_checks():
    import sys

    sys.path.insert(0, str(REPO / "samples"))
    try:
        from checks import CHECKS
    finally:
        sys.path.remove(str(REPO / "samples"))
    return CHECKS


CHECKED = [p for p in SAMPLES if p.stem in _sample_checks()]


@pytest.mark.parametrize("path", CHECKED, ids=[p.stem for p in CHECKED])
def test_sample_check_through_the_interpreter(differential, path):
    """The sample's own check (valid inputs designed for it, references, refusals), with
    every call also interpreted and compared."""
    source = path.read_text()
    module = DifferentialModule(differential, source, differential.build(source))
    summary = _sample_checks()[path.stem](module)
    assert summary.startswith(f"PASS {path.stem}"), summary
    assert module.calls > module.compiled_only, f"{module.calls} calls compared, {module.compiled_only} too large"
