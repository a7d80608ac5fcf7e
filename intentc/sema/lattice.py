"""Exact integer linear algebra on the affine forms of index expressions (M4, P3, A3).

The memory checks (``memory_checks.py``) read each index as an affine form of atoms
(``kir/provenance.py``); whether distinct points can write one element is then a question
about an integer matrix: its rank (injective when the points' columns are independent), a
non-zero integer null vector (two points that collide), or an integer solution of
``M d = c`` (two accesses that meet). Computed over the rationals with ``Fraction``, so the
answers are exact for any coefficient size.
"""
from __future__ import annotations

from fractions import Fraction

from intentc.kir.provenance import Affine


def coefficient(form: Affine, key: int) -> int:
    """The coefficient of the atom ``key`` in ``form`` (0 when absent)."""
    return dict(form.terms).get(key, 0)


def matrix_rank(matrix: list[list[int]]) -> int:
    """The rank of an integer matrix (exact, over the rationals)."""
    rows = [[Fraction(x) for x in row] for row in matrix]
    found = 0
    cols = len(rows[0]) if rows else 0
    for c in range(cols):
        pivot = next((r for r in range(found, len(rows)) if rows[r][c] != 0), None)
        if pivot is None:
            continue
        rows[found], rows[pivot] = rows[pivot], rows[found]
        for r in range(len(rows)):
            if r != found and rows[r][c] != 0:
                f = rows[r][c] / rows[found][c]
                rows[r] = [x - f * y for x, y in zip(rows[r], rows[found])]
        found += 1
    return found


def _reduce(matrix, rhs, cols):
    rows = [[Fraction(x) for x in row] + [Fraction(b)] for row, b in zip(matrix, rhs)]
    pivots = []
    rank = 0
    for c in range(cols):
        pivot = next((r for r in range(rank, len(rows)) if rows[r][c] != 0), None)
        if pivot is None:
            continue
        rows[rank], rows[pivot] = rows[pivot], rows[rank]
        lead = rows[rank][c]
        rows[rank] = [x / lead for x in rows[rank]]
        for r in range(len(rows)):
            if r != rank and rows[r][c] != 0:
                f = rows[r][c]
                rows[r] = [x - f * y for x, y in zip(rows[r], rows[rank])]
        pivots.append(c)
        rank += 1
    return rows, pivots, rank


def null_vector(matrix, cols) -> list[int] | None:
    """A non-zero integer vector d with M d = 0 (M has fewer independent rows than columns)."""
    rows, pivots, _ = _reduce(matrix, [0] * len(matrix), cols)
    free = [c for c in range(cols) if c not in pivots]
    if not free:
        return None
    d = [Fraction(0)] * cols
    d[free[0]] = Fraction(1)
    for r, c in enumerate(pivots):
        d[c] = -rows[r][free[0]]
    scale = 1
    for x in d:
        scale = scale * x.denominator // _gcd(scale, x.denominator)
    return [int(x * scale) for x in d]


def integer_solution(matrix, rhs, cols) -> list[int] | None:
    """An integer d with M d = rhs (free variables 0; for a zero rhs a null vector), or None."""
    if not any(rhs):
        return null_vector(matrix, cols)
    rows, pivots, rank = _reduce(matrix, rhs, cols)
    if any(all(x == 0 for x in row[:-1]) and row[-1] != 0 for row in rows):
        return None  # inconsistent
    d = [Fraction(0)] * cols
    for r, c in enumerate(pivots):
        d[c] = rows[r][-1]
    if any(x.denominator != 1 for x in d):
        return None
    return [int(x) for x in d]


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a
