"""docs/conformance.md stays honest: every spec rule has a row, every test it names exists."""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO.parent / "shared" / "spec" / "logical-program.md"
DOC = REPO / "docs" / "conformance.md"
RULES = ("D1 D2 D3 D4 D5 D6 D7 D8 C1 C2 C3 C4 C5 C6 S1 S2 S3 S4 S5 S6 P1 P2 P3 P4 P5 P6 O1 O2 O3 O4 "
         "R0 R1 R2 R3 R4 R5 R6 R7 R8 R9 R10 T1 T2 T3 T4 T5 T6 T7 L1 L2 G1 G2 G3 M1 M2 M3 M4 M5 M6 M7 "
         "A1 A2 A3 N1 N2").split()


def _rows() -> dict[str, str]:
    rows = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        match = re.match(r"\|\s*([A-Z][0-9]+)\s*\|(.*)\|\s*([^|]+?)\s*\|\s*$", line)
        if match:
            rows[match.group(1)] = match.group(2)
    return rows


def test_every_rule_has_a_row():
    rules = RULES
    if SPEC.exists():  # the spec beside the checkout is the source of truth when present
        rules = re.findall(r"^- \*\*([A-Z][0-9]+)\*\*", SPEC.read_text(encoding="utf-8"), re.M)
    missing = [rule for rule in rules if rule not in _rows()]
    assert not missing, f"rules without a row in docs/conformance.md: {missing}"


def test_named_tests_exist():
    for rule, cell in _rows().items():
        for name in re.findall(r"`([a-z_]+/[A-Za-z0-9_./]+?)(?:::[A-Za-z0-9_*]+)?`", cell):
            if name.startswith("samples/"):
                continue
            candidates = [REPO / "tests" / name, REPO / "tests" / (name + ".intent")]
            assert any(c.exists() for c in candidates), f"{rule}: docs/conformance.md names missing test {name}"
