"""The import structure of sema: it imports only base (source, diagnostics), parse and
kir; its modules form an acyclic graph; no module hides an import in a function body.
"""
from __future__ import annotations

import ast
from pathlib import Path

SEMA = Path(__file__).resolve().parents[2] / "intentc" / "sema"
ALLOWED = ("intentc.source", "intentc.diagnostics", "intentc.base", "intentc.parse", "intentc.kir", "intentc.sema")


def _module_name(path: Path) -> str:
    return "intentc.sema" if path.stem == "__init__" else f"intentc.sema.{path.stem}"


def _imports(tree: ast.AST) -> list[tuple[str, ast.AST]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("intentc"):
            for alias in node.names:  # `from intentc.sema import relations` imports a module
                name = f"{node.module}.{alias.name}"
                found.append((name if (SEMA / f"{alias.name}.py").is_file() and node.module == "intentc.sema"
                              else node.module, node))
        elif isinstance(node, ast.Import):
            found += [(alias.name, node) for alias in node.names if alias.name.startswith("intentc")]
    return found


GRAPH = {}
LOCAL = []
for _path in sorted(SEMA.glob("*.py")):
    _tree = ast.parse(_path.read_text(encoding="utf-8"))
    GRAPH[_module_name(_path)] = {name for name, _ in _imports(_tree)}
    for _function in ast.walk(_tree):
        if isinstance(_function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            LOCAL += [f"{_path.name}:{node.lineno}" for node in ast.walk(_function)
                      if isinstance(node, (ast.Import, ast.ImportFrom))]


def test_sema_imports_only_base_parse_and_kir():
    outside = {m: sorted(d for d in deps if not d.startswith(ALLOWED)) for m, deps in GRAPH.items()}
    assert not {m: d for m, d in outside.items() if d}


def test_no_function_local_imports():
    assert not LOCAL


def test_no_import_cycles():
    edges = {m: {d for d in deps if d in GRAPH and d != "intentc.sema"} for m, deps in GRAPH.items()}
    done, active = set(), []

    def visit(module):
        active.append(module)
        for dep in sorted(edges[module]):
            assert dep not in active, " -> ".join(active[active.index(dep):] + [dep])
            if dep not in done:
                visit(dep)
        active.pop()
        done.add(module)

    for module in sorted(edges):
        if module not in done:
            visit(module)
    assert len(done) == len(GRAPH) > 10
