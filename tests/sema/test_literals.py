"""Types of literals (values.py) and constant folding (folding.py).

A literal has no dtype until an operation gives it one: it adopts its partner's dtype,
a name bound to a lone literal gets the default (i64, f32, bool), and a value that does
not fit the dtype is a diagnostic (D3: the numeric behaviour is the compiler's, never a
target's). Two literals fold with exact arithmetic; a result no dtype could hold is a
diagnostic. MX values are storage: no literal is an MX value (T4, mx.py).
"""
from __future__ import annotations

import pytest
from sema_programs import diagnostic, kir, lines

from intentc.diagnostics import CompileError
from intentc.kir.types import DTYPES
from intentc.sema.folding import MAX_CONST_BITS, fold_binary, fold_compare, fold_extremum, fold_unary
from intentc.sema.values import Literal, literal_as

KERNEL = "@intent.kernel\ndef k(x: {t}[N], out: mut {t}[N]):\n    for i in x.axis(0):\n        out[i] = {e}\n"


def lit(value):
    return Literal(value, None)


@pytest.mark.parametrize("dtype, value", [("i32", "1"), ("u8", "1"), ("f64", "1.0"), ("f16", "1.0")])
def test_a_literal_adopts_its_partners_dtype(dtype, value):
    text = lines(kir(KERNEL.format(t=dtype, e="x[i] + 1")))
    assert f'%5:{dtype} = const() {{"value": {value}}}' in text
    assert f"%6:{dtype} = add(%4, %5)" in text


@pytest.mark.parametrize("value, dtype", [("7", "i64"), ("7.5", "f32"), ("True", "bool")])
def test_a_lone_literal_gets_the_default_dtype(value, dtype):
    text = kir(f"@intent.kernel\ndef k(out: mut {dtype}[1]):\n    t = {value}\n    out[0] = t\n")
    assert f"%t:{dtype} = const()" in text


def test_a_literal_that_does_not_fit_its_dtype_d3():
    d = diagnostic(KERNEL.format(t="u8", e="x[i] + 300"))
    assert d.message == "the literal 300 does not fit in u8 (range 0..255)"


def test_a_fractional_literal_is_not_an_integer():
    d = diagnostic(KERNEL.format(t="i32", e="x[i] + 1.5"))
    assert d.message == "the literal 1.5 is not an integer, but i32 is expected"


def test_a_bool_literal_is_not_a_number():
    with pytest.raises(CompileError) as caught:
        literal_as(lit(True), DTYPES["i32"])
    assert caught.value.diagnostics[0].message == "a bool literal cannot be used as i32"


def test_no_literal_is_an_mx_value_t4():
    with pytest.raises(CompileError) as caught:
        literal_as(lit(1.0), DTYPES["f8e4m3"])
    assert caught.value.diagnostics[0].message == "a literal cannot be used as f8e4m3"


def test_literals_fold_exactly():
    assert fold_binary("**", lit(2), lit(64), None).value == 1 << 64
    assert fold_binary("-", fold_binary("**", lit(2), lit(63), None), lit(1), None).value == (1 << 63) - 1
    assert fold_binary("/", lit(1), lit(4), None).value == 0.25
    assert fold_binary("//", lit(-7), lit(2), None).value == -4
    assert fold_binary("&", lit(True), lit(False), None).value is False
    assert fold_unary("-", lit(3), None).value == -3
    assert fold_unary("~", lit(0), None).value == -1
    assert fold_unary("not", lit(False), None).value is True
    assert fold_compare("<=", lit(2), lit(2.5), None).value is True
    assert fold_extremum("minimum", lit(3), lit(-1), None).value == -1


def test_a_folded_literal_still_has_to_fit_its_dtype():
    text = kir(KERNEL.format(t="i64", e="x[i] + ((2 ** 62 - 1) * 2 + 1)"))
    assert '{"value": 9223372036854775807}' in text
    d = diagnostic(KERNEL.format(t="i64", e="x[i] + 2 ** 63"))
    assert d.message.startswith("the literal 9223372036854775808 does not fit in i64")


@pytest.mark.parametrize("op, a, b, message", [
    ("//", 1, 0, "division by zero in a constant expression"),
    ("**", 2, MAX_CONST_BITS + 1, "the constant expression '**' is too large for any dtype"),
    ("<<", 1, MAX_CONST_BITS + 1, "the constant expression '<<' is too large for any dtype"),
    ("+", True, 1, "'+' is not defined on bool literals"),
    ("&", 1.5, 1, "'&' needs integer operands"),
])
def test_folding_refuses(op, a, b, message):
    with pytest.raises(CompileError) as caught:
        fold_binary(op, lit(a), lit(b), None)
    assert caught.value.diagnostics[0].message == message
