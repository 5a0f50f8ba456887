"""Baselines: regressions beyond --max-regression fail, smaller changes pass, and a saved JSON
report gives exactly the numbers of the trace it was made from."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from gate_traces import stepped, write

from traceanalyze.api import analyze
from traceanalyze.cli import app
from traceanalyze.gate import measure
from traceanalyze.gate.inputs import is_saved_report, load_report, read_saved_report
from traceanalyze.renderers.jsonout import render_json, report_to_dict, report_v1
from traceanalyze.report.schema import report_from_builtins

runner = CliRunner()
NO_CI = {"GITHUB_ACTIONS": None, "GITHUB_STEP_SUMMARY": None}


@pytest.fixture(autouse=True)
def isolated_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def gate(*args):
    return runner.invoke(app, ["gate", *map(str, args)], env=NO_CI)


def saved_report(trace, path):
    result = runner.invoke(app, ["report", str(trace), "--format", "json", "-o", str(path)])
    assert result.exit_code == 0, result.output
    return path


@pytest.fixture
def base(tmp_path):
    """idle 0.10, compute 0.30, other 0.60 of a 1 ms step."""
    return write(stepped([100, 100, 100, 100]), tmp_path, "base.json")


def regressions(result):
    verdict = json.loads(result.stdout)
    return {r["name"]: r for r in verdict["baseline"]["regressions"]}


@pytest.mark.parametrize("as_report", [False, True], ids=["trace", "saved-report"])
def test_slower_step_is_a_regression(tmp_path, base, as_report):
    # 10 % longer steps, same idle fraction: every GPU regime but compute takes longer
    new = write(stepped([110, 110, 110, 110], period_us=1100), tmp_path, "new.json")
    baseline = saved_report(base, tmp_path / "base-report.json") if as_report else base
    result = gate(new, "--baseline", baseline, "--max-regression", "5%", "--format", "json")
    assert result.exit_code == 1, result.output
    rows = regressions(result)
    assert rows["step_time_ms"]["change"] == pytest.approx(0.10) and rows["step_time_ms"]["status"] == "fail"
    assert rows["idle_fraction"]["change"] == pytest.approx(0.0) and rows["idle_fraction"]["status"] == "pass"
    assert rows["compute_ms"]["change"] == pytest.approx(0.0) and rows["compute_ms"]["status"] == "pass"
    # 0.6 → 0.69 ms
    assert rows["unmodeled_ms"]["change"] == pytest.approx(0.09) and rows["unmodeled_ms"]["status"] == "fail"
    assert rows["overhead_ms"]["change"] == pytest.approx(0.01) and rows["overhead_ms"]["status"] == "pass"
    assert rows["compute_ms"]["base_share"] == pytest.approx(0.3)
    assert rows["compute_ms"]["new_share"] == pytest.approx(0.3 / 1.1)
    verdict = json.loads(result.stdout)
    assert verdict["baseline"]["source"] == str(baseline) and verdict["baseline"]["steps"] == 4


def test_more_idle_is_a_regression(tmp_path, base):
    new = write(stepped([200, 200, 200, 200]), tmp_path, "new.json")
    result = gate(new, "--baseline", base, "--max-regression", "0.05")
    assert result.exit_code == 1
    assert "GPU idle fraction 10.00% → 20.00% (+10.00 points, beyond 5.00 points)" in result.output
    assert "step time" in result.output  # the table of what moved


def test_small_changes_pass(tmp_path, base):
    new = write(stepped([120, 120, 120, 120], period_us=1020), tmp_path, "new.json")  # +2 % step, +1.8 points idle
    result = gate(new, "--baseline", base, "--max-regression", "5%")
    assert result.exit_code == 0, result.output
    assert "PASS" in result.output


def test_improvements_pass(tmp_path, base):
    new = write(stepped([10, 10, 10, 10], period_us=910), tmp_path, "new.json")
    assert gate(new, "--baseline", base, "--max-regression", "0%").exit_code == 0


def test_budget_and_baseline_together(tmp_path, base):
    new = write(stepped([100, 100, 100, 100]), tmp_path, "new.json")
    assert gate(new, "--baseline", base, "--max-regression", "5%", "--max-idle-fraction", "0.05").exit_code == 1
    assert gate(new, "--baseline", base, "--max-regression", "5%", "--max-idle-fraction", "0.1").exit_code == 0


def test_baseline_from_pyproject_is_relative_to_it(tmp_path, base, monkeypatch):
    (tmp_path / "ci").mkdir()
    saved_report(base, tmp_path / "ci" / "base.json")
    (tmp_path / "pyproject.toml").write_text('[tool.traceanalyze.gate]\nbaseline = "ci/base.json"\nmax-regression = '
                                             '"5%"\n')
    new = write(stepped([200, 200, 200, 200]), tmp_path, "new.json")
    sub = tmp_path / "src"
    sub.mkdir()
    monkeypatch.chdir(sub)
    result = gate(new)
    assert result.exit_code == 1, result.output
    assert "ci/base.json" in result.output


def test_saved_report_gives_identical_numbers(tmp_path, base):
    saved = saved_report(base, tmp_path / "saved.json")
    assert is_saved_report(saved) and not is_saved_report(base)
    from_trace = measure(report_v1(analyze(base)))
    from_saved = measure(read_saved_report(saved))
    assert from_trace == from_saved


def test_a_saved_report_can_be_gated_too(tmp_path, base):
    saved = saved_report(base, tmp_path / "saved.json")
    direct = json.loads(gate(base, "--max-idle-fraction", "0.1", "--format", "json").stdout)
    via_report = json.loads(gate(saved, "--max-idle-fraction", "0.1", "--format", "json").stdout)
    assert direct["checks"] == via_report["checks"]


def one_line_error(result, fragment):
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and fragment in lines[0], result.output


def test_unknown_schema_version_is_refused(tmp_path, base):
    saved = saved_report(base, tmp_path / "saved.json")
    document = json.loads(saved.read_text())
    document["schema_version"] = "9.0"
    saved.write_text(json.dumps(document))
    one_line_error(gate(base, "--baseline", saved, "--max-regression", "5%"), "schema_version '9.0'")


@pytest.mark.parametrize("text, fragment", [
    ('{"schema_version": "1.0"}', "missing required field `summary`"),
    ('{"schema_version": "1.0", "summary": {}, "ranks": [{"steps": "x", "health": []}]}',
     "Expected `array`, got `str` - at `$.ranks[0].steps`"),
    ('{"schema_version": 1, "command": ["traceanalyze"]}', "schema_version 1"),  # a capture run.json
    ('{"kind": "gate_verdict", "schema_version": "1.0"}', "not a report"),
    ('{"schema_version": "1.0", "summary": ', "invalid JSON"),
])
def test_broken_saved_reports(tmp_path, base, text, fragment):
    saved = tmp_path / "saved.json"
    saved.write_text(text)
    one_line_error(gate(base, "--baseline", saved, "--max-regression", "5%"), fragment)


def _set(document: dict, path: tuple, value) -> None:
    for key in path[:-1]:
        document = document[key]
    document[path[-1]] = value


@pytest.mark.parametrize("path, value, message", [
    (("ranks", 0, "devices"), {"name": "A100"}, "Expected `array`, got `object` - at `$.ranks[0].devices`"),
    (("ranks", 0, "devices"), "A100", "Expected `array`, got `str` - at `$.ranks[0].devices`"),
    (("ranks", 0, "devices", 0, "name"), 7, "Expected `str | null`, got `int` - at `$.ranks[0].devices[0].name`"),
    (("summary", "launch_to_start_us"), [1, 2], "Expected `object`, got `array` - at `$.summary.launch_to_start_us`"),
    (("ranks", 0, "launch_latency_by_kind"), [],
     "Expected `object`, got `array` - at `$.ranks[0].launch_latency_by_kind`"),
    (("notes",), 3, "Expected `array`, got `int` - at `$.notes`"),
    (("options",), "activity", "Expected `object`, got `str` - at `$.options`"),
    (("ranks", 0, "steps", 0, "attribution"), "compute",
     "Expected `object | null`, got `str` - at `$.ranks[0].steps[0].attribution`"),
    (("ranks", 0, "health", 0), {"count": 1}, "Object missing required field `finding` - at `$.ranks[0].health[0]`"),
    (("summary", "idle_fraction"), "10%", "Expected `float | null`, got `str` - at `$.summary.idle_fraction`"),
])
def test_hand_edited_baseline_names_the_wrong_field(tmp_path, base, path, value, message):
    """A baseline is user input: a field of the wrong type is one line naming it, exit 2 (issue 13)."""
    document = report_to_dict(analyze(base))
    if path[:3] == ("ranks", 0, "health"):
        document["ranks"][0]["health"] = [{"finding": "x", "count": 1}]
    _set(document, path, value)
    saved = tmp_path / "edited.json"
    saved.write_text(json.dumps(document))
    for command in (gate(base, "--baseline", saved, "--max-regression", "5%"),
                    gate(saved, "--max-idle-fraction", "0.5"),
                    runner.invoke(app, ["diff", str(saved), str(base)])):
        one_line_error(command, f"{saved}: not a traceanalyze JSON report: {message}")


def test_report_detected_past_the_first_mebibyte(tmp_path, base):
    """A saved report re-written with sorted keys and a big kernel list still reads as a report."""
    document = report_to_dict(analyze(base))
    document["notes"] = ["x" * 100] * 20_000  # 2 MB before anything else when keys are sorted
    path = tmp_path / "sorted.json"
    path.write_text(json.dumps(document, sort_keys=True))
    assert is_saved_report(path)
    saved = load_report(path, build=lambda p: pytest.fail("built a report from a saved one"))
    assert saved.schema_version == "1.2"  # 1.1: findings (issue 14); 1.2: bound_us


def test_render_json_round_trip(base):
    report = analyze(base)
    assert measure(report_from_builtins(json.loads(render_json(report)))) == measure(report_v1(report))
