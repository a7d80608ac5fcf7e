"""Code generation's schedule remarks: vector widths, entry checks and the GPU mapping.

CPU targets: each parallel loop's body is a task function (``llvm_outline``: ``K.taskN``, numbered
in program order); the optimised LLVM IR says whether LLVM's loop vectoriser made vector code in
it and with how many lanes. A loop without vector code gets the reason the physical program
shows, where there is one: an access whose stride along the innermost loop is not 1, a bounds
check that stays inside it, an ordered reduction, an atomic access. The kernel entry's aliasing
check (``llvm_function``) is reported where it runs. GPU targets: the launch plan's mapping
(``gpu_launch.plan_kernel``: grid, block or serial) with what limits it.

Everything here reads the program and the IR; nothing is emitted.
"""
from __future__ import annotations

import re
from collections import Counter

from intentc.lower import program as P
from intentc.lower.remark_terms import Terms

_DEFINE = re.compile(r'^define [^@]*@"?([^"(]+)"?\(', re.M)
# Vector loads and arithmetic: the loop's own work. Selects and stores alone are not counted (LLVM
# also vectorises the straight-line code of a degenerate path, such as an empty inner loop's result).
_VECTOR_OP = re.compile(r"= (?:fadd|fsub|fmul|fdiv|frem|add|sub|mul|sdiv|udiv|srem|urem|and|or|xor|shl|lshr|ashr|"
                        r"fneg|load|sitofp|uitofp|fptosi|fptoui|fpext|fptrunc|call)"
                        r"(?: [a-z]+)* <(\d+) x (float|double|half|bfloat|i8|i16|i32|i64)>")
_DTYPES = {"float": "f32", "double": "f64", "half": "f16", "bfloat": "bf16", "i8": "8-bit", "i16": "16-bit",
           "i32": "32-bit", "i64": "64-bit"}
_LAUNCH_KINDS = {"grid": "grid-stride over the points", "blocks": "with one block per point",
                 "block": "on one block", "single": "on one thread"}
_AT = re.compile(r"\(at [^()]*?:(\d+):(\d+)\)")


def codegen_remarks(program: P.Program, optimized, spec, remarks) -> None:
    """Add the remarks of code generation for ``program`` (``optimized``: the optimised LLVM
    module of a CPU target, or None) to ``remarks``."""
    if spec is not None and spec.is_gpu:
        # Thread tasks and their grains are the CPU runtime's: a GPU kernel's points go to the grid.
        remarks.remarks[:] = [r for r in remarks.remarks if r.pass_name != "schedule_parallel"]
        _gpu_remarks(program, remarks)
        return
    functions = _functions(str(optimized)) if optimized is not None else {}
    for kernel in program.kernels:
        _alias_remark(kernel, remarks)
        if optimized is not None:
            _vector_remarks(kernel, functions, remarks)


# ---- vector widths ------------------------------------------------------------------------------------
def _functions(text: str) -> dict:
    """Function name -> its body text, from LLVM IR text."""
    out, starts = {}, list(_DEFINE.finditer(text))
    for k, match in enumerate(starts):
        end = starts[k + 1].start() if k + 1 < len(starts) else len(text)
        out[match.group(1)] = text[match.end():end]
    return out


def llvm_element(dtype) -> str:
    """The LLVM scalar type a tensor element of ``dtype`` is computed in (bf16 as its bits)."""
    if dtype.is_float:
        return {64: "double", 32: "float"}.get(dtype.bits, "half" if dtype.name == "f16" else "i16")
    return f"i{max(8, dtype.bits)}"


def vector_shape(body: str, elements: set | None = None) -> tuple[int, str] | None:
    """(lanes, element type) of the widest vector arithmetic or memory operation in a
    function's IR on one of ``elements`` (LLVM type names; None: any), the most frequent
    element type first; None when it has none (index arithmetic alone is not the loop's work)."""
    found = Counter()
    for match in _VECTOR_OP.finditer(body):
        found[(int(match.group(1)), match.group(2))] += 1
    found = Counter({k: n for k, n in found.items() if k[0] > 1 and (elements is None or k[1] in elements)})
    if not found:
        return None
    types = Counter()
    for (lanes, elem), n in found.items():
        types[elem] += n
    elem = max(types, key=lambda t: (types[t], t))
    return max(lanes for lanes, e in found if e == elem), elem


def _vector_remarks(kernel: P.Kernel, functions: dict, remarks) -> None:
    loops = [s for s in P.walk_stmts(kernel.body) if isinstance(s, P.Loop) and s.kind == "parallel"]
    tasks = sorted((name for name in functions if name.startswith(kernel.name + ".task")
                    and name[len(kernel.name) + 5:].isdigit()), key=lambda n: int(n[len(kernel.name) + 5:]))
    if len(tasks) != len(loops):  # a task LLVM removed or merged: no sure attribution
        return
    terms = Terms(kernel, remarks.user_names.get(kernel.name, set()))
    seen: dict = {}
    for loop, task in zip(loops, tasks):
        origin = remarks.origin(kernel.name, loop.var.name)
        if origin is None:
            continue
        elements = {llvm_element(t.dtype) for t in _accessed(loop)}
        shape = vector_shape(functions[task], elements)
        entry = seen.setdefault(loop.var.name, [origin, loop, None])
        if shape is not None and (entry[2] is None or shape[0] > entry[2][0]):
            entry[2] = shape  # the unit-stride copy and the strided copy: the better of the two
    for origin, loop, shape in seen.values():
        inner = _innermost(loop)
        where = _describe_loops(kernel, loop, inner, remarks)
        explicit = _explicit_vector(loop)
        if explicit is not None:
            remarks.add("applied", "vectorize", kernel.name, origin.span,
                        f"vectorised: {origin.describe()} computes in registers of {explicit.lanes} lanes of "
                        f"{explicit.elem} (the compiler's register tile) on {where}")
            continue
        if shape is not None:
            lanes, elem = shape
            remarks.add("applied", "vectorize", kernel.name, origin.span,
                        f"vectorised: {origin.describe()} runs {lanes} lanes of {_DTYPES[elem]} at a time "
                        f"(LLVM's loop vectoriser) on {where}")
            continue
        reasons = [r for s in inner for r in _not_vectorisable(s, terms, remarks, kernel)]
        reason = "in its way: " + "; ".join(dict.fromkeys(reasons)) if reasons else \
            "LLVM's loop vectoriser found it not profitable or could not prove it legal"
        remarks.add("missed", "vectorize", kernel.name, origin.span,
                    f"not vectorised: {origin.describe()}, on {where}; {reason}")


def _explicit_vector(loop: P.Loop):
    """The widest ``VectorType`` the compiler wrote into ``loop`` itself (a micro-kernel's), or None."""
    widest = None
    for s in P.walk_stmts((loop,)):
        for e in P.stmt_exprs(s):
            for x in P.walk_expr(e):
                if isinstance(x.dtype, P.VectorType) and (widest is None or x.dtype.lanes > widest.lanes):
                    widest = x.dtype
    return widest


def _accessed(loop: P.Loop) -> set:
    """The tensors ``loop`` loads from or stores to."""
    found = {s.tensor for s in P.walk_stmts((loop,)) if isinstance(s, P.Store)}
    for s in P.walk_stmts((loop,)):
        for e in P.stmt_exprs(s):
            found.update(x.tensor for x in P.walk_expr(e) if isinstance(x, (P.Load, P.Atomic)))
    return found


def _innermost(loop: P.Loop) -> list[P.Loop]:
    """The loops in ``loop`` (itself included) with no loop inside them."""
    inner = [s for s in P.walk_stmts(loop.body) if isinstance(s, P.Loop)]
    if not inner:
        return [loop]
    return [s for s in inner if not any(isinstance(x, (P.Loop, P.While)) for x in P.walk_stmts(s.body))]


def _describe_loops(kernel: P.Kernel, outer: P.Loop, loops: list[P.Loop], remarks) -> str:
    names = []
    for loop in loops:
        origin = remarks.origin(kernel.name, loop.var.name)
        names.append(origin.describe() if origin is not None else "a loop the compiler made")
    names = list(dict.fromkeys(names))
    if loops == [outer]:
        return "the loop itself"
    if len(names) == 1:
        return f"its innermost loop, {names[0]}" if len(loops) == 1 else f"its innermost loops, {names[0]}"
    return "its innermost loops (" + "; ".join(names) + ")"


def _not_vectorisable(loop: P.Loop, terms: Terms, remarks, kernel: P.Kernel) -> list[str]:
    """What in ``loop`` (an innermost loop) keeps it scalar, in source terms."""
    reasons = []
    defs = {s.var: s.value for s in loop.body if isinstance(s, P.Assign)}
    checks = []
    for s in P.walk_stmts(loop.body):
        if isinstance(s, P.Check) and s.code == "INTENT_E_BOUNDS":
            at = _AT.search(s.message)
            checks.append(f"{at.group(1)}:{at.group(2)}" if at else "")
        for e in P.stmt_exprs(s):
            for x in P.walk_expr(e):
                if isinstance(x, P.Atomic):
                    reasons.append(f"it accesses {x.tensor.name if x.tensor.storage != 'heap' else 'a buffer'} "
                                   "atomically (M6)")
                elif isinstance(x, P.Load):
                    reasons += _stride_reason(x.tensor, x.offset, loop.var, defs, terms, "reads")
        if isinstance(s, P.Store):
            reasons += _stride_reason(s.tensor, s.offset, loop.var, defs, terms, "writes")
    if checks:
        places = ", ".join(sorted((c for c in set(checks) if c), key=lambda c: tuple(map(int, c.split(":")))))
        reasons.insert(0, f"{'a bounds check stays' if len(checks) == 1 else 'bounds checks stay'} inside it"
                          f"{f' (at {places})' if places else ''}: a failing check must stop the loop at that element")
    origin = remarks.origin(kernel.name, loop.var.name)
    if origin is not None and origin.construct == "for" and origin.carries:
        reasons.append(f"{origin.describe()} carries {', '.join(origin.carries)} from one iteration to the next, in "
                       "order (O2): a floating-point sum in order cannot be split across lanes (I.sum may regroup, T1)")
    if origin is not None and origin.construct == "reduction" and not any(
            isinstance(x, P.Binary) and x.fast for s in P.walk_stmts(loop.body) for e in P.stmt_exprs(s)
            for x in P.walk_expr(e)):
        reasons.append(f"{origin.describe()} is combined in order (its combine may not be regrouped, T1): it runs "
                       "as independent chains instead")
    return reasons


def _stride_reason(tensor: P.TensorSym, offset: P.Expr, var: P.Var, defs: dict, terms: Terms, verb: str) -> list:
    step = _coefficient(offset, var, defs, 0)
    if step == 1 or step == 0:
        return []
    name = tensor.name if tensor.storage != "heap" else "a buffer of its own"
    if step is None:
        return [f"it {verb} {name} at an index that is not an affine function of the loop's point "
                "(a gather or scatter)"]
    shown = terms.text(step) if isinstance(step, P.Expr) else str(step)
    return [f"it {verb} {name} with a stride of {shown or 'a run-time number of'} elements, not 1"]


def _coefficient(e: P.Expr, var: P.Var, defs: dict, depth: int):
    """How much ``e`` grows when ``var`` grows by one: an int, an expression not depending on
    ``var``, or None when ``e`` is not affine in it."""
    if depth > 16:
        return None
    if isinstance(e, P.Read):
        if e.var == var:
            return 1
        if e.var in defs:
            return _coefficient(defs[e.var], var, defs, depth + 1)
        return 0
    if isinstance(e, (P.Const, P.Field)):
        return 0
    if isinstance(e, P.Cast):
        return _coefficient(e.a, var, defs, depth + 1)
    if isinstance(e, P.Binary) and e.op in ("add", "sub"):
        a, b = _coefficient(e.a, var, defs, depth + 1), _coefficient(e.b, var, defs, depth + 1)
        if a is None or b is None:
            return None
        if isinstance(a, int) and isinstance(b, int):
            return a + b if e.op == "add" else a - b
        if b == 0:
            return a
        if a == 0 and e.op == "add":
            return b
        return None
    if isinstance(e, P.Binary) and e.op == "mul":
        a, b = _coefficient(e.a, var, defs, depth + 1), _coefficient(e.b, var, defs, depth + 1)
        if a == 0 and b == 0:
            return 0
        if a == 0 and b is not None:
            return _scale(e.a, b)
        if b == 0 and a is not None:
            return _scale(e.b, a)
        return None
    return None if any(_coefficient(x, var, defs, depth + 1) != 0 for x in P.expr_children(e)) else 0


def _scale(factor: P.Expr, coefficient):
    if isinstance(factor, P.Const) and isinstance(coefficient, int):
        return factor.value * coefficient
    if coefficient == 1:
        return factor
    return None


# ---- entry checks -------------------------------------------------------------------------------------
def _alias_remark(kernel: P.Kernel, remarks) -> None:
    tensors = [p for p in kernel.params if isinstance(p, P.TensorSym)]
    written = [p.name for p in tensors if p.writable]
    if not written or (len(tensors) == 1 and tensors[0].rank < 2):
        return
    others = [p.name for p in tensors if not p.writable]
    reads = f"; an input among {', '.join(others)} that overlaps one is copied first" if others else ""
    remarks.add("analysis", "entry_checks", kernel.name, None,
                f"aliasing check stays, once per call: written tensor{'s' if len(written) > 1 else ''} "
                f"{', '.join(written)} may share memory with another argument, which fails with INTENT_E_ALIAS"
                f"{reads}")


# ---- GPU mapping --------------------------------------------------------------------------------------
def _gpu_remarks(program: P.Program, remarks) -> None:
    from intentc.codegen.gpu_launch import plan_kernel

    for kernel in program.kernels:
        plan = plan_kernel(kernel)
        span = remarks.kernel_spans.get(kernel.name)
        reason = plan.reason
        if span is not None:  # positions in the kernel's own file as line:col
            reason = reason.replace(f"{span.source.path}:", "")
        if plan.mapping == "grid":
            kinds = Counter(launch.kind for launch in plan.launches)
            shown = ", ".join(f"{n} {_LAUNCH_KINDS.get(kind, kind)}" for kind, n in sorted(kinds.items()))
            remarks.add("applied", "gpu_mapping", kernel.name, None,
                        f"mapped to the grid: {len(plan.launches)} launch{'es' if len(plan.launches) != 1 else ''} "
                        f"({shown}); each parallel loop nest's points are spread over blocks of threads")
        elif plan.mapping == "block":
            remarks.add("missed", "gpu_mapping", kernel.name, None,
                        f"not mapped to the grid, runs on one block: {reason}")
        else:
            remarks.add("missed", "gpu_mapping", kernel.name, None,
                        f"not mapped to the grid, runs on one thread (serial): {reason}")
