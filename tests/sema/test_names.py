"""Name resolution (to_kir.py, signatures.py, statements.py, expressions.py).

S1: an extent name is one shape value, bound where it first appears and checked equal
at every later appearance; O1: a name assigned on one branch only is not visible after
the ``if``; R4: helpers take no ``mut`` parameter. Names of parameters and extents are
read-only, helpers may be called before their definition (signatures are read first).
"""
from __future__ import annotations

import pytest
from sema_programs import diagnostic, kir, lines

from intentc.diagnostics import CompileError
from intentc.parse import parse_source
from intentc.sema import build_module


def test_an_extent_name_is_the_first_dim_and_later_uses_are_checked_s1():
    text = lines(kir("@intent.kernel\ndef k(x: f32[N], y: f32[N], out: mut f32[N]):\n    pass\n"))
    assert '%N:index = dim(%x) {"axis": 0}' in text
    assert ('assert_eq(%0, %N) {"rule": "S1", "what": "extent N: y.shape[0] = %lld but x.shape[0] = %lld"}'
            in text)
    assert sum(line.startswith("assert_eq") for line in text) == 2


def test_an_extent_name_is_a_readable_index_value_s1():
    text = kir("@intent.kernel\ndef k(x: f32[N], out: mut i64[1]):\n    out[0] = I.cast(N, i64)\n")
    assert "cast(%N)" in text


def test_an_extent_cannot_be_assigned():
    d = diagnostic("@intent.kernel\ndef k(x: f32[N]):\n    N = 3\n")
    assert d.message == "cannot assign to 'N': it is an extent"


def test_a_parameter_cannot_be_assigned():
    d = diagnostic("@intent.kernel\ndef k(a: f32, x: f32[N]):\n    a = 1.0\n")
    assert d.message == "cannot assign to 'a': it is a parameter"


def test_an_extent_name_that_is_also_a_parameter_name_s1():
    d = diagnostic("@intent.kernel\ndef k(N: i64, x: f32[N]):\n    pass\n")
    assert (d.rule, d.message) == ("S1", "extent name 'N' is also a parameter name")


def test_undefined_name():
    d = diagnostic("@intent.kernel\ndef k(x: f32[N], out: mut f32[N]):\n    out[0] = z\n")
    assert d.message == "undefined name 'z'"


def test_a_name_assigned_on_one_branch_is_local_to_it_o1():
    d = diagnostic("@intent.kernel\ndef k(c: bool, out: mut i64[1]):\n"
                   "    if c:\n        t = 1\n    out[0] = t\n")
    assert d.message == "undefined name 't'"


def test_a_name_assigned_on_both_branches_is_yielded_by_the_if_o1():
    text = kir("@intent.kernel\ndef k(c: bool, out: mut i64[1]):\n"
               "    if c:\n        t = 1\n    else:\n        t = 2\n    out[0] = t\n")
    assert "%t:i64 = if(%c) {" in text
    assert "store(%out, %4, %t)" in text


def test_a_helper_may_be_called_before_its_definition():
    text = kir("@intent.kernel\ndef k(x: f32[N], out: mut f32[N]):\n    for i in x.axis(0):\n"
               "        out[i] = twice(x[i])\n\n@intent.fn\ndef twice(v: f32) -> f32:\n    return v + v\n")
    assert '%5:f32 = call(%4) {"callee": "twice"}' in text
    assert "fn @twice(%v: f32) -> (f32) {" in text


def test_helpers_take_no_mut_parameter_r4():
    d = diagnostic("@intent.fn\ndef h(x: mut f32[N]) -> f32:\n    return 1.0\n\n"
                   "@intent.kernel\ndef k(x: f32[N]):\n    pass\n")
    assert (d.rule, d.message) == ("R4", "helpers are pure: a @intent.fn cannot take a 'mut' parameter")


def test_a_function_defined_twice():
    d = diagnostic("@intent.kernel\ndef k(x: f32[N]):\n    pass\n\n@intent.kernel\ndef k(x: f32[N]):\n    pass\n")
    assert d.message == "'k' is defined twice (first at line 4)"


def test_the_builtins_are_imported_as_i():
    tree = parse_source("import intent as J\n\n@intent.kernel\ndef k(x: f32[N]):\n    pass\n", "t.intent")
    with pytest.raises(CompileError) as caught:
        build_module(tree, "t")
    assert caught.value.diagnostics[0].message == "the builtins are imported as I, not as J"
    assert "import intent as I" in caught.value.diagnostics[0].hint
