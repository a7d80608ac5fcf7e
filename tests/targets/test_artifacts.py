"""Artifacts on every CPU target: .o (kernels + runtime), .a, .so, the header, Make
depfiles, and byte-identical outputs for identical inputs and flags."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from target_tools import (EM_AARCH64, EM_X86_64, ET_REL, HOST_IS_X86_64, REPO, TRIPLE, archive_members, build,
                          intentc_cli, intentc_env, parse_elf, require_toolchain)

SOURCE = REPO / "samples" / "broadcast_add.intent"  # two kernels
KERNELS = {"broadcast_add", "add_row_bias"}
RUNTIME = {"intent_parallel_for", "intent_check_tensor", "intent_last_error", "intent_error"}

# (target, cross toolchain): the host, and AArch64 with each toolchain this machine has.
TARGETS = [pytest.param("host", None, id="host"),
           pytest.param(TRIPLE, "gcc", id="aarch64-gcc"),
           pytest.param(TRIPLE, "zig", id="aarch64-zig")]


def _use(target: str, toolchain: str | None, monkeypatch) -> None:
    if toolchain is not None:
        require_toolchain(toolchain)
        monkeypatch.setenv("INTENTC_CROSS_TOOLCHAIN", toolchain)


@pytest.mark.parametrize("target,toolchain", TARGETS)
def test_identical_inputs_give_identical_bytes(target, toolchain, tmp_path, monkeypatch):
    """Two builds of the same source and flags into different folders, each with a runtime compiled
    afresh (its own cache): every file written is the same, byte for byte. (The source path is an
    input: runtime error messages quote it as given, like C's __FILE__.)"""
    _use(target, toolchain, monkeypatch)
    src = tmp_path / "kernels src" / SOURCE.name
    src.parent.mkdir()
    shutil.copyfile(SOURCE, src)
    written = []
    for folder in ("first", "second run"):
        monkeypatch.setenv("INTENTC_CACHE_DIR", str(tmp_path / folder / "cache"))
        out = tmp_path / folder / "out"
        files = {}
        for kind in (".so", ".o", ".a", ".h"):
            for path in build(src, out / kind[1:] / f"broadcast_add{kind}", target, header=True):
                files[path.relative_to(out)] = path.read_bytes()
        written.append(files)
    assert sorted(written[0]) == sorted(written[1])
    assert len(written[0]) == 11  # .so, .o, .a with their header and intent_runtime.h; .h with the latter
    different = [str(name) for name in written[0] if written[0][name] != written[1][name]]
    assert not different, f"not byte-identical: {different}"


@pytest.mark.parametrize("target,toolchain", TARGETS)
def test_object_and_archive_hold_kernels_and_runtime(target, toolchain, tmp_path, monkeypatch):
    _use(target, toolchain, monkeypatch)
    machine = EM_AARCH64 if target == TRIPLE else EM_X86_64 if HOST_IS_X86_64 else None
    written = build(SOURCE, tmp_path / "k.o", target, header=True)
    assert [p.name for p in written] == ["k.o", "k.h", "intent_runtime.h"]
    obj = parse_elf((tmp_path / "k.o").read_bytes())
    assert obj.type == ET_REL and (machine is None or obj.machine == machine)
    assert KERNELS | RUNTIME | {"intent_module_manifest"} <= obj.defined
    build(SOURCE, tmp_path / "k.a", target)
    members = archive_members((tmp_path / "k.a").read_bytes())
    assert "kernels.o" in members and len(members) > 1
    elves = [parse_elf(data) for data in members.values()]
    assert all(e.type == ET_REL and (machine is None or e.machine == machine) for e in elves)
    assert KERNELS | RUNTIME <= set().union(*(e.defined for e in elves))


def test_header_only_and_emit_header(tmp_path):
    written = build(SOURCE, tmp_path / "only.h", "host")
    assert [p.name for p in written] == ["only.h", "intent_runtime.h"]
    header = (tmp_path / "only.h").read_text()
    assert all(f"int32_t {k}(" in header for k in KERNELS) and '#include "intent_runtime.h"' in header
    written = build(SOURCE, tmp_path / "plain.a", "host")  # no header unless asked
    assert [p.name for p in written] == ["plain.a"]
    proc = intentc_cli("build", SOURCE, "-o", tmp_path / "cli" / "k.a", "--emit-header", "-v")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "cli" / "k.h").read_text() == header  # named after the module, not the file


def test_depfile_is_make_syntax(tmp_path):
    """Spaces, '#' and '$' in paths are escaped so that Make reads the rule back: the output is
    up to date after the build and out of date once the source is newer."""
    if shutil.which("make") is None:
        pytest.skip("GNU make is not installed")
    src = tmp_path / "my kernels #1 $x" / "saxpy.intent"
    src.parent.mkdir()
    shutil.copyfile(REPO / "samples" / "saxpy.intent", src)
    out = tmp_path / "out dir" / "saxpy.so"
    depfile = tmp_path / "saxpy.d"
    proc = intentc_cli("build", src, "-o", out, "--depfile", depfile, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = depfile.read_text()
    first = text.split(" \\\n")[0]
    assert first == str(out).replace(" ", "\\ ").replace("#", "\\#") + ": " + \
        str(src).replace(" ", "\\ ").replace("#", "\\#").replace("$", "$$")
    where = "from intentc.resources import runtime_dir; print(runtime_dir())"  # of the intentc the CLI ran
    folder = subprocess.run([sys.executable, "-c", where], env=intentc_env(), capture_output=True, text=True,
                            check=True).stdout.strip()
    runtime_header = str(Path(folder).resolve() / "intent_runtime.h").replace(" ", "\\ ")
    assert f"  {runtime_header} \\\n" in text  # a prerequisite
    assert f"\n{runtime_header}:\n" in text  # and an empty rule: deleting the file does not break Make

    (tmp_path / "Makefile").write_text("include saxpy.d\n" + text.splitlines()[0].split(": ")[0] +
                                       ":\n\t@echo REBUILD\n")

    def make() -> str:
        return subprocess.run(["make", "-C", tmp_path, "--no-print-directory"], capture_output=True,
                              text=True, check=True).stdout

    assert "REBUILD" not in make()
    os.utime(src, (out.stat().st_mtime + 10, out.stat().st_mtime + 10))
    assert "REBUILD" in make()


def test_depfile_lists_what_each_artifact_is_built_from(tmp_path):
    from intentc.codegen.depfile import make_escape
    from intentc.resources import runtime_dir

    runtime = runtime_dir().resolve()  # the runtime of the intentc this process imported
    build(SOURCE, tmp_path / "k.h", "host", depfile=tmp_path / "h.d")
    header_deps = f"{tmp_path / 'k.h'}: {SOURCE} \\\n  {runtime / 'intent_runtime.h'}\n"
    assert (tmp_path / "h.d").read_text().startswith(header_deps)
    build(SOURCE, tmp_path / "k.a", "host", depfile=tmp_path / "deps" / "a.d")
    deps = (tmp_path / "deps" / "a.d").read_text()
    assert all(f"{runtime / name}" in deps for name in ("intent_runtime.h", "thread_pool.c", "error.c"))
    assert make_escape("a b\\ c#d$e") == "a\\ b\\\\\\ c\\#d$$e"
