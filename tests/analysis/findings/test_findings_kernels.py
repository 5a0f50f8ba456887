"""Kernel rules: exact gains from the datasheet peaks, and silence on devices that lack the format."""

from __future__ import annotations

import polars as pl
import pytest

from builder import TraceBuilder
from findings_cases import A100, BF16, BF16_GEMM, F32, H100, H100_GEMM, SGEMM, V100, findings_of, mm

from traceanalyze.analysis.device_table import DEVICE_TABLE, known_device
from traceanalyze.analysis.devices import device_peaks

A100_PEAKS = device_peaks("NVIDIA A100-SXM4-80GB", 108, 85899345920)
H100_PEAKS = device_peaks("NVIDIA H100 80GB HBM3", 132, 85899345920)


def test_fp32_gemm_on_cuda_cores_gains_the_tf32_roof(tmp_path):
    b = TraceBuilder(**A100)
    mm(b, 0, 2048, 2048, 2048, F32, SGEMM, 1000)  # 17.2 GFLOP in 1 ms: 17.2 TFLOP/s of 19.5
    row = findings_of(b, tmp_path)["fp32-simt-gemm"]
    flops, bytes_ = 2 * 2048 ** 3, 3 * 2048 ** 2 * 4
    at_tf32 = max(flops / 156e12, bytes_ / A100_PEAKS.memory_bandwidth_bytes_per_s) * 1e9  # 110.1 µs
    assert row["gain_ns"] == pytest.approx(1_000_000 - at_tf32)
    assert row["evidence"] == ("1 FP32 GEMM kernel, 1 ms = 100% of GPU busy (top `ampere_sgemm_128x64_nn`) at "
                               "17.2 TFLOP/s against the FP32 roof 19.5 TFLOP/s; TF32 roof 156 TFLOP/s (8×)")
    assert "torch.backends.cuda.matmul.allow_tf32 = True" in row["action"]
    assert "torch.bfloat16" in row["action"]
    assert row["confidence"] == "high"


@pytest.mark.parametrize("device, dtype, kernel", [(V100, F32, "volta_sgemm_128x64_nn"), (A100, BF16, BF16_GEMM)])
def test_no_tf32_advice_on_a_v100_nor_for_bf16(tmp_path, device, dtype, kernel):
    b = TraceBuilder(**device)
    mm(b, 0, 2048, 2048, 2048, dtype, kernel, 1000)
    found = findings_of(b, tmp_path)
    assert ("fp32-simt-gemm" in found) == (dtype == F32)  # on a V100: fp16 autocast (test_findings_regimes.py)
    assert not any("tf32" in row["action"].lower() for row in found.values())


def test_bf16_gemm_at_the_roof_on_hopper_is_told_fp8(tmp_path):
    b = TraceBuilder(**H100)
    mm(b, 0, 8192, 8192, 8192, BF16, H100_GEMM, 1200)  # 1.1 TFLOP in 1.2 ms: 92.6% of 989 TFLOP/s
    row = findings_of(b, tmp_path)["lower-precision-bf16"]
    flops = 2 * 8192 ** 3
    fp8 = H100_PEAKS.peak_flops("fp8", True)
    assert row["gain_ns"] == pytest.approx(1_200_000 - flops / fp8 * 1e9)
    assert row["title"] == "BF16 matmuls near the roof: FP8 raises it 2×"
    assert "Float8DynamicActivationFloat8WeightConfig" in row["action"]  # no backward recorded: inference
    assert "convert_to_float8_training" not in row["action"]
    assert fp8 == 1979e12  # H100 SXM dense FP8 (devices.md)
    assert len(H100_GEMM) > 80  # a kernel name in a sentence is cut to 80 characters
    assert row["evidence"] == (f"1 compute-bound BF16 kernel, 1.2 ms = 100% of GPU busy (top `{H100_GEMM[:79]}…`) at "
                               "93% of the BF16 roof; FP8 roof 1979 TFLOP/s; an inference run (no backward recorded)")
    # 1.1 TFLOP / 1.2 ms = 916 of 989 TFLOP/s


def test_bf16_gemm_at_the_roof_in_training_is_told_fp8_training(tmp_path):
    """The same GEMM with a backward op and an optimizer step recorded: FP8 training, not inference
    quantisation (until 2026-11-28 every run was told `convert_to_float8_training`)."""
    b = TraceBuilder(**H100)
    mm(b, 0, 8192, 8192, 8192, BF16, H100_GEMM, 1200)
    b.cpu_op("MmBackward0", 1300, 10)
    b.annotation("Optimizer.step#AdamW.step", 1400, 10)
    row = findings_of(b, tmp_path)["lower-precision-bf16"]
    assert "convert_to_float8_training" in row["action"] and "quantize_" not in row["action"]
    assert "inference" not in row["evidence"]


TF32_GEMM = "cutlass_80_tensorop_s1688gemm_256x128_32x3_tn_align4"  # FP32 inputs on TF32 tensor cores


@pytest.mark.parametrize("dur, fires", [(150, True), (400, False)])
def test_tf32_gemm_near_the_roof_is_told_bf16(tmp_path, dur, fires):
    """17.2 GFLOP on TF32 tensor cores (156 TFLOP/s: 110 µs at the roof) in 150 µs is 73% of the roof
    (≥ 50%: near it); in 400 µs, 27.5% (silent: not near the roof). At bf16 (312 TFLOP/s) it takes
    max(55.1 µs, 50.3 MB / 2039 GB/s = 24.7 µs) = 55.1 µs: the gain is 150 − 55.1 µs."""
    b = TraceBuilder(**A100)
    mm(b, 0, 2048, 2048, 2048, F32, TF32_GEMM, dur)
    found = findings_of(b, tmp_path)
    assert ("lower-precision-tf32" in found) == fires
    assert "fp32-simt-gemm" not in found  # on tensor cores already
    if fires:
        row = found["lower-precision-tf32"]
        assert row["gain_ns"] == pytest.approx(150_000 - 2 * 2048 ** 3 / 312e12 * 1e9)
        assert row["title"] == "TF32 matmuls near the roof: BF16 raises it 2×"
        assert row["evidence"] == (f"1 compute-bound TF32 kernel, 150 µs = 100% of GPU busy (top `{TF32_GEMM}`) at "
                                   "73% of the TF32 roof; BF16 roof 312 TFLOP/s")
        assert row["action"] == "bf16 autocast: `with torch.autocast(\"cuda\", dtype=torch.bfloat16):` (check accuracy)"
        assert row["confidence"] == "medium"


def test_no_fp8_before_hopper(tmp_path):
    b = TraceBuilder(**A100)
    mm(b, 0, 8192, 8192, 8192, BF16, BF16_GEMM, 3800)  # 1.1 TFLOP at 290 of 312 TFLOP/s
    found = findings_of(b, tmp_path)
    assert not [key for key in found if key.startswith("lower-precision")]
    assert not any("fp8" in (row["action"] + row["title"]).lower() for row in found.values())


@pytest.mark.parametrize("m, fires", [(1411, True), (1408, False)])
def test_gemm_dimension_not_a_multiple_of_8(tmp_path, m, fires):
    """[m, 4096] × [4096, 4096] in bf16 for 400 µs (47 GFLOP: 152 µs at the 312 TFLOP/s roof)."""
    b = TraceBuilder(**A100)
    mm(b, 0, m, 4096, 4096, BF16, BF16_GEMM, 400)
    found = findings_of(b, tmp_path)
    assert ("gemm-shape-alignment" in found) == fires
    if fires:
        row = found["gemm-shape-alignment"]
        flops, bytes_ = 2 * m * 4096 * 4096, (m * 4096 + 4096 * 4096 + m * 4096) * 2
        ideal_ns = max(flops / 312e12, bytes_ / A100_PEAKS.memory_bandwidth_bytes_per_s) * 1e9
        assert row["gain_ns"] == pytest.approx(400_000 - ideal_ns)
        assert row["evidence"] == (f"1 GEMM op, 400 µs (top `{BF16_GEMM}`); e.g. [1411, 4096] × [4096, 4096]: "
                                   "1411 not a multiple of 8; the loss depends on the kernel and no aligned GEMM of "
                                   "its format is left to compare (none ran, or rules before claimed them): not "
                                   "modelled for the replay")
        assert row["saving_ns"] is None


def test_a_misaligned_gemm_is_replayed_at_the_aligned_gemms_fraction_of_the_roof(tmp_path):
    """[1408, 4096] × [4096, 4096] bf16 in 400 µs (aligned), then [1411, 4096] × [4096, 4096] in 500 µs
    (misaligned, the last kernel): padded, it reaches the aligned one's fraction of the roof."""
    b = TraceBuilder(**A100)
    mm(b, 0, 1408, 4096, 4096, BF16, BF16_GEMM, 400)
    mm(b, 1000, 1411, 4096, 4096, BF16, BF16_GEMM, 500)
    row = findings_of(b, tmp_path)["gemm-shape-alignment"]

    def ideal(m: int) -> float:
        flops, bytes_ = 2 * m * 4096 * 4096, (m * 4096 + 4096 * 4096 + m * 4096) * 2
        return max(flops / 312e12, bytes_ / A100_PEAKS.memory_bandwidth_bytes_per_s) * 1e9

    reach = ideal(1408) / 400_000
    assert row["gain_ns"] == pytest.approx(500_000 - ideal(1411))
    assert row["saving_ns"] == 500_000 - round(ideal(1411) / reach)  # the last kernel ends that much sooner
    assert row["evidence"].endswith(f"1 of 1 kernels modelled: padded, each GEMM reaches the fraction of its roof "
                                    f"that the rank's aligned GEMMs of its format reach (BF16 {reach:.0%})")


def test_a_latency_bound_misaligned_gemm_counts_once(tmp_path):
    """[141, 512] × [512, 2048] bf16 in 20 µs: under 2 µs of work at the roof, latency-bound. Its
    recoverable time is the latency finding's only (until 2026-11-28 gemm-shape-alignment counted it
    too, and the findings added up to more than the GPU's busy time)."""
    b = TraceBuilder(**A100)
    mm(b, 0, 141, 512, 2048, BF16, BF16_GEMM, 20)
    found = findings_of(b, tmp_path)
    assert "gemm-shape-alignment" not in found
    assert found["latency-bound-kernels"]["gain_ns"] <= 20_000


def test_gemm_alignment_example_is_the_costliest_misaligned_op(tmp_path):
    """Several misaligned GEMMs: the evidence shows the one whose kernels took longest, on every run."""
    b = TraceBuilder(**A100)
    for start, (m, n, dur) in enumerate([(1411, 4096, 400), (1411, 30522, 3000), (1001, 4096, 300)]):
        mm(b, start * 5000, m, 4096, n, BF16, BF16_GEMM, dur)
    row = findings_of(b, tmp_path)["gemm-shape-alignment"]
    assert row["evidence"] == (f"3 GEMM ops, 3.7 ms (top `{BF16_GEMM}`); e.g. [1411, 4096] × [4096, 30522]: "
                               "1411, 30522 not a multiple of 8; the loss depends on the kernel and no aligned GEMM "
                               "of its format is left to compare (none ran, or rules before claimed them): not "
                               "modelled for the replay")


@pytest.mark.parametrize("size, dur, fires", [(64, 5, True), (2048, 60, False)])
def test_latency_bound_kernels(tmp_path, size, dur, fires):
    b = TraceBuilder(**A100)
    mm(b, 0, size, size, size, BF16, BF16_GEMM, dur)
    found = findings_of(b, tmp_path)
    assert ("latency-bound-kernels" in found) == fires
    if fires:
        ideal_ns = 3 * 64 * 64 * 2 / A100_PEAKS.memory_bandwidth_bytes_per_s * 1e9
        row = found["latency-bound-kernels"]
        assert row["gain_ns"] == pytest.approx(5_000 - ideal_ns)
        assert row["evidence"] == (f"1 latency-bound kernel, 5 µs = 100% of GPU busy (top `{BF16_GEMM}`), each under "
                                   "2 µs of work at the roof; no two of them of one kernel back to back: not modelled "
                                   "for the replay")
        assert row["saving_ns"] is None


def test_a_run_of_small_kernels_is_replayed_as_one_batched_op(tmp_path):
    """Three 64³ bf16 matmuls, kernels [20, 25], [30, 35], [40, 45] on one stream, each started by its
    launch: batched, the run takes its longest kernel's 5 µs, each kernel 5/3 µs of it (its share);
    the last one still starts at 40 (its launch): the window ends 5 − 5/3 µs sooner."""
    b = TraceBuilder(**A100)
    for start in (0, 10, 20):
        mm(b, start, 64, 64, 64, BF16, BF16_GEMM, 5)
    row = findings_of(b, tmp_path)["latency-bound-kernels"]
    assert row["evidence"].endswith("; 3 of them in runs of one kernel back to back, modelled as one batched op per "
                                    "run")
    assert row["saving_ns"] == 5_000 - round(5_000 / 3)
    assert row["saving_ns"] <= row["gain_ns"]


def copies(kind: str) -> tuple[TraceBuilder, dict[str, str]]:
    """Two 1 MiB host-to-device copies of 40 µs and 60 µs, named pageable or pinned."""
    b = TraceBuilder(**A100)
    for start, dur in ((0, 40), (100, 60)):
        op = b.cpu_op("aten::copy_", start, 10)
        corr = b.launch(start + 1, 5, name="cudaMemcpyAsync", external_id=op)
        b.memcpy(corr, start + 10, dur)
    return b, {"Memcpy HtoD (Pinned -> Device)": f"Memcpy HtoD ({kind} -> Device)"}


@pytest.mark.parametrize("kind, fires", [("Pageable", True), ("Pinned", False)])
def test_pageable_host_to_device_copies(tmp_path, kind, fires):
    b, rename = copies(kind)
    found = findings_of(b, tmp_path, rename)
    assert ("pageable-h2d" in found) == fires
    if fires:
        row = found["pageable-h2d"]
        assert row["gain_ns"] == 100_000
        assert row["evidence"] == "2 pageable HtoD copies, 100 µs on the GPU (top op `aten::copy_`)"
        assert "non_blocking=True" in row["action"]


@pytest.mark.parametrize("shapes, fires", [(False, True), (True, False)])
def test_unrecorded_shapes_ask_for_record_shapes(tmp_path, shapes, fires):
    b = TraceBuilder(**A100)
    mm(b, 0, 2048, 2048, 2048, BF16, BF16_GEMM, 100, shapes=shapes)
    found = findings_of(b, tmp_path)
    assert ("record-shapes" in found) == fires
    if fires:
        row = found["record-shapes"]
        assert row["gain_ns"] is None
        assert row["evidence"] == "100 µs = 100% of GPU busy has no FLOP/byte model (no shapes recorded)"
        assert "record_shapes=True" in row["action"]


B200 = known_device("b200")


@pytest.mark.parametrize("dur, fires", [(3800, True), (38_000, False)])
def test_bf16_at_the_a100_roof_is_told_a_bigger_gpu(tmp_path, dur, fires):
    """1.1 TFLOP of bf16 in 3.8 ms is 93% of the A100's 312 TFLOP/s and the A100 has no FP8: the
    only faster roof is another GPU's, the highest NVIDIA bf16 roof of the table (B200). In 38 ms
    (9%) the kernel is far from the roof: silent."""
    b = TraceBuilder(**A100)
    mm(b, 0, 8192, 8192, 8192, BF16, BF16_GEMM, dur)
    found = findings_of(b, tmp_path)
    assert ("bigger-gpu-bf16" in found) == fires
    assert not [key for key in found if key.startswith("lower-precision")]
    if fires:
        row = found["bigger-gpu-bf16"]
        flops, bytes_ = 2 * 8192 ** 3, 3 * 8192 ** 2 * 2
        best = max(d.peak_flops("bf16", True) or 0 for d in DEVICE_TABLE if d.display_name.startswith("NVIDIA"))
        assert best == B200.peak_flops("bf16", True)
        at_best = max(flops / best, bytes_ / B200.memory_bandwidth_bytes_per_s) * 1e9
        assert row["gain_ns"] == pytest.approx(3_800_000 - at_best)
        assert row["evidence"] == (f"1 compute-bound BF16 kernel, 3.8 ms = 100% of GPU busy (top `{BF16_GEMM}`) at "
                                   f"93% of the BF16 roof 312 TFLOP/s; {B200.display_name}: 2250 TFLOP/s (7.21×)")
        assert B200.display_name in row["action"] and row["confidence"] == "low"


def test_bigger_gpu_stays_silent_where_a_lower_format_exists(tmp_path):
    b = TraceBuilder(**H100)
    mm(b, 0, 8192, 8192, 8192, BF16, H100_GEMM, 1200)  # 93% of the H100's bf16 roof: FP8 is the advice
    found = findings_of(b, tmp_path)
    assert "lower-precision-bf16" in found and not [key for key in found if key.startswith("bigger-gpu")]


def test_misaligned_gemms_are_those_the_shape_rule_names():
    """`_misaligned` (on the shapes, in polars) against the rule written out per op: a last or
    second-to-last size of an input of two or more dimensions that is no multiple of 8 (fp16,
    bf16) or 16 (fp8); 1-D inputs, missing shapes and missing sizes do not count."""
    from traceanalyze.analysis.findings.rules_kernels import ALIGNMENT, _misaligned

    ops = pl.DataFrame({
        "op_id": list(range(9)),
        "compute_dtype": ["fp16", "bf16", "fp8", "fp8", "fp16", "bf16", "fp16", "fp16", "fp8"],
        "input_dims": [[[64, 128], [128, 256]], [[64, 130], [130, 256]], [[16, 32], [32, 48]], [[8, 16]],
                       [[7], [3, 8, 16]], None, [[4, 8, 12], None], [[None, 16], [16, 8]], [[16, 16, 3, 32]]],
    }, schema={"op_id": pl.Int64, "compute_dtype": pl.String, "input_dims": pl.List(pl.List(pl.Int64))})

    def by_hand(dtype, dims):
        shapes = [shape for shape in (dims or []) if shape is not None and len(shape) >= 2]
        return any(size % ALIGNMENT[dtype] for shape in shapes for size in shape[-2:] if size is not None)

    expected = [by_hand(dtype, dims) for dtype, dims in ops.select("compute_dtype", "input_dims").iter_rows()]
    assert _misaligned(ops).to_list() == expected == [False, True, False, True, False, False, True, False, True]
