"""Rebuilding a library that the process has loaded (docs/abi.md, "Rebuilding a loaded
library"): ``intentc.load(path)`` after a rebuild gives the new code, in the same process,
while modules loaded before keep working with theirs; loading an unchanged file again
gives the library already loaded."""
from __future__ import annotations

import subprocess
import sys

import numpy as np

import intentc
from intentc.driver import build

SOURCE = "import intent as I\n\n@intent.kernel\ndef scaled(x: f32[N]) -> f32[N]:\n    return x * {factor}\n"


def _write(folder, factor):
    source = folder / "scaled.intent"
    source.write_text(SOURCE.format(factor=factor))
    return source


def test_load_after_a_rebuild_gives_the_new_code(tmp_path):
    library = tmp_path / "scaled.so"
    build(_write(tmp_path, "2.0"), library)
    first = intentc.load(library)
    x = np.arange(4, dtype=np.float32)
    assert np.array_equal(first.scaled(x), x * 2)
    again = intentc.load(library)  # unchanged: the same library
    assert again.lib._handle == first.lib._handle
    build(_write(tmp_path, "3.0"), library)
    second = intentc.load(library)
    assert np.array_equal(second.scaled(x), x * 3)
    assert np.array_equal(first.scaled(x), x * 2)  # the module loaded before keeps its code
    build(_write(tmp_path, "5.0"), library)
    third = intentc.load(library)
    assert [m.scaled(x)[1] for m in (first, second, third)] == [2, 3, 5]
    # Failed calls of each report their own message, through the one per-thread error.
    for module in (first, second, third):
        try:
            module.scaled(x, out=np.zeros(3, np.float32))
        except intentc.KernelError as exc:
            assert str(exc).startswith("scaled") and module.last_error() == str(exc)
        else:
            raise AssertionError("accepted a wrong out=")


def test_rebuild_from_the_command_line_while_loaded(tmp_path):
    """What a notebook does: build, load, call; rebuild with the CLI; load again."""
    script = f"""
import subprocess, sys
import numpy as np
import intentc
folder = {str(tmp_path)!r}
src = folder + "/scaled.intent"
def rebuild(factor):
    open(src, "w").write({SOURCE!r}.format(factor=factor))
    subprocess.run([sys.executable, "-m", "intentc", "build", src, "-o", folder + "/scaled.so", "--no-cache"],
                   check=True)
x = np.ones(8, np.float32)
modules = []
for factor in (2, 4, 8):
    rebuild(f"{{factor}}.0")
    modules.append(intentc.load(folder + "/scaled.so"))
    assert [m.scaled(x)[0] for m in modules] == [2, 4, 8][:len(modules)], [m.scaled(x)[0] for m in modules]
print("ok")
"""
    import os
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(repo)})
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr
