"""Shared test fixtures.

``differential(source, kernel, *args, **kwargs)`` builds ``source`` with the compiler
(once per source text per session), calls ``kernel`` compiled and in the reference
interpreter (``intentc.interpret``) on separate copies of the same arguments, and
asserts that both agree (docs/testing.md):

- every returned tensor and every ``mut`` parameter: integers and bools exactly; floats
  bit for bit (NaN matches any NaN, ``-0.0`` does not match ``0.0``), or within
  ``FLOAT_ULPS`` of each other when the program uses float ``**``, or within
  ``REGROUPED`` (relative to the largest magnitude compared) when it has float
  reductions, scans, region folds/scans, contractions or histograms, which the compiled
  code may regroup (T1-T7, R3);
- memory around strided views is left alone, read-only inputs are not written;
- when one side raises, the other raises too: ``KernelError``s with the same code, other
  exceptions of the same type. After an argument check fails, nothing was written.

It returns a ``Differential.Run`` with the compiled result and argument copies, so a test
can also compare them with an independent expectation.
"""
from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
if importlib.util.find_spec("intentc") is None:  # a source checkout that is not installed
    sys.path.insert(0, str(REPO))

import intentc  # noqa: E402

# Every test verifies the IR after every lowering pass, the physical program included
# (docs/architecture.md); normal builds verify the physical program only under --verify-each.
os.environ.setdefault("INTENTC_VERIFY_EACH", "1")
# Builds through the CLI use the build cache: the suite keeps its own, fresh for each run (and
# for each xdist worker's process tree), so no test reads or fills the user's cache.
if "INTENTC_CACHE_DIR" not in os.environ:
    import atexit
    import shutil
    import tempfile

    os.environ["INTENTC_CACHE_DIR"] = tempfile.mkdtemp(prefix="intentc-test-cache-")
    atexit.register(shutil.rmtree, os.environ["INTENTC_CACHE_DIR"], True)  # by the process that made it

# The ULP bound between the compiled code's libm and the interpreter's C pow for float **
# (docs/testing.md). Every other float operation must match bit for bit: exp, log and tanh
# are intentc's own functions, the same algorithm on both sides.
FLOAT_ULPS = {"f16": 1, "f32": 4, "f64": 2}
TRANSCENDENTAL = {"pow"}


class Relative(dict):
    """A tolerance per float dtype, relative to the larger of the largest finite magnitude
    compared and ``floor`` (the Euclidean norm of the float inputs: regrouping a sum
    changes it by a multiple of the terms, not of the result)."""

    floor: float = 0.0


# Structured operations whose float arithmetic the compiled code may regroup (T1-T7, R3):
# the interpreter adds in member order, the compiled code in blocks.
REGROUPING = {"reduce", "scan", "fold", "region_fold", "region_scan", "contract", "histogram"}
REGROUPED = Relative({"f16": 1e-2, "f32": 1e-4, "f64": 1e-10})
# Codes of checks that run before the kernel body: after them nothing may be written.
ARGUMENT_CODES = {-1, -2, -3, -5}


# ---------------------------------------------------------------------------------------
# argument copies that keep strides and the memory around a view
# ---------------------------------------------------------------------------------------
@dataclass
class _Copy:
    """A copy of one argument. Arrays keep their strides: ``raw`` is a copy of all the
    bytes the view spans (gaps included) and ``view`` the same view into it."""

    value: object
    raw: np.ndarray | None = None

    @staticmethod
    def of(value) -> "_Copy":
        if not isinstance(value, np.ndarray):
            return _Copy(value)
        if value.size == 0 or value.ndim == 0:
            copy = value.copy()
            copy.flags.writeable = value.flags.writeable
            return _Copy(copy, None)
        low = sum(min(0, s * (n - 1)) for s, n in zip(value.strides, value.shape))
        high = sum(max(0, s * (n - 1)) for s, n in zip(value.strides, value.shape)) + value.itemsize
        raw = np.empty(high - low, np.uint8)
        ctypes.memmove(raw.ctypes.data, value.ctypes.data + low, high - low)
        view = np.ndarray(value.shape, value.dtype, buffer=raw, offset=-low, strides=value.strides)
        view.flags.writeable = value.flags.writeable
        return _Copy(view, raw)

    def gaps(self) -> np.ndarray | None:
        """The spanned bytes with the view's own elements zeroed: what must stay untouched."""
        if self.raw is None:
            return None
        raw = self.raw.copy()
        view = self.value
        np.ndarray(view.shape, view.dtype, buffer=raw, offset=view.ctypes.data - self.raw.ctypes.data,
                   strides=view.strides)[...] = 0
        return raw

    def snapshot(self) -> bytes:
        if self.raw is not None:
            return self.raw.tobytes()
        return self.value.tobytes() if isinstance(self.value, np.ndarray) else repr(self.value).encode()


def _copies(args, kwargs, out):
    args = [_Copy.of(a) for a in args]
    kwargs = {k: _Copy.of(v) for k, v in kwargs.items()}
    if out is None:
        outs = None
    elif isinstance(out, (tuple, list)):
        outs = [_Copy.of(o) for o in out]
    else:
        outs = _Copy.of(out)
    return args, kwargs, outs


def _values(outs):
    if outs is None:
        return None
    return [o.value for o in outs] if isinstance(outs, list) else outs.value


def _call(fn, args, kwargs, outs):
    out = _values(outs)
    try:
        return fn(*[a.value for a in args], out=out, **{k: v.value for k, v in kwargs.items()}), None
    except Exception as exc:  # noqa: BLE001 - compared below
        return None, exc


# ---------------------------------------------------------------------------------------
# comparing results
# ---------------------------------------------------------------------------------------
def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """How many representable floats lie between a and b (elementwise; NaN pairs give 0)."""
    int_type = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
    bits = a.dtype.itemsize * 8

    def ordered(x):  # -0.0 -> -1, so that -0.0 and +0.0 are one step apart
        raw = np.ascontiguousarray(x).view(int_type).astype(object)
        return np.where(raw < 0, -(raw & ((1 << (bits - 1)) - 1)) - 1, raw)

    distance = np.abs(ordered(a) - ordered(b))
    distance[np.isnan(a) & np.isnan(b)] = 0
    return distance


def assert_same_array(compiled, interpreted, what: str, ulps: int | dict = 0) -> None:
    """Equal dtype, shape and elements; floats bit for bit, or within ``ulps`` (an int, or
    a bound per float dtype name like ``FLOAT_ULPS``)."""
    compiled, interpreted = np.asarray(compiled), np.asarray(interpreted)
    relative, ulps_floor = None, 0.0
    if isinstance(ulps, Relative):
        ulps_floor = ulps.floor
        relative, ulps = ulps.get({2: "f16", 4: "f32", 8: "f64"}.get(compiled.dtype.itemsize), 0), 0
    elif isinstance(ulps, dict):
        ulps = ulps.get({2: "f16", 4: "f32", 8: "f64"}.get(compiled.dtype.itemsize), 0)
    assert compiled.dtype == interpreted.dtype, f"{what}: dtype {compiled.dtype} (compiled) vs {interpreted.dtype}"
    assert compiled.shape == interpreted.shape, f"{what}: shape {compiled.shape} (compiled) vs {interpreted.shape}"
    if compiled.dtype.kind != "f":
        if not np.array_equal(compiled, interpreted):
            bad = np.argwhere(compiled != interpreted)[:5]
            detail = ", ".join(f"{tuple(int(i) for i in p)}: {compiled[tuple(p)]!r} vs {interpreted[tuple(p)]!r}"
                               for p in bad)
            raise AssertionError(f"{what}: compiled and interpreted differ at {detail}")
        return
    nan_c, nan_i = np.isnan(compiled), np.isnan(interpreted)
    if relative is not None:
        c64, i64 = compiled.astype(np.float64), interpreted.astype(np.float64)
        finite = np.isfinite(c64) & np.isfinite(i64)
        scale = max([1e-300, ulps_floor] + [float(np.abs(x[finite]).max()) for x in (c64, i64) if finite.any()])
        with np.errstate(invalid="ignore"):
            close = np.abs(c64 - i64) <= relative * scale
        same = (nan_c & nan_i) | np.where(finite, close, c64 == i64)
    elif ulps == 0:
        same = (nan_c & nan_i) | ((compiled == interpreted) & (np.signbit(compiled) == np.signbit(interpreted)))
    else:
        same = (nan_c == nan_i) & (ulp_distance(compiled, interpreted) <= ulps)
    if not same.all():
        bad = np.argwhere(~same)[:5]
        detail = ", ".join(f"{tuple(int(i) for i in p)}: {compiled[tuple(p)]!r} vs {interpreted[tuple(p)]!r}"
                           for p in bad)
        bound = f"within {relative} of the largest magnitude" if relative is not None else \
            "bit for bit" if ulps == 0 else f"within {ulps} ULP"
        raise AssertionError(f"{what}: compiled and interpreted differ ({bound}) at {detail}")


def _input_norm(copies) -> float:
    """The Euclidean norm of every finite float element of the arguments."""
    total = 0.0
    for c in copies:
        value = c.value
        if isinstance(value, np.ndarray) and value.dtype.kind == "f" and value.size:
            x = value.astype(np.float64)
            x = x[np.isfinite(x)]
            with np.errstate(over="ignore"):
                total += float(np.sum(x * x))
        elif isinstance(value, float) and np.isfinite(value):
            total += value * value
    return float(np.sqrt(total)) if np.isfinite(total) else 0.0


def _results(value) -> list:
    if value is None:
        return []
    return list(value) if isinstance(value, tuple) else [value]


def _error_text(exc) -> str:
    if isinstance(exc, intentc.KernelError):
        return f"KernelError({exc.code}: {exc})"
    return f"{type(exc).__name__}({exc})"


class Differential:
    """Builds sources once per session and runs kernels compiled and interpreted."""

    @dataclass
    class Run:
        result: object  # the compiled kernel's return value (None on error)
        args: list  # the compiled call's copies of the positional arguments
        kwargs: dict
        out: object
        error: BaseException | None  # the compiled call's exception
        interpreted: object  # the interpreter's return value
        interpreted_args: list = field(default_factory=list)

    def __init__(self, folder: Path):
        self.folder = folder
        self.modules: dict[str, object] = {}
        self.uses_transcendental: dict[tuple[str, str], bool] = {}

    def build(self, source: str):
        """The loaded compiled module of ``source`` (built once per session)."""
        from intentc.driver import build

        digest = hashlib.sha256(source.encode()).hexdigest()[:16]
        if digest not in self.modules:
            path = self.folder / f"m{digest}.intent"
            path.write_text(source)
            build(path, path.with_suffix(".so"))
            self.modules[digest] = intentc.load(path.with_suffix(".so"))
        return self.modules[digest]

    def float_ulps(self, source: str, kernel: str) -> int | dict:
        """0, the ULP bound when the kernel (or a helper) uses float **, or ``REGROUPED``
        when it has a float operation the compiled code may regroup."""
        key = (source, kernel)
        if key not in self.uses_transcendental:
            from intentc.driver import load_module

            module = load_module(source)
            seen, todo, found = set(), [kernel], False
            while todo:  # the kernel and every helper it calls
                func = module.function(todo.pop())
                seen.add(func.name)
                for op in func.walk():
                    if op.name == "call" and op.attrs["callee"] not in seen:
                        todo.append(op.attrs["callee"])
                    if op.name in TRANSCENDENTAL and getattr(op.results[0].type, "dtype", op.results[0].type).is_float:
                        found = found or "ulps"
                    if op.name in REGROUPING and any(
                            getattr(getattr(v.type, "dtype", v.type), "is_float", False)
                            for v in list(op.operands) + list(op.results)):
                        found = "regrouped"
            self.uses_transcendental[key] = found
        rule = self.uses_transcendental[key]
        return REGROUPED if rule == "regrouped" else FLOAT_ULPS if rule == "ulps" else 0

    def __call__(self, source: str, kernel: str, *args, out=None, ulps: int | dict | None = None,
                 parallel_order: str = "forward", seed: int = 0, **kwargs) -> "Differential.Run":
        compiled_fn = getattr(self.build(source), kernel)
        c_args, c_kwargs, c_out = _copies(args, kwargs, out)
        i_args, i_kwargs, i_out = _copies(args, kwargs, out)
        p_args, p_kwargs, p_out = _copies(args, kwargs, out)  # pristine, for "unchanged" checks
        before = [c.snapshot() for c in p_args + list(p_kwargs.values())]

        c_result, c_error = _call(compiled_fn, c_args, c_kwargs, c_out)
        i_result, i_error = _call(
            lambda *a, **k: intentc.interpret(source, kernel, *a, parallel_order=parallel_order, seed=seed, **k),
            i_args, i_kwargs, i_out)

        label = f"{kernel}"
        if c_error is not None or i_error is not None:
            if c_error is None or i_error is None:
                raise AssertionError(f"{label}: compiled {'raised ' + _error_text(c_error) if c_error else 'returned'}"
                                     f" but the interpreter {'raised ' + _error_text(i_error) if i_error else 'returned'}")
            if isinstance(c_error, intentc.KernelError) or isinstance(i_error, intentc.KernelError):
                assert isinstance(c_error, intentc.KernelError) and isinstance(i_error, intentc.KernelError) and \
                    c_error.code == i_error.code, \
                    f"{label}: compiled raised {_error_text(c_error)}, the interpreter {_error_text(i_error)}"
                if c_error.code in ARGUMENT_CODES:
                    for side, copies in (("compiled", c_args + list(c_kwargs.values())),
                                         ("interpreted", i_args + list(i_kwargs.values()))):
                        after = [c.snapshot() for c in copies]
                        assert after == before, f"{label}: the {side} call wrote although an argument check failed"
            else:
                assert type(c_error) is type(i_error), \
                    f"{label}: compiled raised {_error_text(c_error)}, the interpreter {_error_text(i_error)}"
            return self.Run(None, [a.value for a in c_args], {k: v.value for k, v in c_kwargs.items()},
                            _values(c_out), c_error, None, [a.value for a in i_args])

        bound = self.float_ulps(source, kernel) if ulps is None else ulps
        if isinstance(bound, Relative):
            bound = Relative(bound)
            bound.floor = _input_norm(p_args + list(p_kwargs.values()))
        c_list, i_list = _results(c_result), _results(i_result)
        assert len(c_list) == len(i_list), f"{label}: {len(c_list)} results compiled, {len(i_list)} interpreted"
        for k, (c, i) in enumerate(zip(c_list, i_list)):
            assert_same_array(c, i, f"{label}: result {k}", bound)
        # Every array argument: mut parameters and out= compared, the rest unchanged; the
        # memory around strided views unchanged on both sides.
        mutable = self.mutable_params(source, kernel)
        names = self.param_names(source, kernel)[:len(args)] + list(kwargs)
        triples = list(zip(names, c_args + list(c_kwargs.values()), i_args + list(i_kwargs.values()),
                           p_args + list(p_kwargs.values())))
        if c_out is not None:
            for c, i, p in zip(*(o if isinstance(o, list) else [o] for o in (c_out, i_out, p_out))):
                triples.append(("out=", c, i, p))
        for name, c, i, p in triples:
            if not isinstance(c.value, np.ndarray):
                continue
            if name == "out=" or name in mutable:
                assert_same_array(c.value, i.value, f"{label}: {name}", bound)
            else:
                assert c.snapshot() == p.snapshot(), f"{label}: read-only '{name}' was written (compiled)"
                assert i.snapshot() == p.snapshot(), f"{label}: read-only '{name}' was written (interpreted)"
            if p.raw is not None:
                assert np.array_equal(c.gaps(), p.gaps()), f"{label}: '{name}': memory around the view changed (compiled)"
                assert np.array_equal(i.gaps(), p.gaps()), f"{label}: '{name}': memory around the view changed (interpreted)"
        return self.Run(c_result, [a.value for a in c_args], {k: v.value for k, v in c_kwargs.items()},
                        _values(c_out), None, i_result, [a.value for a in i_args])

    def _kernel(self, source: str, kernel: str):
        from intentc.driver import load_module

        return load_module(source).function(kernel)

    def param_names(self, source: str, kernel: str) -> list[str]:
        return [p.name for p in self._kernel(source, kernel).params]

    def mutable_params(self, source: str, kernel: str) -> set[str]:
        return {p.name for p in self._kernel(source, kernel).params if p.mutable}


@pytest.fixture(scope="session")
def differential(tmp_path_factory) -> Differential:
    """``differential(source, kernel, *args, out=None, ulps=None, parallel_order="forward",
    seed=0, **kwargs)``: compiled vs interpreted, see the module docstring. Session-scoped:
    builds are cached by source text for the whole session."""
    return Differential(tmp_path_factory.mktemp("differential"))
