"""A C consumer project (tests/build_systems/consumer) built with intentc's Make rules and
with its CMake package: it calls saxpy through the static and the shared library and
checks the result. A second build does nothing; touching the .intent file re-runs intentc;
the build system has read intentc's depfile (the runtime files are dependencies). An edit of
the kernel's body rebuilds the libraries and relinks but recompiles no C source (the header is
unchanged, so not rewritten); an edit of the interface recompiles them. One intentc run per
library writes its header too; find_package(intentc 0.1) checks the version."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CONSUMER = Path(__file__).resolve().parent / "consumer"


def _runtime_header() -> str:
    """The runtime header of the intentc that the `intentc` wrapper below runs."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    folder = subprocess.run([sys.executable, "-c", "from intentc.resources import runtime_dir; print(runtime_dir())"],
                            env=env, capture_output=True, text=True, check=True).stdout.strip()
    return str(Path(folder).resolve() / "intent_runtime.h")


RUNTIME_HEADER = _runtime_header()


@pytest.fixture
def project(tmp_path) -> tuple[Path, Path, dict]:
    """(project folder, log of intentc runs, environment with an `intentc` command on PATH)."""
    folder = tmp_path / "consumer"
    shutil.copytree(CONSUMER, folder)
    shutil.copyfile(REPO / "samples" / "saxpy.intent", folder / "saxpy.intent")
    bin_dir, log = tmp_path / "bin", tmp_path / "intentc.log"
    bin_dir.mkdir()
    wrapper = bin_dir / "intentc"  # this checkout's intentc, counting its builds
    wrapper.write_text(f"#!/bin/sh\n"
                       f"case \"$1\" in build) echo \"$*\" >> '{log}';; esac\n"
                       f"PYTHONPATH='{REPO}'${{PYTHONPATH:+:$PYTHONPATH}} exec '{sys.executable}' -m intentc \"$@\"\n")
    wrapper.chmod(0o755)
    log.write_text("")
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    env.pop("MAKEFLAGS", None)
    return folder, log, env


def run(cmd: list, cwd: Path, env: dict) -> str:
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def builds(log: Path) -> list[str]:
    return log.read_text().splitlines()


def check_programs(programs: list[Path], env: dict, cwd: Path) -> None:
    for program in programs:  # run from another folder: the shared library is found through the rpath
        assert run([program], cwd, env).strip() == "PASS saxpy"


def age(*folders: Path) -> None:
    """Move every file under ``folders`` 10 s into the past, so that a file written now is
    newer than all of them whatever the file system's time resolution (and none is in the future)."""
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file() and not path.is_symlink():
                info = path.stat()
                os.utime(path, ns=(info.st_atime_ns - 10**10, info.st_mtime_ns - 10**10))


def edit(source: Path, old: str, new: str) -> None:
    text = source.read_text()
    assert old in text
    source.write_text(text.replace(old, new))


def stamps(paths: list[Path]) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in paths}


BODY_EDIT = ("return a * x + y", "return y + a * x")  # the same signature: the same header
INTERFACE_EDIT = ("return y + a * x", "return y + a * x\n\n\n@intent.kernel\n"
                  "def twice(x: f32[N]) -> f32[N]:\n    return x + x\n")


def test_make(project, tmp_path):
    if shutil.which("make") is None:
        pytest.skip("GNU make is not installed")
    folder, log, env = project
    run(["make"], folder, env)
    assert sorted(builds(log)) == sorted([
        "build saxpy.intent -o saxpy.a --target host --cpu native --depfile saxpy.a.d --emit-header",
        "build saxpy.intent -o saxpy.so --target host --cpu native --depfile saxpy.so.d --emit-header"])
    check_programs([folder / "app_static", folder / "app_shared"], env, tmp_path)

    assert "Nothing to be done" in run(["make"], folder, env)
    assert len(builds(log)) == 2
    # `make -pq` prints the rules Make read (its exit status only says whether all is up to date).
    database = subprocess.run(["make", "-pq"], cwd=folder, env=env, capture_output=True, text=True).stdout
    rule = next(line for line in database.splitlines() if line.startswith("saxpy.a: "))
    assert RUNTIME_HEADER in rule, "the depfile of saxpy.a was not included"

    age(folder)
    os.utime(folder / "saxpy.intent")  # now: newer than every output, none in the future
    run(["make"], folder, env)
    assert len(builds(log)) == 4, "touching saxpy.intent must rebuild both libraries"
    check_programs([folder / "app_static", folder / "app_shared"], env, tmp_path)

    outputs = [folder / n for n in ("saxpy.h", "app.o", "saxpy.so", "saxpy.a", "app_static", "app_shared")]
    age(folder)
    before = stamps(outputs)
    edit(folder / "saxpy.intent", *BODY_EDIT)
    run(["make"], folder, env)
    after = stamps(outputs)
    assert len(builds(log)) == 6, "one intentc run per library"
    assert after["saxpy.h"] == before["saxpy.h"] and after["app.o"] == before["app.o"], \
        "an unchanged header must not recompile app.o"
    assert all(after[n] > before[n] for n in ("saxpy.so", "saxpy.a", "app_static", "app_shared"))
    check_programs([folder / "app_static", folder / "app_shared"], env, tmp_path)
    run(["make"], folder, env)
    assert stamps(outputs) == after and len(builds(log)) == 6, "a no-op make must rebuild nothing"

    age(folder)
    after = stamps(outputs)
    edit(folder / "saxpy.intent", *INTERFACE_EDIT)
    run(["make"], folder, env)
    assert len(builds(log)) == 8 and "twice" in (folder / "saxpy.h").read_text()
    assert all(stamps(outputs)[n] > after[n] for n in stamps(outputs)), "a new interface recompiles app.o"
    check_programs([folder / "app_static", folder / "app_shared"], env, tmp_path)


GENERATORS = [pytest.param("Unix Makefiles", "make", id="make"), pytest.param("Ninja", "ninja", id="ninja")]


@pytest.mark.parametrize("generator,tool", GENERATORS)
def test_cmake(project, tmp_path, generator, tool):
    if shutil.which("cmake") is None:
        pytest.skip("cmake is not installed")
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed (the CMake generator '{generator}' needs it)")
    folder, log, env = project
    build = tmp_path / "build dir"
    run(["cmake", "-S", folder, "-B", build, "-G", generator], tmp_path, env)
    run(["cmake", "--build", build], tmp_path, env)
    assert len(builds(log)) == 2 and any("-o " + str(build) in line for line in builds(log))
    check_programs([build / "app_static", build / "app_shared"], env, tmp_path)

    run(["cmake", "--build", build], tmp_path, env)
    assert len(builds(log)) == 2, "a second build must not run intentc"
    # CMake has read the depfiles: the runtime files are dependencies of the libraries.
    recorded = [p for p in (build / "CMakeFiles").rglob("*") if p.is_file() and p.suffix in (".d", ".make")
                and RUNTIME_HEADER in p.read_text(errors="replace")]
    assert recorded, "no trace of intentc's depfile in CMake's dependency files"

    age(folder, build)
    os.utime(folder / "saxpy.intent")
    run(["cmake", "--build", build], tmp_path, env)
    assert len(builds(log)) == 4, "touching saxpy.intent must rebuild both libraries"
    check_programs([build / "app_static", build / "app_shared"], env, tmp_path)

    objects = sorted((build / "CMakeFiles").rglob("app.c.o"))
    headers = sorted((build / "intentc").rglob("saxpy.h"))
    programs = [build / "app_static", build / "app_shared"]
    assert len(objects) == 2 and len(headers) == 2
    age(folder, build)
    before = stamps(objects + headers + programs)
    edit(folder / "saxpy.intent", *BODY_EDIT)
    run(["cmake", "--build", build], tmp_path, env)
    after = stamps(objects + headers + programs)
    assert len(builds(log)) == 6, "one intentc run per library"
    assert all(after[p.name] == before[p.name] for p in objects + headers), "an unchanged header recompiles nothing"
    assert all(after[p.name] > before[p.name] for p in programs)
    check_programs(programs, env, tmp_path)
    run(["cmake", "--build", build], tmp_path, env)
    assert len(builds(log)) == 6 and stamps(objects + headers + programs) == after, "a no-op build rebuilds nothing"

    age(folder, build)
    after = stamps(objects + headers + programs)
    edit(folder / "saxpy.intent", *INTERFACE_EDIT)
    run(["cmake", "--build", build], tmp_path, env)
    assert len(builds(log)) == 8
    assert all(stamps(objects)[p.name] > after[p.name] for p in objects), "a new interface recompiles app.c"
    check_programs(programs, env, tmp_path)


VERSION_PROBE = """
set(PACKAGE_FIND_VERSION "${WANT}")
string(REPLACE "." ";" _parts "${WANT}.0.0")
list(GET _parts 0 PACKAGE_FIND_VERSION_MAJOR)
list(GET _parts 1 PACKAGE_FIND_VERSION_MINOR)
include("${DIR}/intentcConfigVersion.cmake")
message("version=${PACKAGE_VERSION} compatible=${PACKAGE_VERSION_COMPATIBLE} exact=${PACKAGE_VERSION_EXACT}")
"""


@pytest.mark.parametrize("want,compatible", [("0.1", True), ("0.1.0", True), ("0.0.9", False), ("0.2", False),
                                             ("1.0", False)])
def test_the_cmake_version_file(tmp_path, want, compatible):
    if shutil.which("cmake") is None:
        pytest.skip("cmake is not installed")
    import intentc

    probe = tmp_path / "probe.cmake"
    probe.write_text(VERSION_PROBE)
    proc = subprocess.run(["cmake", f"-DWANT={want}", f"-DDIR={REPO / 'cmake'}", "-P", probe],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert f"version={intentc.__version__} compatible={'TRUE' if compatible else 'FALSE'}" in proc.stderr


def test_the_cmake_version_file_of_an_installed_package(tmp_path):
    """Installed, the CMake files lie in intentc/_data/cmake/ and the version in intentc/__init__.py."""
    if shutil.which("cmake") is None:
        pytest.skip("cmake is not installed")
    folder = tmp_path / "intentc" / "_data" / "cmake"
    folder.mkdir(parents=True)
    shutil.copyfile(REPO / "cmake" / "intentcConfigVersion.cmake", folder / "intentcConfigVersion.cmake")
    (tmp_path / "intentc" / "__init__.py").write_text('"""x"""\n__version__ = "0.3.2"\n')
    probe = tmp_path / "probe.cmake"
    probe.write_text(VERSION_PROBE)
    proc = subprocess.run(["cmake", "-DWANT=0.3", f"-DDIR={folder}", "-P", probe], capture_output=True, text=True)
    assert "version=0.3.2 compatible=TRUE exact=FALSE" in proc.stderr, proc.stderr


def test_cmake_dir_and_make_dir_print_the_package_folders(project):
    _, _, env = project
    cmake_dir = Path(run(["intentc", "--cmake-dir"], REPO, env).strip())
    assert (cmake_dir / "intentcConfig.cmake").is_file() and (cmake_dir / "intentcConfigVersion.cmake").is_file()
    make_dir = Path(run(["intentc", "--make-dir"], REPO, env).strip())
    assert (make_dir / "intentc.mk").is_file()


def test_cmake_cross_build_for_aarch64(project, tmp_path):
    """A CMake cross build (toolchain file for aarch64) builds the kernels for AArch64 on its own
    (INTENTC_TARGET follows CMAKE_SYSTEM_PROCESSOR); the programs pass under qemu-aarch64."""
    gcc, qemu = shutil.which("aarch64-linux-gnu-gcc"), shutil.which("qemu-aarch64")
    sysroot = Path("/usr/aarch64-linux-gnu")
    if shutil.which("cmake") is None or shutil.which("make") is None:
        pytest.skip("cmake or make is not installed")
    if gcc is None or qemu is None or not (sysroot / "lib" / "ld-linux-aarch64.so.1").exists():
        pytest.skip("needs gcc-aarch64-linux-gnu, libc6-dev-arm64-cross and qemu-user (apt); .ci/run installs them")
    folder, log, env = project
    toolchain = tmp_path / "aarch64.cmake"
    toolchain.write_text(f"set(CMAKE_SYSTEM_NAME Linux)\nset(CMAKE_SYSTEM_PROCESSOR aarch64)\n"
                         f"set(CMAKE_C_COMPILER {gcc})\n")
    build = tmp_path / "build"
    run(["cmake", "-S", folder, "-B", build, f"-DCMAKE_TOOLCHAIN_FILE={toolchain}"], tmp_path, env)
    run(["cmake", "--build", build], tmp_path, env)
    assert all("--target aarch64-linux-gnu" in line for line in builds(log)) and len(builds(log)) == 2
    for program in ("app_static", "app_shared"):
        assert run([qemu, "-L", sysroot, build / program], tmp_path, env).strip() == "PASS saxpy"
