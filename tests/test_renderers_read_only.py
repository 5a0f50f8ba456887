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
             "traceanalyze.report.chart_inputs", "traceanalyze.report.views")


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
        "from traceanalyze.report.summaries import listed_steps\n"
        "from traceanalyze.report.views import named_idle\n")
    (tmp_path / "good.py").write_text(
        "from traceanalyze.analysis.roofline import ON_ROOFLINE\nfrom traceanalyze.report.model import Report\n")
    problems = renderer_imports_that_compute(tmp_path)
    where = sorted((p.split(" ", 1)[0] for p in problems), key=lambda w: int(w.split(":")[1]))
    assert where == ["bad.py:1", "bad.py:2", "bad.py:3", "bad.py:5", "bad.py:7", "bad.py:8"]


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


# -- no computing over frames in a renderer ----------------------------------------------------------------
# Renderers read the model's frames row by row (`iter_rows`, `row`, a column's `to_list`), cut a
# table to the rows shown (`head`) and pick columns by name (`select("a", "b")`); what rows, in
# what order, and every total, median or join comes from the model (report.model, report.views,
# report.chart_inputs). Caught: a call of a method named below (on a frame, a column, a list: the
# AST does not know the type, and a list's `.sort` orders rows as much as a frame's), a `select` or
# `with_columns` of anything but column names, and any polars function (`pl.col`, `pl.lit`,
# `pl.concat`, ...: lower case; `pl.DataFrame` and the dtypes are types). A string's `join` (a
# literal separator) is wording.
COMPUTING_METHODS = frozenset({
    "sort", "sort_by", "filter", "group_by", "agg", "join", "with_columns", "unique", "n_unique", "sum", "mean",
    "median", "max", "min", "quantile", "any", "all", "explode", "pivot", "unpivot", "top_k", "bottom_k", "concat",
    "is_in", "value_counts", "cum_sum", "drop_nulls", "fill_null", "clip", "over", "implode", "to_struct",
    "with_row_index", "rank", "arg_max", "arg_min", "group_by_dynamic", "rolling", "diff", "shift", "std", "var",
})
# (module path under renderers/, function name): the calls left in a renderer, each for a reason
COMPUTING_ALLOWED: dict[tuple[str, str], str] = {}


def _by_name(call: ast.Call) -> bool:
    """A `select(...)`/`with_columns(...)` of column names only."""
    return all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in call.args) and not call.keywords


def _computes(call: ast.Call) -> str | None:
    func = call.func
    if not isinstance(func, ast.Attribute):
        return None
    if isinstance(func.value, ast.Name) and func.value.id == "pl":
        return f"pl.{func.attr}" if func.attr[:1].islower() else None
    if func.attr == "join" and isinstance(func.value, ast.Constant) and isinstance(func.value.value, str):
        return None  # a string joined: wording
    if func.attr in COMPUTING_METHODS or (func.attr == "select" and not _by_name(call)):
        return f".{func.attr}"
    return None


def renderer_calls_that_compute(folder: Path = RENDERERS,
                                allowed: dict[tuple[str, str], str] = COMPUTING_ALLOWED) -> list[str]:
    """`file:line (function) calls what` for every call in a renderer that computes over the
    model's frames or rows (the rule above), less `allowed`."""
    problems = []
    for path in sorted(folder.rglob("*.py")):
        name = path.relative_to(folder).as_posix()
        tree = ast.parse(path.read_text())
        owners = {}
        for function in ast.walk(tree):
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(function):
                    owners.setdefault(id(node), function.name)  # ast.walk is breadth-first: the outermost first
        for node in ast.walk(tree):
            what = _computes(node) if isinstance(node, ast.Call) else None
            owner = owners.get(id(node), "<module>")
            if what and (name, owner) not in allowed:
                problems.append((name, node.lineno, f"{name}:{node.lineno} ({owner}) calls {what}"))
    return [text for _, _, text in sorted(problems)]


def test_renderers_compute_nothing_over_frames():
    assert renderer_calls_that_compute() == []


def test_the_computing_check_catches_the_old_renderer_code(tmp_path):
    """The calls the renderers made before their computing moved to the model (issue #33), and
    what reading and wording may still do."""
    (tmp_path / "old.py").write_text(
        "import polars as pl\n"
        "def idle(report):\n"
        "    return report.idle.join(report.devices.select('rank', 'device', 'name'), on=['rank', 'device'])\n"
        "def deepest(queue):\n"
        "    return queue.sort('max_depth', descending=True).row(0, named=True)\n"
        "def caused(job, slowest):\n"
        "    return job.waits_caused.filter(pl.col('rank') == slowest)\n"
        "def gaps(rows):\n"
        "    rows.sort(key=lambda g: -g.duration_us)\n"
        "def devices(totals):\n"
        "    return totals['device'].unique()\n"
        "def total(kernels):\n"
        "    return kernels['total_ns'].sum()\n"
        "def waits(mine):\n"
        "    return mine.select(pl.col('arrival_ns').alias('start_ns'))\n")
    (tmp_path / "good.py").write_text(
        "def words(report, names):\n"
        "    rows = report.gaps.head(10).select('rank', 'device')\n"
        "    return ', '.join(names) + str(rows.row(0)) + str(pl.DataFrame())\n")
    problems = renderer_calls_that_compute(tmp_path, {})
    assert [p.split(" ", 1)[0] for p in problems] == [
        "old.py:3", "old.py:5", "old.py:7", "old.py:7", "old.py:9", "old.py:11", "old.py:13", "old.py:15",
        "old.py:15"]
    assert renderer_calls_that_compute(tmp_path, {("old.py", "deepest"): "a reason"}) == [
        p for p in problems if "(deepest)" not in p]
