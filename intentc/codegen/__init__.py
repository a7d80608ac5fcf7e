"""Codegen: physical program -> LLVM IR (llvmlite) -> objects, shared libraries, headers."""
