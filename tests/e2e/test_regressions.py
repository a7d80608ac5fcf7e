"""Compiler bugs found by differential testing (compiled vs the reference interpreter),
each as the smallest program that showed it. Every test here failed before its fix."""
from __future__ import annotations

import numpy as np

NESTED_PARALLEL = """\
import intent as I

@intent.kernel
def nest(x: f32[R, C], out: mut f32[R, C]):
    for r in I.parallel(x.axis(0)):
        for c in I.parallel(x.axis(1)):
            out[r, c] = x[r, c] * 2.0
"""


def test_nested_parallel_domain_built_in_the_body(differential):
    """The inner domain is built inside the outer parallel body, but the outer loop's
    grain used its length before the loop ran: an uninitialised read that LLVM turned
    into skipping the whole loop (nothing was written). Fixed in schedule_parallel."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = np.zeros((2, 3), np.float32)
    run = differential(NESTED_PARALLEL, "nest", x, out)
    np.testing.assert_array_equal(run.args[1], x * 2)
