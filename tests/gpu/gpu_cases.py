"""What the PTX target must compute, shared by the GPU run (test_gpu_samples.py) and the
CPU emulation of the same launches (test_emulated.py).

Each case takes a loaded module (``intentc.ptx_loader.Module``, wrapped in ``Adapter`` so
that failures raise ``intentc.KernelError`` like the CPU loader) and compares with NumPy
or a pure-Python reference: the samples through ``samples/checks.py`` (the same exact
checks as the CPU target: several shapes, zero extents, strided views, ``out=``, bad calls
refused with nothing written), plus the kernels below for what the samples do not reach
(several phases, the serial mapping, D5/D1 run-time checks, every arithmetic rule).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "samples"))

import checks  # noqa: E402,F401  samples/checks.py (used by the test files)
import intentc  # noqa: E402
from intentc import ptx_loader  # noqa: E402

SAMPLES = sorted(p.stem for p in (REPO / "samples").glob("*.intent"))

# ---- kernels beyond the samples ---------------------------------------------------------------
MAPPING_SOURCE = '''\
import intent as I

@intent.kernel
def two_phase(x: f32[N], tmp: mut f32[N], out: mut f32[N]):
    for i in I.parallel(x.axis(0)):
        tmp[i] = x[i] * 2.0
    for i in I.parallel(x.axis(0)):
        out[i] = tmp[N - 1 - i] + 1.0

@intent.kernel
def running_sum(x: f32[N], out: mut f32[N]):
    acc: f32 = 0.0
    for i in x.axis(0):
        acc = acc + x[i]
        out[i] = acc

@intent.kernel
def first_and_shift(x: f32[N], out: mut f32[N], first: mut f32[1]):
    first[0] = x[0]
    for i in I.parallel(x.axis(0)):
        out[i] = x[i] + 1.0

@intent.kernel
def bump_then_scale(x: mut f32[N], out: mut f32[N]):
    x[0] = x[0] + 1.0
    f = x[0]
    for i in I.parallel(x.axis(0)):
        out[i] = x[i] * f

@intent.kernel
def halve_k_times(x: mut f32[N], k: index):
    for t in I.domain(0, k):
        for i in I.parallel(x.axis(0)):
            x[i] = x[i] * 0.5

@intent.kernel
def shifted(x: f32[N], s: index, out: mut f32[N]):
    for i in I.parallel(x.axis(0)):
        out[i] = x[i + s]

@intent.kernel
def strided_fill(n: index, step: index, out: mut i64[M]):
    for i in I.parallel(I.domain(0, n, step)):
        out[i] = I.cast(i * 10, i64)

@intent.kernel
def outer(a: f32[R], b: f32[C], out: mut f32[R, C, 2]):
    for r, c, k in I.parallel(a.axis(0), b.axis(0), out.axis(2)):
        out[r, c, k] = a[r] * b[c] + I.cast(k, f32)
'''

# Structured operations: blocked reductions and scans use kernel-scope buffers (scratch
# memory the host allocates) and one-thread phases between the grid phases.
STRUCTURED_SOURCE = '''\
import intent as I

@intent.kernel
def total(x: f32[N], out: mut f32[1]):
    out[0] = I.sum(x)

@intent.kernel
def row_sums(x: f32[R, C]) -> f32[R]:
    return I.sum(x, axis=1)

@intent.kernel
def prefix(x: f32[N]) -> f32[N]:
    return I.cumsum(x)

@intent.kernel
def row_cumsum(x: f32[R, C], out: mut f32[R, C]):
    for r in I.parallel(x.axis(0)):
        c = I.cumsum(x[r, :])
        for j in I.parallel(x.axis(1)):
            out[r, j] = c[j]

@intent.kernel
def softmax_rows(x: f32[R, C], out: mut f32[R, C]):
    for r in I.parallel(x.axis(0)):
        m = I.max(x[r, :])
        s = I.sum(I.exp(x[r, :] - m))
        for c in I.parallel(x.axis(1)):
            out[r, c] = I.exp(x[r, c] - m) / s
'''

# Cooperative blocks (intentc/codegen/gpu_blocks.py): whole-tensor reductions on many
# blocks (each block a fixed tile, a block tree, then one block combining the partials),
# reductions of a row on one block per row, and values carried between launches.
COOPERATIVE_SOURCE = '''\
import intent as I

@intent.kernel
def dot(x: f32[N], y: f32[N], out: mut f32[1]):
    out[0] = I.sum(x * y)

@intent.kernel
def l2norm(x: f32[N], out: mut f32[1]):
    out[0] = I.sqrt(I.sum(x * x))

@intent.kernel
def total(x: f32[N]) -> f32[1]:
    return I.sum(x)

@intent.kernel
def int_total(x: i32[N]) -> i64[1]:
    return I.sum(x, acc=i64)

@intent.kernel
def int_max(x: i64[N]) -> i64[1]:
    return I.max(x)

@intent.kernel
def float_max(x: f64[N]) -> f64[1]:
    return I.max(x)

@intent.kernel
def softmax(x: f32[R, C], out: mut f32[R, C]):
    for r in I.parallel(x.axis(0)):
        m = I.max(x[r, :])
        s = I.sum(I.exp(x[r, :] - m))
        for c in I.parallel(x.axis(1)):
            out[r, c] = I.exp(x[r, c] - m) / s

@intent.kernel
def softmax_ordered(x: f32[R, C], out: mut f32[R, C]):
    for r in I.parallel(x.axis(0)):
        m = I.max(x[r, :])
        for c in x.axis(1):
            out[r, c] = I.exp(x[r, c] - m)
        inv = 1.0 / I.sum(out[r, :])
        for c in x.axis(1):
            out[r, c] = out[r, c] * inv

@intent.kernel
def row_running(x: f32[R, C], out: mut f32[R, C]):
    for r in I.parallel(x.axis(0)):
        m = I.max(x[r, :])
        acc: f32 = 0.0
        for c in x.axis(1):
            acc = acc + (x[r, c] - m)
            out[r, c] = acc

@intent.kernel
def shifted_rows(x: f32[R, C], out: mut f32[R, C]):
    for r in I.parallel(x.axis(0)):
        m = I.max(x[r, :])
        out[r, 0] = m
        for c in I.domain(1, C):
            out[r, c] = out[r, c - 1] + x[r, c]

@intent.kernel
def narrow_rows(x: i32[R, 4]) -> i32[R]:
    return I.sum(x, axis=1)

@intent.kernel
def layernorm_backward(dout: f32[R, C], x: f32[R, C], w: f32[C], mean: f32[R], rstd: f32[R], dx: mut f32[R, C]):
    for r in I.parallel(x.axis(0)):
        dnorm_mean = I.sum(w * dout[r, :] * (x[r, :] - mean[r]) * rstd[r]) / I.cast(C, f32)
        dmean = I.sum(w * dout[r, :]) / I.cast(C, f32)
        for c in I.parallel(x.axis(1)):
            norm = (x[r, c] - mean[r]) * rstd[r]
            dx[r, c] = (w[c] * dout[r, c] - dmean - norm * dnorm_mean) * rstd[r]

@intent.kernel
def crossentropy_mean(probs: f32[R, V], targets: index[R], losses: mut f32[R], out: mut f32[1]):
    for r in I.parallel(probs.axis(0)):
        losses[r] = -I.log(probs[r, targets[r]])
    out[0] = I.sum(losses) / I.cast(R, f32)
'''


# Every element-wise rule, one kernel per operation so a mismatch names it.
_FLOAT_BINARY = {"add": "x + y", "sub": "x - y", "mul": "x * y", "div": "x / y", "floordiv": "x // y",
                 "mod": "x % y", "pow": "x ** y", "minimum": "I.minimum(x, y)", "maximum": "I.maximum(x, y)"}
_FLOAT_UNARY = {"exp": "I.exp(x)", "log": "I.log(x)", "sqrt": "I.sqrt(x)", "abs": "I.abs(x)", "neg": "-x"}
_INT_BINARY = {"add": "a + b", "mul": "a * b", "floordiv": "a // b", "mod": "a % b", "pow": "a ** b",
               "and": "a & b", "xor": "a ^ b", "minimum": "I.minimum(a, b)"}


def _math_source() -> str:
    out = ["import intent as I\n"]
    for t in ("f32", "f64", "f16"):
        for name, expr in _FLOAT_BINARY.items():
            out.append(f"@intent.kernel\ndef {name}_{t}(x: {t}[N], y: {t}[N]) -> {t}[N]:\n    return {expr}\n")
        for name, expr in _FLOAT_UNARY.items():
            out.append(f"@intent.kernel\ndef {name}_{t}(x: {t}[N]) -> {t}[N]:\n    return {expr}\n")
    for t in ("i32", "i64", "u8"):
        for name, expr in _INT_BINARY.items():
            out.append(f"@intent.kernel\ndef {name}_{t}(a: {t}[N], b: {t}[N]) -> {t}[N]:\n    return {expr}\n")
    for src in ("f32", "f64"):
        for dst in ("i32", "u8", "i64"):
            out.append(f"@intent.kernel\ndef cast_{src}_{dst}(x: {src}[N]) -> {dst}[N]:\n"
                       f"    return I.cast(x, {dst})\n")
    out.append("@intent.kernel\ndef select_f32(c: bool[N], x: f32[N], y: f32[N]) -> f32[N]:\n"
               "    return I.where(c, x, y)\n")
    out.append("@intent.kernel\ndef less_f32(x: f32[N], y: f32[N]) -> bool[N]:\n    return x < y\n")
    return "\n".join(out)


MATH_SOURCE = _math_source()
# The largest distance in units in the last place between a libdevice function and NumPy:
# CUDA's documented bounds (expf 2, logf 1, powf 4; exp, log 1, pow 2) plus NumPy's own.
ULPS = {"exp": 4, "log": 4, "pow": 8}


class Adapter:
    """A module whose kernels raise ``intentc.KernelError``, as ``samples/checks.py`` expects."""

    def __init__(self, module):
        self.module = module

    def set_num_threads(self, n: int) -> None:
        """Thread counts are the CPU runtime's; a GPU launch's grid comes from the manifest."""

    def __getattr__(self, name):
        kernel = getattr(self.module, name)

        def call(*args, **kwargs):
            try:
                return kernel(*args, **kwargs)
            except ptx_loader.KernelError as exc:
                raise intentc.KernelError(exc.code, str(exc)) from None

        return call


# ---- checks -------------------------------------------------------------------------------------
def _refused(call, code: int, *untouched):
    before = [a.copy() for a in untouched]
    try:
        call()
    except intentc.KernelError as exc:
        assert exc.code == code, f"status {exc.code} ({exc}), expected {code}"
        message = str(exc)
    else:
        raise AssertionError(f"no KernelError (expected {code})")
    for a, b in zip(untouched, before):
        np.testing.assert_array_equal(a, b)
    assert message
    return message


def check_mapping(m) -> str:
    rng = np.random.default_rng(21)
    for n in (0, 1, 10, 1000):
        x = rng.uniform(-9, 9, n).astype(np.float32)
        tmp, out = np.zeros(n, np.float32), np.zeros(n, np.float32)
        m.two_phase(x, tmp, out)
        np.testing.assert_array_equal(tmp, x * np.float32(2))
        np.testing.assert_array_equal(out, (x * np.float32(2))[::-1] + np.float32(1))
        out = np.zeros(n, np.float32)
        m.running_sum(x, out)
        np.testing.assert_array_equal(out, np.cumsum(x, dtype=np.float32))
        y = x.copy()
        m.halve_k_times(y, 3)
        np.testing.assert_array_equal(y, x * np.float32(0.125))
        out = np.full(n, -1, np.float32)
        m.shifted(x, 0, out)
        np.testing.assert_array_equal(out, x)
    x = rng.uniform(-9, 9, 100).astype(np.float32)
    first, out = np.zeros(1, np.float32), np.zeros(100, np.float32)
    m.first_and_shift(x, out, first)
    assert first[0] == x[0]
    np.testing.assert_array_equal(out, x + np.float32(1))
    y, out = x.copy(), np.zeros(100, np.float32)
    m.bump_then_scale(y, out)
    bumped = x.copy()
    bumped[0] += np.float32(1)
    np.testing.assert_array_equal(y, bumped)
    np.testing.assert_array_equal(out, bumped * bumped[0])
    # D5: an index out of range is reported, never clamped; the host arrays stay as they were.
    out = np.full(100, -1, np.float32)
    message = _refused(lambda: m.shifted(x, 1, out), -6, out)
    assert "index 100 is out of range [0, 100)" in message, message
    _refused(lambda: m.shifted(x, -1, out), -6, out)
    # Domains with a run-time step (the grid formula has select/gt), D1 for step <= 0.
    for n, step in ((10, 3), (10, 1), (0, 2), (-5, 2), (7, 7), (9, 100)):
        o = np.zeros(10, np.int64)
        m.strided_fill(n, step, o)
        want = np.zeros(10, np.int64)
        want[0:max(n, 0):step] = np.arange(0, max(n, 0), step) * 10
        np.testing.assert_array_equal(o, want)
    o = np.zeros(10, np.int64)
    assert "step must be positive, got 0" in _refused(lambda: m.strided_fill(10, 0, o), -7, o)
    _refused(lambda: m.strided_fill(10, -2, o), -7, o)
    _refused(lambda: m.strided_fill(11, 1, o), -6, o)
    # Three flattened levels, one of them a literal extent.
    for r, c in ((3, 5), (1, 1), (0, 4), (37, 9)):
        a, b = rng.uniform(-2, 2, r).astype(np.float32), rng.uniform(-2, 2, c).astype(np.float32)
        out = np.zeros((r, c, 2), np.float32)
        m.outer(a, b, out)
        want = (a[:, None] * b[None, :])[:, :, None] + np.arange(2, dtype=np.float32)
        np.testing.assert_array_equal(out, want)
    return "PASS mapping: phases, serial mapping, D5/D1 checks, 3-level nests"


def _ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Distance in representable values between two float arrays (NaN to NaN is 0)."""
    bits = got.dtype.itemsize * 8
    ints = {16: np.int16, 32: np.int32, 64: np.int64}[bits]
    low = -(1 << (bits - 1))

    def key(v):  # a monotonic integer per float: -0.0 and 0.0 both 0
        return np.array([b if b >= 0 else low - b for b in v.view(ints).tolist()], dtype=object)

    distance = np.abs(key(got) - key(want))
    return np.where(np.isnan(got) & np.isnan(want), 0, distance)


def _same(got, want, what: str, ulps: int = 0) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, f"{what}: {got.dtype}{got.shape}"
    if got.dtype.kind != "f":
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    ints = {2: np.int16, 4: np.int32, 8: np.int64}[got.dtype.itemsize]
    if ulps == 0:  # bit for bit, the sign of zero included; any NaN matches any NaN
        differ = (got.view(ints) != want.view(ints)) & ~(np.isnan(got) & np.isnan(want))
        distance = differ.astype(int)
    else:
        distance = _ulps(got, want)
    if distance.size and int(distance.max()) > ulps:
        k = int(np.argmax(distance))
        raise AssertionError(f"{what}: {int(distance[k])} ulps apart at {k}: got {got.flat[k]!r}, "
                             f"want {want.flat[k]!r}")


def _wrap(values, dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    span = 1 << info.bits
    return np.array([((int(v) - info.min) % span) + info.min for v in values], dtype=dtype)


def _int_reference(name: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = []
    for x, y in zip(a.tolist(), b.tolist()):
        if name == "add":
            v = x + y
        elif name == "mul":
            v = x * y
        elif name == "floordiv":
            v = 0 if y == 0 else x // y
        elif name == "mod":
            v = x if y == 0 else x % y
        elif name == "pow":
            v = (x ** y) if y >= 0 else (1 if x == 1 else (-1 if y % 2 else 1) if x == -1 else 0)
        elif name == "and":
            v = x & y
        elif name == "xor":
            v = x ^ y
        else:
            v = min(x, y)
        out.append(v)
    return _wrap(out, a.dtype)


def _ieee_min_max(name: str, x, y):
    """IEEE 754-2019 minimum/maximum: NaN propagates, -0.0 < +0.0."""
    first = x < y if name == "minimum" else x > y
    tie = (x == y) & (np.signbit(x) if name == "minimum" else ~np.signbit(x))
    out = np.where(first | tie, x, y)
    return np.where(np.isnan(x) | np.isnan(y), np.array(np.nan, x.dtype), out).astype(x.dtype)


def _float_reference(name: str, x, y=None):
    if x.dtype == np.float16 and name in ("exp", "log", "pow"):  # computed in f32, rounded once
        wide = _float_reference(name, x.astype(np.float32), None if y is None else y.astype(np.float32))
        with np.errstate(over="ignore"):
            return wide.astype(np.float16)
    with np.errstate(all="ignore"):
        table = {"add": lambda: x + y, "sub": lambda: x - y, "mul": lambda: x * y, "div": lambda: x / y,
                 "floordiv": lambda: np.floor(x / y), "mod": lambda: np.remainder(x, y),
                 "pow": lambda: np.power(x, y), "minimum": lambda: _ieee_min_max("minimum", x, y),
                 "maximum": lambda: _ieee_min_max("maximum", x, y), "exp": lambda: np.exp(x),
                 "log": lambda: np.log(x), "sqrt": lambda: np.sqrt(x), "abs": lambda: np.abs(x),
                 "neg": lambda: -x}
        return table[name]()


def _cast_reference(x: np.ndarray, dtype) -> np.ndarray:
    """Float to integer: toward zero, saturating, NaN to 0."""
    info = np.iinfo(dtype)
    out = []
    for v in x.tolist():
        if v != v:
            out.append(0)
        elif v in (float("inf"), float("-inf")):
            out.append(info.max if v > 0 else info.min)
        else:
            out.append(min(max(int(v), info.min), info.max))
    return np.array(out, dtype=dtype)


def check_math(m, ulps: dict | None = None) -> str:
    """Every operation against NumPy; ``ulps`` bounds exp/log/pow (0: bit for bit)."""
    ulps = ULPS if ulps is None else ulps
    rng = np.random.default_rng(22)
    specials = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, np.inf, -np.inf, np.nan, 1e-30, -3.5, 7.0]
    count = 0
    for t, np_t in (("f32", np.float32), ("f64", np.float64), ("f16", np.float16)):
        x = np.concatenate([np.array(specials, np_t), rng.uniform(-20, 20, 300).astype(np_t)])
        y = np.concatenate([np.array(specials[::-1], np_t), rng.uniform(-4, 4, 300).astype(np_t)])
        for name in _FLOAT_BINARY:
            bound = ulps.get(name, 0)
            got = getattr(m, f"{name}_{t}")(x, y)
            _same(got, _float_reference(name, x, y), f"{name}_{t}", bound + (1 if t == "f16" and bound else 0))
            count += 1
        for name in _FLOAT_UNARY:
            bound = ulps.get(name, 0)
            arg = np.abs(x) if name in ("log", "sqrt") else x
            got = getattr(m, f"{name}_{t}")(arg)
            _same(got, _float_reference(name, arg), f"{name}_{t}", bound + (1 if t == "f16" and bound else 0))
            count += 1
    for t in ("i32", "i64", "u8"):
        info = np.iinfo(t.replace("i", "int").replace("u", "uint"))
        dtype = np.dtype(info.dtype)
        edge = [0, 1, 2, 3, 7, info.max, info.min, info.max - 1] + ([-1, -2, -7] if info.min < 0 else [])
        a = np.array(edge + rng.integers(info.min, info.max, 200, endpoint=True).tolist(), dtype)
        b = np.array(edge[::-1] + rng.integers(max(info.min, -40), min(info.max, 40), 200).tolist(), dtype)
        small = b.copy()  # exponents: wrap-around powers of huge exponents are slow to check in Python
        small[b > 40] = 40
        if info.min < 0:
            small[b < -9] = -9
        for name in _INT_BINARY:
            bb = small if name == "pow" else b
            _same(getattr(m, f"{name}_{t}")(a, bb), _int_reference(name, a, bb), f"{name}_{t}")
            count += 1
    for src, np_src in (("f32", np.float32), ("f64", np.float64)):
        x = np.array(specials + [1e10, -1e10, 255.9, 256.0, -0.9, 2.0 ** 31, -2.0 ** 31 - 4096, 3e38], np_src)
        for dst in ("i32", "u8", "i64"):
            want = _cast_reference(x, np.dtype(dst.replace("i", "int").replace("u", "uint")))
            _same(getattr(m, f"cast_{src}_{dst}")(x), want, f"cast_{src}_{dst}")
            count += 1
    c = rng.integers(0, 2, 50).astype(bool)
    x, y = rng.uniform(-1, 1, 50).astype(np.float32), rng.uniform(-1, 1, 50).astype(np.float32)
    _same(m.select_f32(c, x, y), np.where(c, x, y), "select_f32")
    _same(m.less_f32(x, y), x < y, "less_f32")
    return f"PASS math: {count + 2} kernels against NumPy"


def _close(got, want, what: str, rtol: float, atol: float) -> None:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    bad = np.abs(got - want) > atol + rtol * np.abs(want)
    assert not bad.any(), f"{what}: {int(bad.sum())} elements off, first at {np.argmax(bad.ravel())}"


def check_structured(m) -> str:
    """Reductions regroup (T1), so results are compared with float64 NumPy within the
    rounding a float32 sum of that length may accumulate."""
    rng = np.random.default_rng(23)
    for n in (0, 1, 1000, 5000, 70000):
        x = rng.uniform(-1, 1, n).astype(np.float32)
        out = np.zeros(1, np.float32)
        m.total(x, out)
        _close(out[0], x.astype(np.float64).sum(), f"total N={n}", 0, 1e-6 * n + 1e-6)
        _close(m.prefix(x), np.cumsum(x.astype(np.float64)), f"prefix N={n}", 0, 1e-6 * n + 1e-6)
    for r, c in ((0, 3), (3, 0), (1, 1), (37, 100), (5, 3000)):
        x = rng.uniform(-1, 1, (r, c)).astype(np.float32)
        _close(m.row_sums(x), x.astype(np.float64).sum(axis=1), f"row_sums {r}x{c}", 0, 1e-6 * c + 1e-6)
        out = np.zeros((r, c), np.float32)
        m.row_cumsum(x, out)  # a buffer per row: the device heap
        _close(out, np.cumsum(x.astype(np.float64), axis=1), f"row_cumsum {r}x{c}", 0, 1e-6 * c + 1e-6)
        m.softmax_rows(x, out)
        if r and c:
            e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
            _close(out, e / e.sum(axis=1, keepdims=True), f"softmax_rows {r}x{c}", 1e-5, 1e-7)
    x = rng.uniform(-1, 1, (7, 9)).astype(np.float32)
    _refused(lambda: m.softmax_rows(x, np.zeros((7, 8), np.float32)), -4)
    return "PASS structured: sum, row sums, cumsum, cumsum per row, row softmax"


def check_cooperative(m) -> str:
    """Integer reductions exactly as on the CPU; float ones within the rounding a float32
    sum of that length may accumulate (T1 lets a reduction regroup)."""
    rng = np.random.default_rng(24)
    for n in (0, 1, 31, 255, 256, 257, 5000, 70000):
        x = rng.uniform(-1, 1, n).astype(np.float32)
        y = rng.uniform(-1, 1, n).astype(np.float32)
        wide = x.astype(np.float64)
        out = np.zeros(1, np.float32)
        m.dot(x, y, out)
        _close(out[0], wide @ y.astype(np.float64), f"dot N={n}", 0, 1e-6 * n + 1e-6)
        m.l2norm(x, out)
        _close(out[0], np.sqrt(wide @ wide), f"l2norm N={n}", 1e-5, 1e-6)
        _close(m.total(x)[0], wide.sum(), f"total N={n}", 0, 1e-6 * n + 1e-6)
        ints = rng.integers(-(1 << 31), 1 << 31, n).astype(np.int32)
        _same(m.int_total(ints), np.array([ints.astype(np.int64).sum()], np.int64), f"int_total N={n}")
        big = rng.integers(-(1 << 62), 1 << 62, n).astype(np.int64)
        _same(m.int_max(big), np.array([big.max() if n else np.iinfo(np.int64).min], np.int64), f"int_max N={n}")
        values = rng.uniform(-1e300, 1e300, n)
        _same(m.float_max(values), np.array([values.max() if n else -np.inf]), f"float_max N={n}")
        if n > 3:
            values[n // 3] = np.nan  # maximum propagates NaN
            assert np.isnan(m.float_max(values)[0]), f"float_max N={n}: NaN lost"
    for r, c in ((0, 3), (3, 0), (1, 1), (3, 300), (5, 7), (2, 1000)):
        x = rng.uniform(-3, 3, (r, c)).astype(np.float32)
        out = np.zeros((r, c), np.float32)
        m.softmax(x, out)
        if r and c:
            e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
            _close(out, e / e.sum(axis=1, keepdims=True), f"softmax {r}x{c}", 1e-5, 1e-7)
        ordered = np.zeros((r, c), np.float32)
        m.softmax_ordered(x, ordered)
        if r and c:
            _close(ordered, e / e.sum(axis=1, keepdims=True), f"softmax_ordered {r}x{c}", 1e-5, 1e-7)
        running = np.zeros((r, c), np.float32)
        m.row_running(x, running)  # an ordered loop carrying a value: one thread per row, in order
        want = np.zeros((r, c), np.float32)
        for i in range(r):
            acc = np.float32(0)
            for j in range(c):
                acc = np.float32(acc + np.float32(x[i, j] - x[i].max()))
                want[i, j] = acc
        _same(running, want, f"row_running {r}x{c}")
        if c:
            shifted = np.zeros((r, c), np.float32)
            m.shifted_rows(x, shifted)  # each iteration reads the element the previous one wrote
            want = np.zeros((r, c), np.float32)
            for i in range(r):
                want[i, 0] = x[i].max()
                for j in range(1, c):
                    want[i, j] = np.float32(want[i, j - 1] + x[i, j])
            _same(shifted, want, f"shifted_rows {r}x{c}")
        dout, w = rng.uniform(-1, 1, (r, c)).astype(np.float32), rng.uniform(-1, 1, c).astype(np.float32)
        mean, rstd = rng.uniform(-1, 1, r).astype(np.float32), rng.uniform(0.5, 2, r).astype(np.float32)
        dx = np.zeros((r, c), np.float32)
        m.layernorm_backward(dout, x, w, mean, rstd, dx)
        if r and c:
            d, xx, ww = dout.astype(np.float64), x.astype(np.float64), w.astype(np.float64)
            norm = (xx - mean[:, None]) * rstd[:, None]
            dnorm_mean = (ww * d * norm).mean(axis=1, keepdims=True)
            dmean = (ww * d).mean(axis=1, keepdims=True)
            _close(dx, (ww * d - dmean - norm * dnorm_mean) * rstd[:, None], f"layernorm_backward {r}x{c}",
                   1e-4, 1e-5)
        if c:
            probs = rng.uniform(0.01, 1, (r, c)).astype(np.float32)
            targets = rng.integers(0, c, r).astype(np.int64)
            losses, mean_loss = np.zeros(r, np.float32), np.zeros(1, np.float32)
            m.crossentropy_mean(probs, targets, losses, mean_loss)
            if r:
                want = -np.log(probs[np.arange(r), targets].astype(np.float64))
                _close(losses, want, f"crossentropy losses {r}x{c}", 1e-6, 1e-7)
                _close(mean_loss[0], want.mean(), f"crossentropy mean {r}x{c}", 1e-5, 1e-7)
    rows = rng.integers(-1000, 1000, (300, 4)).astype(np.int32)
    _same(m.narrow_rows(rows), rows.sum(axis=1).astype(np.int32), "narrow_rows")
    return "PASS cooperative: block reductions, block rows, carried values"
