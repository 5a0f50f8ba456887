"""Imports go one way (cli → report → analysis → model ← load), and the report path never imports
torch or HTA."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "traceanalyze"

# module prefix → package prefixes it must not import
FORBIDDEN = {
    "traceanalyze.load": ("traceanalyze.analysis", "traceanalyze.report", "traceanalyze.cli"),
    "traceanalyze.analysis": ("traceanalyze.report", "traceanalyze.cli", "traceanalyze.load"),
    "traceanalyze.report": ("traceanalyze.cli", "traceanalyze.gate", "traceanalyze.diff", "traceanalyze.jobs",
                            "traceanalyze.api"),
    "traceanalyze.gate": ("traceanalyze.cli", "traceanalyze.diff"),
    "traceanalyze.diff": ("traceanalyze.cli",),
    "traceanalyze.jobs": ("traceanalyze.cli", "traceanalyze.api", "traceanalyze.gate", "traceanalyze.diff"),
    "traceanalyze.model": ("traceanalyze.analysis", "traceanalyze.report", "traceanalyze.cli", "traceanalyze.load"),
    "traceanalyze.errors": ("traceanalyze.",),
    # leaves that every layer may use: they import no other module of the package
    "traceanalyze.native": ("traceanalyze.",),
    "traceanalyze.allocator": ("traceanalyze.",),
    "traceanalyze.report.escape": ("traceanalyze.",),
    "traceanalyze.output": ("traceanalyze.analysis", "traceanalyze.report", "traceanalyze.load", "traceanalyze.cli"),
    "traceanalyze.calibrate": ("traceanalyze.cli",),
    "traceanalyze.calibrate.fit": ("traceanalyze.capture", "traceanalyze.report", "traceanalyze.cli"),
}


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_imports_flow_one_way():
    problems = []
    for path in PACKAGE.rglob("*.py"):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        for prefix, forbidden in FORBIDDEN.items():
            if module == prefix or module.startswith(prefix + "."):
                problems += [f"{module} imports {name}" for name in imports_of(path) if name.startswith(forbidden)]
    assert not problems


def test_report_path_imports_neither_torch_nor_hta(tmp_path):
    code = (
        "import sys, traceanalyze, traceanalyze.cli\n"
        "from traceanalyze.report import model, terminal, jsonout\n"
        "from traceanalyze.analysis import idle, launch, job\n"
        "import traceanalyze.jobs, traceanalyze.api\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('torch', 'hta', 'pandas', 'ray', 'dask', 'distributed')]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_op_costs_are_a_leaf_of_the_analysis_layer():
    """analysis/costs imports no other analysis module: the roofline and the attribution read it."""
    costs = PACKAGE / "analysis" / "costs"
    problems = [f"{path.name} imports {name}" for path in costs.glob("*.py") for name in imports_of(path)
                if name.startswith("traceanalyze.") and not name.startswith("traceanalyze.analysis.costs")]
    assert not problems


def _is_module(name: str) -> bool:
    path = PACKAGE.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def _module_imports(module_prefix: str) -> dict[str, set[str]]:
    """module → the modules of the package it imports (top-level and lazy imports alike; `from
    package import name` imports `package.name` when that is a module, else `package`)."""
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        if not module.startswith(module_prefix):
            continue
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [f"{node.module}.{alias.name}" for alias in node.names]
                submodules = [n for n in names if _is_module(n)]
                targets.update(submodules)
                if len(submodules) < len(names):  # a name defined in the module itself
                    targets.add(node.module)
            elif isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
        graph[module] = targets
    return {module: {t for t in targets if t in graph and t != module} for module, targets in graph.items()}


def test_the_loader_has_no_import_circle():
    """load/__init__ → files → decode → columnar/fast → raw → chunk → shapes → convert: each
    module imports only downward (lazy imports included), so any module can be read alone."""
    graph = _module_imports("traceanalyze.load")
    assert "traceanalyze.load.files" in graph
    circles = []

    def visit(module: str, path: list[str]) -> None:
        for target in graph[module]:
            if target in path:
                circles.append(" -> ".join(path[path.index(target):] + [target]))
            elif len(path) < len(graph):
                visit(target, path + [target])

    for module in graph:
        visit(module, [module])
    assert not circles, circles[:5]


def test_the_loader_imports_no_private_name_of_another_module():
    problems = []
    for path in (PACKAGE / "load").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("traceanalyze"):
                problems += [f"{path.name}: {node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                if isinstance(node.value, ast.Name) and node.value.id in ("chunk", "conversions", "convert", "fast", "raw", "shapes"):
                    problems.append(f"{path.name}: {node.value.id}.{node.attr}")
    assert not problems, problems
