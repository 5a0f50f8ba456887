"""Size measured honestly: no line over 120 characters (the ruff rule of pyproject.toml, so that the
600-line cap of tests/test_architecture.py measures size, not width), and no function whose body
is over 60 lines without a reason in its docstring (a paragraph starting "Long:").

The line rule holds for the package, tests/ and scripts/, with no exception."""

from __future__ import annotations

import ast
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
PACKAGE = REPOSITORY / "traceanalyze"
MAX_LINE = 120
MAX_BODY_LINES = 60



def _modules() -> dict[str, Path]:
    return {path.relative_to(PACKAGE).as_posix(): path for path in sorted(PACKAGE.rglob("*.py"))}


def _tests_and_scripts() -> dict[str, Path]:
    return {path.relative_to(REPOSITORY).as_posix(): path
            for folder in (REPOSITORY / "tests", REPOSITORY / "scripts") for path in sorted(folder.rglob("*.py"))}


def long_lines(path: Path) -> int:
    return sum(len(line) > MAX_LINE for line in path.read_text().splitlines())


def test_no_line_over_120_characters_in_the_package():
    over = {name: count for name, path in _modules().items()
            if (count := long_lines(path))}
    assert over == {}, f"lines over {MAX_LINE} characters (wrap them): {over}"


def test_no_line_over_120_characters_in_tests_and_scripts():
    over = {name: count for name, path in _tests_and_scripts().items()
            if (count := long_lines(path))}
    assert over == {}, f"lines over {MAX_LINE} characters (wrap them): {over}"


def long_functions(path: Path) -> list[tuple[str, int, bool]]:
    """(name, body lines without the docstring, whether the docstring says why) of each function."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        doc = ast.get_docstring(node) or ""
        body = node.body[1:] if doc and len(node.body) > 1 else node.body
        lines = node.end_lineno - body[0].lineno + 1
        found.append((node.name, lines, "Long:" in doc))
    return found


def test_no_function_over_60_lines_without_a_reason():
    unexplained = sorted((name, function, lines) for name, path in _modules().items()
                         for function, lines, explained in long_functions(path)
                         if lines > MAX_BODY_LINES and not explained)
    assert unexplained == []


def test_the_checks_see_a_long_line_and_a_long_function(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("x = '" + "a" * 130 + "'\n" + "def f():\n" + "    y = 1\n" * 61)
    assert long_lines(module) == 1
    assert long_functions(module) == [("f", 61, False)]


def test_ci_requires_the_sanitizer_fuzz_to_run():
    """.ci/run runs the AddressSanitizer fuzz with TRACEANALYZE_REQUIRE_ASAN=1: CI fails, rather
    than skips, where it cannot run (tests/load/test_scanner_asan.py)."""
    ci = (PACKAGE.parent / ".ci" / "run").read_text()
    assert "TRACEANALYZE_REQUIRE_ASAN=1 python -m pytest -q tests/load/test_scanner_asan.py" in ci
