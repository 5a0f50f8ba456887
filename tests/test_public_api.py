"""The public API shows itself: `help(traceanalyze)` names what to call, `traceanalyze.analyze` is
the real function (keyword-only options, `run` apart from what is computed), the report and error
types are exported, the package is typed (py.typed, a stub of the compiled module that names what
the C method table names), and `.to_pandas()`'s pyarrow is declared."""

from __future__ import annotations

import dataclasses
import inspect
import pydoc
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import traceanalyze
from traceanalyze import api
from traceanalyze.report.groups import GROUPS, IDENTITY

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "fixtures" / "synthetic_training.json.gz"


def test_analyze_is_the_api_function_with_its_real_signature():
    assert traceanalyze.analyze is api.analyze
    parameters = inspect.signature(traceanalyze.analyze).parameters
    assert list(parameters)[0] == "trace"
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for name, p in parameters.items() if name != "trace")
    # what to compute, and one object for how to run it
    assert {"window", "skip_steps", "max_gaps", "peak_flops", "run"} <= set(parameters)
    assert not {"executor", "workers", "cache", "limits", "rank_frames"} & set(parameters)
    doc = traceanalyze.analyze.__doc__
    assert "Parameters" in doc and "Returns" in doc and "Examples" in doc


def test_help_of_the_package_says_what_to_call():
    text = pydoc.render_doc(traceanalyze, renderer=pydoc.plaintext)
    for name in ("analyze(", "render(", "load_trace(", "RunOptions(", "Report", "RankReport", "ConfigError"):
        assert name in text, name
    assert "window" in pydoc.render_doc(traceanalyze.analyze, renderer=pydoc.plaintext)


def test_every_exported_name_resolves_and_the_errors_are_ours():
    for name in traceanalyze.__all__:
        assert getattr(traceanalyze, name) is not None, name
    assert set(traceanalyze.__all__) <= set(dir(traceanalyze))
    for error in ("TraceAnalyzeError", "TraceFormatError", "EmptyTraceError", "ConfigError", "CaptureError"):
        assert issubclass(getattr(traceanalyze, error), traceanalyze.TraceAnalyzeError)
    with pytest.raises(AttributeError):
        traceanalyze.no_such_name  # noqa: B018


def test_importing_the_package_imports_no_polars():
    code = "import sys, traceanalyze; assert 'polars' not in sys.modules; print(traceanalyze.__all__[0])"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout


def test_run_options_change_how_not_what():
    plain = traceanalyze.render(traceanalyze.analyze(FIXTURE), "json")
    run = traceanalyze.RunOptions(cache=False, rank_frames="bounded")
    assert traceanalyze.render(traceanalyze.analyze(FIXTURE, run=run), "json") == plain
    with pytest.raises(traceanalyze.ConfigError):
        traceanalyze.analyze(FIXTURE, run={"cache": False})  # type: ignore[arg-type]
    with pytest.raises(traceanalyze.ConfigError):
        traceanalyze.analyze(FIXTURE, run=traceanalyze.RunOptions(executor="ray"))  # a file, not a folder


def test_the_grouped_views_are_the_rank_fields():
    rank = traceanalyze.analyze(FIXTURE).ranks[0]
    assert rank.overhead.gaps is rank.gaps and rank.launch.latency_stats is rank.latency_stats
    assert rank.roofline_tables.roofline is rank.roofline and rank.roofline_tables.peaks is rank.peaks
    for name, group in GROUPS.items():
        view = getattr(rank, name)
        assert all(getattr(view, f.name) is getattr(rank, f.name) for f in dataclasses.fields(group)), name


def test_every_rank_field_is_in_one_group_or_names_the_rank():
    """A new RankReport field goes in a group of report.groups (or is one of its IDENTITY fields),
    so `help(RankReport)` keeps reading as a handful of groups."""
    grouped = [f.name for group in GROUPS.values() for f in dataclasses.fields(group)]
    assert len(grouped) == len(set(grouped))
    assert sorted([*grouped, *IDENTITY]) == sorted(f.name for f in dataclasses.fields(traceanalyze.RankReport))
    assert all(f"`{name}`" in traceanalyze.RankReport.__doc__ for name in GROUPS)


def test_the_package_is_typed_and_ships_its_stub():
    package = REPO / "traceanalyze"
    assert (package / "py.typed").is_file()
    data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["traceanalyze"]
    assert {"py.typed", "_native.pyi"} <= set(data)


def test_the_native_stub_names_what_the_c_method_table_names():
    """Read from the C source, so a plain checkout (no compiler) checks it too; and where the
    module is built, against the module itself."""
    source = "\n".join(path.read_text() for path in (REPO / "traceanalyze").glob("_native*.c"))
    table = source[source.index("static PyMethodDef methods[]"):]
    in_c = set(re.findall(r'\{"(\w+)",', table[: table.index("{NULL")]))
    in_c |= set(re.findall(r'PyModule_AddIntConstant\(m, "(\w+)"', source))
    stub = (REPO / "traceanalyze" / "_native.pyi").read_text()
    in_stub = set(re.findall(r"^def (\w+)\(", stub,
                             flags=re.M)) | set(re.findall(r"^([A-Z_]+): int$", stub, flags=re.M))
    assert len(in_c) >= 12 and in_stub == in_c
    from traceanalyze import native

    compiled = native.compiled()
    if compiled is not None:
        assert {name for name in dir(compiled) if not name.startswith("_")} == in_c


def test_pyarrow_is_declared_where_to_pandas_needs_it():
    optional = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(dep.startswith("pyarrow") for dep in optional["pandas"])
    assert any(dep.startswith("pandas") for dep in optional["pandas"])
    assert any(dep.startswith("pyarrow") for dep in optional["dev"])
