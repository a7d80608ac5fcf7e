"""A small reference loader for ``intentc build --target sm_XX -o K.ptx`` output.

It follows only ``K.ptx.json`` (docs/ptx-abi.md); from intentc it takes the status codes
and ``KernelError`` (``intentc/base/status.py``), the Python calling convention that
``intentc.load`` and the reference interpreter follow too (``intentc/kir/calling.py``:
binding, conversion and checks of the arguments, dtypes, returned tensors, the runtime's
entry checks and the aliasing rule), the extent expressions (``intentc/kir/extents.py``)
and the packing of f4e2m1 arguments (``intentc/loader.py``).
It needs NumPy and either ``cuda-python`` (the CUDA driver API; the ``gpu`` extra) or
CuPy, and a GPU.

    from intentc import ptx_loader
    mod = ptx_loader.load("saxpy.ptx")          # reads saxpy.ptx.json beside it
    y = mod.saxpy(2.0, x, y)                    # NumPy in, NumPy out
    d = mod.saxpy(2.0, cupy_x, cupy_y)          # device arrays in, a DeviceArray out, no host copy

A call does what the CPU runtime does at the C boundary, in the manifest's words: it
checks every tensor's rank and dtype, that written tensors have no zero stride on an
axis with more than one element and do not overlap (each argument travels to the GPU as
its own copy, so an input that overlaps an output is read as it was before the call),
allocates returned tensors from the declared extents,
copies the bytes each view spans to the GPU (strides are kept), zeroes a status buffer,
runs the launch sequence with grids evaluated from the manifest's formulas, reads the
status word and raises ``KernelError`` with the check's message, or copies the written
tensors back. Host arrays are left unchanged when a call fails. Arguments already in device
memory (``__cuda_array_interface__`` or a CUDA ``__dlpack__``; ``intentc/device_arrays.py``) are
used in place, and results are then allocated on the device (docs/ptx-abi.md).
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

from intentc import device_arrays
from intentc.base.status import E_ALLOC, E_DEVICE, E_SHAPE, KernelError
from intentc.device_arrays import DeviceArray
from intentc.kir import calling
from intentc.kir.calling import Parameter
from intentc.loader import _PackedF4

__all__ = ["load", "Module", "Kernel", "Call", "KernelError", "default_backend"]

ARG_NUMPY = {"i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8", "u16": "uint16",
             "u32": "uint32", "u64": "uint64", "f32": "float32", "f64": "float64", "ptr": "uint64"}
SUPPORTED_VERSIONS = (1,)
HEAP_BYTES = 256 << 20  # device heap for kernels that allocate per-point buffers (CUDA's default: 8 MiB)


# ---- the manifest's formula language --------------------------------------------------------------
_TOKEN = re.compile(r"\s*(?:(-?\d+)|([A-Za-z_][\w.]*)|(\S))")


def evaluate(formula, env: dict) -> int:
    """An int, or a string like ``"min(max(ceil_div(x.shape0, 256), 1), 65535)"`` over the
    entry arguments in ``env``; 64-bit integer semantics, ``x // 0 == 0``."""
    if isinstance(formula, int):
        return formula
    tokens = [next(t for t in m.groups() if t is not None) for m in _TOKEN.finditer(formula)]
    pos = 0

    def expr() -> int:
        nonlocal pos
        tok = tokens[pos]
        pos += 1
        if re.fullmatch(r"-?\d+", tok):
            return int(tok)
        if pos < len(tokens) and tokens[pos] == "(":
            pos += 1
            args = [expr()]
            while tokens[pos] == ",":
                pos += 1
                args.append(expr())
            if tokens[pos] != ")":
                raise ValueError(f"bad formula {formula!r}")
            pos += 1
            return _call(tok, args)
        return int(env[tok])

    value = expr()
    if pos != len(tokens):
        raise ValueError(f"bad formula {formula!r}")
    return value


def _call(name: str, a: list[int]) -> int:
    def fdiv(x, y):
        return 0 if y == 0 else x // y

    ops = {"add": lambda: sum(a), "sub": lambda: a[0] - a[1], "mul": lambda: a[0] * a[1],
           "floor_div": lambda: fdiv(a[0], a[1]), "ceil_div": lambda: -fdiv(-a[0], a[1]),
           "min": lambda: min(a), "max": lambda: max(a), "select": lambda: a[1] if a[0] else a[2],
           "lt": lambda: int(a[0] < a[1]), "le": lambda: int(a[0] <= a[1]), "gt": lambda: int(a[0] > a[1]),
           "ge": lambda: int(a[0] >= a[1]), "eq": lambda: int(a[0] == a[1]), "ne": lambda: int(a[0] != a[1])}
    if name not in ops:
        raise ValueError(f"unknown formula function '{name}'")
    return ops[name]()


# ---- backends ---------------------------------------------------------------------------------------
class CudaDriver:
    """The CUDA driver API through cuda-python (``cuda.bindings.driver``)."""

    def __init__(self, device: int = 0):
        try:
            from cuda.bindings import driver
        except ImportError:
            from cuda import cuda as driver  # cuda-python < 12.6
        self.driver = driver
        self.device = device
        self._check(driver.cuInit(0))
        dev = self._check(driver.cuDeviceGet(device))
        self.context = self._check(driver.cuDevicePrimaryCtxRetain(dev))
        self._check(driver.cuCtxSetCurrent(self.context))
        attr = driver.CUdevice_attribute
        self.capability = (self._check(driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                                                    dev)),
                           self._check(driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                                                    dev)))

    def _check(self, result):
        err, *rest = result if isinstance(result, tuple) else (result,)
        if int(err) != 0:
            _, text = self.driver.cuGetErrorString(err)
            raise RuntimeError(f"CUDA driver error {int(err)}: {text.decode() if text else err}")
        return rest[0] if len(rest) == 1 else rest

    def reserve_heap(self, nbytes: int) -> None:
        limit = self.driver.CUlimit.CU_LIMIT_MALLOC_HEAP_SIZE
        if self._check(self.driver.cuCtxGetLimit(limit)) < nbytes:
            self._check(self.driver.cuCtxSetLimit(limit, nbytes))

    def load(self, ptx: str):
        return self._check(self.driver.cuModuleLoadData(ptx.encode("utf-8") + b"\0"))

    def function(self, module, name: str):
        return self._check(self.driver.cuModuleGetFunction(module, name.encode("utf-8")))

    def alloc(self, nbytes: int) -> int:
        return int(self._check(self.driver.cuMemAlloc(max(1, nbytes))))

    def free(self, ptr: int) -> None:
        self._check(self.driver.cuMemFree(ptr))

    def upload(self, ptr: int, host_address: int, nbytes: int) -> None:
        if nbytes:
            self._check(self.driver.cuMemcpyHtoD(ptr, host_address, nbytes))

    def download(self, host_address: int, ptr: int, nbytes: int) -> None:
        if nbytes:
            self._check(self.driver.cuMemcpyDtoH(host_address, ptr, nbytes))

    def zero(self, ptr: int, nbytes: int) -> None:
        self._check(self.driver.cuMemsetD8(ptr, 0, nbytes))

    def copy(self, dst: int, src: int, nbytes: int) -> None:
        if nbytes:
            self._check(self.driver.cuMemcpyDtoD(dst, src, nbytes))

    def wait_stream(self, stream: int) -> None:
        self._check(self.driver.cuStreamSynchronize(self.driver.CUstream(stream)))

    def launch(self, function, grid, block, shared_bytes: int, args: list) -> None:
        import numpy as np

        values = [np.array([value], dtype=ARG_NUMPY[kind]) for kind, value in args]
        pointers = np.array([v.ctypes.data for v in values], dtype=np.uint64)
        self._check(self.driver.cuLaunchKernel(function, *grid, *block, shared_bytes, 0, pointers.ctypes.data, 0))

    def synchronize(self) -> None:
        self._check(self.driver.cuCtxSynchronize())


class Cupy:
    """CuPy's ``RawModule`` (PTX loaded through the driver)."""

    def __init__(self, device: int = 0):
        import cupy

        self.cupy = cupy
        self.device = device
        cupy.cuda.Device(device).use()
        self.capability = tuple(int(c) for c in cupy.cuda.Device(device).compute_capability)
        self.buffers: dict[int, object] = {}

    def reserve_heap(self, nbytes: int) -> None:
        runtime = self.cupy.cuda.runtime
        if runtime.deviceGetLimit(runtime.cudaLimitMallocHeapSize) < nbytes:
            runtime.deviceSetLimit(runtime.cudaLimitMallocHeapSize, nbytes)

    def load(self, ptx: str):
        import os
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "module.ptx")
            Path(path).write_text(ptx, encoding="utf-8")
            module = self.cupy.RawModule(path=path)
            module.compile()
        return module

    def function(self, module, name: str):
        return module.get_function(name)

    def alloc(self, nbytes: int) -> int:
        memory = self.cupy.cuda.alloc(max(1, nbytes))
        self.buffers[memory.ptr] = memory
        return memory.ptr

    def free(self, ptr: int) -> None:
        self.buffers.pop(ptr, None)

    def upload(self, ptr: int, host_address: int, nbytes: int) -> None:
        if nbytes:
            self.cupy.cuda.runtime.memcpy(ptr, host_address, nbytes, 1)  # host to device

    def download(self, host_address: int, ptr: int, nbytes: int) -> None:
        if nbytes:
            self.cupy.cuda.runtime.memcpy(host_address, ptr, nbytes, 2)  # device to host

    def zero(self, ptr: int, nbytes: int) -> None:
        self.cupy.cuda.runtime.memset(ptr, 0, nbytes)

    def copy(self, dst: int, src: int, nbytes: int) -> None:
        if nbytes:
            self.cupy.cuda.runtime.memcpy(dst, src, nbytes, 3)  # device to device

    def wait_stream(self, stream: int) -> None:
        self.cupy.cuda.ExternalStream(stream).synchronize()

    def launch(self, function, grid, block, shared_bytes: int, args: list) -> None:
        import numpy as np

        function(tuple(grid), tuple(block), tuple(np.dtype(ARG_NUMPY[k]).type(v) for k, v in args),
                 shared_mem=shared_bytes)

    def synchronize(self) -> None:
        self.cupy.cuda.Device().synchronize()


def default_backend():
    """cuda-python's driver API, else CuPy; raises RuntimeError naming why neither works."""
    reasons = []
    for backend in (CudaDriver, Cupy):
        try:
            return backend()
        except Exception as exc:  # noqa: BLE001 - any failure means "not usable here"
            reasons.append(f"{backend.__name__}: {type(exc).__name__}: {exc}")
    raise RuntimeError("no usable CUDA backend (" + "; ".join(reasons) + ")")


# ---- modules and kernels -------------------------------------------------------------------------
class Module:
    def __init__(self, ptx: str, manifest: dict, backend=None):
        if manifest.get("format") != "intentc-ptx" or manifest.get("manifest_version") not in SUPPORTED_VERSIONS \
                or manifest.get("ptx_abi_version") not in SUPPORTED_VERSIONS:
            raise ValueError("not an intentc PTX manifest of a supported version")
        self.manifest = manifest
        self.backend = backend or default_backend()
        if any(k.get("device_heap") for k in manifest["kernels"]) and hasattr(self.backend, "reserve_heap"):
            self.backend.reserve_heap(HEAP_BYTES)  # before the first launch that allocates
        self.handle = self.backend.load(ptx)
        self.kernels = {k["name"]: Kernel(self, k) for k in manifest["kernels"]}

    def __getattr__(self, name: str):
        kernels = self.__dict__.get("kernels", {})
        if name in kernels:
            return kernels[name]
        raise AttributeError(name)


def load(ptx_path, backend=None) -> Module:
    """Load ``K.ptx`` and its manifest ``K.ptx.json``."""
    ptx_path = Path(ptx_path)
    manifest = json.loads(ptx_path.with_name(ptx_path.name + ".json").read_text(encoding="utf-8"))
    return Module(ptx_path.read_text(encoding="utf-8"), manifest, backend)


class Kernel:
    def __init__(self, module: Module, spec: dict):
        self.module = module
        self.spec = spec
        self.name = spec["name"]
        self.inputs = [p for p in spec["params"] if not p.get("result")]
        self.results = [p for p in spec["params"] if p.get("result")]
        self.params = [Parameter.from_manifest(p) for p in spec["params"]]
        self.function = module.backend.function(module.handle, spec["entry"])

    def __call__(self, *args, out=None):
        call = self.prepare(*args, out=out)
        try:
            call.launch()
            return call.finish()
        finally:
            call.release()

    def prepare(self, *args, out=None) -> "Call":
        """Check the arguments and copy host arrays to the GPU (device arrays are used where
        they are); the returned call can be launched (repeatedly, for benchmarks) and
        finished."""
        params = self.params
        inputs = [p for p in params if not p.result]
        results = [p for p in params if p.result]
        values = calling.bind_arguments(self.name, inputs, args, {})
        arrays = {p.name: self._tensor(values[p.name], p, self.name) for p in inputs if p.kind == "tensor"}
        on_device = any(isinstance(a, DeviceArray) for a in arrays.values())
        allocate = self._allocate_on_device if on_device else None
        outs = calling.result_arrays(self.name, inputs, results, arrays, out, values, convert=self._tensor,
                                     allocate=allocate)
        for p in params:  # the loader's checks, then the runtime's, as for a CPU kernel
            if p.kind == "scalar" and p.result:  # a 0-d host array, filled from its device buffer
                values[p.name] = outs[p.name]
                continue
            if p.kind == "scalar":
                calling.scalar_value(values[p.name], p, self.name)
                continue
            values[p.name] = outs[p.name] if p.result else arrays[p.name]
            calling.check_tensor_argument(values[p.name], p, self.name)
        tensors = [(p, values[p.name]) for p in params if p.kind == "tensor"]
        for p, array in tensors:
            calling.check_entry_tensor(self.name, p, array)
        calling.check_extent_expressions(self.name, params, values, values)
        # Host arrays travel as their own copies, so they alias nothing on the device; device
        # arrays are used in place, so an input that overlaps an output is read from a copy.
        calling.check_aliasing(self.name, [(p, a) for p, a in tensors if not isinstance(a, DeviceArray)])
        copied = calling.check_aliasing(self.name, [(p, a) for p, a in tensors if isinstance(a, DeviceArray)])
        call = Call(self, values, copied)
        if out is not None:  # a device out= comes back as the caller's own object
            provided = list(out) if isinstance(out, (tuple, list)) else [out]
            call.returned = {p.name: v for p, v in zip(results, provided) if isinstance(values[p.name], DeviceArray)}
        return call

    def _tensor(self, value, p: Parameter, kernel: str | None = None):
        """A tensor argument: a ``DeviceArray`` for CUDA memory on this loader's device, else a
        NumPy array (``calling.as_array``, which refuses other devices)."""
        try:
            array = device_arrays.device_array(value)
        except TypeError as exc:
            raise TypeError(f"{self.name}: parameter '{p.name}': {exc}") from None
        if array is None:
            return calling.as_array(value, p, self.name)
        device = getattr(self.module.backend, "device", 0)
        if array.device_id is not None and array.device_id != device:
            raise KernelError(E_DEVICE, f"{self.name}: parameter '{p.name}' is on CUDA device {array.device_id} "
                                        f"but the module was loaded on device {device}")
        if p.dtype == "f4e2m1":
            raise KernelError(E_DEVICE, f"{self.name}: parameter '{p.name}' is f4e2m1 in device memory; pass it "
                                        f"as a host array (the loader packs it)")
        return array

    def _allocate_on_device(self, shape, dtype, p: Parameter) -> DeviceArray:
        """A returned tensor in device memory, C-contiguous, owning its allocation."""
        count = math.prod(shape)
        try:
            memory = device_arrays.DeviceAllocation(self.module.backend, count * dtype.itemsize)
        except Exception as exc:  # noqa: BLE001 - a backend reports exhaustion its own way
            raise MemoryError(str(exc)) from None
        strides, step = [], dtype.itemsize
        for extent in reversed(shape):
            strides.append(step)
            step *= max(1, extent)
        return DeviceArray(memory.address, tuple(shape), tuple(reversed(strides)), dtype,
                           device_id=getattr(self.module.backend, "device", 0), owner=memory)


class Call:
    """One prepared call: device copies of the arguments, a status buffer, the launches."""

    def __init__(self, kernel: Kernel, values: dict, copied: set = frozenset()):
        self.kernel = kernel
        self.values = values
        self.returned = {}  # result name -> the device out= object the caller gave
        backend = kernel.module.backend
        self.buffers = []
        self.device = {}  # tensor name -> (device data pointer, span low, span high)
        self.packed = {}  # f4e2m1 tensor name -> its packed host copy (intentc.loader._PackedF4)
        for p in kernel.spec["params"]:
            if p["kind"] != "tensor" and not p.get("result"):
                continue  # scalar results travel like a one-element tensor (the manifest's scalar_results)
            array = values[p["name"]]
            if isinstance(array, DeviceArray):
                self.device[p["name"]] = self._device_argument(array, p["name"] in copied)
                continue
            if p["dtype"] == "f4e2m1" and array.size:  # packed two per byte on the device (kir/mx.py)
                self.packed[p["name"]] = packed = _PackedF4(array, p["name"], [])
                base = backend.alloc(packed.packed.nbytes)
                self.buffers.append(base)
                backend.upload(base, packed.packed.ctypes.data, packed.packed.nbytes)
                self.device[p["name"]] = (base + packed.base // 2, 0, 0)
                continue
            lo, hi = device_arrays.span(array)
            if hi == lo:
                self.device[p["name"]] = (0, 0, 0)
                continue
            base = backend.alloc(hi - lo)
            self.buffers.append(base)
            backend.upload(base, array.__array_interface__["data"][0] + lo, hi - lo)
            self.device[p["name"]] = (base - lo, lo, hi)
        self.status = backend.alloc(kernel.module.manifest["status"]["bytes"])
        self.buffers.append(self.status)
        self.env = {}
        for a in kernel.spec["args"]:  # the sizes of scratch buffers need the extents and scalars
            if a["role"] in ("shape", "stride"):
                array = values[a["param"]]
                self.env[a["name"]] = (array.shape[a["axis"]] if a["role"] == "shape"
                                       else array.strides[a["axis"]] // array.itemsize)
            elif a["role"] == "value" and a["type"][0] in "iu":
                self.env[a["name"]] = _scalar(values[a["param"]], a["type"], kernel.spec, a["param"])
        scratch = {}
        for buffer in kernel.spec["scratch"]:
            # Exact here; negative only for a negative extent, which the kernel itself then
            # reports where the buffer is made (M2).
            nbytes = max(0, evaluate(buffer["bytes"], self.env))
            if nbytes >= 1 << 63:
                raise KernelError(E_SHAPE, f"{kernel.name}: a scratch buffer needs {nbytes} bytes, more than 64 bits "
                                           f"can count")
            try:
                scratch[buffer["arg"]] = backend.alloc(nbytes)
            except MemoryError:
                raise KernelError(E_ALLOC, f"{kernel.name}: out of GPU memory: could not allocate {nbytes} bytes "
                                           f"for a scratch buffer") from None
            self.buffers.append(scratch[buffer["arg"]])
            if buffer.get("zero"):
                backend.zero(scratch[buffer["arg"]], max(1, nbytes))
        self.args = []
        for a in kernel.spec["args"]:
            role, param = a["role"], a.get("param")
            if role == "value":
                value = _scalar(values[param], a["type"], kernel.spec, param)
            elif role == "data":
                value = self.device[param][0]
            elif role in ("shape", "stride"):
                array = values[param]
                value = array.shape[a["axis"]] if role == "shape" else array.strides[a["axis"]] // array.itemsize
            elif role == "status":
                value = self.status
            elif role == "scratch":
                value = scratch[a["name"]]
            else:  # phase: set per launch
                value = None
            self.args.append([a["type"], value, role])

    def _device_argument(self, array: DeviceArray, copied: bool) -> tuple[int, int, int]:
        """(data pointer, span low, span high) of a tensor already on the device: its own
        memory, or for an input that overlaps an output a device-to-device copy."""
        backend = self.kernel.module.backend
        if array.stream is not None and hasattr(backend, "wait_stream"):
            backend.wait_stream(array.stream)  # what the producer still writes must land first
        lo, hi = array.span()
        if not copied or hi == lo:
            return array.address, lo, hi
        base = backend.alloc(hi - lo)
        self.buffers.append(base)
        backend.copy(base, array.address + lo, hi - lo)
        return base - lo, lo, hi

    def launch(self) -> None:
        backend = self.kernel.module.backend
        backend.zero(self.status, self.kernel.module.manifest["status"]["bytes"])
        for launch in self.kernel.spec["launches"]:
            grid = [evaluate(g, self.env) for g in launch["grid"]]
            block = [evaluate(b, self.env) for b in launch["block"]]
            args = [(kind, launch.get("phase", 0) if role == "phase" else value) for kind, value, role in self.args]
            backend.launch(self.kernel.function, grid, block, launch.get("shared_bytes", 0), args)

    def finish(self):
        import numpy as np

        backend = self.kernel.module.backend
        backend.synchronize()
        status = np.zeros(self.kernel.module.manifest["status"]["bytes"] // 8, dtype=np.int64)
        backend.download(status.ctypes.data, self.status, status.nbytes)
        code = int(status.view(np.int32)[0])
        if code != 0:
            check = self.kernel.spec["checks"][int(status.view(np.int32)[1])]
            numbers = iter(int(v) for v in status[1:1 + check["nargs"]])
            message = re.sub(r"%(lld|%)", lambda m: "%" if m.group(1) == "%" else str(next(numbers, "?")),
                             check["message"])
            raise KernelError(code, message)
        for p in self.kernel.spec["params"]:
            if p["kind"] == "tensor" and (p.get("mutable") or p.get("result")) and p["name"] in self.packed:
                packed = self.packed[p["name"]]
                backend.download(packed.packed.ctypes.data, self.device[p["name"]][0] - packed.base // 2,
                                 packed.packed.nbytes)
                packed.write_back()
                continue
            if isinstance(self.values[p["name"]], DeviceArray):
                continue  # written in place on the device
            if p.get("mutable") or p.get("result"):  # written tensors and scalar results
                data, lo, hi = self.device[p["name"]]
                if hi > lo:
                    array = self.values[p["name"]]
                    backend.download(array.__array_interface__["data"][0] + lo, data + lo, hi - lo)
        return calling.returned([p for p in self.kernel.params if p.result], {**self.values, **self.returned})

    def release(self) -> None:
        for ptr in self.buffers:
            self.kernel.module.backend.free(ptr)
        self.buffers = []


def _scalar(value, kind: str, spec: dict, name: str):
    """The launch argument of scalar parameter ``name``: its C ABI value (kir/calling.py)."""
    entry = next(p for p in spec["params"] if p["name"] == name)
    return calling.scalar_value(value, Parameter.from_manifest(entry), spec["name"])
