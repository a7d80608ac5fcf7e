"""The command line on hostile inputs: files that are not regular, file names of any
bytes, depfiles that Make and Ninja read back, and builds that fail leaving nothing.

Every failure is a diagnostic (exit 1) without a Python traceback; a FIFO or
``/dev/zero`` is refused from its file type, without a read that could block or fill
memory; artifacts are renamed into place only when the whole build succeeded.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from intentc.codegen.depfile import make_escape, render_depfile  # noqa: E402
from intentc.diagnostics import CompileError  # noqa: E402

SAXPY = REPO / "samples" / "saxpy.intent"


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["NO_COLOR"] = "1"
    return env


def intentc(*args, cwd) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "intentc", *map(os.fsencode, args)], cwd=cwd, env=_env(),
                          capture_output=True, timeout=120)
    assert b"Traceback" not in proc.stderr and b"internal error" not in proc.stderr, proc.stderr.decode(errors="replace")
    return proc


def test_files_that_are_not_regular_are_refused_without_reading(tmp_path):
    fifo = tmp_path / "fifo.intent"
    os.mkfifo(fifo)  # no writer: a read would block for ever (the timeout of `intentc` catches it)
    (tmp_path / "folder.intent").mkdir()
    for path, kind, code in [("/dev/zero", "a device", 1), (str(fifo), "a FIFO", 1)]:
        for args in (["check", path], ["build", path, "-o", str(tmp_path / "out.so")], ["explain", path]):
            proc = intentc(*args, cwd=tmp_path)
            assert proc.returncode == code and kind.encode() in proc.stderr, proc.stderr
    proc = intentc("check", "folder.intent", cwd=tmp_path)
    assert proc.returncode == 2 and b"is a directory" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo.intent", "folder.intent"]


def test_in_process_reader_refuses_a_directory_and_a_device(tmp_path):
    from intentc.parse.reader import read_source

    for path, words in [(tmp_path, "a directory"), ("/dev/null", "a device"), (tmp_path / "none.intent", "no such")]:
        with pytest.raises(CompileError) as info:
            read_source(path)
        assert words in str(info.value)


def test_file_names_of_any_bytes(tmp_path):
    """A name that is not UTF-8 (or has a newline) is shown with escapes; the build works and
    its depfile names the file by its own bytes."""
    name = b"sa\xe9 xpy.intent"
    (tmp_path / os.fsdecode(name)).write_bytes(SAXPY.read_bytes())
    proc = intentc("check", os.fsdecode(name), cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.decode() == "sa\\xe9 xpy.intent: ok (1 kernel)\n", proc.stdout
    out = os.fsdecode(b"out\xe9/k\xe9.so")
    proc = intentc("build", os.fsdecode(name), "-o", out, "--depfile", os.fsdecode(b"out\xe9/k.d"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    folder = tmp_path / os.fsdecode(b"out\xe9")
    assert sorted(os.listdir(os.fsencode(folder))) == [b"intent_runtime.h", b"k.d", b"k\xe9.h", b"k\xe9.so"]
    assert b"from sa\\xe9 xpy.intent" in (folder / os.fsdecode(b"k\xe9.h")).read_bytes()
    assert (folder / "k.d").read_bytes().startswith(b"out\xe9/k\xe9.so: sa\xe9\\ xpy.intent \\\n")
    # A diagnostic names the file with escapes too.
    bad = tmp_path / os.fsdecode(b"bad\xff\n.intent")
    bad.write_text("import intent as I\n")
    proc = intentc("check", str(bad), cwd=tmp_path)
    assert proc.returncode == 1 and b"bad\\xff\\n.intent:1:1: error: the module defines no" in proc.stderr


def test_depfile_names_make_cannot_express_are_diagnostics(tmp_path):
    for name in ["a\nb.intent", "a;b.intent", "a=b.intent", "a|b.intent", "tail\\"]:
        with pytest.raises(CompileError) as info:
            make_escape(name)
        assert "Make cannot express" in str(info.value)
    source = tmp_path / "new\nline.intent"
    source.write_bytes(SAXPY.read_bytes())
    proc = intentc("build", str(source), "-o", "k.so", "--depfile", "k.d", cwd=tmp_path)
    assert proc.returncode == 1 and b"a line break" in proc.stderr, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new\nline.intent"], "a refused build wrote files"


ODD_NAMES = ["with space.intent", "dollar$sign.intent", "hash#.intent", "co:lon.intent", "per%cent.intent",
             "back\\slash.intent", "all $ # :.intent"]


def test_depfile_escaping_is_read_back_by_make(tmp_path):
    """GNU Make reads every name back: the target is up to date, then stale when the file is
    touched, and still buildable when the file disappears (the empty rules)."""
    make = shutil.which("make")
    assert make, "make is needed for the depfile check"
    for k, name in enumerate(ODD_NAMES):
        folder = tmp_path / f"p{k}"
        folder.mkdir()
        (folder / name).write_text("x")
        (folder / "rt.h").write_text("x")
        (folder / "k.d").write_text(render_depfile("k.so", [name, "rt.h"]))
        (folder / "Makefile").write_text("k.so:\n\t@echo REBUILD\n-include k.d\n")
        (folder / "k.so").write_text("x")
        old = (folder / "k.so").stat().st_mtime - 100
        for dep in (name, "rt.h"):
            os.utime(folder / dep, (old, old))

        def question() -> int:
            return subprocess.run([make, "-q", "k.so"], cwd=folder, capture_output=True).returncode

        assert question() == 0, f"{name!r}: a fresh target is out of date"
        os.utime(folder / name, (old + 200, old + 200))
        assert question() == 1, f"{name!r}: touching the source does not make the target stale"
        (folder / "rt.h").unlink()
        assert question() == 1, f"{name!r}: a deleted dependency breaks the build"


def test_depfile_escaping_is_read_back_by_ninja(tmp_path):
    ninja = shutil.which("ninja")
    if ninja is None:
        pytest.skip("ninja is not installed")
    for k, name in enumerate(ODD_NAMES):
        folder = tmp_path / f"p{k}"
        folder.mkdir()
        (folder / name).write_text("x")
        (folder / "deps.txt").write_text(render_depfile("k.so", [name, "rt.h"]))
        (folder / "build.ninja").write_text("rule g\n  command = cp deps.txt k.d && touch k.so\n  depfile = k.d\n"
                                            "  deps = gcc\nbuild k.so: g\n")
        subprocess.run([ninja], cwd=folder, capture_output=True, check=True)
        listed = subprocess.run([ninja, "-t", "deps", "k.so"], cwd=folder, capture_output=True, text=True).stdout
        assert [line.strip() for line in listed.splitlines()[1:] if line.strip()] == [name, "rt.h"], listed


def test_a_failed_build_leaves_every_artifact_as_it_was(tmp_path, monkeypatch):
    """The link fails after the object was staged: the old library, header and depfile stay
    byte for byte, and no temporary file is left; a build that succeeds leaves none either."""
    from intentc import driver
    from intentc.codegen import link

    source = tmp_path / "k.intent"
    source.write_bytes(SAXPY.read_bytes())
    old = {name: f"old {name}".encode() for name in ("k.so", "k.h", "intent_runtime.h", "k.d")}
    for name, data in old.items():
        (tmp_path / name).write_bytes(data)

    def failing_link(obj, output, spec=None):
        Path(output).write_bytes(obj[:100])  # a partial file, as a linker killed midway leaves
        raise link.LinkError("the linker failed")

    monkeypatch.setattr(link, "link_shared", failing_link)
    with pytest.raises(CompileError, match="the linker failed"):
        driver.build(source, tmp_path / "k.so", depfile=tmp_path / "k.d")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name != "k.intent"} == old
    monkeypatch.undo()
    written = driver.build(source, tmp_path / "k.so", depfile=tmp_path / "k.d")
    assert sorted(p.name for p in written) == sorted(old)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*old, "k.intent"]), "temporary files were left"
    assert (tmp_path / "k.so").read_bytes()[:4] == b"\x7fELF"
    mode = (tmp_path / "k.so").stat().st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    assert mode == 0o666 & ~umask, oct(mode)  # as a plain open() would have created it


def test_an_unwritable_output_is_a_diagnostic(tmp_path):
    (tmp_path / "file").write_text("not a folder")
    proc = intentc("build", str(SAXPY), "-o", str(tmp_path / "file" / "k.h"), cwd=tmp_path)
    assert proc.returncode == 1 and b"cannot write" in proc.stderr, proc.stderr


def test_a_compiler_bug_is_reported_without_a_traceback(monkeypatch):
    """The last line of defence: an exception that is not a diagnostic (a bug) is one
    paragraph and exit status 3; INTENTC_TRACEBACK=1 lets the traceback through."""
    from click.testing import CliRunner

    from intentc import cli, driver

    def broken(text, path, module=None, search=None, origin=None):
        raise RuntimeError("a bug \x1b[2J in the front end")

    monkeypatch.setattr(driver, "_frontend", broken)
    monkeypatch.delenv("INTENTC_TRACEBACK", raising=False)
    result = CliRunner().invoke(cli.main, ["check", str(SAXPY)])
    assert result.exit_code == cli.INTERNAL_ERROR_EXIT, result.output
    assert "internal error: RuntimeError: a bug \\x1b[2J in the front end" in result.output
    assert "Traceback" not in result.output and "\x1b" not in result.output
    monkeypatch.setenv("INTENTC_TRACEBACK", "1")
    result = CliRunner().invoke(cli.main, ["check", str(SAXPY)])
    assert isinstance(result.exception, RuntimeError)
