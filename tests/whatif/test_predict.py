"""Each finding's predicted saving, the top findings together, and how the report shows them, on
synthetic traces with hand-made findings and remedies (the rules that fill `remedies` are the
`advice` work; here the remedies are written out)."""

from __future__ import annotations

import json
from dataclasses import replace

import polars as pl
import pytest
from builder import TraceBuilder

import traceanalyze
from traceanalyze.analysis.findings.finding import Finding, Remedy, findings_frame
from traceanalyze.renderers.formats import RENDERERS
from traceanalyze.renderers.terminal import predicted_line
from traceanalyze.whatif import job_replay, predict, replay_frame, saving_bounds, with_notes

US = 1_000


def finding(id: str, gain_us: float | None, *remedies: Remedy) -> Finding:
    return Finding(id=id, regime="overhead", title=id, evidence="", action="", gain_ns=None if gain_us is None
                   else gain_us * US, confidence="high", remedies=remedies)


@pytest.fixture
def chain(tmp_path):
    """Two steps of five launches [10 i, 10 i + 5], kernels [10 i + 8, 10 i + 10] (steps [0, 50]
    and [50, 100]): launch-bound, each step 50 µs of GPU window."""
    b = TraceBuilder()
    b.step(1, 0, 50)
    b.step(2, 50, 50)
    for i in range(10):
        b.launch_kernel(launch_us=10 * i, start_us=10 * i + 8, dur_us=2)
    return traceanalyze.load_trace(b.write(tmp_path / "t.json"))


def op(trace, start_us: float) -> tuple[int, int, int]:
    return (0, 7, TraceBuilder().base_ns + round(start_us * US))


def test_each_finding_gets_the_windows_reduction_and_the_top_ones_are_predicted_together(chain):
    graphed = finding("graph", 50, Remedy("graph", gpu_ops=tuple(op(chain, 10 * i + 8) for i in range(10))))
    shorter = finding("retime", 1000, Remedy("retime", gpu_ops=(op(chain, 98),), durations_ns=(1 * US,)))
    unknown = finding("unmodelled", 500)
    missing = finding("missing-op", 10, Remedy("retime", gpu_ops=(op(chain, 97),), durations_ns=(1.0,)))
    prediction = predict(chain, [graphed, shorter, unknown, missing])
    assert prediction.measured.window_ns == prediction.replayed.window_ns == 92 * US
    assert prediction.measured.steps_ns.tolist() == [50 * US, 42 * US]  # step 2 ends with its last kernel
    savings = {s.id: s for s in prediction.savings}
    # as one graph: ten kernels back to back from 8, 20 µs; the window 92 → 20
    assert savings["graph"].saving_ns == 72 * US
    assert savings["retime"].saving_ns == 1 * US
    assert savings["unmodelled"].saving_ns is None and "not modelled" in savings["unmodelled"].why
    assert savings["missing-op"].saving_ns is None and "no GPU op" in savings["missing-op"].why
    noted = {f.id: f for f in with_notes([graphed, shorter, unknown, missing], prediction)}
    assert noted["missing-op"].evidence.startswith("; the replay cannot predict its saving (no GPU op on device 0 "
                                                   "stream 7")
    assert noted["unmodelled"].evidence == noted["retime"].evidence == ""
    # the graph takes out more than its 50 µs gain (the nine launch calls and the CPU time between
    # them, the kernels' launch latencies): its bound is that time, at most the 92 µs window; its
    # gain stays 50 µs; an unmodelled finding's bound is its gain; one with neither has none
    assert savings["graph"].removed_ns > 92 * US and noted["graph"].gain_ns == 50 * US
    bounds = saving_bounds([graphed, shorter, unknown, missing], prediction)
    assert bounds == [92 * US, 1000 * US, 500 * US, 10 * US]
    assert saving_bounds([replace(unknown, gain_ns=None)], predict(chain, [replace(unknown, gain_ns=None)])) == [None]
    # together the graph's kernels back to back, the last one 1 µs: 19 µs, not 92 − 72 − 1
    assert prediction.combined_ids == ("graph", "retime")
    assert prediction.combined.window_ns == 19 * US
    assert prediction.combined.steps_ns.tolist() == [10 * US, 9 * US]

    frame = findings_frame(0, [graphed, shorter, unknown, missing], [s.saving_ns for s in prediction.savings])
    # by the expected saving: the prediction where modelled (72, 1 µs), else the bound (500, 10 µs)
    assert frame["id"].to_list() == ["unmodelled", "graph", "missing-op", "retime"]


def test_the_replay_row_and_the_first_screen_line(chain):
    graphed = finding("graph", 50, Remedy("graph", gpu_ops=tuple(op(chain, 10 * i + 8) for i in range(10))))
    row = replay_frame(predict(chain, [graphed]))
    assert row.select("measured_ns", "replayed_ns", "relative_error", "steps", "step_ns", "predicted_window_ns",
                      "predicted_step_ns").row(0) == (92 * US, 92 * US, 0.0, 2, 46 * US, 20 * US, 10 * US)
    assert predicted_line(job_replay([row])) == [
        "predicted: 46 µs → 10 µs per step (−78%) with graph (docs/whatif.md)"]
    assert predicted_line(job_replay([replay_frame(predict(chain, []))])) == []


def test_job_replay_means_the_ranks_and_keeps_the_largest_error(chain):
    one = replay_frame(predict(chain, []))
    other = one.with_columns(pl.lit(1, pl.Int32).alias("rank"), pl.lit(0.02).alias("relative_error"),
                             (pl.col("measured_ns") * 3).alias("measured_ns"))
    job = job_replay([one, other]).row(0, named=True)
    assert job["measured_ns"] == 184 * US and job["relative_error"] == 0.02 and job["steps"] == 4
    assert job["predicted_window_ns"] is None


def test_the_json_report_carries_the_replay(chain, tmp_path):
    report = traceanalyze.analyze(chain)
    document = json.loads(RENDERERS["json"](report))
    replayed = document["ranks"][0]["summary"]["replay"]
    assert (replayed["measured_us"], replayed["replayed_us"], replayed["relative_error"]) == (92.0, 92.0, 0.0)
    assert [(s["step"], s["measured_us"], s["replayed_us"]) for s in replayed["steps"]] == [(1, 50.0, 50.0),
                                                                                         (2, 42.0, 42.0)]
    assert document["summary"]["replay"]["measured_us"] == 92.0
    assert all("saving_us" in f for f in document["findings"])
