"""Idle-gap rules fire with exact evidence and gain, and stay silent without their evidence."""

from __future__ import annotations

import polars as pl
import pytest

from builder import TraceBuilder
from findings_cases import findings_of

from traceanalyze.analysis.findings.gap_buckets import excluded_ns, gap_buckets, outlier_first_steps

DATALOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def two_kernels_with_a_gap(context: str | None) -> TraceBuilder:
    """Kernel 1 [20, 70] µs; the CPU is busy in `context` from 40 to 305 µs; kernel 2 is launched at
    310 and runs [320, 330]: one host gap of 250 µs (70 → 320) that starts inside `context`."""
    b = TraceBuilder()
    b.launch_kernel(launch_us=0, start_us=20, dur_us=50)
    if context:
        b.annotation(context, 40, 265)
    b.launch_kernel(launch_us=310, start_us=320, dur_us=10)
    return b


def test_dataloader_wait_fires_with_the_gap_and_the_dataloader_op(tmp_path):
    found = findings_of(two_kernels_with_a_gap(DATALOADER), tmp_path)
    row = found["dataloader-wait"]
    assert row["gain_ns"] == 250_000
    assert row["evidence"] == f"1 idle gap, 250 µs, inside `{DATALOADER}`"
    assert "num_workers" in row["action"] and "pin_memory=True" in row["action"]
    assert row["spans"] == [{"start_ns": row["spans"][0]["start_ns"], "end_ns": row["spans"][0]["start_ns"] + 250_000}]
    assert "cpu-bound-gaps" not in found  # the gap is counted once


def test_without_a_dataloader_the_same_gap_is_cpu_bound(tmp_path):
    found = findings_of(two_kernels_with_a_gap("## forward ##"), tmp_path)
    assert "dataloader-wait" not in found
    row = found["cpu-bound-gaps"]
    assert row["gain_ns"] == 250_000
    assert row["evidence"] == ("1 gap where the next launch came late, 250 µs; longest 250 µs in `## forward ##` "
                               "before `at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
                               "at…`; "
                               "the CPU work is not named (the replay moves it off the step: the upper bound)")
    # the CPU work from the gap's start (70) to the late launch (310) leaves the thread: L2 at 70, its
    # kernel its 10 µs latency later, [80, 90]; the window [20, 330] → [20, 90]: the gap less the latency
    assert row["saving_ns"] == 240_000


def test_a_step_that_replays_cuda_graphs_is_not_told_to_capture_one(tmp_path):
    """The same host gap after a CUDA graph's kernel (the trace replays graphs): the CPU work is
    to go into the graphs, not "capture the step with CUDA graphs"."""
    b = two_kernels_with_a_gap("## forward ##")
    b.graph_launch(400, 5, [(410, 10, "graph_kernel")])
    row = findings_of(b, tmp_path)["cpu-bound-gaps"]
    assert row["gain_ns"] == 250_000 + 80_000  # and the gap before the graph, launched after it began
    assert "reduce-overhead" not in row["action"]
    assert "bring it into the CUDA graphs the step already replays" in row["action"]


def test_warmup_gaps_are_left_out_of_every_gain(tmp_path):
    found = findings_of(two_kernels_with_a_gap("warmup"), tmp_path)
    assert "cpu-bound-gaps" not in found
    row = found["warmup-excluded"]
    assert row["gain_ns"] is None
    assert row["evidence"] == "1 idle gap, 250 µs in warm-up/autotune: `warmup` (250 µs longest)"
    assert "torch.profiler.schedule(wait=1, warmup=1, active=3)" in row["action"]


def sync_trace(with_sync: bool) -> TraceBuilder:
    """Kernel 1 [20, 120] µs; `aten::_local_scalar_dense` from 10 to 210 µs waits in
    cudaStreamSynchronize [12, 200]; kernel 2 launched at 205 runs [215, 225]: a 95 µs gap (120 → 215)."""
    b = TraceBuilder()
    b.launch_kernel(launch_us=0, start_us=20, dur_us=100)
    b.cpu_op("aten::_local_scalar_dense", 10, 200)
    if with_sync:
        b.sync_call(12, 188)
    b.launch_kernel(launch_us=205, start_us=215, dur_us=10)
    return b


def test_sync_gap_names_the_op_and_the_call(tmp_path):
    """The call returns at 200 µs, the next launch begins at 205: those 5 µs are the CPU's, the other
    90 µs of the gap the sync's."""
    found = findings_of(sync_trace(True), tmp_path)
    row = found["sync-in-step"]
    # the rule counts the 90 µs gap, its gain; the remedy takes out the whole sync [12, 200] (it no
    # longer waits, while kernel 1 ran too): 188 µs, the bound (docs/whatif.md, "Bounds")
    assert (row["gain_ns"], row["bound_ns"]) == (90_000, 188_000)
    assert row["evidence"] == ("1 sync gap, 90 µs; 1× `cudaStreamSynchronize` in `aten::_local_scalar_dense` = "
                               "`.item()` / `float(t)` / `bool(t)` / `if t:`, 90 µs")
    assert found["cpu-bound-gaps"]["gain_ns"] == 5_000
    assert "torch.cuda.set_sync_debug_mode" in row["action"]


def test_no_sync_call_no_sync_finding(tmp_path):
    found = findings_of(sync_trace(False), tmp_path)
    assert "sync-in-step" not in found
    assert found["cpu-bound-gaps"]["gain_ns"] == 95_000


def queued_behind_a_synchronize(gap_us: float) -> TraceBuilder:
    """Three kernels launched at 0, 5 and 10 µs run 500 µs each from 20 µs, `gap_us` apart, while
    a cudaDeviceSynchronize from 15 µs waits for them: two gaps before work queued long before."""
    b = TraceBuilder()
    for i in range(3):
        b.launch_kernel(launch_us=5 * i, start_us=20 + i * (500 + gap_us), dur_us=500)
    b.sync_call(15, 1510 + 2 * gap_us, name="cudaDeviceSynchronize")
    return b


def test_gaps_before_queued_kernels_are_neither_sync_nor_the_cpu(tmp_path):
    """2 × 10 µs of a 1520 µs window (1.3%): the queued-kernel rule, not the sync or CPU rules."""
    found = findings_of(queued_behind_a_synchronize(10), tmp_path)
    assert "sync-in-step" not in found and "cpu-bound-gaps" not in found
    row = found["queued-kernel-gaps"]
    assert row["gain_ns"] == 20_000 and row["confidence"] == "low"
    assert row["evidence"] == ("2 gaps before work launched ahead of time, 20 µs = 1.3% of the window; median "
                               "10 µs, longest 10 µs before "
                               "`at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at…`, "
                               "launched 525 µs before it started; what delays it is not known (the replay starts "
                               "it as soon as its stream and launch allow: the upper bound)")
    # K2 and K3 start right after the kernel before them: the window ends 2 × 10 µs sooner
    assert row["saving_ns"] == 20_000
    assert row["action"] == ("fewer, larger kernels: fuse them with `torch.compile(model)`; a CUDA graph "
                             "(`torch.compile(model, mode=\"reduce-overhead\")`) starts queued kernels sooner")


def test_a_graph_queued_in_time_that_starts_milliseconds_late_waited_on_something_else(tmp_path):
    """A kernel [20, 520] µs, then a CUDA graph launched at 10 µs whose kernel starts only at 1720:
    1.2 ms idle before work queued in time. No CUDA-graph advice (the trace replays graphs)."""
    b = TraceBuilder()
    b.launch_kernel(launch_us=0, start_us=20, dur_us=500)
    b.graph_launch(10, 20, [(1720, 100, "graph_kernel")])
    row = findings_of(b, tmp_path)["queued-kernel-gaps"]
    assert row["gain_ns"] == 1_200_000
    assert row["evidence"] == ("1 gap before work launched ahead of time, 1.2 ms = 66.7% of the window; median 1.2 ms, "
                               "longest 1.2 ms before `graph_kernel`, launched 1.71 ms before it started; what "
                               "delays it is not known (the replay starts it as soon as its stream and launch allow: "
                               "the upper bound); 1 of them over 1 ms (1.2 ms)")
    assert row["saving_ns"] == 1_200_000  # the graph's kernel right after the first one: [520, 620]
    assert "reduce-overhead" not in row["action"]
    assert "waited on something the trace does not show" in row["action"]


def test_gaps_before_queued_kernels_under_one_percent_stay_silent(tmp_path):
    """2 × 7 µs of a 1514 µs window: 0.92%, under `QUEUED_MIN_SHARE`."""
    found = findings_of(queued_behind_a_synchronize(7), tmp_path)
    assert not {"queued-kernel-gaps", "sync-in-step", "cpu-bound-gaps"} & set(found)


def launch_run(kernel_us: float) -> TraceBuilder:
    """10 launch calls of 5 µs back to back (at 0, 5, … 45 µs); kernel i starts 3 µs after its launch
    began. With 2 µs kernels (shorter than the 5 µs launch) the GPU idles 3 µs between each pair:
    9 gaps, 27 µs, inside one run of 10 small kernels."""
    b = TraceBuilder()
    for i in range(10):
        b.launch_kernel(launch_us=5 * i, start_us=5 * i + 3, dur_us=kernel_us, launch_dur_us=5)
    return b


def test_launch_bound_run_gains_the_idle_between_its_kernels(tmp_path):
    found = findings_of(launch_run(2), tmp_path)
    row = found["launch-bound"]
    assert row["gain_ns"] == 27_000
    assert row["evidence"] == ("1 run of 10 kernels shorter than their launch calls, 27 µs idle between them; "
                               "longest run: 10 kernels from "
                               "`at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at…`")
    assert 'mode="reduce-overhead"' in row["action"]
    assert len(row["spans"]) == 9
    assert "cpu-bound-gaps" not in found


def test_kernels_longer_than_their_launch_make_no_launch_bound_finding(tmp_path):
    assert "launch-bound" not in findings_of(launch_run(6), tmp_path)


def steps(idle_us: list[float]) -> pl.DataFrame:
    count = len(idle_us)
    return pl.DataFrame({"rank": [0] * count, "device": [0] * count, "step": list(range(1, count + 1)),
                         "gpu_idle_ns": [int(v * 1000) for v in idle_us]},
                        schema_overrides={"rank": pl.Int32, "device": pl.Int32})


@pytest.mark.parametrize("idle_us, outlier", [
    ([500, 150, 200, 100], True),   # 500 µs > 2 × 150 µs (median of 150, 200, 100) + 100 µs
    ([400, 150, 200, 100], False),  # 400 µs = 2 × 150 + 100: not above
    ([5000, 100], False),           # two steps: too few to call the first an outlier
])
def test_an_outlying_first_step_needs_three_steps_and_twice_the_median(idle_us, outlier):
    assert outlier_first_steps(steps(idle_us))["step"].to_list() == ([1] if outlier else [])


def _address(series: pl.Series) -> int:
    return series.to_numpy(allow_copy=False).__array_interface__["data"][0]


def test_each_gap_gets_one_bucket_in_the_order_of_the_gaps_without_copying_them():
    """Six gaps, longest first as `idle_gaps` gives them: an outlying first step, a DataLoader
    wait, a sync, a launch gap inside a run of launch-bound kernels (300–420 µs), a host gap after
    it, a launch gap after it (queued work started late). Each gets its bucket in place; the gaps'
    own columns are not copied (a sort would)."""
    cat = pl.Categorical()
    gaps = pl.DataFrame({
        "rank": [0] * 6, "device": [0] * 6, "step": [1, 2, 2, 3, 3, 3],
        "start_ns": [10_000, 200_000, 100_000, 350_000, 450_000, 480_000],
        "end_ns": [90_000, 260_000, 150_000, 390_000, 470_000, 482_000],
        "cause": ["host", "host", "sync", "launch", "host", "launch"],
        "cpu_op": ["aten::mm", "aten::add", "aten::item", "aten::mul", "aten::mm", None],
        "annotation": [None, DATALOADER, None, None, "## forward ##", None],
    }, schema_overrides={"rank": pl.Int32, "device": pl.Int32, "cpu_op": cat, "annotation": cat}).with_columns(
        (pl.col("end_ns") - pl.col("start_ns")).alias("duration_ns"))
    runs = pl.DataFrame({"rank": [0], "device": [0], "first_start_ns": [300_000], "last_end_ns": [420_000]},
                        schema_overrides={"rank": pl.Int32, "device": pl.Int32})
    bucketed = gap_buckets(gaps, steps([500, 150, 200, 100]), runs)
    assert bucketed["bucket"].to_list() == ["excluded", "dataloader", "sync", "launch_run", "host", "queued"]
    assert bucketed["in_outlier_step"].to_list() == [True, False, False, False, False, False]
    for name in ("start_ns", "end_ns", "duration_ns"):
        assert _address(bucketed[name]) == _address(gaps[name])
    assert excluded_ns(bucketed) == 80_000
