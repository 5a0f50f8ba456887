"""The overhead parts of the JSON and text reports against synthetic ground truth."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from builder import TraceBuilder

import traceanalyze
from traceanalyze.cli import app
from traceanalyze.renderers.jsonout import report_to_dict
from traceanalyze.report.model import ReportOptions
from traceanalyze.pipeline.rank import build_report
from traceanalyze.renderers.terminal import render_terminal

runner = CliRunner()
DATALOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def two_devices() -> TraceBuilder:
    """device 0: [0, 10) and [30, 40) → window 40, busy 20, idle 20;
    device 1: [5, 105) → window 100, busy 100, idle 0."""
    b = TraceBuilder(devices=2)
    b.launch_kernel(launch_us=-5, start_us=0, dur_us=10, device=0)
    b.launch_kernel(launch_us=-4, start_us=5, dur_us=100, device=1)
    b.launch_kernel(launch_us=20, start_us=30, dur_us=10, device=0)
    return b


def doc_of(builder: TraceBuilder, tmp_path, **options):
    return report_to_dict(build_report(traceanalyze.load_trace(builder.write(tmp_path / "t.json")),
                                       ReportOptions(**options)))


def test_json_idle_per_device_is_not_overwritten_by_the_peaks(tmp_path):
    rank = doc_of(two_devices(), tmp_path)["ranks"][0]
    devices = [{k: d[k] for k in ("device", "window_us", "gpu_busy_us", "gpu_idle_us", "idle_fraction", "gpu_ops")}
               for d in rank["devices"]]
    assert devices == [
        {"device": 0, "window_us": 40.0, "gpu_busy_us": 20.0, "gpu_idle_us": 20.0, "idle_fraction": 0.5, "gpu_ops": 2},
        {"device": 1, "window_us": 100.0, "gpu_busy_us": 100.0, "gpu_idle_us": 0.0, "idle_fraction": 0.0, "gpu_ops": 1},
    ]
    assert [p["device"] for p in rank["peaks"]] == [0, 1] and "memory_bandwidth_bytes_per_s" in rank["peaks"][0]
    assert rank["device"] == rank["peaks"][0]


def test_json_summary_averages_device_windows(tmp_path):
    summary = doc_of(two_devices(), tmp_path)["summary"]
    assert summary["device_windows"] == 2
    assert (summary["window_us"], summary["gpu_busy_us"], summary["gpu_idle_us"]) == (70.0, 60.0, 10.0)
    assert summary["idle_fraction"] == pytest.approx(20 / 140)
    assert sum(summary["idle_by_cause_us"].values()) == pytest.approx(summary["gpu_idle_us"])


def test_every_format_shows_the_same_window_figures(tmp_path):
    """One definition of the summary window: Markdown's headline gives the mean device window the
    JSON gives (70 µs, idle 10 µs, 14.3%), not the sum (140 µs), and says it is a mean."""
    from traceanalyze.renderers.markdown import render_markdown

    report = build_report(traceanalyze.load_trace(two_devices().write(tmp_path / "t.json")))
    assert report.summary.window.window_ns == 70_000 and report.summary.window.idle_ns == 10_000
    assert report.summary.window.idle_fraction == pytest.approx(20 / 140)
    assert report.ranks[0].summary == report.summary  # one rank: its figures are the report's
    text = render_markdown(report)
    assert "- GPU idle: **14.3%** — 10 µs of a 70 µs window (mean of 2 device windows)" in text
    assert "GPU busy 60 µs (mean of 2 device windows)" in text


def test_folder_summary_averages_ranks(tmp_path):
    for rank, dur in ((0, 10), (1, 30)):
        b = TraceBuilder(rank=rank, world_size=2)
        b.launch_kernel(launch_us=0, start_us=5, dur_us=dur)
        b.launch_kernel(launch_us=100, start_us=105, dur_us=dur)
        b.write(tmp_path / f"rank{rank}.json")
    doc = report_to_dict(build_report(traceanalyze.load_trace(tmp_path)))
    windows = [r["summary"]["window_us"] for r in doc["ranks"]]
    assert windows == [110.0, 130.0]  # each rank: [5, 105 + dur)
    summary = doc["summary"]
    assert (summary["window_us"], summary["gpu_busy_us"], summary["gpu_idle_us"]) == (120.0, 40.0, 80.0)
    assert summary["idle_fraction"] == pytest.approx(160 / 240)


def latency_trace() -> TraceBuilder:
    b = TraceBuilder()
    for i, wait in enumerate((2, 4, 6)):
        b.launch_kernel(launch_us=100 * i, start_us=100 * i + wait, dur_us=1, name="gemm")
    b.launch_kernel(launch_us=400, start_us=410, dur_us=1, name="relu")
    corr = b.launch(500, 5)
    b.nccl_kernel(corr, 5500, 10)
    return b


def test_json_launch_latency_by_kind_and_kernel(tmp_path):
    doc = doc_of(latency_trace(), tmp_path)
    overall = doc["summary"]["launch_to_start_us"]
    assert (overall["count"], overall["max"]) == (4, 10.0)  # the collective's 5 ms wait is not in it
    by_kind = doc["ranks"][0]["launch_latency_by_kind"]
    assert list(by_kind) == ["kernels", "communication"]
    assert by_kind["communication"]["launch_to_start_us"]["max"] == 5000.0
    assert by_kind["kernels"]["launch_to_start_us"] == overall
    assert doc["ranks"][0]["launch_latency_by_kernel"] == [
        {"name": "gemm", "count": 3, "mean": 4.0, "p50": 4.0, "p90": 5.6, "p99": 5.96, "max": 6.0},
        {"name": "relu", "count": 1, "mean": 10.0, "p50": 10.0, "p90": 10.0, "p99": 10.0, "max": 10.0},
    ]


def test_terminal_latency_tables(tmp_path):
    text = render_terminal(build_report(traceanalyze.load_trace(latency_trace().write(tmp_path / "t.json"))),
                           details=True)
    lines = text.splitlines()
    assert any(line.split()[:4] == ["kernels", "launch", "→", "start"] and line.split()[4] == "4" for line in lines)
    assert any(line.split()[:4] == ["communication", "launch", "→", "start"] for line in lines)
    assert "launch → start per kernel name (most launched first, 2 of 2 names)" in text
    assert any(line.split()[:2] == ["gemm", "3"] for line in lines)


def host_gap_with_annotation() -> TraceBuilder:
    b = TraceBuilder()
    b.step(6, -10, 1040)
    b.launch_kernel(launch_us=-6, launch_dur_us=3, start_us=0, dur_us=10, name="relu_kernel")
    b.annotation(DATALOADER, 7, 997)
    b.launch_kernel(launch_us=1005, launch_dur_us=4, start_us=1010, dur_us=10, name="mul_kernel")
    return b


def test_terminal_wording(tmp_path):
    path = host_gap_with_annotation().write(tmp_path / "t.json")
    text = render_terminal(build_report(traceanalyze.load_trace(path)))
    assert "window (device activity span)" in text and "2 GPU ops)" in text
    assert "100.0% of idle" in text and " 1 gap " in text and "1 gaps" not in text
    header = next(line for line in text.splitlines() if "CPU op at gap start" in line)
    assert "% of window" in header and "annotation" in header
    assert DATALOADER[:10] in text and "__next__" in text  # cut in the middle, never to "enumerate"


def test_terminal_steps_window_labels_and_trailing_gap(tmp_path):
    path = host_gap_with_annotation().write(tmp_path / "t.json")
    text = render_terminal(build_report(traceanalyze.load_trace(path), ReportOptions(window="steps")))
    assert "window (ProfilerStep span)" in text
    assert "none (window ends)" in text  # the gap [1020, 1030) after the last kernel
    assert "no launch recorded for the next work" not in text


def test_info_names_a_single_step(tmp_path):
    path = host_gap_with_annotation().write(tmp_path / "t.json")
    result = runner.invoke(app, ["info", str(path)])
    assert result.exit_code == 0, result.output
    assert "steps: 1 (ProfilerStep#6)" in result.output and "#6–#6" not in result.output
    assert "2 GPU ops on 1 stream:" in result.output
