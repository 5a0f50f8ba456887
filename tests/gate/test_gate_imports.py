"""The gate is pure and sits beside the report: the judging modules of `traceanalyze.gate` and
`traceanalyze.diff` read the JSON report's schema (`report.schema`) and nothing else of the report
layer, nor the CLI or the loader, and nothing in either package does I/O outside `gate/config.py`
(the budgets file) and `gate/inputs.py` (the trace or saved report)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "traceanalyze"
JUDGING = [PACKAGE / "gate" / name for name in ("__init__.py", "budgets.py", "config.py", "metrics.py", "verdict.py")]
JUDGING += [PACKAGE / "diff" / "compare.py"]
EVERYTHING = [*sorted((PACKAGE / "gate").glob("*.py")), *sorted((PACKAGE / "diff").glob("*.py"))]


def imported(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_gate_and_diff_import_neither_report_nor_cli():
    problems = [f"{path.name} imports {name}" for path in JUDGING for name in imported(path)
                if name.startswith(("traceanalyze.report", "traceanalyze.cli", "traceanalyze.load"))
                and name != "traceanalyze.report.schema"]
    assert not problems
    renderers = [path for path in EVERYTHING if path not in JUDGING and path.name != "inputs.py"]
    assert not [f"{path.name} imports {name}" for path in renderers for name in imported(path)
                if name.startswith(("traceanalyze.cli", "traceanalyze.load", "traceanalyze.report.model"))]


def test_only_config_reads_files_and_nothing_reads_the_environment():
    for path in EVERYTHING:
        text = path.read_text()
        assert "os.environ" not in text and "getenv" not in text, path
        if path.name not in ("config.py", "inputs.py"):
            assert "open(" not in text and "read_text" not in text and "read_bytes" not in text, path
