"""Results do not depend on the CPU a kernel was built for (docs/testing.md, "CPU-level
matrices"): the numeric rules (casts with saturation and NaN -> 0, integer division,
shifts), intentc's math functions and the samples' digests come out bit for bit the same
for every ``--cpu`` the host can run (x86-64, x86-64-v2, -v3, -v4 and native, as
/proc/cpuinfo allows), and on AArch64 for builds for the baseline and neoverse-n1 run
under ``qemu-aarch64 -cpu`` cortex-a53, neoverse-n1 and max. Every build runs one C
driver (generated from the module's manifest) that reads the same inputs and writes every
output; NaN payloads are not part of the ABI, so a NaN compares equal to any NaN.

Kept cheap: one module of a few kernels (every f16 and bf16 bit pattern, a few thousand f32,
f64, i32 and i64 values) and the four cheapest samples digest.c covers.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from target_tools import (DIGEST, DRIVERS, HOST_IS_X86_64, QEMU, REPO, SYSROOT, TRIPLE, cross_cc, run_cmd)

INTS = ["i8", "i16", "i32", "u8", "u64"]  # the narrow ones saturate f16's range; u64 is converted apart
NUMPY = {"f16": np.float16, "f32": np.float32, **{t: np.dtype(("int" if t[0] == "i" else "uint") + t[1:]).type
                                                  for t in INTS},
         "bf16": np.uint16}  # bf16 compared as bits: its NaNs too (the conversions are integer code)
MATH = ["I.exp(a)", "I.log(a)", "I.tanh(a)", "I.sqrt(a)", "a / b", "a // b", "a % b", "a ** b", "I.minimum(a, b)",
        # f32 arithmetic with f64 steps (math_f32_arith), plain f64 (math_f32), exact (math_exact)
        "I.exp2(a)", "I.log10(a)", "I.atan2(a, b)", "I.asin(a)", "I.erfc(a)", "I.sin(a)", "I.remainder(a, b)"]


def numeric_source() -> str:
    lines = ["import intent as I", ""]
    for src in ("f16", "f32"):
        lines += ["@intent.kernel", f"def casts_{src}(a: {src}[N]) -> ({', '.join(f'{d}[N]' for d in INTS)}):",
                  "    return " + ", ".join(f"I.cast(a, {d})" for d in INTS), ""]
    lines += ["@intent.kernel", f"def math_f32(a: f32[N], b: f32[N]) -> ({', '.join(['f32[N]'] * len(MATH))}):",
              "    return " + ", ".join(MATH), "",
              "@intent.kernel", "def math_f16(a: f16[N], b: f16[N]) -> (f16[N], f16[N], f16[N], f16[N]):",
              "    return I.exp(a), a / b, a * b + a, I.sqrt(a)", "",
              "@intent.kernel", "def ints_i32(a: i32[N], b: i32[N]) -> (i32[N], i32[N], i32[N], i32[N], f16[N]):",
              "    return a // b, a % b, a << b, a >> b, I.cast(a, f16)", "",
              "@intent.kernel",
              "def math_bf16(a: bf16[N], b: bf16[N]) -> (bf16[N], bf16[N], bf16[N], bf16[N], i32[N], f32[N]):",
              "    return a * b + a, a / b, I.exp(a), I.sqrt(a), I.cast(a, i32), I.cast(a, f32)", "",
              "@intent.kernel", "def casts_to_bf16(d: f64[N], k: i64[N]) -> (bf16[N], bf16[N]):",
              "    return I.cast(d, bf16), I.cast(k, bf16)", ""]
    return "\n".join(lines)


def numeric_inputs() -> dict[str, list[np.ndarray]]:
    """Each kernel's inputs: every f16 bit pattern; f32 and i32 edge values and random bits."""
    rng = np.random.default_rng(19)
    f16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    edges = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 0.5, 1.5, 2.5, -2.5, 127.5, 128.0, -129.0, 32767.5, 65535.0,
                      2.0**31, -2.0**31, 2.0**32, 2.0**63, -2.0**63, 2.0**64, 1e-45, 3.4e38], np.float32)
    f32 = np.concatenate([edges, rng.integers(0, 1 << 32, 4096, dtype=np.uint64).astype(np.uint32).view(np.float32),
                          rng.standard_normal(1024).astype(np.float32) * 100])
    i32 = np.concatenate([np.array([0, 1, -1, 7, -7, 2**31 - 1, -2**31, 65504, 65520, -65520, 2049], np.int32),
                          rng.integers(-2**31, 2**31, 2048).astype(np.int32)])
    shifts = np.concatenate([np.array([0, 1, -1, 31, 32, 33, -32, 0, 2, -2, 3], np.int32),
                             rng.integers(-40, 40, 2048).astype(np.int32)])
    # one operand for // and % (zero and -1 among them) and for << and >> (amounts outside [0, 32))
    b = np.where(np.arange(shifts.size) % 2 == 0, shifts, rng.integers(-9, 9, shifts.size)).astype(np.int32)
    bf16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)  # every bf16 bit pattern
    f64 = np.concatenate([edges.astype(np.float64), [1 + 2.0**-8 + 2.0**-30, 3.3961e38, 2.0**-134 * 1.5],
                          rng.integers(0, 1 << 63, 4096 - edges.size - 3, dtype=np.uint64).view(np.float64)])
    i64 = np.concatenate([np.array([2**63 - 1, -2**63, (1 << 62) + (1 << 54), (1 << 62) + (1 << 54) + 1], np.int64),
                          rng.integers(-2**63, 2**63 - 1, 4092, dtype=np.int64)])
    return {"casts_f16": [f16], "casts_f32": [f32], "math_f32": [f32, np.roll(f32, 7)],
            "math_f16": [f16, np.roll(f16, 12345)], "ints_i32": [i32, b],
            "math_bf16": [bf16, np.roll(bf16, 4321)], "casts_to_bf16": [f64, i64]}


def driver_source(manifest: dict, header: str) -> str:
    """A C program that, per kernel, reads N and the inputs from argv[1] and writes the
    status and every output to argv[2]."""
    body = []
    for kernel in manifest["kernels"]:
        name, params = kernel["name"], kernel["params"]
        body.append(f"    {{ /* {name} */")
        body.append("        int64_t n; if (fread(&n, 8, 1, in) != 1) return 2;")
        args = []
        for k, p in enumerate(params):
            code, bits = p["dlpack"]
            body.append(f"        void *d{k} = calloc((size_t)n + 1, {bits // 8}); int64_t s{k}[1] = {{n}};")
            body.append(f"        IntentTensor t{k} = {{d{k}, {{INTENT_DEVICE_CPU, 0}}, 1, {{{code}, {bits}, 1}}, "
                        f"s{k}, NULL, 0}};")
            if not p["result"]:
                body.append(f"        if (fread(d{k}, {bits // 8}, (size_t)n, in) != (size_t)n) return 3;")
            args.append(f"&t{k}")
        body.append(f"        int32_t rc = {name}({', '.join(args)});")
        body.append("        fwrite(&rc, 4, 1, out);")
        for k, p in enumerate(params):
            if p["result"]:
                body.append(f"        fwrite(d{k}, {p['dlpack'][1] // 8}, (size_t)n, out);")
            body.append(f"        free(d{k});")
        body.append("    }")
    return "\n".join([
        "#include <stdio.h>", "#include <stdlib.h>", f'#include "{header}"', "",
        "int main(int argc, char **argv)", "{", "    if (argc != 3) return 1;",
        '    FILE *in = fopen(argv[1], "rb"), *out = fopen(argv[2], "wb");', "    if (!in || !out) return 1;",
        *body, "    fclose(out);", "    return 0;", "}", ""])


def write_inputs(path: Path, manifest: dict, inputs: dict) -> None:
    with open(path, "wb") as f:
        for kernel in manifest["kernels"]:
            arrays = inputs[kernel["name"]]
            f.write(np.int64(arrays[0].size).tobytes())
            for a in arrays:
                f.write(np.ascontiguousarray(a).tobytes())


def read_outputs(path: Path, manifest: dict, inputs: dict) -> dict:
    """kernel -> (status, [outputs with NaNs canonical, as bytes])."""
    data, pos, found = path.read_bytes(), 0, {}
    for kernel in manifest["kernels"]:
        n = inputs[kernel["name"]][0].size
        rc = int(np.frombuffer(data, np.int32, 1, pos)[0])
        pos += 4
        outs = []
        for p in kernel["params"]:
            if p["result"]:
                dtype = np.dtype(NUMPY[p["dtype"]])
                a = np.frombuffer(data, dtype, n, pos).copy()
                pos += n * dtype.itemsize
                if dtype.kind == "f":
                    a[np.isnan(a)] = np.nan
                outs.append(a.tobytes())
        found[kernel["name"]] = (rc, outs)
    assert pos == len(data), "the driver wrote more than the manifest says"
    return found


def host_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    line = next((ln for ln in text.splitlines() if ln.startswith("flags")), "")
    return set(line.split(":", 1)[-1].split())


# What each x86-64 micro-architecture level needs (cumulative; the psABI's lists).
LEVEL_FLAGS = {"x86-64": set(), "x86-64-v2": {"cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3"},
               "x86-64-v3": {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"},
               "x86-64-v4": {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}}


def x86_levels() -> list[str]:
    flags, levels, need = host_flags(), [], set()
    for level, more in LEVEL_FLAGS.items():
        need |= more
        if need <= flags:
            levels.append(level)
    return levels + ["native"]


SAMPLES = ["saxpy", "row_scale", "clamp", "collatz_steps"]  # the cheap ones that digest.c has sections for


def build_level(folder: Path, target: str | None, cpu: str) -> Path:
    from intentc.driver import build

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "numeric.intent").write_text(numeric_source())
    build(folder / "numeric.intent", folder / "numeric.so", target, cpu, True)
    for sample in SAMPLES:
        build(REPO / "samples" / f"{sample}.intent", folder / f"{sample}.so", target, cpu, True)
    return folder


def compile_drivers(folder: Path, cc: list) -> tuple[dict, dict]:
    """(manifest, objects): the numeric driver and the samples' digest programs compiled
    against the headers in ``folder`` (every level's headers are the same)."""
    manifest = embedded_manifest(folder / "numeric.so")
    (folder / "drv.c").write_text(driver_source(manifest, "numeric.h"))
    objects = {"drv": folder / "drv.o"}
    run_cmd([*cc, "-O1", "-c", "-I", folder, folder / "drv.c", "-o", objects["drv"]])
    for sample in SAMPLES:
        objects[f"digest_{sample}"] = folder / f"digest_{sample}.o"
        run_cmd([*cc, "-O2", "-ffp-contract=off", "-c", "-I", folder, "-I", DRIVERS, "-include", f"{sample}.h", DIGEST,
                 "-o", objects[f"digest_{sample}"]])
    return manifest, objects


def link_drivers(folder: Path, cc: list, objects: dict) -> None:
    for name, obj in objects.items():
        library = "numeric" if name == "drv" else name.split("_", 1)[1]
        run_cmd([*cc, obj, folder / f"{library}.so", f"-Wl,-rpath,{folder}", "-lm", "-o", folder / name])


def run_level(folder: Path, manifest: dict, runner: list, inputs: dict) -> tuple[dict, dict]:
    """(numeric outputs, sample digests) of the build in ``folder``, run by ``runner``."""
    write_inputs(folder / "in.bin", manifest, inputs)
    env = dict(os.environ, INTENT_NUM_THREADS="2")
    run_cmd([*runner, folder / "drv", folder / "in.bin", folder / "out.bin"], env=env)
    digests = {sample: run_cmd([*runner, folder / f"digest_{sample}"], env=env) for sample in SAMPLES}
    return read_outputs(folder / "out.bin", manifest, inputs), digests


def embedded_manifest(so: Path) -> dict:
    """The manifest embedded in a shared library, read without loading it (it may be for another CPU)."""
    data = so.read_bytes()
    start = data.index(b'{"abi_version"')
    return json.loads(data[start:data.index(b"\0", start)].decode())


def assert_same(results: dict, what: str) -> None:
    """Every build's results equal the first one's; the message names the kernel and output."""
    (base_name, (base_numeric, base_digests)), *rest = results.items()
    for name, (numeric, digests) in rest:
        for kernel, (rc, outs) in base_numeric.items():
            got_rc, got = numeric[kernel]
            assert got_rc == rc == 0, f"{what}: {kernel} returned {got_rc} on {name}, {rc} on {base_name}"
            for k, (a, b) in enumerate(zip(outs, got)):
                assert a == b, f"{what}: {kernel} output {k} differs between {base_name} and {name}"
        for sample, text in base_digests.items():
            assert digests[sample] == text, f"{what}: the digests of {sample} differ between {base_name} and {name}"


def check_rules(numeric: dict) -> None:
    """The documented rules on one build, so that builds cannot all agree on a wrong answer:
    f16 -> integer casts saturate and map NaN to 0."""
    f16 = numeric_inputs()["casts_f16"][0]
    rc, outs = numeric["casts_f16"]
    assert rc == 0
    for dst, raw in zip(INTS, outs):
        values = np.frombuffer(raw, NUMPY[dst])
        info = np.iinfo(NUMPY[dst])
        assert (values[np.isnan(f16)] == 0).all(), f"f16 NaN -> {dst} is not 0"
        assert (values[np.isposinf(f16)] == info.max).all() and (values[np.isneginf(f16)] == info.min).all(), dst


@pytest.mark.skipif(not HOST_IS_X86_64, reason="the x86-64 levels need an x86-64 host")
def test_x86_64_levels_agree(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    levels = x86_levels()
    assert levels[0] == "x86-64" and len(levels) >= 2
    inputs = numeric_inputs()
    results, objects = {}, None
    for level in levels:
        folder = build_level(tmp_path / level, None, level)
        if objects is None:
            manifest, objects = compile_drivers(folder, [cc])
        link_drivers(folder, [cc], objects)
        results[level] = run_level(folder, manifest, [], inputs)
    check_rules(results["x86-64"][0])
    assert_same(results, "x86-64 levels " + ", ".join(levels))


AARCH64_BUILDS = {"generic": ["cortex-a53", "neoverse-n1", "max"], "neoverse-n1": ["neoverse-n1", "max"]}


def test_aarch64_levels_agree(tmp_path):
    if QEMU is None or SYSROOT is None:
        pytest.skip("qemu-aarch64 and an AArch64 glibc are not installed (apt-get install qemu-user "
                    "libc6-dev-arm64-cross); .ci/run installs them")
    cc = cross_cc()
    inputs = numeric_inputs()
    results, objects = {}, None
    for cpu, qemu_cpus in AARCH64_BUILDS.items():
        folder = build_level(tmp_path / cpu, TRIPLE, "native" if cpu == "generic" else cpu)
        if objects is None:
            manifest, objects = compile_drivers(folder, cc)
        link_drivers(folder, cc, objects)
        for qemu_cpu in qemu_cpus:
            results[f"{cpu} on {qemu_cpu}"] = run_level(folder, manifest, [QEMU, "-cpu", qemu_cpu, "-L", SYSROOT],
                                                        inputs)
    check_rules(next(iter(results.values()))[0])
    assert_same(results, "AArch64 builds")


F16_CASTS = """\
import intent as I

@intent.kernel
def to_i16(a: f16[N]) -> i16[N]:
    return I.cast(a, i16)

@intent.kernel
def to_u8(a: f16[N]) -> u8[N]:
    return I.cast(a, u8)
"""


def test_f16_casts_never_use_the_fp16_conversions():
    """On an AVX512-FP16 CPU (Sapphire Rapids) LLVM would select vcvttsh2si / vcvttph2w for
    an f16 -> int cast, which give -32768 for NaN where the rule says 0; the cast goes
    through f32 (exact), so the code is the same kind on every CPU. Checked in the
    assembly, since few test hosts have such a CPU to run it on."""
    import re

    from intentc.codegen.optimize import emit_assembly
    from intentc.driver import compile_source

    compiled = compile_source(F16_CASTS, "f16_casts.intent", None, "sapphirerapids", optimize_ir=True)
    asm = emit_assembly(compiled.optimized, compiled.spec)
    conversions = set(re.findall(r"\b(vcvt\w+)", asm))
    assert conversions, "no conversion instructions at all: the kernels did not compile as expected"
    assert not {c for c in conversions if re.match(r"vcvtt?(sh|ph)2(si|usi|w|uw|dq|udq|qq|uqq)", c)}, conversions
