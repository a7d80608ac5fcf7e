"""Imports (docs/language.md, "Imports"): ``from common import layernorm_row, EPS``,
``import common`` with ``common.f``, helpers and constants shared between files, found
beside the importing file and then on the ``-I`` folders in order; compiled and interpreted
alike and compared with NumPy; the diagnostics of a missing module or name, a cycle, a clash,
an imported kernel and an error inside an imported file; the depfile, the build cache and
reproducible artifacts with imports."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import intentc
from intentc.base.module_search import SearchPath, imported_files, scan_imports
from intentc.diagnostics import CompileError
from intentc.driver import StageTimer, build, frontend

REPO = Path(__file__).resolve().parents[2]

COMMON = """import intent as I

EPS = 1e-5
SCALE: f32 = 2.0
HALF = SCALE / 4


@intent.fn
def mean(x: f32[N]) -> f32:
    return I.sum(x) / I.cast(N, f32)


@intent.fn
def layernorm_row(x: f32[N]) -> f32[N]:
    m = mean(x)
    d = x - m
    return d / I.sqrt(mean(d * d) + EPS)


@intent.fn
def unused(x: f32[N]) -> f32[N]:
    return x * 3.0


@intent.kernel
def selftest(x: f32[N]) -> f32[N]:
    return layernorm_row(x)
"""

MAIN = """import intent as I
from common import layernorm_row, SCALE, HALF as half
import common


@intent.kernel
def ln(x: f32[R, C], out: mut f32[R, C]):
    for r in I.parallel(x.axis(0)):
        y = layernorm_row(x[r, :]) * SCALE + half
        for c in I.parallel(x.axis(1)):
            out[r, c] = y[c]


@intent.kernel
def centred(x: f32[N]) -> f32[N]:
    return (x - common.mean(x)) * common.SCALE
"""


def layernorm(x):
    d = x - x.mean(axis=-1, keepdims=True)
    return d / np.sqrt((d * d).mean(axis=-1, keepdims=True) + 1e-5)


def write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return folder


def diagnostics(source: str, path: str) -> str:
    with pytest.raises(CompileError) as info:
        frontend(source, path)
    return str(info.value)


@pytest.fixture()
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


# ---- what imports mean -------------------------------------------------------------------------
def test_helpers_and_constants_of_another_file_compiled_and_interpreted(here):
    write(here, {"common.intent": COMMON, "k.intent": MAIN})
    build("k.intent", "k.so")
    lib = intentc.load(here / "k.so")
    x = np.random.default_rng(1).standard_normal((4, 33)).astype(np.float32)
    want = layernorm(x) * 2.0 + 0.5
    for side in ("compiled", "interpreted"):
        out = np.zeros_like(x)
        if side == "compiled":
            lib.ln(x, out)
            got = lib.centred(x[0])
        else:
            intentc.interpret("k.intent", "ln", x, out)
            got = intentc.interpret("k.intent", "centred", x[0])
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5, err_msg=side)
        np.testing.assert_allclose(got, (x[0] - x[0].mean()) * 2.0, rtol=1e-5, atol=1e-5, err_msg=side)


def test_only_the_helpers_reached_join_the_module_and_imported_kernels_stay_home(here):
    write(here, {"common.intent": COMMON})
    module = frontend(MAIN, "k.intent")
    names = sorted(f.name for f in module.functions)
    assert names == ["centred", "common.layernorm_row", "common.mean", "ln"]
    assert [k.name for k in module.kernels] == ["ln", "centred"]  # selftest is common's own entry point


def test_a_typed_constant_has_its_dtype_and_an_untyped_one_adopts_its_partners(here):
    write(here, {"c.intent": "ONE_F64: f64 = 1.0\nBIG = 3\n"})
    source = ("import intent as I\nfrom c import ONE_F64, BIG\n\n@intent.kernel\n"
              "def k(x: f64[N], y: i8[N]) -> (f64[N], i8[N]):\n    return (x + ONE_F64, y * BIG)\n")
    x, y = np.arange(3.0), np.arange(3, dtype=np.int8)
    a, b = intentc.interpret(source, "k", x, y)
    np.testing.assert_array_equal(a, x + 1) and np.testing.assert_array_equal(b, y * 3)
    assert b.dtype == np.int8
    text = diagnostics(source.replace("x + ONE_F64", "I.cast(x, f32) + ONE_F64").replace("f64[N], i8", "f32[N], i8"),
                       "k.intent")
    assert "f32" in text and "f64" in text


def test_modules_beside_the_importer_come_before_the_include_folders_in_order(here):
    write(here, {"lib1/value.intent": "V = 1.0\n", "lib2/value.intent": "V = 2.0\n", "lib2/other.intent": "W = 5.0\n"})
    source = ("import intent as I\nfrom value import V\nfrom other import W\n\n@intent.kernel\n"
              "def k(x: f32[N]) -> f32[N]:\n    return x * V + W\n")
    x = np.ones(2, np.float32)
    assert intentc.interpret(source, "k", x, include_dirs=["lib1", "lib2"])[0] == 6.0
    assert intentc.interpret(source, "k", x, include_dirs=["lib2", "lib1"])[0] == 7.0
    write(here, {"value.intent": "V = 3.0\n"})  # beside the (text) source: the working directory
    assert intentc.interpret(source, "k", x, include_dirs=["lib1", "lib2"])[0] == 8.0


def test_dotted_modules_transitive_imports_and_two_helpers_of_one_name(here):
    write(here, {
        "lib/util.intent": "import intent as I\nfrom shift import OFFSET\n\n@intent.fn\n"
                           "def helper(x: f32[N]) -> f32[N]:\n    return x + OFFSET\n",
        "lib/shift.intent": "OFFSET = 10.0\n",  # found beside lib/util.intent, its importer
        "other.intent": "import intent as I\n\n@intent.fn\ndef helper(x: f32[N]) -> f32[N]:\n    return x * 2.0\n",
    })
    source = ("import intent as I\nimport lib.util as util\nfrom other import helper\n\n@intent.fn\n"
              "def local(x: f32[N]) -> f32[N]:\n    return util.helper(x)\n\n@intent.kernel\n"
              "def k(x: f32[N]) -> f32[N]:\n    return helper(local(x))\n")
    module = frontend(source, "k.intent")
    assert {"lib.util.helper", "other.helper", "local", "k"} == {f.name for f in module.functions}
    np.testing.assert_array_equal(intentc.interpret(module, "k", np.arange(3, dtype=np.float32)), [20, 22, 24])


def test_a_module_imported_twice_is_loaded_once(here):
    write(here, {"a.intent": "from c import K\n", "b.intent": "from c import K\n", "c.intent": "K = 4\n"})
    source = ("import intent as I\nimport a\nimport b\nfrom c import K\n\n@intent.kernel\n"
              "def k(x: i64[N]) -> i64[N]:\n    return x + a.K + b.K + K\n")
    np.testing.assert_array_equal(intentc.interpret(source, "k", np.arange(2)), [12, 13])


def test_the_notebook_api_takes_include_folders(here):
    write(here, {"shared/common.intent": COMMON})
    lib = intentc.load_source(MAIN, include_dirs=["shared"], name="nb")
    x = np.random.default_rng(2).standard_normal((2, 8)).astype(np.float32)
    out = np.zeros_like(x)
    lib.ln(x, out)
    np.testing.assert_allclose(out, layernorm(x) * 2 + 0.5, rtol=1e-5, atol=1e-5)
    # an edit of the imported file is a new library, not the cached one
    (here / "shared" / "common.intent").write_text(COMMON.replace("SCALE: f32 = 2.0", "SCALE: f32 = 3.0"))
    again = intentc.load_source(MAIN, include_dirs="shared", name="nb")
    again.ln(x, out)
    np.testing.assert_allclose(out, layernorm(x) * 3 + 0.75, rtol=1e-5, atol=1e-5)


# ---- diagnostics ---------------------------------------------------------------------------------
def test_a_missing_module_lists_every_folder_searched(here):
    with pytest.raises(CompileError) as info:
        frontend("import intent as I\nfrom nowhere import f\n", "src/k.intent", search=SearchPath(("inc", "/abs")))
    d = info.value.diagnostics[0]
    assert d.message == "no module named 'nowhere'" and (d.span.line, d.span.column) == (2, 1)
    assert d.notes == ("searched: src/nowhere.intent, inc/nowhere.intent, /abs/nowhere.intent",)
    assert "-I DIR" in d.hint


def test_a_missing_name_names_what_the_module_defines(here):
    write(here, {"common.intent": COMMON})
    text = diagnostics("import intent as I\nfrom common import layernorm_rows\n", "k.intent")
    assert "k.intent:2:20: error: module 'common' (common.intent) has no helper or constant named " \
           "'layernorm_rows'" in text
    assert "did you mean 'layernorm_row'?" in text and "EPS" in text and "selftest" not in text
    text = diagnostics("import intent as I\nimport common\n\n@intent.kernel\ndef k(x: f32[N]) -> f32[N]:\n"
                       "    return common.nope(x)\n", "k.intent")
    assert "k.intent:6:12: error: module 'common'" in text and "'nope'" in text


def test_an_import_cycle_shows_the_chain(here):
    write(here, {"a.intent": "from b import X\nY = 1\n", "b.intent": "from a import Y\nX = 2\n"})
    text = diagnostics("import intent as I\nfrom a import Y\n", "k.intent")
    assert "b.intent:1:1: error: import cycle: a.intent -> b.intent -> a.intent" in text
    assert "note: b.intent is imported at a.intent:1:1" in text and "note: a.intent is imported at k.intent:2:1" in text
    write(here, {"self.intent": "from self import Z\nZ = 1\n"})
    assert "import cycle: self.intent -> self.intent" in diagnostics("from self import Z\n", "self.intent")


def test_a_name_bound_twice_is_refused(here):
    write(here, {"common.intent": COMMON})
    text = diagnostics("import intent as I\nfrom common import mean\n\n@intent.fn\ndef mean(x: f32[N]) -> f32:\n"
                       "    return I.sum(x)\n", "k.intent")
    assert "k.intent:5:5: error: 'mean' is defined here and bound by an import at line 2" in text
    text = diagnostics("import intent as I\nfrom common import mean, EPS as mean\n", "k.intent")
    assert "'mean' is bound twice in this module: an import at line 2 and an import here" in text
    text = diagnostics("import intent as I\nEPS = 1\nfrom common import EPS\n", "k.intent")
    assert "'EPS' is bound twice" in text


def test_importing_a_kernel_is_refused_with_the_helper_spelling(here):
    write(here, {"common.intent": COMMON})
    text = diagnostics("import intent as I\nfrom common import selftest\n", "k.intent")
    assert "'selftest' in module 'common' is a kernel; only @intent.fn helpers and constants can be imported" in text
    assert "move the shared code into an @intent.fn helper" in text


def test_an_error_inside_an_imported_file_points_there_with_a_note_at_the_import(here):
    write(here, {"lib/bad.intent": "import intent as I\n\n@intent.fn\ndef f(x: f32[N]) -> f32[N]:\n"
                                   "    return x + undefined_thing\n",
                 "lib/syntax.intent": "import intent as I\n\n@intent.fn\ndef g(x: f32[N]) -> f32[N]:\n"
                                      "    return x +* 2.0\n"})
    source = "import intent as I\nfrom bad import f\n\n@intent.kernel\ndef k(x: f32[N]) -> f32[N]:\n    return f(x)\n"
    with pytest.raises(CompileError) as info:
        frontend(source, "k.intent", search=SearchPath(("lib",)))
    d = info.value.diagnostics[0]
    assert d.span.source.path == "lib/bad.intent" and d.span.line == 5
    assert d.notes[-1] == "lib/bad.intent is imported at k.intent:2:1"
    with pytest.raises(CompileError) as info:
        frontend(source.replace("from bad import f", "from syntax import g as f"), "k.intent",
                 search=SearchPath(("lib",)))
    d = info.value.diagnostics[0]
    assert d.span.source.path == "lib/syntax.intent" and d.span.line == 5
    assert d.notes == ("lib/syntax.intent is imported at k.intent:2:1",)


def test_constants_are_constant_and_imports_stay_at_the_top(here):
    assert "a module-level constant must be a constant expression" in diagnostics(
        "import intent as I\nX = I.exp(1.0)\n", "k.intent")
    assert "the literal 300 does not fit in i8" in diagnostics("import intent as I\nX: i8 = 300\n", "k.intent")
    assert "'Y' is not a constant defined above" in diagnostics("import intent as I\nX = Y + 1\nY = 2\n", "k.intent")
    text = diagnostics("import intent as I\n\n@intent.kernel\ndef k(x: f32[N]) -> f32[N]:\n    import common\n"
                       "    return x\n", "k.intent")
    assert "imports belong at the top level of a module" in text
    assert "the builtins are a namespace" in diagnostics("from intent import exp\n", "k.intent")
    assert "is a Python module" in diagnostics("import numpy as np\n", "k.intent")


# ---- builds ---------------------------------------------------------------------------------------
def test_the_depfile_lists_every_imported_file(here):
    write(here, {"lib/common.intent": COMMON.replace("import intent as I\n", "import intent as I\nfrom extra import X\n"),
                 "lib/extra.intent": "X = 1\n", "k.intent": MAIN})
    build("k.intent", "k.so", depfile="k.d", include_dirs=["lib"])
    rule = (here / "k.d").read_text().split("\n\n")[0]
    assert rule.startswith("k.so: k.intent \\\n  lib/common.intent \\\n  lib/extra.intent \\\n")


def test_the_build_cache_sees_an_edit_of_an_imported_file(here):
    write(here, {"common.intent": COMMON, "k.intent": MAIN})
    timer = StageTimer()
    build("k.intent", "k.so", cache=True, timer=timer)
    assert any(name == "cache store" for name, _ in timer.times)
    timer = StageTimer()
    build("k.intent", "k2.so", cache=True, timer=timer)
    timer = StageTimer()
    build("k.intent", "k.so", cache=True, timer=timer)
    assert not any(name == "cache store" for name, _ in timer.times), "an unchanged rebuild is a cache hit"
    (here / "common.intent").write_text(COMMON.replace("SCALE: f32 = 2.0", "SCALE: f32 = 4.0"))
    timer = StageTimer()
    build("k.intent", "k.so", cache=True, timer=timer)
    assert any(name == "cache store" for name, _ in timer.times), "an edit of common.intent must be a miss"
    x = np.ones((1, 4), np.float32) * np.arange(4, dtype=np.float32)
    out = np.zeros_like(x)
    intentc.load(here / "k.so").ln(x, out)
    np.testing.assert_allclose(out, layernorm(x) * 4 + 1.0, rtol=1e-5, atol=1e-5)


def test_the_import_scan_agrees_with_the_parser():
    text = "import intent as I\nfrom a import x\nimport b.c as c\nfrom  d . e import (f,\n  g)\n  # from z import q\n"
    assert scan_imports(text) == ["a", "b.c", "d.e"]
    assert imported_files("from nowhere import f\n", "k.intent", SearchPath(), lambda p: "") is None


def test_a_build_the_scan_cannot_follow_is_not_cached(here):
    # a line continuation hides the module from the scan: the build works and is not cached
    hidden = MAIN.replace("from common import", "from \\\n common import").replace("import common\n", "")
    hidden = hidden[:hidden.index("@intent.kernel\ndef centred")]
    write(here, {"common.intent": COMMON, "k.intent": hidden})
    for _ in range(2):
        timer = StageTimer()
        build("k.intent", "k.so", cache=True, timer=timer)
        assert not any(name == "cache store" for name, _ in timer.times)
        assert any(name == "parse and check" for name, _ in timer.times), "compiled each time"
    x = np.ones((1, 4), np.float32) * np.arange(4, dtype=np.float32)
    out = np.zeros_like(x)
    intentc.load(here / "k.so").ln(x, out)
    np.testing.assert_allclose(out, layernorm(x) * 2 + 0.5, rtol=1e-5, atol=1e-5)


def test_artifacts_with_a_relative_include_folder_do_not_depend_on_where_the_project_lies(tmp_path):
    outputs = []
    for place in ("one", "two/deeper"):
        project = write(tmp_path / place, {"inc/common.intent": COMMON, "src/k.intent": MAIN})
        env = dict(os.environ, PYTHONPATH=str(REPO), INTENTC_NO_CACHE="1")
        proc = subprocess.run([sys.executable, "-m", "intentc", "build", "src/k.intent", "-I", "inc", "-o", "k.so"],
                              cwd=project, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        outputs.append((project / "k.so").read_bytes())
    assert outputs[0] == outputs[1]
    assert str(tmp_path).encode() not in outputs[0] and b"src/k.intent" in outputs[0]
