"""The synthetic trace whose verdict tests/report/test_verdict.py derives by hand and whose whole
terminal and Markdown output tests/report/test_golden_output.py keeps as golden files."""

from __future__ import annotations

from pathlib import Path

from builder import TraceBuilder

GEMM = "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn"


def verdict_trace(folder: Path) -> Path:
    """A 2048³ bf16 GEMM on an A100 [20, 120] µs (17.2 GFLOP: 55.1 µs at 312 TFLOP/s, 55% of the roof:
    compute-bound), `.item()` [10, 200] µs syncing from 12 to 200 µs, then a fill kernel (no op: unmodeled)
    [215, 225] µs. Window 20 → 225 = 205 µs: compute 100 µs (48.8%), overhead = the 95 µs sync gap
    (46.3%), unmodeled 10 µs (4.9%). The bar (30 marks): 14 O, 15 C, 1 U. Findings: the sync (95 µs),
    and the GEMM near a roof the A100 has no faster format for (bigger-gpu-bf16: 100 µs − 17.2 GFLOP
    at the B200's 2250 TFLOP/s = 92.4 µs). Written to `folder`/t.json."""
    b = TraceBuilder()
    op = b.cpu_op("aten::mm", 0, 10, input_dims=[[2048, 2048], [2048, 2048]], input_types=["c10::BFloat16"] * 2,
                  input_strides=[[2048, 1], [2048, 1]], concrete_inputs=["", ""])
    b.launch_kernel(launch_us=2, start_us=20, dur_us=100, external_id=op, name=GEMM)
    b.cpu_op("aten::_local_scalar_dense", 10, 190)  # ends at 200, before the fill kernel's launch
    b.sync_call(12, 188)
    b.launch_kernel(launch_us=200, start_us=215, dur_us=10)  # launched as the sync returns: all 95 µs are its
    return b.write(folder / "t.json")
