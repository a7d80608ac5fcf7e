"""OCP Microscaling element and scale types: storage, conversions and the ABI.

Every code of every format is decoded (exhaustively) by the compiled code and the
interpreter and compared with ``ml_dtypes``, the independent reference. Encoding is
checked on every representable value (exact round trips), on every midpoint between
neighbours (ties to even) and the floats next to them, and on the edges: +-0, +-max,
overflow, +-inf, NaN of both signs, f32 subnormals. Where intentc's documented rule is
not ml_dtypes' (f8e4m3 saturates instead of overflowing to NaN; a NaN becomes a zero of
the NaN's sign in f6/f4, where ml_dtypes flips the sign; e8m0 ties go to the even code
and out-of-range values saturate), the reference is ml_dtypes applied to the clamped
input, with those NaNs set, or an explicit table. ``f4e2m1`` tensors are packed two per byte at the
ABI, element 2j in the low nibble of byte j: checked with hand-made descriptors.
"""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

import intentc
from intentc.diagnostics import CompileError
from intentc.driver import build, frontend, interpret
from intentc.kir import mx

md = pytest.importorskip("ml_dtypes")

ELEMENTS = ("f8e4m3", "f8e5m2", "f6e2m3", "f6e3m2", "f4e2m1")
ALL = ELEMENTS + ("e8m0",)
ML = {name: np.dtype(getattr(md, mx.FORMATS[name].ml_dtypes)) for name in ALL}

SOURCE = "import intent as I\n" + "".join(f"""
@intent.kernel
def dec_{t}(x: {t}[N]) -> f32[N]:
    return I.cast(x, f32)

@intent.kernel
def enc_{t}(x: f32[N]) -> {t}[N]:
    return I.cast(x, {t})
""" for t in ALL) + """
@intent.kernel
def dec64(x: f8e5m2[N]) -> f64[N]:
    return I.cast(x, f64)

@intent.kernel
def requant(x: f6e3m2[R, C], scale: f32, out: mut f4e2m1[R, C]):
    for p in I.parallel(x.axis(0), x.axis(1)):
        out[p[0], p[1]] = I.cast(I.cast(x[p[0], p[1]], f32) * scale, f4e2m1)

@intent.kernel
def copy4(x: f4e2m1[R, C]) -> f4e2m1[R, C]:
    return x

@intent.kernel
def scaled_by(s: e8m0, x: f4e2m1[N]) -> f32[N]:
    return I.cast(x, f32) * I.cast(s, f32)

@intent.kernel
def pick(x: f8e4m3[N], y: f8e4m3[N], first: bool[N]) -> f8e4m3[N]:
    return I.where(first, x, y)
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    path = tmp_path_factory.mktemp("mx") / "mx_dtypes.intent"
    path.write_text(SOURCE)
    so = path.with_suffix(".so")
    build(path, so)
    return intentc.load(so)


def codes_of(name: str) -> np.ndarray:
    return np.arange(1 << mx.FORMATS[name].bits, dtype=np.uint8)


def same_floats(x: np.ndarray, y: np.ndarray) -> bool:
    """Equal bits, any NaN matching any NaN."""
    x, y = np.asarray(x, np.float32), np.asarray(y, np.float32)
    nan = np.isnan(x)
    return bool(np.array_equal(nan, np.isnan(y)) and np.array_equal(x[~nan].view(np.uint32),
                                                                    y[~nan].view(np.uint32)))


def run_both(lib, kernel: str, *args):
    compiled = getattr(lib, kernel)(*args)
    interpreted = interpret(SOURCE, kernel, *args)
    return compiled, interpreted


# ---- decoding: every code ----------------------------------------------------------------------
@pytest.mark.parametrize("name", ALL)
def test_decode_every_code(lib, name):
    x = codes_of(name).view(ML[name])
    compiled, interpreted = run_both(lib, f"dec_{name}", x)
    reference = x.astype(np.float32)
    assert same_floats(compiled, reference), name
    assert same_floats(interpreted, reference), name
    assert same_floats(mx.decode(codes_of(name), name), reference)


def test_decode_specials_and_extremes():
    assert np.isnan(mx.decode(0x7F, "f8e4m3")) and np.isnan(mx.decode(0xFF, "f8e4m3"))
    assert mx.decode(0x7E, "f8e4m3") == 448 and mx.decode(0x01, "f8e4m3") == 2.0 ** -9
    assert mx.decode(0x7C, "f8e5m2") == np.inf and mx.decode(0xFC, "f8e5m2") == -np.inf
    assert np.isnan(mx.decode(0x7D, "f8e5m2")) and mx.decode(0x7B, "f8e5m2") == 57344
    assert mx.decode(0x1F, "f6e2m3") == 7.5 and mx.decode(0x1F, "f6e3m2") == 28 and mx.decode(0x7, "f4e2m1") == 6
    assert mx.decode(0x00, "e8m0") == 2.0 ** -127 and mx.decode(0xFE, "e8m0") == 2.0 ** 127
    assert np.isnan(mx.decode(0xFF, "e8m0")) and mx.decode(127, "e8m0") == 1.0
    assert np.signbit(mx.decode(0x80, "f8e4m3")) and np.signbit(mx.decode(0x20, "f6e2m3"))


def test_decode_to_f64_is_exact(lib):
    x = codes_of("f8e5m2").view(ML["f8e5m2"])
    compiled, interpreted = run_both(lib, "dec64", x)
    reference = x.astype(np.float64)
    for got in (compiled, interpreted):
        assert got.dtype == np.float64
        np.testing.assert_array_equal(got, reference)


# ---- encoding ---------------------------------------------------------------------------------------
def encode_inputs(name: str) -> np.ndarray:
    """Every representable value, every midpoint and its neighbours, and the edges."""
    values = np.unique(mx.decode(codes_of(name), name).astype(np.float64))
    values = values[np.isfinite(values)]
    mids = ((values[1:] + values[:-1]) / 2).astype(np.float32)
    f32 = np.float32
    edges = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-45, -1e-45, 1e-40, 1.2e-38, 3e38, -3e38,
                      np.finfo(f32).max, -np.finfo(f32).max, 2.0 ** -127, 2.0 ** 127, 1e30, -1e30], f32)
    rng = np.random.default_rng(7)
    spread = (rng.standard_normal(4000) * np.exp2(rng.integers(-20, 20, 4000))).astype(f32)
    return np.concatenate([values.astype(f32), mids, np.nextafter(mids, f32(np.inf)),
                           np.nextafter(mids, f32(-np.inf)), edges, spread])


def encode_reference(x: np.ndarray, name: str) -> np.ndarray:
    """ml_dtypes, with the input clamped where intentc saturates and ml_dtypes does not. A NaN
    becomes a zero with the NaN's sign in the formats without NaN (ml_dtypes flips the sign)."""
    if name == "f8e4m3":
        x = np.clip(x, -448, 448)  # NaN stays NaN
    reference = x.astype(ML[name]).view(np.uint8).copy()
    if mx.FORMATS[name].nan is None:
        nan = np.isnan(x)
        reference[nan] = np.where(np.signbit(x[nan]), mx.FORMATS[name].sign_bit, 0)
    return reference


@pytest.mark.parametrize("name", ELEMENTS)
def test_encode_elements(lib, name):
    x = encode_inputs(name)
    compiled, interpreted = run_both(lib, f"enc_{name}", x)
    reference = encode_reference(x, name)
    np.testing.assert_array_equal(compiled.view(np.uint8), reference)
    np.testing.assert_array_equal(interpreted.view(np.uint8), reference)


@pytest.mark.parametrize("name", ELEMENTS)
def test_round_trip_of_every_value(lib, name):
    codes = codes_of(name)
    values = mx.decode(codes, name)
    keep = ~np.isnan(values)
    back = lib.__getattr__(f"enc_{name}")(values[keep]).view(np.uint8)
    np.testing.assert_array_equal(back, codes[keep])


def test_encode_edges_table():
    table = {  # name: [(f32 input, expected code)]
        "f8e4m3": [(448.0, 0x7E), (464.0, 0x7E), (1e9, 0x7E), (-np.inf, 0xFE), (np.inf, 0x7E), (np.nan, 0x7F),
                   (-np.nan, 0xFF), (2.0 ** -10, 0x00), (1.5 * 2.0 ** -10, 0x01), (-0.0, 0x80)],
        "f8e5m2": [(61440.0, 0x7C), (61439.0, 0x7B), (np.inf, 0x7C), (-np.inf, 0xFC), (np.nan, 0x7E),
                   (2.0 ** -17, 0x00), (3 * 2.0 ** -17, 0x02)],
        "f6e2m3": [(7.75, 0x1F), (np.inf, 0x1F), (-np.inf, 0x3F), (np.nan, 0x00), (-np.nan, 0x20),
                   (0.0625, 0x00), (0.1875, 0x02)],
        "f6e3m2": [(30.0, 0x1F), (np.inf, 0x1F), (np.nan, 0x00), (0.03125, 0x00), (0.09375, 0x02)],
        "f4e2m1": [(5.0, 0x6), (7.0, 0x7), (np.inf, 0x7), (-np.inf, 0xF), (np.nan, 0x0), (0.25, 0x0),
                   (0.75, 0x2), (2.5, 0x4), (3.5, 0x6)],
        "e8m0": [(1.0, 127), (1.5, 128), (3.0, 128), (6.0, 130), (2.9, 128), (3.1, 129), (2.0 ** 127, 254),
                 (3e38, 254), (np.inf, 254), (2.0 ** -127, 0), (1e-45, 0), (1.5 * 2.0 ** -127, 0),
                 (1.6 * 2.0 ** -127, 1), (0.0, 0xFF), (-0.0, 0xFF), (-1.0, 0xFF), (-np.inf, 0xFF), (np.nan, 0xFF)],
    }
    lib_free = {name: [(np.float32(x), code) for x, code in rows] for name, rows in table.items()}
    for name, rows in lib_free.items():
        x = np.array([r[0] for r in rows], np.float32)
        want = np.array([r[1] for r in rows], np.uint8)
        np.testing.assert_array_equal(mx.encode(x, name), want, err_msg=name)
        np.testing.assert_array_equal(interpret(SOURCE, f"enc_{name}", x).view(np.uint8), want, err_msg=name)


def test_encode_edges_table_compiled(lib):
    x = np.array([1.5, 3.0, 6.0, 2.0 ** 127, 3e38, np.inf, 1e-45, 1.5 * 2.0 ** -127, 0.0, -1.0, np.nan], np.float32)
    want = np.array([128, 128, 130, 254, 254, 254, 0, 0, 0xFF, 0xFF, 0xFF], np.uint8)
    np.testing.assert_array_equal(lib.enc_e8m0(x).view(np.uint8), want)


def test_scale_encoding_against_ml_dtypes_off_ties(lib):
    """e8m0 away from ties and inside the range: the nearest power of two, as ml_dtypes."""
    rng = np.random.default_rng(3)
    x = np.exp2(rng.uniform(-126, 126, 20000)).astype(np.float32)
    mant, _ = np.frexp(x)
    x = x[mant * 2 != 1.5]
    np.testing.assert_array_equal(lib.enc_e8m0(x).view(np.uint8), x.astype(ML["e8m0"]).view(np.uint8))


# ---- storage and the ABI ----------------------------------------------------------------------------
def test_f4_is_packed_low_nibble_first(lib):
    """Hand-made descriptors of packed bytes, strides in elements: an odd row stride puts
    every other row's elements in high nibbles."""
    from intentc.loader import IntentTensor, _Device, _DType

    rng = np.random.default_rng(5)
    logical = rng.integers(0, 16, (5, 9)).astype(np.uint8)
    flat = logical.reshape(-1)
    packed = np.zeros((flat.size + 1) // 2, np.uint8)
    packed[:] = flat[0::2]
    packed[: flat[1::2].size] |= flat[1::2] << 4
    assert np.array_equal(mx.pack_f4(logical.view(ML["f4e2m1"])), packed)
    assert np.array_equal(mx.unpack_f4(packed, flat.size), flat)

    def descriptor(data: np.ndarray, shape, strides, keep):
        dims = (ctypes.c_int64 * 2)(*shape)
        steps = (ctypes.c_int64 * 2)(*strides)
        keep += [dims, steps]
        i64 = ctypes.POINTER(ctypes.c_int64)
        return IntentTensor(data.ctypes.data, _Device(1, 0), 2, _DType(17, 4, 1), ctypes.cast(dims, i64),
                            ctypes.cast(steps, i64), 0)

    keep: list = []
    source = descriptor(packed, (5, 3), (9, 3), keep)  # logical[:, 0::3]
    result = np.zeros(8, np.uint8)
    out = descriptor(result, (5, 3), (3, 1), keep)
    func = lib.lib.copy4
    func.restype = ctypes.c_int32
    assert func(ctypes.byref(source), ctypes.byref(out)) == 0
    np.testing.assert_array_equal(mx.unpack_f4(result, 15).reshape(5, 3), logical[:, 0::3])
    assert result[7] >> 4 == 0  # the nibble past the last element is left alone


def test_f4_results_and_mut_parameters(lib):
    rng = np.random.default_rng(9)
    x = rng.integers(0, 64, (37, 129)).astype(np.uint8).view(ML["f6e3m2"])
    out = np.zeros((37, 129), np.uint8).view(ML["f4e2m1"])
    lib.requant(x, 0.25, out)
    interpreted = np.zeros((37, 129), np.uint8).view(ML["f4e2m1"])
    interpret(SOURCE, "requant", x, 0.25, interpreted)
    reference = (x.astype(np.float32) * np.float32(0.25)).astype(ML["f4e2m1"])
    np.testing.assert_array_equal(out.view(np.uint8), reference.view(np.uint8))
    np.testing.assert_array_equal(interpreted.view(np.uint8), reference.view(np.uint8))
    for threads in (1, 2, 3):  # neighbouring nibbles written from different threads
        lib.set_num_threads(threads)
        again = np.full((37, 129), 0x7, np.uint8).view(ML["f4e2m1"])
        lib.requant(x, 0.25, again)
        np.testing.assert_array_equal(again.view(np.uint8), reference.view(np.uint8))
    lib.set_num_threads(2)
    strided = rng.integers(0, 16, (40, 40)).astype(np.uint8).view(ML["f4e2m1"])[::3, 1::2]
    np.testing.assert_array_equal(lib.copy4(strided).view(np.uint8), strided.view(np.uint8))


def test_select_moves_codes(lib):
    x = codes_of("f8e4m3").view(ML["f8e4m3"])
    y = codes_of("f8e4m3")[::-1].copy().view(ML["f8e4m3"])
    first = np.arange(256) % 3 == 0
    compiled, interpreted = run_both(lib, "pick", x, y, first)
    want = np.where(first, x.view(np.uint8), y.view(np.uint8))
    np.testing.assert_array_equal(compiled.view(np.uint8), want)
    np.testing.assert_array_equal(interpreted.view(np.uint8), want)


def test_wrong_dtype_is_refused(lib):
    for call in (lambda a: lib.dec_f8e4m3(a), lambda a: interpret(SOURCE, "dec_f8e4m3", a)):
        for wrong in (np.zeros(4, np.float32), np.zeros(4, np.uint8), np.zeros(4, ML["f8e5m2"])):
            with pytest.raises(intentc.KernelError) as info:
                call(wrong)
            assert info.value.code == -2 and "f8e4m3" in str(info.value)


def test_header_states_the_storage(tmp_path):
    path = tmp_path / "h.intent"
    path.write_text("import intent as I\n\n@intent.kernel\ndef k(a: f4e2m1[N], b: f6e2m3[N], s: e8m0[N]) "
                    "-> f8e4m3[N]:\n    return I.cast(I.cast(a, f32) * I.cast(b, f32) * I.cast(s, f32), f8e4m3)\n")
    build(path, tmp_path / "h.h")
    header = (tmp_path / "h.h").read_text()
    assert "a: f4e2m1[N] (read-only; packed two per byte, element 2j in the low nibble of byte j)" in header
    assert "b: f6e2m3[N] (read-only; one per byte, in the low six bits)" in header
    assert "2^(code - 127), 0xFF = NaN" in header
    runtime = (tmp_path / "intent_runtime.h").read_text()
    assert "#define INTENT_DTYPE_F4E2M1 17" in runtime


@pytest.mark.parametrize("body, message", [
    ("return I.cast(x + x, f32)", "+ is not defined on f8e4m3"),
    ("return I.cast(-x, f32)", "unary - is not defined on f8e4m3"),
    ("return I.cast(I.cast(x, f16), f32)", "convert to f32 (or f64) only"),
    ("return I.cast(I.cast(I.cast(x, f32), f64), f4e2m1)", "from f32 only"),
])
def test_mx_values_are_storage(body, message):
    source = f"import intent as I\n\n@intent.kernel\ndef k(x: f8e4m3[N]) -> f32[N]:\n    {body}\n"
    with pytest.raises(CompileError) as info:
        frontend(source, "k.intent")
    assert message in info.value.diagnostics[0].message
    assert info.value.diagnostics[0].hint


def test_literal_is_not_an_mx_value():
    source = "import intent as I\n\n@intent.kernel\ndef k(x: mut f8e4m3[N]):\n    x[0] = 1.0\n"
    with pytest.raises(CompileError) as info:
        frontend(source, "k.intent")
    assert "literal cannot be used as f8e4m3" in info.value.diagnostics[0].message


def test_scalar_parameters_pass_their_code(lib):
    x = codes_of("f4e2m1").view(ML["f4e2m1"])
    for scale, factor in ((np.uint8(130).view(ML["e8m0"]), 8.0), (0.25, 0.25), (3.0, 2.0)):
        compiled, interpreted = run_both(lib, "scaled_by", scale, x)
        want = x.astype(np.float32) * np.float32(factor)
        assert same_floats(compiled, want) and same_floats(interpreted, want)
