"""LLVM's optimisation pipeline (new pass manager) and object/assembly emission."""
from __future__ import annotations

import llvmlite.binding as llvm

from intentc.codegen.target import TargetSpec, new_target_machine, target_machine


def optimize(llvm_ir: str, spec: TargetSpec):
    """Parse, verify and optimise textual LLVM IR at -O3; returns the binding module."""
    module = llvm.parse_assembly(llvm_ir)
    module.verify()
    tm = target_machine(spec)
    module.triple = spec.triple
    module.data_layout = str(tm.target_data)
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pto.loop_unrolling = True
    pb = llvm.create_pass_builder(tm, pto)
    mpm = pb.getModulePassManager()
    mpm.run(module, pb)
    return module


def emit_object(module, spec: TargetSpec) -> bytes:
    return new_target_machine(spec).emit_object(module)


def emit_assembly(module, spec: TargetSpec) -> str:
    return new_target_machine(spec).emit_assembly(module)
