"""The module manifest: a JSON description of every kernel's ABI.

It is embedded in shared libraries as ``intent_module_manifest`` (read by
``intentc.load``) and is the single source the header is generated from.
"""
from __future__ import annotations

import json

from intentc.codegen.abi import ABI_VERSION, dlpack_dtype
from intentc.kir.core import Module
from intentc.kir.types import TensorType


def module_manifest(module: Module, source_name: str) -> dict:
    """Describe the kernels of a module *after* lowering added result parameters."""
    kernels = []
    for func in module.kernels:
        params = []
        for param, arg in zip(func.params, func.args):
            if param.result and isinstance(arg.type, TensorType) and arg.type.rank == 0:
                # A scalar result: a pointer to one element in C, written on success (docs/abi.md).
                params.append({"name": param.name, "kind": "scalar", "dtype": str(arg.type.dtype), "result": True})
            elif isinstance(arg.type, TensorType):
                code, bits = dlpack_dtype(arg.type.dtype)
                params.append({"name": param.name, "kind": "tensor", "dtype": str(arg.type.dtype),
                               "dlpack": [code, bits], "rank": arg.type.rank,
                               "extents": list(param.extents), "mutable": param.mutable and not param.result,
                               "result": param.result})
                if param.optional:  # may be a NULL descriptor (None in Python)
                    params[-1]["optional"] = True
            else:
                params.append({"name": param.name, "kind": "scalar", "dtype": str(arg.type)})
            if param.default:  # what a Python caller who omits the argument passes
                params[-1]["default"] = param.default[0]
        kernels.append({"name": func.name, "params": params})
    return {"abi_version": ABI_VERSION, "module": module.name, "source": source_name, "kernels": kernels}


def manifest_json(manifest: dict) -> str:
    return json.dumps(manifest, sort_keys=True, separators=(",", ":"))
