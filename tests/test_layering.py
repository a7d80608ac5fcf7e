"""No stage of intentc imports a later one, and no modules import each other in a cycle.

The stages, in pipeline order, and what each may import (docs/architecture.md):

    base     intentc/base/, source.py, diagnostics.py, resources.py: nothing else of intentc
    parse    base
    kir      base
    sema     base, parse, kir
    interp   base, kir            (intentc/interp/, the reference interpreter)
    lower    base, kir
    codegen  base, kir, lower
    top      anything             (driver.py, cli.py, loader.py, ptx_loader.py, device_arrays.py, __init__.py,
                                   __main__.py)

Every ``import`` of every ``.py`` file under ``intentc/`` counts, function-local and
relative ones included (a cycle hidden in a function body is still a cycle).
``from intentc.x import y`` is an edge to the module ``intentc.x.y`` when there is one,
else to ``intentc.x``. The checker runs on the source text only (``ast``), so it also
runs on the synthetic trees of the self-tests below.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

STAGES = ("base", "parse", "kir", "sema", "interp", "lower", "codegen", "top")
ALLOWED = {
    "base": {"base"},
    "parse": {"base", "parse"},
    "kir": {"base", "kir"},
    "sema": {"base", "parse", "kir", "sema"},
    "interp": {"base", "kir", "interp"},
    "lower": {"base", "kir", "lower"},
    "codegen": {"base", "kir", "lower", "codegen"},
    "top": set(STAGES),
}
PACKAGES = {"base": "base", "parse": "parse", "kir": "kir", "sema": "sema", "interp": "interp", "lower": "lower",
            "codegen": "codegen"}  # intentc.<package>.* -> stage
TOP_LEVEL = {"source": "base", "diagnostics": "base", "resources": "base", "driver": "top", "cli": "top",
             "build_cache": "top",
             "loader": "top", "ptx_loader": "top", "device_arrays": "top", "__main__": "top"}  # intentc.<module> -> stage


@dataclass(frozen=True)
class Edge:
    source: str  # importing module
    target: str  # imported module
    where: str  # path:line of the import


def module_name(path: str) -> tuple[str, bool]:
    """(dotted module name, whether it is a package's __init__) of a path like intentc/kir/ops.py."""
    parts = path[:-len(".py")].split("/")
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def stage_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "intentc":
        return None
    if len(parts) == 1:
        return "top"  # intentc/__init__.py
    if parts[1] in PACKAGES:
        return PACKAGES[parts[1]]
    return TOP_LEVEL.get(parts[1])


def import_edges(sources: dict[str, str]) -> tuple[list[Edge], set[str]]:
    """Every import of an intentc module in ``sources`` (path -> text), and the modules."""
    modules = {}
    for path in sources:
        name, is_package = module_name(path)
        modules[name] = (path, is_package)
    edges = []
    for name, (path, is_package) in sorted(modules.items()):
        package = name if is_package else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(sources[path], filename=path)):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # relative: from the importing module's package, level - 1 up
                    base_parts = package.split(".")
                    base_parts = base_parts[:len(base_parts) - (node.level - 1)]
                    origin = ".".join(base_parts + ([node.module] if node.module else []))
                else:
                    origin = node.module or ""
                for alias in node.names:
                    candidate = f"{origin}.{alias.name}"
                    targets.append(candidate if candidate in modules else origin)
            for target in dict.fromkeys(targets):  # one edge per imported module and line
                if target == "intentc" or target.startswith("intentc."):
                    edges.append(Edge(name, target, f"{path}:{node.lineno}"))
    return edges, set(modules)


def forbidden_imports(sources: dict[str, str]) -> list[str]:
    """``path:line`` and the stages of each import a stage may not make."""
    edges, modules = import_edges(sources)
    problems = []
    for module in sorted(modules):
        if stage_of(module) is None:
            problems.append(f"{sources_path(sources, module)}: module {module} belongs to no stage "
                            f"(add it to the table in tests/test_layering.py)")
    for edge in edges:
        have, want = stage_of(edge.source), stage_of(edge.target)
        if have is None or want is None:
            continue
        if want not in ALLOWED[have]:
            direction = "a later" if STAGES.index(want) > STAGES.index(have) else "a forbidden"
            problems.append(f"{edge.where}: {edge.source} ({have}) imports {edge.target} ({want}), "
                            f"{direction} stage")
    return sorted(set(problems), key=_by_place)


def _by_place(problem: str) -> tuple:
    place = problem.split(": ", 1)[0]
    path, _, line = place.partition(":")
    return path, int(line) if line.isdigit() else 0


def sources_path(sources: dict[str, str], module: str) -> str:
    return next(p for p in sources if module_name(p)[0] == module)


def strongly_connected(nodes: set[str], successors: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively (no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    counter = 0
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(successors.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(successors.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def import_cycles(sources: dict[str, str]) -> list[str]:
    """One description per cycle of modules (a strongly connected component of the import
    graph with more than one module, or a module importing itself): its modules and the
    path:line of every import between them."""
    edges, modules = import_edges(sources)
    successors: dict[str, set[str]] = {}
    for edge in edges:
        if edge.target in modules:
            successors.setdefault(edge.source, set()).add(edge.target)
    cycles = []
    for component in strongly_connected(modules, successors):
        members = set(component)
        inner = [e for e in edges if e.source in members and e.target in members]
        if len(component) == 1 and not inner:
            continue
        lines = "; ".join(f"{e.where} ({e.source} -> {e.target})" for e in sorted(inner, key=lambda e: e.where))
        cycles.append(f"cycle {' <-> '.join(component)}: {lines}")
    return cycles


def intentc_sources() -> dict[str, str]:
    return {p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted((ROOT / "intentc").rglob("*.py"))}


# ---- the real tree ---------------------------------------------------------------------------------------
def test_no_stage_imports_a_later_one():
    problems = forbidden_imports(intentc_sources())
    assert not problems, "imports against the stage order:\n" + "\n".join(problems)


def test_no_import_cycles():
    cycles = import_cycles(intentc_sources())
    assert not cycles, "import cycles between modules:\n" + "\n".join(cycles)


def test_every_stage_is_present():
    seen = {stage_of(module_name(path)[0]) for path in intentc_sources()}
    assert seen == set(STAGES)


# ---- the checker itself, on synthetic trees --------------------------------------------------------------
def test_checker_finds_upward_and_forbidden_imports():
    sources = {
        "intentc/__init__.py": "",
        "intentc/base/__init__.py": "",
        "intentc/base/status.py": "import numpy\n",
        "intentc/kir/__init__.py": "",
        "intentc/kir/ops.py": "from intentc.base import status\n\ndef f():\n    from intentc.lower import pipeline\n",
        "intentc/lower/__init__.py": "",
        "intentc/lower/pipeline.py": "from ..kir.ops import f\nfrom . import passes\nfrom intentc.interp import core\n",
        "intentc/lower/passes.py": "",
        "intentc/interp/__init__.py": "",
        "intentc/interp/core.py": "import intentc.lower.pipeline\nfrom intentc import driver\n",
        "intentc/driver.py": "from intentc.interp import core\n",
        "intentc/newthing.py": "",
    }
    problems = forbidden_imports(sources)
    assert problems == [
        "intentc/interp/core.py:1: intentc.interp.core (interp) imports intentc.lower.pipeline (lower), "
        "a later stage",
        "intentc/interp/core.py:2: intentc.interp.core (interp) imports intentc.driver (top), a later stage",
        "intentc/kir/ops.py:4: intentc.kir.ops (kir) imports intentc.lower.pipeline (lower), a later stage",
        "intentc/lower/pipeline.py:3: intentc.lower.pipeline (lower) imports intentc.interp.core (interp), "
        "a forbidden stage",
        "intentc/newthing.py: module intentc.newthing belongs to no stage (add it to the table in "
        "tests/test_layering.py)",
    ]


def test_checker_resolves_from_imports_to_modules():
    sources = {
        "intentc/__init__.py": "",
        "intentc/kir/__init__.py": "from . import ops\nfrom .types import DType\n",
        "intentc/kir/ops.py": "",
        "intentc/kir/types.py": "",
        "intentc/sema/__init__.py": "from intentc.kir import ops, types as t\nfrom intentc import kir\n",
    }
    edges, _ = import_edges(sources)
    found = {(e.source, e.target, e.where) for e in edges}
    assert found == {
        ("intentc.kir", "intentc.kir.ops", "intentc/kir/__init__.py:1"),
        ("intentc.kir", "intentc.kir.types", "intentc/kir/__init__.py:2"),
        ("intentc.sema", "intentc.kir.ops", "intentc/sema/__init__.py:1"),
        ("intentc.sema", "intentc.kir.types", "intentc/sema/__init__.py:1"),
        ("intentc.sema", "intentc.kir", "intentc/sema/__init__.py:2"),
    }


def test_checker_finds_cycles_with_their_lines():
    sources = {
        "intentc/__init__.py": "",
        "intentc/kir/__init__.py": "",
        "intentc/kir/a.py": "from intentc.kir import b\n",
        "intentc/kir/b.py": "import os\n\ndef late():\n    from intentc.kir.c import x\n",
        "intentc/kir/c.py": "from intentc.kir.a import y\n",
        "intentc/kir/d.py": "from intentc.kir import a\nfrom . import d\n",
        "intentc/kir/e.py": "from intentc.kir import a\n",
    }
    assert import_cycles(sources) == [
        "cycle intentc.kir.a <-> intentc.kir.b <-> intentc.kir.c: "
        "intentc/kir/a.py:1 (intentc.kir.a -> intentc.kir.b); "
        "intentc/kir/b.py:4 (intentc.kir.b -> intentc.kir.c); "
        "intentc/kir/c.py:1 (intentc.kir.c -> intentc.kir.a)",
        "cycle intentc.kir.d: intentc/kir/d.py:2 (intentc.kir.d -> intentc.kir.d)",
    ]
    del sources["intentc/kir/c.py"], sources["intentc/kir/d.py"]
    assert import_cycles(sources) == []
