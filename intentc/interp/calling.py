"""An interpreted kernel call: the calling convention of a compiled kernel, then the body.

``Interpreter.call`` builds a ``KernelCall``, which does what ``intentc.load(...).<kernel>``
and the C runtime do around a compiled kernel, in their order, so that both refuse the
same calls with the same ``KernelError`` status (docs/abi.md):

1. the loader's part, shared with it (``intentc/kir/calling.py``): binding the
   arguments, converting them to arrays, allocating the returned tensors, and per
   parameter the scalar range check, a read-only array for a written parameter (-5), a
   dtype without a DLPack code (``TypeError``) and byte strides that are not a multiple
   of the element size (-5);
2. the runtime's entry checks (``runtime_c/tensor.c``), per tensor in declaration order:
   rank (-3), dtype (-2), a zero stride on a written axis of more than one element (-5);
   then the extent expressions within int64 (-4) and the aliasing rule (written tensors
   that overlap: -12; a read-only input that overlaps a written one is read from a copy),
   as the generated entry does them (``codegen/llvm_function.py``), all shared through
   ``kir/calling.py``; then the declared extents of the returned tensors (-4, S1).

Then the body runs on the arrays themselves (``mut`` parameters are written in place) and
the returned values are copied into the result arrays. Under a sanitizer, a call it refuses
leaves the ``mut`` arguments as they were, as a compiled sanitized kernel does.
"""
from __future__ import annotations

import numpy as np

from intentc.base.status import E_SHAPE, KernelError
from intentc.interp.core_ops import AbsentTensor
from intentc.interp.memory import SanitizerError
from intentc.interp.numeric import numpy_dtype
from intentc.interp.structured import LawViolation
from intentc.kir import calling, mx
from intentc.kir.calling import Parameter
from intentc.kir.core import Function
from intentc.kir.extents import evaluate as evaluate_extent
from intentc.kir.types import DTYPES, DType, TensorType


def parameters(func: Function) -> tuple[list[Parameter], list[Parameter]]:
    """(inputs, results) of a kernel as the ABI sees them (the manifest's parameters)."""
    inputs = []
    for param, value in zip(func.params, func.args):
        if isinstance(value.type, TensorType):
            inputs.append(Parameter(param.name, "tensor", value.type.dtype.name, tuple(param.extents), param.mutable,
                                    optional=param.optional, default=param.default))
        else:
            inputs.append(Parameter(param.name, "scalar", value.type.name, default=param.default))
    count = len(func.result_types)
    results = [Parameter("out" if count == 1 else f"out{k}", "tensor", t.dtype.name, tuple(e), result=True)
               if isinstance(t, TensorType) else Parameter("out" if count == 1 else f"out{k}", "scalar", t.name,
                                                           result=True)
               for k, (t, e) in enumerate(zip(func.result_types, func.result_extents))]
    return inputs, results


class KernelCall:
    """One call of a kernel ``func`` by the interpreter ``it`` (a ``machine.Interpreter``)."""

    def __init__(self, it, func: Function):
        self.it = it
        self.func = func
        self.name = func.name
        self.inputs, self.results = parameters(func)

    def run(self, args, kwargs, out):
        name = self.name
        values = calling.bind_arguments(name, self.inputs, args, kwargs)
        arrays = {p.name: calling.as_array(values[p.name], p, name) for p in self.inputs if p.kind == "tensor"}
        outs = calling.result_arrays(name, self.inputs, self.results, arrays, out, values)
        bound: dict[str, object] = {}
        for p in self.inputs + self.results:  # what the loader checks, in its order
            if p.kind == "scalar" and p.result:
                bound[p.name] = outs[p.name]
                continue
            if p.kind == "scalar":
                calling.scalar_value(values[p.name], p, name)
                bound[p.name] = _scalar_argument(values[p.name], DTYPES[p.dtype])
                continue
            array = outs[p.name] if p.result else arrays[p.name]
            if array is None:  # an absent optional tensor: nothing to check, ``present`` is false
                bound[p.name] = np.zeros((0,) * len(p.extents), numpy_dtype(DTYPES[p.dtype])).view(AbsentTensor)
                continue
            calling.check_tensor_argument(array, p, name)
            bound[p.name] = array
        tensors = [(p, bound[p.name]) for p in self.inputs + self.results
                   if p.kind == "tensor" and not isinstance(bound[p.name], AbsentTensor)]
        for p, array in tensors:  # what the runtime checks on entry, in its order
            calling.check_entry_tensor(name, p, array)
        calling.check_extent_expressions(name, self.inputs + self.results, bound, values)
        for copied in calling.check_aliasing(name, tensors):  # every input read before any output is written
            bound[copied] = calling.snapshot(bound[copied])
        self._check_result_extents(bound, values)

        it = self.it
        it.kernel_name = name
        it.names = {id(v): p.name for v, p in zip(self.func.args, self.func.params)}
        it.written = [bound[p.name] for p in self.inputs if p.mutable]
        kept = [(a, a.copy()) for a in it.written] if it.sanitize else []
        try:
            results = it.run_function(self.func, [bound[p.name] for p in self.inputs])
        except (SanitizerError, LawViolation):  # a refused call leaves its outputs untouched
            for array, before in kept:
                array[...] = before
            raise
        for p, value in zip(self.results, results):
            bound[p.name][...] = value
        return calling.returned(self.results, bound)

    def _check_result_extents(self, bound: dict, values: dict) -> None:
        """Returned tensors must have the declared extents (literal, or the value of the
        first parameter naming the extent or of the integer scalar argument), checked before
        the body runs (S1)."""
        named = calling.named_extents(self.inputs, {p.name: bound[p.name] for p in self.inputs
                                                    if p.kind == "tensor"}, values)
        for p in [q for q in self.results if q.kind == "tensor"]:
            array = bound[p.name]
            for axis, e in enumerate(p.extents):
                want = e if isinstance(e, int) else evaluate_extent(e, named)
                if array.shape[axis] != want:
                    raise KernelError(E_SHAPE, f"{self.name}: extent {e}: {p.name}.shape[{axis}] = "
                                               f"{array.shape[axis]} but the kernel's result needs {want}")


def _scalar_argument(value, dtype: DType):
    """A scalar argument as the kernel receives it (the loader's conversions)."""
    if dtype.kind == "mx":
        return mx.to_numpy(np.array([mx.scalar_code(value, dtype.name)], np.uint8), dtype.name)[0]
    if dtype.is_bool:
        return bool(value)
    if dtype.is_float:
        if dtype.bits == 16:
            return np.asarray(value, dtype=numpy_dtype(dtype))[()]
        with np.errstate(over="ignore"):
            return numpy_dtype(dtype).type(float(value))
    return int(value)
