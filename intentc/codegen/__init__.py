"""Codegen: physical program -> LLVM IR (llvmlite) -> objects, shared libraries, headers."""
import llvmlite

# Every emitter builds opaque pointers (LLVM 15+ has no others). llvmlite's IR layer reads this
# switch when ``llvmlite.ir`` is first imported, so it is set here, before any module of the
# package imports it.
llvmlite.ir_layer_typed_pointers_enabled = False
