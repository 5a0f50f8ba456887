"""CI-native output: JUnit XML, the GitHub step summary, `::error` annotations, the JSON verdict."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from typer.testing import CliRunner

from gate_traces import stepped, write

from traceanalyze.cli import app

runner = CliRunner()
NO_CI = {"GITHUB_ACTIONS": None, "GITHUB_STEP_SUMMARY": None}


@pytest.fixture(autouse=True)
def isolated_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def trace(tmp_path):
    return write(stepped([200, 200, 200]), tmp_path)  # idle 0.20, compute 0.30, step 1 ms


def gate(*args, env=None):
    return runner.invoke(app, ["gate", *map(str, args)], env={**NO_CI, **(env or {})})


def test_junit_one_testcase_per_budget(tmp_path, trace):
    junit = tmp_path / "out" / "gate.xml"
    junit.parent.mkdir()
    result = gate(trace, "--max-idle-fraction", "0.15", "--min-compute", "0.25", "--max-step-time-ms", "2", "--junit",
                  junit)
    assert result.exit_code == 1
    root = ET.parse(junit).getroot()
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert len(suites) == 1
    cases = suites[0].findall("testcase")
    assert [c.get("name") for c in cases] == ["max_idle_fraction", "min_compute", "max_step_time_ms"]
    failed = [c for c in cases if c.find("failure") is not None]
    assert [c.get("name") for c in failed] == ["max_idle_fraction"]
    assert "20.00%" in failed[0].find("failure").get("message")
    assert "15.00%" in failed[0].find("failure").get("message")
    for element in (root, suites[0]):
        assert (element.get("tests"), element.get("failures"), element.get("errors"),
                element.get("skipped")) == ("3", "1", "0", "0")


def test_junit_with_a_baseline_and_an_unreliable_trace(tmp_path, trace):
    base = write(stepped([200, 200]), tmp_path, "base.json")  # two steps only: unreliable
    junit = tmp_path / "gate.xml"
    result = gate(trace, "--max-idle-fraction", "0.25", "--baseline", base, "--max-regression", "5%", "--junit", junit)
    assert result.exit_code == 2
    suite = ET.parse(junit).getroot().find("testsuite")
    names = [c.get("name") for c in suite.findall("testcase")]
    assert names[0] == "max_idle_fraction" and names[-1] == "reliability"
    assert len([n for n in names
                if n.startswith("regression.")]) == 9  # step time, idle, seven regimes (latency since issue 12)
    reliability = suite.findall("testcase")[-1]
    assert "baseline: only 2 steps" in reliability.find("error").get("message")
    assert suite.get("errors") == "1" and suite.get("failures") == "0"


def test_step_summary_appended_when_the_variable_is_set(tmp_path, trace):
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    result = gate(trace, "--max-idle-fraction", "0.15", env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert result.exit_code == 1
    text = summary.read_text()
    assert text.startswith("earlier step\n### ❌ traceanalyze gate: FAIL")
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in text.splitlines()
            if line.startswith("|")]
    assert ["max_idle_fraction", "≤ 15.00%", "20.00%", "per step", "fails by 5.00 points",
            "FAIL"] in rows  # padded columns
    # terminal output unchanged by it
    assert result.stdout.startswith("traceanalyze gate: FAIL")


def test_no_step_summary_without_the_variable(tmp_path, trace):
    gate(trace, "--max-idle-fraction", "0.15")
    assert not list(tmp_path.glob("*.md"))


def test_error_annotations_on_github_actions(trace):
    result = gate(trace, "--max-idle-fraction", "0.15", "--min-compute", "0.2", env={"GITHUB_ACTIONS": "true"})
    assert result.exit_code == 1
    errors = [line for line in result.stdout.splitlines() if line.startswith("::error")]
    assert len(errors) == 1
    assert errors[0].startswith("::error title=traceanalyze gate%3A max_idle_fraction::GPU idle fraction 20.00%")
    assert "%25" not in errors[0].split("::")[1]  # the title has no percent sign to escape
    assert "budget by 5.00 points" in errors[0]


def test_annotation_escaping(tmp_path):
    trace = write(stepped([200, 200, 200]), tmp_path)
    result = gate(trace, "--max-idle-fraction", "0.15", env={"GITHUB_ACTIONS": "true"})
    message = [line for line in result.stdout.splitlines() if line.startswith("::error")][0].split("::", 2)[2]
    assert "20.00%25" in message  # '%' is escaped as %25 in workflow commands


def test_no_annotations_outside_github_actions(trace):
    result = gate(trace, "--max-idle-fraction", "0.15", env={"GITHUB_ACTIONS": "false"})
    assert "::error" not in result.output


def test_unreliable_trace_annotated(tmp_path):
    trace = write(stepped([100]), tmp_path)
    result = gate(trace, "--max-idle-fraction", "0.15", env={"GITHUB_ACTIONS": "true"})
    assert result.exit_code == 2
    assert any(line.startswith("::error title=traceanalyze gate%3A cannot judge::only 1 step")
               for line in result.stdout.splitlines())


def test_json_verdict(trace):
    result = gate(trace, "--max-idle-fraction", "0.15", "--max-step-time-ms", "1", "--format", "json",
                  env={"GITHUB_ACTIONS": "true"})
    assert result.exit_code == 1
    verdict = json.loads(result.stdout)  # annotations went to stderr: stdout stays JSON
    assert "::error" in result.stderr
    assert verdict["kind"] == "gate_verdict" and verdict["schema_version"] == "1.0"
    assert (verdict["outcome"], verdict["exit_code"], verdict["statistic"], verdict["basis"], verdict["steps"]) == \
        ("fail", 1, "median", "steps", 3)
    assert verdict["problems"] == [] and verdict["baseline"] is None
    idle, step = verdict["checks"]
    assert idle == {"name": "max_idle_fraction", "label": "GPU idle fraction", "metric": "idle_fraction", "kind": "max",
                    "unit": "fraction", "threshold": 0.15, "measured": 0.2, "margin": pytest.approx(-0.05),
                    "basis": "steps", "status": "fail", "message": idle["message"],
                    "rank": None, "ranks_judged": None,
                    "other_failures": []}  # one rank: judged as it is, no rank named
    assert (step["measured"], step["threshold"], step["margin"], step["status"]) == (1.0, 1.0, 0.0, "pass")
