"""The builtin table (builtins.py): one name -> handler map that the expression builder
dispatches through and the "unknown builtin" hint lists.

R0 and L2 name forms that are deliberately not builtins (explained, not listed); P1:
``I.parallel`` is a builtin that only a ``for`` loop iterates.
"""
from __future__ import annotations

import inspect

import pytest
from sema_programs import diagnostic, kir

from intentc.sema import (builtins, contract, domains, math_builtins, memory, pointwise, regions, relations, scaled,
                          structured)
from intentc.sema.builtins import BUILTINS, NOT_BUILTINS, merge

FAMILIES = (pointwise, math_builtins, domains, relations, structured, regions, contract, scaled, memory)


def _call(expression: str) -> str:
    return f"@intent.kernel\ndef k(x: f32[N], out: mut f32[N]):\n    y = {expression}\n"


def test_the_table_is_the_union_of_the_families():
    names = set()
    for family in FAMILIES:
        assert set(family.BUILTINS) <= set(BUILTINS), family.__name__
        names |= set(family.BUILTINS)
    assert set(BUILTINS) == names | {"parallel"}
    assert not set(NOT_BUILTINS) & set(BUILTINS)


def test_every_handler_takes_builder_name_and_call():
    for name, handler in {**BUILTINS, **NOT_BUILTINS}.items():
        assert len(inspect.signature(handler).parameters) == 3, name


def test_a_name_claimed_twice_is_refused():
    with pytest.raises(ValueError, match="builtin I.sum is defined twice"):
        merge({"sum": object()}, {"sum": object()})


def test_the_hint_lists_exactly_the_table():
    d = diagnostic(_call("I.sumx(x)"))
    assert d.message == "unknown builtin I.sumx"
    listed = d.hint.split("the builtins are ", 1)[1].removesuffix(" (docs/language.md)").split(", ")
    assert listed == [f"I.{name}" for name in sorted(BUILTINS)]
    assert d.hint.startswith("did you mean I.sum? ")


def test_keywords_of_an_unknown_name_are_reported_first():
    assert diagnostic(_call("I.nothing(x, axis=0)")).message == "I.nothing takes no keyword arguments"


@pytest.mark.parametrize("name, rule", [("state_stream", "R0"), ("partition", "L2")])
def test_forms_that_are_not_builtins_are_explained_r0_l2(name, rule):
    d = diagnostic(_call(f"I.{name}(x)"))
    assert d.rule == rule and d.message.startswith(f"there is no I.{name}")
    assert f"I.{name}" not in d.hint


def test_parallel_is_only_iterated_by_a_for_loop_p1():
    d = diagnostic(_call("I.parallel(x.axis(0))"))
    assert (d.rule, d.message) == ("P1", "I.parallel(...) is only iterated by a for loop")


@pytest.mark.parametrize("expression, message", [
    ("I.exp(x, x)", "I.exp takes 1 arguments, got 2"),
    ("I.exp(x, axis=0)", "I.exp takes no keyword arguments"),
    ("I.where(x > 0, x)", "I.where takes 3 arguments, got 2"),
    ("I.transpose(1.0)", "I.transpose takes a tensor first"),
    ("I.exp(I.cast(x, i32))", "I.exp needs a float argument, got i32"),
])
def test_handlers_check_their_own_arguments(expression, message):
    assert diagnostic(_call(expression)).message == message


def test_dispatch_reaches_each_family():
    text = kir("@intent.kernel\ndef k(x: f32[N], out: mut f32[N]):\n"
               "    a = I.exp(x)\n    s = I.sum(a)\n    c = I.cumsum(x)\n    t = I.transpose(x)\n"
               "    d = I.indices(I.domain(0, 4))\n    out[0] = I.load(x, 0) + s\n")
    for op in ("exp(", "reduce(", "scan(", "permute(", "indices(", "domain("):
        assert op in text, op
    assert builtins.call_builtin.__module__ == "intentc.sema.builtins"
