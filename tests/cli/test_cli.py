"""The `intentc` command line and what it builds.

- `build` of .so / .o / .a / .h: the files, their kind (ELF type, archive), the exported
  symbols, the header's declarations against docs/abi.md, `--depfile`;
- byte-identical artifacts from two builds of one input into different folders;
- `explain` at every stage for every sample, `check`, `--version`, exit codes;
- consumers: a C program and a C++ program compiled against the generated header and
  linked with the .so (and the C one with the .o and the .a), run;
- the Python loader refusing bad calls with the right `KernelError.code`, a message that
  names the parameter and the extents, and nothing written.
"""
from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import intentc  # noqa: E402
from intentc.loader import IntentTensor, _Device, _DType  # noqa: E402

SAMPLES = sorted(REPO.glob("samples/*.intent"))
SAXPY = REPO / "samples" / "saxpy.intent"
STAGES = ("ast", "kir", "lowered", "physical", "llvm", "llvm-opt", "asm")
E_NULL, E_DTYPE, E_RANK, E_SHAPE, E_STRIDE = -1, -2, -3, -4, -5
CC = shutil.which("cc") or shutil.which("gcc")
CXX = shutil.which("g++") or shutil.which("c++")


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["NO_COLOR"] = "1"
    env.pop("FORCE_COLOR", None)
    return env


def intentc_cli(*args, cwd=None, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "intentc", *map(str, args)], cwd=cwd, env=_env(),
                          capture_output=True, text=True, timeout=timeout)


def _ok(proc: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def _run(cmd: list, **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=120, **kwargs)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


def _elf_type(path: Path) -> int:
    data = path.read_bytes()[:18]
    assert data[:4] == b"\x7fELF", f"{path.name} is not ELF"
    return int.from_bytes(data[16:18], "little")


def _symbols(path: Path, dynamic: bool = False) -> set[str]:
    nm = shutil.which("nm")
    if nm is None:
        pytest.fail("nm is needed to read the symbols of built artifacts")
    out = _run([nm, "-D" if dynamic else "-g", "--defined-only", path]).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip() and not line.endswith(":")}


# ---- build ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def saxpy_builds(tmp_path_factory) -> dict[str, Path]:
    """samples/saxpy.intent copied into two different project folders and built there by the CLI
    with the same relative paths (`intentc build saxpy.intent -o build/saxpy.so --depfile ...`):
    {"a": build folder, "b": build folder}."""
    dirs = {}
    for tag in ("a", "b"):
        project = tmp_path_factory.mktemp(f"project_{tag}") / "nested" / "project"
        project.mkdir(parents=True)
        shutil.copy(SAXPY, project / "saxpy.intent")
        for kind in ("so", "o", "a", "h"):
            _ok(intentc_cli("build", "saxpy.intent", "-o", f"build/saxpy.{kind}", "--depfile",
                            f"build/saxpy.{kind}.d", cwd=project))
        dirs[tag] = project / "build"
    return dirs


def test_build_writes_every_kind(saxpy_builds):
    out = saxpy_builds["a"]
    assert _elf_type(out / "saxpy.so") == 3  # ET_DYN
    assert _elf_type(out / "saxpy.o") == 1  # ET_REL
    assert (out / "saxpy.a").read_bytes().startswith(b"!<arch>\n")
    assert (out / "intent_runtime.h").is_file()
    assert {"saxpy", "intent_module_manifest", "intent_last_error"} <= _symbols(out / "saxpy.so", dynamic=True)
    for kind in ("o", "a"):
        assert {"saxpy", "intent_module_manifest", "intent_last_error"} <= _symbols(out / f"saxpy.{kind}")


def test_builds_are_byte_identical(saxpy_builds):
    """Two builds of one input in different folders: nothing of the folder or the build time leaks
    into the artifacts. (The source path as given is part of the input: run-time messages cite it.)"""
    a, b = saxpy_builds["a"], saxpy_builds["b"]
    assert a.resolve() != b.resolve()
    for name in ("saxpy.so", "saxpy.o", "saxpy.a", "saxpy.h", "intent_runtime.h", "saxpy.so.d"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), f"{name} differs between two builds"
    assert b"(at saxpy.intent:5:" in (a / "saxpy.so").read_bytes()


def test_depfile(saxpy_builds):
    out = saxpy_builds["a"]
    project = out.parent
    for kind in ("so", "o", "a", "h"):
        text = (out / f"saxpy.{kind}.d").read_text()
        rule = text.replace("\\\n", " ").splitlines()[0]
        target, _, deps = rule.partition(":")
        assert target.strip() == f"build/saxpy.{kind}", text
        deps = deps.split()
        assert deps and deps[0] == "saxpy.intent", text
        for dep in deps:
            assert (project / dep).is_file(), f"the depfile lists {dep}, which does not exist"
        if kind != "h":  # objects and libraries depend on the runtime they link in
            assert any(Path(d).name == "intent_runtime.h" for d in deps), text


def test_depfile_content_follows_make_syntax(tmp_path):
    """make itself reads the depfile: the target is up to date until the source changes."""
    make = shutil.which("make")
    if make is None:
        pytest.fail("make is needed for the depfile check")
    shutil.copy(SAXPY, tmp_path / "k.intent")
    _ok(intentc_cli("build", "k.intent", "-o", "k.so", "--depfile", "k.d", cwd=tmp_path))
    (tmp_path / "Makefile").write_text("k.so:\n\t@echo REBUILD\n-include k.d\n")
    deps = (tmp_path / "k.d").read_text().replace("\\\n", " ").splitlines()[0].split(":", 1)[1].split()
    assert deps[0] == "k.intent"
    newest = max((tmp_path / d).stat().st_mtime for d in deps)
    os.utime(tmp_path / "k.so", (newest + 1, newest + 1))
    quiet = subprocess.run([make, "-q", "k.so"], cwd=tmp_path, capture_output=True, text=True)
    assert quiet.returncode == 0, f"a fresh target is out of date: {quiet.stdout}{quiet.stderr}"
    os.utime(tmp_path / "k.intent", (newest + 2, newest + 2))
    stale = subprocess.run([make, "-q", "k.so"], cwd=tmp_path, capture_output=True, text=True)
    assert stale.returncode == 1, "touching the source does not make the target out of date"


# ---- the header against docs/abi.md --------------------------------------------------------
def _declaration(header: str, kernel: str) -> str:
    match = re.search(rf"INTENT_API int32_t {kernel}\((.*?)\);", header, re.S)
    assert match, f"no declaration of {kernel}:\n{header}"
    return f"int32_t {kernel}({' '.join(match.group(1).split())});"


def test_header_matches_the_abi_document(saxpy_builds):
    abi = (REPO / "docs" / "abi.md").read_text()
    documented = re.search(r"int32_t saxpy\(.*?\);", abi).group(0)
    header = (saxpy_builds["a"] / "saxpy.h").read_text()
    assert _declaration(header, "saxpy") == documented
    assert '#include "intent_runtime.h"' in header
    assert 'extern "C"' in header
    assert "intent_module_manifest" in header
    guard = re.search(r"#ifndef (\w+)\n#define \1\n", header)
    assert guard and header.rstrip().endswith(f"#endif /* {guard.group(1)} */")


ABI_PROGRAM = """import intent as I

@intent.kernel
def scalars(b: bool, i1: i8, i2: i16, i3: i32, i4: i64, u1: u8, u2: u16, u3: u32, u4: u64,
            h: f16, f: f32, d: f64, n: index, x: f32[N], y: mut f64[N]):
    for i in I.parallel(x.axis(0)):
        y[i] = I.cast(x[i], f64) + d

@intent.kernel
def two_results(x: f32[N], k: i32[N, 3]) -> (f32[N], i32[3, N]):
    return (x * 2.0, I.transpose(k))
"""


@pytest.fixture(scope="module")
def abi_build(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("abi")
    (folder / "abi_kinds.intent").write_text(ABI_PROGRAM)
    _ok(intentc_cli("build", folder / "abi_kinds.intent", "-o", folder / "abi_kinds.so"))
    return folder


def test_header_scalar_types_and_results_follow_the_abi(abi_build):
    header = (abi_build / "abi_kinds.h").read_text()
    assert _declaration(header, "scalars") == (
        "int32_t scalars(uint8_t b, int8_t i1, int16_t i2, int32_t i3, int64_t i4, uint8_t u1, uint16_t u2, "
        "uint32_t u3, uint64_t u4, uint16_t h, float f, double d, int64_t n, "
        "const IntentTensor *x, IntentTensor *y);")
    # Returned tensors follow the parameters as out0, out1, ... (docs/abi.md).
    assert _declaration(header, "two_results") == (
        "int32_t two_results(const IntentTensor *x, const IntentTensor *k, IntentTensor *out0, IntentTensor *out1);")


def test_header_compiles_as_c_and_cpp(abi_build, saxpy_builds):
    for compiler, flags in ((CC, ["-x", "c", "-std=c99"]), (CXX, ["-x", "c++", "-std=c++11"])):
        assert compiler, "a C and a C++ compiler are needed"
        for folder, header in ((abi_build, "abi_kinds.h"), (saxpy_builds["a"], "saxpy.h")):
            _run([compiler, *flags, "-Wall", "-Wextra", "-Werror", "-pedantic", "-fsyntax-only", folder / header])


# ---- explain, check, version, exit codes --------------------------------------------------
@pytest.mark.parametrize("sample", SAMPLES, ids=[s.stem for s in SAMPLES])
def test_explain_every_stage(sample):
    from click.testing import CliRunner

    from intentc.cli import main

    for stage in STAGES:
        result = CliRunner().invoke(main, ["explain", str(sample), "--stage", stage], catch_exceptions=False)
        assert result.exit_code == 0, f"explain --stage {stage} {sample.name}: {result.output}"
        assert result.output.strip(), f"explain --stage {stage} {sample.name} printed nothing"
    result = CliRunner().invoke(main, ["explain", str(sample), "--print-after", "all"], catch_exceptions=False)
    assert result.exit_code == 0 and "after to_physical" in result.output


def test_explain_subprocess_shows_each_stage():
    markers = {"ast": "Module", "kir": "kernel @saxpy(", "lowered": "result", "physical": "physical module saxpy",
               "llvm": "define", "llvm-opt": "define", "asm": "saxpy:"}
    for stage in ("kir", "asm"):
        proc = _ok(intentc_cli("explain", SAXPY, "--stage", stage))
        assert markers[stage] in proc.stdout


def test_check_ok():
    proc = _ok(intentc_cli("check", SAXPY))
    assert proc.stdout.strip().endswith("ok (1 kernel)")
    proc = _ok(intentc_cli("check", REPO / "samples" / "broadcast_add.intent"))
    assert proc.stdout.strip().endswith("ok (2 kernels)")


def test_check_reports_what_build_would(tmp_path, monkeypatch):
    """`check` runs the lowering and the target's code generation too (no object code): an
    error only code generation finds (T7) is reported by `check` as `build` reports it."""
    from click.testing import CliRunner

    from intentc import cli
    from intentc.codegen import emit_llvm

    def refuses(*args, **kwargs):
        raise emit_llvm.UnsupportedError("a construct this target cannot lower")

    monkeypatch.setattr(emit_llvm, "emit_module", refuses)
    checked = CliRunner().invoke(cli.main, ["check", str(SAXPY)])
    built = CliRunner().invoke(cli.main, ["build", str(SAXPY), "-o", str(tmp_path / "s.so"), "--no-cache"])
    assert checked.exit_code == built.exit_code == 1, (checked.output, built.output)
    assert "error[T7]: not supported on target host: a construct this target cannot lower" in checked.output
    assert checked.output == built.output and not (tmp_path / "s.so").exists()
    monkeypatch.undo()
    proc = _ok(intentc_cli("check", SAXPY, "--target", "sm_90"))
    assert proc.stdout.strip().endswith("ok (1 kernel)")


def test_version():
    proc = _ok(intentc_cli("--version"))
    assert proc.stdout.strip() == f"intentc, version {intentc.__version__}"
    pyproject = (REPO / "pyproject.toml").read_text()
    assert f'version = "{intentc.__version__}"' in pyproject


def test_help():
    proc = _ok(intentc_cli("--help"))
    for command in ("build", "check", "explain"):
        assert command in proc.stdout
    bare = intentc_cli()  # a usage error: the help on stderr, exit 2 (docs/cli.md)
    assert bare.returncode == 2 and all(command in bare.stderr for command in ("build", "check", "explain"))


@pytest.mark.parametrize("args, code, words", [
    (["check", "no_such_file.intent"], 1, ["no such file"]),
    (["build", "no_such_file.intent", "-o", "x.so"], 1, ["no such file"]),
    (["build", str(SAXPY), "-o", "saxpy.exe"], 1, ["cannot tell what to build", ".so"]),
    (["build", str(SAXPY)], 2, ["-o"]),
    (["explain", str(SAXPY), "--stage", "bogus"], 2, ["bogus"]),
    (["frobnicate"], 2, ["frobnicate"]),
    (["check", str(REPO / "tests" / "diagnostics" / "parallel_break.intent")], 1, ["error[P4]", "1 error"]),
    (["build", str(REPO / "tests" / "diagnostics" / "dtype_mismatch.intent"), "-o", "d.so"], 1, ["dtype mismatch"]),
    (["explain", str(REPO / "tests" / "diagnostics" / "syntax_error.intent"), "--stage", "physical"], 1,
     ["unexpected end of line"]),
])
def test_exit_codes(args, code, words, tmp_path):
    proc = intentc_cli(*args, cwd=tmp_path)
    assert proc.returncode == code, f"{args}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr
    for word in words:
        assert word in proc.stdout + proc.stderr, f"{args}: {word!r} not in\n{proc.stdout}{proc.stderr}"
    assert not list(tmp_path.iterdir()), "a failed command left files behind"


# ---- C and C++ consumers ------------------------------------------------------------------------
C_MAIN = r"""
#include <stdio.h>
#include <string.h>
#include "saxpy.h"

int main(void) {
    float x[5] = {1, 2, 3, 4, 5}, y[5] = {10, 20, 30, 40, 50}, out[5];
    int64_t n = 5, n4 = 4;
    IntentTensor tx = {x, {1, 0}, 1, {2, 32, 1}, &n, NULL, 0};
    IntentTensor ty = {y, {1, 0}, 1, {2, 32, 1}, &n, NULL, 0};
    IntentTensor ty4 = {y, {1, 0}, 1, {2, 32, 1}, &n4, NULL, 0};
    IntentTensor tout = {out, {1, 0}, 1, {2, 32, 1}, &n, NULL, 0};
    int32_t rc = saxpy(2.0f, &tx, &ty, &tout);
    if (rc != INTENT_OK) { printf("FAIL call: %d %s\n", rc, intent_last_error()); return 1; }
    for (int i = 0; i < 5; i++)
        if (out[i] != 2.0f * x[i] + y[i]) { printf("FAIL value %d: %g\n", i, out[i]); return 1; }
    for (int i = 0; i < 5; i++) out[i] = -7.0f;
    rc = saxpy(2.0f, &tx, &ty4, &tout);
    if (rc != INTENT_E_SHAPE) { printf("FAIL mismatched N gave %d\n", rc); return 1; }
    if (!strstr(intent_last_error(), "y.shape[0] = 4") || !strstr(intent_last_error(), "x.shape[0] = 5")) {
        printf("FAIL message: %s\n", intent_last_error()); return 1;
    }
    for (int i = 0; i < 5; i++)
        if (out[i] != -7.0f) { printf("FAIL a refused call wrote out[%d]\n", i); return 1; }
    printf("PASS %s\n", intent_last_error());
    return 0;
}
"""

CPP_MAIN = r"""
#include <cstdint>
#include <cstdio>
#include <vector>
#include "saxpy.h"

int main() {
    std::vector<float> x{1, 2, 3}, y{4, 5, 6}, out(3);
    std::int64_t n = 3;
    IntentTensor tx{x.data(), {1, 0}, 1, {2, 32, 1}, &n, nullptr, 0};
    IntentTensor ty{y.data(), {1, 0}, 1, {2, 32, 1}, &n, nullptr, 0};
    IntentTensor tout{out.data(), {1, 0}, 1, {2, 32, 1}, &n, nullptr, 0};
    if (saxpy(0.5f, &tx, &ty, &tout) != INTENT_OK) { std::printf("FAIL %s\n", intent_last_error()); return 1; }
    for (int i = 0; i < 3; i++)
        if (out[i] != 0.5f * x[i] + y[i]) { std::printf("FAIL value %d\n", i); return 1; }
    std::printf("PASS\n");
    return 0;
}
"""


def test_c_consumer_with_shared_library(saxpy_builds, tmp_path):
    assert CC, "a C compiler is needed"
    lib = saxpy_builds["a"]
    (tmp_path / "main.c").write_text(C_MAIN)
    _run([CC, "-std=c11", "-Wall", "-Werror", tmp_path / "main.c", "-I", lib, "-L", lib, "-l:saxpy.so",
          f"-Wl,-rpath,{lib}", "-o", tmp_path / "main"])
    out = _run([tmp_path / "main"]).stdout
    assert out.startswith("PASS saxpy: extent N: y.shape[0] = 4 but x.shape[0] = 5"), out


@pytest.mark.parametrize("kind", ["o", "a"])
def test_c_consumer_with_static_artifacts(saxpy_builds, tmp_path, kind):
    assert CC, "a C compiler is needed"
    lib = saxpy_builds["a"]
    (tmp_path / "main.c").write_text(C_MAIN)
    _run([CC, "-std=c11", "-Wall", "-Werror", tmp_path / "main.c", "-I", lib, lib / f"saxpy.{kind}", "-lpthread",
          "-lm", "-o", tmp_path / "main"])
    assert _run([tmp_path / "main"]).stdout.startswith("PASS")


def test_cpp_consumer(saxpy_builds, tmp_path):
    assert CXX, "a C++ compiler is needed"
    lib = saxpy_builds["a"]
    (tmp_path / "main.cpp").write_text(CPP_MAIN)
    _run([CXX, "-std=c++17", "-Wall", "-Wextra", "-Werror", tmp_path / "main.cpp", "-I", lib, "-L", lib,
          "-l:saxpy.so", f"-Wl,-rpath,{lib}", "-o", tmp_path / "main_cpp"])
    assert _run([tmp_path / "main_cpp"]).stdout.strip() == "PASS"


# ---- the Python loader refuses bad calls ------------------------------------------------------
LOADER_PROGRAM = """import intent as I

@intent.kernel
def saxpy(a: f32, x: f32[N], y: f32[N]) -> f32[N]:
    return a * x + y

@intent.kernel
def scale(x: f32[N], s: f32, out: mut f32[N]):
    for i in I.parallel(x.axis(0)):
        out[i] = x[i] * s

@intent.kernel
def copy4(x: f32[4], out: mut f32[4]):
    for i in I.parallel(x.axis(0)):
        out[i] = x[i]
"""
SENTINEL = np.float32(-12345.5)


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    folder = tmp_path_factory.mktemp("loader")
    (folder / "calls.intent").write_text(LOADER_PROGRAM)
    _ok(intentc_cli("build", folder / "calls.intent", "-o", folder / "calls.so"))
    return intentc.load(folder / "calls.so")


def _refused(call, code: int, words: list[str], *untouched: np.ndarray) -> intentc.KernelError:
    before = [a.copy() for a in untouched]
    with pytest.raises(intentc.KernelError) as info:
        call()
    error = info.value
    assert error.code == code, f"code {error.code} ({error}), expected {code}"
    for word in words:
        assert word in str(error), f"{word!r} not in {str(error)!r}"
    for array, was in zip(untouched, before):
        assert array.tobytes() == was.tobytes(), "a refused call wrote into its output"
    return error


def _sentinel(n: int) -> np.ndarray:
    return np.full(n, SENTINEL, dtype=np.float32)


def test_loader_good_call(kernels):
    x, y = np.arange(5, dtype=np.float32), np.ones(5, np.float32)
    np.testing.assert_array_equal(kernels.saxpy(2.0, x, y), 2 * x + y)


def test_loader_mismatched_extent(kernels):
    out = _sentinel(5)
    _refused(lambda: kernels.saxpy(2.0, np.ones(5, np.float32), np.ones(4, np.float32), out=out), E_SHAPE,
             ["saxpy", "extent N", "y.shape[0] = 4", "x.shape[0] = 5"], out)
    out = _sentinel(6)
    _refused(lambda: kernels.saxpy(2.0, np.ones(5, np.float32), np.ones(5, np.float32), out=out), E_SHAPE,
             ["out.shape[0] = 6", "5"], out)
    out = _sentinel(3)
    _refused(lambda: kernels.scale(np.ones(4, np.float32), 2.0, out), E_SHAPE,
             ["out.shape[0] = 3", "x.shape[0] = 4"], out)


def test_loader_literal_extent(kernels):
    out = _sentinel(4)
    _refused(lambda: kernels.copy4(np.ones(2, np.float32), out), E_SHAPE,
             ["copy4", "x.shape[0] = 2", "declares 4"], out)
    out = _sentinel(6)
    _refused(lambda: kernels.copy4(np.ones(4, np.float32), out), E_SHAPE, ["out.shape[0] = 6", "declares 4"], out)


def test_loader_wrong_dtype(kernels):
    out = _sentinel(3)
    _refused(lambda: kernels.scale(np.ones(3, np.float64), 2.0, out), E_DTYPE, ["'x'", "f64", "f32"], out)
    _refused(lambda: kernels.scale(np.ones(3, np.float32), 2.0, np.zeros(3, np.int32)), E_DTYPE, ["'out'", "i32"])


def test_loader_wrong_rank(kernels):
    out = _sentinel(4)
    _refused(lambda: kernels.scale(np.ones((2, 2), np.float32), 2.0, out), E_RANK, ["'x'", "2 dimensions", "1"],
             out)


def test_loader_null_data_pointer(kernels):
    """A descriptor built by hand with data=None and a non-zero extent."""
    shape = (ctypes.c_int64 * 1)(4)
    null_x = IntentTensor(None, _Device(1, 0), 1, _DType(2, 32, 1), ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64)),
                          None, 0)
    out = _sentinel(4)
    out_shape = (ctypes.c_int64 * 1)(4)
    out_desc = IntentTensor(out.ctypes.data, _Device(1, 0), 1, _DType(2, 32, 1),
                            ctypes.cast(out_shape, ctypes.POINTER(ctypes.c_int64)), None, 0)
    before = out.copy()
    code = kernels.scale.func(ctypes.byref(null_x), ctypes.c_float(2.0), ctypes.byref(out_desc))
    assert code == E_NULL
    message = kernels.scale.module.last_error()
    assert "'x'" in message and "null" in message and "4" in message, message
    assert out.tobytes() == before.tobytes()
    # A null descriptor for the output is refused the same way.
    x = np.ones(4, np.float32)
    x_shape = (ctypes.c_int64 * 1)(4)
    x_desc = IntentTensor(x.ctypes.data, _Device(1, 0), 1, _DType(2, 32, 1),
                          ctypes.cast(x_shape, ctypes.POINTER(ctypes.c_int64)), None, 0)
    assert kernels.scale.func(ctypes.byref(x_desc), ctypes.c_float(2.0), None) == E_NULL
    assert "'out'" in kernels.scale.module.last_error()


def test_loader_zero_stride_output(kernels):
    """A writable view whose elements alias (stride 0) cannot be written: E_STRIDE, nothing written."""
    base = _sentinel(8)
    aliased = np.lib.stride_tricks.as_strided(base, shape=(4,), strides=(0,), writeable=True)
    _refused(lambda: kernels.scale(np.arange(4, dtype=np.float32), 2.0, aliased), E_STRIDE,
             ["scale", "'out'", "stride 0", "extent 4"], base)
    _refused(lambda: kernels.saxpy(2.0, np.ones(4, np.float32), np.ones(4, np.float32), out=aliased), E_STRIDE,
             ["'out'", "stride 0"], base)
    # Reading through a zero stride is fine: it is a broadcast input.
    x = np.lib.stride_tricks.as_strided(np.array([3.0], np.float32), shape=(4,), strides=(0,))
    out = _sentinel(4)
    kernels.scale(x, 2.0, out)
    np.testing.assert_array_equal(out, np.full(4, 6.0, np.float32))


def test_loader_error_status_names(kernels):
    error = _refused(lambda: kernels.scale(np.ones((2, 2), np.float32), 2.0, _sentinel(4)), E_RANK, [])
    assert error.status == "INTENT_E_RANK"
