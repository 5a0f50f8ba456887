"""The biggest lever of each regime (rules_regimes, rules_precision) and the advice fitted to the run
(training or inference, vendor, Inductor kernels): exact gains on synthetic traces, and silence
without the evidence."""

from __future__ import annotations

import pytest

from builder import TraceBuilder
from findings_cases import A100, BF16, BF16_GEMM, F32, H100, SGEMM, V100, findings_of, mm, report_of

import traceanalyze
from traceanalyze.analysis.devices import device_peaks
from traceanalyze.analysis.findings import FindingInputs
from traceanalyze.analysis.findings.rules_regimes import ATTAINABLE_FRACTION, SDPA_EFFICIENCY, unfused_attention

H100_PEAKS = device_peaks("NVIDIA H100 80GB HBM3", 132, 85899345920)
V100_PEAKS = device_peaks("Tesla V100-SXM2-32GB", 80, 34359738368)
A100_PEAKS = device_peaks("NVIDIA A100-SXM4-80GB", 108, 85899345920)
HEADS, SEQ, DIM = 96, 197, 64  # ViT-B/16 at batch 8: 8 × 12 heads, 197 tokens, head dim 64


def attention_layer(b: TraceBuilder, start: float, softmax_us: float = 20.0, second: str = "aten::bmm",
                    baddbmm: bool = False, dtype: str = BF16) -> float:
    """One attention block at `start` µs on stream 7: bmm (Q·Kᵀ, 6 µs) → mul (scale, 8 µs) → _softmax
    (`softmax_us`) → `second` (P·V, 6 µs) in `dtype`, shapes recorded. Returns the end of its last kernel."""
    q, kt, scores, v = [HEADS, SEQ, DIM], [HEADS, DIM, SEQ], [HEADS, SEQ, SEQ], [HEADS, SEQ, DIM]
    first = (("aten::baddbmm", [scores, q, kt, [], []], [dtype, dtype, dtype, "Scalar", "Scalar"]) if baddbmm
             else ("aten::bmm", [q, kt], [dtype, dtype]))
    ops = [(*first, BF16_GEMM, 6), ("aten::mul", [scores, []], [dtype, "Scalar"],
           "void at::native::vectorized_elementwise_kernel<4, mul>(int)", 8),
           ("aten::_softmax", [scores, [], []], [dtype, "Scalar", "Scalar"],
            "void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::BFloat16>(int)", softmax_us),
           (second, [scores, v], [dtype, dtype], BF16_GEMM, 6)]
    t = start
    for name, dims, types, kernel, dur in ops:
        op = b.cpu_op(name, t, 5, input_dims=dims, input_types=types, concrete_inputs=[""] * len(dims))
        b.launch_kernel(launch_us=t + 1, start_us=t + 10, dur_us=dur, external_id=op, name=kernel)
        t += dur + 0.5  # each kernel starts 0.5 µs after the previous one ends
    return t


def attention_trace(layers: int = 4, second: str = "aten::bmm", pause_us: float = 40,
                    baddbmm: bool = False) -> TraceBuilder:
    """`layers` attention blocks, `pause_us` apart on the CPU (0: each kernel queued before the last ends)."""
    b = TraceBuilder(**H100)
    t = 0.0
    for _ in range(layers):
        t = attention_layer(b, t + pause_us, second=second, baddbmm=baddbmm)
    return b


def test_attention_scores_from_baddbmm_are_attention_too(tmp_path):
    """GPT-2 style: `torch.baddbmm(bias, q, kᵀ, alpha=scale)` makes the scores; same gain as with bmm."""
    row = findings_of(attention_trace(baddbmm=True), tmp_path)["unfused-attention"]
    io = 4 * HEADS * SEQ * DIM * 2 / H100_PEAKS.memory_bandwidth_bytes_per_s * 1e9
    assert row["evidence"].startswith("4 attention chains (aten::baddbmm → aten::mul → aten::_softmax → aten::bmm)")
    assert row["gain_ns"] == pytest.approx(4 * (40_000 - io))


def test_unfused_attention_is_one_sdpa_kernel(tmp_path):
    """4 chains of 40 µs: each SDPA kernel reads Q, K, V and writes O once (4 × 1.21 M bf16
    elements, 9.7 MB: 2.9 µs at 3.35 TB/s), more than the two matmuls' 0.95 GFLOP at 50% of 989."""
    found = findings_of(attention_trace(), tmp_path)
    row = found["unfused-attention"]
    io = 4 * HEADS * SEQ * DIM * 2 / H100_PEAKS.memory_bandwidth_bytes_per_s * 1e9
    compute = 2 * (2 * HEADS * SEQ * DIM * SEQ) / (H100_PEAKS.peak_flops("bf16", True) * SDPA_EFFICIENCY) * 1e9
    assert io > compute
    assert row["gain_ns"] == pytest.approx(4 * (40_000 - io))
    assert "scaled_dot_product_attention" in row["action"] and "sdpa_kernel" in row["action"]
    assert row["evidence"].startswith("4 attention chains (aten::bmm → aten::mul → aten::_softmax → aten::bmm), "
                                      "160 µs = ")
    assert "the softmax alone 80 µs" in row["evidence"]


def test_unfused_attention_remedies_merge_each_chain(tmp_path):
    """Each chain is one `merge` remedy naming its 4 kernels, as they are in the trace."""
    rank = report_of(attention_trace(2), tmp_path).ranks[0]
    trace = traceanalyze.load_trace(tmp_path / "t.json.gz")
    inputs = FindingInputs(rank=0, device_family="CUDA", peaks=H100_PEAKS, roofline=rank.roofline, gaps=rank.gaps,
                           steps=rank.gaps.clear(), small_kernel_runs=rank.gaps.clear(), fusion=rank.fusion,
                           attribution=rank.attribution, health=rank.health, cpu_ops=trace.cpu_ops)
    (finding,) = unfused_attention(inputs)
    assert [r.kind for r in finding.remedies] == ["merge", "merge"]
    kernels = set(trace.gpu.select("device", "stream", "start_ns").iter_rows())
    assert all(len(r.gpu_ops) == 4 and set(r.gpu_ops) <= kernels for r in finding.remedies)
    assert finding.gain_ns == pytest.approx(sum(80_000 / 2 - r.durations_ns[0] for r in finding.remedies))


def test_a_softmax_between_unrelated_matmuls_is_no_attention(tmp_path):
    """matmul → softmax → a matmul whose operand is not the softmax's result (shapes do not join)."""
    b = TraceBuilder(**H100)
    mm(b, 0, 4096, 4096, 4096, BF16, BF16_GEMM, 200)
    op = b.cpu_op("aten::_softmax", 100, 5, input_dims=[[64, 1000], [], []], input_types=[BF16, "Scalar", "Scalar"],
                  concrete_inputs=["", "", ""])
    b.launch_kernel(launch_us=101, start_us=230, dur_us=5, external_id=op, name="softmax_kernel")
    mm(b, 300, 4096, 4096, 4096, BF16, BF16_GEMM, 200)
    assert "unfused-attention" not in findings_of(b, tmp_path)


def test_fp32_matmuls_on_a_v100_are_told_fp16_autocast_with_a_grad_scaler_in_training(tmp_path):
    """An FP32 GEMM on a V100 (no TF32, no bf16): fp16 autocast at the 125 TFLOP/s tensor-core roof,
    GradScaler because a backward op was recorded. Until 2026-11-28 nothing was said on a V100."""
    b = TraceBuilder(**V100)
    mm(b, 0, 4096, 4096, 4096, F32, "volta_sgemm_128x64_nn", 10_000)  # 137 GFLOP in 10 ms: 13.7 of 15.7 TFLOP/s
    b.cpu_op("MmBackward0", 11_000, 10)
    row = findings_of(b, tmp_path)["fp32-simt-gemm"]
    fp16 = V100_PEAKS.peak_flops("fp16", True)
    flops, bytes_ = 2 * 4096 ** 3, 3 * 4096 ** 2 * 4
    at_roof = max(flops / fp16, bytes_ / V100_PEAKS.memory_bandwidth_bytes_per_s) * 1e9
    assert row["gain_ns"] == pytest.approx(10_000_000 - at_roof)
    assert "dtype=torch.float16" in row["action"] and "GradScaler" in row["action"]
    assert "tf32" not in row["action"].lower() and "bfloat16" not in row["action"]


def test_fp32_matmuls_in_inference_get_no_grad_scaler(tmp_path):
    b = TraceBuilder(**V100)
    mm(b, 0, 4096, 4096, 4096, F32, "volta_sgemm_128x64_nn", 10_000)
    row = findings_of(b, tmp_path)["fp32-simt-gemm"]
    assert "GradScaler" not in row["action"]


def test_a_bf16_gemv_is_not_told_to_leave_fp32(tmp_path):
    """A cuBLAS bf16 gemv whose op recorded `float` inputs (a bf16 model's logits, the case of an H100
    trace): its name says bf16; no TF32 advice (until 2026-11-28 fp32-simt-gemm fired on it)."""
    b = TraceBuilder(**A100)
    mm(b, 0, 2048, 2048, 2048, F32,
       "void gemv2T_kernel_val<int, int, __nv_bfloat16, __nv_bfloat16, float, 128, 16, 4, 4, false, false>", 1000)
    assert "fp32-simt-gemm" not in findings_of(b, tmp_path)


def test_layout_conversions_around_convolutions_are_told_channels_last(tmp_path):
    b = TraceBuilder(**A100)
    for i, (name, dur) in enumerate([("void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true>(int)", 30),
                                     ("sm80_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc", 100),
                                     ("void cudnn::ops::nhwcToNchwKernel<float, float, float, true, false>(int)", 25)]):
        b.launch_kernel(launch_us=i * 5, start_us=20 + i * 200, dur_us=dur, name=name)
    row = findings_of(b, tmp_path)["layout-conversions"]
    assert row["gain_ns"] == 55_000
    assert "channels_last" in row["action"]


def test_no_layout_finding_under_one_percent(tmp_path):
    b = TraceBuilder(**A100)
    b.launch_kernel(launch_us=0, start_us=20, dur_us=1, name="void cudnn::ops::nchwToNhwcKernel<float>(int)")
    b.launch_kernel(launch_us=5, start_us=40, dur_us=1000, name="sm80_xmma_fprop_implicit_gemm")
    assert "layout-conversions" not in findings_of(b, tmp_path)


def optimizer_trace(kernel: str, n: int = 40) -> TraceBuilder:
    """`Optimizer.step#AdamW.step` [1000, 2000] µs launching `n` `aten::add_` kernels of 3 µs on
    [4096] FP32 tensors, one every 20 µs."""
    b = TraceBuilder(**A100)
    mm(b, 0, 1024, 1024, 1024, F32, SGEMM, 200)
    b.annotation("Optimizer.step#AdamW.step", 1000, 1000)
    for i in range(n):
        op = b.cpu_op("aten::add_", 1001 + i * 20, 5, input_dims=[[4096], [4096], []], input_types=[F32, F32, "Scalar"],
                      concrete_inputs=["", "", "1"])
        b.launch_kernel(launch_us=1002 + i * 20, start_us=1010 + i * 20, dur_us=3, external_id=op, name=kernel)
    return b


def test_an_optimizer_step_of_many_kernels_is_told_fused(tmp_path):
    report = report_of(optimizer_trace("void at::native::vectorized_elementwise_kernel<4, add>(int)"), tmp_path)
    rank = report.ranks[0]
    found = {row["id"]: row for row in rank.findings.iter_rows(named=True)}
    row = found["optimizer-foreach"]
    adds = rank.roofline.filter(rank.roofline["op_name"] == "aten::add_")
    at_roof = (adds["bytes"] / adds["peak_bytes_per_s"] * 1e9).to_list()
    assert adds.height == 40 and all(t < 3000 for t in at_roof)
    assert row["gain_ns"] == pytest.approx(40 * 3000 - sum(at_roof))
    assert "`torch.optim.AdamW(params, fused=True)`" in row["action"]
    assert "latency-bound-kernels" not in found  # the same kernels count once


def test_a_foreach_optimizer_step_is_left_alone(tmp_path):
    found = findings_of(optimizer_trace("void at::native::multi_tensor_apply_kernel<add>(int)"), tmp_path)
    assert "optimizer-foreach" not in found


def softmax_trace(dur: float) -> TraceBuilder:
    """One bf16 softmax over [8192, 4096] (64 MB read and written: 47 µs at the A100's 2.04 TB/s)
    for `dur` µs, beside a 100 µs GEMM."""
    b = TraceBuilder(**A100)
    mm(b, 0, 4096, 4096, 4096, BF16, BF16_GEMM, 600)
    op = b.cpu_op("aten::_softmax", 700, 5, input_dims=[[8192, 4096], [], []], input_types=[BF16, "Scalar", "Scalar"],
                  concrete_inputs=["", "-1", "False"])
    b.launch_kernel(launch_us=701, start_us=710, dur_us=dur, external_id=op,
                    name="void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::BFloat16>(int)")
    return b


def test_a_softmax_far_below_its_roof_is_named_with_its_causes(tmp_path):
    rank = report_of(softmax_trace(500), tmp_path).ranks[0]
    row = {r["id"]: r for r in rank.findings.iter_rows(named=True)}["far-below-roof"]
    softmax = rank.roofline.filter(rank.roofline["op_name"] == "aten::_softmax").row(0, named=True)
    assert softmax["pct_of_roof"] < 0.3
    assert row["gain_ns"] == pytest.approx(500_000 - softmax["ideal_ns"] / ATTAINABLE_FRACTION)
    assert "cunn_SoftMaxForward" in row["evidence"] and "non-contiguous" in row["action"]


def test_a_softmax_near_its_roof_is_not_far_below(tmp_path):
    assert "far-below-roof" not in findings_of(softmax_trace(80), tmp_path)


def test_a_vit_whose_attention_holds_the_gpu_gets_sdpa_first_and_a_verdict_that_agrees(tmp_path):
    """12 ViT attention blocks, their softmax (20 µs of each 40) at 22% of HBM: the attention finding
    comes first, in the regime the verdict names (bandwidth), with no why-line."""
    report = report_of(attention_trace(12, pause_us=0), tmp_path)
    verdict = report.verdict()
    assert verdict.top[0].id == "unfused-attention"
    assert verdict.dominant == verdict.top[0].regime == "bandwidth"
    assert verdict.elsewhere is None
    # the softmax (50% of the window, at 22% of HBM) is the attention finding's: not far-below-roof too
    ids = set(report.ranks[0].findings["id"].to_list())
    assert "far-below-roof" not in ids


def test_without_the_attention_rule_the_same_softmax_is_far_below_its_roof(tmp_path, monkeypatch):
    """The claim is what keeps it out: with no attention rule, far-below-roof takes the softmax."""
    from traceanalyze.analysis.findings import kernel_claims
    monkeypatch.setattr(kernel_claims, "KERNEL_RULES", kernel_claims.KERNEL_RULES[1:])
    ids = set(report_of(attention_trace(12, pause_us=0), tmp_path).ranks[0].findings["id"].to_list())
    assert "far-below-roof" in ids and "unfused-attention" not in ids


def test_attention_on_a_v100_names_no_bf16(tmp_path):
    """A V100 has no bf16: the SDPA advice names the fp16 flash backend only."""
    b = TraceBuilder(**V100)
    t = 0.0
    for _ in range(2):
        t = attention_layer(b, t + 40, dtype="c10::Half")
    row = findings_of(b, tmp_path)["unfused-attention"]
    assert "bf16" not in row["action"] and "flash (fp16)" in row["action"]
