"""The checks of ``I.parallel`` loops (statements.py, normalize.py).

P1: ``I.parallel`` is iterated by a ``for`` over one or more domains, binding one name
or one per domain. P2: no loop-carried values, so assigning inside the loop a name
defined outside it is a diagnostic; a new local name is fine. P4: ``break`` (and
``return``) is illegal inside; ``continue`` skips the current point. P3: two points that
provably write one element are a diagnostic (memory_checks.py), reported at the later write.
"""
from __future__ import annotations

from sema_programs import diagnostic, kir

HEAD = "@intent.kernel\ndef k(x: f32[N], out: mut f32[N]):\n"


def test_a_parallel_loop_is_one_op_with_one_point_per_domain_p1():
    text = kir(HEAD + "    for i in I.parallel(x.axis(0)):\n        out[i] = x[i]\n")
    assert "parallel(%3) {" in text and "^(%i:index)" in text


def test_two_domains_bind_two_names_p1():
    text = kir("@intent.kernel\ndef k(x: f32[R, C], out: mut f32[R, C]):\n"
               "    for i, j in I.parallel(x.axis(0), x.axis(1)):\n        out[i, j] = x[i, j]\n")
    assert "^(%i:index, %j:index)" in text


def test_names_bound_must_match_the_domains_p1():
    d = diagnostic("@intent.kernel\ndef k(x: f32[R, C], out: mut f32[R, C]):\n"
                   "    for i, j, l in I.parallel(x.axis(0), x.axis(1)):\n        pass\n")
    assert (d.rule, d.message) == ("P1", "I.parallel over 2 domains binds 1 or 2 names, not 3")


def test_assigning_an_outer_name_inside_is_a_loop_carried_value_p2():
    d = diagnostic(HEAD + "    total = 0.0\n    for i in I.parallel(x.axis(0)):\n        total = total + x[i]\n")
    assert d.rule == "P2"
    assert d.message == "'total' is defined outside I.parallel and assigned inside it: a loop-carried value"


def test_a_new_local_name_inside_is_fine_p2():
    text = kir(HEAD + "    for i in I.parallel(x.axis(0)):\n        t = x[i] * 2.0\n        out[i] = t\n")
    assert "%t:f32 = mul(" in text


def test_an_ordered_loop_may_carry_what_a_parallel_one_may_not_p2_o2():
    text = kir(HEAD + "    total = 0.0\n    for i in x.axis(0):\n        total = total + x[i]\n    out[0] = total\n")
    assert "%total.4:f32 = for(%3, %total) {" in text


def test_break_is_illegal_in_a_parallel_loop_p4():
    d = diagnostic(HEAD + "    for i in I.parallel(x.axis(0)):\n        if x[i] > 0.0:\n            break\n"
                   "        out[i] = x[i]\n")
    assert (d.rule, d.message) == ("P4", "'break' is illegal inside I.parallel: points are unordered")


def test_return_is_illegal_in_a_parallel_loop_p4():
    d = diagnostic("@intent.fn\ndef h(x: f32[N]) -> f32:\n    for i in I.parallel(x.axis(0)):\n"
                   "        return x[i]\n    return 0.0\n\n" + HEAD + "    pass\n")
    assert (d.rule, d.message) == ("P4", "'return' is illegal inside I.parallel: it would stop other points")


def test_continue_skips_one_point_p4():
    text = kir(HEAD + "    for i in I.parallel(x.axis(0)):\n        if x[i] > 0.0:\n            continue\n"
               "        out[i] = x[i]\n")
    assert "parallel(" in text and "if(" in text


def test_two_writes_of_one_element_by_two_points_are_reported_at_the_later_write_p3():
    d = diagnostic("@intent.kernel\ndef k(x: f32[N], out: mut f32[M]):\n    for i in I.parallel(x.axis(0)):\n"
                   "        out[i] = x[i]\n        out[i + 1] = x[i]\n")
    assert d.rule == "P3" and d.span.line == 7
    assert d.message == "data race on 'out': point (i - 1) writes the element that point (i) writes at line 6"
