"""Zero-duration GPU ops (docs/metrics.md): no activity, no gap split, a launch-latency row, never a
small kernel (until 2026-11-28 a kernel recorded with `dur` 0 counted as small: shorter than any
launch call, it could make or extend a launch-bound run)."""

from __future__ import annotations

from builder import TraceBuilder

import traceanalyze
from traceanalyze.analysis import idle, launch


def test_a_zero_duration_kernel_is_not_small_and_splits_no_gap(tmp_path):
    b = TraceBuilder()
    b.launch_kernel(launch_us=0, start_us=20, dur_us=50)
    b.launch_kernel(launch_us=90, start_us=100, dur_us=0)
    b.launch_kernel(launch_us=310, start_us=320, dur_us=2)  # 2 µs < its 5 µs launch call: small
    trace = traceanalyze.load_trace(b.write(tmp_path / "t.json"))
    gaps = idle.idle_gaps(trace)
    assert gaps["duration_ns"].to_list() == [250_000]
    latency = launch.launch_latency(trace)
    assert latency.height == 3  # one row per launch call
    assert launch.small_kernels(trace)["small"].to_list() == [False, False, True]
