"""The P3 check reasons about the points that exist (sema/memory_checks.py,
``_point_difference``): the points of ``I.domain(b, e, s)`` are ``b + s*k``, and two points
of a domain with constant bounds are at most its span apart. So a pair swap over
``I.domain(0, N - 1, 2)`` writing ``out[i]`` and ``out[i + 1]`` is accepted (no point lies
one step away), as are accesses whose second point would fall outside the axis, while
genuinely colliding variants are refused naming two points that exist (P3, M4). The
diagnostics do not depend on Python's hash seed."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from sema_programs import REPO, build, diagnostics

import intentc

SWAP = """@intent.kernel
def k(x: f32[N], out: mut f32[N]):
    for i in I.parallel(I.domain(0, N - 1, {step})):
        out[i] = x[i + {far}]
        out[i + {far}] = x[i]
"""

ACCEPTED = {
    "pair swap, step 2": SWAP.format(step=2, far=1),
    "triples, step 3": ("@intent.kernel\ndef k(x: f32[N], out: mut f32[N]):\n"
                        "    for i in I.parallel(I.domain(0, N - 2, 3)):\n"
                        "        out[i] = x[i + 2]\n        out[i + 1] = x[i + 1]\n        out[i + 2] = x[i]\n"),
    "second half beyond the constant span": ("@intent.kernel\ndef k(x: f32[8], out: mut f32[8]):\n"
                                             "    for i in I.parallel(I.domain(0, 4)):\n"
                                             "        out[i] = x[i + 4]\n        out[i + 4] = x[i]\n"),
    "read one step away on a step-2 domain": ("@intent.kernel\ndef k(out: mut f32[N]):\n"
                                              "    for i in I.parallel(I.domain(0, N - 1, 2)):\n"
                                              "        out[i] = out[i + 1]\n"),
    "mixed radix of an axis of extent 2": ("@intent.kernel\ndef k(x: f32[R, 2], out: mut f32[R * 2]):\n"
                                           "    for r, c in I.parallel(x.axis(0), x.axis(1)):\n"
                                           "        out[r * 2 + c] = x[r, c]\n"),
}

REFUSED = {  # name -> (source, rule, the words of the message)
    "pair swap, step 1": (SWAP.format(step=1, far=1), "P3",
                          "data race on 'out': point (i - 1) writes the element that point (i) writes at line 6"),
    "step 2, two steps away": (SWAP.format(step=2, far=2), "P3",
                               "data race on 'out': point (i - 2) writes the element that point (i) writes"),
    "triples, step 3, a step away": ("@intent.kernel\ndef k(x: f32[N], out: mut f32[N]):\n"
                                     "    for i in I.parallel(I.domain(0, N - 3, 3)):\n"
                                     "        out[i] = x[i]\n        out[i + 3] = x[i]\n", "P3",
                                     "point (i - 3) writes the element that point (i) writes"),
    "inside the constant span": ("@intent.kernel\ndef k(x: f32[8], out: mut f32[8]):\n"
                                 "    for i in I.parallel(I.domain(0, 5)):\n"
                                 "        out[i] = x[i]\n        out[i + 3] = x[i]\n", "P3",
                                 "point (i - 3) writes the element that point (i) writes"),
    "mixed radix of an axis of extent 3": ("@intent.kernel\ndef k(x: f32[R, 3], out: mut f32[R * 2 + 1]):\n"
                                           "    for r, c in I.parallel(x.axis(0), x.axis(1)):\n"
                                           "        out[r * 2 + c] = x[r, c]\n", "P3",
                                           "the points (r, c) and (r - 1, c + 2) both write the same element"),
    "read one step away on a step-1 domain": ("@intent.kernel\ndef k(out: mut f32[N]):\n"
                                              "    for i in I.parallel(I.domain(0, N - 1)):\n"
                                              "        out[i] = out[i + 1]\n", "P3",
                                              "point (i + 1) writes the element that point (i) reads"),
}


@pytest.mark.parametrize("name", ACCEPTED)
def test_accepted(name):
    build(ACCEPTED[name])


@pytest.mark.parametrize("name", REFUSED)
def test_refused(name):
    source, rule, words = REFUSED[name]
    d = diagnostics(source)[0]
    assert d.rule == rule and words in d.message, d.render_plain()


def test_the_accepted_swap_runs_without_a_race_compiled_and_interpreted():
    source = "import intent as I\n\n" + ACCEPTED["pair swap, step 2"]
    x = np.arange(7, dtype=np.float32)
    want = np.array([1, 0, 3, 2, 5, 4, 0], np.float32)
    out = np.zeros(7, np.float32)
    intentc.interpret(source, "k", x, out, sanitize="race")
    np.testing.assert_array_equal(out, want)
    out = np.zeros(7, np.float32)
    intentc.load_source(source, name="swap2", sanitize=("race",)).k(x, out)
    np.testing.assert_array_equal(out, want)


HASH_SEEDS = ("0", "1", "2", "12345")


def test_diagnostics_do_not_depend_on_the_hash_seed(tmp_path):
    sources = [REFUSED[name][0] for name in ("pair swap, step 1", "mixed radix of an axis of extent 3")]
    sources.append("@intent.kernel\ndef k(x: f32[N], out: mut f32[N], y: mut f32[N]):\n"
                   "    for i in I.parallel(x.axis(0)[1:N]):\n        out[i] = x[i]\n        y[i] = out[i - 1]\n"
                   "        out[i - 1] = y[i]\n")
    sources.append("@intent.kernel\ndef k(x: f32[R, C], out: mut f32[R]):\n"
                   "    for r, c in I.parallel(x.axis(0), x.axis(1)):\n        out[r + c] = x[r, c]\n"
                   "        out[r] = x[r, c]\n")
    for index, source in enumerate(sources):
        path = tmp_path / f"refused{index}.intent"
        path.write_text("import intent as I\n\n" + source)
        outputs = set()
        for seed in HASH_SEEDS:
            env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=str(REPO), NO_COLOR="1", COLUMNS="300")
            proc = subprocess.run([sys.executable, "-m", "intentc", "check", path.name], cwd=tmp_path, env=env,
                                  capture_output=True, text=True, timeout=120)
            assert proc.returncode == 1 and "error" in proc.stderr, proc.stderr
            outputs.add(proc.stderr)
        assert len(outputs) == 1, f"refused{index}: the diagnostics differ between hash seeds:\n" + \
            "\n----\n".join(sorted(outputs))
