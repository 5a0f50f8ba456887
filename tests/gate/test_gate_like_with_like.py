"""`gate --baseline` compares like with like (gate/comparable.py): a baseline from another device,
analysed with another `--skip-steps`, or (compared over the whole window) with another `--window`
cannot be compared; its rows are shown, not judged (never a failure), and the reason is said once.
Each case below is a regression the same gate fails on like for like."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from gate_traces import stepped, write

from traceanalyze.cli import app

runner = CliRunner()
NO_CI = {"GITHUB_ACTIONS": None, "GITHUB_STEP_SUMMARY": None}
A100, H100 = "NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3"


@pytest.fixture(autouse=True)
def isolated_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def gate_json(*args) -> dict:
    result = runner.invoke(app, ["gate", *map(str, args), "--format", "json"], env=NO_CI)
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def saved(trace, tmp_path, name: str, *options: str):
    result = runner.invoke(app, ["report", str(trace), "--format", "json", "--no-cache", *options], env=NO_CI)
    assert result.exit_code == 0, result.output
    path = tmp_path / name
    path.write_text(result.stdout)
    return path


def _statuses(verdict: dict) -> set[str]:
    return {row["status"] for row in verdict["baseline"]["regressions"]}


def test_another_device_is_shown_not_judged_and_said_once(tmp_path):
    base = write(stepped([100, 100, 100], device_name=A100), tmp_path, "base.json")
    slower = write(stepped([600, 600, 600], device_name=H100), tmp_path, "new.json")
    same = write(stepped([600, 600, 600], device_name=A100), tmp_path, "same.json")
    assert gate_json(same, "--baseline", base, "--max-regression", "5%")["outcome"] == "fail"
    verdict = gate_json(slower, "--baseline", base, "--max-regression", "5%")
    assert verdict["outcome"] == "pass" and _statuses(verdict) == {"info"}
    assert len(verdict["warnings"]) == 1 and "cannot compare: the baseline rows are shown, not judged" in \
        verdict["warnings"][0]
    assert not any("cannot compare" in note for note in verdict["notes"]), verdict["notes"]


def test_another_skip_steps_is_shown_not_judged(tmp_path):
    trace = write(stepped([100, 100, 100, 100]), tmp_path, "base.json")
    base = saved(trace, tmp_path, "base-report.json", "--skip-steps", "1")
    slower = write(stepped([600, 600, 600, 600]), tmp_path, "new.json")
    like = gate_json(slower, "--skip-steps", "1", "--baseline", base, "--max-regression", "5%")
    assert like["outcome"] == "fail"
    verdict = gate_json(slower, "--baseline", base, "--max-regression", "5%")
    assert verdict["outcome"] == "pass" and _statuses(verdict) == {"info"}
    said = [note for note in verdict["notes"] if "--skip-steps" in note]
    assert len(said) == 1 and said[0].startswith("cannot compare: the baseline was analysed with --skip-steps 1, "
                                                 "the trace judged with --skip-steps 0")


def test_another_window_cannot_compare_the_whole_window(tmp_path):
    # no steps on the new side: the comparison falls back to the whole window (--allow-unreliable)
    base = saved(write(stepped([100, 100, 100]), tmp_path, "base.json"), tmp_path, "base-report.json",
                 "--window", "steps")
    from builder import TraceBuilder

    b = TraceBuilder(device_name=A100)
    for i in range(3):
        corr = b.launch(i * 1000 - 5, 2)
        b.kernel(corr, i * 1000, 100, name="k")
    trace = write(b, tmp_path, "new.json")
    new, new_steps = saved(trace, tmp_path, "new-report.json"), saved(trace, tmp_path, "new-steps.json", "--window",
                                                                     "steps")
    like = gate_json(new_steps, "--baseline", base, "--max-regression", "5%", "--allow-unreliable")
    verdict = gate_json(new, "--baseline", base, "--max-regression", "5%", "--allow-unreliable")
    idle = next(row for row in verdict["baseline"]["regressions"] if row["name"] == "idle_fraction")
    assert idle["status"] == "info", verdict
    assert next(row for row in like["baseline"]["regressions"] if row["name"] == "idle_fraction")["status"] != "info"
    said = [note for note in verdict["notes"] if "--window" in note]
    assert len(said) == 1 and said[0].startswith("cannot compare the whole-window figures: the baseline report "
                                                 "used --window steps, this one --window activity")


def test_another_window_with_steps_on_both_sides_is_still_judged(tmp_path):
    base = saved(write(stepped([100, 100, 100]), tmp_path, "base.json"), tmp_path, "base-report.json",
                 "--window", "steps")
    slower = write(stepped([600, 600, 600]), tmp_path, "new.json")
    verdict = gate_json(saved(slower, tmp_path, "new-report.json"), "--baseline", base, "--max-regression", "5%")
    assert verdict["outcome"] == "fail"
    assert any("per-step rows compared do not depend on it" in note for note in verdict["notes"])
