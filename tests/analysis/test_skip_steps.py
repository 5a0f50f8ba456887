"""`--skip-steps N` / `analyze(skip_steps=N)` against exact ground truth (docs/metrics.md#skipped-steps),
on the trace of tests/stepped_trace.py, whose docstring derives every expected number."""

from __future__ import annotations

import pytest

from builder import TraceBuilder
from stepped_trace import stepped_trace, us

import traceanalyze
from traceanalyze.analysis.findings.rules_gaps import RECORD_STEADY_STATE
from traceanalyze.analysis.skip_steps import skip_steps, skipped_steps
from traceanalyze.errors import ConfigError
from traceanalyze.renderers.jsonout import report_to_dict


def device(report) -> dict:
    return report.ranks[0].idle.row(0, named=True)


def test_without_the_option_every_step_counts(tmp_path):
    report = traceanalyze.analyze(stepped_trace(tmp_path))
    row = device(report)
    assert (row["window_start_ns"], row["window_ns"], row["gpu_busy_ns"], row["gpu_idle_ns"]) == (
        us(10), 260_000, 100_000, 160_000)
    assert sorted(report.ranks[0].gaps["duration_ns"].to_list()) == [5_000, 20_000, 20_000, 25_000, 40_000, 50_000]
    recoverable = dict(report.ranks[0].recoverable.select("regime", "recoverable_ns").iter_rows())
    assert recoverable["overhead"] == 110_000  # the idle time less the 50 µs autotune gap (warm-up)
    warmup = report.ranks[0].findings.filter(report.ranks[0].findings["id"] == "warmup-excluded").row(0, named=True)
    assert warmup["action"].startswith("leave it out of the whole report: `--skip-steps 1` (through ProfilerStep#0)")
    assert report.options.skip_steps == 0 and report.ranks[0].notes == ()


def test_skip_one_step_leaves_it_out_of_everything(tmp_path):
    report = traceanalyze.analyze(stepped_trace(tmp_path), skip_steps=1)
    rank = report.ranks[0]
    row = device(report)
    assert (row["window_start_ns"], row["window_end_ns"], row["window_ns"], row["gpu_busy_ns"], row["gpu_idle_ns"]) == (
        us(130), us(270), 140_000, 60_000, 80_000)
    assert row["gpu_ops"] == 4
    assert sorted(rank.gaps["duration_ns"].to_list()) == [20_000, 20_000, 40_000]
    assert rank.steps["step"].to_list() == [1, 2]
    assert rank.roofline.height == 4 and rank.latency.height == 4
    assert int(rank.attribution["window_ns"].sum()) == 140_000
    assert "warmup-excluded" not in rank.findings["id"].to_list()
    assert dict(rank.recoverable.select("regime", "recoverable_ns").iter_rows())["overhead"] == 80_000
    assert report.summary.window.idle_fraction == pytest.approx(80 / 140)
    assert rank.notes == ("--skip-steps 1: ProfilerStep#0 left out; the analysis starts at ProfilerStep#1 "
                          "(what ran or was launched before it is not counted)",)
    doc = report_to_dict(report)
    assert doc["options"]["skip_steps"] == 1 and doc["notes"] == list(rank.notes)


def test_a_folder_skips_on_every_rank(tmp_path):
    """Two ranks with the same steps, analysed by the folder's map (jobs): each loses its step 0."""
    for rank in (0, 1):
        stepped_trace(tmp_path, rank=rank)
    report = traceanalyze.analyze(tmp_path, skip_steps=1)
    windows = [(r.rank, r.idle["window_ns"][0], r.idle["gpu_idle_ns"][0]) for r in report.ranks]
    assert windows == [
        (0, 140_000, 80_000), (1, 140_000, 80_000)]
    assert report.options.skip_steps == 1


def test_skip_two_steps(tmp_path):
    report = traceanalyze.analyze(stepped_trace(tmp_path), skip_steps=2)
    row = device(report)
    assert (row["window_start_ns"], row["window_ns"], row["gpu_busy_ns"],
            row["gpu_idle_ns"]) == (us(220), 50_000, 30_000, 20_000)
    assert report.ranks[0].notes[0].startswith("--skip-steps 2: 2 ProfilerSteps (#0–#1) left out;")


def test_steps_window_starts_at_the_first_kept_step(tmp_path):
    """The steps window [100, 300] holds only the work launched from step 1 on: the kernel launched at
    95 and running [105, 125] is step 0's and is not counted as busy."""
    row = device(traceanalyze.analyze(stepped_trace(tmp_path), window="steps", skip_steps=1))
    assert (row["window_start_ns"], row["window_ns"], row["gpu_busy_ns"], row["gpu_idle_ns"]) == (
        us(100), 200_000, 60_000, 140_000)


def test_the_cut_trace(tmp_path):
    """Open annotations are kept from the cut on; closed ones and earlier runtime calls are gone."""
    trace = traceanalyze.load_trace(stepped_trace(tmp_path))
    (skipped,) = skipped_steps(trace, 1)
    assert (skipped.count, skipped.first, skipped.last, skipped.kept, skipped.cut_ns) == (1, 0, 0, 1, us(100))
    cut = skip_steps(trace, 1)
    ops = {name: (start, duration)
           for name, start, duration in cut.cpu_ops.select("name", "start_ns", "duration_ns").iter_rows()}
    assert ops == {"train_loop": (us(100), 200_000), "ProfilerStep#1": (us(100), 100_000),
                   "ProfilerStep#2": (us(200), 100_000)}
    assert sorted(cut.runtime["start_ns"].to_list()) == [us(110), us(160), us(210), us(250)]
    assert sorted(cut.gpu["start_ns"].to_list()) == [us(130), us(170), us(220), us(260)]
    assert skip_steps(trace, 0) is trace


def test_no_steps_or_too_few_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match=r"--skip-steps 1: the trace has no ProfilerStep#N spans to skip"):
        traceanalyze.analyze(stepped_trace(tmp_path, steps=False), skip_steps=1)
    with pytest.raises(ConfigError, match=r"--skip-steps 3 leaves no step: the trace has only 3 ProfilerSteps"):
        traceanalyze.analyze(stepped_trace(tmp_path), skip_steps=3)
    with pytest.raises(ConfigError, match=r"--skip-steps must be a whole number ≥ 0, got -1"):
        traceanalyze.analyze(stepped_trace(tmp_path), skip_steps=-1)
    # 0 on a trace without steps is the default: nothing to skip, no error
    assert traceanalyze.analyze(stepped_trace(tmp_path, steps=False), skip_steps=0).ranks[0].notes == ()


def warmup_action(tmp_path, warmup_at: float) -> str:
    """The warm-up finding's action when a `warmup` annotation [warmup_at, +50] µs holds an idle gap:
    kernels 2 → [10, 20] and 55 → [60, 70] around it before the steps, then ProfilerStep#0 [100, 200)
    and #1 [200, 300) with kernels 110 → [120, 130] and 210 → [220, 230] (and, for a warm-up inside
    step 1, kernels 240 → [250, 255] and 290 → [292, 295] around it)."""
    b = TraceBuilder()
    b.step(0, 100, 100)
    b.step(1, 200, 100)
    b.annotation("warmup", warmup_at, 50)
    for launch, start, dur in ((2, 10, 10), (55, 60, 10), (110, 120, 10), (210, 220, 10), (240, 250, 5), (290, 292, 3)):
        b.launch_kernel(launch_us=launch, launch_dur_us=1, start_us=start, dur_us=dur)
    found = traceanalyze.analyze(b.write(tmp_path / "w.json")).ranks[0].findings
    return found.filter(found["id"] == "warmup-excluded")["action"][0]


def test_warmup_advice_names_what_removes_it(tmp_path):
    before_steps = warmup_action(tmp_path, 0)  # the gap 20 → 60 lies before ProfilerStep#0
    assert before_steps.startswith("leave it out of the whole report: `--window steps` (it ran before the first "
                                   "ProfilerStep); profile steady-state steps only")
    in_last_step = warmup_action(tmp_path, 245)  # the gap 255 → 292 lies in the last step: skipping it leaves none
    assert in_last_step == RECORD_STEADY_STATE
