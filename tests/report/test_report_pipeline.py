"""The whole pipeline (load → analyses → report) on every real trace and on synthetic ones: the JSON
contract holds and its numbers are consistent with the tables."""

from __future__ import annotations

import json

import polars as pl
import pytest
from typer.testing import CliRunner

from builder import TraceBuilder
from shared_traces import SHARED_TRACES_DIR, real_trace_params

import traceanalyze
from traceanalyze.analysis import idle
from traceanalyze.cli import app
from traceanalyze.renderers.jsonout import report_to_dict
from traceanalyze.pipeline.rank import build_report

runner = CliRunner()

REQUIRED_SUMMARY = {"window_us", "gpu_busy_us", "gpu_idle_us", "idle_fraction", "launch_to_start_us"}


def check_contract(doc: dict) -> None:
    assert doc["schema_version"] == "1.2"  # 1.1: the findings array (issue 14); 1.2: bound_us
    assert REQUIRED_SUMMARY <= doc["summary"].keys()
    assert {"count", "p50", "p90", "p99"} <= doc["summary"]["launch_to_start_us"].keys()
    for gap in doc["idle_gaps"]:
        assert {"start_us", "duration_us", "cause", "cpu_op"} <= gap.keys()
        assert gap["cause"] in ("host", "sync", "collective", "stream_wait", "launch", "other")
    assert len(doc["ranks"]) >= 1


@pytest.mark.parametrize("path", real_trace_params())
def test_json_report_on_real_trace(path):
    trace = traceanalyze.load_trace(path)
    doc = report_to_dict(build_report(trace))
    check_contract(doc)
    summary = doc["summary"]
    if trace.gpu.is_empty():
        assert summary["window_us"] is None
        assert any("no GPU events" in note for note in doc["notes"])
        return
    assert 0.0 <= summary["idle_fraction"] <= 1.0
    assert summary["gpu_busy_us"] + summary["gpu_idle_us"] == pytest.approx(summary["window_us"], abs=1e-3)
    # every gap of the device adds up to its idle time
    gaps = idle.idle_gaps(trace)
    assert gaps["duration_ns"].sum() == idle.idle_summary(trace)["gpu_idle_ns"].sum()
    by_cause = summary["idle_by_cause_us"]
    assert sum(by_cause.values()) == pytest.approx(summary["gpu_idle_us"], abs=1e-3 * max(1, gaps.height))
    durations = [g["duration_us"] for g in doc["idle_gaps"]]
    assert durations == sorted(durations, reverse=True)


def test_report_on_folder_of_ranks():
    folder = SHARED_TRACES_DIR / "param_v100_dlrm_4ranks"
    if not folder.is_dir():
        pytest.skip(f"real traces not found: {folder}")
    result = runner.invoke(app, ["report", str(folder), "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    check_contract(doc)
    assert [r["rank"] for r in doc["ranks"]] == [0, 1, 2, 3]
    # concurrent ranks: the folder summary is per device window, averaged (docs/report-json.md)
    counts = [r["summary"]["device_windows"] for r in doc["ranks"]]
    assert doc["summary"]["device_windows"] == sum(counts)
    for key in ("window_us", "gpu_busy_us", "gpu_idle_us"):
        weighted = sum(r["summary"][key] * n for r, n in zip(doc["ranks"], counts)) / sum(counts)
        assert doc["summary"][key] == pytest.approx(weighted, abs=1e-3)
    assert doc["summary"]["window_us"] <= max(r["summary"]["window_us"] for r in doc["ranks"])
    terminal = runner.invoke(app, ["report", str(folder)])
    assert terminal.exit_code == 0 and "RANKS" in terminal.output


def test_json_numbers_on_a_synthetic_trace(tmp_path):
    b = TraceBuilder()
    b.launch_kernel(launch_us=-5, start_us=0, dur_us=10)
    b.cpu_op("aten::item", 8, 995)
    b.launch_kernel(launch_us=1005, start_us=1010, dur_us=10)
    path = b.write(tmp_path / "t.json.gz")
    out = tmp_path / "report.json"
    result = runner.invoke(app, ["report", str(path), "--format", "json", "-o", str(out)])
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    summary = doc["summary"]
    assert (summary["window_us"], summary["gpu_busy_us"], summary["gpu_idle_us"]) == (1020.0, 20.0, 1000.0)
    assert summary["idle_fraction"] == pytest.approx(1000 / 1020)
    assert summary["launch_to_start_us"]["count"] == 2
    assert summary["launch_to_start_us"]["p50"] == pytest.approx(5.0)
    assert doc["idle_gaps"][0] | {} == doc["idle_gaps"][0]
    gap = doc["idle_gaps"][0]
    assert (gap["start_us"], gap["duration_us"], gap["cause"], gap["cpu_op"]) == (10.0, 1000.0, "host", "aten::item")


def test_trace_without_gpu_events_gets_a_cpu_report(tmp_path):
    b = TraceBuilder()
    b.step(1, 0, 100)
    b.cpu_op("aten::mm", 10, 50)
    path = b.write(tmp_path / "cpu.json")
    result = runner.invoke(app, ["report", str(path)])
    assert result.exit_code == 0, result.output
    assert "no GPU events" in result.output and "aten::mm" in result.output


def test_the_cpu_side_view_sums_each_op_name_and_leaves_annotations_out(tmp_path):
    """Two `aten::mm` (10 + 30 µs) tie with one `aten::add` (40 µs): name order breaks the tie; an
    annotation named like an op, and one named like nothing else, are not CPU ops."""
    b = TraceBuilder()
    b.step(1, 0, 1000)
    b.cpu_op("aten::mm", 10, 10)
    b.cpu_op("aten::add", 30, 40)
    b.cpu_op("aten::mm", 100, 30)
    b.cpu_op("aten::relu", 200, 5)
    b.annotation("aten::mm", 300, 100)
    b.annotation("## forward ##", 500, 200)
    top = build_report(traceanalyze.load_trace(b.write(tmp_path / "cpu.json"))).ranks[0].cpu_ops_top
    assert top.select(pl.col("name").cast(pl.String), "count", "total_ns").rows() == [
        ("aten::add", 1, 40_000), ("aten::mm", 2, 40_000), ("aten::relu", 1, 5_000)]


def test_steps_window_without_steps_falls_back_with_a_note(tmp_path):
    b = TraceBuilder()
    b.launch_kernel(launch_us=0, start_us=5, dur_us=5)
    path = b.write(tmp_path / "t.json")
    result = runner.invoke(app, ["report", str(path), "--window", "steps", "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert any("ProfilerStep" in note for note in doc["notes"])


def test_bad_window_is_a_usage_error(tmp_path):
    b = TraceBuilder()
    b.launch_kernel(launch_us=0, start_us=5, dur_us=5)
    path = b.write(tmp_path / "t.json")
    result = runner.invoke(app, ["report", str(path), "--window", "sometimes"])
    assert result.exit_code == 2
