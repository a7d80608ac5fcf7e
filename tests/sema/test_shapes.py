"""Shapes and broadcasting (shapes.py, the S rules of the logical program).

S1: every dynamic extent is a runtime shape value with its own identity; two unknown
extents are equal only when they are the same value. S2: pointwise broadcasting aligns
trailing axes and becomes explicit ``broadcast`` ops with their axis maps (C4); extents
must be equal or one of them 1. S3: a condition that depends on runtime extents stays a
runtime check (``bcast_extent``); S4/S5 keep the element count and the permutation.
"""
from __future__ import annotations

from sema_programs import diagnostic, kir, lines

from intentc.kir.core import Value
from intentc.kir.types import INDEX
from intentc.sema.shapes import same_extent, static_shape

HEAD = "@intent.kernel\ndef k(x: f32[N], y: f32[M], z: f32[4], m: f32[R, N], out: mut f32[1]):\n"


def test_two_dynamic_extents_are_equal_only_when_they_are_one_value_s1():
    n, m = Value(INDEX, "N"), Value(INDEX, "M")
    assert same_extent(n, n) and not same_extent(n, m)
    assert same_extent(4, 4) and not same_extent(4, 5) and not same_extent(4, n)
    assert static_shape([4, n, 0]) == (4, None, 0)


def test_a_literal_extent_is_checked_at_the_call_s1():
    text = lines(kir(HEAD + "    pass\n"))
    assert 'assert_eq(%0, %1) {"rule": "S1", "what": "z.shape[0] = %lld but the signature declares %lld"}' in text


def test_unrelated_dynamic_extents_broadcast_with_a_runtime_check_s2_s3():
    text = lines(kir(HEAD + "    a = x + y\n"))
    assert '%bext:index = bcast_extent(%N, %M) {"what": "broadcast of N and M"}' in text
    assert '%5:tensor<f32[?]> = broadcast(%x, %bext) {"map": [0]}' in text
    assert '%6:tensor<f32[?]> = broadcast(%y, %bext) {"map": [0]}' in text
    assert "%a:tensor<f32[?]> = add(%5, %6)" in text


def test_one_extent_name_needs_no_broadcast_s1():
    text = kir(HEAD + "    a = x + x\n")
    assert "bcast_extent" not in text and "broadcast(" not in text
    assert "%a:tensor<f32[?]> = add(%x, %x)" in text


def test_a_scalar_broadcasts_with_an_empty_axis_map_s2():
    text = lines(kir(HEAD + "    b = z + 1.0\n"))
    assert '%7:tensor<f32[4]> = broadcast(%5, %6) {"map": []}' in text
    assert "%b:tensor<f32[4]> = add(%z, %7)" in text


def test_trailing_axes_align_s2():
    text = lines(kir(HEAD + "    c = m + x\n"))
    assert '%5:tensor<f32[?, ?]> = broadcast(%x, %R, %N) {"map": [1]}' in text
    assert "%c:tensor<f32[?, ?]> = add(%m, %5)" in text


def test_static_extents_that_differ_and_are_not_1_are_a_diagnostic_s2():
    d = diagnostic("@intent.kernel\ndef k(a: f32[3], b: f32[4]):\n    c = a + b\n")
    assert d.rule == "S2"
    assert d.message.startswith("incompatible broadcast: 'a' has extent 3 but 'b' has extent 4 on axis -1")


def test_reshape_keeps_the_element_count_s4():
    d = diagnostic("@intent.kernel\ndef k(a: f32[6]):\n    b = I.reshape(a, [4, 2])\n")
    assert (d.rule, d.message) == ("S4", "reshape keeps the element count: 6 elements cannot become 8")


def test_permute_needs_a_permutation_s5():
    d = diagnostic("@intent.kernel\ndef k(a: f32[2, 3]):\n    b = I.permute(a, [0, 0])\n")
    assert (d.rule, d.message) == ("S5", "[0, 0] is not a permutation of the 2 axes")


def test_transpose_composes_the_permutation_s5():
    text = kir("@intent.kernel\ndef k(a: f32[R, C]):\n    b = a.transpose()\n")
    assert '%b:tensor<f32[?, ?]> = permute(%a) {"perm": [1, 0]}' in text
