"""The reference interpreter: runs KIR as the frontend builds it (before lowering).

This file is the living definition of what every KIR op means. When the compiled code
and this file disagree, one of them has a bug, and the differential tests
(``tests/e2e``, ``tests/property``) exist to find out which. A reader who wants to know
what ``floordiv`` does on ``i8``, what ``cast`` does with NaN, or in which order the
argument checks run should find the answer here, in plain Python.

Values
    ``bool`` scalars are Python ``bool``; integer and ``index`` scalars are Python ``int``
    kept inside their dtype's range; float scalars are NumPy scalars of their dtype
    (``np.float16/32/64``) so that every operation rounds to the dtype; tensors are NumPy
    arrays; a domain is a ``Domain``.

Numeric rules (one meaning on every target; the compiled code implements the same)
    - Integers (``i8..i64``, ``u8..u64``, ``index`` = 64-bit signed) wrap around at their
      width. ``//`` and ``%`` round toward negative infinity; ``x // 0 == 0``,
      ``x % 0 == x``, ``MIN // -1 == MIN`` (and ``MIN % -1 == 0``).
    - Shifts by an amount outside ``[0, bits)`` (a negative amount included) give 0, or
      the sign fill (``-1`` / ``0``) for ``>>`` of a signed value.
    - Integer ``**`` is exponentiation by squaring with wrap-around; a negative exponent
      gives 0, except a base of 1 (gives 1) and -1 (gives -1 for odd, 1 for even
      exponents). ``0 ** 0 == 1``.
    - ``neg``/``abs`` wrap (``abs(MIN) == MIN``); unsigned ``abs`` is the identity.
    - Float arithmetic is IEEE in the operand dtype, rounded to that dtype after every
      operation (no fused multiply-add, no excess precision). ``/`` is true division;
      float ``//`` is ``floor(a / b)``; float ``%`` is Python's: the remainder of
      ``fmod`` moved to the divisor's sign, a zero remainder takes the divisor's sign,
      ``x % 0`` is NaN.
    - ``minimum``/``maximum`` on floats propagate NaN and order ``-0.0 < +0.0``.
    - Comparisons involving NaN are false, except ``!=`` which is true.
    - Casts: float -> int truncates toward zero and saturates at the target's range,
      NaN -> 0; int -> float rounds to nearest, ties to even (once, directly to the
      target dtype); float -> float rounds to nearest even; int -> int keeps the low bits
      (sign- or zero-extending by the *source* signedness); anything -> bool is
      ``!= 0`` (so NaN -> True); bool -> number is 0 or 1. Casts between an OCP
      Microscaling type and f32 follow ``intentc/kir/mx.py`` (exact decoding; rounding to
      nearest even, saturating where the format has no infinity).
    - ``exp``, ``log`` and ``tanh`` are intentc's own functions
      (``intentc/codegen/mathlib.py``), run here with NumPy one IEEE operation at a
      time: the same bits as the compiled code on every target. ``sqrt`` uses NumPy and
      is correctly rounded everywhere; float ``**`` is C's ``pow`` in double precision
      rounded to the dtype and may differ from the compiled code's libm by the ULP bound
      in ``docs/testing.md``.

Control
    ``if`` runs one region and yields its values; ``for`` visits a domain's points in
    order with loop carries; ``while`` runs its condition region, then its body, while
    the condition holds; ``parallel`` runs every point of the product of its domains
    exactly once (row-major by default; ``parallel_order`` picks another order, which a
    correct program cannot observe, P1); ``call`` interprets the helper.

Checks (``KernelError`` with the status codes of the C ABI, docs/abi.md)
    domain step <= 0 (-7, D1); element index outside ``[0, extent)`` of the tensor or
    tensor value accessed, and a subregion outside its source (-6, D5); ``assert_eq``
    and ``bcast_extent`` (-4, S1/S3); ``assert_true`` with its code; argument checks in
    the order of the loader and the runtime: read-only array for a written parameter
    (-5), rank (-3), dtype (-2), zero stride on a written axis (-5), a negative or
    mismatched result extent (-4).

Tensor values are evaluated eagerly where they are defined, in program order: a tensor
value (a view, reshape or permutation of a tensor the kernel writes included) is a
snapshot of what it read there. A parameter itself is a view of the caller's memory:
its loads see the kernel's earlier writes.
"""
from __future__ import annotations

import functools
import itertools
import math
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from intentc.codegen import mathlib
from intentc.kir.core import Block, Function, Module, Op, Value
from intentc.kir.extents import evaluate as evaluate_extent
from intentc.kir.extents import names as extent_names
from intentc.kir.types import DType, DomainType, TensorType, element_dtype

PARALLEL_ORDERS = ("forward", "reverse", "shuffle")
# None; "laws" (region ops, interp_structured.py); "race", "unique", "race,unique" (interp_memory.py)
SANITIZERS = (None, "laws", "order", "race", "unique", "race,unique")

E_DTYPE, E_RANK, E_SHAPE, E_STRIDE, E_BOUNDS, E_DOMAIN = -2, -3, -4, -5, -6, -7


def _kernel_error(code: int, message: str):
    from intentc.loader import KernelError

    return KernelError(code, message)


# =====================================================================================
# dtypes
# =====================================================================================
def numpy_dtype(dtype: DType) -> np.dtype:
    """The NumPy dtype that holds ``dtype`` (``index`` is int64, ``bool`` one byte, MX types
    the ml_dtypes type with one code per byte)."""
    if dtype.kind == "mx":
        from intentc.kir import mx

        return mx.numpy_dtype(dtype.name)
    if dtype.kind == "bfloat":
        try:
            import ml_dtypes
        except ImportError:  # pragma: no cover - depends on the environment
            raise NotImplementedError("bf16 needs the ml_dtypes package") from None
        return np.dtype(ml_dtypes.bfloat16)
    if dtype.is_bool:
        return np.dtype(np.bool_)
    if dtype.kind == "index":
        return np.dtype(np.int64)
    return np.dtype({"int": "i", "uint": "u", "float": "f"}[dtype.kind] + str(dtype.itemsize))


def int_range(dtype: DType) -> tuple[int, int]:
    if dtype.is_signed:
        return -(1 << (dtype.bits - 1)), (1 << (dtype.bits - 1)) - 1
    return 0, (1 << dtype.bits) - 1


def wrap(value: int, dtype: DType) -> int:
    """``value`` reduced to ``dtype``'s width: two's complement wrap-around."""
    bits = dtype.bits
    value &= (1 << bits) - 1
    if dtype.is_signed and value >> (bits - 1):
        value -= 1 << bits
    return value


_MANTISSA = {16: 11, 32: 24, 64: 53}  # significand bits of f16, f32, f64 (bf16: 8)


def _mantissa_bits(dtype: DType) -> int:
    return 8 if dtype.kind == "bfloat" else _MANTISSA[dtype.bits]


# =====================================================================================
# Integer and bool semantics, defined on Python scalars
# =====================================================================================
def int_binary(op: str, dtype: DType, a: int, b: int):
    """``a <op> b`` for integer (or ``index``) operands of ``dtype``; bools for and/or/xor."""
    if dtype.is_bool:
        if op == "and":
            return a and b
        if op == "or":
            return a or b
        if op == "xor":
            return a != b
        if op == "min":
            return a and b
        if op == "max":
            return a or b
        raise NotImplementedError(f"'{op}' on bool")
    bits = dtype.bits
    if op == "add":
        return wrap(a + b, dtype)
    if op == "sub":
        return wrap(a - b, dtype)
    if op == "mul":
        return wrap(a * b, dtype)
    if op == "floordiv":  # toward -inf; x // 0 == 0; MIN // -1 wraps to MIN
        return 0 if b == 0 else wrap(a // b, dtype)
    if op == "mod":  # the remainder of floordiv, with the divisor's sign; x % 0 == x
        return a if b == 0 else a % b
    if op == "pow":
        return int_pow(a, b, dtype)
    if op == "min":
        return min(a, b)
    if op == "max":
        return max(a, b)
    if op == "and":
        return wrap(a & b, dtype)
    if op == "or":
        return wrap(a | b, dtype)
    if op == "xor":
        return wrap(a ^ b, dtype)
    if op == "shl":  # an amount outside [0, bits) gives 0
        return wrap(a << b, dtype) if 0 <= b < bits else 0
    if op == "shr":  # arithmetic for signed values: the sign fills an out-of-range shift
        if 0 <= b < bits:
            return a >> b
        return -1 if a < 0 else 0
    raise NotImplementedError(f"'{op}' on {dtype}")


def int_pow(a: int, b: int, dtype: DType) -> int:
    """Exponentiation by squaring with wrap-around. A negative exponent gives 0, except
    for a base of 1 (gives 1) and -1 (gives -1 when the exponent is odd, else 1)."""
    if b < 0:
        if a == 1:
            return 1
        if a == -1:
            return -1 if b & 1 else 1
        return 0
    modulus = 1 << dtype.bits
    return wrap(pow(a % modulus, b, modulus), dtype)


def int_unary(op: str, dtype: DType, a):
    if dtype.is_bool:
        if op == "not":
            return not a
        raise NotImplementedError(f"'{op}' on bool")
    if op == "neg":
        return wrap(-a, dtype)
    if op == "not":
        return wrap(~a, dtype)
    if op == "abs":
        return wrap(abs(a), dtype) if dtype.is_signed else a
    raise NotImplementedError(f"'{op}' on {dtype}")


def int_compare(pred: str, a, b) -> bool:
    if pred == "lt":
        return a < b
    if pred == "le":
        return a <= b
    if pred == "gt":
        return a > b
    if pred == "ge":
        return a >= b
    if pred == "eq":
        return a == b
    return a != b


# =====================================================================================
# Float semantics, defined on NumPy values of the dtype (scalars or arrays alike)
# =====================================================================================
def _same_kind(result, dtype: np.dtype):
    """NumPy returns 0-d arrays from some functions on scalars: give back a scalar."""
    if isinstance(result, np.ndarray):
        if result.dtype != dtype:
            result = result.astype(dtype)
        if result.ndim == 0:
            return result[()]
    return result


def float_binary(op: str, dtype: DType, a, b):
    """``a <op> b`` for float operands; the result is rounded to the operand dtype."""
    nd = numpy_dtype(dtype)
    if op == "add":
        return _same_kind(np.add(a, b, dtype=nd), nd)
    if op == "sub":
        return _same_kind(np.subtract(a, b, dtype=nd), nd)
    if op == "mul":
        return _same_kind(np.multiply(a, b, dtype=nd), nd)
    if op == "div":
        return _same_kind(np.divide(a, b, dtype=nd), nd)
    if op == "floordiv":  # floor of the rounded quotient (not Python's float //)
        return _same_kind(np.floor(np.divide(a, b, dtype=nd)), nd)
    if op == "mod":
        return _same_kind(float_mod(a, b, nd), nd)
    if op == "pow":
        if isinstance(a, np.ndarray):
            return lift(lambda x, y: c_pow(x, y, nd), [a, b], dtype, dtype)
        return c_pow(a, b, nd)
    if op in ("min", "max"):
        return _same_kind(float_min_max(op, a, b, nd), nd)
    raise NotImplementedError(f"'{op}' on {dtype}")


def float_mod(a, b, nd: np.dtype):
    """Python's float ``%``: ``fmod`` (exact), moved into the divisor's sign by adding the
    divisor once when the signs differ; a zero remainder takes the divisor's sign;
    ``x % 0``, ``inf % y`` and NaN operands give NaN."""
    a = np.asarray(a, nd)
    b = np.asarray(b, nd)
    r = np.fmod(a, b)
    differ = ((r < 0) | (r > 0)) & ((r < 0) != (b < 0))
    r = np.where(differ, np.add(r, b, dtype=nd), r)
    return np.where(r == 0, np.copysign(np.zeros((), nd), b), r)


def c_pow(x, y, nd: np.dtype):
    """C's ``pow`` (with C99's special cases: ``pow(-inf, 0.5) == inf``, ``pow(1, nan) == 1``,
    ``pow(x, 0) == 1``) in double precision, rounded to the dtype. (NumPy's ``power`` is
    not C's: it computes ``x ** 0.5`` as ``sqrt(x)``.)"""
    x, y = float(x), float(y)
    try:
        result = math.pow(x, y)
    except OverflowError:  # finite operands, an infinite result
        odd = y.is_integer() and int(y) % 2 == 1
        result = -math.inf if x < 0 and odd else math.inf
    except ValueError:  # a pole (0 ** negative) or an invalid operation (negative ** fraction)
        if x == 0:
            odd = y.is_integer() and int(y) % 2 == 1
            result = math.copysign(math.inf, x) if odd else math.inf
        else:
            result = math.nan
    with np.errstate(all="ignore"):
        return nd.type(result)


def float_min_max(op: str, a, b, nd: np.dtype):
    """IEEE 754-2019 minimum/maximum: NaN if either operand is NaN; -0.0 < +0.0."""
    a = np.asarray(a, nd)
    b = np.asarray(b, nd)
    nan = np.isnan(a) | np.isnan(b)
    if op == "min":
        pick = np.where(a == b, np.where(np.signbit(a), a, b), np.where(a < b, a, b))
    else:
        pick = np.where(a == b, np.where(np.signbit(a), b, a), np.where(a > b, a, b))
    return np.where(nan, np.asarray(np.nan, nd), pick)


def float_unary(op: str, dtype: DType, a):
    nd = numpy_dtype(dtype)
    if op == "neg":
        return _same_kind(np.negative(a), nd)
    if op == "abs":
        return _same_kind(np.abs(a), nd)
    if op in ("exp", "log", "tanh"):  # the compiled code's own algorithm, operation by operation
        return _same_kind(mathlib.evaluate(op, a, nd), nd)
    if op == "sqrt":
        return _same_kind(np.sqrt(a, dtype=nd), nd)
    raise NotImplementedError(f"'{op}' on {dtype}")


_NP_COMPARE = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
               "eq": np.equal, "ne": np.not_equal}


def float_compare(pred: str, a, b):
    """IEEE comparisons: every comparison with NaN is false except ``ne``."""
    result = _NP_COMPARE[pred](a, b)
    return bool(result) if np.ndim(result) == 0 else result


# =====================================================================================
# Casts
# =====================================================================================
def cast_scalar(value, src: DType, dst: DType):
    """One scalar converted from ``src`` to ``dst`` (the rules in the module docstring)."""
    if src == dst:
        return value
    if src.kind == "mx" or dst.kind == "mx":  # OCP Microscaling: intentc/kir/mx.py
        from intentc.kir import mx

        return mx.cast(value, src, dst)
    if dst.is_bool:
        if src.is_float:
            return bool(value != 0)  # NaN != 0: NaN converts to True
        return value != 0
    if src.is_bool:
        return numpy_dtype(dst).type(1 if value else 0) if dst.is_float else int(bool(value))
    if src.is_float and dst.is_float:
        return numpy_dtype(dst).type(value)  # NumPy rounds once, to nearest even
    if src.is_float:
        return float_to_int(float(value), dst)
    if dst.is_float:
        return int_to_float(value, dst)
    return wrap(value, dst)


def float_to_int(x: float, dst: DType) -> int:
    """Truncate toward zero, saturating at ``dst``'s range; NaN -> 0."""
    if math.isnan(x):
        return 0
    low, high = int_range(dst)
    if x <= low:
        return low
    if x >= high:
        return high
    return int(x)


def int_to_float(n: int, dst: DType):
    """``n`` rounded to nearest (ties to even) directly to ``dst``'s precision; beyond the
    largest finite value it becomes +-inf."""
    nd = numpy_dtype(dst)
    magnitude = abs(n)
    precision = _mantissa_bits(dst)
    extra = magnitude.bit_length() - precision
    if extra > 0:
        quotient, remainder = divmod(magnitude, 1 << extra)
        half = 1 << (extra - 1)
        if remainder > half or (remainder == half and quotient & 1):
            quotient += 1
        magnitude = quotient << extra
    # ``magnitude`` now has at most ``precision`` significant bits: exact in f64, and the
    # conversion to ``dst`` is exact too unless it is past ``dst``'s range (then inf).
    with np.errstate(over="ignore"):
        return nd.type(float(-magnitude if n < 0 else magnitude))


def cast_array(array: np.ndarray, src: DType, dst: DType) -> np.ndarray:
    nd = numpy_dtype(dst)
    if src == dst:
        return array
    if src.kind == "mx" or dst.kind == "mx":  # OCP Microscaling: intentc/kir/mx.py
        from intentc.kir import mx

        return mx.cast(array, src, dst)
    if dst.is_bool:
        return np.asarray(array != 0)
    if src.is_bool or (src.is_float and dst.is_float):
        return array.astype(nd)
    return lift(lambda v: cast_scalar(v, src, dst), [array], dst, src)


# =====================================================================================
# Lifting scalar semantics to tensors
# =====================================================================================
def _py(array: np.ndarray, dtype: DType) -> list:
    """The elements of ``array`` as the interpreter's scalars (flat, row-major)."""
    if dtype.is_float:
        return list(np.ascontiguousarray(array).reshape(-1))
    return np.ascontiguousarray(array).reshape(-1).tolist()


def lift(fn, arrays: list[np.ndarray], result: DType, operand: DType) -> np.ndarray:
    """Apply a scalar function element by element (the arrays have one shape)."""
    shape = arrays[0].shape
    columns = [_py(a, operand) for a in arrays]
    values = list(map(fn, *columns))
    nd = numpy_dtype(result)
    if result.is_float:
        return np.array(values, dtype=nd).reshape(shape) if values else np.empty(shape, nd)
    return np.array(values, dtype=nd).reshape(shape)


def binary(op: str, dtype: DType, a, b, tensor: bool):
    if dtype.is_float:
        return float_binary(op, dtype, a, b)
    if tensor:
        return lift(lambda x, y: int_binary(op, dtype, x, y), [a, b], dtype, dtype)
    return int_binary(op, dtype, a, b)


def unary(op: str, dtype: DType, a, tensor: bool):
    if dtype.is_float:
        return float_unary(op, dtype, a)
    if tensor:
        return lift(lambda x: int_unary(op, dtype, x), [a], dtype, dtype)
    return int_unary(op, dtype, a)


def compare(pred: str, dtype: DType, a, b, tensor: bool):
    if dtype.is_float:
        return float_compare(pred, a, b)
    if tensor:
        return lift(lambda x, y: int_compare(pred, x, y), [a, b], _BOOL, dtype)
    return int_compare(pred, a, b)


def cast(value, src: DType, dst: DType, tensor: bool):
    return cast_array(value, src, dst) if tensor else cast_scalar(value, src, dst)


_BOOL = DType("bool", "bool", 8)


def scalar_of(value, dtype: DType):
    """A scalar read from memory (or an attribute) as the interpreter represents it."""
    if dtype.is_bool:
        return bool(value)
    if dtype.is_float or dtype.kind == "mx":
        return numpy_dtype(dtype).type(value)
    return int(value)


# =====================================================================================
# Domains
# =====================================================================================
@dataclass(frozen=True)
class Domain:
    """``[begin, end)`` with ``step > 0`` (D1). ``length`` counts the points the way the
    compiled code does, with index (64-bit) arithmetic: ``ceil((end - begin) / step)``,
    or 0 when ``end - begin <= 0``."""

    begin: int
    end: int
    step: int

    @property
    def length(self) -> int:
        diff = wrap(self.end - self.begin, _INDEX)
        return (diff - 1) // self.step + 1 if diff > 0 else 0

    def point(self, ordinal: int) -> int:
        return wrap(self.begin + ordinal * self.step, _INDEX)


_INDEX = DType("index", "index", 64)


# =====================================================================================
# The interpreter
# =====================================================================================
class _Return(Exception):
    pass


class Interpreter:
    """Executes the functions of one KIR module.

    ``parallel_order`` is ``"forward"`` (row-major), ``"reverse"`` or ``"shuffle"`` (a
    fresh permutation for every ``parallel`` op executed, from ``seed``)."""

    def __init__(self, module: Module, parallel_order: str = "forward", seed: int = 0, sanitize: str | None = None):
        if sanitize not in SANITIZERS:
            raise ValueError(f"sanitize must be one of {SANITIZERS}, got {sanitize!r}")
        self.sanitize = sanitize
        self.seed = seed
        if parallel_order not in PARALLEL_ORDERS:
            raise ValueError(f"parallel_order must be one of {', '.join(PARALLEL_ORDERS)}, got {parallel_order!r}")
        self.module = module
        self.functions = {f.name: f for f in module.functions}
        self.parallel_order = parallel_order
        self.rng = random.Random(seed)
        self.kernel_name = ""
        self.names: dict[int, str] = {}
        self.written: list[np.ndarray] = []  # the arrays of the kernel's mut parameters
        self.plans: dict[int, tuple] = {}  # per op (alive while this interpreter runs): what it needs

    # -- the calling convention of a loaded kernel ----------------------------------------
    def call(self, kernel: str, *args, out=None, **kwargs):
        func = self.functions.get(kernel)
        if func is None or func.kind != "kernel":
            known = ", ".join(f.name for f in self.module.kernels)
            raise AttributeError(f"module {self.module.name} has no kernel '{kernel}' (kernels: {known})")
        call = _KernelCall(self, func)
        return call.run(args, kwargs, out)

    # -- functions, blocks and ops ----------------------------------------------------------
    def run_function(self, func: Function, args: list) -> list:
        env: dict[int, object] = {}
        for value, arg in zip(func.args, args):
            env[id(value)] = arg
        return self.run_block(func.body, env)

    def run_block(self, block: Block, env: dict) -> list:
        """Run a block's ops; return the operands of its terminator."""
        for op in block.ops:
            handler = _HANDLERS.get(op.name)
            if handler is None:
                raise NotImplementedError(f"the interpreter has no meaning for KIR op '{op.name}'")
            result = handler(self, op, env)
            if result is not None:
                return result
        return []

    def where(self, op: Op) -> str:
        return f" (at {op.span.location()})" if op.span is not None else ""

    def order(self, count: int):
        if self.parallel_order == "forward":
            return range(count)
        if self.parallel_order == "reverse":
            return range(count - 1, -1, -1)
        ordinals = list(range(count))
        self.rng.shuffle(ordinals)
        return ordinals


def _is_tensor(value: Value) -> bool:
    return isinstance(value.type, TensorType)


def _op_const(it: Interpreter, op: Op, env: dict):
    plan = it.plans.get(id(op))
    if plan is None or plan[-1] is not op:
        dtype = op.results[0].type
        value = op.attrs["value"]
        if dtype.is_float:
            value = numpy_dtype(dtype).type(float(value))
        elif dtype.is_bool:
            value = bool(value)
        else:
            value = wrap(int(value), dtype)
        plan = it.plans[id(op)] = (id(op.results[0]), value, op)
    env[plan[0]] = plan[1]


def _operand_plan(it: Interpreter, op: Op) -> tuple:
    """(result id, operand ids, element dtype of the first operand, whether it is a tensor,
    the op), worked out once per op and call."""
    plan = it.plans.get(id(op))
    if plan is None or plan[-1] is not op:
        first = op.operands[0]
        plan = it.plans[id(op)] = (id(op.results[0]), [id(v) for v in op.operands], element_dtype(first.type),
                                   _is_tensor(first), op)
    return plan


def _op_binary(it: Interpreter, op: Op, env: dict):
    result, (a, b), dtype, tensor, _ = _operand_plan(it, op)
    env[result] = binary(op.name, dtype, env[a], env[b], tensor)


def _op_unary(it: Interpreter, op: Op, env: dict):
    result, (a,), dtype, tensor, _ = _operand_plan(it, op)
    env[result] = unary(op.name, dtype, env[a], tensor)


def _op_cmp(it: Interpreter, op: Op, env: dict):
    result, (a, b), dtype, tensor, _ = _operand_plan(it, op)
    env[result] = compare(op.attrs["pred"], dtype, env[a], env[b], tensor)


def _op_select(it: Interpreter, op: Op, env: dict):
    c, a, b = (env[id(v)] for v in op.operands)
    if _is_tensor(op.result):
        env[id(op.result)] = np.where(c, a, b)
    else:
        env[id(op.result)] = a if c else b


def _op_cast(it: Interpreter, op: Op, env: dict):
    a = op.operands[0]
    env[id(op.result)] = cast(env[id(a)], element_dtype(a.type), element_dtype(op.result.type), _is_tensor(a))


def _op_domain(it: Interpreter, op: Op, env: dict):
    begin, end, step = (env[id(v)] for v in op.operands)
    if step <= 0:
        raise _kernel_error(E_DOMAIN, f"{it.kernel_name}: a domain step must be positive, got {step}{it.where(op)}")
    env[id(op.result)] = Domain(begin, end, step)


def _op_dim(it: Interpreter, op: Op, env: dict):
    extent = env[id(op.operands[0])].shape[op.attrs["axis"]]
    env[id(op.result)] = int(extent) if op.name == "dim" else Domain(0, int(extent), 1)


def _op_dom_query(it: Interpreter, op: Op, env: dict):
    d = env[id(op.operands[0])]
    env[id(op.result)] = {"dom_begin": d.begin, "dom_end": d.end, "dom_step": d.step,
                          "dom_len": d.length}[op.name]


def _op_broadcast(it: Interpreter, op: Op, env: dict):
    """``result[i] = x[j]`` where source axis k sits on result axis ``map[k]`` and a source
    axis of extent 1 repeats (S2); a scalar fills the whole result."""
    source = env[id(op.operands[0])]
    shape = tuple(env[id(v)] for v in op.operands[1:])
    dtype = op.result.type.dtype
    if not _is_tensor(op.operands[0]):
        env[id(op.result)] = np.full(shape, source, dtype=numpy_dtype(dtype))
        return
    expanded = [1] * len(shape)
    for k, axis in enumerate(op.attrs["map"]):
        expanded[axis] = source.shape[k]
    env[id(op.result)] = _snapshot(it, np.broadcast_to(source.reshape(expanded), shape))


def _op_bcast_extent(it: Interpreter, op: Op, env: dict):
    """The broadcast of two extents (S2, S3): equal, or one of them 1 (0 with 1 gives 0)."""
    a, b = (env[id(v)] for v in op.operands)
    if not (a == b or a == 1 or b == 1):
        what = op.attrs.get("what", "extents")
        raise _kernel_error(E_SHAPE, f"{it.kernel_name}: incompatible broadcast ({what}): {a} and {b} are "
                                     f"neither equal nor 1{it.where(op)}")
    env[id(op.result)] = b if a == 1 else a


def _op_assert_eq(it: Interpreter, op: Op, env: dict):
    a, b = (env[id(v)] for v in op.operands)
    if a != b:
        what = op.attrs.get("what", "%lld != %lld").replace("%lld", "{}").format(a, b)
        raise _kernel_error(E_SHAPE, f"{it.kernel_name}: {what}{it.where(op)}")


def _op_assert_true(it: Interpreter, op: Op, env: dict):
    """Fail unless the condition holds; ``code`` says which status (bounds, domain, else shape)."""
    cond, *args = (env[id(v)] for v in op.operands)
    if not cond:
        code = {"bounds": E_BOUNDS, "domain": E_DOMAIN}.get(op.attrs.get("code"), E_SHAPE)
        what = op.attrs.get("what", "check failed").replace("%lld", "{}").format(*args)
        raise _kernel_error(code, f"{it.kernel_name}: {what}{it.where(op)}")


def _op_subregion(it: Interpreter, op: Op, env: dict):
    """``d[a:b]``: the members of ``d`` in ``[a, b)``, keeping their source coordinates (D4,
    D6); requires ``d.begin <= a <= b <= d.end``, never clamped (D5)."""
    d, a, b = (env[id(v)] for v in op.operands)
    if not d.begin <= a <= b <= d.end:
        raise _kernel_error(E_BOUNDS, f"{it.kernel_name}: subregion [{a}, {b}) is not within its source domain "
                                      f"[{d.begin}, {d.end}); bounds are never clamped (D5){it.where(op)}")
    first = d.begin + -((d.begin - a) // d.step) * d.step  # the first member at or after a
    env[id(op.result)] = Domain(first, b, d.step)


def _op_indices(it: Interpreter, op: Op, env: dict):
    """The domain's members (source coordinates, D6) as a 1-D index tensor."""
    d = env[id(op.operands[0])]
    env[id(op.result)] = np.array([d.point(k) for k in range(d.length)], dtype=np.int64)


def _snapshot(it: Interpreter, array: np.ndarray) -> np.ndarray:
    """A relation of a tensor the kernel writes, as a value: a copy, so that it keeps what
    it saw here (program order); relations of read-only tensors stay NumPy views."""
    if any(np.may_share_memory(array, written) for written in it.written):
        return array.copy()
    return array


def _op_view(it: Interpreter, op: Op, env: dict):
    """``x[r, a:b]``: a "fix" axis takes one index and is dropped, a "range" axis keeps
    ``[begin, end)`` counted from 0 (sema checked the bounds). Like every tensor value it
    is what ``x`` held here: later writes to ``x`` do not show through it."""
    source = env[id(op.operands[0])]
    values = iter(env[id(v)] for v in op.operands[1:])
    key = []
    for kind in op.attrs["axes"]:
        if kind == "fix":
            key.append(next(values))
        else:
            begin, end = next(values), next(values)
            key.append(slice(begin, end))
    env[id(op.result)] = _snapshot(it, source[tuple(key)])


def _op_reshape(it: Interpreter, op: Op, env: dict):
    """The same elements in logical row-major order with new extents (S4)."""
    source = env[id(op.operands[0])]
    env[id(op.result)] = _snapshot(it, np.reshape(source, tuple(env[id(v)] for v in op.operands[1:])))


def _op_permute(it: Interpreter, op: Op, env: dict):
    """Result axis k is source axis ``perm[k]`` (S5)."""
    env[id(op.result)] = _snapshot(it, np.transpose(env[id(op.operands[0])], op.attrs["perm"]))


def _op_join(it: Interpreter, op: Op, env: dict):
    """``result[..., 0] = a``, ``result[..., 1] = b`` (S6)."""
    a, b = (env[id(v)] for v in op.operands)
    env[id(op.result)] = np.stack([a, b], axis=-1)


def _element(it: Interpreter, op: Op, env: dict, tensor: Value, indices: list[Value]) -> tuple:
    """The checked element position of an access (D5: out of range is an error, never clamped)."""
    array = env[id(tensor)]
    position = tuple(env[id(v)] for v in indices)
    for axis, (i, extent) in enumerate(zip(position, array.shape)):
        if not 0 <= i < extent:
            name = it.names.get(id(tensor)) or tensor.hint or "tensor"
            raise _kernel_error(E_BOUNDS, f"{it.kernel_name}: index {i} is out of range [0, {extent}) on axis "
                                          f"{axis} of '{name}'{it.where(op)}")
    return array, position


def _op_load(it: Interpreter, op: Op, env: dict):
    tensor = op.operands[0]
    array, position = _element(it, op, env, tensor, op.operands[1:])
    env[id(op.result)] = scalar_of(array[position], tensor.type.dtype)


def _op_store(it: Interpreter, op: Op, env: dict):
    tensor = op.operands[0]
    array, position = _element(it, op, env, tensor, op.operands[1:-1])
    array[position] = env[id(op.operands[-1])]


def _op_if(it: Interpreter, op: Op, env: dict):
    region = op.regions[0] if env[id(op.operands[0])] else op.regions[1]
    for result, value in zip(op.results, it.run_block(region, env)):
        env[id(result)] = value


def _op_for(it: Interpreter, op: Op, env: dict):
    """Ordered iteration (O2): the domain's points in increasing order, with carries."""
    domain = env[id(op.operands[0])]
    carries = [env[id(v)] for v in op.operands[1:]]
    body = op.regions[0]
    index, args = body.args[0], body.args[1:]
    for ordinal in range(domain.length):
        env[id(index)] = domain.point(ordinal)
        for arg, value in zip(args, carries):
            env[id(arg)] = value
        carries = it.run_block(body, env)
    for result, value in zip(op.results, carries):
        env[id(result)] = value


def _op_while(it: Interpreter, op: Op, env: dict):
    """The condition region sees the carries; while it yields True the body runs."""
    carries = [env[id(v)] for v in op.operands]
    cond, body = op.regions
    while True:
        for arg, value in zip(cond.args, carries):
            env[id(arg)] = value
        (go,) = it.run_block(cond, env)
        if not go:
            break
        for arg, value in zip(body.args, carries):
            env[id(arg)] = value
        carries = it.run_block(body, env)
    for result, value in zip(op.results, carries):
        env[id(result)] = value


def _op_parallel(it: Interpreter, op: Op, env: dict):
    """Every point of the product of the domains runs exactly once (P1); no carries (P2).
    The order is row-major unless the interpreter was asked for another one."""
    domains = [env[id(v)] for v in op.operands]
    lengths = [d.length for d in domains]
    count = math.prod(lengths)
    body = op.regions[0]
    for flat in it.order(count):
        rest = flat
        for axis in reversed(range(len(domains))):
            rest, ordinal = divmod(rest, lengths[axis])
            env[id(body.args[axis])] = domains[axis].point(ordinal)
        it.run_block(body, env)


def _op_call(it: Interpreter, op: Op, env: dict):
    callee = it.functions[op.attrs["callee"]]
    results = it.run_function(callee, [env[id(v)] for v in op.operands])
    for result, value in zip(op.results, results):
        env[id(result)] = value


def _op_contract(it: Interpreter, op: Op, env: dict):
    """``contract`` (T3): ``result[out] = sum over the reduction axes of acc(a) * acc(b)``.

    Both operands convert to the accumulator dtype (exactly: it is at least as wide), and
    the sum starts at 0 and adds one reduction point at a time in k order (row-major over
    the reduction letters in the first operand's order), rounding each product and each
    sum to the accumulator (integers wrap). Batch and free axes follow the spec. The
    compiled code may fuse each multiply-add and regroup the sum, which T3/T7 grant, so
    float results may differ from this order by rounding; integer results never differ."""
    from intentc.kir.contract_spec import parse_spec
    from intentc.kir.types import DTYPES

    spec = parse_spec(op.attrs["spec"])
    acc = DTYPES[op.attrs["acc"]]
    nd = numpy_dtype(acc)
    a, b = (np.asarray(env[id(v)]) for v in op.operands)
    extent = dict(zip(spec.b, b.shape))
    extent.update(zip(spec.a, a.shape))
    reduced = list(spec.reduced)

    def aligned(x: np.ndarray, letters: str) -> np.ndarray:
        """x with the result's axes (extent 1 where x lacks one), then the reduction axes."""
        kept = [c for c in spec.out if c in letters]
        y = np.transpose(x, [letters.index(c) for c in kept + reduced])
        shape = [extent[c] if c in letters else 1 for c in spec.out] + [extent[c] for c in reduced]
        return y.reshape(shape).astype(nd)

    xa, xb = aligned(a, spec.a), aligned(b, spec.b)
    shape = tuple(extent[c] for c in spec.out)
    total = np.zeros(shape + (1,), nd)  # a trailing unit axis keeps scalars arrays
    with np.errstate(all="ignore"):
        for point in np.ndindex(*(extent[c] for c in reduced)):
            index = (Ellipsis,) + point + (None,)
            total = np.add(total, np.multiply(xa[index], xb[index], dtype=nd), dtype=nd)
    total = total[..., 0]
    env[id(op.result)] = total if spec.out else scalar_of(total[()], acc)


def _op_histogram(it: Interpreter, op: Op, env: dict):
    """``histogram`` (T6): one count (``i64``), or one sum of weights, per bin of ``[0, n)``.

    Float values (``range`` form), in the binning dtype (the values' dtype; f32 for f16):
    ``v`` counts when ``lo <= v <= hi`` (NaN never does), in bin
    ``min(floor((v - lo) * s), n - 1)`` with ``s = n / (hi - lo)`` computed once, each
    operation rounded to the binning dtype; so ``hi`` itself is in the last bin, as in
    NumPy. Integer values are bin indices: ``v`` counts in bin ``v`` when ``0 <= v < n``
    (as an index: 64-bit, so u64 values above 2**63 are out of range). Weights (the
    values' shape) add in row-major element order in their dtype (integers wrap); the
    compiled code may regroup each bin's sum, which T6 grants like a sum."""
    ranged, weighted = op.attrs["range"], op.attrs["weighted"]
    values = np.asarray(env[id(op.operands[0])]).reshape(-1)
    n = env[id(op.operands[1])]
    with np.errstate(all="ignore"):
        if ranged:
            binning = op.operands[2].type
            nd = numpy_dtype(binning)
            lo, hi = (nd.type(env[id(v)]) for v in op.operands[2:4])
            v = values.astype(nd)
            scale = np.divide(int_to_float(n, binning), np.subtract(hi, lo, dtype=nd), dtype=nd)
            valid = (v >= lo) & (v <= hi)
            t = np.multiply(np.subtract(v[valid], lo, dtype=nd), scale, dtype=nd)
            t = t.astype(np.float64)  # as the compiled code converts: NaN -> 0, saturating
            t[np.isnan(t)] = 0.0
            bins = np.floor(np.minimum(t, n - 1)).astype(np.int64)
        else:
            v = values.astype(np.int64)  # as index values: u64 wraps to negative
            valid = (v >= 0) & (v < n)
            bins = v[valid]
    if not weighted:
        env[id(op.result)] = np.bincount(bins, minlength=n).astype(np.int64)
        return
    weights = np.asarray(env[id(op.operands[-1])]).reshape(-1)[valid]
    total = np.zeros(n, weights.dtype)
    with np.errstate(all="ignore"):
        np.add.at(total, bins, weights)  # unbuffered: element by element, in order
    env[id(op.result)] = total


def _op_terminator(it: Interpreter, op: Op, env: dict):
    return [env[id(v)] for v in op.operands]


_HANDLERS = {
    "const": _op_const, "cmp": _op_cmp, "select": _op_select, "cast": _op_cast,
    "domain": _op_domain, "dim": _op_dim, "axis": _op_dim, "broadcast": _op_broadcast,
    "bcast_extent": _op_bcast_extent, "assert_eq": _op_assert_eq, "assert_true": _op_assert_true,
    "subregion": _op_subregion, "indices": _op_indices, "view": _op_view, "reshape": _op_reshape,
    "permute": _op_permute, "join": _op_join, "load": _op_load, "store": _op_store,
    "if": _op_if, "for": _op_for, "while": _op_while, "parallel": _op_parallel, "call": _op_call,
    "yield": _op_terminator, "condition": _op_terminator, "return": _op_terminator,
}
for _name in ("add", "sub", "mul", "div", "floordiv", "mod", "pow", "min", "max", "and", "or", "xor", "shl", "shr"):
    _HANDLERS[_name] = _op_binary
for _name in ("neg", "not", "abs", "exp", "log", "sqrt", "tanh"):
    _HANDLERS[_name] = _op_unary
for _name in ("dom_begin", "dom_end", "dom_step", "dom_len"):
    _HANDLERS[_name] = _op_dom_query
_HANDLERS["contract"] = _op_contract
_HANDLERS["histogram"] = _op_histogram


# =====================================================================================
# Calling convention: the same as ``intentc.load(...).<kernel>`` (intentc/loader.py)
# =====================================================================================
@dataclass
class _Spec:
    """One parameter as the ABI sees it (what the loader reads from the manifest)."""

    name: str
    kind: str  # tensor | scalar
    dtype: DType
    extents: tuple = ()
    mutable: bool = False
    result: bool = False

    @property
    def writable(self) -> bool:
        return self.mutable or self.result

    def manifest(self) -> dict:
        return {"name": self.name, "kind": self.kind, "dtype": self.dtype.name,
                "extents": list(self.extents), "mutable": self.mutable, "result": self.result}


class _KernelCall:
    def __init__(self, it: Interpreter, func: Function):
        self.it = it
        self.func = func
        self.name = func.name
        self.inputs: list[_Spec] = []
        for param, value in zip(func.params, func.args):
            if isinstance(value.type, TensorType):
                self.inputs.append(_Spec(param.name, "tensor", value.type.dtype, tuple(param.extents),
                                         param.mutable))
            else:
                self.inputs.append(_Spec(param.name, "scalar", value.type))
        count = len(func.result_types)
        self.results = [_Spec("out" if count == 1 else f"out{k}", "tensor", t.dtype, tuple(e), result=True)
                        for k, (t, e) in enumerate(zip(func.result_types, func.result_extents))]

    def run(self, args, kwargs, out):
        from intentc import loader

        name = self.name
        if len(args) > len(self.inputs):
            raise TypeError(f"{name}() takes {len(self.inputs)} arguments but {len(args)} were given")
        values = dict(zip((p.name for p in self.inputs), args))
        for key, value in kwargs.items():
            if key in values or key not in {p.name for p in self.inputs}:
                raise TypeError(f"{name}() got an unexpected or repeated argument '{key}'")
            values[key] = value
        missing = [p.name for p in self.inputs if p.name not in values]
        if missing:
            raise TypeError(f"{name}() is missing arguments: {', '.join(missing)}")

        arrays = {p.name: loader._as_array(values[p.name], p.manifest(), name)
                  for p in self.inputs if p.kind == "tensor"}
        outs = self._results(arrays, out)
        bound: dict[str, object] = {}
        for p in self.inputs + self.results:  # what the loader checks, in its order
            if p.kind == "scalar":
                loader._scalar(values[p.name], p.manifest(), name)
                bound[p.name] = _scalar_argument(values[p.name], p.dtype)
                continue
            array = outs[p.name] if p.result else arrays[p.name]
            if p.writable and not array.flags.writeable:
                raise _kernel_error(E_STRIDE, f"{name}: parameter '{p.name}' is written but the array is read-only")
            loader._dlpack_of(array.dtype)
            for stride in array.strides:
                if stride % array.dtype.itemsize:
                    raise _kernel_error(E_STRIDE, f"{name}: parameter '{p.name}' has a byte stride {stride} that "
                                                  f"is not a multiple of its element size {array.dtype.itemsize}")
            bound[p.name] = array
        for p in self.inputs + self.results:  # what the runtime checks on entry, in its order
            if p.kind == "tensor":
                self._check_tensor(p, bound[p.name])
        self._check_result_extents(bound)

        it = self.it
        it.kernel_name = name
        it.names = {id(v): p.name for v, p in zip(self.func.args, self.func.params)}
        it.written = [bound[p.name] for p in self.inputs if p.mutable]
        results = it.run_function(self.func, [bound[p.name] for p in self.inputs])
        for p, value in zip(self.results, results):
            bound[p.name][...] = value
        if not self.results:
            return None
        returned = [bound[p.name] for p in self.results]
        return returned[0] if len(returned) == 1 else tuple(returned)

    def _results(self, arrays: dict, out) -> dict:
        from intentc import loader

        if not self.results:
            if out is not None:
                raise TypeError(f"{self.name}() returns nothing, so it takes no out=")
            return {}
        if out is not None:
            provided = list(out) if isinstance(out, (tuple, list)) else [out]
            if len(provided) != len(self.results):
                raise TypeError(f"{self.name}() returns {len(self.results)} tensors; out= must give as many")
            return {p.name: loader._as_array(v, p.manifest(), self.name) for p, v in zip(self.results, provided)}
        extents = self._named_extents(arrays)
        outs = {}
        for p in self.results:
            shape = []
            for axis, e in enumerate(p.extents):
                if isinstance(e, int):
                    shape.append(e)
                    continue
                missing = [n for n in extent_names(e) if n not in extents]
                if missing:  # the only parameter naming it has too few axes: the rank check says so
                    owner = next(q for q in self.inputs if missing[0] in q.extents)
                    self._check_tensor(owner, arrays[owner.name])
                shape.append(evaluate_extent(e, extents))
                if shape[-1] < 0:  # e.g. R - 1 with R = 0: no tensor has that shape
                    raise _kernel_error(E_SHAPE, f"{self.name}: the result extent {e} is {shape[-1]}, which is "
                                                 f"negative")
            outs[p.name] = np.empty(tuple(shape), dtype=numpy_dtype(p.dtype))
        return outs

    def _named_extents(self, arrays: dict) -> dict:
        """Each extent name's value: the first tensor parameter that names it (S1)."""
        extents = {}
        for p in self.inputs:
            if p.kind == "tensor":
                array = arrays[p.name]
                for axis, e in enumerate(p.extents):
                    if isinstance(e, str) and axis < array.ndim:
                        extents.setdefault(e, array.shape[axis])
        return extents

    def _check_tensor(self, p: _Spec, array: np.ndarray) -> None:
        """The runtime's entry checks of one tensor (runtime_c/tensor.c), in its order."""
        from intentc import loader
        from intentc.codegen.abi import dlpack_dtype

        rank = len(p.extents)
        if array.ndim != rank:
            raise _kernel_error(E_RANK, f"{self.name}: parameter '{p.name}' has {array.ndim} dimension"
                                        f"{'' if array.ndim == 1 else 's'} but the kernel expects {rank}")
        if loader._dlpack_of(array.dtype) != dlpack_dtype(p.dtype):
            have = _intent_dtype_name(array.dtype)
            raise _kernel_error(E_DTYPE, f"{self.name}: parameter '{p.name}' has dtype {have} but the kernel "
                                         f"expects {p.dtype.name if p.dtype.kind != 'index' else 'i64'}")
        if p.writable and array.size > 0:
            for axis, (stride, extent) in enumerate(zip(array.strides, array.shape)):
                if stride == 0 and extent > 1:
                    raise _kernel_error(E_STRIDE, f"{self.name}: parameter '{p.name}' is written but has stride 0 "
                                                  f"on axis {axis} (extent {extent}), so its elements alias "
                                                  f"each other")

    def _check_result_extents(self, bound: dict) -> None:
        """Returned tensors must have the declared extents (literal, or the value of the
        first parameter naming the extent), checked before the body runs (S1)."""
        named = self._named_extents({p.name: bound[p.name] for p in self.inputs if p.kind == "tensor"})
        for p in self.results:
            array = bound[p.name]
            for axis, e in enumerate(p.extents):
                want = e if isinstance(e, int) else evaluate_extent(e, named)
                if array.shape[axis] != want:
                    raise _kernel_error(E_SHAPE, f"{self.name}: extent {e}: {p.name}.shape[{axis}] = "
                                                 f"{array.shape[axis]} but the kernel's result needs {want}")


def _intent_dtype_name(dtype: np.dtype) -> str:
    if dtype.kind == "b":
        return "bool"
    if dtype.name == "bfloat16":
        return "bf16"
    from intentc.kir.mx import BY_ML_DTYPES

    if dtype.name in BY_ML_DTYPES:
        return BY_ML_DTYPES[dtype.name].name
    return {"i": "i", "u": "u", "f": "f"}.get(dtype.kind, "?") + str(dtype.itemsize * 8)


def _scalar_argument(value, dtype: DType):
    """A scalar argument as the kernel receives it (the loader's conversions)."""
    if dtype.kind == "mx":
        from intentc.kir import mx

        return mx.to_numpy(np.array([mx.scalar_code(value, dtype.name)], np.uint8), dtype.name)[0]
    if dtype.is_bool:
        return bool(value)
    if dtype.is_float:
        if dtype.bits == 16:
            return np.asarray(value, dtype=numpy_dtype(dtype))[()]
        with np.errstate(over="ignore"):
            return numpy_dtype(dtype).type(float(value))
    return int(value)


# =====================================================================================
# Public entry point
# =====================================================================================
@functools.lru_cache(maxsize=128)
def _frontend(text: str, path: str) -> Module:
    from intentc.driver import frontend

    return frontend(text, path)


def load_module(source_or_path) -> Module:
    """A KIR module from source text, a ``.intent`` path, or a ``Module`` as is."""
    if isinstance(source_or_path, Module):
        return source_or_path
    if isinstance(source_or_path, Path):
        source_or_path = str(source_or_path)
    if not isinstance(source_or_path, str):
        raise TypeError(f"expected Intent source text or a path, got {type(source_or_path).__name__}")
    if "\n" in source_or_path or not source_or_path.endswith(".intent"):
        return _frontend(source_or_path, "<source>.intent")
    from intentc.driver import read_source

    return _frontend(read_source(source_or_path), source_or_path)


def interpret(source_or_path, kernel: str, *args, out=None, parallel_order: str = "forward", seed: int = 0,
              sanitize: str | None = None, **kwargs):
    """Run ``kernel`` of an Intent program in the reference interpreter.

    ``source_or_path`` is source text (a string with a newline, or not ending in
    ``.intent``), a path to a ``.intent`` file, or a KIR ``Module``. Arguments, ``out=``,
    returned tensors and ``KernelError``s follow the calling convention of a kernel loaded
    with ``intentc.load``: read-only inputs are never written, ``mut`` parameters are
    written in place, returned tensors are new arrays shaped by the declared extents.
    ``parallel_order`` ("forward", "reverse" or "shuffle" with ``seed``) picks the order in
    which ``parallel`` points run. ``sanitize="laws"`` checks the laws of every region op
    under random segmentations (``interp_structured.LawViolation``); ``sanitize="race"``
    reports conflicting accesses of two parallel points (``interp_memory.RaceError``, P3) and
    ``sanitize="unique"`` a ``unique=True`` scatter that writes one element twice
    (``interp_memory.UniqueViolation``, M4); ``"race,unique"`` does both. (A kernel whose
    parameters are named ``parallel_order``, ``seed`` or ``sanitize`` can be run with
    ``Interpreter(module).call(...)``.)
    """
    module = load_module(source_or_path)
    if sanitize == "order":
        return _order_sanitized(module, kernel, args, out, kwargs, seed)
    interpreter = Interpreter(module, parallel_order=parallel_order, seed=seed, sanitize=sanitize)
    with np.errstate(all="ignore"):
        return interpreter.call(kernel, *args, out=out, **kwargs)


from intentc.kir.interp_structured import HANDLERS as _STRUCTURED_HANDLERS  # noqa: E402

_HANDLERS.update(_STRUCTURED_HANDLERS)

from intentc.kir.interp_memory import HANDLERS as _MEMORY_HANDLERS, SANITIZED as _SANITIZED  # noqa: E402

_HANDLERS.update(_MEMORY_HANDLERS)
_HANDLERS.update(_SANITIZED)  # they run the plain handlers unless a race/unique sanitizer is on

from intentc.kir.interp_scaled import HANDLERS as _SCALED_HANDLERS  # noqa: E402

_HANDLERS.update(_SCALED_HANDLERS)  # scaled_contract (T4), sparse_contract (T5)

from intentc.kir.interp_lowered import HANDLERS as _LOWERED_HANDLERS  # noqa: E402

_HANDLERS.update(_LOWERED_HANDLERS)  # the ops only lowering builds (contract_tiles, lane_chains, ...)


def _order_sanitized(module, kernel: str, args, out, kwargs, seed: int):
    """The order sanitizer: run with parallel points forward, reversed and shuffled, from the
    same inputs; any difference in what was written is an error (P1, P3), INTENT_E_SANITIZER."""
    import copy

    runs = []
    for order in ("forward", "reverse", "shuffle"):
        a, o, k = copy.deepcopy((list(args), out, dict(kwargs)))
        interpreter = Interpreter(module, parallel_order=order, seed=seed)
        with np.errstate(all="ignore"):
            result = interpreter.call(kernel, *a, out=o, **k)
        runs.append((order, result, a, o, k))
    first = runs[0]
    for order, result, a, o, k in runs[1:]:
        pairs = [("the result", first[1], result)] + [(f"argument {i}", x, y) for i, (x, y) in enumerate(zip(first[2], a))]
        pairs += [(f"'{name}'", first[4][name], k[name]) for name in k]
        for what, x, y in pairs:
            xs = x if isinstance(x, tuple) else (x,)
            ys = y if isinstance(y, tuple) else (y,)
            for xa, ya in zip(xs, ys):
                if isinstance(xa, np.ndarray) and not np.array_equal(xa.view(np.uint8), ya.view(np.uint8)):
                    where = np.argwhere(xa.view(np.uint8).reshape(xa.shape + (-1,)).any(-1)
                                        != ya.view(np.uint8).reshape(ya.shape + (-1,)).any(-1))
                    raise _kernel_error(-11, f"{kernel}: order sanitizer: {what} differs between the forward and "
                                             f"the {order} order of I.parallel points; the result depends on the "
                                             f"order of points, which P1 forbids (a race, P3)")
    # The forward run is the result; write it into the caller's arrays.
    for original, written in zip(args, first[2]):
        if isinstance(original, np.ndarray) and original.flags.writeable:
            original[...] = written
    if out is not None:
        for original, written in zip(out if isinstance(out, (tuple, list)) else (out,),
                                     first[3] if isinstance(first[3], (tuple, list)) else (first[3],)):
            original[...] = written
    return first[1]
