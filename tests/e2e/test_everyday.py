"""Kernels as their users write them (issue: everyday kernels): llm.c's CPU training
kernels and PolyBench/C kernels, ported from the C originals' logic into
``tests/e2e/everyday/*.intent`` with views, slice assignment, ``range``, ``min``/``max``,
``I.mean(x, axis=...)``, writes through row views, tensor loop carries and parameter
extent expressions (``f32[B, T, 3 * C]``), and no ``I.cast`` of an extent.

Every kernel runs compiled and in the reference interpreter (the ``differential``
fixture: integers and pointwise float programs bit for bit, programs with float
reductions or contractions within ``REGROUPED`` of each other, float ``**`` within a few
ULP) and is compared with an independent NumPy reference. The NumPy tolerance is stated
per kernel: exact where the kernel and the reference perform the same IEEE operations in
the same order (element-wise stencils, ordered scalar loops, integers), otherwise a bound
for the regrouped sums (or intentc's own ``exp``/``log``/``tanh``/``pow``, < 2 ulp) against
a float64 reference. Each source builds once per session (the fixture's cache)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import intentc

HERE = Path(__file__).parent / "everyday"
LLMC = (HERE / "llmc.intent").read_text()
BLAS = (HERE / "polybench_blas.intent").read_text()
STENCILS = (HERE / "polybench_stencils.intent").read_text()
SOLVERS = (HERE / "polybench_solvers.intent").read_text()

F32, F64 = np.float32, np.float64


@pytest.fixture()
def rng():
    return np.random.default_rng(2024)


def _u(rng, *shape, dtype=F32, low=-1.0, high=1.0):
    return rng.uniform(low, high, shape).astype(dtype)


# ---------------------------------------------------------------------------------------
# llm.c (train_gpt2.c), float32
# ---------------------------------------------------------------------------------------
def test_encoder_forward_and_backward(differential, rng):
    B, T, C, V, L = 2, 3, 8, 11, 5
    inp = rng.integers(0, V, (B, T)).astype(np.int32)
    inp[0, 0] = inp[1, 2]  # a repeated token accumulates twice in dwte
    wte, wpe = _u(rng, V, C), _u(rng, L, C)
    run = differential(LLMC, "encoder_forward", inp, wte, wpe, np.zeros((B, T, C), F32))
    np.testing.assert_array_equal(run.args[3], wte[inp] + wpe[None, :T])  # one f32 add each
    dwte, dwpe, dout = _u(rng, V, C), _u(rng, L, C), _u(rng, B, T, C)
    run = differential(LLMC, "encoder_backward", dwte, dwpe, dout, inp)
    want_wte, want_wpe = dwte.copy(), dwpe.copy()
    for b in range(B):  # the C loop order: each element's f32 adds in (b, t) order, exact
        for t in range(T):
            want_wte[inp[b, t]] += dout[b, t]
            want_wpe[t] += dout[b, t]
    np.testing.assert_array_equal(run.args[0], want_wte)
    np.testing.assert_array_equal(run.args[1], want_wpe)


def _layernorm_reference(inp, weight, bias):
    x = inp.astype(F64)
    m = x.mean(-1, keepdims=True)
    s = 1.0 / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + 1e-5)
    return (x - m) * s * weight + bias, m[..., 0], s[..., 0]


def test_layernorm_forward(differential, rng):
    B, T, C = 2, 3, 37
    inp, weight, bias = _u(rng, B, T, C, low=-2, high=3), _u(rng, C), _u(rng, C)
    zeros = [np.zeros(s, F32) for s in ((B, T, C), (B, T), (B, T))]
    run = differential(LLMC, "layernorm_forward", *zeros, inp, weight, bias)
    out, mean, rstd = _layernorm_reference(inp, weight, bias)
    # f32 sums of 37 terms (regrouped) against float64: a few f32 ulps of the magnitudes
    np.testing.assert_allclose(run.args[0], out, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(run.args[1], mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(run.args[2], rstd, rtol=1e-5)


def test_layernorm_backward(differential, rng):
    B, T, C = 2, 3, 24
    inp, weight, dout = _u(rng, B, T, C), _u(rng, C), _u(rng, B, T, C)
    _, mean, rstd = _layernorm_reference(inp, weight, np.zeros(C, F32))
    mean, rstd = mean.astype(F32), rstd.astype(F32)
    dinp, dweight, dbias = _u(rng, B, T, C), _u(rng, C), _u(rng, C)
    run = differential(LLMC, "layernorm_backward", dinp, dweight, dbias, dout, inp, weight, mean, rstd)
    x, g = inp.astype(F64), dout.astype(F64)
    norm = (x - mean[..., None]) * rstd[..., None]
    dnorm = weight * g
    want = dinp + (dnorm - dnorm.mean(-1, keepdims=True) - norm * (dnorm * norm).mean(-1, keepdims=True)) \
        * rstd[..., None]
    np.testing.assert_allclose(run.args[0], want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(run.args[1], dweight + (norm * g).sum((0, 1)), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(run.args[2], dbias + g.sum((0, 1)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kernel", ["matmul_forward", "matmul_forward_contract"])
def test_matmul_forward(differential, rng, kernel):
    B, T, C, OC = 2, 3, 16, 5
    inp, weight, bias = _u(rng, B, T, C), _u(rng, OC, C), _u(rng, OC)
    want = inp.astype(F64) @ weight.T.astype(F64) + bias
    if kernel == "matmul_forward":
        run = differential(LLMC, kernel, np.zeros((B, T, OC), F32), inp, weight, bias)
        got = run.args[0]
    else:
        got = differential(LLMC, kernel, inp, weight, bias).result
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)  # 16-term f32 dot products


def test_matmul_backward(differential, rng):
    B, T, C, OC = 2, 3, 8, 5
    dinp, dweight, dbias = _u(rng, B, T, C), _u(rng, OC, C), _u(rng, OC)
    dout, inp, weight = _u(rng, B, T, OC), _u(rng, B, T, C), _u(rng, OC, C)
    run = differential(LLMC, "matmul_backward", dinp, dweight, dbias, dout, inp, weight)
    g, x = dout.astype(F64), inp.astype(F64)
    np.testing.assert_allclose(run.args[0], dinp + g @ weight, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(run.args[1], dweight + np.einsum("bto,btc->oc", g, x), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(run.args[2], dbias + g.sum((0, 1)), rtol=1e-5, atol=1e-5)


def test_attention_forward(differential, rng):
    B, T, C, NH = 2, 5, 12, 3
    hs = C // NH
    inp = _u(rng, B, T, 3 * C)  # qkv: f32[B, T, 3 * C], the extent expression checked on entry
    preatt, att = _u(rng, B, NH, T, T), _u(rng, B, NH, T, T)  # garbage the kernel overwrites
    run = differential(LLMC, "attention_forward", np.zeros((B, T, C), F32), preatt, att, inp)
    x = inp.astype(F64)
    q, k, v = (x[:, :, i * C:(i + 1) * C].reshape(B, T, NH, hs).transpose(0, 2, 1, 3) for i in range(3))
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(hs)
    causal = np.tril(np.ones((T, T), bool))
    masked = np.where(causal, scores, -np.inf)
    e = np.exp(masked - masked.max(-1, keepdims=True))
    probs = e / e.sum(-1, keepdims=True)
    out = (probs @ v).transpose(0, 2, 1, 3).reshape(B, T, C)
    # preatt is left as it was above the diagonal (the C loop writes t2 <= t only)
    np.testing.assert_allclose(np.where(causal, run.args[1], 0), np.where(causal, scores, 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(np.where(causal, 0, run.args[1]), np.where(causal, 0, preatt))
    np.testing.assert_allclose(run.args[2], probs, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(run.args[0], out, rtol=1e-5, atol=1e-6)
    with pytest.raises(intentc.KernelError, match=r"3\*C"):  # 3 * C is checked on entry (S1)
        differential.build(LLMC).attention_forward(np.zeros((B, T, C), F32), preatt, att, inp[:, :, :-1])
    # q, k, v per head ([B, NH, T, D]) and the heads merged by out[b, t, h * D + d]
    run = differential(LLMC, "attention_heads", *(np.ascontiguousarray(a, F32) for a in (q, k, v)),
                       np.zeros((B, T, C), F32))
    np.testing.assert_allclose(run.args[3], out, rtol=1e-5, atol=1e-6)


def test_attention_backward(differential, rng):
    B, T, C, NH = 2, 4, 8, 2
    hs = C // NH
    inp, dout = _u(rng, B, T, 3 * C), _u(rng, B, T, C)
    x = inp.astype(F64)
    q, k, v = (x[:, :, i * C:(i + 1) * C].reshape(B, T, NH, hs).transpose(0, 2, 1, 3) for i in range(3))
    causal = np.tril(np.ones((T, T), bool))
    scores = np.where(causal, q @ k.transpose(0, 1, 3, 2) / np.sqrt(hs), -np.inf)
    e = np.exp(scores - scores.max(-1, keepdims=True))
    att = (e / e.sum(-1, keepdims=True)).astype(F32)
    zeros = [np.zeros(s, F32) for s in ((B, T, 3 * C), (B, NH, T, T), (B, NH, T, T))]
    run = differential(LLMC, "attention_backward", *zeros, dout, inp, att)
    p = att.astype(F64)
    g = dout.astype(F64).reshape(B, T, NH, hs).transpose(0, 2, 1, 3)
    datt = np.where(causal, g @ v.transpose(0, 1, 3, 2), 0.0)
    dpre = np.where(causal, p * (datt - (p * datt).sum(-1, keepdims=True)), 0.0)
    dq = dpre @ k / np.sqrt(hs)
    dk = dpre.transpose(0, 1, 3, 2) @ q / np.sqrt(hs)
    dv = p.transpose(0, 1, 3, 2) @ g
    merged = [d.transpose(0, 2, 1, 3).reshape(B, T, C) for d in (dq, dk, dv)]
    np.testing.assert_allclose(run.args[2], datt, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(run.args[1], dpre, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(run.args[0], np.concatenate(merged, -1), rtol=1e-5, atol=1e-6)


def _gelu(x):
    s = np.sqrt(2.0 / np.pi)
    return 0.5 * x * (1.0 + np.tanh(s * (x + 0.044715 * x ** 3)))


def test_gelu_forward_and_backward(differential, rng):
    x = _u(rng, 257, low=-4, high=4)
    run = differential(LLMC, "gelu_forward", np.zeros_like(x), x)
    # intentc's f32 tanh (< 2 ulp) after a few f32 roundings, against float64
    np.testing.assert_allclose(run.args[0], _gelu(x.astype(F64)), rtol=2e-6, atol=2e-7)
    dinp, dout = _u(rng, 257), _u(rng, 257)
    run = differential(LLMC, "gelu_backward", dinp, x, dout)
    h = 1e-6
    xd = x.astype(F64)
    grad = (_gelu(xd + h) - _gelu(xd - h)) / (2 * h)  # the tanh form's derivative, numerically
    np.testing.assert_allclose(run.args[0], dinp + grad * dout, rtol=1e-5, atol=1e-5)


def test_residual_forward(differential, rng):
    a, b = _u(rng, 100), _u(rng, 100)
    run = differential(LLMC, "residual_forward", np.zeros(100, F32), a, b)
    np.testing.assert_array_equal(run.args[0], a + b)


def test_softmax_over_the_gpt2_vocabulary(differential, rng):
    B, T, V, Vp = 1, 2, 50257, 50304  # llm.c pads the vocabulary to Vp
    logits = _u(rng, B, T, Vp, low=-8, high=8)
    probs = np.full((B, T, Vp), 7.0, F32)
    run = differential(LLMC, "softmax_forward", probs, logits, V)
    x = logits[..., :V].astype(F64)
    e = np.exp(x - x.max(-1, keepdims=True))
    # 50257-term f32 sum, regrouped, and intentc's f32 exp (< 1 ulp): relative 1e-5
    np.testing.assert_allclose(run.args[0][..., :V], e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-12)
    np.testing.assert_array_equal(run.args[0][..., V:], 0.0)


def test_crossentropy_forward_and_softmax_backward(differential, rng):
    B, T, V, Vp = 2, 3, 37, 40
    logits = _u(rng, B, T, Vp, low=-3, high=3)
    e = np.exp(logits[..., :V].astype(F64))
    probs = np.zeros((B, T, Vp), F32)
    probs[..., :V] = e / e.sum(-1, keepdims=True)
    targets = rng.integers(0, V, (B, T)).astype(np.int32)
    run = differential(LLMC, "crossentropy_forward", np.zeros((B, T), F32), probs, targets)
    picked = np.take_along_axis(probs, targets[..., None].astype(np.int64), -1)[..., 0]
    np.testing.assert_allclose(run.args[0], -np.log(picked.astype(F64)), rtol=1e-6)  # intentc's log, < 1 ulp
    dlogits, dlosses = _u(rng, B, T, Vp), _u(rng, B, T)
    run = differential(LLMC, "crossentropy_softmax_backward", dlogits, dlosses, probs, targets, V)
    want = dlogits.copy()
    onehot = np.arange(V) == targets[..., None]
    want[..., :V] += (probs[..., :V] - onehot.astype(F32)) * dlosses[..., None]  # f32 ops as in C: exact
    np.testing.assert_array_equal(run.args[0], want)


def test_adamw(differential, rng):
    n = 67
    params, grads = _u(rng, n), _u(rng, n)
    m, v = _u(rng, n, low=-0.1, high=0.1), _u(rng, n, low=0, high=0.01)
    lr, b1, b2, eps, wd, t = 1e-3, 0.9, 0.999, 1e-8, 0.01, 7
    run = differential(LLMC, "adamw", params, grads, m, v, np.int32(t), F32(lr), F32(b1), F32(b2), F32(eps), F32(wd))
    g, p = grads.astype(F64), params.astype(F64)
    b1, b2 = F64(F32(b1)), F64(F32(b2))  # the f32 constants the kernel computes with
    mm = b1 * m + (1 - b1) * g
    vv = b2 * v + (1 - b2) * g * g
    want = p - F32(lr) * ((mm / (1 - b1 ** t)) / (np.sqrt(vv / (1 - b2 ** t)) + F32(eps)) + F32(wd) * p)
    np.testing.assert_allclose(run.args[2], mm, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(run.args[3], vv, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(run.args[0], want, rtol=1e-6, atol=1e-7)  # f32 ops and intentc's pow (< 2 ulp)


# ---------------------------------------------------------------------------------------
# PolyBench/C 4.2, float64
# ---------------------------------------------------------------------------------------
F64_SUMS = dict(rtol=1e-12, atol=1e-12)  # short float64 sums, regrouped: a few ulps


def test_gemm_2mm_3mm(differential, rng):
    NI, NJ, NK, NL, NM = 5, 6, 7, 4, 3
    alpha, beta = 1.5, 1.2
    C, A, B = _u(rng, NI, NJ, dtype=F64), _u(rng, NI, NK, dtype=F64), _u(rng, NK, NJ, dtype=F64)
    run = differential(BLAS, "gemm", alpha, beta, C, A, B)
    np.testing.assert_allclose(run.args[2], beta * C + alpha * A @ B, **F64_SUMS)
    A, B, Cm, D = (_u(rng, *s, dtype=F64) for s in ((NI, NK), (NK, NJ), (NJ, NL), (NI, NL)))
    run = differential(BLAS, "k2mm", alpha, beta, np.zeros((NI, NJ)), A, B, Cm, D)
    np.testing.assert_allclose(run.args[2], alpha * A @ B, **F64_SUMS)
    np.testing.assert_allclose(run.args[6], beta * D + (alpha * A @ B) @ Cm, **F64_SUMS)
    A, B, Cm, D = (_u(rng, *s, dtype=F64) for s in ((NI, NK), (NK, NJ), (NJ, NM), (NM, NL)))
    run = differential(BLAS, "k3mm", np.zeros((NI, NJ)), A, B, np.zeros((NJ, NL)), Cm, D, np.zeros((NI, NL)))
    np.testing.assert_allclose(run.args[0], A @ B, **F64_SUMS)
    np.testing.assert_allclose(run.args[3], Cm @ D, **F64_SUMS)
    np.testing.assert_allclose(run.args[6], (A @ B) @ (Cm @ D), **F64_SUMS)


def test_atax_bicg_mvt(differential, rng):
    M, N = 6, 8
    A, x = _u(rng, M, N, dtype=F64), _u(rng, N, dtype=F64)
    run = differential(BLAS, "atax", A, x, np.full(N, 9.0), np.zeros(M))
    np.testing.assert_allclose(run.args[3], A @ x, **F64_SUMS)
    np.testing.assert_allclose(run.args[2], A.T @ (A @ x), **F64_SUMS)
    A, p, r = _u(rng, N, M, dtype=F64), _u(rng, M, dtype=F64), _u(rng, N, dtype=F64)
    run = differential(BLAS, "bicg", A, np.full(M, 3.0), np.zeros(N), p, r)
    np.testing.assert_allclose(run.args[1], r @ A, **F64_SUMS)
    np.testing.assert_allclose(run.args[2], A @ p, **F64_SUMS)
    A, x1, x2, y1, y2 = _u(rng, N, N, dtype=F64), *(_u(rng, N, dtype=F64) for _ in range(4))
    run = differential(BLAS, "mvt", x1, x2, y1, y2, A)
    np.testing.assert_allclose(run.args[0], x1 + A @ y1, **F64_SUMS)
    np.testing.assert_allclose(run.args[1], x2 + A.T @ y2, **F64_SUMS)


def test_gemver_gesummv(differential, rng):
    N = 9
    alpha, beta = 1.5, 1.2
    A = _u(rng, N, N, dtype=F64)
    u1, v1, u2, v2, w, x, y, z = (_u(rng, N, dtype=F64) for _ in range(8))
    run = differential(BLAS, "gemver", alpha, beta, A, u1, v1, u2, v2, w, x, y, z)
    A2 = A + np.outer(u1, v1) + np.outer(u2, v2)
    x2 = x + beta * (A2.T @ y) + z
    np.testing.assert_array_equal(run.args[2], A + u1[:, None] * v1 + u2[:, None] * v2)  # element-wise: exact
    np.testing.assert_allclose(run.args[8], x2, **F64_SUMS)
    np.testing.assert_allclose(run.args[7], w + alpha * (A2 @ x2), **F64_SUMS)
    A, B = _u(rng, N, N, dtype=F64), _u(rng, N, N, dtype=F64)
    run = differential(BLAS, "gesummv", alpha, beta, A, B, np.zeros(N), x, np.zeros(N))
    np.testing.assert_allclose(run.args[4], A @ x, **F64_SUMS)
    np.testing.assert_allclose(run.args[6], alpha * (A @ x) + beta * (B @ x), **F64_SUMS)


def test_syrk_syr2k(differential, rng):
    N, M = 7, 5
    alpha, beta = 1.5, 1.2
    C, A, B = _u(rng, N, N, dtype=F64), _u(rng, N, M, dtype=F64), _u(rng, N, M, dtype=F64)
    lower = np.tril(np.ones((N, N), bool))
    run = differential(BLAS, "syrk", alpha, beta, C, A)
    np.testing.assert_allclose(run.args[2], np.where(lower, beta * C + alpha * A @ A.T, C), **F64_SUMS)
    run = differential(BLAS, "syr2k", alpha, beta, C, A, B)
    np.testing.assert_allclose(run.args[2], np.where(lower, beta * C + alpha * (A @ B.T + B @ A.T), C), **F64_SUMS)


def test_trmm_symm(differential, rng):
    M, N = 6, 5
    alpha, beta = 1.5, 1.2
    A, B = _u(rng, M, M, dtype=F64), _u(rng, M, N, dtype=F64)
    run = differential(BLAS, "trmm", alpha, A, B)
    unit_lower = np.tril(A, -1) + np.eye(M)  # trmm reads A below the diagonal, 1 on it
    np.testing.assert_allclose(run.args[2], alpha * unit_lower.T @ B, **F64_SUMS)
    C = _u(rng, M, N, dtype=F64)
    run = differential(BLAS, "symm", alpha, beta, C, A, B)
    sym = np.tril(A) + np.tril(A, -1).T  # symm reads the lower triangle of A
    np.testing.assert_allclose(run.args[2], beta * C + alpha * sym @ B, **F64_SUMS)


def _jacobi_1d(A, B, steps):
    A, B = A.copy(), B.copy()
    for _ in range(steps):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])
    return A, B


def _jacobi_2d(A, B, steps):
    A, B = A.copy(), B.copy()
    for _ in range(steps):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] + A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] + B[2:, 1:-1] + B[:-2, 1:-1])
    return A, B


def test_jacobi(differential, rng):
    # element-wise float64 in the same operation order as NumPy: exact
    A, B = _u(rng, 12, dtype=F64), _u(rng, 12, dtype=F64)
    run = differential(STENCILS, "jacobi_1d", 4, A, B)
    for got, want in zip(run.args[1:], _jacobi_1d(A, B, 4)):
        np.testing.assert_array_equal(got, want)
    A, B = _u(rng, 7, 7, dtype=F64), _u(rng, 7, 7, dtype=F64)
    run = differential(STENCILS, "jacobi_2d", 3, A, B)
    for got, want in zip(run.args[1:], _jacobi_2d(A, B, 3)):
        np.testing.assert_array_equal(got, want)
    run = differential(STENCILS, "jacobi_2d_carried", 3, A)  # the grid carried by the time loop
    want = A.copy()
    for _ in range(3):
        nxt = want.copy()
        nxt[1:-1, 1:-1] = 0.2 * (want[1:-1, 1:-1] + want[1:-1, :-2] + want[1:-1, 2:] + want[2:, 1:-1]
                                 + want[:-2, 1:-1])
        want = nxt
    np.testing.assert_array_equal(run.result, want)
    run = differential(STENCILS, "jacobi_2d_carried", 0, A)
    np.testing.assert_array_equal(run.result, A)


def test_seidel_2d_keeps_the_c_order(differential, rng):
    A = _u(rng, 8, 8, dtype=F64)
    run = differential(STENCILS, "seidel_2d", 2, A)
    want = A.copy()
    n = len(A)
    for _ in range(2):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                want[i, j] = (want[i - 1, j - 1] + want[i - 1, j] + want[i - 1, j + 1] + want[i, j - 1]
                              + want[i, j] + want[i, j + 1] + want[i + 1, j - 1] + want[i + 1, j]
                              + want[i + 1, j + 1]) / 9.0
    np.testing.assert_array_equal(run.args[1], want)  # one ordered sequence of f64 ops: exact


def test_heat_3d(differential, rng):
    N, steps = 6, 3
    A, B = _u(rng, N, N, N, dtype=F64), _u(rng, N, N, N, dtype=F64)
    run = differential(STENCILS, "heat_3d", steps, A, B)
    a, b = A.copy(), B.copy()
    i = slice(1, N - 1)
    for _ in range(steps):
        for src, dst in ((a, b), (b, a)):
            c = src[i, i, i]
            dst[i, i, i] = (0.125 * (src[2:, i, i] - 2.0 * c + src[:-2, i, i])
                            + 0.125 * (src[i, 2:, i] - 2.0 * c + src[i, :-2, i])
                            + 0.125 * (src[i, i, 2:] - 2.0 * c + src[i, i, :-2]) + c)
    np.testing.assert_array_equal(run.args[1], a)
    np.testing.assert_array_equal(run.args[2], b)


def test_fdtd_2d(differential, rng):
    NX, NY, T = 6, 7, 4
    ex, ey, hz = (_u(rng, NX, NY, dtype=F64) for _ in range(3))
    fict = _u(rng, T, dtype=F64)
    run = differential(STENCILS, "fdtd_2d", ex, ey, hz, fict)
    ex, ey, hz = ex.copy(), ey.copy(), hz.copy()
    for t in range(T):
        ey[0, :] = fict[t]
        ey[1:, :] = ey[1:, :] - 0.5 * (hz[1:, :] - hz[:-1, :])
        ex[:, 1:] = ex[:, 1:] - 0.5 * (hz[:, 1:] - hz[:, :-1])
        hz[:-1, :-1] = hz[:-1, :-1] - 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])
    for got, want in zip(run.args[:3], (ex, ey, hz)):
        np.testing.assert_array_equal(got, want)


def test_covariance_correlation(differential, rng):
    N, M = 9, 5
    data = _u(rng, N, M, dtype=F64, low=0, high=4)
    run = differential(SOLVERS, "covariance", data, np.zeros((M, M)), np.zeros(M))
    np.testing.assert_allclose(run.args[2], data.mean(0), **F64_SUMS)
    np.testing.assert_allclose(run.args[0], data - data.mean(0), **F64_SUMS)
    np.testing.assert_allclose(run.args[1], np.cov(data, rowvar=False), **F64_SUMS)
    # points i write cov[i, j] and cov[j, i] for j >= i: disjoint, as the race sanitizer confirms (P3)
    intentc.interpret(SOLVERS, "covariance", data.copy(), np.zeros((M, M)), np.zeros(M), sanitize="race")
    data[:, 3] = 2.0  # a constant column: its stddev is <= eps and becomes 1.0
    run = differential(SOLVERS, "correlation", float(N), data, np.zeros((M, M)), np.zeros(M), np.zeros(M))
    mean, std = data.mean(0), data.std(0)
    std = np.where(std <= 0.1, 1.0, std)
    np.testing.assert_allclose(run.args[3], mean, **F64_SUMS)
    np.testing.assert_allclose(run.args[4], std, **F64_SUMS)
    z = (data - mean) / (np.sqrt(N) * std)
    np.testing.assert_allclose(run.args[1], z, **F64_SUMS)
    corr = z.T @ z
    np.fill_diagonal(corr, 1.0)
    np.testing.assert_allclose(run.args[2], corr, **F64_SUMS)
    sub = data[:, [0, 1, 2]]
    np.testing.assert_allclose(run.args[2][:3, :3], np.corrcoef(sub, rowvar=False), rtol=1e-10)


def test_floyd_warshall(differential, rng):
    N = 9
    path = rng.integers(1, 40, (N, N)).astype(np.int32)
    np.fill_diagonal(path, 0)
    want = path.copy()
    for k in range(N):
        want = np.minimum(want, want[:, k:k + 1] + want[k:k + 1, :])
    run = differential(SOLVERS, "floyd_warshall", path)  # a tensor carried by the k loop
    np.testing.assert_array_equal(run.result, want)
    run = differential(SOLVERS, "floyd_warshall_in_place", path.copy())
    np.testing.assert_array_equal(run.args[0], want)


def test_trisolv_lu_cholesky(differential, rng):
    N = 8
    L = np.tril(_u(rng, N, N, dtype=F64)) + np.eye(N) * N
    b = _u(rng, N, dtype=F64)
    run = differential(SOLVERS, "trisolv", L, np.zeros(N), b)
    np.testing.assert_allclose(run.args[1], np.linalg.solve(L, b), rtol=1e-12, atol=1e-13)
    M = _u(rng, N, N, dtype=F64)
    spd = M @ M.T + N * np.eye(N)
    run = differential(SOLVERS, "lu", spd.copy())
    lo, up = np.tril(run.args[0], -1) + np.eye(N), np.triu(run.args[0])
    np.testing.assert_allclose(lo @ up, spd, rtol=1e-12, atol=1e-12)
    run = differential(SOLVERS, "cholesky", spd.copy())
    chol = np.linalg.cholesky(spd)
    np.testing.assert_allclose(np.tril(run.args[0]), chol, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(np.triu(run.args[0], 1), np.triu(spd, 1))  # the upper part is untouched


def test_durbin(differential, rng):
    N = 10
    r = 0.6 ** np.arange(1, N + 1)  # the autocorrelation of an AR(1) process: an SPD Toeplitz system
    run = differential(SOLVERS, "durbin", r, np.zeros(N), np.zeros(N))
    toeplitz = 0.6 ** np.abs(np.subtract.outer(np.arange(N), np.arange(N)))
    np.testing.assert_allclose(run.args[1], np.linalg.solve(toeplitz, -r), rtol=1e-10, atol=1e-12)


def test_nussinov(differential, rng):
    N = 12
    seq = rng.integers(0, 4, N).astype(np.int32)
    run = differential(SOLVERS, "nussinov", seq, np.zeros((N, N), np.int32))
    table = np.zeros((N, N), np.int64)
    for i in range(N - 1, -1, -1):  # the C loop, as written
        for j in range(i + 1, N):
            if j - 1 >= 0:
                table[i, j] = max(table[i, j], table[i, j - 1])
            if i + 1 < N:
                table[i, j] = max(table[i, j], table[i + 1, j])
            if j - 1 >= 0 and i + 1 < N:
                if i < j - 1:
                    table[i, j] = max(table[i, j], table[i + 1, j - 1] + int(seq[i] + seq[j] == 3))
                else:
                    table[i, j] = max(table[i, j], table[i + 1, j - 1])
            for k in range(i + 1, j):
                table[i, j] = max(table[i, j], table[i, k] + table[k + 1, j])
    np.testing.assert_array_equal(run.args[1], table)
