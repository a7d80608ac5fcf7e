"""The build cache (intentc.build_cache, docs/cli.md): a hit gives the bytes of a fresh build,
any change of source, flags or names misses, a damaged entry is rebuilt, concurrent builds of
one output leave a consistent set, and intentc.compile / load_source give new code for a new
text in the same process."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import intentc
from intentc import build_cache
from intentc.driver import StageTimer, _cache_key, _plan, build

REPO = Path(__file__).resolve().parents[2]
KERNEL = """import intent as I

@intent.kernel
def axpb(a: f32, x: f32[N]) -> f32[N]:
    return a * x + 1.0
"""


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("INTENTC_CACHE_DIR", str(folder))
    monkeypatch.delenv("INTENTC_NO_CACHE", raising=False)
    return folder


def _build(source: Path, output: Path, **options) -> tuple[list[Path], bool]:
    """(files written, whether the build compiled: a miss)."""
    timer = StageTimer()
    written = build(source, output, cache=True, timer=timer, **options)
    return written, any(name == "parse and check" for name, _ in timer.times)


def _entries(cache: Path) -> list[Path]:
    return sorted(e for shard in (cache / "builds").iterdir() for e in shard.iterdir()) if (cache / "builds").exists() \
        else []


def test_a_hit_writes_the_bytes_of_a_fresh_build(cache, tmp_path):
    source = tmp_path / "axpb.intent"
    source.write_text(KERNEL)
    first, second = tmp_path / "one", tmp_path / "two"
    written, compiled = _build(source, first / "axpb.so", emit_llvm=True)
    assert compiled and len(_entries(cache)) == 1
    written_again, compiled = _build(source, second / "axpb.so", emit_llvm=True)
    assert not compiled, "an unchanged rebuild must come from the cache"
    names = sorted(p.name for p in written)
    assert names == sorted(p.name for p in written_again) == ["axpb.h", "axpb.ll", "axpb.so", "intent_runtime.h"]
    for name in names:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    fresh = tmp_path / "fresh"
    build(source, fresh / "axpb.so", emit_llvm=True, cache=False)
    for name in names:
        assert (fresh / name).read_bytes() == (first / name).read_bytes(), name


def test_every_input_of_the_key_changes_it(tmp_path):
    source, output = tmp_path / "k.intent", tmp_path / "k.so"
    plan = _plan(source, output, None, None, None)

    def key(text=KERNEL, shown="k.intent", plan=plan, output=output, target=None, cpu="native", sanitize=()):
        return _cache_key(text, shown, plan, output, target, cpu, sanitize)

    variants = [key(), key(text=KERNEL.replace("1.0", "2.0")), key(shown="src/k.intent"),
                key(plan=_plan(source, output, None, None, True)),
                key(plan=_plan(source, output, False, None, None)),
                key(plan=_plan(source, output, None, tmp_path / "inc" / "kk.h", None)),
                key(output=tmp_path / "libk.so", plan=_plan(source, tmp_path / "libk.so", None, None, None)),
                key(plan=_plan(source, tmp_path / "k.a", None, None, None), output=tmp_path / "k.a"),
                key(target="aarch64-linux-gnu"), key(cpu="x86-64-v3"), key(sanitize=("bounds",)),
                key(sanitize=("bounds", "order"))]
    assert len(set(variants)) == len(variants)
    assert key() == key(), "the key is a function of its inputs"
    assert key(sanitize=("order", "bounds")) == key(sanitize=("bounds", "order"))


def test_the_environment_and_the_compiler_are_in_the_key(tmp_path, monkeypatch):
    source, output = tmp_path / "k.intent", tmp_path / "k.so"
    plan = _plan(source, output, None, None, None)
    before = _cache_key(KERNEL, "k.intent", plan, output, None, "native", ())
    monkeypatch.setenv("INTENTC_SOME_SETTING", "1")
    assert _cache_key(KERNEL, "k.intent", plan, output, None, "native", ()) != before
    monkeypatch.delenv("INTENTC_SOME_SETTING")
    monkeypatch.setenv("INTENTC_NO_CACHE", "0")  # how to run, not what to build
    assert _cache_key(KERNEL, "k.intent", plan, output, None, "native", ()) == before
    names = {name for name, _ in build_cache._toolchain_identity()}
    assert {"intentc", "llvmlite", "intentc-files", "runtime_c/intent_runtime.h", "grammar/intent.lark"} <= names


def test_a_changed_source_misses(cache, tmp_path):
    source = tmp_path / "axpb.intent"
    source.write_text(KERNEL)
    _build(source, tmp_path / "out" / "axpb.so")
    source.write_text(KERNEL.replace("1.0", "3.0"))
    _, compiled = _build(source, tmp_path / "out" / "axpb.so")
    assert compiled and len(_entries(cache)) == 2


@pytest.mark.parametrize("damage", ["truncate", "flip", "remove_index", "bad_index"])
def test_a_damaged_entry_is_ignored_and_rebuilt(cache, tmp_path, damage):
    source = tmp_path / "axpb.intent"
    source.write_text(KERNEL)
    good = tmp_path / "good"
    _build(source, good / "axpb.h")  # a header build: cheap, and every role is checked alike
    [entry] = _entries(cache)
    header = entry / "header.h"
    if damage == "truncate":
        header.write_bytes(header.read_bytes()[:10])
    elif damage == "flip":
        data = bytearray(header.read_bytes())
        data[len(data) // 2] ^= 0x20
        header.write_bytes(bytes(data))
    elif damage == "remove_index":
        (entry / "index.json").unlink()
    else:
        (entry / "index.json").write_text("{not json")
    again = tmp_path / "again"
    _, compiled = _build(source, again / "axpb.h")
    assert compiled, "a damaged entry must not be used"
    assert (again / "axpb.h").read_bytes() == (good / "axpb.h").read_bytes()
    _, compiled = _build(source, tmp_path / "third" / "axpb.h")
    assert not compiled, "the rebuilt entry is stored again"


def test_no_cache_switches(cache, tmp_path, monkeypatch):
    from click.testing import CliRunner

    from intentc.cli import main

    source = tmp_path / "axpb.intent"
    source.write_text(KERNEL)
    result = CliRunner().invoke(main, ["build", str(source), "-o", str(tmp_path / "a.h"), "--no-cache"])
    assert result.exit_code == 0, result.output
    assert _entries(cache) == []
    monkeypatch.setenv("INTENTC_NO_CACHE", "1")
    assert not build_cache.enabled()
    result = CliRunner().invoke(main, ["build", str(source), "-o", str(tmp_path / "b.h")])
    assert result.exit_code == 0 and _entries(cache) == []
    monkeypatch.delenv("INTENTC_NO_CACHE")
    result = CliRunner().invoke(main, ["build", str(source), "-o", str(tmp_path / "c.h"), "-v"])
    assert result.exit_code == 0 and len(_entries(cache)) == 1
    for stage in ("read", "cache lookup", "parse and check", "lower", "optimize", "write"):
        assert f"  {stage} " in result.output, result.output
    result = CliRunner().invoke(main, ["build", str(source), "-o", str(tmp_path / "d" / "c.h"), "-v"])
    assert "(from the build cache)" in result.output and "parse and check" not in result.output


CONCURRENT = """
import sys
from intentc.driver import build
source_a, source_b, output = sys.argv[1:4]
for round in range(int(sys.argv[4])):
    build(source_a if round % 2 == 0 else source_b, output, cache=True)
"""


def test_concurrent_builds_of_one_output_leave_a_consistent_set(cache, tmp_path):
    sources = []
    for name in ("alpha", "beta"):
        path = tmp_path / f"{name}.intent"
        path.write_text(KERNEL.replace("axpb", f"k_{name}"))
        sources.append(str(path))
    output = tmp_path / "out" / "k.so"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    for order in (sources, sources[::-1]):  # fill the cache, so that the race below is between hits
        subprocess.run([sys.executable, "-c", CONCURRENT, *order, str(output), "1"], env=env, check=True)
    racers = [subprocess.Popen([sys.executable, "-c", CONCURRENT, *order, str(output), "12"], env=env)
              for order in (sources, sources[::-1])]
    assert [p.wait(timeout=300) for p in racers] == [0, 0]
    library, header = output.read_bytes(), (output.parent / "k.h").read_text()
    winner = "k_alpha" if "k_alpha" in header else "k_beta"
    loser = "k_beta" if winner == "k_alpha" else "k_alpha"
    assert winner.encode() in library and loser.encode() not in library and loser not in header
    assert not [p for p in output.parent.iterdir() if p.name.endswith(".tmp")]


def test_load_source_gives_new_code_for_a_new_text(cache):
    x = np.arange(5, dtype=np.float32)
    first = intentc.load_source(KERNEL)
    np.testing.assert_array_equal(first.axpb(np.float32(2), x), 2 * x + 1)
    second = intentc.load_source(KERNEL.replace("+ 1.0", "+ 7.0"))
    np.testing.assert_array_equal(second.axpb(np.float32(2), x), 2 * x + 7)
    np.testing.assert_array_equal(first.axpb(np.float32(2), x), 2 * x + 1)  # the first one keeps working
    assert intentc.compile(KERNEL) == intentc.compile(KERNEL), "the same text is the same cached library"
    assert intentc.compile(KERNEL) != intentc.compile(KERNEL.replace("+ 1.0", "+ 7.0"))


def test_compile_without_the_cache_gives_a_new_path_each_time(cache):
    one, two = intentc.compile(KERNEL, cache=False), intentc.compile(KERNEL, cache=False)
    assert one != two and one.read_bytes() == two.read_bytes()
    assert _entries(cache) == []


def test_compile_reports_a_bad_program_with_its_name(cache):
    with pytest.raises(intentc.CompileError) as caught:
        intentc.compile(KERNEL.replace("a * x", "a * q"), name="cell3")
    assert "cell3.intent:" in str(caught.value)
    with pytest.raises(TypeError):
        intentc.compile(b"bytes")


def test_quick_reading_agrees_with_the_reader_and_link():
    from intentc.codegen.link import runtime_dependencies as linked
    from intentc.driver import runtime_dependencies
    from intentc.parse.reader import MAX_SOURCE_BYTES

    import inspect

    from intentc import driver

    assert f"{MAX_SOURCE_BYTES // (1024 * 1024)} * 1024 * 1024" in inspect.getsource(driver._read_quickly)
    for kind in (".so", ".a", ".o", ".h"):
        assert runtime_dependencies(kind) == linked(kind), kind


def test_an_unwritable_cache_is_no_build_error(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("INTENTC_CACHE_DIR", str(blocker))
    source = tmp_path / "axpb.intent"
    source.write_text(KERNEL)
    written = build(source, tmp_path / "out" / "axpb.h", cache=True)
    assert [p.name for p in written] == ["axpb.h", "intent_runtime.h"]


def test_the_least_recently_used_entries_go_first(cache, monkeypatch):
    monkeypatch.setattr(build_cache, "MAX_ENTRIES", 2)
    keys = [build_cache.Key().add("n", str(i)).hexdigest() for i in range(3)]
    for age, key in enumerate(keys[:2]):
        build_cache.store(key, {"a.h": key.encode()})
        stamp = 1_000_000 + age  # distinct, ordered times
        os.utime(build_cache._entry(key), (stamp, stamp))
    assert build_cache.lookup(keys[0]) is not None  # used: now the most recent
    build_cache.store(keys[2], {"a.h": b"third"})
    assert build_cache.lookup(keys[1]) is None
    assert build_cache.lookup(keys[0])["a.h"].read_bytes() == keys[0].encode()
    assert build_cache.lookup(keys[2]) is not None
    with pytest.raises(ValueError, match="PTX"):
        intentc.compile(KERNEL, target="sm_90")


def test_ptx_builds_use_the_cache_too(cache, tmp_path):
    source = tmp_path / "axpb.intent"
    source.write_text(KERNEL)
    timer = StageTimer()
    first = build(source, tmp_path / "a" / "axpb.ptx", "sm_90", cache=True, timer=timer)
    assert any(name == "parse and check" for name, _ in timer.times)
    timer = StageTimer()
    second = build(source, tmp_path / "b" / "axpb.ptx", "sm_90", cache=True, timer=timer)
    assert not any(name == "parse and check" for name, _ in timer.times)
    assert [p.name for p in first] == [p.name for p in second] == ["axpb.ptx", "axpb.ptx.json"]
    for one, two in zip(first, second):
        assert one.read_bytes() == two.read_bytes()
    fresh = build(source, tmp_path / "c" / "axpb.ptx", "sm_90")
    assert [p.read_bytes() for p in fresh] == [p.read_bytes() for p in first]
