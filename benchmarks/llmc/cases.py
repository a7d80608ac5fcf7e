"""The llm.c CPU training kernels at GPT-2 small shapes (C = 768, NH = 12, V = 50257).

Every float kernel is compared with the C loop built -O3 -march=native (serial), which
rounds each operation as written. The tolerances are those of re-association: intentc
sums rows in vector blocks (T1, T3) and uses its own exp/tanh/log (< 1 ulp), the C loop
sums in order with libm's. A row sum of C terms of size ~1 changes by ~C * 2^-24 relative,
so 1e-4 relative with an absolute floor of 1e-5 to 1e-6 covers C = 768 and V = 50257
with margin, while an indexing or formula error shows up as O(1).
"""
from __future__ import annotations

import math

import numpy as np

from realworld_support import Dataset, Kernel, f32, i32, i64, ptr

GPT2 = dict(C=768, NH=12, V=50257)


def _normal(rng, *shape, scale=1.0):
    return (rng.standard_normal(shape, dtype=np.float32) * np.float32(scale)).astype(np.float32)


# ------------------------------------------------------------------------------ encoder

def _encoder_setup(d, rng):
    B, T, C, V = d["B"], d["T"], d["C"], d["V"]
    return dict(inp=rng.integers(0, V, (B, T), dtype=np.int32), wte=_normal(rng, V, C),
                wpe=_normal(rng, T, C), out=np.zeros((B, T, C), np.float32))


def _encoder_numpy(a, d):
    np.add(a["wte"][a["inp"]], a["wpe"], out=a["out"])


ENCODER = Kernel(
    name="llmc/encoder_forward", intent_source="llmc/encoder.intent", intent_symbol="encoder_forward",
    c_source="llmc/encoder.c", c_symbol="encoder_forward",
    tiny=Dataset("tiny", dict(B=2, T=5, C=16, V=11)),
    quick=(Dataset("B=4 T=64", dict(B=4, T=64, **GPT2)),),
    full=(Dataset("B=8 T=1024", dict(B=8, T=1024, **GPT2)),),
    setup=_encoder_setup, mutated=("out",), results=("out",),
    intent_call=lambda k, a, d: k(a["inp"], a["wte"], a["wpe"], a["out"]),
    c_call=lambda fn, a, d: fn(ptr(a["out"]), ptr(a["inp"]), ptr(a["wte"]), ptr(a["wpe"]),
                               i32(d["B"]), i32(d["T"]), i32(d["C"])),
    numpy_call=_encoder_numpy,
    bytes=lambda d: d["B"] * d["T"] * d["C"] * 4 * 3,
    rtol=0.0, atol=0.0, tolerance="one f32 addition per element: bit-identical", ofast=True)


# ---------------------------------------------------------------------------- layernorm

def _ln_forward_setup(d, rng):
    B, T, C = d["B"], d["T"], d["C"]
    return dict(inp=_normal(rng, B, T, C), weight=_normal(rng, C), bias=_normal(rng, C),
                out=np.zeros((B, T, C), np.float32), mean=np.zeros((B, T), np.float32),
                rstd=np.zeros((B, T), np.float32))


def _ln_forward_numpy(a, d):
    x = a["inp"]
    m = x.mean(axis=-1, keepdims=True)
    xc = x - m
    s = 1.0 / np.sqrt((xc * xc).mean(axis=-1, keepdims=True) + np.float32(1e-5))
    np.multiply(xc * s, a["weight"], out=a["out"])
    a["out"] += a["bias"]
    a["mean"][...] = m[..., 0]
    a["rstd"][...] = s[..., 0]


LAYERNORM_FORWARD = Kernel(
    name="llmc/layernorm_forward", intent_source="llmc/layernorm.intent", intent_symbol="layernorm_forward",
    c_source="llmc/layernorm.c", c_symbol="layernorm_forward",
    tiny=Dataset("tiny", dict(B=2, T=3, C=37)),
    quick=(Dataset("B=4 T=64", dict(B=4, T=64, C=768)),),
    full=(Dataset("B=8 T=1024", dict(B=8, T=1024, C=768)),),
    setup=_ln_forward_setup, mutated=("out", "mean", "rstd"), results=("out", "mean", "rstd"),
    intent_call=lambda k, a, d: k(a["inp"], a["weight"], a["bias"], a["out"], a["mean"], a["rstd"]),
    c_call=lambda fn, a, d: fn(ptr(a["out"]), ptr(a["mean"]), ptr(a["rstd"]), ptr(a["inp"]),
                               ptr(a["weight"]), ptr(a["bias"]), i32(d["B"]), i32(d["T"]), i32(d["C"])),
    numpy_call=_ln_forward_numpy,
    bytes=lambda d: d["B"] * d["T"] * d["C"] * 4 * 2,
    rtol=1e-4, atol=1e-5, tolerance="row sums of C terms, regrouped", ofast=True)


def _ln_backward_setup(d, rng):
    a = _ln_forward_setup(d, rng)
    _ln_forward_numpy(a, d)
    B, T, C = d["B"], d["T"], d["C"]
    return dict(dout=_normal(rng, B, T, C), inp=a["inp"], weight=a["weight"], mean=a["mean"], rstd=a["rstd"],
                dinp=np.zeros((B, T, C), np.float32), dweight=np.zeros(C, np.float32),
                dbias=np.zeros(C, np.float32))


def _ln_backward_numpy(a, d):
    C = d["C"]
    norm = (a["inp"] - a["mean"][..., None]) * a["rstd"][..., None]
    dout = a["dout"]
    a["dweight"][...] = (norm * dout).sum(axis=(0, 1))
    a["dbias"][...] = dout.sum(axis=(0, 1))
    dnorm = a["weight"] * dout
    dm = dnorm.sum(axis=-1, keepdims=True) / np.float32(C)
    dnm = (dnorm * norm).sum(axis=-1, keepdims=True) / np.float32(C)
    np.multiply(dnorm - dm - norm * dnm, a["rstd"][..., None], out=a["dinp"])


LAYERNORM_BACKWARD = Kernel(
    name="llmc/layernorm_backward", intent_source="llmc/layernorm.intent", intent_symbol="layernorm_backward",
    c_source="llmc/layernorm.c", c_symbol="layernorm_backward",
    tiny=Dataset("tiny", dict(B=2, T=3, C=37)),
    quick=(Dataset("B=4 T=64", dict(B=4, T=64, C=768)),),
    full=(Dataset("B=8 T=1024", dict(B=8, T=1024, C=768)),),
    setup=_ln_backward_setup, mutated=("dinp", "dweight", "dbias"), results=("dinp", "dweight", "dbias"),
    intent_call=lambda k, a, d: k(a["dout"], a["inp"], a["weight"], a["mean"], a["rstd"],
                                  a["dinp"], a["dweight"], a["dbias"]),
    c_call=lambda fn, a, d: fn(ptr(a["dinp"]), ptr(a["dweight"]), ptr(a["dbias"]), ptr(a["dout"]),
                               ptr(a["inp"]), ptr(a["weight"]), ptr(a["mean"]), ptr(a["rstd"]),
                               i32(d["B"]), i32(d["T"]), i32(d["C"])),
    numpy_call=_ln_backward_numpy,
    bytes=lambda d: d["B"] * d["T"] * d["C"] * 4 * 3,
    # dweight/dbias sum B*T terms: 8192 at full size, so the relative tolerance is wider.
    rtol=2e-4, atol=2e-4, tolerance="sums of C terms per row and of B*T terms per channel, regrouped",
    ofast=True)


# ------------------------------------------------------------------------------- matmul

def _matmul_setup(d, rng):
    B, T, C, OC = d["B"], d["T"], d["C"], d["OC"]
    return dict(inp=_normal(rng, B, T, C), weight=_normal(rng, OC, C, scale=1 / math.sqrt(C)),
                bias=_normal(rng, OC), out=np.zeros((B, T, OC), np.float32))


def _matmul_numpy(a, d):
    B, T, C, OC = d["B"], d["T"], d["C"], d["OC"]
    out = a["out"].reshape(B * T, OC)
    np.matmul(a["inp"].reshape(B * T, C), a["weight"].T, out=out)
    out += a["bias"]


MATMUL = Kernel(
    name="llmc/matmul_forward", intent_source="llmc/matmul.intent", intent_symbol="matmul_forward",
    c_source="llmc/matmul.c", c_symbol="matmul_forward",
    tiny=Dataset("tiny", dict(B=2, T=4, C=19, OC=23)),
    quick=(Dataset("B=1 T=64 OC=2304", dict(B=1, T=64, C=768, OC=2304)),),
    full=(Dataset("B=4 T=1024 OC=2304", dict(B=4, T=1024, C=768, OC=2304)),
          Dataset("B=4 T=1024 OC=3072", dict(B=4, T=1024, C=768, OC=3072))),
    setup=_matmul_setup, mutated=("out",), results=("out",),
    intent_call=lambda k, a, d: k(a["inp"], a["weight"], a["bias"], out=a["out"]),
    c_call=lambda fn, a, d: fn(ptr(a["out"]), ptr(a["inp"]), ptr(a["weight"]), ptr(a["bias"]),
                               i32(d["B"]), i32(d["T"]), i32(d["C"]), i32(d["OC"])),
    numpy_call=_matmul_numpy, numpy_label="NumPy (OpenBLAS)",
    flops=lambda d: 2.0 * d["B"] * d["T"] * d["C"] * d["OC"],
    rtol=1e-4, atol=1e-4, tolerance="dot products of C = 768 terms, fused and regrouped",
    ofast=True)


# ---------------------------------------------------------------------------- attention

def _attention_setup(d, rng):
    B, T, NH, HS = d["B"], d["T"], d["NH"], d["C"] // d["NH"]
    return dict(qkv=_normal(rng, B, T, 3, NH, HS), out=np.zeros((B, T, NH, HS), np.float32))


def _attention_numpy(a, d):
    B, T, NH, HS = d["B"], d["T"], d["NH"], d["C"] // d["NH"]
    mask = np.triu(np.ones((T, T), bool), k=1)
    for b in range(B):
        q, k, v = (a["qkv"][b, :, i].transpose(1, 0, 2) for i in range(3))  # (NH, T, HS)
        s = (q @ k.transpose(0, 2, 1)) * np.float32(1 / math.sqrt(HS))
        s[:, mask] = -np.inf
        s -= s.max(axis=-1, keepdims=True)
        np.exp(s, out=s)
        s /= s.sum(axis=-1, keepdims=True)
        a["out"][b] = (s @ v).transpose(1, 0, 2)


ATTENTION = Kernel(
    name="llmc/attention_forward", intent_source="llmc/attention.intent", intent_symbol="attention_forward",
    c_source="llmc/attention.c", c_symbol="attention_forward",
    tiny=Dataset("tiny", dict(B=2, T=7, C=24, NH=3)),
    quick=(Dataset("B=4 T=64", dict(B=4, T=64, C=768, NH=12)),),
    full=(Dataset("B=8 T=64", dict(B=8, T=64, C=768, NH=12)),
          Dataset("B=1 T=1024", dict(B=1, T=1024, C=768, NH=12))),
    setup=_attention_setup, mutated=("out",), results=("out",),
    intent_call=lambda k, a, d: k(a["qkv"], a["out"]),
    c_call=lambda fn, a, d: fn(ptr(a["out"]), ptr(a["qkv"]), i32(d["B"]), i32(d["T"]), i32(d["C"]),
                               i32(d["NH"])),
    numpy_call=_attention_numpy, numpy_label="NumPy (OpenBLAS)",
    # scores q.k, their exp/sum and the weighted sum of T values: about 4 * HS flops per pair
    flops=lambda d: 4.0 * d["B"] * d["NH"] * (d["T"] * (d["T"] + 1) / 2) * (d["C"] // d["NH"]),
    rtol=1e-4, atol=1e-5, tolerance="dot products of HS terms and softmax sums, regrouped; exp < 1 ulp",
    ofast=True)


# --------------------------------------------------------------------- pointwise kernels

def _gelu_setup(d, rng):
    return dict(x=_normal(rng, d["N"], scale=2.0), out=np.zeros(d["N"], np.float32))


def _gelu_numpy(a, d):
    x = a["x"]
    s = np.float32(math.sqrt(2 / math.pi))
    np.multiply(np.float32(0.5) * x, 1 + np.tanh(s * (x + np.float32(0.044715) * x * x * x)), out=a["out"])


GELU = Kernel(
    name="llmc/gelu_forward", intent_source="llmc/gelu.intent", intent_symbol="gelu_forward",
    c_source="llmc/gelu.c", c_symbol="gelu_forward",
    tiny=Dataset("tiny", dict(N=1001)),
    quick=(Dataset("B=4 T=64 4C", dict(N=4 * 64 * 3072)),),
    full=(Dataset("B=8 T=1024 4C", dict(N=8 * 1024 * 3072)),),
    setup=_gelu_setup, mutated=("out",), results=("out",),
    intent_call=lambda k, a, d: k(a["x"], out=a["out"]),
    c_call=lambda fn, a, d: fn(ptr(a["out"]), ptr(a["x"]), i64(d["N"])),
    numpy_call=_gelu_numpy,
    bytes=lambda d: d["N"] * 8,
    rtol=1e-5, atol=1e-6, tolerance="tanh within 1 ulp of libm's, a few roundings of each",
    ofast=True)


def _softmax_setup(d, rng):
    B, T, V = d["B"], d["T"], d["V"]
    return dict(logits=_normal(rng, B, T, V, scale=3.0), probs=np.zeros((B, T, V), np.float32))


def _softmax_numpy(a, d):
    x = a["logits"]
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    np.divide(e, e.sum(axis=-1, keepdims=True), out=a["probs"])


SOFTMAX = Kernel(
    name="llmc/softmax_forward", intent_source="llmc/softmax.intent", intent_symbol="softmax_forward",
    c_source="llmc/softmax.c", c_symbol="softmax_forward",
    tiny=Dataset("tiny", dict(B=2, T=3, V=101)),
    quick=(Dataset("B=4 T=16 V", dict(B=4, T=16, V=50257)),),
    full=(Dataset("B=4 T=64 V", dict(B=4, T=64, V=50257)),),
    setup=_softmax_setup, mutated=("probs",), results=("probs",),
    intent_call=lambda k, a, d: k(a["logits"], a["probs"]),
    c_call=lambda fn, a, d: fn(ptr(a["probs"]), ptr(a["logits"]), i32(d["B"]), i32(d["T"]), i32(d["V"])),
    numpy_call=_softmax_numpy,
    bytes=lambda d: d["B"] * d["T"] * d["V"] * 8,
    rtol=1e-4, atol=1e-9, tolerance="row sums of V = 50257 exponentials, regrouped; exp < 1 ulp",
    ofast=True)


def _crossentropy_setup(d, rng):
    B, T, V = d["B"], d["T"], d["V"]
    probs = rng.random((B, T, V), dtype=np.float32) + np.float32(1e-3)
    probs /= probs.sum(axis=-1, keepdims=True)
    return dict(probs=probs, targets=rng.integers(0, V, (B, T), dtype=np.int32),
                losses=np.zeros((B, T), np.float32))


def _crossentropy_numpy(a, d):
    B, T = d["B"], d["T"]
    picked = a["probs"][np.arange(B)[:, None], np.arange(T), a["targets"]]
    np.negative(np.log(picked), out=a["losses"])


CROSSENTROPY = Kernel(
    name="llmc/crossentropy_forward", intent_source="llmc/crossentropy.intent",
    intent_symbol="crossentropy_forward", c_source="llmc/crossentropy.c", c_symbol="crossentropy_forward",
    tiny=Dataset("tiny", dict(B=2, T=3, V=17)),
    quick=(Dataset("B=4 T=64 V", dict(B=4, T=64, V=50257)),),
    full=(Dataset("B=4 T=64 V", dict(B=4, T=64, V=50257)),),
    setup=_crossentropy_setup, mutated=("losses",), results=("losses",),
    intent_call=lambda k, a, d: k(a["probs"], a["targets"], out=a["losses"]),
    c_call=lambda fn, a, d: fn(ptr(a["losses"]), ptr(a["probs"]), ptr(a["targets"]),
                               i32(d["B"]), i32(d["T"]), i32(d["V"])),
    numpy_call=_crossentropy_numpy,
    bytes=lambda d: d["B"] * d["T"] * 12,
    rtol=1e-6, atol=1e-6, tolerance="one log per element, < 1 ulp", ofast=True)


ADAMW_HYPER = dict(lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01, t=3)


def _adamw_setup(d, rng):
    N = d["N"]
    return dict(params=_normal(rng, N), grads=_normal(rng, N), m=_normal(rng, N, scale=0.1),
                v=np.abs(_normal(rng, N, scale=0.1)))


def _adamw_numpy(a, d):
    h = ADAMW_HYPER
    b1, b2 = np.float32(h["beta1"]), np.float32(h["beta2"])
    g = a["grads"]
    a["m"] *= b1
    a["m"] += (1 - b1) * g
    a["v"] *= b2
    a["v"] += (1 - b2) * g * g
    m_hat = a["m"] / (1 - b1 ** h["t"])
    v_hat = a["v"] / (1 - b2 ** h["t"])
    a["params"] -= np.float32(h["lr"]) * (m_hat / (np.sqrt(v_hat) + np.float32(h["eps"]))
                                          + np.float32(h["weight_decay"]) * a["params"])


def _adamw_args(h):
    return (h["lr"], h["beta1"], h["beta2"], h["eps"], h["weight_decay"])


ADAMW = Kernel(
    name="llmc/adamw", intent_source="llmc/adamw.intent", intent_symbol="adamw",
    c_source="llmc/adamw.c", c_symbol="adamw",
    tiny=Dataset("tiny", dict(N=1001)),
    quick=(Dataset("N=2^22", dict(N=1 << 22)),),
    full=(Dataset("N=2^24", dict(N=1 << 24)),),
    setup=_adamw_setup, mutated=("params", "m", "v"), results=("params", "m", "v"),
    intent_call=lambda k, a, d: k(a["params"], a["grads"], a["m"], a["v"], *_adamw_args(ADAMW_HYPER),
                                  ADAMW_HYPER["t"]),
    c_call=lambda fn, a, d: fn(ptr(a["params"]), ptr(a["grads"]), ptr(a["m"]), ptr(a["v"]), i64(d["N"]),
                               *(f32(x) for x in _adamw_args(ADAMW_HYPER)), i32(ADAMW_HYPER["t"])),
    numpy_call=_adamw_numpy,
    bytes=lambda d: d["N"] * 4 * 7,
    rtol=1e-5, atol=1e-7, tolerance="powf and pow may differ by an ulp in the bias corrections",
    ofast=True)


KERNELS = (ENCODER, LAYERNORM_FORWARD, LAYERNORM_BACKWARD, MATMUL, ATTENTION, GELU, SOFTMAX,
           CROSSENTROPY, ADAMW)
