"""Everything target-specific in one place: the target spec and LLVM's target machine.

A target on the command line (``--target``) resolves to a :class:`TargetSpec`: the
LLVM triple, CPU and features to generate code for, and which C toolchain builds
the runtime and links the artifact (``link.py`` reads ``toolchain_triple`` and
``zig_target``; no other module looks at the target's name).

CPU targets:

- ``host`` (the default): the machine intentc runs on, tuned for its CPU with
  ``--cpu native``; linked with the system C compiler.
- ``x86_64-linux-gnu`` and ``aarch64-linux-gnu`` (also ``aarch64`` / ``arm64``):
  when the name is the host's own architecture this is ``host`` again; otherwise it
  is a cross target for the architecture's baseline CPU (``--cpu`` overrides it),
  linked with a cross C compiler or ``python -m ziglang cc``.

GPU targets ``sm_80``, ``sm_86``, ``sm_89``, ``sm_90`` (and the other SMs of
``GPU_PTX_ISA``): PTX for NVIDIA GPUs (``emit_nvptx.py``), no C toolchain.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import llvmlite.binding as llvm


@dataclass(frozen=True)
class TargetSpec:
    """What codegen needs to know about a target."""

    name: str  # as given on the command line
    triple: str
    cpu: str
    features: str
    vector_bits: int
    is_gpu: bool = False
    # How C code for the target is built (link.py): None means the host's own compiler;
    # otherwise the GNU triple of a cross toolchain (``aarch64-linux-gnu-gcc``) ...
    toolchain_triple: str | None = None
    # ... and the ``zig cc -target`` of the hermetic fallback when none is installed.
    zig_target: str | None = None


@dataclass(frozen=True)
class _Arch:
    """A CPU architecture intentc can generate code for from any host."""

    triple: str  # LLVM triple
    gnu_triple: str  # cross toolchain prefix and zig target
    aliases: tuple[str, ...]  # first component of a target name
    cpu: str  # baseline CPU of a cross build
    features: str
    vector_bits: int


ARCHES = {
    "x86_64": _Arch("x86_64-unknown-linux-gnu", "x86_64-linux-gnu", ("x86_64", "amd64"), "x86-64", "", 128),
    # Every ARMv8-A CPU has Advanced SIMD (NEON): 128-bit vectors.
    "aarch64": _Arch("aarch64-unknown-linux-gnu", "aarch64-linux-gnu", ("aarch64", "arm64"), "generic", "+neon",
                     128),
}
_VENDOR_OS = ("", "linux-gnu", "unknown-linux-gnu", "pc-linux-gnu")
SUPPORTED = "host, x86_64-linux-gnu, aarch64-linux-gnu (or aarch64, arm64), sm_80, sm_86, sm_89, sm_90 (PTX)"

# NVIDIA GPUs (PTX, LLVM's NVPTX backend): the lowest PTX ISA version that has each SM,
# so that the PTX loads on the oldest driver that supports the GPU.
GPU_PTX_ISA = {"sm_80": 70, "sm_86": 71, "sm_87": 74, "sm_89": 78, "sm_90": 78, "sm_100": 86, "sm_120": 87}


def gpu_target(name: str) -> TargetSpec:
    """The GPU target ``sm_XX``; raises ValueError for an SM without a PTX ISA entry."""
    if name not in GPU_PTX_ISA:
        raise ValueError(f"unknown GPU target '{name}' (supported: {', '.join(GPU_PTX_ISA)})")
    return TargetSpec(name, "nvptx64-nvidia-cuda", name, f"+ptx{GPU_PTX_ISA[name]}", 32, is_gpu=True)


@functools.lru_cache(maxsize=None)
def _init_llvm() -> None:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()


def host_target(cpu: str = "native") -> TargetSpec:
    _init_llvm()
    if cpu == "native":
        name = llvm.get_host_cpu_name()
        features = llvm.get_host_cpu_features().flatten()
    else:
        name, features = cpu, ""
    vector_bits = 512 if "+avx512f" in features else 256 if "+avx2" in features else 128
    return TargetSpec("host", llvm.get_process_triple(), name, features, vector_bits)


def _host_arch() -> str:
    arch = llvm.get_process_triple().split("-")[0]
    return "aarch64" if arch == "arm64" else arch


def _arch_of(name: str) -> str | None:
    head, _, rest = name.partition("-")
    for key, arch in ARCHES.items():
        if head in arch.aliases and rest in _VENDOR_OS:
            return key
    return None


def resolve_target(name: str | None, cpu: str = "native") -> TargetSpec:
    """The spec of a ``--target`` name; raises ValueError for an unknown one."""
    if name in (None, "", "host", "native"):
        return host_target(cpu)
    if name.startswith("sm_"):
        return gpu_target(name)
    key = _arch_of(name)
    if key is None:
        raise ValueError(f"unknown target '{name}' (supported: {SUPPORTED})")
    arch = ARCHES[key]
    if key == _host_arch():
        # The host's own architecture: built like `host`, with the host's compiler.
        spec = host_target(cpu) if cpu == "native" else TargetSpec(name, arch.triple, cpu, "", 256)
        return TargetSpec(name, arch.triple, spec.cpu, spec.features, spec.vector_bits)
    return TargetSpec(name, arch.triple, arch.cpu if cpu == "native" else cpu, arch.features, arch.vector_bits,
                      toolchain_triple=arch.gnu_triple, zig_target=arch.gnu_triple)


def new_target_machine(spec: TargetSpec):
    """A target machine of its own. Code emission takes a new one each time: LLVM's NVPTX backend
    numbers call sequences with a counter kept in the target machine, so a shared one would make
    a module's PTX depend on what the process compiled before it."""
    _init_llvm()
    target = llvm.Target.from_triple(spec.triple)
    features = spec.features
    if spec.triple.startswith("x86_64"):
        # Gathers cost more than the scalar loads they replace on most x86 cores; without this
        # the SLP vectoriser packs the independent chains of ordered folds and scans into
        # gathers of their loads (several times slower).
        features = ",".join(f for f in (features, "+prefer-no-gather") if f)
    return target.create_target_machine(cpu=spec.cpu, features=features, opt=3, reloc="pic",
                                        codemodel="default")


@functools.lru_cache(maxsize=None)
def target_machine(spec: TargetSpec):
    """The shared target machine, for data layouts and the optimisation pipeline."""
    return new_target_machine(spec)
