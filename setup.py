"""Copies the grammar, the C runtime and the Make and CMake files, the docs and the language spec into the package so that
an installed intentc carries them."""
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).parent
CARRIED = {"grammar": ("*.lark",), "runtime_c": ("*.c", "*.h"), "make": ("*.mk",), "cmake": ("*.cmake",),
           "docs": ("*.md",), "spec": ("*.md", "*.txt")}


class BuildWithData(build_py):
    def run(self):
        super().run()
        for folder, patterns in CARRIED.items():
            target = Path(self.build_lib) / "intentc" / "_data" / folder
            target.mkdir(parents=True, exist_ok=True)
            for pattern in patterns:
                for source in sorted((ROOT / folder).glob(pattern)):
                    shutil.copy2(source, target / source.name)


setup(cmdclass={"build_py": BuildWithData})
