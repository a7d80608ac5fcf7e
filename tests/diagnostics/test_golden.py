"""Golden diagnostics: one `.intent` file per expected error, its rendering beside it.

For every `NAME.intent` here, `NAME.expected` holds the plain rendering
(`Diagnostic.render_plain()`, one diagnostic after another) with the file shown
as `NAME.intent`. Each case runs twice:

- through the CLI (`python -m intentc check NAME.intent` in a subprocess): exit
  code 1, no Python traceback, stderr is the expected text plus the `N error(s)`
  count line;
- in process (`intentc.driver.frontend`): a `CompileError` whose diagnostics
  render to the expected text.

Independently of the golden text, the tables below pin what must not drift when
someone regenerates the files: the rule ID each case cites and the source text
the caret underlines. Every diagnostic must carry a hint.

Regenerate the expected files with `UPDATE_GOLDEN=1 pytest tests/diagnostics`, or only some
cases with `UPDATE_GOLDEN=name1,name2`.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from intentc.diagnostics import CompileError  # noqa: E402
from intentc.driver import frontend  # noqa: E402

CASES = sorted(p.stem for p in HERE.glob("*.intent"))
_UPDATE = os.environ.get("UPDATE_GOLDEN", "")
# UPDATE_GOLDEN=1 regenerates every expected file; UPDATE_GOLDEN=name1,name2 only those cases.
UPDATE = set(CASES) if _UPDATE == "1" else {n.strip() for n in _UPDATE.split(",") if n.strip()}

# The rule ID that the first diagnostic of a case must cite (None: no rule applies).
RULES = {
    "region_helper_writes": "R4",
    "region_helper_reads_element": "R5",
    "region_helper_extent": "R5",
    "region_combine_type": "R3",
    "subregion_step": "D7",
    "subregion_reversed": "D7",
    "slice_step_write": "D7",
    "reshape_zero_infer": "S4",
    "parallel_break": "P4",
    "parallel_return": "P4",
    "parallel_carry": "P2",
    "broadcast_static": "S2",
    "if_not_bool": "O1",
    "carry_type_change": "O2",
    "domain_step_zero": "D1",
    "domain_step_negative": "D1",
    "result_extent_unknown": "S1",
    "store_readonly_param": "M2",
    "store_readonly_view": "M2",
    "slice_assign_readonly": "M2",
    "slice_assign_broadcast": "S2",
    "store_into_value": "M2",
    "syntax_error": None,
    "undefined_name": None,
    "dtype_mismatch": None,
    "scaled_contract_schema": "T4",
    "scaled_contract_block": "T4",
    "sparse_contract_format": "T5",
    "sparse_contract_meta": "T5",
}

# The source text the caret of the first diagnostic must underline exactly.
CARETS = {
    "syntax_error": "*",
    "undefined_name": "factor",
    "dtype_mismatch": "x + y",
    "parallel_break": "break",
    "parallel_return": "return",
    "parallel_carry": "total",
    "broadcast_static": "x + y",
    "assign_readonly_param": "lo",
    "store_readonly_param": "x",
    "store_readonly_view": "o",
    "slice_assign_readonly": "x",
    "slice_assign_broadcast": "y",
    "store_into_value": "t",
    "wrong_rank_index": "x[i]",
    "bad_decorator": "@intent.kernal",
    "unknown_builtin": "I.logit",
    "int_literal_range": "200",
    "int_true_division": "x / 2",
    "if_not_bool": "x[i]",
    "carry_type_change": "best",
    "helper_arity": "axpy(2.0, x[i])",
    "helper_recursion": "collatz(n // 2)",
    "duplicate_function": "twice",
    "kernel_scalar_result": "x",
    "result_extent_float_scalar": "f32[n]",
    "optional_param_unchecked": "bias",
    "default_wrong_dtype": "1.5",
    "optional_extent_unbound": "bias: f32[C] | None = None",
    "tensor_default_not_none": "1.0",
    "default_before_required": "x: f32[N]",
    "none_outside_check": "None",
    "helper_default": "s: f32 = 2.0",
    "scalar_result_dtype": "I.sum(x), I.sum(x)",
    "unknown_dtype": "float32",
    "bad_indentation": "o",
    "bad_dedent": "o",
    "stray_character": "$",
    "domain_step_zero": "0",
    "domain_step_negative": "-1",
    "result_extent_unknown": "f32[M]",
    "missing_colon": ")",
    "unexpected_eof": "[",
    "int_literal_leading_zero": "012",
    "number_literal_no_digits": "0x_",
    "const_pow_too_large": "10 ** 10 ** 10",
    "float_literal_overflow": "10 ** 400",
    "scaled_contract_schema": "sb",
    "scaled_contract_block": "a",
    "sparse_contract_format": '"1:4"',
    "sparse_contract_meta": "meta",
    "subregion_reversed": "-1",
    "slice_step_write": "-1",
    "import_missing_module": "from layer_norms import layernorm_row",
    "import_missing_name": "layernorm_rows",
    "import_clash": "mean",
    "import_kernel": "selftest",
    "import_error_inside": "scale",
}

# Words the message or hint must contain: the values it names, what was expected.
MENTIONS = {
    "undefined_name": ["'factor'"],
    "dtype_mismatch": ["'x' is f32", "'y' is i32", "I.cast("],
    "broadcast_static": ["'x' has extent 3", "'y' has extent 5"],
    "parallel_carry": ["'total'", "I.parallel"],
    "assign_readonly_param": ["'lo'", "parameter"],
    "store_readonly_param": ["'x'", "mut"],
    "store_readonly_view": ["view of parameter 'x'", "`mut`", "x: mut"],
    "slice_assign_readonly": ["'x'", "mut"],
    "slice_assign_broadcast": ["extent 3", "extent 4"],
    "store_into_value": ["immutable value", "I.buffer"],
    "wrong_rank_index": ["'x' has 2 axes", "1 index"],
    "unknown_builtin": ["I.logit", "I.log1p"],
    "int_literal_range": ["200", "i8", "-128..127"],
    "int_true_division": ["i32", "//"],
    "if_not_bool": ["i32", "x[i] != 0"],
    "carry_type_change": ["'best'", "index", "f32", "best: f32"],
    "helper_arity": ["'axpy'", "3 arguments", "got 2", "axpy(a, x, y)"],
    "helper_recursion": ["'collatz'"],
    "duplicate_function": ["'twice'", "line 4"],
    "kernel_scalar_result": ["scalar f32", "tensor"],
    "result_extent_float_scalar": ["'n'", "dtype f32", "n: index"],
    "optional_param_unchecked": ["'bias'", "None", "if bias is not None:"],
    "default_wrong_dtype": ["1.5", "i32"],
    "optional_extent_unbound": ["'C'", "'bias'", "required"],
    "tensor_default_not_none": ["'w'", "None", "w: f32[N] | None = None"],
    "default_before_required": ["'x'", "'a'", "last"],
    "none_outside_check": ["None", "is not None"],
    "helper_default": ["'s'", "only kernels"],
    "scalar_result_dtype": ["i64", "f32", "I.cast("],
    "unknown_dtype": ["'float32'", "'f32'"],
    "domain_step_zero": ["got 0"],
    "domain_step_negative": ["got -1"],
    "result_extent_unknown": ["'M'", "N"],
    "multiple_errors": ["'scale'", "'y' is f64"],
    "int_literal_leading_zero": ["'012'", "write 12"],
    "number_literal_no_digits": ["'0x_'", "no digits", "0x1"],
    "nesting_too_deep": ["100 levels", "@intent.fn helper"],
    "float_literal_overflow": ["f32", "I.inf"],
    "scaled_contract_schema": ["rank 3", "sb: [N, G]"],
    "scaled_contract_block": ["K = 48", "block size 32"],
    "sparse_contract_format": ['"1:4"', '"2:4"', '"csr"'],
    "sparse_contract_meta": ["i32", "u8", "bits 0-1"],
    "subregion_reversed": ["runs upward", "i = n - 1 - k", "x[::-1]"],
    "slice_step_write": ["indexed relation", "out[n - 1 - i] = x[i]", "I.scatter"],
    "import_missing_module": ["'layer_norms'", "searched: layer_norms.intent", "-I DIR"],
    "import_missing_name": ["'layernorm_rows'", "did you mean 'layernorm_row'?", "EPS, layernorm_row, mean"],
    "import_cycle": ["modules/cycle_a.intent -> modules/cycle_b.intent -> modules/cycle_a.intent",
                     "modules/cycle_a.intent is imported at import_cycle.intent:2:1"],
    "import_clash": ["'mean'", "import at line 2", "as other"],
    "import_kernel": ["'selftest'", "kernel", "@intent.fn helper"],
    "import_error_inside": ["modules/broken.intent:6:16", "modules/broken.intent is imported at "
                            "import_error_inside.intent:2:1"],
}

# How many diagnostics a case reports (1 unless listed).
COUNTS = {"multiple_errors": 2}


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["NO_COLOR"] = "1"
    env.pop("FORCE_COLOR", None)
    env["COLUMNS"] = "400"
    return env


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _normalise(text: str, name: str) -> str:
    """Show the file as `NAME.intent` however the compiler was given its path."""
    path = HERE / f"{name}.intent"
    text = _ANSI.sub("", text)
    for spelling in (str(path), os.path.relpath(path, REPO), f"./{name}.intent"):
        text = text.replace(spelling, f"{name}.intent")
    return text.rstrip("\n")


def _render(exc: CompileError) -> str:
    return "\n".join(d.render_plain() for d in exc.diagnostics)


def _in_process(name: str) -> CompileError:
    path = HERE / f"{name}.intent"
    cwd = os.getcwd()
    os.chdir(HERE)  # as the CLI runs: modules imported beside the case are found from here
    try:
        with pytest.raises(CompileError) as info:
            frontend(path.read_text(encoding="utf-8"), f"{name}.intent")
    finally:
        os.chdir(cwd)
    return info.value


@pytest.fixture(scope="module")
def expected_texts() -> dict[str, str]:
    texts = {}
    for name in CASES:
        golden = HERE / f"{name}.expected"
        if name in UPDATE:
            golden.write_text(_render(_in_process(name)) + "\n", encoding="utf-8")
        texts[name] = golden.read_text(encoding="utf-8").rstrip("\n") if golden.is_file() else None
    return texts


def _check(name: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "intentc", "check", f"{name}.intent"], cwd=HERE, env=_env(),
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def cli_runs() -> dict[str, subprocess.CompletedProcess]:
    """`intentc check NAME.intent` for every case, a few processes at a time."""
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        return dict(zip(CASES, pool.map(_check, CASES)))


def test_every_case_has_its_golden_file(expected_texts):
    intents = {p.stem for p in HERE.glob("*.intent")}
    goldens = {p.stem for p in HERE.glob("*.expected")}
    assert intents == goldens, f"without .expected: {sorted(intents - goldens)}; " \
                               f"without .intent: {sorted(goldens - intents)}"
    assert len(intents) >= 24
    assert set(RULES) | set(CARETS) | set(MENTIONS) <= intents


@pytest.mark.parametrize("name", CASES)
def test_cli_check(name, expected_texts, cli_runs):
    """`intentc check` exits 1 with exactly the expected diagnostics and no traceback."""
    proc = cli_runs[name]
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 1, f"exit code {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    stderr = _normalise(proc.stderr, name)
    *body, count = stderr.splitlines()
    n = COUNTS.get(name, 1)
    assert count == f"{n} error{'s' if n != 1 else ''}", stderr
    assert expected_texts[name] is not None, f"{name}.expected is missing (run with UPDATE_GOLDEN=1)"
    assert "\n".join(body) == expected_texts[name], \
        f"{name}: the diagnostics changed; if that is intended, regenerate with UPDATE_GOLDEN=1"


@pytest.mark.parametrize("name", CASES)
def test_in_process(name, expected_texts):
    """The same diagnostics from the driver, with a location, a caret, a rule where one applies, and a hint."""
    exc = _in_process(name)
    assert len(exc.diagnostics) == COUNTS.get(name, 1), _render(exc)
    assert _render(exc) == expected_texts[name], \
        f"{name}: the diagnostics changed; if that is intended, regenerate with UPDATE_GOLDEN=1"
    first = exc.diagnostics[0]
    if name in RULES:
        assert first.rule == RULES[name], _render(exc)
    for diag in exc.diagnostics:
        assert diag.hint, f"{name}: a diagnostic without a hint:\n{diag.render_plain()}"
        assert diag.severity == "error"
    if name in CARETS:
        assert first.span is not None, _render(exc)
        assert _underlined(first.render_plain()) == CARETS[name], _render(exc)
    for word in MENTIONS.get(name, []):
        assert word in _render(exc), f"{name}: {word!r} is not mentioned:\n{_render(exc)}"


def _underlined(rendered: str) -> str:
    """The text of the source line that the caret line of a plain rendering marks."""
    lines = rendered.splitlines()
    source_line, carets = lines[1], lines[2]
    gutter = source_line.index(" | ") + 3
    start = len(carets) - len(carets.lstrip(" "))
    return source_line[start:start + carets.count("^")] if start >= gutter else ""


def test_location_is_line_and_column():
    """`file:line:col:` comes first, with the line of the span and its 1-based column."""
    text = (HERE / "undefined_name.intent").read_text()
    line_no = next(k for k, line in enumerate(text.splitlines(), 1) if "factor" in line)
    column = text.splitlines()[line_no - 1].index("factor") + 1
    exc = _in_process("undefined_name")
    assert exc.diagnostics[0].render_plain().startswith(f"undefined_name.intent:{line_no}:{column}: error: ")
