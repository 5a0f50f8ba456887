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
    "traceanalyze.memory": ("traceanalyze.",),
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
