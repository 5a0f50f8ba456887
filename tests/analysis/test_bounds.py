"""Roofs and bounds that agree with themselves (issue 12 point 7), against exact synthetic traces:
latency-bound kernels, helper kernels that carry bytes but no FLOPs, copies above their link's
roof, and FP32 matmuls also judged against the TF32 tensor-core roof."""

from __future__ import annotations

import pytest

from builder import TraceBuilder

import traceanalyze
from traceanalyze.analysis import attribution, roofline
from traceanalyze.analysis.devices import device_peaks
from traceanalyze.renderers.jsonout import report_to_dict
from traceanalyze.renderers.roofline_text import kernel_table
from traceanalyze.renderers.wording import roof_fraction_cell

A100 = device_peaks("NVIDIA A100-SXM4-80GB", 108, 85899345920)
BF16, F32 = "c10::BFloat16", "float"
GEMM = "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn"
COS = "void at::native::vectorized_elementwise_kernel<4, at::native::cos_kernel_cuda<float> >"


def mm(b: TraceBuilder, start: float, m: int, k: int, n: int, dtype: str = BF16) -> int:
    return b.cpu_op("aten::mm", start, 10, input_dims=[[m, k], [k, n]], input_types=[dtype, dtype],
                    input_strides=[[k, 1], [n, 1]], concrete_inputs=["", ""])


def cos(b: TraceBuilder, start: float, numel: int, dur: float) -> None:
    op = b.cpu_op("aten::cos", start, 10, input_dims=[[numel]], input_types=[F32], input_strides=[[1]],
                  concrete_inputs=[""])
    b.launch_kernel(launch_us=start + 2, start_us=start + 20, dur_us=dur, external_id=op, name=COS)


def table_of(b: TraceBuilder, tmp_path):
    trace = traceanalyze.load_trace(b.write(tmp_path / "t.json"))
    return trace, roofline.kernel_roofline(trace)


def test_a_small_gemm_far_below_both_roofs_is_latency_bound(tmp_path):
    b = TraceBuilder()
    op = mm(b, 0, 64, 64, 64)  # 2·64³ FLOP, 3·64²·2 bytes: 12 ns at the memory roof, run in 5 µs
    b.launch_kernel(launch_us=2, start_us=20, dur_us=5, external_id=op, name=GEMM)
    trace, table = table_of(b, tmp_path)
    row = table.row(0, named=True)
    bytes_ = 3 * 64 * 64 * 2
    assert row["regime"] == "latency"
    assert row["roof"] == "HBM"  # the roof that binds it: 21 FLOP/B is left of the BF16 ridge
    assert row["pct_of_roof"] == pytest.approx(bytes_ / 5e-6 / A100.memory_bandwidth_bytes_per_s)
    assert row["ideal_ns"] == pytest.approx(bytes_ / A100.memory_bandwidth_bytes_per_s * 1e9)
    window = attribution.attribution(table, trace).row(0, named=True)
    assert (window["latency_ns"], window["bandwidth_ns"], window["compute_ns"]) == (5_000, 0, 0)
    assert window["latency"] == 1.0
    recovered = attribution.recoverable(table, attribution.attribution(table, trace))
    recoverable = dict(recovered.select("regime", "recoverable_ns").iter_rows())
    assert recoverable["latency"] == pytest.approx(5_000 - row["ideal_ns"])
    assert recoverable["bandwidth"] is None


@pytest.mark.parametrize("numel, dur, bound", [
    (1 << 24, 100, "bandwidth"),  # 134 MB: 65.8 µs at the roof in 100 µs — a real bandwidth-bound kernel
    (1 << 16, 0.3, "bandwidth"),  # 0.26 µs of work at 86% of the roof: small, but at the roof
    (1 << 16, 3, "latency"),      # the same work in 3 µs: under a quarter of the roof
    (1 << 21, 100, "bandwidth"),  # 16.8 MB, 8.2 µs at the roof: too much work to be latency-bound
])
def test_latency_needs_little_work_and_a_long_way_below_the_roof(tmp_path, numel, dur, bound):
    b = TraceBuilder()
    cos(b, 0, numel, dur)
    _, table = table_of(b, tmp_path)
    assert str(table["regime"][0]) == bound


@pytest.mark.parametrize("helper", ["void cudnn::ops::nchwToNhwcKernel<__nv_bfloat16>",
                                    "void cub::DeviceRadixSortOnesweepKernel<cub::DeviceRadixSortPolicy<long, int>>"])
def test_a_layout_kernel_of_an_op_gets_bytes_and_the_working_kernel_its_flops(tmp_path, helper):
    m = k = n = 2048
    b = TraceBuilder()
    op = mm(b, 0, m, k, n)
    b.launch_kernel(launch_us=1, start_us=10, dur_us=10, external_id=op, name=helper)
    b.launch_kernel(launch_us=5, start_us=30, dur_us=30, external_id=op, name=GEMM)
    _, table = table_of(b, tmp_path)
    op_bytes = 3 * 2048 * 2048 * 2
    assert table["helper_kernel"].to_list() == [True, False]
    assert table["flops"].to_list() == [0.0, pytest.approx(2 * m * n * k)]
    assert table["bytes"].to_list() == pytest.approx([op_bytes * 0.25, op_bytes * 0.75])
    assert [str(r) for r in table["regime"]] == ["bandwidth", "compute"]


def test_an_op_made_only_of_helper_named_kernels_keeps_its_flops(tmp_path):
    b = TraceBuilder()
    op = mm(b, 0, 512, 512, 512)
    b.launch_kernel(launch_us=1, start_us=10, dur_us=10, external_id=op, name="transpose_kernel")
    _, table = table_of(b, tmp_path)
    assert table["helper_kernel"].to_list() == [False]
    assert table["flops"].to_list() == [2 * 512**3]


def test_a_copy_above_its_link_roof_gets_its_own_footnote(tmp_path):
    b = TraceBuilder()
    corr = b.launch(0, 5, name="cudaMemcpyAsync")
    b.memcpy(corr, 10, 10, kind="HtoD", bytes=1 << 20)  # 105 GB/s over a 32 GB/s PCIe Gen4 link
    report = traceanalyze.analyze(b.write(tmp_path / "t.json")).ranks[0]
    row = report.kernels.row(0, named=True)
    assert row["pct_of_roof"] == pytest.approx((1 << 20) / 10e-6 / 32e9)
    assert roof_fraction_cell(row["pct_of_roof"], "memcpy") == "327.7%†"
    text = "\n".join(kernel_table(report))
    assert ("  † a copy above 100% of its link's roof: the link peak in the table is wrong for this system "
            "(its link is faster than the datasheet's), or the copy never crossed that link (device-local)") in text
    assert "Winograd" not in text


def test_a_kernel_above_its_roof_keeps_the_cache_footnote(tmp_path):
    b = TraceBuilder()
    cos(b, 0, 1 << 24, 20)  # 134 MB in 20 µs: 6.7 TB/s, above HBM
    report = traceanalyze.analyze(b.write(tmp_path / "t.json")).ranks[0]
    text = "\n".join(kernel_table(report))
    assert "Winograd" in text and "†" not in text


def test_fp32_matmul_on_simt_is_also_judged_against_the_tf32_roof(tmp_path):
    m = k = n = 4096
    b = TraceBuilder()
    op = mm(b, 0, m, k, n, dtype=F32)
    b.launch_kernel(launch_us=2, start_us=20, dur_us=10_000, external_id=op, name="ampere_sgemm_128x64_nn")
    bf = mm(b, 20_000, m, k, n)
    b.launch_kernel(launch_us=20_002, start_us=20_020, dur_us=1_000, external_id=bf, name=GEMM)
    report = traceanalyze.analyze(b.write(tmp_path / "t.json")).ranks[0]
    fp32 = report.roofline.filter(report.roofline["name"] == "ampere_sgemm_128x64_nn").row(0, named=True)
    achieved = 2 * m * n * k / 10e-3
    assert (fp32["roof"], fp32["pct_of_roof"]) == ("FP32 SIMT", pytest.approx(achieved / 19.5e12))
    assert fp32["tf32_peak_flops_per_s"] == 156e12
    assert fp32["tf32_roof_fraction"] == pytest.approx(achieved / 156e12)
    bf16 = report.roofline.filter(report.roofline["name"] == GEMM).row(0, named=True)
    assert bf16["tf32_peak_flops_per_s"] is None and bf16["tf32_roof_fraction"] is None
    kernel = report.kernels.filter(report.kernels["name"] == "ampere_sgemm_128x64_nn").row(0, named=True)
    assert kernel["tf32_roof_fraction"] == pytest.approx(achieved / 156e12)
    text = "\n".join(kernel_table(report))
    assert ("  TF32: FP32 matmul/convolution kernels (10 ms) run on the FP32 SIMT roof; against the TF32 "
            "tensor-core roof (156 TFLOP/s) they reach 8.8%") in text
    # the JSON carries both figures
    entry = next(k for k in report_to_dict(traceanalyze.analyze(b.write(tmp_path / "t2.json")))["kernels"]
                 if k["name"] == "ampere_sgemm_128x64_nn")
    assert entry["tf32_peak_flops_per_s"] == 156e12
    assert entry["tf32_roof_fraction"] == pytest.approx(achieved / 156e12)


def test_no_tf32_roof_on_a_device_without_one(tmp_path):
    b = TraceBuilder(device_name="Tesla V100-SXM2-32GB", num_sms=80, total_memory=34_089_730_048)
    op = mm(b, 0, 1024, 1024, 1024, dtype=F32)
    b.launch_kernel(launch_us=2, start_us=20, dur_us=1_000, external_id=op, name="volta_sgemm_128x64_nn")
    _, table = table_of(b, tmp_path)
    assert table["tf32_peak_flops_per_s"].to_list() == [None]
