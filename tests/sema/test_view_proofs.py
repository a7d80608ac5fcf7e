"""Writes through views are proven unique (M4) and checked for races (P3) on the tensor's own
axes (C4: the view's relation composes onto the tensor's indices), so a program is accepted
or refused the same whether it is written through a view or with full indices
(sema/windows.py, sema/coordinates.py, sema/memory_checks.py). Each case is written both
ways; refused cases give the same rule and the same message."""
from __future__ import annotations

import re

import pytest
from sema_programs import build, diagnostics

HEAD = "@intent.kernel\ndef k(x: f32[R, C], out: mut f32[R, C]):\n"
FLAT = "@intent.kernel\ndef k(x: f32[R, C], out: mut f32[M]):\n"

ACCEPTED = {
    "row view": (
        HEAD + "    for r in I.parallel(x.axis(0)):\n        o = out[r, :]\n        for c in o.axis(0):\n"
               "            o[c] = x[r, c]\n",
        HEAD + "    for r in I.parallel(x.axis(0)):\n        for c in x.axis(1):\n            out[r, c] = x[r, c]\n"),
    "row slice assignment": (
        HEAD + "    for r in I.parallel(x.axis(0)):\n        out[r, :] = x[r, :] * 2.0\n",
        HEAD + "    for r in I.parallel(x.axis(0)):\n        for c in I.parallel(x.axis(1)):\n"
               "            out[r, c] = x[r, c] * 2.0\n"),
    "offset window": (
        HEAD + "    w = out[1:R, :]\n    for i, j in I.parallel(w.axis(0), w.axis(1)):\n        w[i, j] = 1.0\n",
        HEAD + "    for i, j in I.parallel(x.axis(0)[1:R], x.axis(1)):\n        out[i, j] = 1.0\n"),
    "transpose": (
        "@intent.kernel\ndef k(x: f32[C, R], out: mut f32[R, C]):\n    t = out.transpose()\n"
        "    for i, j in I.parallel(x.axis(0), x.axis(1)):\n        t[i, j] = x[i, j]\n",
        "@intent.kernel\ndef k(x: f32[C, R], out: mut f32[R, C]):\n"
        "    for i, j in I.parallel(x.axis(0), x.axis(1)):\n        out[j, i] = x[i, j]\n"),
    "reshape to one axis": (
        "@intent.kernel\ndef k(x: f32[K], out: mut f32[R, C]):\n    flat = out.reshape([-1])\n"
        "    for p in I.parallel(x.axis(0)):\n        flat[p] = x[p]\n",
        "@intent.kernel\ndef k(x: f32[K], out: mut f32[R, C]):\n"
        "    for p in I.parallel(x.axis(0)):\n        out[p // C, p % C] = x[p]\n"),
    "reshape to two axes": (
        FLAT + "    grid = out.reshape([R, C])\n    for i, j in I.parallel(x.axis(0), x.axis(1)):\n"
               "        grid[i, j] = x[i, j]\n",
        FLAT + "    for i, j in I.parallel(x.axis(0), x.axis(1)):\n        out[i * C + j] = x[i, j]\n"),
    "head window": (  # llm.c's out + h * hs: the window's extent (h + 1) * D - h * D is D
        "@intent.kernel\ndef k(x: f32[B, H, D], out: mut f32[B, H * D]):\n"
        "    for b, h in I.parallel(x.axis(0), x.axis(1)):\n        o = out[b, h * D:(h + 1) * D]\n"
        "        o[:] = x[b, h, :]\n",
        "@intent.kernel\ndef k(x: f32[B, H, D], out: mut f32[B, H * D]):\n"
        "    for b, h in I.parallel(x.axis(0), x.axis(1)):\n        for d in I.parallel(x.axis(2)):\n"
        "            out[b, h * D + d] = x[b, h, d]\n"),
    "head window of a computed width": (  # hs = C // NH is one opaque value for every point
        "@intent.kernel\ndef k(x: f32[B, C], out: mut f32[B, C], heads: f32[NH]):\n    hs = C // NH\n"
        "    for b, h in I.parallel(x.axis(0), heads.axis(0)):\n        o = out[b, h * hs:(h + 1) * hs]\n"
        "        o[:] = x[b, h * hs:(h + 1) * hs]\n",
        "@intent.kernel\ndef k(x: f32[B, C], out: mut f32[B, C], heads: f32[NH]):\n    hs = C // NH\n"
        "    for b, h in I.parallel(x.axis(0), heads.axis(0)):\n        for d in range(hs):\n"
        "            out[b, h * hs + d] = x[b, h * hs + d]\n"),
    "head window at an offset": (  # the key block of qkv: C + h * hs, the same C for every point
        "@intent.kernel\ndef k(x: f32[B, C], out: mut f32[B, 2 * C], heads: f32[NH]):\n    hs = C // NH\n"
        "    for b, h in I.parallel(x.axis(0), heads.axis(0)):\n        o = out[b, C + h * hs:C + (h + 1) * hs]\n"
        "        o[:] += x[b, h * hs:(h + 1) * hs]\n",
        "@intent.kernel\ndef k(x: f32[B, C], out: mut f32[B, 2 * C], heads: f32[NH]):\n    hs = C // NH\n"
        "    for b, h in I.parallel(x.axis(0), heads.axis(0)):\n        for d in range(hs):\n"
        "            out[b, C + h * hs + d] += x[b, h * hs + d]\n"),
}

REFUSED = {
    "a head window whose offset moves with the point": (
        "@intent.kernel\ndef k(x: f32[B, C], out: mut f32[B, M], heads: f32[NH]):\n    hs = C // NH\n"
        "    for b, h in I.parallel(x.axis(0), heads.axis(0)):\n        o = out[b, h + h * hs:h + (h + 1) * hs]\n"
        "        for d in o.axis(0):\n            o[d] = 1.0\n",
        "@intent.kernel\ndef k(x: f32[B, C], out: mut f32[B, M], heads: f32[NH]):\n    hs = C // NH\n"
        "    for b, h in I.parallel(x.axis(0), heads.axis(0)):\n        for d in range(hs):\n"
        "            out[b, h + h * hs + d] = 1.0\n"),
    "overlapping head windows": (  # one element more than the width: neighbouring heads meet
        "@intent.kernel\ndef k(x: f32[B, C], out: mut f32[B, M], heads: f32[NH]):\n    hs = C // NH\n"
        "    for b, h in I.parallel(x.axis(0), heads.axis(0)):\n        o = out[b, h * hs:(h + 1) * hs + 1]\n"
        "        for d in o.axis(0):\n            o[d] = 1.0\n",
        "@intent.kernel\ndef k(x: f32[B, C], out: mut f32[B, M], heads: f32[NH]):\n    hs = C // NH\n"
        "    for b, h in I.parallel(x.axis(0), heads.axis(0)):\n        for d in range(hs + 1):\n"
        "            out[b, h * hs + d] = 1.0\n"),
    "every point writes one row": (
        HEAD + "    for r in I.parallel(x.axis(0)):\n        o = out[0, :]\n        for c in o.axis(0):\n"
               "            o[c] = x[r, c]\n",
        HEAD + "    for r in I.parallel(x.axis(0)):\n        for c in x.axis(1):\n            out[0, c] = x[r, c]\n"),
    "two writes of neighbouring elements": (
        "@intent.kernel\ndef k(x: f32[N], out: mut f32[M]):\n    for i in I.parallel(x.axis(0)):\n"
        "        out[i] = x[i]\n        o = out[1:M]\n        o[i] = x[i]\n",
        "@intent.kernel\ndef k(x: f32[N], out: mut f32[M]):\n    for i in I.parallel(x.axis(0)):\n"
        "        out[i] = x[i]\n        out[i + 1] = x[i]\n"),
    "a write and a read of the next element": (
        "@intent.kernel\ndef k(x: f32[N], out: mut f32[M]):\n    for i in I.parallel(x.axis(0)):\n"
        "        o = out[1:M]\n        out[i] = o[i] + x[i]\n",
        "@intent.kernel\ndef k(x: f32[N], out: mut f32[M]):\n    for i in I.parallel(x.axis(0)):\n"
        "        out[i] = out[i + 1] + x[i]\n"),
    "every point writes one row of a reshape": (
        FLAT + "    grid = out.reshape([R, C])\n    for i in I.parallel(x.axis(0)):\n        for j in x.axis(1):\n"
               "            grid[0, j] = x[i, j]\n",
        FLAT + "    for i in I.parallel(x.axis(0)):\n        for j in x.axis(1):\n            out[j] = x[i, j]\n"),
    "a transposed write that ignores a point": (
        "@intent.kernel\ndef k(x: f32[C, R], out: mut f32[R, C]):\n    t = out.transpose()\n"
        "    for i, j in I.parallel(x.axis(0), x.axis(1)):\n        t[0, j] = x[i, j]\n",
        "@intent.kernel\ndef k(x: f32[C, R], out: mut f32[R, C]):\n"
        "    for i, j in I.parallel(x.axis(0), x.axis(1)):\n        out[j, 0] = x[i, j]\n"),
}


def _without_line(message: str) -> str:
    """The message without the line it cites (the view's definition takes a line of its own)."""
    return re.sub(r" at line \d+", "", message)


@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_accepted_through_a_view_and_with_full_indices_m4_c4(case):
    through_view, full = ACCEPTED[case]
    build(through_view)
    build(full)


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_alike_through_a_view_and_with_full_indices_m4_p3_c4(case):
    through_view, full = REFUSED[case]
    got = [(d.rule, _without_line(d.message)) for d in diagnostics(through_view)]
    want = [(d.rule, _without_line(d.message)) for d in diagnostics(full)]
    assert got == want
    assert got[0][0] in ("M4", "P3")


def test_a_slice_assignment_shared_by_every_point_is_a_race_p3():
    found = diagnostics(HEAD + "    for r in I.parallel(x.axis(0)):\n        out[0:1, :] = x[0:1, :]\n")
    assert [d.rule for d in found] == ["P3"]
    assert "both write the same element of 'out'" in found[0].message


def test_the_right_hand_side_of_a_slice_assignment_is_a_value_p6():
    # y[1:N] = y[0:N-1] reads y as it was before the statement: no race between its points.
    build("@intent.kernel\ndef k(y: mut f32[N]):\n    y[1:N] = y[0:N - 1]\n")
    # Through a view defined inside the loop, the read is of the memory the points write.
    found = diagnostics("@intent.kernel\ndef k(y: mut f32[N]):\n    for i in I.parallel(y.axis(0)[1:N]):\n"
                        "        v = y[0:N - 1]\n        y[i] = v[i - 1]\n")
    assert [d.rule for d in found] == ["P3"]


def test_row_major_index_forms_are_unique_when_the_minor_index_stays_inside_its_extent_m4():
    # out[b, t, h * D + d] with d over an axis of extent D: (h, d) -> h * D + d is one-to-one.
    build("@intent.kernel\ndef k(x: f32[B, T, H, D], out: mut f32[B, T, C]):\n"
          "    for b, t, h, d in I.parallel(x.axis(0), x.axis(1), x.axis(2), x.axis(3)):\n"
          "        out[b, t, h * D + d] = x[b, t, h, d]\n")
    build("@intent.kernel\ndef k(x: f32[R, 2], out: mut f32[M]):\n"
          "    for r, c in I.parallel(x.axis(0), x.axis(1)):\n        out[r * 2 + c] = x[r, c]\n")
    # d over an axis of another extent E may reach the next h's elements: not proven.
    found = diagnostics("@intent.kernel\ndef k(x: f32[B, T, H, E], out: mut f32[B, T, C], D: i64):\n"
                        "    for b, t, h, d in I.parallel(x.axis(0), x.axis(1), x.axis(2), x.axis(3)):\n"
                        "        out[b, t, h * D + d] = x[b, t, h, d]\n")
    assert [d.rule for d in found] == ["M4"]
    found = diagnostics("@intent.kernel\ndef k(x: f32[R, 3], out: mut f32[M]):\n"
                        "    for r, c in I.parallel(x.axis(0), x.axis(1)):\n        out[r * 2 + c] = x[r, c]\n")
    assert [d.rule for d in found] in (["M4"], ["P3"])
