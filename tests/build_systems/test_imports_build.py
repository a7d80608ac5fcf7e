"""Imported modules in Make and CMake builds: ``INTENTC_INCLUDES`` (intentc.mk) and
``intentc_add_library(... INCLUDE_DIRS ...)`` pass ``-I`` to intentc; the depfile lists every
imported file, so an edit of one rebuilds the library that imports it, and a no-op build
runs nothing."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

COMMON = "import intent as I\n\nFACTOR = 2.0\n\n@intent.fn\ndef scale(x: f32[N]) -> f32[N]:\n    return x * FACTOR\n"
KERNEL = "import intent as I\nfrom common import scale\n\n@intent.kernel\ndef k(x: f32[N]) -> f32[N]:\n    return scale(x)\n"
MAKEFILE = """INTENTC_OUTPUTS := k.so
INTENTC_INCLUDES := lib
all: k.so
include $(shell intentc --make-dir)/intentc.mk
"""
CMAKELISTS = """cmake_minimum_required(VERSION 3.20)
project(imports C)
find_package(intentc 0.1 REQUIRED)
intentc_add_library(k SOURCE k.intent SHARED INCLUDE_DIRS lib)
add_custom_target(everything ALL DEPENDS k_intentc)
"""


@pytest.fixture
def project(tmp_path):
    folder = tmp_path / "project"
    (folder / "lib").mkdir(parents=True)
    (folder / "lib" / "common.intent").write_text(COMMON)
    (folder / "k.intent").write_text(KERNEL)
    (folder / "Makefile").write_text(MAKEFILE)
    (folder / "CMakeLists.txt").write_text(CMAKELISTS)
    bin_dir, log = tmp_path / "bin", tmp_path / "intentc.log"
    bin_dir.mkdir()
    wrapper = bin_dir / "intentc"  # this checkout's intentc, counting its builds
    wrapper.write_text(f"#!/bin/sh\ncase \"$1\" in build) echo \"$*\" >> '{log}';; esac\n"
                       f"PYTHONPATH='{REPO}' exec '{sys.executable}' -m intentc \"$@\"\n")
    wrapper.chmod(0o755)
    log.write_text("")
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", INTENTC_NO_CACHE="1")
    env.pop("MAKEFLAGS", None)
    return folder, log, env


def run(cmd, cwd, env) -> str:
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{cmd} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def age(folder: Path) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
            info = path.stat()
            os.utime(path, ns=(info.st_atime_ns - 10**10, info.st_mtime_ns - 10**10))


def builds(log: Path) -> list[str]:
    return log.read_text().splitlines()


def test_make_passes_the_include_folders_and_rebuilds_after_an_edit_of_an_imported_file(project):
    if shutil.which("make") is None:
        pytest.skip("GNU make is not installed")
    folder, log, env = project
    run(["make"], folder, env)
    assert builds(log) == ["build k.intent -o k.so --target host --cpu native --depfile k.so.d -I lib --emit-header"]
    assert "lib/common.intent" in (folder / "k.so.d").read_text()
    assert "Nothing to be done" in run(["make"], folder, env) and len(builds(log)) == 1
    age(folder)
    (folder / "lib" / "common.intent").write_text(COMMON.replace("2.0", "3.0"))
    run(["make"], folder, env)
    assert len(builds(log)) == 2, "an edit of the imported module must rebuild k.so"
    assert "Nothing to be done" in run(["make"], folder, env) and len(builds(log)) == 2


@pytest.mark.parametrize("generator,tool", [("Unix Makefiles", "make"), ("Ninja", "ninja")])
def test_cmake_include_dirs_and_rebuild_after_an_edit_of_an_imported_file(project, tmp_path, generator, tool):
    if shutil.which("cmake") is None or shutil.which(tool) is None:
        pytest.skip(f"cmake or {tool} is not installed")
    folder, log, env = project
    cmake_dir = run(["intentc", "--cmake-dir"], folder, env).strip()
    build = tmp_path / "build"
    run(["cmake", "-S", folder, "-B", build, "-G", generator, f"-Dintentc_DIR={cmake_dir}"], tmp_path, env)
    run(["cmake", "--build", build], tmp_path, env)
    assert len(builds(log)) == 1 and f"-I {folder / 'lib'}" in builds(log)[0]
    run(["cmake", "--build", build], tmp_path, env)
    assert len(builds(log)) == 1, "a no-op build runs no intentc"
    age(folder)
    age(build)
    (folder / "lib" / "common.intent").write_text(COMMON.replace("2.0", "3.0"))
    run(["cmake", "--build", build], tmp_path, env)
    assert len(builds(log)) == 2, "an edit of the imported module must rebuild the library"
