"""Every real trace in ../shared/traces gated without a traceback: a verdict or a one-line error,
and a saved JSON report of it gives the gate exactly the same numbers."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from shared_traces import SHARED_TRACES_DIR, real_trace_params

from traceanalyze.api import analyze
from traceanalyze.cli import app
from traceanalyze.errors import TraceAnalyzeError
from traceanalyze.gate import measure
from traceanalyze.renderers.jsonout import render_json, report_v1
from traceanalyze.report.schema import report_from_builtins

runner = CliRunner()
NO_CI = {"GITHUB_ACTIONS": None, "GITHUB_STEP_SUMMARY": None}


def check_gate_output(result):
    assert result.exit_code in (0, 1, 2), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    if lines[0].startswith("traceanalyze: error:"):
        assert result.exit_code == 2 and len(lines) == 1, result.output
    else:
        assert lines[0].startswith("traceanalyze gate: "), result.output
        expected = {0: "PASS", 1: "FAIL", 2: "ERROR"}[result.exit_code]
        assert lines[0].startswith(f"traceanalyze gate: {expected}"), result.output


@pytest.mark.parametrize("path", real_trace_params())
def test_real_trace_gated(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    junit = tmp_path / "gate.xml"
    result = runner.invoke(app, ["gate", str(path), "--max-idle-fraction", "0.5", "--max-step-time-ms", "1000",
                                 "--min-compute", "0.01", "--junit", str(junit)], env=NO_CI)
    check_gate_output(result)
    if not result.output.startswith("traceanalyze: error:"):
        import xml.etree.ElementTree as ET

        assert ET.parse(junit).getroot().find("testsuite") is not None
    try:
        report = analyze(path)
    except TraceAnalyzeError:
        return
    assert measure(report_from_builtins(json.loads(render_json(report)))) == measure(report_v1(report))
    allowed = runner.invoke(app, ["gate", str(path), "--max-idle-fraction", "0.5", "--allow-unreliable"], env=NO_CI)
    check_gate_output(allowed)


def test_multi_rank_folder_gated_and_diffed(tmp_path, monkeypatch):
    folder = SHARED_TRACES_DIR / "param_v100_dlrm_4ranks"
    if not folder.is_dir():
        pytest.skip(f"real traces not found: {folder}")
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["gate", str(folder), "--max-idle-fraction", "0.5", "--format", "json"], env=NO_CI)
    assert result.exit_code in (0, 1, 2), result.output
    verdict = json.loads(result.stdout)
    assert verdict["steps"] >= 0 and verdict["checks"][0]["name"] == "max_idle_fraction"
    saved = tmp_path / "ranks.json"
    assert runner.invoke(app, ["report", str(folder), "--format", "json", "-o", str(saved)]).exit_code == 0
    diffed = runner.invoke(app, ["diff", str(saved), str(folder), "--format", "json"])
    assert diffed.exit_code == 0, diffed.output
    document = json.loads(diffed.stdout)
    # the same traces: nothing added or removed (a kernel at the 50-kernel cut of a rank may be 'unlisted')
    assert not [k for k in document["kernels"] if k["status"] in ("added", "removed")]
    assert all(m["change"] in (0.0, None) for m in document["metrics"])
