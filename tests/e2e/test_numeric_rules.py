"""The numeric rules (docs/language.md, the interpreter's docstring), for every dtype,
on edge values: compiled vs interpreter (the ``differential`` fixture) vs an
independent expectation written here in plain Python (and NumPy only to round a
float64 to a narrower float, once).

For each dtype one module holds a whole-tensor kernel per operation (``a OP b`` over
every pair of edge values). The interpreter also runs a scalar-path twin of each
(``out[i] = a[i] OP b[i]`` inside ``I.parallel``), which the compiled code lowers to the
same thing but the interpreter evaluates with its scalar rather than its array code.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import intentc
from intentc.kir.types import DTYPES

from conftest import FLOAT_ULPS, ulp_distance

INTS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "index"]
FLOATS = ["f16", "f32", "f64"]
NP = {"bool": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "index": np.int64,
      "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "f16": np.float16, "f32": np.float32,
      "f64": np.float64}
MANTISSA = {"f16": 11, "f32": 24, "f64": 53}

# Expressions as templates over the operands {a}, {b} (and {c} for I.where).
INT_BINARY = {"add": "{a} + {b}", "sub": "{a} - {b}", "mul": "{a} * {b}", "floordiv": "{a} // {b}",
              "mod": "{a} % {b}", "pow": "{a} ** {b}", "and": "{a} & {b}", "or": "{a} | {b}", "xor": "{a} ^ {b}",
              "shl": "{a} << {b}", "shr": "{a} >> {b}", "min": "I.minimum({a}, {b})", "max": "I.maximum({a}, {b})"}
FLOAT_BINARY = {"add": "{a} + {b}", "sub": "{a} - {b}", "mul": "{a} * {b}", "div": "{a} / {b}",
                "floordiv": "{a} // {b}", "mod": "{a} % {b}", "pow": "{a} ** {b}", "min": "I.minimum({a}, {b})",
                "max": "I.maximum({a}, {b})"}
COMPARE = {"lt": "{a} < {b}", "le": "{a} <= {b}", "gt": "{a} > {b}", "ge": "{a} >= {b}", "eq": "{a} == {b}",
           "ne": "{a} != {b}"}
INT_UNARY = {"neg": "-{a}", "not": "~{a}", "abs": "I.abs({a})"}
FLOAT_UNARY = {"neg": "-{a}", "abs": "I.abs({a})", "sqrt": "I.sqrt({a})", "exp": "I.exp({a})", "log": "I.log({a})",
               "tanh": "I.tanh({a})"}
BOOL_BINARY = {"and": "{a} & {b}", "or": "{a} | {b}", "xor": "{a} ^ {b}"}
# Compiled vs interpreted: bit for bit, except float ** (FLOAT_UNARY, docs/testing.md).
TRANSCENDENTAL = {"pow"}
# vs the expectation (float64 rounded to the dtype): the documented accuracy of intentc's
# exp, log and tanh (docs/language.md), one more ULP in f64 where the float64 reference
# itself is not correctly rounded; ** within FLOAT_ULPS.
ACCURACY = {"exp": 1, "log": 1, "tanh": 2}


def expectation_ulps(name: str, dt: str) -> int:
    if name in ACCURACY and dt in FLOATS:
        return ACCURACY[name] + (dt == "f64")
    return FLOAT_ULPS[dt] if name in TRANSCENDENTAL and dt in FLOATS else 0


# ---------------------------------------------------------------------------------------
# edge values
# ---------------------------------------------------------------------------------------
def int_range(dt: str) -> tuple[int, int]:
    d = DTYPES[dt]
    if d.is_signed:
        return -(1 << (d.bits - 1)), (1 << (d.bits - 1)) - 1
    return 0, (1 << d.bits) - 1


def int_edges(dt: str) -> list[int]:
    low, high = int_range(dt)
    bits = DTYPES[dt].bits
    values = [low, low + 1, -100, -7, -2, -1, 0, 1, 2, 3, 7, bits - 1, bits, bits + 1, 100, high // 2,
              high // 2 + 1, high - 1, high]
    return sorted({v for v in values if low <= v <= high})


def float_edges(dt: str) -> list[float]:
    info = np.finfo(NP[dt])
    third = float(NP[dt](1 / 3))
    big = float(2 ** MANTISSA[dt] + 2)
    values = [0.0, -0.0, 1.0, -1.0, 0.5, -1.5, 2.5, 3.0, -7.0, float(NP[dt](1e-3)), 100.25, float(info.max),
              -float(info.max), float(info.smallest_subnormal), float(info.smallest_normal), math.inf, -math.inf,
              math.nan, third, big, -big]
    return values


def pairs(values):
    a, b = zip(*itertools.product(values, values))
    return list(a), list(b)


# ---------------------------------------------------------------------------------------
# the independent expectation
# ---------------------------------------------------------------------------------------
def wrap(v: int, dt: str) -> int:
    low, high = int_range(dt)
    span = high - low + 1
    return (v - low) % span + low


def ref_int_binary(op: str, dt: str, a: int, b: int) -> int:
    bits = DTYPES[dt].bits
    signed = DTYPES[dt].is_signed
    if op == "add":
        return wrap(a + b, dt)
    if op == "sub":
        return wrap(a - b, dt)
    if op == "mul":
        return wrap(a * b, dt)
    if op == "floordiv":
        return 0 if b == 0 else wrap(a // b, dt)
    if op == "mod":
        if b == 0:
            return a
        return a - b * (a // b)
    if op == "pow":
        if b < 0:
            return {1: 1, -1: -1 if b % 2 else 1}.get(a, 0)
        result, base, e = 1, a, b
        while e:  # by squaring, wrapping at every step
            if e & 1:
                result = wrap(result * base, dt)
            base = wrap(base * base, dt)
            e >>= 1
        return result
    if op in ("and", "or", "xor"):
        mask = (1 << bits) - 1
        ua, ub = a & mask, b & mask
        return wrap({"and": ua & ub, "or": ua | ub, "xor": ua ^ ub}[op], dt)
    if op == "shl":
        return wrap(a * 2 ** b, dt) if 0 <= b < bits else 0
    if op == "shr":
        if not 0 <= b < bits:
            return -1 if signed and a < 0 else 0
        return a >> b
    if op == "min":
        return a if a <= b else b
    if op == "max":
        return a if a >= b else b
    raise KeyError(op)


def ref_int_unary(op: str, dt: str, a: int) -> int:
    if op == "neg":
        return wrap(-a, dt)
    if op == "not":
        return wrap(-a - 1, dt)
    if op == "abs":
        return wrap(-a if a < 0 else a, dt)
    raise KeyError(op)


def ref_compare(op: str, a, b) -> bool:
    return {"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b, "eq": a == b, "ne": a != b}[op]


def to_dtype(x: float, dt: str) -> float:
    """``x`` (a float64) rounded once to ``dt``."""
    with np.errstate(all="ignore"):
        return float(NP[dt](x))


def ref_float_binary(op: str, dt: str, a: float, b: float) -> float:
    with np.errstate(all="ignore"):
        x, y = np.float64(a), np.float64(b)
        if op == "add":
            return to_dtype(x + y, dt)
        if op == "sub":
            return to_dtype(x - y, dt)
        if op == "mul":
            return to_dtype(x * y, dt)
        if op == "div":
            return to_dtype(x / y, dt)
        if op == "floordiv":
            q = to_dtype(x / y, dt)
            return float(math.floor(q)) if math.isfinite(q) and q != 0 else q
        if op == "pow":
            return to_dtype(x ** y, dt)
    if op == "mod":  # Python's float % (the divisor's sign), NaN where Python would raise
        if b == 0 or math.isnan(a) or math.isnan(b) or math.isinf(a):
            return math.nan
        return to_dtype(a % b, dt)
    if op in ("min", "max"):
        if math.isnan(a) or math.isnan(b):
            return math.nan
        if a == b == 0:
            negative = [v for v in (a, b) if math.copysign(1, v) < 0]
            if op == "min":
                return -0.0 if negative else 0.0
            return 0.0 if len(negative) < 2 else -0.0
        return min(a, b) if op == "min" else max(a, b)
    raise KeyError(op)


def ref_float_unary(op: str, dt: str, a: float) -> float:
    if op == "neg":
        return -a
    if op == "abs":
        return abs(a)
    with np.errstate(all="ignore"):
        return to_dtype({"sqrt": np.sqrt, "exp": np.exp, "log": np.log, "tanh": np.tanh}[op](np.float64(a)), dt)


def ref_cast(value, src: str, dst: str):
    if dst == "bool":
        return bool(value != 0)  # NaN != 0 is True
    if src == "bool":
        return float(value) if dst in FLOATS else int(value)
    if src in FLOATS and dst in FLOATS:
        return to_dtype(value, dst)
    if src in FLOATS:
        if math.isnan(value):
            return 0
        low, high = int_range(dst)
        if math.isinf(value):
            return high if value > 0 else low
        return max(low, min(high, math.trunc(value)))
    if dst in FLOATS:
        return int_to_float_ref(value, dst)
    return wrap(value, dst)


def int_to_float_ref(n: int, dst: str) -> float:
    """Round ``n`` to ``dst`` once, ties to even: from the two neighbours that differ only
    in the last place, pick the nearer (exact integer arithmetic)."""
    if n == 0:
        return 0.0
    sign, m = (-1 if n < 0 else 1), abs(n)
    p = MANTISSA[dst]
    shift = max(0, m.bit_length() - p)
    low = (m >> shift) << shift
    high = low + (1 << shift)
    if m - low < high - m or (m - low == high - m and ((low >> shift) & 1) == 0):
        rounded = low
    else:
        rounded = high
    return to_dtype(sign * float(rounded), dst)


# ---------------------------------------------------------------------------------------
# sources
# ---------------------------------------------------------------------------------------
def tensor_kernel(name: str, params: dict[str, str], result: str, template: str) -> str:
    sig = ", ".join(f"{p}: {t}[N]" for p, t in params.items())
    expr = template.format(**{p: p for p in params})
    return f"@intent.kernel\ndef {name}({sig}) -> {result}[N]:\n    return {expr}\n"


def scalar_kernel(name: str, params: dict[str, str], result: str, template: str) -> str:
    sig = ", ".join(f"{p}: {t}[N]" for p, t in params.items())
    element = template.format(**{p: f"{p}[i]" for p in params})
    return (f"@intent.kernel\ndef {name}({sig}, out: mut {result}[N]):\n"
            f"    for i in I.parallel({next(iter(params))}.axis(0)):\n        out[i] = {element}\n")


def operations(dt: str) -> list[tuple[str, str, str, int]]:
    """(name, expression, result dtype, arity) of every operation on ``dt``."""
    ops = []
    if dt == "bool":
        ops += [(k, e, "bool", 2) for k, e in BOOL_BINARY.items()]
        ops += [(k, COMPARE[k], "bool", 2) for k in ("eq", "ne")]
        ops += [("not", "~{a}", "bool", 1)]
    elif dt in FLOATS:
        ops += [(k, e, dt, 2) for k, e in FLOAT_BINARY.items()]
        ops += [(k, e, "bool", 2) for k, e in COMPARE.items()]
        ops += [(k, e, dt, 1) for k, e in FLOAT_UNARY.items()]
    else:
        ops += [(k, e, dt, 2) for k, e in INT_BINARY.items()]
        ops += [(k, e, "bool", 2) for k, e in COMPARE.items()]
        ops += [(k, e, dt, 1) for k, e in INT_UNARY.items()]
    ops.append(("where", "I.where({c}, {a}, {b})", dt, 3))
    return ops


def module_source(dt: str, scalar: bool) -> str:
    parts = ["import intent as I\n"]
    for name, expr, result, arity in operations(dt):
        params = {"a": dt} if arity == 1 else {"a": dt, "b": dt} if arity == 2 else {"c": "bool", "a": dt, "b": dt}
        make = scalar_kernel if scalar else tensor_kernel
        parts.append(make(f"{name}_{dt}", params, result, expr))
    return "\n".join(parts)


def edges(dt: str):
    if dt == "bool":
        return [False, True]
    return float_edges(dt) if dt in FLOATS else int_edges(dt)


def expected(op: str, dt: str, result: str, args: list) -> list:
    out = []
    for values in zip(*args):
        if op == "where":
            c, a, b = values
            out.append(a if c else b)
        elif dt == "bool":
            a, b = (values + (None,))[:2]
            out.append({"and": a and b, "or": a or b, "xor": a != b, "eq": a == b, "ne": a != b,
                        "not": not a}[op])
        elif op in COMPARE:
            out.append(ref_compare(op, *values))
        elif dt in FLOATS:
            out.append(ref_float_unary(op, dt, *values) if len(values) == 1 else ref_float_binary(op, dt, *values))
        else:
            out.append(ref_int_unary(op, dt, *values) if len(values) == 1 else ref_int_binary(op, dt, *values))
    return out


def assert_matches(got: np.ndarray, want: list, what: str, ulps: int = 0) -> None:
    want = np.array(want, dtype=got.dtype)
    if got.dtype.kind != "f":
        bad = np.flatnonzero(got != want)
    elif ulps:
        bad = np.flatnonzero((np.isnan(got) != np.isnan(want)) | (ulp_distance(got, want) > ulps))
    else:
        same = (np.isnan(got) & np.isnan(want)) | ((got == want) & (np.signbit(got) == np.signbit(want)))
        bad = np.flatnonzero(~same)
    assert not bad.size, f"{what}: " + "; ".join(f"#{k}: got {got[k]!r}, expected {want[k]!r}" for k in bad[:6])


def inputs(op: str, dt: str, arity: int) -> list[np.ndarray]:
    values = edges(dt)
    if arity == 1:
        return [np.array(values, NP[dt])]
    a, b = pairs(values)
    arrays = [np.array(a, NP[dt]), np.array(b, NP[dt])]
    if arity == 3:
        cond = np.array([(k * 7) % 3 == 0 for k in range(len(a))])
        arrays = [cond] + arrays
    return arrays


@pytest.mark.parametrize("dt", INTS + FLOATS + ["bool"])
def test_operations(differential, dt):
    """Every operation on ``dt``: compiled == interpreted (array and scalar path) ==
    the expectation (within the documented ULP bound for exp, log and float **)."""
    tensor_src, scalar_src = module_source(dt, False), module_source(dt, True)
    failures = []
    for name, _expr, result, arity in operations(dt):
        kernel = f"{name}_{dt}"
        args = inputs(name, dt, arity)
        try:
            run = differential(tensor_src, kernel, *args)
            assert run.error is None, f"{kernel}: {run.error}"
            got = run.result
            assert_matches(got, expected(name, dt, result, [a.tolist() for a in args]), f"{kernel} vs expectation",
                           expectation_ulps(name, dt))
            out = np.zeros(len(args[0]), NP[result])
            intentc.interpret(scalar_src, kernel, *args, out)
            assert_matches(out, got.tolist(), f"{kernel}: interpreter scalar path vs compiled",
                           FLOAT_ULPS[dt] if name in TRANSCENDENTAL and dt in FLOATS else 0)
        except AssertionError as exc:
            failures.append(str(exc).splitlines()[0])
    assert not failures, "\n".join(failures)


# ---------------------------------------------------------------------------------------
# casts
# ---------------------------------------------------------------------------------------
ALL = INTS + FLOATS + ["bool"]


def cast_inputs(src: str) -> np.ndarray:
    if src in FLOATS:
        extra = [127.9, -128.5, 255.5, 256.0, -129.0, 32767.5, 65535.9, 65520.0, 65504.0, 2.0 ** 31, -2.0 ** 31,
                 2.0 ** 31 - 128, 2.0 ** 32, 2.0 ** 63, -2.0 ** 63, 2.0 ** 64, 1e20, -1e20, 0.9999, -0.9999,
                 1 + 2.0 ** -11 + 2.0 ** -40, 1 + 2.0 ** -24 + 2.0 ** -60, 4097.0, 2049.0, -2.5, 3.5]
        values = float_edges(src) + [to_dtype(v, src) for v in extra]
        return np.array(values, NP[src])
    if src == "bool":
        return np.array([False, True])
    low, high = int_range(src)
    extra = [2 ** 24 + 1, 2 ** 24 + 3, 2 ** 53 + 1, 2 ** 60 + 2 ** 49 + 1, 65519, 65520, -65520, 2049, 2 ** 63 - 1,
             2 ** 64 - 1, -(2 ** 63), 2 ** 31 + 2 ** 7 + 1, 300, -129]
    return np.array(sorted({v for v in int_edges(src) + extra if low <= v <= high}), NP[src])


def cast_source(src: str) -> tuple[str, str]:
    tensor = ["import intent as I\n"]
    scalar = ["import intent as I\n"]
    for dst in ALL:
        if dst == src:
            continue
        tensor.append(tensor_kernel(f"to_{dst}", {"a": src}, dst, f"I.cast({{a}}, {dst})"))
        scalar.append(f"@intent.kernel\ndef to_{dst}(a: {src}[N], out: mut {dst}[N]):\n"
                      f"    for i in I.parallel(a.axis(0)):\n        out[i] = I.cast(a[i], {dst})\n")
    return "\n".join(tensor), "\n".join(scalar)


@pytest.mark.parametrize("src", ALL)
def test_casts(differential, src):
    """``I.cast`` from ``src`` to every other dtype: saturation, NaN -> 0, wrap-around,
    round-to-nearest-even (once), ``!= 0`` for bool."""
    tensor_src, scalar_src = cast_source(src)
    values = cast_inputs(src)
    failures = []
    for dst in ALL:
        if dst == src:
            continue
        kernel = f"to_{dst}"
        try:
            run = differential(tensor_src, kernel, values)
            assert run.error is None, run.error
            want = [ref_cast(v, src, dst) for v in values.tolist()]
            assert_matches(run.result, want, f"cast {src} -> {dst} vs expectation")
            out = np.zeros(len(values), NP[dst])
            intentc.interpret(scalar_src, kernel, values, out)
            assert_matches(out, run.result.tolist(), f"cast {src} -> {dst}: interpreter scalar path vs compiled")
        except AssertionError as exc:
            failures.append(str(exc).splitlines()[0])
    assert not failures, "\n".join(failures)


# ---------------------------------------------------------------------------------------
# scalars passed by value, and rounding after every float operation
# ---------------------------------------------------------------------------------------
SCALAR_SRC = "import intent as I\n\n" + "\n".join(
    f"@intent.kernel\ndef by_value_{dt}(a: {dt}, b: {dt}, out: mut {dt}[4]):\n"
    f"    out[0] = a + b\n    out[1] = a * b\n    out[2] = a // b\n    out[3] = a % b\n"
    for dt in INTS + FLOATS)


@pytest.mark.parametrize("dt", INTS + FLOATS)
def test_scalar_parameters(differential, dt):
    """Scalars travel by value (f16 as its bits); the same rules apply to them."""
    values = edges(dt)
    chosen = values[:: max(1, len(values) // 7)] + [values[-1]]
    for a, b in itertools.product(chosen, chosen):
        run = differential(SCALAR_SRC, f"by_value_{dt}", a, b, np.zeros(4, NP[dt]))
        assert run.error is None
        a_, b_ = (to_dtype(v, dt) for v in (a, b)) if dt in FLOATS else (a, b)
        ref = ref_float_binary if dt in FLOATS else ref_int_binary
        want = [ref(op, dt, a_, b_) for op in ("add", "mul", "floordiv", "mod")]
        assert_matches(run.args[2], want, f"by_value_{dt}({a!r}, {b!r})")


ROUNDING_SRC = "import intent as I\n\n" + "\n".join(
    f"@intent.kernel\ndef fms_{dt}(a: {dt}[N], b: {dt}[N], c: {dt}[N]) -> {dt}[N]:\n    return a * b - c\n\n"
    f"@intent.kernel\ndef sum3_{dt}(a: {dt}[N], b: {dt}[N], c: {dt}[N]) -> {dt}[N]:\n    return (a + b) - c\n"
    for dt in FLOATS)


@pytest.mark.parametrize("dt", FLOATS)
def test_every_float_operation_rounds(differential, dt):
    """``a * b - c`` is rounded after ``*`` (no fused multiply-add) and ``(a + b) - c``
    after ``+`` (no wider intermediate), in the operand dtype."""
    eps = 2.0 ** -(MANTISSA[dt] // 2 + 1)
    a = np.array([1 + eps, 2.0 ** (MANTISSA[dt]), 1.0], NP[dt])
    b = np.array([1 + eps, 1.0, 2.0 ** -(MANTISSA[dt])], NP[dt])
    c = np.array([to_dtype((1 + eps) * (1 + eps), dt), 2.0 ** MANTISSA[dt], 1.0], NP[dt])
    run = differential(ROUNDING_SRC, f"fms_{dt}", a, b, c)
    want = [to_dtype(to_dtype(x * y, dt) - z, dt) for x, y, z in zip(a.tolist(), b.tolist(), c.tolist())]
    assert_matches(run.result, want, f"fms_{dt}")
    assert run.result[0] == 0, "a * b - c was fused or computed wider than the dtype"
    run = differential(ROUNDING_SRC, f"sum3_{dt}", a, b, c)
    want = [to_dtype(to_dtype(x + y, dt) - z, dt) for x, y, z in zip(a.tolist(), b.tolist(), c.tolist())]
    assert_matches(run.result, want, f"sum3_{dt}")
    assert run.result[1] == 0 and run.result[2] == 0, "(a + b) - c kept a wider intermediate"
