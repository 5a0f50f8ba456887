"""`--skip-steps N` on report, gate, diff and annotate (tests/stepped_trace.py:
3 steps; per-step GPU idle 2/3, 2/3 and 0.4; 160 µs of 260 idle, 80 of 140 without step 0)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from stepped_trace import stepped_trace

from traceanalyze.cli import app

runner = CliRunner()


def run(*args):
    return runner.invoke(app, [str(arg) for arg in args])


def one_line_error(result, fragment: str) -> None:
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and fragment in lines[0] and "Traceback" not in result.output, result.output


def test_report_json_and_terminal(tmp_path):
    trace = stepped_trace(tmp_path)
    doc = json.loads(run("report", trace, "-f", "json", "--skip-steps", "1").stdout)
    assert doc["options"]["skip_steps"] == 1
    assert doc["summary"]["idle_fraction"] == pytest.approx(80 / 140)
    assert json.loads(run("report", trace, "-f", "json").stdout)["options"]["skip_steps"] == 0
    text = run("report", trace, "--skip-steps", "1", "--width", "160").stdout
    assert "note: --skip-steps 1: ProfilerStep#0 left out; the analysis starts at ProfilerStep#1" in text


def test_bad_skip_steps_are_one_line_errors(tmp_path):
    one_line_error(run("report", stepped_trace(tmp_path, steps=False), "--skip-steps", "2"),
                   "--skip-steps 2: the trace has no ProfilerStep#N spans to skip")
    one_line_error(run("report", stepped_trace(tmp_path), "--skip-steps", "3"), "--skip-steps 3 leaves no step")
    assert run("report", stepped_trace(tmp_path), "--skip-steps", "-1").exit_code == 2


def test_gate_judges_the_kept_steps(tmp_path):
    trace = stepped_trace(tmp_path)
    failing = run("gate", trace, "--max-idle-fraction", "0.6", "--min-steps", "2", "-f", "json")
    assert failing.exit_code == 1 and json.loads(failing.stdout)["checks"][0]["measured"] == pytest.approx(2 / 3)
    passing = run("gate", trace, "--max-idle-fraction", "0.6", "--min-steps", "2", "--skip-steps", "1", "-f", "json")
    verdict = json.loads(passing.stdout)
    assert passing.exit_code == 0 and verdict["checks"][0]["measured"] == pytest.approx((2 / 3 + 0.4) / 2)
    assert verdict["notes"] == ["--skip-steps 1: the first ProfilerStep of each rank left out"]
    config = tmp_path / "gate.toml"
    config.write_text("max_idle_fraction = 0.6\nmin_steps = 2\nskip_steps = 1\n")
    assert run("gate", trace, "--config", config).exit_code == 0
    config.write_text("max_idle_fraction = 0.6\nskip_steps = -1\n")
    one_line_error(run("gate", trace, "--config", config), "skip_steps must be a whole number of steps ≥ 0")


def test_saved_reports_must_match(tmp_path):
    trace = stepped_trace(tmp_path)
    saved = tmp_path / "base.json"
    assert run("report", trace, "-f", "json", "-o", saved, "--skip-steps", "1").exit_code == 0
    one_line_error(run("diff", saved, trace, "--skip-steps", "2"),
                   "base.json: a saved report analysed with --skip-steps 1, not 2")
    same = run("diff", saved, trace, "--skip-steps", "1", "-f", "json")
    assert same.exit_code == 0, same.output
    assert json.loads(same.stdout)["notes"] == ["--skip-steps 1: the first ProfilerStep of each rank left out"]
    mixed = json.loads(run("diff", saved, trace, "-f", "json").stdout)
    assert mixed["notes"] == ["the base was analysed with --skip-steps 1, the new run with --skip-steps 0: "
                              "they cover different parts of the runs"]


def test_annotate_judges_only_the_kept_steps(tmp_path):
    trace, out = stepped_trace(tmp_path), tmp_path / "annotated.json"
    assert run("annotate", trace, "-o", out, "--skip-steps", "1").exit_code == 0
    events = json.loads(out.read_text())["traceEvents"]
    judged = [e for e in events if e.get("cat") == "kernel" and "traceanalyze" in e.get("args", {})]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    assert len(kernels) == 7 and len(judged) == 4  # every original kernel is written; the 4 kept ones judged
