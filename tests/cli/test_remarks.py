"""Schedule remarks (`intentc build/check --remarks`, `intentc explain --stage schedule`).

- golden remarks of a set of samples and of `tests/remarks/cliffs.intent` (one cliff per
  kernel), for a fixed target and CPU so that LLVM's vector widths are the same on every host;
  regenerate them with `UPDATE_GOLDEN=1 pytest tests/cli/test_remarks.py`;
- the cliffs a user should see before timing, asserted one by one;
- artifacts byte-identical with and without remarks (the sink passed through the pipeline,
  and `build --remarks` against `build`);
- the same remarks under different PYTHONHASHSEED values;
- never an internal variable name; the `--remarks=KIND` filter, `--remarks-format=json`,
  `check --remarks`, and the GPU mapping for `--target sm_90`.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from intentc.driver import compile_source, schedule_remarks  # noqa: E402
from intentc.lower.remarks import RemarkSink, render_text  # noqa: E402

TARGET, CPU = "x86_64-linux-gnu", "x86-64-v3"
GOLDEN = REPO / "tests" / "remarks"
CASES = ["samples/saxpy.intent", "samples/stencil3.intent", "samples/reductions.intent",
         "samples/online_softmax.intent", "tests/remarks/cliffs.intent"]
# Names the lowering makes (v_12, t_i, sub_len, len, acc_c3, chunk...) never reach a remark.
INTERNAL = re.compile(r"\b(v_\d+|v|t_\w+|t_at\w*|sub_len|sub_begin|sub_first|len|chunk\w*|\w+_c\d+|p\d+|i0|"
                      r"buf(?:_\d+)?)\b(?![\w(])")


def _remarks(relative: str, target: str = TARGET, cpu: str = CPU):
    return schedule_remarks((REPO / relative).read_text(), relative, target, cpu)


def _golden_name(relative: str) -> str:
    return Path(relative).stem + ".expected"


@pytest.fixture(scope="module")
def cliffs():
    return _remarks("tests/remarks/cliffs.intent")


@pytest.mark.parametrize("relative", CASES)
def test_golden_remarks(relative):
    text = render_text(_remarks(relative))
    path = GOLDEN / _golden_name(relative)
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text(), f"remarks of {relative} changed (UPDATE_GOLDEN=1 regenerates {path.name})"


def _of(remarks, kernel: str, pass_name: str, kind: str | None = None):
    return [r for r in remarks if r.kernel == kernel and r.pass_name == pass_name and (kind is None or r.kind == kind)]


def test_cliff_parallel_point_loop_that_stays_one_task(cliffs):
    (remark,) = _of(cliffs, "three_rows", "schedule_parallel")
    assert (remark.span.line, remark.span.column) == (7, 5)
    assert "the parallel loop over r runs its 3 points" in remark.message
    assert "while N <= 10922 its 3 points are one task, run by one thread" in remark.message


def test_cliff_non_unit_stride_and_check_not_vectorised(cliffs):
    (remark,) = _of(cliffs, "every_third", "vectorize")
    assert remark.kind == "missed"
    assert "not vectorised: the parallel loop over i" in remark.message
    assert "it reads x with a stride of 3 elements, not 1" in remark.message
    assert "a bounds check stays inside it (at 17:18)" in remark.message
    (kept,) = _of(cliffs, "every_third", "prove_bounds", "missed")
    assert kept.span.text == "x[i * 3]" and "the loop domains do not bound the index" in kept.message


def test_cliff_ordered_loop_carries_t(cliffs):
    (remark,) = _of(cliffs, "recurrence", "schedule_parallel", "missed")
    assert remark.message.startswith(
        "not threaded: the ordered loop over i runs its iterations one after the other (O2)")
    assert "it carries t from one iteration to the next" in remark.message


def test_cliff_gather_keeps_its_check(cliffs):
    (kept,) = _of(cliffs, "gather", "prove_bounds", "missed")
    assert kept.span.text == "x[idx[i]]" and "read from data" in kept.message and "C6" in kept.message
    (vector,) = _of(cliffs, "gather", "vectorize")
    assert vector.kind == "missed" and "not an affine function of the loop's point" in vector.message


def test_points_holding_ordered_loops_are_collapsed_and_threaded(cliffs):
    (collapsed,) = _of(cliffs, "causal_rows", "collapse_point_nests")
    assert collapsed.kind == "applied" and "the points over (b, t) are one parallel loop" in collapsed.message
    (threaded,) = _of(cliffs, "causal_rows", "schedule_parallel")
    assert "runs its B * T points in tasks of 32768 // (64 * C) points" in threaded.message
    (vector,) = _of(cliffs, "causal_rows", "vectorize")
    assert vector.kind == "missed" and "carries s from one iteration to the next" in vector.message


def test_fusion_names_the_expressions_and_the_loop():
    remarks = _remarks("samples/online_softmax.intent")
    fused = [r for r in remarks if r.pass_name == "expand_tensor_exprs" and r.span.line == 24]
    assert len(fused) == 1
    assert fused[0].message.startswith("fused into the parallel loop over r: `I.max(x)` (13:9), "
                                       "`I.sum(I.exp(x - finite_or_zero(m)))` (14:16)")
    saxpy = _remarks("samples/saxpy.intent")
    assert any(r.message.startswith("fused into the loop over the elements of `a * x + y`: `a * x` (6:12)")
               for r in saxpy)


def test_no_internal_names_in_any_sample_remark():
    for path in sorted(REPO.glob("samples/*.intent")):
        relative = str(path.relative_to(REPO))
        for remark in _remarks(relative):
            message = re.sub(r"`[^`]*`", "", remark.message)  # source text may use any name
            assert not INTERNAL.search(message), f"{relative}: {remark.message}"


def test_artifacts_identical_with_and_without_remarks():
    for relative in ("samples/online_softmax.intent", "tests/remarks/cliffs.intent", "samples/logsumexp.intent"):
        text = (REPO / relative).read_text()
        plain = compile_source(text, relative, TARGET, CPU)
        sink = RemarkSink()
        remarked = compile_source(text, relative, TARGET, CPU, remarks=sink)
        assert sink.remarks
        assert remarked.llvm_ir == plain.llvm_ir
        assert str(remarked.optimized) == str(plain.optimized)
        assert remarked.manifest == plain.manifest


def _cli(*args, env=None, cwd=REPO):
    full = dict(os.environ, PYTHONPATH=str(REPO), **(env or {}))
    return subprocess.run([sys.executable, "-m", "intentc", *args], capture_output=True, text=True, env=full,
                          cwd=cwd, timeout=600)


def test_build_with_remarks_writes_the_same_bytes(tmp_path):
    plain, remarked = tmp_path / "a" / "k.so", tmp_path / "b" / "k.so"
    for out, extra in ((plain, ()), (remarked, ("--remarks",))):
        out.parent.mkdir()
        done = _cli("build", "samples/stencil3.intent", "-o", str(out), "--no-cache", "--cpu", CPU, *extra)
        assert done.returncode == 0, done.stderr
    assert plain.read_bytes() == remarked.read_bytes()
    assert (plain.parent / "k.h").read_bytes() == (remarked.parent / "k.h").read_bytes()
    assert "remark[schedule_parallel]: threaded: the parallel loop over i" in done.stderr


def test_remarks_stable_across_hash_seeds():
    outputs = {_cli("explain", "tests/remarks/cliffs.intent", "--stage", "schedule", "--target", TARGET, "--cpu", CPU,
                    env={"PYTHONHASHSEED": seed}).stdout for seed in ("0", "1", "12345")}
    assert len(outputs) == 1 and "remark[" in outputs.pop()


def test_filter_format_and_check():
    done = _cli("check", "tests/remarks/cliffs.intent", "--target", TARGET, "--cpu", CPU, "--remarks=missed",
                "--color", "never")
    assert done.returncode == 0 and "ok (6 kernels)" in done.stdout
    heads = [line for line in done.stderr.splitlines() if ": remark[" in line]
    assert heads and all("not " in line.split("]: ", 1)[1][:30] for line in heads), heads
    done = _cli("explain", "samples/saxpy.intent", "--stage", "schedule", "--target", TARGET, "--cpu", CPU,
                "--remarks-format", "json")
    document = json.loads(done.stdout)
    first = document["remarks"][0]
    assert set(first) >= {"kind", "pass", "kernel", "message", "file", "line", "column", "source"}
    assert {r["pass"] for r in document["remarks"]} >= {"schedule_parallel", "vectorize", "expand_tensor_exprs"}


def test_gpu_mapping_remarks():
    remarks = _remarks("samples/linear_recurrence.intent", target="sm_90", cpu="native")
    mapping = [r for r in remarks if r.pass_name == "gpu_mapping"]
    assert mapping and all(r.kind == "missed" for r in mapping)
    assert "runs on one block: a parallel loop is nested in an ordered loop" in mapping[0].message
    assert not any(r.pass_name in ("schedule_parallel", "vectorize") for r in remarks)
    grid = [r for r in _remarks("samples/saxpy.intent", target="sm_90", cpu="native") if r.pass_name == "gpu_mapping"]
    assert grid[0].kind == "applied" and grid[0].message.startswith("mapped to the grid: 1 launch")


def test_sanitize_bounds_keeps_every_check():
    text = (REPO / "samples/stencil3.intent").read_text()
    remarks = schedule_remarks(text, "samples/stencil3.intent", TARGET, CPU, sanitize=("bounds",))
    checks = [r for r in remarks if r.pass_name == "keep_all_checks" and r.kind == "missed"]
    assert len(checks) == 4 and all("--sanitize=bounds keeps every check" in r.message for r in checks)
    assert not any(r.pass_name == "prove_bounds" and r.kind == "applied" for r in remarks)
