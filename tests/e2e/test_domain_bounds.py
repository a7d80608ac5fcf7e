"""Domain lengths and iteration are exact for every 64-bit bound (D1, D3, D4): the span
``end - begin`` can exceed 2^63 - 1 and is counted without wrapping, on both sides; a domain
of more than 2^63 - 1 members (only steps 1 and 2 can have one) is refused where it is made."""
from __future__ import annotations

import numpy as np
import pytest

import intentc
from intentc.base.status import E_DOMAIN
from intentc.driver import build, frontend

SOURCE = """
import intent as I

@intent.kernel
def length(a: i64, b: i64, s: i64, out: mut i64[1]):
    out[0] = len(I.domain(a, b, s))

@intent.kernel
def count(a: i64, b: i64, s: i64, out: mut i64[2]):
    d = I.domain(a, b, s)
    out[0] = len(d)
    n = 0
    for i in d:
        n = n + 1
    out[1] = n

@intent.kernel
def members(a: i64, b: i64, s: i64, lo: i64, hi: i64, out: mut i64[4]):
    d = I.domain(a, b, s)[lo:hi]
    out[0] = len(d)
    k = 0
    for i in d:
        if k < 3:
            out[1 + k] = i
        k = k + 1

@intent.kernel
def folded(out: mut i64[1]):
    out[0] = len(I.domain(-2**63, 2**63 - 1, 2**62))
"""
LOW, HIGH = -2 ** 63, 2 ** 63 - 1


@pytest.fixture(scope="module")
def sides(tmp_path_factory):
    folder = tmp_path_factory.mktemp("domains")
    (folder / "d.intent").write_text(SOURCE)
    build(folder / "d.intent", folder / "d.so")
    compiled, module = intentc.load(folder / "d.so"), frontend(SOURCE, "d.intent")
    return [("compiled", lambda name, *a: getattr(compiled, name)(*a)),
            ("interpreted", lambda name, *a: intentc.interpret(module, name, *a))]


def exact_length(a, b, s):
    return max(0, -((a - b) // s))


@pytest.mark.parametrize("a,b,s", [(LOW, HIGH, 2 ** 62), (LOW, HIGH, HIGH), (LOW, HIGH, 3), (0, 10, 3), (-3, 4, 2),
                                   (5, 1, 2), (5, LOW, 1), (HIGH, LOW, 7), (LOW, LOW + 5, 1), (-1, HIGH, 2 ** 61)])
def test_length_and_iteration_count_are_exact(sides, a, b, s):
    want = exact_length(a, b, s)
    for side, call in sides:
        out = np.zeros(1, np.int64)
        call("length", a, b, s, out)
        assert out.tolist() == [want], side
        if want <= 10 ** 4:  # the loop runs exactly that many times
            out = np.zeros(2, np.int64)
            call("count", a, b, s, out)
            assert out.tolist() == [want, want], side


@pytest.mark.parametrize("a,b,s", [(LOW, 0, 1), (LOW, HIGH, 1), (LOW, HIGH, 2), (-1, HIGH, 1)])
def test_more_members_than_an_index_counts_is_refused(sides, a, b, s):
    for side, call in sides:
        out = np.zeros(2, np.int64)
        with pytest.raises(intentc.KernelError) as info:
            call("count", a, b, s, out)
        assert info.value.code == E_DOMAIN and "more than 2^63 - 1 members" in str(info.value), side
        assert "d.intent:10:" in str(info.value) and not out.any(), side


@pytest.mark.parametrize("lo,hi", [(LOW, HIGH), (LOW, LOW + 1), (0, HIGH), (2 ** 62, 2 ** 62 + 1), (HIGH, HIGH),
                                   (-2 ** 62 + 1, 2 ** 62)])
def test_subregions_of_a_domain_spanning_all_64_bits(sides, lo, hi):
    a, b, s = LOW, HIGH, 2 ** 62  # members -2^63, -2^62, 0, 2^62
    source = [a + k * s for k in range(exact_length(a, b, s))]
    inside = [m for m in source if lo <= m < hi]
    for side, call in sides:
        out = np.zeros(4, np.int64)
        call("members", a, b, s, lo, hi, out)
        assert out[0] == len(inside), side
        assert out[1:1 + min(3, len(inside))].tolist() == inside[:3], side


def test_a_folded_length(sides):
    for side, call in sides:
        out = np.zeros(1, np.int64)
        call("folded", out)
        assert out.tolist() == [4], side
