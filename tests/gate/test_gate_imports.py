"""The gate is pure and sits beside the report: `traceanalyze.gate` and `traceanalyze.diff` import
neither the report layer nor the CLI, and do no I/O outside `gate/config.py`."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "traceanalyze"
PURE = [*sorted((PACKAGE / "gate").glob("*.py")), PACKAGE / "diff.py"]


def imported(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_gate_and_diff_import_neither_report_nor_cli():
    problems = [f"{path.name} imports {name}" for path in PURE for name in imported(path)
                if name.startswith(("traceanalyze.report", "traceanalyze.cli", "traceanalyze.load"))]
    assert not problems


def test_only_config_reads_files_and_nothing_reads_the_environment():
    for path in PURE:
        text = path.read_text()
        assert "os.environ" not in text and "getenv" not in text, path
        if path.name != "config.py":
            assert "open(" not in text and "read_text" not in text and "read_bytes" not in text, path
