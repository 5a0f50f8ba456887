"""trace_health findings on synthetic traces, and runtime call kinds from literal API names."""

from __future__ import annotations

import json

import polars as pl
import pytest

from builder import TraceBuilder

import traceanalyze
from traceanalyze.analysis import idle
from traceanalyze.pipeline.rank import build_report
from traceanalyze.renderers.terminal import render_terminal
from traceanalyze.analysis.health import trace_health


def load(builder: TraceBuilder, tmp_path, *, drop=()):
    document = builder.to_dict()
    for key in drop:
        document.pop(key)
    path = tmp_path / "t.json"
    path.write_text(json.dumps(document))
    return traceanalyze.load_trace(path)


def counts(trace) -> dict[str, int]:
    return dict(trace_health(trace).select("finding", "count").iter_rows())


def with_one_kernel(*, step: bool) -> TraceBuilder:
    b = TraceBuilder()
    if step:
        b.step(1, -10, 40)
    b.launch_kernel(launch_us=0, start_us=5, dur_us=5)
    return b


def test_no_profiler_steps(tmp_path):
    assert counts(load(with_one_kernel(step=False), tmp_path))["no_profiler_steps"] == 1
    assert "no_profiler_steps" not in counts(load(with_one_kernel(step=True), tmp_path))


def test_no_device_properties(tmp_path):
    trace = load(with_one_kernel(step=True), tmp_path, drop=["deviceProperties"])
    assert counts(trace) == {"no_device_properties": 1}
    assert counts(load(with_one_kernel(step=True), tmp_path)) == {}


def test_launches_without_gpu_work(tmp_path):
    b = with_one_kernel(step=True)
    b.launch(20, 5)  # a kernel launch whose kernel was not recorded
    b.launch(30, 5, name="cudaGraphLaunch")  # a graph launch without its kernels
    b.launch(40, 5, name="cudaMemcpyAsync")  # a copy call: not a kernel launch, not counted here
    b.launch(50, 5, name="cudaEventRecord")
    trace = load(b, tmp_path)
    found = counts(trace)
    assert found["launches_without_gpu_work"] == 2
    assert found["cuda_graph_launches"] == 1
    assert "orphan_gpu_ops" not in found


def test_trace_with_launches_but_no_gpu_events_is_not_called_cpu_only(tmp_path):
    b = TraceBuilder()
    b.step(1, 0, 100)
    op = b.cpu_op("aten::mm", 10, 50)
    b.launch(12, 4, external_id=op)
    b.launch(20, 6, external_id=op)
    trace = load(b, tmp_path)
    assert counts(trace)["launches_without_gpu_work"] == 2
    text = render_terminal(build_report(trace))
    assert "CPU-only" not in text
    assert "GPU kernels were not recorded, though 2 kernel launch calls took 10 µs of CPU time" in text


RUNTIME_KINDS = [  # (API name, kind, holds the CPU until the GPU catches up)
    ("cudaDeviceSynchronize", "sync", True),
    ("cudaEventSynchronize", "sync", True),
    ("cudaStreamSynchronize", "sync", True),
    ("hipDeviceSynchronize", "sync", True),
    ("cudaStreamWaitEvent", "sync", False),
    ("cudaLaunchKernel", "launch", False),
    ("cudaLaunchKernelExC", "launch", False),
    ("cuLaunchKernel", "launch", False),
    ("hipLaunchKernel", "launch", False),
    ("cudaGraphLaunch", "graph_launch", False),
    ("cudaMemcpy", "memcpy", True),
    ("cudaMemcpyAsync", "memcpy", False),
    ("cudaMemsetAsync", "memset", False),
    ("cudaEventRecord", "other", False),
    ("cudaGetDevice", "other", False),
]


def test_runtime_kinds_of_literal_api_names(tmp_path):
    b = TraceBuilder()
    for i, (name, _, _) in enumerate(RUNTIME_KINDS):
        b.launch(10 * i, 5, name=name)
    runtime = load(b, tmp_path).runtime.sort("start_ns")
    got = runtime.select("name", pl.col("kind").cast(pl.String), "blocking").rows()
    assert got == RUNTIME_KINDS


@pytest.mark.parametrize("name", ["cudaDeviceSynchronize", "cudaEventSynchronize", "cudaStreamSynchronize"])
def test_blocking_sync_calls_make_sync_gaps(tmp_path, name):
    b = TraceBuilder()
    b.launch_kernel(launch_us=0, start_us=5, dur_us=10)
    b.sync_call(6, 10, name=name)
    b.launch_kernel(launch_us=100, start_us=105, dur_us=10)
    gap = idle.idle_gaps(load(b, tmp_path)).row(0, named=True)
    assert (gap["cause"], gap["sync_call"]) == ("sync", name)


def test_stream_wait_event_does_not_make_a_sync_gap(tmp_path):
    b = TraceBuilder()
    b.launch_kernel(launch_us=0, start_us=5, dur_us=10)
    b.sync_call(6, 10, name="cudaStreamWaitEvent")
    b.launch_kernel(launch_us=100, start_us=105, dur_us=10)
    gap = idle.idle_gaps(load(b, tmp_path)).row(0, named=True)
    assert (gap["cause"], gap["sync_call"]) == ("host", None)
