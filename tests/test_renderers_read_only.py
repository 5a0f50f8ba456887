"""Renderers compute nothing: what they import from the stages that compute (`analysis`, `whatif`,
`pipeline`, the trace `model`) and from the report model (`report.model` and the modules it
computes with: `report.summaries`, `report.verdict`, `report.chart_inputs`) is limited to types
and constants, so that every figure they print, and every choice of rows (which steps, which
collectives, in what order: `RankReport.listed_steps`, `Report.listed_collectives`), comes from
the model the pipeline filled.

Allowed, precisely: a name imported with `from <one of those modules> import NAME` (at the top of
a module or inside a function) that is either a class (a type: `RankReport`, `JobAnalysis`,
`DevicePeaks`) or a constant spelled in capitals (`ON_ROOFLINE`, `ATTRIBUTION_KEYS`,
`DEVICE_FAMILIES`). Not allowed: a function or any other object by name, and a module
(`import traceanalyze.whatif`, `from traceanalyze import analysis`), whose functions a renderer
could then call. tests/test_architecture.py holds the tiers; this holds what crosses them."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
from pathlib import Path

RENDERERS = Path(__file__).resolve().parents[1] / "traceanalyze" / "renderers"
COMPUTING = ("traceanalyze.analysis", "traceanalyze.whatif", "traceanalyze.pipeline", "traceanalyze.model",
             "traceanalyze.report.model", "traceanalyze.report.summaries", "traceanalyze.report.verdict",
             "traceanalyze.report.chart_inputs")


def _computing(module: str) -> bool:
    return any(module == prefix or module.startswith(prefix + ".") for prefix in COMPUTING)


def _allowed(module: str, name: str) -> bool:
    value = getattr(importlib.import_module(module), name)
    return inspect.isclass(value) or (name.isupper() and not callable(value))


def _is_module(dotted: str) -> bool:
    try:
        return importlib.util.find_spec(dotted) is not None
    except ModuleNotFoundError:
        return False


def renderer_imports_that_compute(folder: Path = RENDERERS) -> list[str]:
    """`file:line imports what` for every import of a renderer that breaks the rule above."""
    problems = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            where = f"{path.relative_to(folder).as_posix()}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Import):
                problems += [f"{where} imports module {a.name}" for a in node.names if _computing(a.name)]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    if _computing(full) and _is_module(full):
                        problems.append(f"{where} imports module {full}")
                    elif _computing(node.module) and not _allowed(node.module, alias.name):
                        problems.append(f"{where} imports {full}, neither a class nor a constant")
    return problems


def test_renderers_import_only_types_and_constants_from_what_computes():
    assert renderer_imports_that_compute() == []


def test_the_check_catches_a_function_a_module_and_a_lazy_import(tmp_path):
    (tmp_path / "bad.py").write_text(
        "from traceanalyze.whatif import job_replay\n"
        "import traceanalyze.analysis.launch\n"
        "from traceanalyze import pipeline\n"
        "def f():\n    from traceanalyze.report.model import with_charts\n    return with_charts\n"
        "from traceanalyze.report.summaries import listed_steps\n")
    (tmp_path / "good.py").write_text(
        "from traceanalyze.analysis.roofline import ON_ROOFLINE\nfrom traceanalyze.report.model import Report\n")
    problems = renderer_imports_that_compute(tmp_path)
    where = sorted((p.split(" ", 1)[0] for p in problems), key=lambda w: int(w.split(":")[1]))
    assert where == ["bad.py:1", "bad.py:2", "bad.py:3", "bad.py:5", "bad.py:7"]


def test_the_renderers_read_the_rows_the_model_chose():
    """The per-step table and the collectives' lists are chosen by the model: the renderers read
    `RankReport.listed_steps` and `Report.listed_collectives` (report.summaries computes them)."""
    import polars as pl

    from traceanalyze.report.model import RankReport, Report
    from traceanalyze.report.summaries import STEPS_LISTED, ListedCollectives

    assert isinstance(RankReport.listed_steps, property)
    assert Report.listed_collectives.func.__annotations__["return"] in ("ListedCollectives", ListedCollectives)
    steps = pl.DataFrame({"step": range(STEPS_LISTED + 5), "device": [0] * (STEPS_LISTED + 5),
                          "cpu_duration_ns": range(STEPS_LISTED + 5)})
    holder = type("Holder", (), {"steps": steps, "listed_steps": RankReport.listed_steps})()
    listed, title = holder.listed_steps
    assert listed.height == STEPS_LISTED and listed["cpu_duration_ns"].to_list()[0] == STEPS_LISTED + 4
    assert title.startswith("Slowest steps")
