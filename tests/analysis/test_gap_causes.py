"""Gap causes `collective` and `stream_wait` (docs/metrics.md), against exact synthetic traces:
a gap whose next GPU work was queued before it began is `launch` only when that work is neither a
collective nor queued behind a wait on another stream."""

from __future__ import annotations

import polars as pl

from builder import DEFAULT_BASE_US, TraceBuilder

import traceanalyze
from traceanalyze.analysis import idle

BASE_NS = round(DEFAULT_BASE_US * 1000)


def us(value: float) -> int:
    return BASE_NS + round(value * 1000)


def gaps(builder: TraceBuilder, tmp_path) -> list[tuple[int, int, str, str]]:
    trace = traceanalyze.load_trace(builder.write(tmp_path / "t.json"))
    found = idle.idle_gaps(trace).sort("start_ns")
    return found.select("start_ns", "end_ns", pl.col("cause").cast(pl.String), "next_gpu_op").rows()


def queued_ahead(b: TraceBuilder, next_kind: str, **wait) -> None:
    """k1 runs [0, 10) on stream 7; the next op is launched at 2 (before the gap) and starts at 60."""
    b.launch_kernel(launch_us=-5, launch_dur_us=3, start_us=0, dur_us=10, name="k1")
    if wait:
        b.sync_call(1, 1, name="cudaStreamWaitEvent", **wait)
    if next_kind == "collective":
        corr = b.launch(2, 3)
        b.nccl_kernel(corr, 60, 20, collective="allreduce", name="ncclDevKernel_AllReduce_Sum_f32_RING_LL", stream=20)
    elif next_kind == "kernel_on_20":
        corr = b.launch(2, 3)
        b.kernel(corr, 60, 20, name="k2", stream=20)
    else:
        corr = b.launch(2, 3, name="cudaMemcpyAsync")
        b.memcpy(corr, 60, 20, kind="DtoD", stream=7)


def test_gap_before_a_collective_is_collective(tmp_path):
    b = TraceBuilder()
    queued_ahead(b, "collective")
    assert gaps(b, tmp_path) == [(us(10), us(60), "collective", "ncclDevKernel_AllReduce_Sum_f32_RING_LL")]


def test_gap_after_a_stream_wait_on_the_next_ops_stream_is_stream_wait(tmp_path):
    b = TraceBuilder()
    queued_ahead(b, "kernel_on_20", stream=20)  # stream 20 waits on an event recorded elsewhere
    assert gaps(b, tmp_path) == [(us(10), us(60), "stream_wait", "k2")]


def test_stream_wait_on_another_stream_leaves_launch(tmp_path):
    b = TraceBuilder()
    queued_ahead(b, "kernel_on_20", stream=9)  # the wait is for stream 9, not the next op's stream
    assert gaps(b, tmp_path) == [(us(10), us(60), "launch", "k2")]


def test_stream_wait_before_the_previous_launch_on_the_stream_leaves_launch(tmp_path):
    b = TraceBuilder()
    b.sync_call(-20, 0.5, name="cudaStreamWaitEvent", stream=20)  # waited on before k0 was queued
    b.launch_kernel(launch_us=-10, launch_dur_us=2, start_us=-4, dur_us=2, name="k0", stream=20)
    queued_ahead(b, "kernel_on_20")
    found = gaps(b, tmp_path)
    assert found == [(us(-2), us(0), "launch", "k1"), (us(10), us(60), "launch", "k2")]


def test_stream_wait_call_without_a_sync_record_counts_for_the_threads_next_launch(tmp_path):
    b = TraceBuilder(schema="2021", integer_us=True)  # 2021 traces have no cuda_sync records
    queued_ahead(b, "copy", stream=7)
    [(start, end, cause, _)] = gaps(b, tmp_path)
    assert (start, end, cause) == (us(10), us(60), "stream_wait")


def test_pure_launch_latency_stays_launch(tmp_path):
    b = TraceBuilder()
    queued_ahead(b, "copy")
    assert gaps(b, tmp_path) == [(us(10), us(60), "launch", "Memcpy DtoD (Device -> Device)")]


def test_host_late_before_a_collective_is_still_host(tmp_path):
    b = TraceBuilder()
    b.launch_kernel(launch_us=-5, launch_dur_us=3, start_us=0, dur_us=10, name="k1")
    corr = b.launch(40, 3)  # launched after the gap began: the CPU was late
    b.nccl_kernel(corr, 60, 20, stream=20)
    assert [g[2] for g in gaps(b, tmp_path)] == ["host"]
