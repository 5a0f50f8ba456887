"""Roofline and attribution against exact ground truth from synthetic traces."""

from __future__ import annotations

import polars as pl
import pytest

from builder import TraceBuilder

import traceanalyze
from traceanalyze.analysis import attribution, roofline
from traceanalyze.analysis.devices import device_peaks

A100 = device_peaks("NVIDIA A100-SXM4-80GB", 108, 85899345920)
BF16 = "c10::BFloat16"


def mm_op(b: TraceBuilder, start: float, m: int, k: int, n: int, *, dur: float,
          kernel="ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn", stream=7, annotation=None):
    op = b.cpu_op("aten::mm", start, 10, input_dims=[[m, k], [k, n]], input_types=[BF16, BF16],
                  input_strides=[[k, 1], [n, 1]], concrete_inputs=["", ""])
    b.launch_kernel(launch_us=start + 2, launch_dur_us=4, start_us=start + 20, dur_us=dur, external_id=op, name=kernel,
                    stream=stream)
    return op


def elementwise(b: TraceBuilder, name: str, start: float, numel: int, *, dur: float, stream=7):
    op = b.cpu_op(name, start, 10, input_dims=[[numel], [numel], []], input_types=[BF16, BF16, "Scalar"],
                  input_strides=[[1], [1], []], concrete_inputs=["", "", "1"])
    b.launch_kernel(launch_us=start + 2, launch_dur_us=4, start_us=start + 20, dur_us=dur, external_id=op,
                    name="void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16> "
                    ">", stream=stream)


def load(b, tmp_path):
    return traceanalyze.load_trace(b.write(tmp_path / "t.json.gz"))


def test_bf16_mm_flops_bytes_and_bound(tmp_path):
    m, k, n = 4096, 4096, 4096
    b = TraceBuilder()
    mm_op(b, 0, m, k, n, dur=1000)
    trace = load(b, tmp_path)
    row = roofline.kernel_roofline(trace).row(0, named=True)
    assert row["flops"] == 2 * m * n * k
    assert row["bytes"] == (m * k + k * n + m * n) * 2
    assert row["compute_dtype"] == "bf16" and row["tensor_core"] is True
    assert row["peak_flops_per_s"] == A100.peak_flops("bf16", True)
    assert row["peak_bytes_per_s"] == A100.memory_bandwidth_bytes_per_s
    assert row["intensity"] == pytest.approx(2 * m * n * k / ((m * k + k * n + m * n) * 2))
    ridge = A100.peak_flops("bf16", True) / A100.memory_bandwidth_bytes_per_s
    assert row["ridge_flops_per_byte"] == pytest.approx(ridge)
    assert row["regime"] == "compute"
    achieved = 2 * m * n * k / 1e-3
    assert row["achieved_flops_per_s"] == pytest.approx(achieved)
    assert row["pct_of_roof"] == pytest.approx(achieved / A100.peak_flops("bf16", True))
    ideal_ns = 2 * m * n * k / A100.peak_flops("bf16", True) * 1e9
    assert row["recoverable_ns"] == pytest.approx(1_000_000 - ideal_ns)


def test_elementwise_chain_is_bandwidth_bound_and_a_fusion_opportunity(tmp_path):
    numel = 1 << 24
    b = TraceBuilder()
    b.annotation("block", -5, 200)
    elementwise(b, "aten::add", 0, numel, dur=40)
    elementwise(b, "aten::mul", 50, numel, dur=40)
    elementwise(b, "aten::add", 100, numel, dur=40)
    trace = load(b, tmp_path)
    table = roofline.kernel_roofline(trace)
    assert table["regime"].to_list() == ["bandwidth"] * 3
    assert table["bytes"].to_list() == [3 * numel * 2] * 3  # two inputs read, one output written
    runs = attribution.fusion_opportunities(table, trace.cpu_ops)
    assert runs.height == 1
    run = runs.row(0, named=True)
    assert run["kernels"] == 3 and run["annotation"] == "block"
    # two links, each an intermediate of numel bf16 written and read back
    assert run["bytes_saved"] == 2 * 2 * numel * 2
    assert run["time_saved_ns"] == pytest.approx(120_000 * (2 * 2) / (3 * 3))


def test_overlapping_streams_are_attributed_once(tmp_path):
    b = TraceBuilder()
    mm_op(b, 0, 4096, 4096, 4096, dur=100, stream=7)          # compute, [20, 120)
    elementwise(b, "aten::add", 10, 1 << 24, dur=100, stream=8)  # bandwidth, [30, 130)
    c = b.launch(200, 2, name="cudaMemcpyAsync")
    b.memcpy(c, 210, 10)                                     # memcpy, [210, 220)
    trace = load(b, tmp_path)
    table = roofline.kernel_roofline(trace)
    row = attribution.attribution(table, trace).row(0, named=True)
    assert row["window_ns"] == 200_000
    assert (row["compute_ns"], row["bandwidth_ns"], row["memcpy_ns"]) == (100_000, 10_000, 10_000)
    assert row["overhead_ns"] == 80_000
    fractions = [row[k] for k in attribution.ATTRIBUTION_KEYS]
    assert sum(fractions) == pytest.approx(1.0)
    assert row["overhead"] == pytest.approx(0.4) and row["compute"] == pytest.approx(0.5)
    assert row["model_coverage"] == 1.0


def test_unknown_device_is_unmodeled_with_a_reason_and_overrides_fix_it(tmp_path):
    b = TraceBuilder(device_name="Mystery Accelerator 9000")
    mm_op(b, 0, 1024, 1024, 1024, dur=100)
    trace = load(b, tmp_path)
    row = roofline.kernel_roofline(trace).row(0, named=True)
    assert row["regime"] == "unmodeled" and "peak" in row["unmodeled_reason"]
    assert row["flops"] == 2 * 1024**3  # the model still holds
    fixed = roofline.kernel_roofline(trace,
                                     roofline.PeakOverrides(peak_flops=100e12, peak_bandwidth=1e12)).row(0, named=True)
    assert fixed["ridge_flops_per_byte"] == pytest.approx(100.0)
    assert fixed["regime"] == "compute"  # intensity 2·1024³ / (3·1024²·2) ≈ 341 ≥ 100


def test_op_launching_two_kernels_spreads_its_cost_by_duration(tmp_path):
    m = k = n = 2048
    b = TraceBuilder()
    op = b.cpu_op("aten::mm", 0, 20, input_dims=[[m, k], [k, n]], input_types=[BF16, BF16], concrete_inputs=["", ""])
    b.launch_kernel(launch_us=1, start_us=10, dur_us=30, external_id=op, name="ampere_bf16_s16816gemm_splitK")
    b.launch_kernel(launch_us=8, start_us=40, dur_us=10, external_id=op, name="splitKreduce_kernel")
    table = roofline.kernel_roofline(load(b, tmp_path))
    # bytes by duration over both kernels; the FLOPs all on the GEMM: the split-K reduction is a
    # helper kernel (issue 12: only the kernel doing the op's work gets its FLOPs)
    op_bytes = 3 * 2048 * 2048 * 2
    assert table["bytes"].to_list() == pytest.approx([op_bytes * 0.75, op_bytes * 0.25])
    assert table["flops"].to_list() == pytest.approx([2 * m * n * k, 0.0])
    assert table["helper_kernel"].to_list() == [False, True]


def test_orphans_and_graph_replays_are_unmodeled_with_reasons(tmp_path):
    b = TraceBuilder()
    b.orphan_kernel(0, 10)
    b.graph_launch(20, 5, [(30, 10, "g1"), (40, 10, "g2")])
    table = roofline.kernel_roofline(load(b, tmp_path))
    reasons = table.sort("start_ns")["unmodeled_reason"].to_list()
    assert "orphan" in reasons[0]
    assert all("graph" in r for r in reasons[1:])
    assert set(table["regime"].to_list()) == {"unmodeled"}


def test_attribution_sums_to_one_per_step(tmp_path):
    b = TraceBuilder()
    b.step(1, -10, 100)
    mm_op(b, 0, 1024, 1024, 1024, dur=30)
    b.step(2, 90, 100)
    elementwise(b, "aten::add", 100, 1 << 20, dur=30)
    trace = load(b, tmp_path)
    from traceanalyze.analysis import idle

    per_step = attribution.step_attribution(roofline.kernel_roofline(trace), idle.step_breakdown(trace))
    sums = per_step.select(pl.sum_horizontal(list(attribution.ATTRIBUTION_KEYS))).to_series().to_list()
    assert sums == pytest.approx([1.0, 1.0])
    assert per_step["compute"].to_list()[0] > 0 and per_step["bandwidth"].to_list()[1] > 0


def test_partial_override_keeps_the_datasheet_for_the_rest(tmp_path):
    b = TraceBuilder()
    mm_op(b, 0, 1024, 1024, 1024, dur=100)
    trace = load(b, tmp_path)
    row = roofline.kernel_roofline(trace, roofline.PeakOverrides(peak_bandwidth=1e12)).row(0, named=True)
    assert row["peak_bytes_per_s"] == 1e12
    assert row["peak_flops_per_s"] == A100.peak_flops("bf16", True)
    unknown = TraceBuilder(device_name="Mystery")
    mm_op(unknown, 0, 64, 64, 64, dur=10)
    only_one = roofline.kernel_roofline(load(unknown, tmp_path), roofline.PeakOverrides(peak_flops=1e12))
    assert only_one["regime"].to_list() == ["unmodeled"]


def old_conv_layer(b: TraceBuilder, start: float, *, forward_kernel_us: float, backward_kernel_us: float):
    """A 2021-style conv layer: Input Dims but no Concrete Inputs; the backward parent records
    input, grad_output and weight, its children do not."""
    x, w, y = [32, 64, 56, 56], [128, 64, 3, 3], [32, 128, 28, 28]  # stride 2, padding 1
    fwd = b.cpu_op("aten::cudnn_convolution", start, 30, input_dims=[x, w, [], [], [], [], [], [], []],
                   input_types=["float", "float", "GenericList", "GenericList", "GenericList", "Int", "Bool", "Bool",
                                "Bool"])
    b.launch_kernel(launch_us=start + 2, start_us=start + 10, dur_us=forward_kernel_us, external_id=fwd,
                    name="volta_scudnn_128x64_relu")
    bwd_start = start + 200
    b.cpu_op("aten::cudnn_convolution_backward", bwd_start, 60, input_dims=[x, y, w, [], [], [], [], [], [], [], []],
             input_types=["float", "float", "float", "GenericList", "GenericList", "GenericList", "Int", "Bool", "Bool",
                          "Bool", "GenericList"])
    grad_in = b.cpu_op("aten::cudnn_convolution_backward_input", bwd_start + 1, 20,
                       input_dims=[[], y, w, [], [], [], [], [], [], []],
                       input_types=["GenericList", "float", "float"] + [""] * 7)
    b.launch_kernel(launch_us=bwd_start + 2, start_us=bwd_start + 100, dur_us=backward_kernel_us, external_id=grad_in,
                    name="dgrad_kernel")
    grad_w = b.cpu_op("aten::cudnn_convolution_backward_weight", bwd_start + 30, 20,
                      input_dims=[[], y, x, [], [], [], [], [], [], []],
                      input_types=["GenericList", "float", "float"] + [""] * 7)
    b.launch_kernel(launch_us=bwd_start + 31, start_us=bwd_start + 100 + backward_kernel_us, dur_us=backward_kernel_us,
                    external_id=grad_w, name="wgrad_kernel")
    return x, w, y


def test_old_trace_convolutions_are_recovered_from_the_backward_ops(tmp_path):
    b = TraceBuilder(device_name="Tesla V100-SXM2-32GB", num_sms=80, total_memory=34079899648)
    x, w, y = old_conv_layer(b, 0, forward_kernel_us=100, backward_kernel_us=150)
    table = roofline.kernel_roofline(load(b, tmp_path)).sort("start_ns")
    forward_flops = 2 * y[0] * y[2] * y[3] * w[0] * w[1] * w[2] * w[3]
    forward = table.row(0, named=True)
    assert forward["flops"] == forward_flops
    assert forward["bytes"] == 4 * (32 * 64 * 56 * 56 + 128 * 64 * 9 + 32 * 128 * 28 * 28)
    # both backward kernels share the backward parent's cost: input and weight gradients
    backward = table.slice(1, 2)
    assert backward["cost_op_id"].n_unique() == 1
    assert backward["flops"].sum() == pytest.approx(2 * forward_flops)
    assert backward["flops"].to_list()[0] == pytest.approx(backward["flops"].to_list()[1])
    assert table["regime"].to_list() != ["unmodeled"] * 3
    assert set(table["unmodeled_reason"].to_list()) == {None}


def test_ambiguous_backward_shapes_are_not_guessed(tmp_path):
    b = TraceBuilder(device_name="Tesla V100-SXM2-32GB", num_sms=80, total_memory=34079899648)
    old_conv_layer(b, 0, forward_kernel_us=100, backward_kernel_us=150)
    x, w = [32, 64, 56, 56], [128, 64, 3, 3]
    b.cpu_op("aten::cudnn_convolution_backward", 1000, 60, input_dims=[x, [32, 128, 56, 56], w] + [[]] * 8,
             input_types=["float"] * 3 + [""] * 8)  # the same shapes with stride 1 elsewhere
    table = roofline.kernel_roofline(load(b, tmp_path)).sort("start_ns")
    assert table.row(0, named=True)["regime"] == "unmodeled"
    assert "stride" in table.row(0, named=True)["unmodeled_reason"]


def test_an_op_whose_kernels_use_different_roofs_is_judged_kernel_by_kernel(tmp_path):
    m, k, n = 2048, 8192, 2048  # fp32 split-K GEMM: a TF32 tensor-core GEMM, then a SIMT reduction
    b = TraceBuilder()
    op = b.cpu_op("aten::mm", 0, 10, input_dims=[[m, k], [k, n]], input_types=["float", "float"],
                  input_strides=[[k, 1], [n, 1]], concrete_inputs=["", ""])
    b.launch_kernel(launch_us=2, start_us=20, dur_us=300, external_id=op,
                    name="cutlass_80_tensorop_s1688gemm_128x128_16x4_nt_align1")
    b.launch_kernel(launch_us=5, start_us=330, dur_us=100, external_id=op,
                    name="void splitKreduce_kernel<float, float, float, float, true, false, false>")
    table = roofline.kernel_roofline(load(b, tmp_path))
    # the split-K reduction is a helper kernel: its share of the bytes, no FLOPs, so the memory roof
    assert table["roof"].to_list() == ["TF32 TC", "HBM"]
    compute, bandwidth = attribution.kernels_by_op(table).iter_rows(named=True)  # one row per (op, bound)
    flops, op_bytes = 2 * m * n * k, 4 * (m * k + k * n + m * n)
    assert (compute["bound"], compute["roof"], compute["flops"]) == ("compute", "TF32 TC", pytest.approx(flops))
    assert compute["pct_of_roof"] == pytest.approx(flops / A100.peak_flops("tf32", True) / 300e-6)
    assert (bandwidth["bound"], bandwidth["roof"], bandwidth["flops"]) == ("bandwidth", "HBM", 0.0)
    assert bandwidth["pct_of_roof"] == pytest.approx(0.25 * op_bytes / A100.memory_bandwidth_bytes_per_s / 100e-6)


def test_the_per_op_labels_are_categoricals_with_their_texts(tmp_path):
    """The roofline's text columns of a few distinct values (`roofline.LABEL_COLUMNS`) are
    categoricals: as strings made by `when … then(<literal>)`, each row kept its own text."""
    b = TraceBuilder()
    mm_op(b, 0, 512, 512, 512, dur=100)
    b.launch_kernel(launch_us=300, launch_dur_us=4, start_us=320, dur_us=5,
                    name="triton_poi_fused_0")  # no op around it
    table = roofline.kernel_roofline(load(b, tmp_path))
    assert {table.schema[column] for column in roofline.LABEL_COLUMNS} == {pl.Categorical()}
    rows = table.sort("start_ns").select(roofline.LABEL_COLUMNS).cast(pl.String).rows(named=True)
    assert (rows[0]["op_source"], rows[0]["compute_dtype"], rows[0]["roof"],
            rows[0]["no_op_reason"]) == ("aten", "bf16", "BF16 TC", None)
    assert rows[1]["op_source"] is None
    assert rows[1]["no_op_reason"] == "launched outside any CPU op (e.g. Triton or a custom launcher)"
    assert rows[1]["unmodeled_reason"] == rows[1]["no_op_reason"]
