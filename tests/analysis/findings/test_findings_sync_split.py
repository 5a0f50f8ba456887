"""A gap is `sync` only while the blocking call that drained the queue ran; what the CPU did after
the call returned is that work's (DataLoader or host); a DataLoader gap is one whose next work was
launched after the gap began. Each test fails on the code before 2026-11-28 (sync took the whole
gap; a sync call begun inside the gap made it a sync gap; DataLoader took gaps before queued work)."""

from __future__ import annotations

from builder import TraceBuilder
from findings_cases import findings_of

DATALOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
KERNEL = "at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at…"


def item_then_loader() -> TraceBuilder:
    """Kernel 1 [20, 70] µs; `aten::item` [60, 71] waits in cudaStreamSynchronize [61, 70.7]
    (the GPU falls idle at 70 while the CPU is blocked); then the DataLoader's `__next__` runs
    [72, 500]; kernel 2 launched at 510 runs [520, 530]. Gap 70 → 520 = 450 µs: the CPU's work from
    the return to the launch, 70.7 → 510 = 439.3 µs, is the DataLoader's; the rest, 0.7 µs blocked
    and the 10 µs from the launch to the start (the drained queue refilling), the sync's."""
    b = TraceBuilder()
    b.launch_kernel(launch_us=0, start_us=20, dur_us=50)
    b.cpu_op("aten::item", 60, 11)
    b.sync_call(61, 9.7)
    b.annotation(DATALOADER, 72, 428)
    b.launch_kernel(launch_us=510, start_us=520, dur_us=10)
    return b


def test_the_cpu_work_after_a_sync_returned_is_the_dataloaders(tmp_path):
    found = findings_of(item_then_loader(), tmp_path)
    assert found["sync-in-step"]["gain_ns"] == 10_700
    row = found["dataloader-wait"]
    assert row["gain_ns"] == 439_300
    assert row["evidence"] == f"1 idle gap, 439 µs, inside `{DATALOADER}`"
    assert "cpu-bound-gaps" not in found


def test_the_cpu_work_after_a_sync_returned_is_the_hosts(tmp_path):
    """`aten::_local_scalar_dense` [10, 210] waits in cudaStreamSynchronize [12, 200]; kernel 1
    [20, 120]; kernel 2 launched at 205, [215, 225]: 5 µs host (200 → 205, from the return to the
    launch), 90 µs sync (120 → 200 blocked, 205 → 215 refilling the queue)."""
    b = TraceBuilder()
    b.launch_kernel(launch_us=0, start_us=20, dur_us=100)
    b.cpu_op("aten::_local_scalar_dense", 10, 200)
    b.sync_call(12, 188)
    b.launch_kernel(launch_us=205, start_us=215, dur_us=10)
    found = findings_of(b, tmp_path)
    assert found["sync-in-step"]["gain_ns"] == 90_000
    assert found["cpu-bound-gaps"]["gain_ns"] == 5_000
    assert "in `aten::_local_scalar_dense`" in found["cpu-bound-gaps"]["evidence"]


def test_a_sync_call_begun_inside_the_gap_did_not_make_it(tmp_path):
    """Kernel 1 [20, 70]; the CPU works in `aten::randperm` [40, 300], then calls
    cudaStreamSynchronize [300, 300.7] on an empty queue; kernel 2 launched at 310, [320, 330].
    The 250 µs gap was the CPU's: cpu-bound, no sync finding."""
    b = TraceBuilder()
    b.launch_kernel(launch_us=0, start_us=20, dur_us=50)
    b.cpu_op("aten::randperm", 40, 260)
    b.sync_call(300, 0.7)
    b.launch_kernel(launch_us=310, start_us=320, dur_us=10)
    found = findings_of(b, tmp_path)
    assert "sync-in-step" not in found
    assert found["cpu-bound-gaps"]["gain_ns"] == 250_000
    assert "`aten::randperm`" in found["cpu-bound-gaps"]["evidence"]


def test_a_gap_before_queued_work_is_no_dataloader_wait(tmp_path):
    """Four kernels of 500 µs launched at 0-15 µs run from 20 µs, 20 µs apart, while the CPU is in
    the DataLoader [30, 2200]: the GPU never waited for a batch (its work was queued)."""
    b = TraceBuilder()
    for i in range(4):
        b.launch_kernel(launch_us=5 * i, start_us=20 + i * 520, dur_us=500)
    b.annotation(DATALOADER, 30, 2170)
    found = findings_of(b, tmp_path)
    assert "dataloader-wait" not in found
    assert found["queued-kernel-gaps"]["gain_ns"] == 60_000
