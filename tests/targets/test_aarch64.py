"""The AArch64 target: names, NEON code, every sample built as .so/.o/.a, run under
qemu-aarch64 through C drivers, and compared with the x86-64 build of the same sample."""
from __future__ import annotations

import os
import re
import shutil

import pytest

from target_tools import (DIGEST, DRIVERS, EM_AARCH64, ET_DYN, ET_REL, HOST_IS_X86_64, REPO, SAMPLES, TRIPLE,
                      archive_members, build, cross_cc, intentc_cli, parse_elf, require_toolchain, run_aarch64,
                      run_cmd)

RUNTIME_SYMBOLS = ["intent_parallel_for", "intent_check_tensor", "intent_last_error"]
# Link flags of a driver, per artifact: the static ones carry the runtime, which needs threads and libm.
LINK = {".so": lambda d: [f"-Wl,-rpath,{d}"], ".a": lambda d: ["-pthread", "-lm"], ".o": lambda d: ["-pthread", "-lm"]}


def source(sample: str):
    return REPO / "samples" / f"{sample}.intent"


def kernels(folder, sample: str) -> list[str]:
    """The kernels the generated header declares."""
    found = re.findall(r"INTENT_API int32_t (\w+)\(", (folder / f"{sample}.h").read_text())
    assert found, f"{sample}.h declares no kernel"
    return found


# ---- names and code generation (no toolchain needed) ------------------------------------
@pytest.mark.parametrize("name", ["aarch64-linux-gnu", "aarch64", "arm64", "aarch64-unknown-linux-gnu"])
def test_target_names(name):
    from intentc.codegen.target import resolve_target

    if not HOST_IS_X86_64:
        pytest.skip("these expectations are for a cross build; this host is not x86-64")
    spec = resolve_target(name)
    assert (spec.triple, spec.cpu, spec.vector_bits) == ("aarch64-unknown-linux-gnu", "generic", 128)
    assert "+neon" in spec.features.split(",")
    assert (spec.toolchain_triple, spec.zig_target) == (TRIPLE, TRIPLE)


def test_cpu_flag_overrides_the_baseline():
    from intentc.codegen.target import resolve_target

    spec = resolve_target("aarch64", "neoverse-n1")
    assert spec.cpu == "neoverse-n1" and spec.triple == "aarch64-unknown-linux-gnu"


def test_unknown_target_is_a_diagnostic():
    proc = intentc_cli("build", "samples/saxpy.intent", "-o", "unused.so", "--target", "sparc64")
    assert proc.returncode == 1
    assert "unknown target 'sparc64'" in proc.stderr and "aarch64-linux-gnu" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_neon_vector_code():
    """`explain --stage asm --target arm64`: saxpy's loop runs on 4-lane NEON vectors."""
    proc = intentc_cli("explain", "samples/saxpy.intent", "--stage", "asm", "--target", "arm64")
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"fmul\s+v\d+\.4s", proc.stdout), "no vector multiply in saxpy's AArch64 assembly"
    assert re.search(r"fadd\s+v\d+\.4s", proc.stdout), "no vector add in saxpy's AArch64 assembly"
    assert not re.search(r"fmadd|fmla", proc.stdout), "a * x + y must round twice (no fused multiply-add)"


def test_host_x86_64_path_unchanged(tmp_path):
    """--target x86_64-linux-gnu on an x86-64 host is the host build: same spec, same compiler, same bytes."""
    from intentc.codegen import link
    from intentc.codegen.target import host_target, resolve_target

    if not HOST_IS_X86_64:
        pytest.skip("this host is not x86-64")
    spec, host = resolve_target("x86_64-linux-gnu"), host_target()
    assert (spec.triple, spec.cpu, spec.features, spec.toolchain_triple) == \
           ("x86_64-unknown-linux-gnu", host.cpu, host.features, None)
    assert link.toolchain(spec) == link.toolchain(None) == link.Toolchain((link.c_compiler(),), ())
    build(source("saxpy"), tmp_path / "a" / "saxpy.so", "host")
    build(source("saxpy"), tmp_path / "b" / "saxpy.so", "x86_64-linux-gnu")
    assert (tmp_path / "a" / "saxpy.so").read_bytes() == (tmp_path / "b" / "saxpy.so").read_bytes()


def test_missing_cross_toolchain_is_a_clear_error(tmp_path, monkeypatch):
    from intentc.diagnostics import CompileError

    monkeypatch.setenv("PATH", str(tmp_path))  # no aarch64-linux-gnu-gcc here
    monkeypatch.setenv("INTENTC_CROSS_TOOLCHAIN", "gcc")
    with pytest.raises(CompileError) as info:
        build(source("saxpy"), tmp_path / "saxpy.so")
    message = str(info.value.diagnostics[0].message)
    assert f"no C toolchain for {TRIPLE}" in message and f"gcc-{TRIPLE}" in message, message


# ---- every sample, built and run --------------------------------------------------------
@pytest.fixture(scope="module", params=SAMPLES)
def arm_build(request, tmp_path_factory):
    """(sample, folder) with folder/<sample>.so, .o and .a for AArch64, and the header."""
    require_toolchain()
    sample = request.param
    folder = tmp_path_factory.mktemp(f"aarch64-{sample}")
    for kind in (".so", ".o", ".a"):
        build(source(sample), folder / f"{sample}{kind}", header=True)
    return sample, folder


def test_artifacts_are_aarch64(arm_build):
    sample, folder = arm_build
    assert (folder / f"{sample}.h").is_file() and (folder / "intent_runtime.h").is_file()
    so = parse_elf((folder / f"{sample}.so").read_bytes())
    assert (so.machine, so.type) == (EM_AARCH64, ET_DYN)
    assert {*kernels(folder, sample), "intent_module_manifest", "intent_last_error"} <= so.defined
    obj = parse_elf((folder / f"{sample}.o").read_bytes())
    assert (obj.machine, obj.type) == (EM_AARCH64, ET_REL)
    assert {*kernels(folder, sample), *RUNTIME_SYMBOLS} <= obj.defined, "the .o must hold the kernels and the runtime"
    members = {name: parse_elf(data) for name, data in archive_members((folder / f"{sample}.a").read_bytes()).items()}
    assert all(m.machine == EM_AARCH64 and m.type == ET_REL for m in members.values())
    assert {*kernels(folder, sample), *RUNTIME_SYMBOLS} <= set().union(*(m.defined for m in members.values()))


@pytest.mark.parametrize("kind", [".so", ".a", ".o"])
def test_sample_driver_under_qemu(arm_build, kind):
    """samples/c/<sample>_driver.c, linked with the AArch64 artifact, prints PASS under qemu."""
    sample, folder = arm_build
    driver = DRIVERS / f"{sample}_driver.c"
    if not driver.is_file():
        pytest.skip(f"no samples/c/{sample}_driver.c")
    exe = folder / f"{sample}_driver_{kind[1:]}"
    artifact = folder / f"{sample}{kind}"
    run_cmd([*cross_cc(), "-O2", "-ffp-contract=off", "-I", folder, driver, artifact, *LINK[kind](folder),
             "-o", exe])
    output = run_aarch64(exe)
    assert output.strip().splitlines()[-1] == f"PASS {sample}", output


@pytest.fixture(scope="module")
def x86_digests(tmp_path_factory):
    """The digest program's output for each sample built for the host (x86-64)."""
    if not HOST_IS_X86_64:
        pytest.skip("the reference results are the x86-64 ones; this host is not x86-64")
    cc = shutil.which("cc") or shutil.which("gcc")
    folder = tmp_path_factory.mktemp("x86_64")
    cache = {}

    def digest(sample: str) -> str:
        if sample not in cache:
            build(source(sample), folder / f"{sample}.so", "host")
            exe = folder / f"digest_{sample}"
            run_cmd([cc, "-O2", "-ffp-contract=off", "-I", folder, "-I", DRIVERS, "-include", f"{sample}.h", DIGEST,
                     folder / f"{sample}.so", f"-Wl,-rpath,{folder}", "-lm", "-o", exe])
            cache[sample] = run_cmd([exe], env=dict(os.environ, INTENT_NUM_THREADS="4"))
        return cache[sample]

    return digest


def test_results_match_x86_64(arm_build, x86_digests):
    """The same calls on AArch64 (under qemu) and x86-64: same status codes, messages and output bits."""
    sample, folder = arm_build
    if f"INTENT_MODULE_{sample.upper()}_H" not in DIGEST.read_text():
        pytest.skip(f"tests/targets/digest.c has no section for {sample}")
    want = x86_digests(sample)
    exe = folder / f"digest_{sample}"
    run_cmd([*cross_cc(), "-O2", "-ffp-contract=off", "-I", folder, "-I", DRIVERS, "-include", f"{sample}.h",
             DIGEST, folder / f"{sample}.so", f"-Wl,-rpath,{folder}", "-lm", "-o", exe])
    got = run_aarch64(exe, threads=4)
    assert len(want.splitlines()) > 3
    assert got == want


# ---- the hermetic toolchain ---------------------------------------------------------------
def test_ziglang_toolchain(tmp_path, monkeypatch):
    """INTENTC_CROSS_TOOLCHAIN=zig: every artifact from `python -m ziglang cc`, and it runs."""
    require_toolchain("zig")
    monkeypatch.setenv("INTENTC_CROSS_TOOLCHAIN", "zig")
    for kind in (".so", ".o", ".a"):
        build(source("saxpy"), tmp_path / f"saxpy{kind}", header=True)
    so = parse_elf((tmp_path / "saxpy.so").read_bytes())
    assert (so.machine, so.type) == (EM_AARCH64, ET_DYN) and "saxpy" in so.defined
    assert not any(s.startswith(".debug") for s in so.sections), "a cross build must not carry debug information"
    obj = parse_elf((tmp_path / "saxpy.o").read_bytes())
    assert (obj.machine, obj.type) == (EM_AARCH64, ET_REL) and {"saxpy", *RUNTIME_SYMBOLS} <= obj.defined
    for kind in (".so", ".a"):
        exe = tmp_path / f"driver_{kind[1:]}"
        run_cmd([*cross_cc("zig"), "-O2", "-ffp-contract=off", "-I", tmp_path, DRIVERS / "saxpy_driver.c",
                 tmp_path / f"saxpy{kind}", *LINK[kind](tmp_path), "-o", exe])
        output = run_aarch64(exe)
        assert output.strip().splitlines()[-1] == "PASS saxpy", output
