"""Windows (sema/windows.py): views, reshapes and permutations of a `mut` tensor or a buffer
are written and read through their relation; slice assignment; the diagnostics of misuse."""
from __future__ import annotations

from sema_programs import diagnostic, kir

HEAD = "@intent.kernel\ndef k(x: f32[R, C], out: mut f32[R, C]):\n"


def test_a_write_through_a_row_view_is_a_store_into_the_tensor_m1_c4():
    text = kir(HEAD + "    for r in I.parallel(x.axis(0)):\n        o = out[r, :]\n        for c in o.axis(0):\n"
                      "            o[c] = x[r, c]\n")
    stores = [line.strip() for line in text.splitlines() if line.strip().startswith("store(")]
    assert len(stores) == 1 and stores[0].startswith("store(%out, %r, ")
    assert "of a view" not in text  # c ranges over the view's own axis: no check needed (D5)


def test_an_index_of_another_domain_is_checked_against_the_view_d5():
    text = kir(HEAD + "    o = out[1:R, 0]\n    for i in I.parallel(x.axis(0)):\n        o[i] = 1.0\n")
    assert "out of range [0, %lld) on axis 0 of a view" in text


def test_slice_assignment_is_one_parallel_store():
    text = kir(HEAD + "    out[1:R, :] = x[0:R - 1, :] + 1.0\n")
    assert text.count("parallel(") == 1 and text.count("store(%out") == 1


def test_slice_assignment_checks_the_value_s2():
    d = diagnostic("@intent.kernel\ndef k(x: f32[2, 3, 4], out: mut f32[3, 4]):\n    out[:, :] = x\n")
    assert d.rule == "S2" and "3 axes to a slice with 2" in d.message
    d = diagnostic("@intent.kernel\ndef k(x: f64[4], out: mut f32[3, 4]):\n    out[0, :] = x\n")
    assert "dtype mismatch" in d.message and "I.cast" in d.hint


def test_builtins_that_write_take_the_tensor_itself_m2():
    d = diagnostic(HEAD + "    o = out[0, :]\n    I.store(o, 0, 1.0)\n")
    assert d.rule == "M2" and "takes the tensor itself" in d.message and d.hint


def test_a_view_is_not_carried_by_a_loop_o2():
    d = diagnostic(HEAD + "    o = out[0, :]\n    for t in x.axis(0):\n        o = out[t, :]\n        o[0] = 1.0\n")
    assert d.rule == "O2" and "view" in d.message and "inside the loop" in d.hint


def test_a_view_of_a_read_only_parameter_names_it_m2():
    d = diagnostic(HEAD + "    t = x.transpose()\n    t[0, 0] = 1.0\n")
    assert d.rule == "M2" and "view of parameter 'x'" in d.message and "mut" in d.hint


def test_a_write_through_a_view_takes_scalar_indices_m1():
    d = diagnostic(HEAD + "    o = out[0, :]\n    o[I.indices(x.axis(1))] = 1.0\n")
    assert d.rule == "M1" and "scalar indices" in d.message and "I.scatter" in d.hint
    d = diagnostic(HEAD + "    o = out[0, :]\n    o[0, 1] = 1.0\n")
    assert "1 axis but 2 indices" in d.message
