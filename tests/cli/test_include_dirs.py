"""``-I DIR`` / ``--include-dir DIR`` on every command that compiles (build, check, explain):
imported modules are found beside the importing file, then in each folder in the order
given; a module found nowhere is a diagnostic that lists the places searched (exit 1)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

HELPERS = "import intent as I\n\nFACTOR = {factor}\n\n@intent.fn\ndef scale(x: f32[N]) -> f32[N]:\n    return x * FACTOR\n"
MAIN = ("import intent as I\nfrom helpers import scale\n\n@intent.kernel\n"
        "def k(x: f32[N]) -> f32[N]:\n    return scale(x)\n")


def intentc(*args, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO), NO_COLOR="1", COLUMNS="400", INTENTC_NO_CACHE="1")
    return subprocess.run([sys.executable, "-m", "intentc", *map(str, args)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def project(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "k.intent").write_text(MAIN)
    for folder, factor in (("first", "2.0"), ("second", "3.0")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "helpers.intent").write_text(HELPERS.format(factor=factor))
    return tmp_path


def test_check_explain_and_build_take_include_folders_in_order(tmp_path):
    folder = project(tmp_path)
    proc = intentc("check", "src/k.intent", cwd=folder)
    assert proc.returncode == 1
    assert "src/k.intent:2:1: error: no module named 'helpers'" in proc.stderr
    assert "note: searched: src/helpers.intent" in proc.stderr and "-I DIR" in proc.stderr
    proc = intentc("check", "src/k.intent", "-I", "first", "--include-dir", "second", cwd=folder)
    assert proc.returncode == 0 and "src/k.intent: ok (1 kernel)" in proc.stdout, proc.stderr
    proc = intentc("explain", "src/k.intent", "-I", "second", "-I", "first", cwd=folder)
    assert proc.returncode == 0 and "fn @helpers.scale" in proc.stdout and '{"value": 3.0}' in proc.stdout
    proc = intentc("explain", "src/k.intent", "--stage", "physical", "-I", "first", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    proc = intentc("build", "src/k.intent", "-I", "first", "-o", "k.so", "--depfile", "k.d", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    assert "first/helpers.intent" in (folder / "k.d").read_text()
    run = subprocess.run([sys.executable, "-c", "import intentc, numpy as np; "
                          "print(intentc.load('k.so').k(np.ones(2, np.float32)).tolist())"],
                         cwd=folder, env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True, text=True)
    assert run.stdout.strip() == "[2.0, 2.0]", run.stderr


def test_a_module_beside_the_source_wins_over_the_include_folders(tmp_path):
    folder = project(tmp_path)
    (folder / "src" / "helpers.intent").write_text(HELPERS.format(factor="5.0"))
    proc = intentc("explain", "src/k.intent", "-I", "first", cwd=folder)
    assert proc.returncode == 0 and '{"value": 5.0}' in proc.stdout


def test_the_missing_module_lists_the_include_folders(tmp_path):
    folder = project(tmp_path)
    (folder / "src" / "k.intent").write_text(MAIN.replace("from helpers", "from missing"))
    proc = intentc("check", "src/k.intent", "-I", "first", "-I", str(folder / "second"), cwd=folder)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert f"note: searched: src/missing.intent, first/missing.intent, {folder}/second/missing.intent" in proc.stderr
