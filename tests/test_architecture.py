"""Imports go one way, down the layer table below (lazy imports inside functions included,
relative imports resolved); no circle between modules; no private (`_name`) name used across
modules; and the report path never imports torch or HTA. The rules are plain functions
(tests/import_rules.py), checked here on the real package and on tiny made-up packages that break
each rule once. docs/architecture.md draws the same picture."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from import_rules import check_package, import_graph, package_modules

PACKAGE = Path(__file__).resolve().parents[1] / "traceanalyze"
EXTENSIONS = ("traceanalyze._native",)  # compiled (setup.py): no .py source

# Lowest first. A module belongs to the group of its longest prefix; it may import its own group and
# any group of a lower tier; the groups of one tier are independent (none imports another).
LAYERS = [
    # leaves: import nothing of the package
    ("traceanalyze._native", "traceanalyze.errors", "traceanalyze.allocator", "traceanalyze.version",
     "traceanalyze.sources"),
    # what every stage may use: the compiled helpers' wrapper, the trace field table, atomic writes,
    # the cache folder and its entry files, columns of one value held once, numbers as text, bounded config files
    ("traceanalyze.native", "traceanalyze.fields", "traceanalyze.output", "traceanalyze.cache_files",
     "traceanalyze.scalar_columns", "traceanalyze.units", "traceanalyze.figures",
     "traceanalyze.config_files"),
    ("traceanalyze.model",),  # the Trace: frozen polars frames, their schemas, the launch join
    ("traceanalyze.analysis.costs",),  # FLOP/byte models by op name: no trace, no other analysis
    # the stages that make or read a Trace, independent of each other: capture writes a trace file,
    # load decodes one, the analyses compute frames from a Trace (none loads a file)
    ("traceanalyze.capture", "traceanalyze.load", "traceanalyze.analysis"),
    ("traceanalyze.analysis.findings",),  # diagnoses from the analyses' frames
    ("traceanalyze.whatif",),  # the trace replayed, and the findings' actions applied to it
    # what knows no report: the renderers' pieces (escaping, text tables, Markdown, document blocks,
    # SVG, charts), the JSON document's shape and the report's notes
    (("traceanalyze.renderers.escape", "traceanalyze.renderers.text_table", "traceanalyze.renderers.md",
      "traceanalyze.renderers.blocks", "traceanalyze.renderers.html_text", "traceanalyze.renderers.svg",
      "traceanalyze.renderers.plots", "traceanalyze.report.schema", "traceanalyze.report.notes"),),
    # the report model: its summary figures, verdict and chart inputs, then the model itself
    (("traceanalyze.report.summaries", "traceanalyze.report.verdict", "traceanalyze.report.chart_inputs"),),
    # the verdict printed (terminal text, document blocks, Jupyter's HTML): the model's `_repr_html_` uses it
    (("traceanalyze.renderers.verdict_text", "traceanalyze.renderers.verdict_document"),),
    ("traceanalyze.report",),
    # running the analyses into the model (a rank, its cache, the executors' map/reduce) and printing
    # the model (one renderer per format), independent of each other; then the format table
    ("traceanalyze.pipeline", "traceanalyze.renderers"),
    ("traceanalyze.renderers.formats",),
    ("traceanalyze.scaling",),  # runs of one program at several sizes: time against work (docs/scaling.md)
    # commands built on reports, independent of each other: a trace annotated with its findings, a
    # trace's summary (info), the CI gate, the roofline calibration
    ("traceanalyze.annotate", "traceanalyze.info", "traceanalyze.gate", "traceanalyze.calibrate"),
    ("traceanalyze.diff",),  # compares two saved reports with the gate's metrics
    ("traceanalyze.api",),  # analyze(): load, analyse, report, rank files mapped by the pipeline
    ("traceanalyze.hta",),  # HTA's TraceAnalysis API on our tables (docs/hta.md); nothing imports it
    ("traceanalyze",),  # the public facade (traceanalyze/__init__.py)
    ("traceanalyze.cli",),
    ("traceanalyze.__main__",),
]


def test_every_module_is_in_the_layer_table_and_imports_only_downward():
    problems = check_package(PACKAGE, LAYERS, EXTENSIONS)["layers"]
    assert not problems, "\n".join(problems)


def test_no_import_circle_between_modules():
    circles = check_package(PACKAGE, LAYERS, EXTENSIONS)["circles"]
    assert not circles, circles


def test_no_private_name_is_used_across_modules():
    problems = check_package(PACKAGE, LAYERS, EXTENSIONS)["private"]
    assert not problems, "\n".join(problems)


def test_the_layer_table_names_only_real_modules():
    modules = package_modules(PACKAGE, EXTENSIONS)
    named = [prefix for tier in LAYERS for group in tier for prefix in ((group,) if isinstance(group, str) else group)]
    assert len(named) == len(set(named))
    assert [prefix for prefix in named if prefix not in modules] == []


def test_the_checker_sees_every_package_and_lazy_imports():
    """gate, diff, capture, calibrate, pipeline, renderers, health, findings... are all scanned, and an import
    inside a function (api.analyze's jobs import, the facade's lazy imports) is an edge."""
    modules = package_modules(PACKAGE, EXTENSIONS)
    for package in ("gate", "diff", "capture", "calibrate", "pipeline", "renderers", "annotate", "info",
                    "analysis.health", "analysis.findings",
                    "report", "load", "output", "api", "cli", "model", "errors"):
        assert f"traceanalyze.{package}" in modules
    graph, _ = import_graph(modules)
    assert "traceanalyze.api" in {edge.target for edge in graph["traceanalyze"]}  # `analyze`: a lazy import


MAX_MODULE_LINES = 600  # small modules with one job (the C sources aside)


def test_no_module_is_over_600_lines():
    long = {str(path.relative_to(PACKAGE.parent)): lines for path in PACKAGE.rglob("*.py")
            if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES}
    assert long == {}


# -- the checker on made-up packages: each rule broken once is reported --------------------------

def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    for name, text in {"__init__.py": "", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


FAKE_LAYERS = [("pkg.low",), ("pkg.mid", "pkg.side"), ("pkg.high",), ("pkg",)]


def test_checker_reports_a_clean_package_as_clean(tmp_path):
    root = _package(tmp_path, {"low.py": "X = 1\n", "mid.py": "from pkg.low import X\n",
                               "side.py": "import pkg.low\n", "high.py": "from pkg import mid, side\n"})
    assert check_package(root, FAKE_LAYERS) == {"layers": [], "circles": [], "private": []}


def test_checker_reports_a_circle_even_through_a_lazy_import(tmp_path):
    root = _package(tmp_path, {"low.py": "", "side.py": "", "high.py": "",
                               "mid/__init__.py": "from pkg.mid import a\n",
                               "mid/a.py": "from pkg.mid import b\n",
                               "mid/b.py": "def f():\n    from pkg.mid.a import g\n    return g\n"})
    assert check_package(root, FAKE_LAYERS)["circles"] == [["pkg.mid.a", "pkg.mid.b"]]


def test_checker_reports_an_upward_import_relative_and_lazy(tmp_path):
    root = _package(tmp_path, {"low.py": "def f():\n    from .high import H\n    return H\n",
                               "mid.py": "", "side.py": "", "high.py": "H = 1\n"})
    problems = check_package(root, FAKE_LAYERS)["layers"]
    assert len(problems) == 1 and problems[0].startswith("pkg.low:2 imports pkg.high (upward")


def test_checker_reports_a_sideways_import_and_an_unlisted_module(tmp_path):
    root = _package(tmp_path, {"low.py": "", "high.py": "", "side.py": "", "mid.py": "from . import side\n",
                               "extra.py": ""})
    problems = check_package(root, FAKE_LAYERS)["layers"]
    assert sorted(problems) == ["pkg.extra is in no layer of the table",
                                "pkg.mid:1 imports pkg.side (sideways: pkg.mid and pkg.side are independent)"]


@pytest.mark.parametrize("code", [
    "from pkg.low import _helper\n",
    "from pkg import low\nlow._helper()\n",
    "import pkg.low as low_module\nlow_module._helper()\n",
    "import pkg.low\npkg.low._helper()\n",
    "from pkg.low import Thing\nThing._private()\n",
    "def f():\n    from ..low import _helper\n",  # resolved against the importer's package
    "from .._low_private import X\n",  # a private module of another package
    "from pkg import _low_private\n",
])
def test_checker_reports_a_private_name_used_across_modules(tmp_path, code):
    root = _package(tmp_path, {"low.py": "def _helper():\n    pass\nclass Thing:\n    pass\n",
                               "_low_private.py": "X = 1\n", "mid.py": "", "side.py": "",
                               "high.py": "", "sub/__init__.py": "", "sub/user.py": code})
    layers = [("pkg.low", "pkg._low_private"), ("pkg.mid", "pkg.side"), ("pkg.high", "pkg.sub"), ("pkg",)]
    private = check_package(root, layers)["private"]
    assert len(private) == 1 and private[0].startswith("pkg.sub.user:"), private


def test_checker_allows_private_names_inside_a_module_and_a_private_module_in_its_package(tmp_path):
    root = _package(tmp_path, {"low.py": "from pkg import _ext\ndef _helper():\n    return _ext.run()\n_helper()\n",
                               "mid.py": "from collections import namedtuple\nfrom pkg.low import P\nP._replace\n",
                               "side.py": "", "high.py": ""})
    (root / "low.py").write_text((root / "low.py").read_text() + "from collections import namedtuple\nP = "
                                 "namedtuple('P', 'a')\n")
    layers = [("pkg._ext",), *FAKE_LAYERS]
    assert check_package(root, layers, extension_modules=("pkg._ext",)) == {"layers": [], "circles": [], "private": []}


def test_report_path_imports_neither_torch_nor_hta(tmp_path):
    code = (
        "import sys, traceanalyze, traceanalyze.cli\n"
        "from traceanalyze.report import model\nfrom traceanalyze.renderers import terminal, jsonout\n"
        "from traceanalyze.analysis import idle, launch, job\n"
        "import traceanalyze.pipeline, traceanalyze.api\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('torch', 'hta', 'pandas', 'ray', 'dask', "
        "'distributed')]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


COSTS_MAY_IMPORT = ("traceanalyze.analysis.costs", "traceanalyze.model")


def test_op_costs_are_a_leaf_of_the_analysis_layer():
    """analysis/costs imports no other analysis and nothing above it: the roofline and the
    attribution read it. Below it, only the model's frame joins (`model.latest_on_thread`, which
    the autograd pairing shares with the CPU context)."""
    graph, _ = import_graph(package_modules(PACKAGE, EXTENSIONS))
    problems = [f"{module} imports {edge.target}" for module, edges in graph.items()
                if module.startswith("traceanalyze.analysis.costs") for edge in edges
                if not edge.target.startswith(COSTS_MAY_IMPORT)]
    assert not problems
