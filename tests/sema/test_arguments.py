"""The shared argument helpers (arguments.py): one wording per mistake for every builtin.

The diagnostics they give are cited by the rule of the builtin that calls them: T3
(``I.contract``), T1 (reductions), M1 / M6 (memory), G1 (ragged relations).
"""
from __future__ import annotations

import pytest
from sema_programs import call_node, diagnostic

from intentc.diagnostics import CompileError
from intentc.sema.arguments import arity, flag, keywords, no_keywords


def _error(function, *args):
    with pytest.raises(CompileError) as caught:
        function(*args)
    return caught.value.diagnostics[0]


def test_keywords_by_name_in_the_order_given():
    node = call_node("I.f(1, b=2, a=3)")
    assert list(keywords(node, ("a", "b"), "f")) == ["b", "a"]


def test_an_unknown_keyword_names_the_builtin_and_lists_the_accepted():
    d = _error(keywords, call_node("I.f(1, c=2)"), ("b", "a"), "f", "T3")
    assert (d.message, d.rule, d.hint) == ("I.f has no argument 'c'", "T3", "accepted: b, a")
    assert d.span.text == "c=2"


def test_without_a_name_the_keyword_is_unexpected():
    d = _error(keywords, call_node("I.f(1, c=2)"), ("a",), None)
    assert (d.message, d.rule, d.hint) == ("unexpected argument 'c'", None, "accepted: a")


def test_no_accepted_keywords():
    d = _error(keywords, call_node("I.f(1, c=2)"), (), "f")
    assert d.hint == "accepted: no keyword arguments"


def test_arity_and_no_keywords():
    assert _error(arity, call_node("I.g(1, 2)"), 1).message == "I.g takes 1 arguments, got 2"
    arity(call_node("I.g(1, 2)"), 2)
    assert _error(no_keywords, "g", call_node("I.g(1, k=2)")).message == "I.g takes no keyword arguments"


def test_flag():
    assert flag(None, True) is True
    assert flag(call_node("I.f(False)").args[0], True) is False
    d = _error(flag, call_node("I.f(1)").args[0], False, "write e.g. unique=True")
    assert (d.message, d.hint) == ("expected True or False", "write e.g. unique=True")


@pytest.mark.parametrize("expression, rule, message, hint", [
    ("I.contract(\"i,i->\", x, x, foo=1)", None, "I.contract has no argument 'foo'", "accepted: acc"),
    ("I.sum(x, foo=1)", None, "unexpected argument 'foo'", "accepted: acc, axis, keepdims"),
    ("I.scaled_contract(x, x, x, x, foo=1)", "T4", "I.scaled_contract has no argument 'foo'",
     "accepted: acc, block"),
    ("I.contract(\"i,i->\", 1.0, x)", "T3", "the first operand of I.contract must be a tensor", None),
    ("I.gather(1.0, 0)", "M1", "the first argument of I.gather must be a tensor",
     "pass a tensor parameter, a logical buffer (I.buffer) or a tensor expression"),
    ("I.ragged(x.axis(0), x.axis(0), 1)", "G1", "the offsets of I.ragged must be a tensor",
     "pass a tensor parameter, a logical buffer (I.buffer) or a tensor expression"),
    ("I.scatter(out, x, x, unique=1)", None, "expected True or False", "write e.g. unique=True"),
    ("I.sum(x, keepdims=1)", None, "expected True or False", None),
])
def test_builtins_word_argument_mistakes_alike_t1_t3_t4_m1_g1(expression, rule, message, hint):
    d = diagnostic(f"@intent.kernel\ndef k(x: f32[N], out: mut f32[N]):\n    y = {expression}\n")
    assert (d.rule, d.message, d.hint) == (rule, message, hint)
