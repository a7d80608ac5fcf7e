"""The reference interpreter on its own: KIR text in, values out, with no compiler stage in
between (``intentc/interp`` imports only ``intentc.base`` and ``intentc.kir``).

Each test parses a small KIR module (``kir/parser.py``) and runs it with
``interpret_module``, checking the meaning the interpreter defines against NumPy or the
spec's rule: integer arithmetic wraps (D3), parallel points may run in any order with the
same result (P1), a read out of range fails with INTENT_E_BOUNDS (D5), an argument check before the body writes nothing (S1), and
the handler table covers every declared op.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from intentc.base.status import CODE, KernelError
from intentc.interp import PARALLEL_ORDERS, interpret_module
from intentc.interp.registry import FAMILIES, HANDLERS
from intentc.kir.ops import REGISTRY
from intentc.kir.parser import parse_module

REPO = Path(__file__).resolve().parents[2]

SCALE_AND_SHIFT = """module @m

kernel @scale_shift(%a: i32, %x: tensor<i32[?]> ["N"], %out: tensor<i32[?]> mut ["N"]) -> () {
  %N:index = dim(%x) {"axis": 0}
  %m:index = dim(%out) {"axis": 0}
  assert_eq(%m, %N) {"rule": "S1", "what": "extent N"}
  %z:index = const() {"value": 0}
  %one:index = const() {"value": 1}
  %d:domain = domain(%z, %N, %one)
  parallel(%d) {
    ^(%i:index)
    %v:i32 = load(%x, %i)
    %p:i32 = mul(%v, %a)
    store(%out, %i, %p)
    yield()
  }
  return()
}
"""

NEIGHBOUR = SCALE_AND_SHIFT.replace("%v:i32 = load(%x, %i)", "%j:index = add(%i, %one)\n    %v:i32 = load(%x, %j)")


def test_points_compute_what_numpy_computes_with_wrapping_integers():
    """D3: i32 products wrap modulo 2^32, as NumPy's int32 does."""
    module = parse_module(SCALE_AND_SHIFT)
    x = np.array([1, -7, 2**30, 2**31 - 1], dtype=np.int32)
    out = np.zeros_like(x)
    interpret_module(module, "scale_shift", 3, x, out)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out, x * np.int32(3))


@pytest.mark.parametrize("order", PARALLEL_ORDERS)
def test_every_point_order_gives_the_same_result(order):
    """P1: the points of a parallel loop are unordered; any order the interpreter can take
    gives the same values for a race-free body."""
    module = parse_module(SCALE_AND_SHIFT)
    x = np.arange(50, dtype=np.int32)
    out = np.zeros_like(x)
    interpret_module(module, "scale_shift", -2, x, out, parallel_order=order, seed=7)
    np.testing.assert_array_equal(out, x * -2)


def test_an_out_of_range_read_fails_with_bounds():
    """D5: x[i + 1] at the last point is out of range: the call fails with INTENT_E_BOUNDS at
    that point (points before it have run, as in the compiled code)."""
    module = parse_module(NEIGHBOUR)
    x = np.arange(6, dtype=np.int32)
    out = np.full_like(x, 99)
    with pytest.raises(KernelError) as raised:
        interpret_module(module, "scale_shift", 2, x, out)
    assert raised.value.code == CODE["INTENT_E_BOUNDS"]
    assert "out of range" in str(raised.value)


def test_a_shape_mismatch_is_refused_before_the_body_runs():
    """S1: the result extent N must equal the input's; a longer out is refused."""
    module = parse_module(SCALE_AND_SHIFT)
    x, out = np.arange(4, dtype=np.int32), np.zeros(5, dtype=np.int32)
    with pytest.raises(KernelError):
        interpret_module(module, "scale_shift", 1, x, out)
    np.testing.assert_array_equal(out, 0)


def test_the_handler_table_defines_every_declared_op_once():
    """Every op the KIR registry declares has a meaning, and no two families define one."""
    assert not sorted(set(REGISTRY) - set(HANDLERS))
    owners: dict[str, str] = {}
    for family, handlers in FAMILIES:
        for name in handlers:
            assert name not in owners, f"{name}: {owners[name]} and {family}"
            owners[name] = family


def test_the_interpreter_loads_without_the_code_generators():
    """The reference semantics depend on the IR alone: importing the interpreter pulls in
    neither llvmlite nor any later stage of the compiler."""
    probe = ("import sys; import intentc.interp, intentc.kir.parser; "
             "bad = sorted(m for m in sys.modules if m.startswith(('llvmlite', 'intentc.codegen', "
             "'intentc.lower', 'intentc.sema', 'intentc.driver', 'intentc.loader'))); print(bad)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout
