"""Each command's `--format` choices are its `RENDERERS` keys, and the CLI prints exactly what the
mapped renderer returns (no format is special-cased in the cli package)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import traceanalyze
from traceanalyze.cli import app
from traceanalyze.diff import diff_reports
from traceanalyze.diff import formats as diff_formats
from traceanalyze.gate import evaluate, measure, resolve_options
from traceanalyze.gate import formats as gate_formats
from traceanalyze.renderers import formats as report_formats
from traceanalyze.renderers.base import RenderOptions
from traceanalyze.renderers.jsonout import report_v1

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "synthetic_training.json.gz"
runner = CliRunner()


@pytest.mark.parametrize("name", sorted(report_formats.RENDERERS))
def test_report_prints_the_mapped_renderer(name):
    result = runner.invoke(app, ["report", str(FIXTURE), "--format", name])
    assert result.exit_code == 0, result.output
    assert result.stdout == report_formats.RENDERERS[name](traceanalyze.analyze(FIXTURE))


@pytest.mark.parametrize("name", sorted(gate_formats.RENDERERS))
def test_gate_prints_the_mapped_renderer(name):
    result = runner.invoke(app, ["gate", str(FIXTURE), "--max-idle-fraction", "0.99", "--format", name],
                           env={"GITHUB_ACTIONS": None, "GITHUB_STEP_SUMMARY": None})  # no annotations, no summary file
    verdict = evaluate(measure(report_v1(traceanalyze.analyze(FIXTURE)), source=str(FIXTURE)),
                       resolve_options({}, {"max_idle_fraction": "0.99"}))
    assert result.exit_code == verdict.exit_code, result.output
    assert result.stdout == gate_formats.RENDERERS[name](verdict)


@pytest.mark.parametrize("name", sorted(diff_formats.RENDERERS))
def test_diff_prints_the_mapped_renderer(name):
    result = runner.invoke(app, ["diff", str(FIXTURE), str(FIXTURE), "--format", name, "--top", "3"])
    assert result.exit_code == 0, result.output
    report = report_v1(traceanalyze.analyze(FIXTURE))
    compared = diff_reports(report, report, sources=(str(FIXTURE), str(FIXTURE)))
    assert result.stdout == diff_formats.RENDERERS[name](compared, RenderOptions(top=3))


def test_an_unknown_format_is_refused():
    result = runner.invoke(app, ["report", str(FIXTURE), "--format", "pdf"])
    assert result.exit_code == 2 and "pdf" in result.output


def test_a_json_report_imports_no_other_renderer(tmp_path):
    """The renderers are imported when called: `report --format json` (the start-up the benchmark
    times) loads neither the HTML renderer nor the plots (charts are made for HTML only), nor the
    text tables' tabulate."""
    import subprocess
    import sys

    watched = ["tabulate", "traceanalyze.renderers.html", "traceanalyze.renderers.plots",
               "traceanalyze.renderers.terminal", "traceanalyze.renderers.markdown",
               "traceanalyze.diff.render_html", "traceanalyze.diff.render_text", "traceanalyze.gate.render_text",
               "traceanalyze.renderers.jsonout"]
    code = (
        "import sys\n"
        "from traceanalyze.cli import main\n"
        f"sys.argv = ['traceanalyze', 'report', '--format', 'json', '--no-cache', '-o', {str(tmp_path / 'r.json')!r}, "
        f"{str(FIXTURE)!r}]\n"
        "try:\n    main()\nexcept SystemExit as done:\n    assert not done.code, done.code\n"
        f"print(sorted(name for name in {watched!r} if name in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "['traceanalyze.renderers.jsonout']"
    assert (tmp_path / "r.json").stat().st_size > 0
