"""Everything target-specific in one place: the target spec and LLVM's target machine."""
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


def resolve_target(name: str | None, cpu: str = "native") -> TargetSpec:
    if name in (None, "", "host", "native"):
        return host_target(cpu)
    if name.startswith("x86_64"):
        spec = host_target(cpu) if cpu == "native" else TargetSpec(name, "x86_64-unknown-linux-gnu", cpu, "", 256)
        return TargetSpec(name, "x86_64-unknown-linux-gnu", spec.cpu, spec.features, spec.vector_bits)
    raise ValueError(f"unknown target '{name}' (supported here: host, x86_64-linux-gnu)")


@functools.lru_cache(maxsize=None)
def target_machine(spec: TargetSpec):
    _init_llvm()
    target = llvm.Target.from_triple(spec.triple)
    return target.create_target_machine(cpu=spec.cpu, features=spec.features, opt=3, reloc="pic",
                                        codemodel="default")
