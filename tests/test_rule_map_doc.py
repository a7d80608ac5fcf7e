"""docs/rule-map.md stays honest: one row per spec rule, and everything it names exists.

The table maps each rule to the grammar rule, sema module, KIR op or analysis, interpreter
handler, lowering pass and codegen/runtime file that carry it. This test checks that every
rule of the spec has exactly one row, that every backticked path (and ``::name`` in it)
exists, that every grammar name is a rule or alias of ``grammar/intent.lark``, that every KIR
name is a registered op or a path, and that every lowering name is a pipeline pass or a path.
"""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from intentc.kir.ops import REGISTRY
from intentc.lower.pipeline import PASS_NAMES

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO.parent / "shared" / "spec" / "logical-program.md"
DOC = REPO / "docs" / "rule-map.md"
GRAMMAR = REPO / "grammar" / "intent.lark"
RULES = ("D1 D2 D3 D4 D5 D6 D7 D8 C1 C2 C3 C4 C5 C6 S1 S2 S3 S4 S5 S6 P1 P2 P3 P4 P5 P6 O1 O2 O3 O4 "
         "R0 R1 R2 R3 R4 R5 R6 R7 R8 R9 R10 T1 T2 T3 T4 T5 T6 T7 L1 L2 G1 G2 G3 M1 M2 M3 M4 M5 M6 M7 "
         "A1 A2 A3 N1 N2").split()
COLUMNS = ("rule", "grammar", "sema", "kir", "interpreter", "lowering", "codegen")
CODE_ROOTS = ("intentc/", "grammar/", "runtime_c/")
# Where each column's paths may point (the KIR and lowering columns also take op and pass names).
COLUMN_ROOTS = {
    "sema": ("intentc/sema/",),
    "kir": ("intentc/kir/",),
    "interpreter": ("intentc/interp/",),
    "lowering": ("intentc/lower/",),
    "codegen": ("intentc/codegen/", "runtime_c/"),
}


def _spec_rules() -> list[str]:
    if SPEC.exists():  # the spec beside the checkout is the source of truth when present
        return re.findall(r"^- \*\*([A-Z][0-9]+)\*\*", SPEC.read_text(encoding="utf-8"), re.M)
    return list(RULES)


def _rows() -> list[dict[str, str]]:
    rows = []
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if not re.match(r"\|\s*[A-Z][0-9]+\s*\|", line):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        assert len(cells) == len(COLUMNS), f"row with {len(cells)} cells, not {len(COLUMNS)}: {line}"
        rows.append(dict(zip(COLUMNS, cells)))
    return rows


def _names(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def _grammar_names() -> set[str]:
    text = GRAMMAR.read_text(encoding="utf-8")
    return set(re.findall(r"^\??([a-z_][a-z0-9_]*)\s*:", text, re.M)) | set(re.findall(r"->\s*([a-z_][a-z0-9_]*)", text))


def _path_problem(name: str) -> str | None:
    """None when ``path`` or ``path::symbol`` exists; otherwise what is wrong."""
    path, _, symbol = name.partition("::")
    target = REPO / path
    if not target.exists():
        return f"missing path {path}"
    if symbol and not re.search(rf"\b{re.escape(symbol)}\b", target.read_text(encoding="utf-8")):
        return f"{symbol} does not appear in {path}"
    return None


def test_every_rule_has_exactly_one_row():
    counts = Counter(row["rule"] for row in _rows())
    rules = _spec_rules()
    missing = [rule for rule in rules if counts[rule] == 0]
    repeated = [rule for rule, n in counts.items() if n > 1]
    unknown = [rule for rule in counts if rule not in rules]
    assert not missing, f"rules without a row in docs/rule-map.md: {missing}"
    assert not repeated, f"rules with more than one row in docs/rule-map.md: {repeated}"
    assert not unknown, f"rows for rules the spec does not have: {unknown}"


def test_every_named_path_exists():
    problems = []
    for row in _rows():
        for column in COLUMNS[1:]:
            for name in _names(row[column]):
                if name.startswith(CODE_ROOTS):
                    problem = _path_problem(name)
                    if problem:
                        problems.append(f"{row['rule']} ({column}): {problem}")
    assert not problems, "docs/rule-map.md names what does not exist:\n" + "\n".join(problems)


def test_paths_sit_in_their_column():
    problems = []
    for row in _rows():
        for column, roots in COLUMN_ROOTS.items():
            for name in _names(row[column]):
                if name.startswith(CODE_ROOTS) and not name.startswith(roots):
                    problems.append(f"{row['rule']} ({column}): {name} is not under {' or '.join(roots)}")
    assert not problems, "\n".join(problems)


def test_grammar_names_are_lark_rules():
    known = _grammar_names()
    bad = [f"{row['rule']}: {name}" for row in _rows() for name in _names(row["grammar"]) if name not in known]
    assert not bad, f"grammar names not in grammar/intent.lark: {bad}"


def test_kir_names_are_registered_ops_or_paths():
    bad = []
    for row in _rows():
        for name in _names(row["kir"]):
            if name in REGISTRY:
                continue
            if not name.startswith(CODE_ROOTS) or _path_problem(name):
                bad.append(f"{row['rule']}: {name}")
    assert not bad, f"KIR names that are neither registered ops nor existing paths: {bad}"


def test_lowering_names_are_passes_or_paths():
    bad = []
    for row in _rows():
        for name in _names(row["lowering"]):
            if name in PASS_NAMES:
                continue
            if not name.startswith(CODE_ROOTS) or _path_problem(name):
                bad.append(f"{row['rule']}: {name}")
    assert not bad, f"lowering names that are neither passes in PASS_NAMES nor existing paths: {bad}"
