"""What the PTX loader needs on a GPU machine (docs/ptx-abi.md): the intentc package and
NumPy, never the compiler's dependencies. Checked in a fresh interpreter where importing
Lark, llvmlite, click or rich fails."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PROBE = """
import importlib.abc, sys

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("lark", "llvmlite", "click", "rich", "ml_dtypes"):
            raise ImportError(f"{name} is not installed on this GPU machine")
        return None

sys.meta_path.insert(0, Refuse())
from intentc import ptx_loader
assert callable(ptx_loader.load) and callable(ptx_loader.evaluate)
print("ok")
"""


def test_the_ptx_loader_imports_without_the_compiler():
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
