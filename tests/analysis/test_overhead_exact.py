"""Overhead analyses against exact ground truth from synthetic traces (times in µs in the builder,
ns in the tables)."""

from __future__ import annotations

import polars as pl
import pytest

from builder import DEFAULT_BASE_US, TraceBuilder

import traceanalyze
from traceanalyze.analysis import idle, launch
from traceanalyze.analysis.health import trace_health

BASE_NS = round(DEFAULT_BASE_US * 1000)


def us(value: float) -> int:
    """A builder time (µs from the base) as the absolute ns the loader produces."""
    return BASE_NS + round(value * 1000)


def load(builder: TraceBuilder, tmp_path, name="t.json"):
    return traceanalyze.load_trace(builder.write(tmp_path / name))


def host_gap_trace() -> TraceBuilder:
    """k1 [0, 10), then the CPU spends 995 µs in a Python-side op before launching k2 at 1005;
    k2 runs [1010, 1020): one 1000 µs idle gap caused by the host."""
    b = TraceBuilder()
    b.step(1, -10, 1040)
    op1 = b.cpu_op("aten::relu", -8, 6)
    b.launch_kernel(launch_us=-6, launch_dur_us=3, start_us=0, dur_us=10, external_id=op1, name="relu_kernel")
    b.annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 7, 997)
    b.cpu_op("aten::item", 8, 995)
    op2 = b.cpu_op("aten::mul", 1004, 8)
    b.launch_kernel(launch_us=1005, launch_dur_us=4, start_us=1010, dur_us=10, external_id=op2, name="mul_kernel")
    return b


def test_known_host_gap(tmp_path):
    trace = load(host_gap_trace(), tmp_path)
    summary = idle.idle_summary(trace).row(0, named=True)
    assert summary["window_ns"] == 1_020_000
    assert summary["gpu_busy_ns"] == 20_000
    assert summary["gpu_idle_ns"] == 1_000_000
    assert summary["idle_fraction"] == pytest.approx(1000 / 1020)
    gaps = idle.idle_gaps(trace)
    assert gaps.height == 1
    gap = gaps.row(0, named=True)
    assert (gap["start_ns"], gap["end_ns"], gap["duration_ns"]) == (us(10), us(1010), 1_000_000)
    assert gap["cause"] == "host"
    assert gap["cpu_op"] == "aten::item"
    assert gap["annotation"] == "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    assert gap["step"] == 1
    assert gap["previous_gpu_op"] == "relu_kernel" and gap["next_gpu_op"] == "mul_kernel"
    assert gap["share_of_window"] == pytest.approx(1000 / 1020)


def test_window_from_steps(tmp_path):
    trace = load(host_gap_trace(), tmp_path)
    summary = idle.idle_summary(trace, window="steps").row(0, named=True)
    assert summary["window_ns"] == 1_040_000  # ProfilerStep#1 spans [-10, 1030)
    assert summary["gpu_idle_ns"] == 1_020_000
    gaps = idle.idle_gaps(trace, window="steps")
    assert gaps["duration_ns"].sum() == summary["gpu_idle_ns"]
    assert sorted(gaps["duration_ns"].to_list()) == [10_000, 10_000, 1_000_000]


def test_two_overlapping_streams_count_once(tmp_path):
    b = TraceBuilder()
    b.launch_kernel(launch_us=-10, start_us=0, dur_us=100, stream=7)
    b.launch_kernel(launch_us=-9, start_us=50, dur_us=100, stream=8)
    b.launch_kernel(launch_us=-8, start_us=200, dur_us=10, stream=7)
    trace = load(b, tmp_path)
    summary = idle.idle_summary(trace).row(0, named=True)
    assert (summary["window_ns"], summary["gpu_busy_ns"], summary["gpu_idle_ns"]) == (210_000, 160_000, 50_000)
    gaps = idle.idle_gaps(trace)
    assert gaps.select("start_ns", "end_ns").rows() == [(us(150), us(200))]
    assert gaps["cause"].to_list() == ["launch"]  # launched at −8, before the gap
    streams = {r["stream"]: r for r in idle.stream_summary(trace).iter_rows(named=True)}
    assert streams[7]["busy_ns"] == 110_000 and streams[7]["idle_ns"] == 100_000
    assert streams[8]["busy_ns"] == 100_000 and streams[8]["idle_fraction"] == pytest.approx(110 / 210)


def test_gaps_sum_exactly_to_idle_time(tmp_path):
    b = TraceBuilder()
    t_ns = 0
    for i in range(40):
        dur_ns = 1500 + (i % 7) * 333
        gap_ns = (i * 37 % 11) * 777 - 400  # some kernels overlap the previous one
        b.launch_kernel(launch_us=(t_ns - 3000) / 1000, start_us=t_ns / 1000, dur_us=dur_ns / 1000, stream=7 + i % 3)
        t_ns += dur_ns + gap_ns
    trace = load(b, tmp_path)
    summary = idle.idle_summary(trace).row(0, named=True)
    assert idle.idle_gaps(trace)["duration_ns"].sum() == summary["gpu_idle_ns"]
    assert summary["gpu_busy_ns"] + summary["gpu_idle_ns"] == summary["window_ns"]


@pytest.mark.parametrize("window", ["activity", "steps"])
def test_the_summary_from_the_gaps_is_the_summary_from_the_union(tmp_path, window):
    """`idle_summary(gaps=…)` takes the busy time as the window less the gaps: the same figures as
    the union of the GPU ops, on two devices with overlapping streams, a device busy in one piece
    (no gap) and GPU work outside the steps' window."""
    b = TraceBuilder(devices=3)
    b.step(1, 5, 300)
    for device, offset in ((0, 0), (1, 3)):
        b.launch_kernel(launch_us=-10, start_us=offset, dur_us=100, stream=7, device=device)
        b.launch_kernel(launch_us=-9, start_us=offset + 50, dur_us=100, stream=8, device=device)
        b.launch_kernel(launch_us=-8, start_us=offset + 220, dur_us=30, stream=7, device=device)
    b.launch_kernel(launch_us=-7, start_us=400, dur_us=20, stream=7, device=2)  # after the step: outside its window
    trace = load(b, tmp_path)
    from_union = idle.idle_summary(trace, window=window)
    from_gaps = idle.idle_summary(trace, window=window, gaps=idle.idle_gaps(trace, window=window))
    assert from_gaps.rows() == from_union.rows()
    assert from_union.height == 3 and from_union["gpu_idle_ns"].sum() > 0


def test_sync_caused_gap(tmp_path):
    b = TraceBuilder()
    op = b.cpu_op("aten::mm", 0, 4)
    b.launch_kernel(launch_us=1, launch_dur_us=2, start_us=6, dur_us=10, external_id=op)
    b.cpu_op("aten::item", 6.5, 12)
    b.sync_call(7, 10)  # waits until k1 ends at 16, returns at 17
    b.launch_kernel(launch_us=500, start_us=506, dur_us=10)
    trace = load(b, tmp_path)
    gap = idle.idle_gaps(trace).row(0, named=True)
    assert gap["duration_ns"] == 490_000
    assert gap["cause"] == "sync"
    assert gap["sync_call"] == "cudaStreamSynchronize"
    assert gap["cpu_op"] == "aten::item"


def test_a_synchronize_behind_queued_work_makes_no_sync_gap(tmp_path):
    """Kernels launched at 0 and 5 µs run [20, 520] and [530, 1030]; a synchronize [10, 1040]
    overlaps the 10 µs gap between them, but the second kernel was queued before the gap began:
    the GPU started it late (`launch`), the CPU's wait did not cause it. An orphan kernel after a
    second synchronize [1100, 1300]: when it was queued is unknown (`other`)."""
    b = TraceBuilder()
    b.launch_kernel(launch_us=0, start_us=20, dur_us=500)
    b.launch_kernel(launch_us=5, start_us=530, dur_us=500)
    b.sync_call(10, 1030, name="cudaDeviceSynchronize")
    b.sync_call(1100, 200, name="cudaDeviceSynchronize")
    b.orphan_kernel(1200, 10)
    gaps = idle.idle_gaps(load(b, tmp_path)).sort("start_ns")
    assert gaps.select("start_ns", "duration_ns", "cause").rows() == [
        (gaps["start_ns"][0], 10_000, "launch"), (gaps["start_ns"][0] + 510_000, 170_000, "other")]


def test_a_gap_before_queued_work_belongs_to_the_step_that_queued_it(tmp_path):
    """The CPU queues kernels A and B in steps 1 [0, 50] and 2 [50, 100] µs; the GPU runs them at
    [200, 300] and [310, 400], after both steps: the 10 µs gap before B is step 2's (B's launch),
    not the step at its start (none). A host gap keeps the step at its start: C is launched at
    500 µs in step 4 [490, 600], the gap [400, 510] starts in step 3 [380, 490]."""
    b = TraceBuilder()
    for number, start, end in ((1, 0, 50), (2, 50, 100), (3, 380, 490), (4, 490, 600)):
        b.step(number, start, end - start)
    b.launch_kernel(launch_us=10, start_us=200, dur_us=100)
    b.launch_kernel(launch_us=60, start_us=310, dur_us=90)
    b.launch_kernel(launch_us=500, start_us=510, dur_us=10)
    gaps = idle.idle_gaps(load(b, tmp_path)).sort("start_ns")
    assert gaps.select("duration_ns", "cause", "step").rows() == [(10_000, "launch", 2), (110_000, "host", 3)]


def test_launch_latency_split_into_queue_wait_and_overhead(tmp_path):
    b = TraceBuilder()
    first = b.launch_kernel(launch_us=0, launch_dur_us=1, start_us=10, dur_us=10)
    second = b.launch_kernel(launch_us=1, launch_dur_us=2, start_us=25, dur_us=10)
    trace = load(b, tmp_path)
    rows = {r["correlation"]: r for r in launch.launch_latency(trace).iter_rows(named=True)}
    assert rows[first]["launch_to_start_ns"] == 10_000
    assert rows[first]["queue_wait_ns"] == 0 and rows[first]["launch_overhead_ns"] == 10_000
    assert rows[first]["launch_delay_ns"] == 9_000 and rows[first]["launch_cpu_ns"] == 1_000
    assert rows[second]["launch_to_start_ns"] == 24_000
    assert rows[second]["queue_wait_ns"] == 19_000  # stream busy until 20, launched at 1
    assert rows[second]["launch_overhead_ns"] == 5_000
    assert rows[second]["launch_delay_ns"] == 22_000
    gap = idle.idle_gaps(trace).row(0, named=True)
    assert gap["cause"] == "launch" and gap["duration_ns"] == 5_000


def test_launch_latency_rows_follow_the_gpu_table_and_share_its_columns(tmp_path):
    """One row per launched op in the order of `gpu` (launched here in the reverse of their start
    order); where every op is the first of its launch, the columns taken from `gpu` are its own
    buffers, not copies (a filter that keeps every row), and with a graph launch's later kernels
    left out the rows are still those of `gpu`, in its order."""
    b = TraceBuilder()
    late = b.launch_kernel(launch_us=0, launch_dur_us=1, start_us=40, dur_us=10)
    early = b.launch_kernel(launch_us=6, launch_dur_us=1, start_us=10, dur_us=10, stream=8)
    trace = load(b, tmp_path)
    latency = launch.launch_latency(trace)
    assert latency["correlation"].to_list() == trace.gpu["correlation"].to_list() == [early, late]

    def address(series: pl.Series) -> int:
        return series.to_numpy(allow_copy=False).__array_interface__["data"][0]

    assert address(latency["start_ns"]) == address(trace.gpu["start_ns"])
    b.graph_launch(100, 20, [(130, 10, "g1"), (140, 10, "g2")])
    trace = load(b, tmp_path, "graph.json")
    latency = launch.launch_latency(trace)
    assert latency["name"].cast(pl.String).to_list() == trace.gpu["name"].cast(pl.String).to_list()[:3]
    assert latency["start_ns"].is_sorted()


def test_graph_launch_counts_once_to_its_first_kernel(tmp_path):
    b = TraceBuilder()
    correlation = b.graph_launch(0, 20, [(30, 10, "g1"), (40, 10, "g2"), (55, 5, "g3")])
    trace = load(b, tmp_path)
    latency = launch.launch_latency(trace)
    assert latency.height == 1
    row = latency.row(0, named=True)
    assert (row["correlation"], row["name"], row["launch_to_start_ns"],
            row["launch_kind"]) == (correlation, "g1", 30_000, "graph_launch")
    depth = launch.queue_summary(trace).row(0, named=True)
    assert depth["max_depth"] == 3  # the graph enqueues its three kernels at once
    health = trace_health(trace)
    assert health.filter(pl.col("finding") == "cuda_graph_launches")["count"].to_list() == [1]


def test_clock_skew_is_flagged_and_left_out_of_statistics(tmp_path):
    b = TraceBuilder()
    b.launch_kernel(launch_us=100, start_us=95, dur_us=10)  # starts before its launch
    b.launch_kernel(launch_us=110, start_us=120, dur_us=10)
    trace = load(b, tmp_path)
    latency = launch.launch_latency(trace)
    assert latency["skewed"].to_list() == [True, False]
    stats = launch.latency_stats(latency).filter(pl.col("metric") == "launch_to_start_ns").row(0, named=True)
    assert stats["count"] == 1 and stats["max"] == 10_000
    assert trace_health(trace).filter(pl.col("finding") == "clock_skew")["count"].to_list() == [1]


def test_orphan_kernel_gap_has_cause_other(tmp_path):
    b = TraceBuilder()
    b.launch_kernel(launch_us=0, start_us=5, dur_us=5)
    b.orphan_kernel(30, 5)
    trace = load(b, tmp_path)
    gap = idle.idle_gaps(trace).row(0, named=True)
    assert gap["cause"] == "other" and gap["duration_ns"] == 20_000
    assert trace_health(trace).filter(pl.col("finding") == "orphan_gpu_ops")["count"].to_list() == [1]


def test_small_kernels_and_runs(tmp_path):
    b = TraceBuilder()
    for i in range(10):  # 10 back-to-back 2 µs kernels, each launched by a 5 µs call
        b.launch_kernel(launch_us=i * 6, launch_dur_us=5, start_us=i * 6 + 8, dur_us=2)
    b.launch_kernel(launch_us=100, launch_dur_us=5, start_us=110, dur_us=50)
    trace = load(b, tmp_path)
    small = launch.small_kernels(trace)
    assert small["small"].sum() == 10
    runs = launch.small_kernel_runs(trace, min_run=8)
    assert runs.height == 1
    run = runs.row(0, named=True)
    assert run["kernels"] == 10 and run["busy_ns"] == 20_000
    assert run["span_ns"] == (9 * 6 + 8 + 2 - 8) * 1000
    assert launch.small_kernel_runs(trace, min_run=11).height == 0


def test_queue_depth(tmp_path):
    b = TraceBuilder()
    for i in range(3):
        b.launch_kernel(launch_us=i, launch_dur_us=0.5, start_us=10 + 10 * i, dur_us=10)
    trace = load(b, tmp_path)
    depth = launch.queue_depth(trace)
    assert depth["depth"].max() == 3
    summary = launch.queue_summary(trace, full_depth=3).row(0, named=True)
    # depth 3 from the third launch (t=2) to the first start (t=10)
    assert summary["max_depth"] == 3 and summary["time_at_full_ns"] == 8_000


@pytest.mark.parametrize("far_us", [None,
                                    2.4e15])  # a time range beyond 2^61 ns sorts on (time, delta) instead of one key
def test_queue_depth_applies_starts_before_launches_at_equal_times(tmp_path, far_us):
    b = TraceBuilder()
    b.launch_kernel(launch_us=0, launch_dur_us=0.5, start_us=5, dur_us=1)
    b.launch_kernel(launch_us=5, launch_dur_us=0.5, start_us=8, dur_us=1)  # launched when the first starts
    b.launch_kernel(launch_us=6, launch_dur_us=0.5, start_us=9, dur_us=1, stream=8)
    if far_us is not None:
        b.launch_kernel(launch_us=far_us, launch_dur_us=0.5, start_us=far_us + 3, dur_us=1)
    depth = launch.queue_depth(load(b, tmp_path))
    first = depth.filter(pl.col("stream") == 7).head(4)
    assert first["depth"].to_list() == [1, 0, 1, 0]  # never 2: the start at t=5 goes before the launch at t=5
    assert depth.filter(pl.col("stream") == 8)["depth"].to_list() == [1, 0]
    assert depth.select("rank", "device",
                        "stream").equals(depth.select("rank", "device", "stream").sort("rank", "device", "stream"))


@pytest.mark.parametrize("one_query_max_ops", [launch.ONE_QUERY_MAX_OPS, -1])  # one query; a stream at a time
def test_queue_summary_one_stream_at_a_time_matches_the_whole_timeline(tmp_path, monkeypatch, one_query_max_ops):
    """`queue_summary` (every stream in one query, or each stream's timeline on its own), summed
    from `queue_depth` (every stream's timeline): the same figures, on two devices and three
    streams with launches queued behind each other and equal times."""
    monkeypatch.setattr(launch, "ONE_QUERY_MAX_OPS", one_query_max_ops)
    b = TraceBuilder(devices=2)
    for i in range(40):
        device, stream = (0, 7 + i % 2) if i % 3 else (1, 9)
        b.launch_kernel(launch_us=i * 2, launch_dur_us=0.5, start_us=30 + i * 3 - (i % 4), dur_us=1,
                        device=device, stream=stream)
    trace = load(b, tmp_path)
    depth = launch.queue_depth(trace)
    held = (pl.col("time_ns").shift(-1).over(launch.STREAM) - pl.col("time_ns")).fill_null(0)
    whole = (
        depth.with_columns(held.alias("held_ns")).group_by(launch.STREAM)
        .agg(pl.col("depth").max().alias("max_depth"),
             ((pl.col("depth") * pl.col("held_ns")).sum() / pl.col("held_ns").sum()).alias("mean_depth"),
             pl.col("held_ns").filter(pl.col("depth") >= 5).sum().alias("time_at_full_ns"))
        .sort(launch.STREAM)
    )
    summary = launch.queue_summary(trace, full_depth=5)
    assert summary.select("device", "stream").rows() == [(0, 7), (0, 8), (1, 9)]
    assert summary["max_depth"].min() > 1 and summary["time_at_full_ns"].max() > 0  # the queues do fill
    assert summary.equals(whole)


def test_queue_full_time_at_the_default_depth(tmp_path):
    """1100 launches 1 µs apart from t=0; kernel i runs [2000 + i, 2001 + i). After launch i the
    depth is i + 1, so it reaches 1024 at t=1023; from t=2000 + k it is 1100 − (k + 1), below 1024
    from k=76, t=2076. Full for 2076 − 1023 = 1053 µs."""
    b = TraceBuilder()
    for i in range(1100):
        b.launch_kernel(launch_us=i, launch_dur_us=0.5, start_us=2000 + i, dur_us=1)
    trace = load(b, tmp_path)
    summary = launch.queue_summary(trace).row(0, named=True)
    assert summary["max_depth"] == 1100
    assert summary["time_at_full_ns"] == 1_053_000


def test_clock_skewed_next_op_makes_gap_cause_other_and_queue_depth_non_negative(tmp_path):
    b = TraceBuilder()
    b.launch_kernel(launch_us=-5, start_us=0, dur_us=10)
    b.launch_kernel(launch_us=200, start_us=100, dur_us=10)  # started 100 µs before its launch
    b.launch_kernel(launch_us=210, start_us=210, dur_us=5)  # started as launched: never queued
    trace = load(b, tmp_path)
    gaps = idle.idle_gaps(trace).sort("start_ns")
    # without the skew check the launch (at 200) after the gap's start (10) would read as `host`
    assert gaps.select("start_ns", "end_ns", "cause").rows() == [(us(10), us(100), "other"), (us(110), us(210), "host")]
    depth = launch.queue_depth(trace)
    assert depth["depth"].min() >= 0
    assert depth.select("time_ns", "depth").rows() == [(us(-5), 1), (us(0), 0)]
    clock_skew = trace_health(trace).filter(pl.col("finding") == "clock_skew").row(0, named=True)
    assert clock_skew["count"] == 1 and "gap" in clock_skew["affects"] and "queue depth" in clock_skew["affects"]


def test_latency_by_kind_keeps_collectives_out_of_the_kernel_statistics(tmp_path):
    b = TraceBuilder()
    for i in range(4):  # kernels: launch → start 2, 4, 6, 8 µs
        b.launch_kernel(launch_us=100 * i, start_us=100 * i + 2 * (i + 1), dur_us=1, name="k")
    corr = b.launch(500, 5, name="cudaMemcpyAsync")
    b.memcpy(corr, 510, 2)  # 10 µs
    corr = b.launch(600, 5)
    b.nccl_kernel(corr, 5600, 100)  # waits 5 ms for its peers
    latency = launch.launch_latency(load(b, tmp_path))
    overall = launch.latency_stats(latency).filter(pl.col("metric") == "launch_to_start_ns").row(0, named=True)
    assert (overall["count"], overall["max"], overall["mean"]) == (5, 10_000, 6_000)
    by_group = launch.latency_by_group(latency).filter(pl.col("metric") == "launch_to_start_ns")
    assert by_group.select("group", "count", "mean", "max").rows() == [
        ("kernels", 4, 5_000.0, 8_000), ("memcpy/memset", 1, 10_000.0,
                                         10_000), ("communication", 1, 5_000_000.0, 5_000_000),
    ]
    # per-op values are unchanged: the collective is still in the per-op table
    assert latency.filter(pl.col("kind") == "communication")["launch_to_start_ns"].to_list() == [5_000_000]
    # every metric of a group, in `STAT_COLUMNS` order, group after group; one metric asked for is
    # its rows alone
    every = launch.latency_by_group(latency)
    assert every.select("group", "metric").rows() == [(g, m) for g in ("kernels", "memcpy/memset", "communication")
                                                       for m in launch.STAT_COLUMNS]
    for metric in launch.STAT_COLUMNS:
        alone = launch.latency_stats(latency, metrics=(metric,))
        assert alone.rows() == launch.latency_stats(latency).filter(pl.col("metric") == metric).rows()


def test_latency_per_kernel_name(tmp_path):
    b = TraceBuilder()
    for i, wait in enumerate((1, 2, 3, 4, 10)):  # "a": 5 launches
        b.launch_kernel(launch_us=100 * i, start_us=100 * i + wait, dur_us=1, name="a")
    for i, wait in enumerate((7, 9)):  # "b": 2 launches
        b.launch_kernel(launch_us=1000 + 100 * i, start_us=1000 + 100 * i + wait, dur_us=1, name="b")
    b.launch_kernel(launch_us=2000, start_us=1990, dur_us=1, name="b")  # skewed: left out
    corr = b.launch(3000, 5)
    b.nccl_kernel(corr, 3500, 10)  # collectives are not in the per-kernel table
    per_name = launch.latency_by_kernel(launch.launch_latency(load(b, tmp_path)))
    assert per_name.columns == ["name", "count", "mean", "p50", "p90", "p99", "max"]
    a, b_ = per_name.rows(named=True)
    assert (a["name"], a["count"], a["mean"], a["p50"], a["max"]) == ("a", 5, 4_000.0, 3_000.0, 10_000)
    assert a["p90"] == pytest.approx(4_000 + 0.6 * 6_000)  # linear between the 4th and 5th values
    assert a["p99"] == pytest.approx(4_000 + 0.96 * 6_000)
    assert (b_["name"], b_["count"], b_["mean"], b_["p50"], b_["max"]) == ("b", 2, 8_000.0, 8_000.0, 9_000)


def test_small_kernel_runs_are_back_to_back(tmp_path):
    """Small kernels (2 µs, launched by 5 µs calls) on one stream: 9 back to back (4 µs apart,
    within the 5 µs launch call), a 50 µs pause, then 8 more: two runs, not one of 17."""
    b = TraceBuilder()
    t = 0
    for i in range(17):
        if i == 9:
            t += 50
        b.launch_kernel(launch_us=t - 8, launch_dur_us=5, start_us=t, dur_us=2)
        t += 6
    runs = launch.small_kernel_runs(load(b, tmp_path), min_run=8)
    assert runs.select("kernels", "span_ns", "busy_ns").rows() == [(9, 50_000, 18_000), (8, 44_000, 16_000)]


def test_per_step_breakdown_tiles_the_timeline(tmp_path):
    b = TraceBuilder()
    b.step(1, 0, 100)
    b.launch_kernel(launch_us=10, start_us=20, dur_us=30)
    b.launch_kernel(launch_us=20, start_us=60, dur_us=10)
    b.step(2, 100, 100)
    b.launch_kernel(launch_us=110, start_us=150, dur_us=40)
    trace = load(b, tmp_path)
    steps = idle.step_breakdown(trace)
    assert steps.select("step", "gpu_ops", "window_ns", "gpu_busy_ns", "gpu_idle_ns").rows() == [
        (1, 2, 130_000, 40_000, 90_000),
        (2, 1, 40_000, 40_000, 0),
    ]
    assert steps["gpu_idle_ns"].sum() == idle.idle_summary(trace)["gpu_idle_ns"].sum()


def test_nanosecond_times_survive_loading(tmp_path):
    b = TraceBuilder()
    b.launch_kernel(launch_us=0.001, start_us=12.345, dur_us=0.678)
    trace = load(b, tmp_path)
    kernel = trace.gpu.row(0, named=True)
    assert kernel["start_ns"] == us(12.345) and kernel["duration_ns"] == 678


def test_old_schema_gives_the_same_numbers(tmp_path):
    def build(schema):
        b = TraceBuilder(schema=schema, integer_us=True)
        b.launch_kernel(launch_us=0, start_us=10, dur_us=10)
        b.launch_kernel(launch_us=5, start_us=50, dur_us=10)
        return b

    new = load(build("2024"), tmp_path, "new.json")
    old = load(build("2021"), tmp_path, "old.json")
    for frame in (idle.idle_summary, idle.idle_gaps):
        assert frame(new).drop("cpu_op", "annotation",
                               strict=False).equals(frame(old).drop("cpu_op", "annotation", strict=False))


def test_gaps_longest_first_then_by_start(tmp_path):
    """Gaps come longest first, gaps of one length in start order (two devices: the gaps of both
    are found in start order, then sorted by length alone)."""
    b = TraceBuilder(devices=2)
    b.step(1, -10, 400)
    kernels = {0: [(0, 10), (30, 10), (100, 10), (120, 10)], 1: [(5, 10), (25, 10), (60, 10), (70, 10)]}
    for device, spans in kernels.items():
        for start, duration in spans:
            b.launch_kernel(launch_us=start - 4, launch_dur_us=2, start_us=start, dur_us=duration, device=device,
                            stream=7 + device, name=f"k{device}")
    gaps = idle.idle_gaps(load(b, tmp_path))
    found = [(row["duration_ns"], row["start_ns"] - BASE_NS, row["device"]) for row in gaps.iter_rows(named=True)]
    # device 0: [10, 30) 20, [40, 100) 60, [110, 120) 10; device 1: [15, 25) 10, [35, 60) 25, [70, 70)
    assert found == [(60_000, 40_000, 0), (25_000, 35_000, 1), (20_000, 10_000, 0), (10_000, 15_000, 1),
                     (10_000, 110_000, 0)]
