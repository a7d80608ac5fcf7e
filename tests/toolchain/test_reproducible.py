"""Reproducible artifacts: the same source and flags give the same bytes whatever the working
directory or the folder the source lies in. Messages compiled into a library name the source
as it was given (a relative path stays relative), through --file-prefix-map OLD=NEW as gcc's."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from intentc.cli import main
from intentc.driver import map_prefix

REPO = Path(__file__).resolve().parents[2]
# stencil3's bounds checks quote their source location, so its messages embed the path.
SAMPLE = REPO / "samples" / "stencil3.intent"


def _build(cwd: Path, source: str, output: Path, monkeypatch, *flags: str) -> bytes:
    monkeypatch.chdir(cwd)
    result = CliRunner().invoke(main, ["build", source, "-o", str(output), "--no-cache", *flags])
    assert result.exit_code == 0, result.output
    return output.read_bytes()


def test_the_same_source_from_two_folders_gives_the_same_bytes(tmp_path, monkeypatch):
    first, second = tmp_path / "first" / "src", tmp_path / "elsewhere" / "deeper" / "src"
    for folder in (first, second):
        folder.mkdir(parents=True)
        shutil.copyfile(SAMPLE, folder / "stencil3.intent")
    one = _build(first, "stencil3.intent", tmp_path / "one" / "stencil3.so", monkeypatch)
    two = _build(second, "stencil3.intent", tmp_path / "two" / "stencil3.so", monkeypatch)
    assert one == two
    assert (tmp_path / "one" / "stencil3.h").read_bytes() == (tmp_path / "two" / "stencil3.h").read_bytes()
    # The path as given is what the messages show: from the parent folder it is src/stencil3.intent ...
    parent = _build(first.parent, "src/stencil3.intent", tmp_path / "three" / "stencil3.so", monkeypatch)
    assert parent != one and b"src/stencil3.intent" in parent and b"src/stencil3.intent" not in one
    # ... unless a prefix map takes the folder off; an absolute path likewise.
    mapped = _build(first.parent, "src/stencil3.intent", tmp_path / "four" / "stencil3.so", monkeypatch,
                    "--file-prefix-map", "src/=")
    absolute = _build(tmp_path, str(second / "stencil3.intent"), tmp_path / "five" / "stencil3.so", monkeypatch,
                      "--file-prefix-map", f"{tmp_path}/=/nowhere/", "--file-prefix-map", f"{second}/=")
    assert mapped == one and absolute == one
    assert str(tmp_path).encode() not in absolute


def test_map_prefix_follows_gcc():
    pairs = (("/a/", "x/"), ("/a/b/", ""))
    assert map_prefix("/a/b/k.intent", pairs) == "k.intent"  # the last matching pair applies
    assert map_prefix("/a/c/k.intent", pairs) == "x/c/k.intent"
    assert map_prefix("k.intent", pairs) == "k.intent"
    assert map_prefix("../k.intent", ()) == "../k.intent"  # relative stays relative


@pytest.mark.parametrize("value", ["noequals", "=new"])
def test_a_malformed_prefix_map_is_a_usage_error(value):
    result = CliRunner().invoke(main, ["build", str(SAMPLE), "-o", "x.so", "--file-prefix-map", value])
    assert result.exit_code == 2 and "OLD=NEW" in result.output
