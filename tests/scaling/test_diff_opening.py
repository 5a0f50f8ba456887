"""`diff` of one program at two sizes opens with the scaling verdict; of two runs at one size, or of
two programs, it does not."""

from __future__ import annotations

from sweep_traces import cpu_run
from typer.testing import CliRunner

from traceanalyze.cli import app


def diff(*args):
    return CliRunner().invoke(app, ["diff", *map(str, args), "--no-cache", "--width", "100"])


def test_one_program_at_two_sizes_opens_with_the_verdict(tmp_path):
    result = diff(cpu_run(tmp_path, 8), cpu_run(tmp_path, 32))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "SCALING (one program at different sizes)"
    assert lines[1].startswith("  4.0× the work took 1.2× the time: 93% of the small run is fixed overhead")
    assert "fixed cost 0.1 ms per step" in result.output


def test_markdown_opens_with_it_too(tmp_path):
    result = diff(cpu_run(tmp_path, 8), cpu_run(tmp_path, 32), "-f", "markdown")
    assert result.exit_code == 0 and result.output.startswith("**Scaling:** 4.0× the work")


def test_json_and_html_carry_it_too(tmp_path):
    import json

    runs = (cpu_run(tmp_path, 8), cpu_run(tmp_path, 32))
    document = json.loads(diff(*runs, "-f", "json").output)
    assert document["schema_version"] == "1.1" and document["scaling"].startswith("4.0× the work took 1.2× the time")
    page = diff(*runs, "-f", "html").output
    assert "<strong>Scaling:</strong> 4.0× the work took" in page
    assert json.loads(diff(runs[0], cpu_run(tmp_path, 8, name="again.json"), "-f", "json").output)["scaling"] is None


def test_no_opening_for_the_same_size_or_another_program(tmp_path):
    same = diff(cpu_run(tmp_path, 8), cpu_run(tmp_path, 8, name="again.json"))
    other = diff(cpu_run(tmp_path, 8), cpu_run(tmp_path, 32, extra_op="aten::dropout"))
    for result in (same, other):
        assert result.exit_code == 0, result.output
        assert "SCALING" not in result.output and "the work took" not in result.output


def test_the_usual_diff_runs_no_analysis_for_the_opening(tmp_path, monkeypatch):
    """Two runs of one size, or two programs, are told from the loaded tables: no report is built."""
    from traceanalyze.scaling import runs

    def refuse(*args, **kwargs):
        raise AssertionError("measured")

    monkeypatch.setattr(runs, "measure_trace", refuse)
    assert runs.same_program_scaling([cpu_run(tmp_path, 8), cpu_run(tmp_path, 8, name="again.json")]) is None
    assert runs.same_program_scaling([cpu_run(tmp_path, 8), cpu_run(tmp_path, 16, extra_op="aten::dropout")]) is None
