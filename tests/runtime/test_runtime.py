"""Tests of the C runtime (runtime_c/): compiled with gcc together with
runtime_harness.c into a shared library and driven through ctypes."""
from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "runtime_c"
HARNESS = Path(__file__).resolve().parent / "runtime_harness.c"
SOURCES = sorted(RUNTIME.glob("*.c"))
EXPORTED = {
    "intent_last_error",
    "intent_error",
    "intent_clear_error",
    "intent_check_tensor",
    "intent_check_aliasing",
    "intent_parallel_for",
    "intent_get_num_threads",
    "intent_set_num_threads",
    "intent_set_parallel_backend",
    "intent_alloc",
    "intent_free",
    "intent_runtime_version",
    "intent_snapshot",  # the order sanitizer's helpers (sanitize.c)
    "intent_snapshot_restore",
    "intent_snapshot_compare",
    "intent_snapshot_free",
    "intent_runtime_process_state_v1",  # where the runtime copies of a process meet (process_state.c)
}
# The flags generated modules are built with.
BUILD_FLAGS = ["-O2", "-fPIC", "-fvisibility=hidden", "-shared"]

E_NULL, E_DTYPE, E_RANK, E_SHAPE, E_STRIDE = -1, -2, -3, -4, -5
E_BOUNDS, E_DOMAIN, E_ALLOC, E_DEVICE, E_INTERNAL = -6, -7, -8, -9, -10
E_ALIAS = -12

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")


def _gcc(*args: str | Path) -> None:
    cmd = ["gcc", *map(str, args)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr}"


def _build(out: Path, *extra: Path) -> Path:
    _gcc(*BUILD_FLAGS, "-Wall", "-Wextra", "-Werror", "-I", RUNTIME, *SOURCES, *extra,
         "-o", out, "-pthread")
    return out


# ---- ctypes view of the ABI -----------------------------------------------------------


class Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class ArgView(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("data", ctypes.c_void_p), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("ndim", ctypes.c_int32), ("bits", ctypes.c_int32),
                ("written", ctypes.c_int32), ("copy", ctypes.c_int32)]


class Tensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", Device),
        ("ndim", ctypes.c_int32),
        ("dtype", DType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


I64P = ctypes.POINTER(ctypes.c_int64)
TASK = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)


def _declare(lib: ctypes.CDLL) -> ctypes.CDLL:
    sig = {
        "intent_last_error": (ctypes.c_char_p, []),
        "intent_clear_error": (None, []),
        "intent_check_tensor": (ctypes.c_int32, [
            ctypes.POINTER(Tensor), ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int32,
            ctypes.c_uint8, ctypes.c_uint8, ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p),
            I64P, I64P]),
        "intent_check_aliasing": (ctypes.c_int32, [ctypes.c_char_p, ctypes.c_int32, ctypes.POINTER(ArgView),
                                                   ctypes.POINTER(ctypes.c_void_p)]),
        "intent_parallel_for": (ctypes.c_int32, [ctypes.c_int64, TASK, ctypes.c_void_p]),
        "intent_get_num_threads": (ctypes.c_int32, []),
        "intent_set_num_threads": (None, [ctypes.c_int32]),
        "intent_set_parallel_backend": (None, [ctypes.c_void_p]),
        "intent_alloc": (ctypes.c_void_p, [ctypes.c_size_t]),
        "intent_free": (None, [ctypes.c_void_p]),
        "intent_runtime_version": (ctypes.c_char_p, []),
        "h_error_str": (ctypes.c_int32, [ctypes.c_int32, ctypes.c_char_p]),
        "h_error_fmt": (ctypes.c_int32, [ctypes.c_int32, ctypes.c_longlong, ctypes.c_char_p]),
        "h_error_wrap": (ctypes.c_int32, [ctypes.c_int32]),
        "h_error_null_format": (ctypes.c_int32, [ctypes.c_int32]),
        "h_errors_are_thread_local": (ctypes.c_int32, []),
        "h_cover": (ctypes.c_int64, [ctypes.c_int64, ctypes.POINTER(ctypes.c_int32), I64P]),
        "h_threads_used": (ctypes.c_int32, [ctypes.c_int64, ctypes.c_int32]),
        "h_fail": (ctypes.c_int32, [ctypes.c_int64, I64P, ctypes.POINTER(ctypes.c_int32),
                                    ctypes.c_int32, ctypes.c_int32]),
        "h_nested": (ctypes.c_int32, [ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, I64P,
                                      I64P]),
        "h_use_serial_backend": (None, [ctypes.c_int32]),
        "h_backend_calls": (ctypes.c_int64, []),
        "h_backend_last_n": (ctypes.c_int64, []),
        "h_overhead_ns": (ctypes.c_double, [ctypes.c_int32, ctypes.c_int64]),
    }
    for name, (restype, argtypes) in sig.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return lib


@pytest.fixture(scope="session")
def lib_path(tmp_path_factory) -> Path:
    return _build(tmp_path_factory.mktemp("rt") / "libintent_rt_test.so", HARNESS)


@pytest.fixture(scope="session")
def rt(lib_path) -> ctypes.CDLL:
    return _declare(ctypes.CDLL(str(lib_path)))


@pytest.fixture(autouse=True)
def _restore(request):
    yield
    if "rt" in request.fixturenames:
        lib = request.getfixturevalue("rt")
        lib.intent_set_num_threads(0)
        lib.intent_set_parallel_backend(None)


def last_error(rt) -> str:
    return rt.intent_last_error().decode()


def cpu_count() -> int:
    return len(os.sched_getaffinity(0))


# ---- build --------------------------------------------------------------------------------


def test_sources_compile_cleanly_as_c11(tmp_path):
    for source in SOURCES:
        _gcc("-Wall", "-Wextra", "-Werror", "-std=c11", "-D_GNU_SOURCE", "-c", source,
             "-o", tmp_path / (source.stem + ".o"))
        # Also without _GNU_SOURCE: the generated-module build passes no such define.
        _gcc("-Wall", "-Wextra", "-Werror", "-std=c11", "-pedantic", "-c", source,
             "-o", tmp_path / (source.stem + ".o"))


def test_header_is_usable_from_cpp(tmp_path):
    if shutil.which("g++") is None:
        pytest.skip("needs g++")
    probe = tmp_path / "probe.cpp"
    probe.write_text(textwrap.dedent("""\
        #include "intent_runtime.h"
        #include <cstddef>
        static_assert(INTENT_ABI_VERSION == 1, "abi");
        static_assert(sizeof(IntentTensor) == 48, "DLTensor layout");
        static_assert(offsetof(IntentTensor, byte_offset) == 40, "DLTensor layout");
        static int32_t task(void *, int64_t, int64_t) { return INTENT_OK; }
        int use() {
            IntentTensor t = {};
            void *data = nullptr;
            int64_t shape[1], strides[1];
            int32_t rc = intent_check_tensor(&t, "k", "x", 1, INTENT_DTYPE_FLOAT, 32, 0,
                                             &data, shape, strides);
            rc |= intent_parallel_for(4, task, nullptr);
            intent_set_parallel_backend(nullptr);
            IntentStatus s = INTENT_E_BOUNDS;
            return rc + s + intent_error(INTENT_E_SHAPE, "%lld %s", 1LL, "x");
        }
        """))
    proc = subprocess.run(["g++", "-x", "c++", "-std=c++11", "-Wall", "-Wextra", "-Werror",
                           "-fsyntax-only", "-I", str(RUNTIME), str(probe)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_only_the_api_is_exported(tmp_path):
    so = _build(tmp_path / "libonly_runtime.so")
    proc = subprocess.run(["nm", "-D", "--defined-only", str(so)], capture_output=True,
                          text=True, check=True)
    exported = {line.split()[-1] for line in proc.stdout.splitlines() if line.strip()}
    assert exported == EXPORTED


def test_version(rt):
    assert rt.intent_runtime_version() == b"intent-runtime 1"


# ---- errors ----------------------------------------------------------------------------------


def test_error_formats_and_returns_code(rt):
    assert rt.h_error_fmt(E_BOUNDS, -1234567890123, b"abc") == E_BOUNDS
    assert last_error(rt) == "value=-1234567890123 text=abc"
    rt.intent_clear_error()
    assert last_error(rt) == ""


def test_error_truncates_long_messages(rt):
    assert rt.h_error_str(E_SHAPE, b"x" * 5000) == E_SHAPE
    message = last_error(rt)
    assert 1023 <= len(message) < 5000 and set(message) == {"x"}


def test_error_may_quote_the_current_message(rt):
    rt.h_error_str(E_SHAPE, b"inner")
    assert rt.h_error_wrap(E_DOMAIN) == E_DOMAIN
    assert last_error(rt) == "outer: inner"


def test_error_with_null_format_is_empty(rt):
    rt.h_error_str(E_SHAPE, b"before")
    assert rt.h_error_null_format(E_INTERNAL) == E_INTERNAL
    assert last_error(rt) == ""


def test_errors_are_thread_local(rt):
    assert rt.h_errors_are_thread_local() == 0


def test_errors_are_thread_local_across_python_threads(rt):
    rt.h_error_str(E_SHAPE, b"main thread")
    seen = {}

    def other():
        seen["start"] = last_error(rt)
        rt.h_error_str(E_RANK, b"other thread")
        seen["after"] = last_error(rt)

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert seen == {"start": "", "after": "other thread"}
    assert last_error(rt) == "main thread"


# ---- intent_check_tensor --------------------------------------------------------------------


class Arg:
    """A tensor descriptor plus the output buffers of intent_check_tensor."""

    def __init__(self, shape=(4,), strides=None, code=2, bits=32, ndim=None, data=True,
                 byte_offset=0):
        count = 1
        for extent in shape:
            count *= max(extent, 0)
        # Room for the small tensors; huge shapes only test the count check.
        self.buffer = (ctypes.c_uint8 * (min(max(count, 1), 4096) * 8 + 64))()
        self.shape = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        self.strides = None if strides is None else (ctypes.c_int64 * len(strides))(*strides)
        self.t = Tensor()
        self.t.data = ctypes.addressof(self.buffer) if data else None
        self.t.device = Device(1, 0)
        self.t.ndim = len(shape) if ndim is None else ndim
        self.t.dtype = DType(code, bits, 1)
        self.t.shape = ctypes.cast(self.shape, I64P)
        self.t.strides = None if strides is None else ctypes.cast(self.strides, I64P)
        self.t.byte_offset = byte_offset
        self.out_data = ctypes.c_void_p(0xDEAD)
        self.out_shape = (ctypes.c_int64 * 8)(*([-7] * 8))
        self.out_strides = (ctypes.c_int64 * 8)(*([-7] * 8))

    def check(self, rt, ndim=1, code=2, bits=32, writable=0, kernel=b"saxpy", param=b"x",
              null=False):
        return rt.intent_check_tensor(None if null else ctypes.byref(self.t), kernel, param,
                                      ndim, code, bits, writable, ctypes.byref(self.out_data),
                                      self.out_shape, self.out_strides)

    def untouched(self) -> bool:
        return (self.out_data.value == 0xDEAD and list(self.out_shape) == [-7] * 8
                and list(self.out_strides) == [-7] * 8)


def test_tensor_layout_matches_dltensor():
    assert ctypes.sizeof(Tensor) == 48
    assert Tensor.byte_offset.offset == 40


def test_check_accepts_and_fills_compact_strides(rt):
    rt.intent_clear_error()
    arg = Arg(shape=(2, 3, 5))
    assert arg.check(rt, ndim=3) == 0
    assert arg.out_data.value == ctypes.addressof(arg.buffer)
    assert list(arg.out_shape[:3]) == [2, 3, 5]
    assert list(arg.out_strides[:3]) == [15, 5, 1]
    assert list(arg.out_shape[3:]) == [-7] * 5
    assert last_error(rt) == ""


def test_check_copies_explicit_strides_and_applies_byte_offset(rt):
    arg = Arg(shape=(3, 4), strides=(1, -3), byte_offset=24)
    assert arg.check(rt, ndim=2) == 0
    assert arg.out_data.value == ctypes.addressof(arg.buffer) + 24
    assert list(arg.out_strides[:2]) == [1, -3]


def test_check_zero_dimensional(rt):
    arg = Arg(shape=(), code=0, bits=64)
    arg.t.shape = None
    assert arg.check(rt, ndim=0, code=0, bits=64) == 0
    assert arg.out_data.value == ctypes.addressof(arg.buffer)


def test_check_empty_tensor_may_have_null_data(rt):
    arg = Arg(shape=(3, 0), data=False)
    assert arg.check(rt, ndim=2, writable=1) == 0
    assert arg.out_data.value is None
    assert list(arg.out_strides[:2]) == [1, 1]
    # Saturated compact strides for an empty tensor whose other extents overflow.
    arg = Arg(shape=(0, 2**40, 2**40), data=False)
    assert arg.check(rt, ndim=3) == 0
    assert list(arg.out_strides[:3]) == [2**63 - 1, 2**40, 1]


@pytest.mark.parametrize("code,bits,name", [
    (0, 8, "i8"), (0, 16, "i16"), (0, 32, "i32"), (0, 64, "i64"), (1, 8, "u8"),
    (1, 64, "u64"), (2, 16, "f16"), (2, 64, "f64"), (4, 16, "bf16"), (6, 8, "bool"),
])
def test_check_dtype_mismatch_names_dtypes(rt, code, bits, name):
    arg = Arg(code=code, bits=bits)
    assert arg.check(rt) == E_DTYPE
    assert last_error(rt) == f"saxpy: parameter 'x' has dtype {name} but the kernel expects f32"
    assert arg.untouched()


def test_check_expected_dtype_spelling(rt):
    arg = Arg(code=2, bits=32)
    assert arg.check(rt, code=4, bits=16, param=b"w") == E_DTYPE
    assert last_error(rt) == "saxpy: parameter 'w' has dtype f32 but the kernel expects bf16"
    assert arg.check(rt, code=6, bits=8, param=b"mask") == E_DTYPE
    assert last_error(rt) == "saxpy: parameter 'mask' has dtype f32 but the kernel expects bool"


def test_check_lanes(rt):
    arg = Arg()
    arg.t.dtype = DType(2, 32, 4)
    assert arg.check(rt) == E_DTYPE
    assert last_error(rt) == "saxpy: parameter 'x' has dtype f32x4 but the kernel expects f32"
    assert arg.untouched()


def test_check_null_descriptor(rt):
    arg = Arg()
    assert arg.check(rt, null=True) == E_NULL
    assert last_error(rt) == "saxpy: parameter 'x' is a null tensor descriptor"
    assert arg.untouched()


def test_check_device(rt):
    arg = Arg()
    arg.t.device = Device(2, 1)
    assert arg.check(rt) == E_DEVICE
    message = last_error(rt)
    assert message.startswith("saxpy: parameter 'x' is on device cuda:1")
    assert "CPU" in message
    assert arg.untouched()


def test_check_rank(rt):
    arg = Arg(shape=(2, 3))
    assert arg.check(rt, ndim=1) == E_RANK
    assert last_error(rt) == "saxpy: parameter 'x' has 2 dimensions but the kernel expects 1"
    arg = Arg(shape=(3,))
    assert arg.check(rt, ndim=2, param=b"m") == E_RANK
    assert last_error(rt) == "saxpy: parameter 'm' has 1 dimension but the kernel expects 2"
    assert arg.untouched()


def test_check_rank_comes_before_dtype(rt):
    arg = Arg(shape=(2, 3), code=2, bits=64)
    assert arg.check(rt, ndim=1) == E_RANK


def test_check_null_shape(rt):
    arg = Arg()
    arg.t.shape = None
    assert arg.check(rt) == E_NULL
    assert last_error(rt) == "saxpy: parameter 'x' has a null shape pointer"
    assert arg.untouched()


def test_check_negative_extent(rt):
    arg = Arg(shape=(4, -3))
    assert arg.check(rt, ndim=2) == E_SHAPE
    assert last_error(rt) == "saxpy: parameter 'x' has a negative extent -3 on axis 1"
    assert arg.untouched()


def test_check_element_count_overflow(rt):
    arg = Arg(shape=(2**32, 2**32), data=True)
    assert arg.check(rt, ndim=2) == E_SHAPE
    assert "int64" in last_error(rt) and last_error(rt).startswith("saxpy: parameter 'x'")
    assert arg.untouched()
    arg = Arg(shape=(2**31, 2**31, 2))  # exactly 2^63: one past INT64_MAX
    assert arg.check(rt, ndim=3) == E_SHAPE
    arg = Arg(shape=(2**31, 2**31, 1))  # 2^62 elements fit int64, but not their 2^64 bytes of f32
    assert arg.check(rt, ndim=3) == E_SHAPE
    assert last_error(rt) == ("saxpy: parameter 'x' has extents and strides whose byte offsets do not fit "
                              "in 64 bits")
    assert arg.untouched()
    arg = Arg(shape=(2**30, 2**30, 2))  # 2^61 elements, 2^63 bytes: one past INT64_MAX
    assert arg.check(rt, ndim=3) == E_SHAPE
    arg = Arg(shape=(2**30, 2**30, 1))  # 2^60 elements, 2^62 bytes fit
    assert arg.check(rt, ndim=3) == 0


def test_check_null_data(rt):
    arg = Arg(shape=(3, 4), data=False)
    assert arg.check(rt, ndim=2) == E_NULL
    assert last_error(rt) == "saxpy: parameter 'x' has a null data pointer but 12 elements"
    assert arg.untouched()


def test_check_zero_stride_on_written_tensor(rt):
    arg = Arg(shape=(3, 4), strides=(4, 0))
    assert arg.check(rt, ndim=2, writable=1, param=b"out") == E_STRIDE
    message = last_error(rt)
    assert message.startswith("saxpy: parameter 'out' is written but has stride 0 on axis 1")
    assert arg.untouched()
    # Read-only tensors may broadcast with stride 0; extent-1 axes may have any stride.
    assert arg.check(rt, ndim=2, writable=0) == 0
    arg = Arg(shape=(1, 4), strides=(0, 1))
    assert arg.check(rt, ndim=2, writable=1) == 0


def test_check_failure_sets_code_message_for_every_kernel_and_param(rt):
    arg = Arg()
    assert arg.check(rt, kernel=b"clamp", param=b"lo", code=0, bits=32) == E_DTYPE
    assert last_error(rt) == "clamp: parameter 'lo' has dtype f32 but the kernel expects i32"


# ---- intent_parallel_for ----------------------------------------------------------------------


def cover(rt, n):
    threads = ctypes.c_int32(-1)
    calls = ctypes.c_int64(-1)
    wrong = rt.h_cover(n, ctypes.byref(threads), ctypes.byref(calls))
    return wrong, threads.value, calls.value


@pytest.mark.parametrize("threads", [1, 2, 3, 7])
@pytest.mark.parametrize("n", [0, 1, 2, 3, 1000, 10**6])
def test_parallel_for_covers_every_index_once(rt, threads, n):
    rt.intent_set_num_threads(threads)
    wrong, used, calls = cover(rt, n)
    assert wrong == 0
    if n <= 0:
        assert calls == 0
    if n == 1 or threads == 1:
        assert calls == (1 if n > 0 else 0) and used == (1 if n > 0 else 0)
    if n > 0:
        assert 1 <= used <= min(threads, n)


def test_parallel_for_negative_n_runs_nothing(rt):
    rt.intent_set_num_threads(3)
    wrong, used, calls = cover(rt, -5)
    assert (wrong, used, calls) == (0, 0, 0)


@pytest.mark.parametrize("threads", [2, 3, 7])
def test_parallel_for_uses_the_requested_threads(rt, threads):
    rt.intent_set_num_threads(threads)
    assert rt.h_threads_used(threads, 40) == threads
    # Never more threads than indices.
    assert rt.h_threads_used(2, 40) == 2


def test_parallel_for_from_several_application_threads(rt):
    rt.intent_set_num_threads(3)
    results = []

    def work():
        for n in (1000, 12345, 10**5):
            results.append(cover(rt, n)[0])

    pool = [threading.Thread(target=work) for _ in range(4)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    assert results == [0] * 12


def test_parallel_for_python_task(rt):
    """The ABI entry point itself, with a task written in Python."""
    rt.intent_set_num_threads(2)
    seen = []
    lock = threading.Lock()

    @TASK
    def task(closure, begin, end):
        with lock:
            seen.extend(range(begin, end))
        return 0

    assert rt.intent_parallel_for(100, task, None) == 0
    assert sorted(seen) == list(range(100))


def fail(rt, n, bad, delays=None, set_message=1):
    """parallel_for(n) whose index i fails (status -100-i, message "bad index i")
    for i in `bad`, after sleeping delays[i] milliseconds."""
    bad = sorted(bad)
    indices = (ctypes.c_int64 * max(len(bad), 1))(*bad)
    delay = None
    if delays:
        delay = (ctypes.c_int32 * max(len(bad), 1))(*[delays.get(i, 0) for i in bad])
    return rt.h_fail(n, indices, delay, len(bad), set_message)


@pytest.mark.parametrize("threads", [1, 2, 3, 7])
@pytest.mark.parametrize("n,bad", [
    (1000, [500]),
    (1000, [0, 999]),
    (1000, [998, 999]),
    (1000, [13, 14, 400, 401, 700]),
    (10**6, list(range(250_000, 10**6, 1000))),
    (5, [1, 2, 3, 4]),
])
def test_parallel_for_reports_the_smallest_failure(rt, threads, n, bad):
    rt.intent_set_num_threads(threads)
    rt.intent_clear_error()
    first = min(bad)
    assert fail(rt, n, bad) == -100 - first
    assert last_error(rt) == f"bad index {first}"


@pytest.mark.parametrize("threads", [2, 3, 7])
def test_parallel_for_smallest_failure_wins_even_when_it_comes_last(rt, threads):
    rt.intent_set_num_threads(threads)
    # Index 5 fails 50 ms after all the others have failed.
    bad = [5] + list(range(200, 1000, 50))
    assert fail(rt, 1000, bad, delays={5: 50}) == -105
    assert last_error(rt) == "bad index 5"


@pytest.mark.parametrize("threads", [2, 3, 7])
def test_parallel_for_later_failure_does_not_replace_a_smaller_one(rt, threads):
    rt.intent_set_num_threads(threads)
    # Both failing ranges start at once; the larger index fails 40 ms later.
    assert fail(rt, 1000, [5, 900], delays={5: 20, 900: 60}) == -105
    assert last_error(rt) == "bad index 5"


def test_parallel_for_failure_without_message(rt):
    rt.intent_set_num_threads(2)
    rt.h_error_str(E_SHAPE, b"stale message")
    assert fail(rt, 1000, [600], set_message=0) == -700
    message = last_error(rt)
    assert "stale" not in message and "failed with status -700" in message


def test_parallel_for_success_keeps_the_last_error(rt):
    rt.intent_set_num_threads(2)
    rt.h_error_str(E_SHAPE, b"an earlier failure")
    assert cover(rt, 10000)[0] == 0
    assert last_error(rt) == "an earlier failure"


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_nested_parallel_for_runs_inline(rt, threads):
    rt.intent_set_num_threads(threads)
    violations, inner_calls = ctypes.c_int64(-1), ctypes.c_int64(-1)
    assert rt.h_nested(50, 1000, -1, ctypes.byref(violations), ctypes.byref(inner_calls)) == 0
    assert violations.value == 0 and inner_calls.value == 50
    assert rt.h_nested(50, 1000, 17, ctypes.byref(violations),
                       ctypes.byref(inner_calls)) == E_DOMAIN
    assert last_error(rt) == "inner failure at outer index 17"
    assert violations.value == 0


def test_num_threads_setting(rt):
    default = rt.intent_get_num_threads()
    if "INTENT_NUM_THREADS" not in os.environ:
        assert default == cpu_count()
    rt.intent_set_num_threads(3)
    assert rt.intent_get_num_threads() == 3
    assert rt.h_threads_used(8, 30) == 3
    rt.intent_set_num_threads(1)
    assert rt.intent_get_num_threads() == 1
    assert cover(rt, 1000)[1:] == (1, 1)
    rt.intent_set_num_threads(0)
    assert rt.intent_get_num_threads() == default
    rt.intent_set_num_threads(-4)
    assert rt.intent_get_num_threads() == default


def _run_python(script: str, env_extra: dict[str, str] | None = None,
                unset: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    for name in unset:
        env.pop(name, None)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=60)


NUM_THREADS_SCRIPT = """
import ctypes
lib = ctypes.CDLL({path!r})
print(lib.intent_get_num_threads())
lib.intent_set_num_threads(2)
print(lib.intent_get_num_threads())
lib.intent_set_num_threads(0)
print(lib.intent_get_num_threads())
"""


@pytest.mark.parametrize("value,expected", [
    ("5", 5), ("1", 1), (" 12 ", 12), ("0", None), ("-3", None), ("abc", None), ("7x", None),
    ("", None), (None, None),
])
def test_num_threads_environment_variable(lib_path, value, expected):
    env = {} if value is None else {"INTENT_NUM_THREADS": value}
    proc = _run_python(NUM_THREADS_SCRIPT.format(path=str(lib_path)), env,
                       unset=("INTENT_NUM_THREADS",))
    assert proc.returncode == 0, proc.stderr
    want = expected if expected is not None else cpu_count()
    assert proc.stdout.split() == [str(want), "2", str(want)]


def test_custom_backend(rt):
    rt.intent_set_num_threads(3)
    before = rt.h_backend_calls()
    rt.h_use_serial_backend(1)
    wrong, used, calls = cover(rt, 1001)
    assert wrong == 0 and calls == 2 and used == 1
    assert rt.h_backend_calls() == before + 1 and rt.h_backend_last_n() == 1001
    # n <= 0 never reaches the backend.
    assert cover(rt, 0)[0] == 0
    assert rt.h_backend_calls() == before + 1
    # Failures come back through the backend.
    assert fail(rt, 100, [70]) == -170
    assert last_error(rt) == "bad index 70"
    rt.h_use_serial_backend(0)
    wrong, used, calls = cover(rt, 1001)
    assert wrong == 0 and calls > 2
    assert rt.h_backend_calls() == before + 2


def test_parallel_for_keeps_its_workers(rt):
    """The pathology a per-call cost would show, checked without timing: threads created on
    every call. After a first call the pool's workers exist; thousands of calls later the
    process has the same threads, by thread id (a thread made and joined per call would
    show a new id; benchmarks/ measures the cost itself)."""
    import os

    tasks = "/proc/self/task"
    if not os.path.isdir(tasks):
        pytest.skip("no /proc/self/task to count the threads")
    rt.intent_set_num_threads(2)
    rt.h_overhead_ns(10, 1000)
    before = set(os.listdir(tasks))
    rt.h_overhead_ns(2000, 1000)
    assert set(os.listdir(tasks)) == before


# ---- processes, unloading, fork ------------------------------------------------------------


def test_two_libraries_with_the_runtime_in_one_process(tmp_path, lib_path):
    other = _build(tmp_path / "libsecond.so", HARNESS)
    script = f"""
import ctypes
libs = [ctypes.CDLL({str(lib_path)!r}), ctypes.CDLL({str(other)!r})]
for lib in libs:
    lib.h_cover.restype = ctypes.c_int64
    lib.h_cover.argtypes = [ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p]
    lib.intent_set_num_threads(2)
    lib.intent_last_error.restype = ctypes.c_char_p
for _ in range(20):
    for lib in libs:
        assert lib.h_cover(100000, None, None) == 0
libs[0].h_error_str(-4, b"first")
assert libs[1].intent_last_error() == b"first", libs[1].intent_last_error()
libs[1].h_error_str(-4, b"second")
# One message per thread per process, whichever library set it (docs/abi.md).
assert [lib.intent_last_error() for lib in libs] == [b"second", b"second"]
print("ok")
"""
    proc = _run_python(script)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_unloading_keeps_the_code_the_workers_run(lib_path, tmp_path):
    """The worker pool is the process's (process_state.c): a library whose code it may run
    stays mapped after dlclose (STB_GNU_UNIQUE makes the loader keep it; intentc's shared
    libraries are also linked -z nodelete), so no worker ever outlives the code it runs."""
    copy = tmp_path / "libunload.so"
    shutil.copy(lib_path, copy)
    script = f"""
import _ctypes, ctypes, os, time
def threads():
    return len(os.listdir("/proc/self/task"))
def mapped():
    return {str(copy)!r} in open("/proc/self/maps").read()
before = threads()
lib = ctypes.CDLL({str(copy)!r})
lib.h_cover.restype = ctypes.c_int64
lib.h_cover.argtypes = [ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p]
lib.intent_set_num_threads(4)
assert lib.h_cover(100000, None, None) == 0
assert threads() == before + 3, (before, threads())
handle = lib._handle
del lib
_ctypes.dlclose(handle)
time.sleep(0.2)
assert mapped() and threads() == before + 3, (mapped(), before, threads())
again = ctypes.CDLL({str(copy)!r})
again.h_cover.restype = ctypes.c_int64
again.h_cover.argtypes = [ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p]
assert again.h_cover(100000, None, None) == 0 and threads() == before + 3
print("ok")
"""
    proc = _run_python(script)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_fork_after_the_pool_started(lib_path):
    script = f"""
import ctypes, os
lib = ctypes.CDLL({str(lib_path)!r})
lib.h_cover.restype = ctypes.c_int64
lib.h_cover.argtypes = [ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p]
lib.intent_set_num_threads(3)
assert lib.h_cover(100000, None, None) == 0
pid = os.fork()
if pid == 0:
    ok = lib.h_cover(100000, None, None) == 0 and lib.h_cover(100000, None, None) == 0
    os._exit(0 if ok else 3)
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0, status
assert lib.h_cover(100000, None, None) == 0
print("ok")
"""
    proc = _run_python(script)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


# ---- memory ------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 1, 3, 63, 64, 65, 1000, 1 << 20])
def test_alloc_is_aligned(rt, size):
    p = rt.intent_alloc(size)
    assert p is not None and p % 64 == 0
    if size:
        ctypes.memset(p, 0xAB, size)
    rt.intent_free(p)


def test_alloc_zero_bytes_gives_distinct_pointers(rt):
    a, b = rt.intent_alloc(0), rt.intent_alloc(0)
    assert a and b and a != b
    rt.intent_free(a)
    rt.intent_free(b)
    rt.intent_free(None)


def test_alloc_failure(rt):
    assert rt.intent_alloc(2**63) is None
    assert "out of memory" in last_error(rt)


def test_check_device_id(rt):
    """docs/abi.md: the device is {1, 0}; another id is refused like another type."""
    arg = Arg(shape=(4,))
    arg.t.device = Device(1, 7)
    assert arg.check(rt) == E_DEVICE
    assert last_error(rt) == "saxpy: parameter 'x' is on device cpu:7 but the kernel runs on cpu:0"
    assert arg.untouched()


def test_check_byte_offsets_fit_64_bits(rt):
    for shape, strides in (((3,), (2**62,)), ((2,), (-(2**62),)), ((2, 2), (2**61, 2**61))):
        arg = Arg(shape=shape, strides=strides)
        assert arg.check(rt, ndim=len(shape)) == E_SHAPE, (shape, strides)
        assert "byte offsets do not fit in 64 bits" in last_error(rt)
        assert arg.untouched()
    arg = Arg(shape=(4,), byte_offset=2**64 - 8)  # the base plus byte_offset wraps
    assert arg.check(rt) == E_SHAPE
    arg = Arg(shape=(2,), strides=(2**60,))  # large but representable
    assert arg.check(rt) == 0


# ---- intent_check_aliasing ------------------------------------------------------------------


class Views:
    """IntentArgViews over one float32 buffer: (name, element offset, shape, strides, written)."""

    def __init__(self, specs, bits=32, size=64):
        self.buffer = (ctypes.c_float * size)(*range(size))
        self.keep = []
        self.views = (ArgView * len(specs))()
        for view, (name, offset, shape, strides, written) in zip(self.views, specs):
            extents = (ctypes.c_int64 * max(1, len(shape)))(*shape)
            steps = (ctypes.c_int64 * max(1, len(shape)))(*strides)
            self.keep += [extents, steps]
            view.name, view.ndim, view.bits, view.written = name.encode(), len(shape), bits, int(written)
            view.data = ctypes.addressof(self.buffer) + offset * (bits // 8 if bits >= 8 else 0) + (
                offset // 2 if bits == 4 else 0)
            view.shape, view.strides = ctypes.cast(extents, I64P), ctypes.cast(steps, I64P)
        self.originals = [v.data for v in self.views]
        self.scratch = ctypes.c_void_p(0xDEAD)

    def check(self, rt) -> int:
        return rt.intent_check_aliasing(b"k", len(self.views), self.views, ctypes.byref(self.scratch))

    def values(self, k) -> list:
        """The elements of view k in row-major order, through its (possibly new) data and strides."""
        v = self.views[k]
        shape, strides = [v.shape[i] for i in range(v.ndim)], [v.strides[i] for i in range(v.ndim)]
        out = []

        def walk(axis, offset):
            if axis == len(shape):
                out.append(ctypes.c_float.from_address(v.data + 4 * offset).value)
                return
            for i in range(shape[axis]):
                walk(axis + 1, offset + i * strides[axis])

        walk(0, 0)
        return out

    def release(self, rt) -> None:
        rt.intent_free(self.scratch)


def test_aliasing_without_overlap_costs_nothing(rt):
    views = Views([("x", 0, (8,), (1,), False), ("out", 8, (8,), (1,), True), ("y", 0, (8,), (0,), False)])
    assert views.check(rt) == 0
    assert views.scratch.value is None and [v.data for v in views.views] == views.originals
    assert [v.copy for v in views.views] == [0, 0, 0]


@pytest.mark.parametrize("x,out", [((0, (8,), (1,)), (0, (8,), (1,))),     # the same memory
                                   ((0, (8,), (1,)), (7, (8,), (1,))),     # one element shared
                                   ((7, (8,), (-1,)), (0, (8,), (1,))),    # reversed
                                   ((0, (4, 4), (1, 4)), (0, (4, 4), (4, 1))),  # transposed
                                   ((0, (8,), (0,)), (0, (8,), (1,)))])    # broadcast
def test_an_input_that_overlaps_an_output_is_copied(rt, x, out):
    views = Views([("x", *x, False), ("out", *out, True)])
    before = views.values(0)
    assert views.check(rt) == 0
    assert views.views[0].copy == 1 and views.views[1].copy == 0
    assert views.views[0].data != views.originals[0] and views.views[1].data == views.originals[1]
    assert views.scratch.value is not None
    ctypes.memset(ctypes.addressof(views.buffer), 0, ctypes.sizeof(views.buffer))  # the kernel writes
    assert views.values(0) == before
    if x[2] == (0,):
        assert views.views[0].strides[0] == 0  # a broadcast input stays broadcast in its copy
    views.release(rt)


@pytest.mark.parametrize("a,b", [((0, (8,), (1,)), (0, (8,), (1,))), ((0, (8,), (1,)), (7, (8,), (1,))),
                                 ((7, (8,), (-1,)), (7, (8,), (1,))), ((0, (8,), (2,)), (2, (8,), (2,)))])
def test_overlapping_outputs_are_refused(rt, a, b):
    views = Views([("x", 40, (8,), (1,), False), ("a", *a, True), ("b", *b, True)])
    assert views.check(rt) == E_ALIAS
    assert last_error(rt) == ("k: parameters 'a' and 'b' overlap in memory and both are written, so the result "
                              "would depend on the order of the writes")
    assert views.scratch.value is None and [v.data for v in views.views] == views.originals


@pytest.mark.parametrize("a,b", [((0, (8,), (2,)), (1, (8,), (2,))), ((1, (4, 2), (4, 2)), (0, (4, 2), (4, 2))),
                                 ((0, (4,), (4,)), (2, (4,), (-4,)))])
def test_interleaved_outputs_are_disjoint(rt, a, b):
    """Intersecting ranges whose elements never meet (the gcd of the strides keeps them
    apart): accepted, nothing copied."""
    views = Views([("x", 40, (8,), (1,), False), ("a", *a, True), ("b", *b, True)])
    assert views.check(rt) == 0, last_error(rt)
    assert views.scratch.value is None and [v.data for v in views.views] == views.originals


@pytest.mark.parametrize("shape,strides,ok", [((3, 2), (1, 1), False), ((3, 2), (1, -1), False),
                                              ((3, 2), (2, 1), True), ((3, 2), (-2, -1), True),
                                              ((2, 3), (3, 2), False), ((2, 2, 2), (1, 2, 4), True),
                                              ((2, 2, 2), (1, 2, 2), False), ((1, 4), (0, 1), True)])
def test_an_output_that_overlaps_itself(rt, shape, strides, ok):
    views = Views([("out", 20, shape, strides, True)])
    assert views.check(rt) == (0 if ok else E_ALIAS)
    if not ok:
        assert last_error(rt).startswith("k: parameter 'out' overlaps itself: it is written but its stride")


def test_packed_f4_inputs_are_copied_nibble_by_nibble(rt):
    views = Views([("x", 1, (5,), (-1,), False), ("out", 0, (6,), (1,), True)], bits=4)
    data = ctypes.cast(ctypes.addressof(views.buffer), ctypes.POINTER(ctypes.c_uint8))
    for i in range(4):
        data[i] = 0x10 * (2 * i + 2) % 256 | (2 * i + 1)  # nibbles 1, 2, 3, ... element e = e + 1
    views.views[0].data = ctypes.addressof(views.buffer) + 2  # element offset 4 (byte 2, low nibble)

    def nibbles(view, count):
        base = view.data
        out = []
        for i in range(count):
            e = i * view.strides[0]
            out.append((ctypes.c_uint8.from_address(base + (e >> 1)).value >> ((e & 1) * 4)) & 0xF)
        return out

    want = nibbles(views.views[0], 5)
    assert views.check(rt) == 0 and views.views[0].copy == 1
    ctypes.memset(ctypes.addressof(views.buffer), 0, 8)
    assert nibbles(views.views[0], 5) == want == [5, 4, 3, 2, 1]
    views.release(rt)
