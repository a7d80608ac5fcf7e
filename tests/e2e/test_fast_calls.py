"""The loader's prepared call (intentc/loader.py, ``_FastCall``): positional NumPy arrays of
the parameters' dtypes go to the kernel as their DLPack exports. It must give what the
general path gives, for every layout, for failures (same status, same message, nothing
written) and for arguments it leaves to the general path; any ``__dlpack__`` producer on
the CPU is accepted by the general path, for reading and writing."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import intentc
from intentc.loader import _SLOW

SOURCE = """\
import intent as I

@intent.kernel
def axpy(a: f32, x: f32[N], y: f32[N]) -> f32[N]:
    return a * x + y

@intent.kernel
def bump(x: mut i32[R, C], by: i32):
    for i, j in I.parallel(x.axis(0), x.axis(1)):
        x[i, j] = x[i, j] + by

@intent.kernel
def split(x: f64[N]) -> (f64[N], f64[N]):
    return x * 2.0, x + 1.0
"""


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fast")
    (folder / "fast.intent").write_text(SOURCE)
    from intentc.driver import build

    build(folder / "fast.intent", folder / "fast.so")
    return intentc.load(folder / "fast.so")


def _both(kernel, args, out):
    """(fast outcome, general outcome) on copies of the arguments."""
    def run(how, args, out):
        try:
            return ("ok", how(args, out))
        except Exception as exc:  # noqa: BLE001
            return (type(exc).__name__, getattr(exc, "code", None), str(exc))

    copy = lambda v: v.copy() if isinstance(v, np.ndarray) else v  # noqa: E731
    fast_args, slow_args = [copy(a) for a in args], [copy(a) for a in args]
    fast_out = tuple(copy(o) for o in out) if isinstance(out, tuple) else copy(out)
    slow_out = tuple(copy(o) for o in out) if isinstance(out, tuple) else copy(out)
    fast = run(lambda a, o: kernel._fast(tuple(a), o), fast_args, fast_out)
    slow = run(lambda a, o: kernel._call(tuple(a), o, {}), slow_args, slow_out)
    return fast, slow, (fast_args, fast_out), (slow_args, slow_out)


def test_the_prepared_call_takes_the_common_call(mod):
    x = np.arange(6, dtype=np.float32)
    out = np.empty_like(x)
    assert mod.axpy._fast((2.0, x, x), out) is out
    np.testing.assert_array_equal(out, 3 * x)


LAYOUTS = {
    "compact": lambda a: a,
    "reversed": lambda a: a[::-1],
    "every other": lambda a: np.repeat(a, 2)[::2],
    "empty": lambda a: a[:0],
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_same_results_as_the_general_path(mod, layout):
    x = LAYOUTS[layout](np.arange(7, dtype=np.float32) - 3)
    y = LAYOUTS[layout](np.linspace(0, 1, 7, dtype=np.float32))
    out = LAYOUTS[layout](np.zeros(7, np.float32))
    fast, slow, (fa, fo), (sa, so) = _both(mod.axpy, (1.5, x, y), out)
    assert fast[0] == slow[0] == "ok"
    np.testing.assert_array_equal(fo, so)
    np.testing.assert_array_equal(fo, np.float32(1.5) * x + y)


def test_two_dimensional_mut_and_tuple_results(mod):
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    for view in (x, x.T, x[::-1, 1:]):
        fast, slow, (fa, _), (sa, _) = _both(mod.bump, (view, 5), None)
        assert fast == slow == ("ok", None)
        np.testing.assert_array_equal(fa[0], view + 5)
        np.testing.assert_array_equal(fa[0], sa[0])
    v = np.linspace(-1, 1, 5)
    outs = (np.empty(5), np.empty(5))
    fast, slow, (_, fo), (_, so) = _both(mod.split, (v,), outs)
    assert fast[0] == slow[0] == "ok"
    np.testing.assert_array_equal(fo[0], v * 2)
    np.testing.assert_array_equal(fo[1], v + 1)
    np.testing.assert_array_equal(fo[1], so[1])


def test_failures_match_and_write_nothing(mod):
    x = np.ones(4, np.float32)
    cases = [
        ((1.0, x, np.ones(5, np.float32)), np.zeros(4, np.float32)),  # extents
        ((1.0, x, x), np.zeros(3, np.float32)),  # the result's extent
        ((1.0, x.reshape(2, 2), x), np.zeros(4, np.float32)),  # rank
    ]
    for args, out in cases:
        before = out.copy()
        fast, slow, (_, fo), (_, so) = _both(mod.axpy, args, out)
        assert fast[0] == slow[0] == "KernelError" and fast == slow, (fast, slow)
        np.testing.assert_array_equal(fo, before)
        assert fast[1] < 0 and fast[2].startswith("axpy")
    a = np.zeros((2, 3), np.int32)
    fast, slow, _, _ = _both(mod.bump, (a, 2 ** 40), None)  # a scalar out of range
    assert fast == ("ok", _SLOW) and slow[0] == "OverflowError"


@pytest.mark.parametrize("case", ["read-only out", "f64 for f32", "big-endian", "list", "keyword"])
def test_what_the_prepared_call_leaves_to_the_general_path(mod, case):
    x = np.ones(4, np.float32)
    out = np.zeros(4, np.float32)
    args = (1.0, x, x)
    if case == "read-only out":
        out.flags.writeable = False
    elif case == "f64 for f32":
        args = (1.0, x.astype(np.float64), x)
    elif case == "big-endian":
        args = (1.0, x.astype(">f4"), x)
    elif case == "list":
        args = (1.0, [1.0, 2.0, 3.0, 4.0], x)
    if case == "keyword":
        assert mod.axpy(1.0, x, y=x, out=out) is out
        return
    assert mod.axpy._fast(args, out) is _SLOW
    fast = slow = None
    try:
        mod.axpy(*args, out=out)
    except Exception as exc:  # noqa: BLE001
        fast = (type(exc), str(exc))
    try:
        mod.axpy._call(args, out, {})
    except Exception as exc:  # noqa: BLE001
        slow = (type(exc), str(exc))
    assert fast == slow


def test_calls_from_several_threads(mod):
    errors = []

    def work(seed):
        rng = np.random.default_rng(seed)
        for _ in range(200):
            n = int(rng.integers(1, 50))
            x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
            out = np.empty(n, np.float32)
            mod.axpy(0.5, x, y, out=out)
            if not np.array_equal(out, np.float32(0.5) * x + y):
                errors.append(seed)
            try:
                mod.axpy(0.5, x, y, out=np.empty(n + 1, np.float32))
                errors.append(("accepted", seed))
            except intentc.KernelError as exc:
                if not str(exc).startswith("axpy"):
                    errors.append(str(exc))

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


class Producer:
    """A minimal DLPack producer (as PyTorch, JAX or CuPy tensors are), backed by an array."""

    def __init__(self, array, device=(1, 0)):
        self.array, self.device = array, device

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.device


def test_any_dlpack_producer_reads_and_writes(mod):
    x = np.arange(5, dtype=np.float32)
    out = np.zeros(5, np.float32)
    result = mod.axpy(2.0, Producer(x), Producer(x[::-1].copy()), out=Producer(out))
    np.testing.assert_array_equal(out, 2 * x + x[::-1])  # the writes reached the producer's memory
    np.testing.assert_array_equal(result, out)
    grid = np.zeros((2, 3), np.int32)
    mod.bump(Producer(grid), 7)
    np.testing.assert_array_equal(grid, np.full((2, 3), 7))


def test_a_producer_on_another_device_is_refused(mod):
    x = np.ones(3, np.float32)
    with pytest.raises(intentc.KernelError) as info:
        mod.axpy(1.0, Producer(x, device=(2, 0)), x)
    assert info.value.status == "INTENT_E_DEVICE" and "cuda:0" in str(info.value)
