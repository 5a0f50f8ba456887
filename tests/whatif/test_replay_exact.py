"""The replay on synthetic traces whose every time is known (tests/builder.py): the unmodified
replay gives back each recorded time, and each transformation moves the timeline by what the
rules of docs/whatif.md say, to the nanosecond. Times in the comments are µs after the base."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import polars as pl
import pytest
from builder import TraceBuilder
from hypothesis import given
from hypothesis import strategies as st

import traceanalyze
from traceanalyze.analysis.findings.finding import Finding, Remedy, findings_frame
from traceanalyze.whatif import Unmodelled, apply, build_graph, predict, replay, saving_bounds, with_notes
from traceanalyze.whatif.graph import GPU
from traceanalyze.whatif.predict import span

US = 1_000
TID = 1000


def loaded(b: TraceBuilder, tmp_path):
    return traceanalyze.load_trace(b.write(tmp_path / "t.json"))


def window_after(trace, remedies=()) -> int:
    graph = build_graph(trace)
    timing = replay(apply(graph, remedies))
    return span(graph, timing.start, timing.end, np.full(int((graph.kind == GPU).sum()), -1)).window_ns


def gpu_times(trace, remedies=()) -> list[tuple[int, int]]:
    """(start, end) of every GPU op after the remedies, in µs after the base, in the gpu table's order."""
    graph = build_graph(trace)
    timing = replay(apply(graph, remedies))
    gpu = np.flatnonzero(graph.kind == GPU)
    base = _base(trace)
    return [((int(s) - base) / US, (int(e) - base) / US) for s, e in zip(timing.start[gpu], timing.end[gpu])]


def _base(trace) -> int:
    return TraceBuilder().base_ns


def op(trace, start_us: float, stream: int = 7) -> tuple[int, int, int]:
    return (0, stream, _base(trace) + int(start_us * US))


def assert_replay_is_exact(trace) -> None:
    graph = build_graph(trace)
    timing = replay(graph)
    np.testing.assert_array_equal(timing.start, graph.start)
    np.testing.assert_array_equal(timing.end, graph.end)


def one_stream(tmp_path):
    """K1 [10, 30] launched at 0; K2 [31, 41] launched at 8, queued behind K1 (typical latency 10)."""
    b = TraceBuilder()
    b.launch_kernel(launch_us=0, start_us=10, dur_us=20)
    b.launch_kernel(launch_us=8, start_us=31, dur_us=10)
    return loaded(b, tmp_path)


def test_one_stream_replays_exactly_and_a_shorter_kernel_pulls_the_queued_one_forward(tmp_path):
    trace = one_stream(tmp_path)
    assert_replay_is_exact(trace)
    assert window_after(trace) == 31 * US
    faster = Remedy("retime", gpu_ops=(op(trace, 10),), durations_ns=(5 * US,))
    # K1 [10, 15]; K2 at max(15 + its 1 µs gap, launch 8 + latency 10) = 18, to 28
    assert gpu_times(trace, [faster]) == [(10, 15), (18, 28)]
    assert window_after(trace, [faster]) == 18 * US


def test_two_streams_with_an_event_wait(tmp_path):
    """A [10, 40] on stream 7; stream 8 waits for it (cudaStreamWaitEvent at 12); B launched at 14
    runs [41, 51]. A shorter A lets B start 1 µs after it, or at its launch + 10."""
    b = TraceBuilder()
    b.launch_kernel(launch_us=0, start_us=10, dur_us=30)
    b.sync_call(12, 2, name="cudaStreamWaitEvent", stream=8)
    b.launch_kernel(launch_us=14, start_us=41, dur_us=10, stream=8)
    trace = loaded(b, tmp_path)
    assert_replay_is_exact(trace)
    a_faster = Remedy("retime", gpu_ops=(op(trace, 10),), durations_ns=(10 * US,))
    assert gpu_times(trace, [a_faster]) == [(10, 20), (24, 34)]
    a_slower = Remedy("retime", gpu_ops=(op(trace, 10),), durations_ns=(40 * US,))
    assert gpu_times(trace, [a_slower]) == [(10, 50), (51, 61)]


def sync_then_launch(tmp_path):
    """K [10, 50]; cudaDeviceSynchronize [20, 52] (2 µs after K ended); then L2 at 60, K2 [70, 80]."""
    b = TraceBuilder()
    b.launch_kernel(launch_us=0, start_us=10, dur_us=40)
    b.sync_call(20, 32, name="cudaDeviceSynchronize")
    b.launch_kernel(launch_us=60, start_us=70, dur_us=10)
    return loaded(b, tmp_path)


def test_a_device_synchronize_ends_after_what_it_waited_on(tmp_path):
    trace = sync_then_launch(tmp_path)
    assert_replay_is_exact(trace)
    faster = Remedy("retime", gpu_ops=(op(trace, 10),), durations_ns=(20 * US,))
    # K [10, 30]; the sync returns at 30 + 2; L2 8 µs later at 40; K2 its 10 µs after: [50, 60]
    assert gpu_times(trace, [faster]) == [(10, 30), (50, 60)]
    assert window_after(trace, [faster]) == 50 * US


def test_removing_the_cpu_time_of_a_sync(tmp_path):
    trace = sync_then_launch(tmp_path)
    base = _base(trace)
    no_wait = Remedy("remove_cpu", cpu_spans=((TID, base + 20 * US, base + 52 * US),))
    # the sync takes no time: L2 at 20 + 8 = 28, K2 at 38 but after K: [50, 60]
    assert gpu_times(trace, [no_wait]) == [(10, 50), (50, 60)]
    assert window_after(trace, [no_wait]) == 50 * US
    # only the idle gap's part of the sync [50, 52] removed (what sync-in-step names): the call no
    # longer waits for K, so its 30 µs of waiting go too, its own 2 µs less the overlap: the same
    gap_part = Remedy("remove_cpu", cpu_spans=((TID, base + 50 * US, base + 52 * US),))
    assert gpu_times(trace, [gap_part]) == [(10, 50), (50, 60)]


def test_the_time_a_remedy_takes_out_bounds_its_saving_and_the_gain_stays_the_time_named(tmp_path):
    trace = sync_then_launch(tmp_path)
    base = _base(trace)
    gap_part = Remedy("remove_cpu", cpu_spans=((TID, base + 50 * US, base + 52 * US),))
    # the rule's gain: the 2 µs sync gap; the remedy takes out the sync's whole 32 µs (it no longer
    # blocks: its 30 µs of waiting and its own 2 µs, all in the span), nothing of the CPU time after
    # it [52, 60]: 32 µs. The window 70 µs → 50 µs: a saving of 20 µs, within 32, above 2
    sync = Finding(id="sync-in-step", regime="overhead", title="", evidence="2 gaps", action="", gain_ns=2 * US,
                   confidence="high", remedies=(gap_part,))
    prediction = predict(trace, [sync])
    (saving,) = prediction.savings
    assert (saving.saving_ns, saving.removed_ns) == (20 * US, 32 * US)
    # the gain stays the 2 µs the finding names (other findings may name the rest); the bound is 32 µs
    assert with_notes([sync], prediction) == [sync]
    assert saving_bounds([sync], prediction) == [32 * US]
    frame = findings_frame(0, [sync], [saving.saving_ns], saving_bounds([sync], prediction))
    assert frame.select("gain_ns", "saving_ns", "bound_ns").row(0) == (2 * US, 20 * US, 32 * US)
    # a remedy that takes out less than the rule's gain: the gain is the bound
    assert saving_bounds([replace(sync, gain_ns=40 * US)], prediction) == [40 * US]
    # no gain: the time the remedy takes out; neither (not modelled, no gain): none
    assert saving_bounds([replace(sync, gain_ns=None)], prediction) == [32 * US]


def test_cuda_graph_launches_replay_exactly(tmp_path):
    b = TraceBuilder()
    kernels = [(15, 5, "k1"), (21, 5, "k2"), (27, 5, "k3")]
    graph_id = 9
    b.graph_launch(0, 10, kernels, graph_id=graph_id)
    b.graph_launch(40, 10, [(s + 40, d, n) for s, d, n in kernels], graph_id=graph_id)
    b.sync_call(55, 20, name="cudaStreamSynchronize")
    trace = loaded(b, tmp_path)
    assert_replay_is_exact(trace)
    faster = Remedy("retime", gpu_ops=(op(trace, 61),), durations_ns=(1 * US,))
    # k2 of the second replay ends at 62, k3 keeps its 1 µs gap: [63, 68]
    assert gpu_times(trace, [faster])[3:] == [(55, 60), (61, 62), (63, 68)]


def launch_bound_chain(tmp_path):
    """Five launches [10 i, 10 i + 5], each kernel [10 i + 8, 10 i + 10]: the GPU waits on the CPU."""
    b = TraceBuilder()
    for i in range(5):
        b.launch_kernel(launch_us=10 * i, start_us=10 * i + 8, dur_us=2)
    return loaded(b, tmp_path)


def test_a_launch_bound_chain_as_one_cuda_graph(tmp_path):
    trace = launch_bound_chain(tmp_path)
    assert_replay_is_exact(trace)
    assert window_after(trace) == 42 * US
    graphed = Remedy("graph", gpu_ops=tuple(op(trace, 10 * i + 8) for i in range(5)))
    # one launch [0, 5] (no graph launch recorded: it costs what the first launch did); the
    # kernels back to back from 8
    assert gpu_times(trace, [graphed]) == [(8, 10), (10, 12), (12, 14), (14, 16), (16, 18)]


def test_merging_three_kernels_into_one(tmp_path):
    trace = launch_bound_chain(tmp_path)
    fused = Remedy("merge", gpu_ops=tuple(op(trace, 10 * i + 8) for i in (1, 2, 3)), durations_ns=(3 * US,))
    # k2 [18, 21]; k3, k4 take no time, nor do their launches (the CPU time between stays: L5 at
    # 30); k5 [38, 40]
    assert gpu_times(trace, [fused]) == [(8, 10), (18, 21), (21, 21), (25, 25), (38, 40)]
    assert window_after(trace, [fused]) == 32 * US


def test_a_pinned_copy_no_longer_holds_the_cpu(tmp_path):
    """cudaMemcpyAsync [0, 30] held the CPU until its copy [10, 25] ended (+5 µs); then a kernel
    launched at 35 ran [45, 55]."""
    b = TraceBuilder()
    corr = b.launch(0, 30, name="cudaMemcpyAsync")
    b.memcpy(corr, 10, 15, kind="DtoH")
    b.launch_kernel(launch_us=35, start_us=45, dur_us=10)
    trace = loaded(b, tmp_path)
    assert_replay_is_exact(trace)
    pinned = Remedy("async_copy", gpu_ops=(op(trace, 10),))
    # the copy call takes its own 5 µs; the launch at 10, the kernel after the copy: [25, 35]
    assert gpu_times(trace, [pinned]) == [(10, 25), (25, 35)]
    faster = Remedy("async_copy", gpu_ops=(op(trace, 10),), durations_ns=(5 * US,))
    assert gpu_times(trace, [faster]) == [(10, 15), (20, 30)]


def test_a_late_rank_no_longer_holding_a_collective(tmp_path):
    b = TraceBuilder(rank=0, world_size=2)
    corr = b.launch(0, 5)
    b.nccl_kernel(corr, 10, 50)
    b.launch_kernel(launch_us=6, start_us=61, dur_us=10)
    trace = loaded(b, tmp_path)
    assert_replay_is_exact(trace)
    on_time = Remedy("rank_delay", gpu_ops=(op(trace, 10),), durations_ns=(30 * US,))
    assert gpu_times(trace, [on_time]) == [(10, 30), (31, 41)]


def test_a_remedy_naming_an_op_the_trace_lacks_is_not_modelled(tmp_path):
    trace = one_stream(tmp_path)
    with pytest.raises(Unmodelled, match="no GPU op"):
        apply(build_graph(trace), [Remedy("retime", gpu_ops=(op(trace, 11),), durations_ns=(1.0,))])
    with pytest.raises(Unmodelled, match="durations"):
        apply(build_graph(trace), [Remedy("retime", gpu_ops=(op(trace, 10),), durations_ns=())])


def test_kernels_without_launches_keep_their_stream_order(tmp_path):
    """Orphans (no runtime call recorded): the first keeps its time; the next, with no launch to
    wait for, keeps its recorded 5 µs gap after the first."""
    b = TraceBuilder()
    b.orphan_kernel(10, 5)
    b.orphan_kernel(20, 5)
    trace = loaded(b, tmp_path)
    assert trace.runtime.is_empty()
    assert_replay_is_exact(trace)
    faster = Remedy("retime", gpu_ops=(op(trace, 10),), durations_ns=(1 * US,))
    assert gpu_times(trace, [faster]) == [(10, 11), (16, 21)]


BACKWARD_TID = 2000


def dataloader_then_backward(tmp_path):
    """Step 1 [0, 200] on the main thread: L1 [0, 5] → K1 [8, 18]; the DataLoader [10, 110]; L2
    [112, 117] → K2 [120, 130]. The autograd thread: L0 [2, 4] → K0 [10, 12] on stream 8, then,
    woken by the main thread, L3 [125, 130] → K3 [133, 143] (every launch latency 8)."""
    b = TraceBuilder()
    b.step(1, 0, 200)
    b.launch_kernel(launch_us=0, start_us=8, dur_us=10)
    b.launch_kernel(launch_us=2, start_us=10, dur_us=2, launch_dur_us=2, stream=8, tid=BACKWARD_TID)
    b.cpu_op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 10, 100)
    b.launch_kernel(launch_us=112, start_us=120, dur_us=10)
    b.launch_kernel(launch_us=125, start_us=133, dur_us=10, tid=BACKWARD_TID)
    return loaded(b, tmp_path)


def test_removed_cpu_time_moves_what_follows_on_its_thread_and_the_thread_it_wakes(tmp_path):
    trace = dataloader_then_backward(tmp_path)
    assert_replay_is_exact(trace)
    assert window_after(trace) == 135 * US
    no_loader = Remedy("remove_cpu", cpu_spans=((TID, _base(trace) + 10 * US, _base(trace) + 110 * US),))
    # L2 at 5 + (107 − 100) = 12 → K2 [20, 30]; L3 8 µs after L2 ended (17 + 8 = 25) → K3 [33, 43]
    assert gpu_times(trace, [no_loader]) == [(8, 18), (10, 12), (20, 30), (33, 43)]
    # the GPU waited for the whole DataLoader: the window is shorter by all of it
    assert window_after(trace) - window_after(trace, [no_loader]) == 100 * US


def event_sync(tmp_path, record: bool):
    """K_a [10, 30] on stream 7 (launched at 0); cudaEventRecord at 6 on stream 7, after it; K_c
    [30, 70] on stream 7 (launched at 8, queued behind K_a); cudaEventSynchronize [14, 32] waits
    for the event (K_a, + 2 µs); then K_d [50, 60] on stream 8, launched at 40. Kineto's `cuda_sync`
    event names the record's correlation (`wait_on_cuda_event_record_corr_id`) when `record`."""
    b = TraceBuilder()
    b.launch_kernel(launch_us=0, start_us=10, dur_us=20)
    recorded = b.launch(6, 1, name="cudaEventRecord")
    b.launch_kernel(launch_us=8, start_us=30, dur_us=40)
    b.sync_call(14, 18, name="cudaEventSynchronize", stream=7)
    b.launch_kernel(launch_us=40, start_us=50, dur_us=10, stream=8)
    document = b.to_dict()
    if record:
        for event in document["traceEvents"]:
            if event.get("cat") == "cuda_sync":
                event["args"]["wait_on_cuda_event_record_corr_id"] = recorded
    path = tmp_path / "t.json"
    path.write_text(json.dumps(document))
    return traceanalyze.load_trace(path)


def test_an_event_synchronize_waits_on_the_op_before_its_event_record(tmp_path):
    trace = event_sync(tmp_path, record=True)
    assert trace.sync["wait_on_record"].drop_nulls().len() == 1 and trace.sync["wait_on_stream"].to_list() == [7]
    assert_replay_is_exact(trace)
    # K_a 40 µs instead of 20: K_c [50, 90] behind it; the sync waits for K_a's end (the op its
    # event follows), returns at 52; the launch of K_d 8 µs later at 60, K_d [70, 80]
    slower = Remedy("retime", gpu_ops=(op(trace, 10),), durations_ns=(40 * US,))
    assert gpu_times(trace, [slower]) == [(10, 50), (30 + 20, 70 + 20), (70, 80)]
    # without the record's correlation (older Kineto) the sync waits on the last op of the stream
    # launched before it, K_c, which ended after the sync returned: no wait is kept, K_d does not move
    assert gpu_times(event_sync(tmp_path, record=False), [slower]) == [(10, 50), (50, 90), (50, 60)]


def test_a_pinned_copy_drops_the_stream_synchronize_after_it(tmp_path):
    """PyTorch's `.to(device)` from pageable memory: cudaMemcpyAsync [0, 20] returns before its copy
    [10, 30] ends, then cudaStreamSynchronize [21, 32] waits for it (+ 2 µs); a kernel launched at
    40 runs [50, 60] (launch latency 10, as the copy's)."""
    b = TraceBuilder()
    corr = b.launch(0, 20, name="cudaMemcpyAsync")
    b.memcpy(corr, 10, 20)
    b.sync_call(21, 11)
    b.launch_kernel(launch_us=40, start_us=50, dur_us=10)
    trace = loaded(b, tmp_path)
    assert_replay_is_exact(trace)
    pinned = Remedy("async_copy", gpu_ops=(op(trace, 10),))
    # the sync takes its own 2 µs: [21, 23]; the launch 8 µs later at 31, the kernel at 41: [41, 51]
    assert gpu_times(trace, [pinned]) == [(10, 30), (41, 51)]
    assert window_after(trace, [pinned]) == 41 * US
    # a sync that is not the next call after the copy's (another call between them) stays
    b.launch(20.5, 0.25, name="cudaLaunchKernel")
    assert gpu_times(loaded(b, tmp_path), [pinned]) == [(10, 30), (50, 60)]


def test_unqueued_work_starts_right_after_its_stream_and_no_later_than_the_typical_latency(tmp_path):
    trace = one_stream(tmp_path)
    unqueued = Remedy("unqueue", gpu_ops=(op(trace, 31),))
    # K2 no longer 1 µs behind K1: [30, 40] (its launch at 8 + the typical 10 µs is sooner)
    assert gpu_times(trace, [unqueued]) == [(10, 30), (30, 40)]
    # K1 slower to 30 µs: K2 follows it at once, [40, 50]
    slower = Remedy("retime", gpu_ops=(op(trace, 10),), durations_ns=(30 * US,))
    assert gpu_times(trace, [slower, unqueued]) == [(10, 40), (40, 50)]


@pytest.mark.parametrize("in_numpy_max_rows", [4096, -1])  # numpy for a few rows, polars for many
@given(keys=st.lists(st.tuples(st.sampled_from([-1, 0, 3, 7, 2**40]), st.sampled_from([-1, 1, 5, 9])), max_size=30))
def test_lane_index_numbers_the_distinct_keys_in_order(in_numpy_max_rows, keys):
    """Each (a, b) key → its place among the distinct keys sorted by a, then b (threads, streams)."""
    from unittest import mock

    from traceanalyze.whatif import graph

    with mock.patch.object(graph, "LANES_IN_NUMPY_MAX_ROWS", in_numpy_max_rows):
        index, distinct = graph._lane_index(np.array(keys, dtype=np.int64).reshape(len(keys), 2))
    assert distinct == sorted(set(keys))
    assert index.dtype == np.int64 and index.tolist() == [distinct.index(key) for key in keys]


@given(st.lists(st.one_of(st.none(), st.integers(-2**31, 2**31 - 1)), max_size=20), st.sampled_from(["Int32", "Int64"]))
def test_integer_columns_become_int64_with_minus_one_for_null(values, dtype):
    from traceanalyze.whatif import graph

    numbers = graph._i64(pl.Series(values, dtype=getattr(pl, dtype)))
    assert numbers.dtype == np.int64 and numbers.tolist() == [-1 if v is None else v for v in values]
