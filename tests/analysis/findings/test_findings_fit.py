"""Advice that fits the run and gains that can all be true (each fails on the code before 2026-11-28):
kernel gains held to the GPU's busy time, no torch.compile advice to Inductor's kernels, MTIA told
no `torch.cuda` API and called by its name, AMD's matrix cores and hipBLASLt named as they are."""

from __future__ import annotations

from builder import TraceBuilder
from findings_cases import A100, BF16, BF16_GEMM, F32, SGEMM, findings_of, mm, report_of

from traceanalyze.analysis.findings.kernel_claims import KERNEL_REGIMES

MI250 = dict(device_name="AMD Instinct MI250X", num_sms=110, total_memory=68702699520, compute_capability=(9, 0))
MTIA = dict(device_name="MTIA v1", num_sms=64, total_memory=68702699520, compute_capability=(1, 0))


def test_kernel_gains_are_held_to_the_busy_time_when_streams_overlap(tmp_path):
    """Two FP32 GEMMs of 1 ms run side by side on streams 7 and 8 (busy 1 ms): each alone would
    save 0.89 ms at the TF32 roof; together the findings may not claim more than the 1 ms busy."""
    b = TraceBuilder(**A100)
    for stream, start in ((7, 0), (8, 1)):
        op = b.cpu_op("aten::mm", start, 10, input_dims=[[2048, 2048], [2048, 2048]], input_types=[F32, F32],
                      input_strides=[[2048, 1], [2048, 1]], concrete_inputs=["", ""])
        b.launch_kernel(launch_us=start + 2, start_us=20, dur_us=1000, external_id=op, name=SGEMM, stream=stream)
    rank = report_of(b, tmp_path).ranks[0]
    busy = int(rank.attribution["busy_ns"].sum())
    kernel_gains = rank.findings.filter(rank.findings["regime"].cast(str).is_in(KERNEL_REGIMES))["gain_ns"]
    assert busy == 1_000_000
    assert 0 < kernel_gains.sum() <= busy
    assert "exceeded the GPU busy time" in rank.findings.filter(rank.findings["id"] == "fp32-simt-gemm")["evidence"][0]


def test_inductor_latency_bound_kernels_are_not_told_to_compile(tmp_path):
    b = TraceBuilder(**A100)
    for i in range(3):
        mm(b, i * 50, 64, 64, 64, BF16, "triton_tem_fused_mm_0", 5)
    row = findings_of(b, tmp_path)["latency-bound-kernels"]
    assert "torch.compile(model)" not in row["action"] and "graph_breaks" in row["action"]


def sync_gap(device: dict) -> TraceBuilder:
    """Kernel [20, 120]; `aten::item` [10, 210] blocked in a synchronize [12, 210]; next kernel
    launched at 212, [220, 230]: a 100 µs sync gap."""
    b = TraceBuilder(**device)
    b.launch_kernel(launch_us=0, start_us=20, dur_us=100)
    b.cpu_op("aten::item", 10, 200)
    b.sync_call(12, 198)
    b.launch_kernel(launch_us=212, start_us=220, dur_us=10)
    return b


def test_an_mtia_trace_is_told_no_torch_cuda_api(tmp_path):
    row = findings_of(sync_gap(MTIA), tmp_path)["sync-in-step"]
    assert "torch.cuda" not in row["action"]
    assert row["title"] == "The CPU waits for the MTIA device inside the step (sync)"


def test_a_cuda_trace_keeps_the_sync_debug_mode(tmp_path):
    row = findings_of(sync_gap(A100), tmp_path)["sync-in-step"]
    assert "torch.cuda.set_sync_debug_mode" in row["action"]


def test_an_amd_gpu_has_matrix_cores_and_hipblaslt(tmp_path):
    b = TraceBuilder(**MI250)
    mm(b, 0, 1411, 4096, 4096, BF16, "Cijk_Ailk_Bljk_BBS_BH_MT128x128x32", 2000)
    row = findings_of(b, tmp_path)["gemm-shape-alignment"]
    assert "matrix cores" in row["title"] and "hipBLASLt" in row["title"]
    assert "tensor cores" not in row["title"]


def test_no_finding_gains_more_than_the_window(tmp_path):
    """A 2 µs window of one latency-bound FP32 GEMM: no gain beyond 2 µs whatever the rule says."""
    b = TraceBuilder(**A100)
    mm(b, 0, 64, 64, 64, F32, SGEMM, 2)
    rank = report_of(b, tmp_path).ranks[0]
    window = int(rank.attribution["window_ns"].sum())
    assert all(g is None or g <= window for g in rank.findings["gain_ns"].to_list())


def busy_gpu() -> TraceBuilder:
    """Two 4096³ bf16 GEMMs of 1.1 ms on an A100 (137 GFLOP: 440 µs at 312 TFLOP/s, 40% of the roof:
    no format, shape or roof rule applies), queued 1 µs apart, and a 5 µs pageable copy after them:
    busy 99.9% of the 2.21 ms window, the copy's 5 µs = 0.23% of it."""
    b = TraceBuilder(**A100)
    for i in range(2):
        op = b.cpu_op("aten::mm", i * 5, 4, input_dims=[[4096, 4096], [4096, 4096]], input_types=[BF16, BF16],
                      input_strides=[[4096, 1], [4096, 1]], concrete_inputs=["", ""])
        b.launch_kernel(launch_us=i * 5 + 1, start_us=20 + i * 1101, dur_us=1100, external_id=op, name=BF16_GEMM)
    op = b.cpu_op("aten::copy_", 30, 4)
    correlation = b.launch(31, 2, name="cudaMemcpyAsync", external_id=op)
    b.memcpy(correlation, 2221, 5)
    return b


def test_a_busy_gpu_without_a_lever_says_so_and_keeps_small_findings_off_the_first_screen(tmp_path):
    """Until 2026-11-28 the verdict opened with the 5 µs copy (0.2% of the window) as finding 1."""
    report = report_of(busy_gpu(), tmp_path,
                       rename={"Memcpy HtoD (Pinned -> Device)": "Memcpy HtoD (Pageable -> Device)"})
    found = {row["id"]: row for row in report.ranks[0].findings.iter_rows(named=True)}
    assert found["pageable-h2d"]["gain_ns"] == 5_000
    note = found["busy-no-lever"]
    assert note["gain_ns"] is None
    assert f"`{BF16_GEMM}` 100% at 40% of its roof" in note["evidence"]
    top = [f.id for f in report.verdict().top]
    assert "pageable-h2d" not in top and top[0] == "busy-no-lever"


def remedies_of(b: TraceBuilder, tmp_path, monkeypatch) -> dict:
    """The `Finding`s of rank 0 by id, with their remedies (the frame has none): `rank_findings`
    wrapped wherever the pipeline imported it."""
    import sys

    from traceanalyze.analysis.findings import table
    seen = {}
    original = table.rank_findings

    def recording(*args, **kwargs):
        found = original(*args, **kwargs)
        seen.update({f.id: f for f in found})
        return found

    callers = [module for module in list(sys.modules.values())
               if getattr(module, "__name__", "").startswith("traceanalyze")
               and getattr(module, "rank_findings", None) is original]
    assert callers, "no module calls analysis.findings.rank_findings"
    for module in callers:
        monkeypatch.setattr(module, "rank_findings", recording)
    report_of(b, tmp_path)
    return seen


def test_gap_findings_name_the_cpu_time_and_kernels_their_remedy_changes(tmp_path, monkeypatch):
    """The DataLoader wait after a sync (test_findings_sync_split.item_then_loader): `remove_cpu` of
    the main thread's 439.3 µs from the call's return to the launch; the sync's blocked 0.7 µs."""
    from test_findings_sync_split import item_then_loader
    found = remedies_of(item_then_loader(), tmp_path, monkeypatch)
    (loader,) = found["dataloader-wait"].remedies
    base = TraceBuilder().base_ns
    assert loader.kind == "remove_cpu" and loader.cpu_spans == ((1000, base + 70_700, base + 510_000),)
    (sync,) = found["sync-in-step"].remedies
    assert sync.kind == "remove_cpu" and sync.cpu_spans == ((1000, base + 70_000, base + 70_700),)


def test_a_launch_bound_run_is_one_graph_launch(tmp_path, monkeypatch):
    """10 kernels of 2 µs launched by 5 µs calls back to back: one `graph` remedy naming all 10."""
    b = TraceBuilder(**A100)
    for i in range(10):
        b.launch_kernel(launch_us=5 * i, start_us=5 * i + 3, dur_us=2)
    (remedy,) = remedies_of(b, tmp_path, monkeypatch)["launch-bound"].remedies
    base = b.base_ns
    assert remedy.kind == "graph" and remedy.gpu_ops == tuple((0, 7, base + (5 * i + 3) * 1000) for i in range(10))
