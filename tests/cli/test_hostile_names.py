"""Kernel and parameter names a user can write that C, C++, the C library, the linker or the
runtime own (intentc/sema/c_names.py, docs/abi.md "Names"). Each of the names below, as a
kernel's name and as a parameter's, is either refused with a located diagnostic and a hint
(no traceback), or builds into a library whose header compiles as C and as C++ beside the
usual system headers and whose kernels can be called, failing calls included, in a process
that survives them. (A kernel named strlen used to crash the process at its first failed
call: the runtime's own strlen calls went to the kernel.)"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from intentc.diagnostics import CompileError
from intentc.driver import build, frontend

REPO = Path(__file__).resolve().parents[2]

C_KEYWORDS = """auto break case char const continue default do double else enum extern float for goto if inline
int long register restrict return short signed sizeof static struct switch typedef union unsigned void volatile
while _Alignas _Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn _Static_assert _Thread_local alignas
alignof bool constexpr false nullptr static_assert thread_local true typeof""".split()
CXX_KEYWORDS = """and and_eq asm bitand bitor catch char8_t char16_t char32_t class compl concept const_cast
consteval constinit co_await co_return co_yield decltype delete dynamic_cast explicit export friend mutable
namespace new noexcept not not_eq operator or or_eq private protected public reinterpret_cast requires
static_cast template this throw try typeid typename using virtual wchar_t xor xor_eq""".split()
C_LIBRARY = """strlen malloc calloc realloc free memcpy memmove memset memcmp strcmp strncmp strcpy strncpy strcat
strchr strstr strdup printf fprintf sprintf snprintf vsnprintf vfprintf puts putchar getchar fopen fclose fread
fwrite fflush exit abort atexit qsort bsearch abs labs div rand srand getenv setenv system time clock sysconf
sleep usleep open close read write mmap munmap pthread_create pthread_join pthread_mutex_lock pthread_once
pthread_getspecific dlopen dlsym posix_memalign aligned_alloc sin cos tan exp exp2 log log2 log10 pow sqrt cbrt
fabs floor ceil round trunc fmod fmodf expf logf sqrtf powf fma fmax fmin hypot erf tgamma lgamma nan ldexp
frexp modf copysign index rindex signal raise kill fork wait select poll socket errno environ stdin stdout stderr
main etext edata end""".split()
RUNTIME = """intent_error intent_last_error intent_clear_error intent_alloc intent_free intent_check_tensor
intent_check_aliasing intent_parallel_for intent_get_num_threads intent_set_num_threads intent_set_parallel_backend
intent_runtime_version intent_snapshot intent_snapshot_compare intent_module_manifest
intent_runtime_process_state_v1 IntentTensor IntentStatus IntentDType IntentDevice IntentArgView INTENT_OK
INTENT_E_NULL INTENT_API INTENT_ABI_VERSION INTENT_DTYPE_FLOAT INTENT_DEVICE_CPU intent INTENT""".split()
LINKER_AND_RESERVED = """_init _fini _start _end _edata __bss_start _DYNAMIC _GLOBAL_OFFSET_TABLE_ __dso_handle
__libc_start_main __stack_chk_fail __cxa_atexit __gxx_personality_v0 _ITM_registerTMCloneTable __x __Y _X
_private __init__""".split()
MACROS = """NULL offsetof EOF BUFSIZ SEEK_SET EXIT_SUCCESS EXIT_FAILURE RAND_MAX CHAR_BIT INT_MAX INT_MIN UINT_MAX
LONG_MAX SIZE_MAX PTRDIFF_MAX INT8_MIN INT8_MAX INT16_MAX INT32_MIN INT32_MAX INT64_MAX UINT8_MAX UINT16_MAX
UINT32_MAX UINT64_MAX INT32_C UINT64_C INTMAX_MAX INTPTR_MAX INT_LEAST8_MAX INT_FAST32_MIN WCHAR_MAX FLT_MAX
DBL_EPSILON INFINITY NAN HUGE_VAL M_PI assert isnan isinf isfinite signbit va_start va_arg va_end setjmp
EINVAL ENOMEM ERANGE EDOM SIGINT SIGSEGV complex linux unix i386 int8_t int16_t int32_t int64_t uint8_t
uint16_t uint32_t uint64_t intptr_t uintptr_t size_t ptrdiff_t max_align_t FILE pthread_t""".split()

NAMES = sorted(set(C_KEYWORDS + CXX_KEYWORDS + C_LIBRARY + RUNTIME + LINKER_AND_RESERVED + MACROS))

HEADERS = ("stddef.h", "stdint.h", "stdbool.h", "stdio.h", "stdlib.h", "string.h", "math.h", "errno.h",
           "assert.h", "limits.h", "float.h", "signal.h", "setjmp.h", "stdarg.h", "time.h", "pthread.h",
           "unistd.h", "dlfcn.h")


def _kernel(name: str, param: str = "x") -> str:
    return f"import intent as I\n\n@intent.kernel\ndef {name}({param}: f32[N]) -> f32[N]:\n    return {param} * 2.0\n"


def _outcome(text: str):
    """None when the program is accepted, else the CompileError (anything else propagates: a traceback)."""
    try:
        frontend(text, "names.intent")
    except CompileError as exc:
        return exc
    return None


def test_the_list_is_long_enough():
    assert len(NAMES) >= 200, len(NAMES)


def _located(exc: CompileError) -> bool:
    text = exc.diagnostics[0].render_plain()
    return re.match(r"names\.intent:[45]:\d+: error: ", text) is not None and "^" in text


@pytest.fixture(scope="module")
def outcomes():
    """name -> (kernel outcome, parameter outcome)."""
    return {name: (_outcome(_kernel(name)), _outcome(_kernel("k", name))) for name in NAMES}


def test_refusals_are_located_and_hinted(outcomes):
    for name, results in outcomes.items():
        for exc in results:
            if exc is None:
                continue
            diag = exc.diagnostics[0]
            assert diag.span is not None and _located(exc), (name, diag.render_plain())
            if "cannot be exported to C" in diag.message or "cannot appear in the C header" in diag.message:
                assert diag.hint and "rename" in diag.hint, (name, diag.render_plain())


def test_names_the_c_world_owns_are_refused_as_kernels(outcomes):
    """What used to crash a process or give a linker error or a header that does not compile."""
    for name in ("strlen", "malloc", "memcpy", "printf", "vsnprintf", "sysconf", "intent_error", "intent_alloc",
                 "intent_module_manifest", "intent_last_error", "_init", "int", "NULL", "INTENT_API", "main",
                 "exp", "errno", "linux", "int32_t", "IntentTensor"):
        exc = outcomes[name][0]
        assert exc is not None and "cannot be exported to C" in exc.diagnostics[0].message, name
    for name in ("int", "NULL", "INTENT_API", "errno", "int32_t", "IntentTensor", "INT32_MAX", "linux", "assert"):
        exc = outcomes[name][1]
        assert exc is not None and "cannot appear in the C header" in exc.diagnostics[0].message, name


def _cc() -> str | None:
    for name in ("cc", "gcc", "clang"):
        if shutil.which(name):
            return name
    return None


def _cxx() -> str | None:
    for name in ("c++", "g++", "clang++"):
        if shutil.which(name):
            return name
    return None


def test_accepted_names_build_compile_and_run(outcomes, tmp_path):
    """Every accepted name: one library per kernel name, the accepted parameter names in
    groups of kernels; each header compiles under C (GNU and strict dialects) and C++ after
    the system headers, and every kernel is called, failing and succeeding, in one process."""
    cc, cxx = _cc(), _cxx()
    if cc is None:
        pytest.skip("no C compiler")
    kernels = [name for name, (k, _) in outcomes.items() if k is None]
    params = [name for name, (_, p) in outcomes.items() if p is None]
    assert params, "no parameter name was accepted: the list should hold some the header can take"
    sources = {f"kernel_{i}": _kernel(name) for i, name in enumerate(kernels)}
    for start in range(0, len(params), 16):
        group = params[start:start + 16]
        sig = ", ".join(f"{p}: f32[N]" for p in group)
        body = " + ".join(group)
        sources[f"params_{start // 16}"] = (f"import intent as I\n\n@intent.kernel\ndef params_{start // 16}({sig}) "
                                           f"-> f32[N]:\n    return {body}\n")
    calls = []
    for module, text in sources.items():
        src = tmp_path / f"{module}.intent"
        src.write_text(text)
        build(src, tmp_path / f"{module}.so")
        include = "".join(f"#include <{h}>\n" for h in HEADERS) + f'#include "{module}.h"\n'
        probe = tmp_path / f"{module}_probe.c"
        probe.write_text(include + "int probe_main(void) { return 0; }\n")
        for compiler, flags in ((cc, ["-std=gnu11"]), (cc, ["-std=c11", "-D_GNU_SOURCE"]),
                                *(((cxx, ["-x", "c++", "-std=c++17"]),) if cxx else ())):
            proc = subprocess.run([compiler, *flags, "-Wall", "-Werror", "-fsyntax-only", "-I", str(tmp_path),
                                   str(probe)], capture_output=True, text=True)
            assert proc.returncode == 0, f"{module} ({' '.join(flags)}):\n{text}\n{proc.stderr}"
        calls.append(module)
    script = f"""
import numpy as np, intentc
for module in {calls!r}:
    lib = intentc.load({str(tmp_path)!r} + "/" + module + ".so")
    for kernel in lib.kernels.values():
        n = len(kernel.inputs)
        try:
            kernel(*([np.ones(3, np.float32)] + [np.ones(4, np.float32)] * (n - 1)))
            assert n == 1
        except intentc.KernelError as exc:
            assert n > 1 and str(exc), exc
        try:
            kernel(*([np.ones(2, np.float64)] * n))  # the wrong dtype: a failed call, with a message
            raise AssertionError("accepted f64")
        except intentc.KernelError as exc:
            assert "parameter" in str(exc), exc
        result = kernel(*([np.ones(5, np.float32)] * n))
        assert np.array_equal(result, np.full(5, 2.0 if module.startswith("kernel_") else n, np.float32)), result
print("ok", len({calls!r}))
"""
    env_path = str(REPO)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                          env={**__import__("os").environ, "PYTHONPATH": env_path})
    assert proc.returncode == 0 and proc.stdout.startswith("ok"), proc.stdout + proc.stderr
