"""`traceanalyze gate` end to end on synthetic traces with exactly known per-step numbers:
exit 0 / 1 on both sides of a threshold, equal-to-threshold, config files, bad input (exit 2)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from builder import TraceBuilder
from gate_traces import stepped, write

from traceanalyze.api import analyze
from traceanalyze.cli import app
from traceanalyze.renderers.jsonout import report_to_dict

runner = CliRunner()


def gate(*args, env=None):
    return runner.invoke(app, ["gate", *map(str, args)], env=env
                         or {"GITHUB_ACTIONS": None, "GITHUB_STEP_SUMMARY": None})


@pytest.fixture(autouse=True)
def isolated_cwd(tmp_path, monkeypatch):
    """No pyproject.toml of the repository (or above it) leaks into a test."""
    monkeypatch.chdir(tmp_path)


def one_line_error(result, fragment):
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("traceanalyze: error:"), result.output
    assert fragment in lines[0], lines[0]
    assert "Traceback" not in result.output


@pytest.mark.parametrize("idle_us, expected", [(100, 0), (149, 0), (150, 0), (151, 1), (200, 1)])
def test_idle_fraction_on_both_sides_of_the_threshold(tmp_path, idle_us, expected):
    trace = write(stepped([idle_us] * 4), tmp_path)  # idle fraction idle_us / 1000 in every step
    result = gate(trace, "--max-idle-fraction", "0.15")
    assert result.exit_code == expected, result.output
    assert f"{idle_us / 10:.2f}%" in result.output
    assert "median of 4 steps" in result.output


def test_equal_to_threshold_passes_with_zero_margin(tmp_path):
    trace = write(stepped([150, 150, 150]), tmp_path)
    result = gate(trace, "--max-idle-fraction", "15%", "--format", "json")
    assert result.exit_code == 0, result.output
    import json

    check = json.loads(result.stdout)["checks"][0]
    assert (check["measured"], check["threshold"], check["margin"], check["status"]) == (0.15, 0.15, 0.0, "pass")


def test_every_budget(tmp_path):
    trace = write(stepped([100, 100, 100], cpu_us=1000), tmp_path)  # idle 0.10, compute 0.30, step 1 ms
    ok = gate(trace, "--max-idle-fraction", "0.1", "--max-overhead", "0.1", "--min-compute", "0.3",
              "--max-step-time-ms", "1", "--max-launch-p99-us", "1000")
    assert ok.exit_code == 0, ok.output
    for flag, value in (("--max-overhead", "0.09"), ("--min-compute", "0.31"), ("--max-step-time-ms", "0.999"),
                        ("--max-launch-p99-us", "10")):
        result = gate(trace, flag, value)
        assert result.exit_code == 1, (flag, result.output)
        assert "FAIL" in result.output


def test_statistic_flag(tmp_path):
    trace = write(stepped([100, 100, 100, 100, 300]), tmp_path)
    assert gate(trace, "--max-idle-fraction", "0.15").exit_code == 0
    assert gate(trace, "--max-idle-fraction", "0.15", "--statistic", "max").exit_code == 1
    assert gate(trace, "--max-idle-fraction", "0.15", "--statistic", "p90").exit_code == 1
    assert gate(trace, "--max-idle-fraction", "0.15", "--statistic", "mean").exit_code == 0


def test_too_few_steps(tmp_path):
    trace = write(stepped([100, 100]), tmp_path)
    result = gate(trace, "--max-idle-fraction", "0.15")
    assert result.exit_code == 2 and "only 2 steps" in result.output and "--allow-unreliable" in result.output
    allowed = gate(trace, "--max-idle-fraction", "0.15", "--allow-unreliable")
    assert allowed.exit_code == 0, allowed.output
    assert gate(trace, "--max-idle-fraction", "0.15", "--min-steps", "2").exit_code == 0


def test_no_steps_judges_the_whole_window_when_allowed(tmp_path):
    b = TraceBuilder()
    b.launch_kernel(launch_us=0, start_us=10, dur_us=80)
    b.launch_kernel(launch_us=5, start_us=110, dur_us=10)  # window [10, 120): idle 20 of 110
    trace = write(b, tmp_path)
    refused = gate(trace, "--max-idle-fraction", "0.2")
    assert refused.exit_code == 2 and "no ProfilerStep" in refused.output
    judged = gate(trace, "--max-idle-fraction", "0.2", "--allow-unreliable")
    assert judged.exit_code == 0, judged.output
    assert "whole trace window" in judged.output and "18.18%" in judged.output
    assert gate(trace, "--max-idle-fraction", "0.18", "--allow-unreliable").exit_code == 1
    no_step_time = gate(trace, "--max-step-time-ms", "5", "--allow-unreliable")
    assert no_step_time.exit_code == 2 and "not measured" in no_step_time.output


def test_unreliable_health_findings(tmp_path):
    b = stepped([100, 100, 100])
    b.launch(5000, 5, name="cudaGraphLaunch")  # a CUDA graph replay whose kernels were not recorded
    trace = write(b, tmp_path)
    result = gate(trace, "--max-idle-fraction", "0.5")
    assert result.exit_code == 2 and "launches_without_gpu_work" in result.output
    assert "1 CUDA-graph launch, and a replay whose kernels were not recorded is one of these" in result.output
    assert gate(trace, "--max-idle-fraction", "0.5", "--allow-unreliable").exit_code == 0


def test_graph_replay_with_its_kernels_is_judged(tmp_path):
    b = stepped([100, 100, 100])
    b.graph_launch(5000, 5, [(5010, 10, "g1"), (5030, 10, "g2")])
    trace = write(b, tmp_path)
    health = [h["finding"] for h in report_to_dict(analyze(trace))["ranks"][0]["health"]]
    assert "cuda_graph_launches" in health and "launches_without_gpu_work" not in health  # a real replay
    result = gate(trace, "--max-idle-fraction", "0.5", "--format", "json")
    assert result.exit_code == 0, result.output
    verdict = json.loads(result.stdout)
    assert verdict["outcome"] == "pass" and verdict["problems"] == []


def test_no_gpu_events(tmp_path):
    b = TraceBuilder()
    b.step(1, 0, 100)
    b.cpu_op("aten::add", 10, 20)
    trace = write(b, tmp_path)
    result = gate(trace, "--max-idle-fraction", "0.5")
    assert result.exit_code == 2 and "no_gpu_events" in result.output
    allowed = gate(trace, "--max-idle-fraction", "0.5", "--allow-unreliable")
    assert allowed.exit_code == 2 and "not measured" in allowed.output  # never a pass on nothing


def test_pyproject_table_found_from_a_subfolder(tmp_path, monkeypatch):
    trace = write(stepped([200, 200, 200]), tmp_path)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.traceanalyze.gate]\nmax-idle-fraction = '
                                             '0.15\n')
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    assert gate(trace).exit_code == 1
    assert gate(trace, "--max-idle-fraction", "0.25").exit_code == 0  # the flag wins


def test_config_file(tmp_path):
    trace = write(stepped([200, 200, 200]), tmp_path)
    config = tmp_path / "gate.toml"
    config.write_text('max_idle_fraction = "25%"\nstatistic = "max"\n')
    assert gate(trace, "--config", config).exit_code == 0
    config.write_text('[tool.traceanalyze.gate]\nmax_idle_fraction = 0.1\n')
    assert gate(trace, "--config", config).exit_code == 1


@pytest.mark.parametrize("text, fragment", [
    ('[tool.traceanalyze.gate]\nmax_idle_fraction = 0.1\nmax_ilde = 3\n', "unknown key 'max_ilde'"),
    ('[tool.traceanalyze.gate]\nmax_idle_fraction = 1.5\n', "between 0 and 1"),
    ('[tool.traceanalyze.gate]\nmax_idle_fraction = -0.1\n', "between 0 and 1"),
    ('[tool.traceanalyze.gate]\nmax_step_time_ms = -1\n', "positive"),
    ('[tool.traceanalyze.gate\nmax_idle_fraction = 0.1\n', "not valid TOML"),
    ('[tool.traceanalyze.gate]\nmax_idle_fraction = \n', "not valid TOML"),
    ('[tool.traceanalyze]\ngate = 3\n', "must be a table"),
])
def test_bad_pyproject(tmp_path, text, fragment):
    trace = write(stepped([100, 100, 100]), tmp_path)
    (tmp_path / "pyproject.toml").write_text(text)
    one_line_error(gate(trace), fragment)


@pytest.mark.parametrize("args, fragment", [
    (["--max-idle-fraction", "-0.1"], "--max-idle-fraction"),
    (["--max-idle-fraction", "1.2"], "between 0 and 1"),
    (["--max-overhead", "120%"], "between 0 and 1"),
    (["--min-compute", "lots"], "--min-compute"),
    (["--max-step-time-ms", "0"], "positive"),
    (["--max-launch-p99-us", "-3"], "positive"),
    (["--max-idle-fraction", "0.1", "--statistic", "p99"], "--statistic"),
    (["--max-idle-fraction", "0.1", "--min-steps", "0"], "--min-steps"),
    ([], "nothing to check"),
    (["--baseline", "base.json"], "needs --max-regression"),
    (["--max-idle-fraction", "0.1", "--config", "missing.toml"], "missing.toml"),
])
def test_bad_flags(tmp_path, args, fragment):
    trace = write(stepped([100, 100, 100]), tmp_path)
    one_line_error(gate(trace, *args), fragment)


def test_missing_and_broken_traces(tmp_path):
    one_line_error(gate(tmp_path / "nope.json", "--max-idle-fraction", "0.1"), "nope.json")
    broken = tmp_path / "broken.json"
    broken.write_text('{"traceEvents": [')
    one_line_error(gate(broken, "--max-idle-fraction", "0.1"), "broken.json")


def test_verdict_written_to_a_file(tmp_path):
    trace = write(stepped([100, 100, 100]), tmp_path)
    out = tmp_path / "verdict.md"
    result = gate(trace, "--max-idle-fraction", "0.15", "--format", "markdown", "-o", out)
    assert result.exit_code == 0
    assert out.read_text().startswith("### ✅ traceanalyze gate: PASS")
