"""--prefix through the build systems: two libraries whose kernels have the same name
(`scale`) link into one C program when each exports them under its own prefix, with
intentc's Make rules (INTENTC_PREFIX, per output) and its CMake function (PREFIX)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

KERNEL = """\
import intent as I

@intent.kernel
def scale(x: f32[N]) -> f32[N]:
    return x * {factor}
"""

APP = r"""
#include <stdio.h>
#include "twice.h"
#include "thrice.h"

int main(void)
{
    float x[3] = {1, 2, 3}, a[3], b[3];
    int64_t shape[1] = {3};
    IntentTensor tx = {x, {1, 0}, 1, {2, 32, 1}, shape, NULL, 0};
    IntentTensor ta = {a, {1, 0}, 1, {2, 32, 1}, shape, NULL, 0};
    IntentTensor tb = {b, {1, 0}, 1, {2, 32, 1}, shape, NULL, 0};
    if (twice_scale(&tx, &ta) != 0 || thrice_scale(&tx, &tb) != 0)
        return 1;
    if (twice_scale(&tx, &tx) != INTENT_OK) /* an input may be the output */
        return 2;
    IntentTensor bad = {b, {1, 0}, 1, {2, 32, 1}, (int64_t[]){2}, NULL, 0};
    if (thrice_scale(&ta, &bad) != INTENT_E_SHAPE)
        return 3;
    printf("%g %g %s\n", a[2], b[2], intent_last_error());
    return a[2] == 6 && b[2] == 9 ? 0 : 4;
}
"""

MAKEFILE = """\
INTENTC_OUTPUTS := twice.a thrice.so
all: app
include $(shell $(INTENTC) --make-dir)/intentc.mk
twice.a twice.h: INTENTC_PREFIX = twice_
thrice.so thrice.h: INTENTC_PREFIX = thrice_
app.o: app.c twice.h thrice.h
\t$(CC) -O1 -I. -c -o $@ app.c
app: app.o twice.a thrice.so
\t$(CC) -o $@ app.o twice.a -L. -l:thrice.so -Wl,-rpath,'$$ORIGIN' -pthread -lm
"""

CMAKELISTS = """\
cmake_minimum_required(VERSION 3.20)
project(prefixed C)
find_package(intentc 0.1 REQUIRED)
intentc_add_library(twice SOURCE twice.intent STATIC PREFIX twice_)
intentc_add_library(thrice SOURCE thrice.intent SHARED PREFIX thrice_)
add_executable(app app.c)
target_link_libraries(app PRIVATE twice thrice)
"""


@pytest.fixture
def project(tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "twice.intent").write_text(KERNEL.format(factor="2.0"))
    (folder / "thrice.intent").write_text(KERNEL.format(factor="3.0"))
    (folder / "app.c").write_text(APP)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "intentc"
    wrapper.write_text(f"#!/bin/sh\nPYTHONPATH='{REPO}'${{PYTHONPATH:+:$PYTHONPATH}} exec '{sys.executable}' "
                       f"-m intentc \"$@\"\n")
    wrapper.chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", INTENTC_NO_CACHE="1")
    env.pop("MAKEFLAGS", None)
    return folder, env


def _run(cmd, cwd, env):
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_make_passes_the_prefix(project):
    if shutil.which("make") is None:
        pytest.skip("no make")
    folder, env = project
    (folder / "Makefile").write_text(MAKEFILE)
    _run(["make", "INTENTC=intentc"], folder, env)
    assert "twice_scale" in (folder / "twice.h").read_text()
    assert _run([folder / "app"], folder, env).startswith("6 9 scale: ")


def test_cmake_passes_the_prefix(project, tmp_path):
    if shutil.which("cmake") is None:
        pytest.skip("no cmake")
    folder, env = project
    (folder / "CMakeLists.txt").write_text(CMAKELISTS)
    build = tmp_path / "build"
    cmake_dir = _run([sys.executable, "-m", "intentc", "--cmake-dir"], folder, {**env, "PYTHONPATH": str(REPO)}).strip()
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    _run(["cmake", "-S", folder, "-B", build, *generator, f"-Dintentc_DIR={cmake_dir}"], folder, env)
    _run(["cmake", "--build", build], folder, env)
    assert _run([build / "app"], folder, env).startswith("6 9 scale: ")


CXX_APP = r"""
#include <cstdio>
#include "twice.h"
#include "thrice.h"

int main()
{
    float x[3] = {1, 2, 3}, a[3], b[3];
    int64_t shape[1] = {3};
    IntentTensor tx = {x, {1, 0}, 1, {2, 32, 1}, shape, NULL, 0};
    IntentTensor ta = {a, {1, 0}, 1, {2, 32, 1}, shape, NULL, 0};
    IntentTensor tb = {b, {1, 0}, 1, {2, 32, 1}, shape, NULL, 0};
    // The same kernel name in two namespaces, and the C names beside them.
    if (twice::scale(&tx, &ta) != INTENT_OK || thrice::scale(&tx, &tb) != INTENT_OK)
        return 1;
    if (thrice_scale(&tx, &tb) != INTENT_OK)
        return 2;
    std::printf("%g %g\n", a[2], b[2]);
    return a[2] == 6 && b[2] == 9 ? 0 : 3;
}
"""


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs a C++ compiler (g++)")
def test_prefix_gives_a_cxx_namespace(tmp_path):
    """With --prefix NAME_, the header also declares the kernels by their own names in C++
    namespace NAME (inline calls of the C symbols), so C++ code writes twice::scale."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    for name, factor in (("twice", 2), ("thrice", 3)):
        (tmp_path / f"{name}.intent").write_text(KERNEL.format(factor=f"{factor}.0"))
        subprocess.run([sys.executable, "-m", "intentc", "build", f"{name}.intent", "-o", f"{name}.so",
                        "--prefix", f"{name}_"], cwd=tmp_path, env=env, check=True)
    header = (tmp_path / "twice.h").read_text()
    assert "namespace twice {" in header and "return ::twice_scale(x, out);" in header
    (tmp_path / "app.cpp").write_text(CXX_APP)
    subprocess.run(["g++", "-std=c++11", "-Wall", "-Werror", "-I.", "-o", "app", "app.cpp", "-L.", "-l:twice.so",
                    "-l:thrice.so", "-Wl,-rpath,$ORIGIN"], cwd=tmp_path, check=True)
    run = subprocess.run(["./app"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.split() == ["6", "9"], run


@pytest.mark.parametrize("prefix", ["class_", "std_", "int_", "NULL_"])
def test_a_prefix_whose_namespace_is_reserved_is_refused(tmp_path, prefix):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    (tmp_path / "k.intent").write_text(KERNEL.format(factor="2.0"))
    run = subprocess.run([sys.executable, "-m", "intentc", "build", "k.intent", "-o", "k.so", "--prefix", prefix],
                         cwd=tmp_path, env=env, capture_output=True, text=True)
    assert run.returncode == 1 and "C++ namespace" in run.stderr and "Traceback" not in run.stderr, run.stderr
    assert not (tmp_path / "k.so").exists()
