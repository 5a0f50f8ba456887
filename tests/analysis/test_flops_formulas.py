"""Formulas FlopCounterMode does not count (it registers matmuls, convolutions and attention only):
normalisation backward ops, RMS norm, softmax backward, gathers, Triton kernels. Argument layouts
come from the real PyTorch profiler on CPU; the expected numbers are the formulas of docs/flops.md
written out by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from traceanalyze.analysis.costs.family import OpCost
from traceanalyze.analysis.costs.registry import has_formula, op_cost_or_reason

F32 = "float"
N, C, H, W = 4, 6, 5, 5  # group/batch norm input
B, T, D = 4, 6, 8        # layer/RMS norm and softmax input


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> dict[str, list[dict]]:
    """cpu_op events by name from one profiled CPU run of forward and backward passes."""
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile

    f = torch.nn.functional
    x = torch.randn(B, T, D, requires_grad=True)
    w, b = torch.randn(D, requires_grad=True), torch.randn(D, requires_grad=True)
    xg = torch.randn(N, C, H, W, requires_grad=True)
    gw, gb = torch.randn(C, requires_grad=True), torch.randn(C, requires_grad=True)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        f.layer_norm(x, [D], w, b).sum().backward()
        f.rms_norm(x, [D], w).sum().backward()
        f.group_norm(xg, 3, gw, gb).sum().backward()
        f.batch_norm(xg, torch.zeros(C), torch.ones(C), gw, gb, training=True).sum().backward()
        f.softmax(x, -1).sum().backward()
        plain = x.detach()
        torch.index_select(plain, 1, torch.tensor([0, 2, 3]))
        torch.gather(plain, 2, torch.zeros(B, T, 3, dtype=torch.long))
        plain[torch.tensor([0, 2, 3])]
    path = tmp_path_factory.mktemp("formulas") / "trace.json"
    prof.export_chrome_trace(str(path))
    events: dict[str, list[dict]] = {}
    for event in json.loads(Path(path).read_text())["traceEvents"]:
        if event.get("cat") == "cpu_op":
            events.setdefault(event["name"], []).append(event)
    return events


def cost_of(event: dict) -> OpCost | str:
    args = event["args"]
    return op_cost_or_reason(event["name"], args.get("Input Dims"), args.get("Input type"),
                             args.get("Concrete Inputs"), args.get("Input Strides"))


def one(recorded, name) -> OpCost:
    assert name in recorded, f"{name} not recorded"
    result = cost_of(recorded[name][0])
    assert isinstance(result, OpCost), (name, result)
    return result


def test_layer_norm_backward_is_twice_the_forward(recorded):
    numel, rows = B * T * D, B * T
    got = one(recorded, "aten::native_layer_norm_backward")
    assert got.flops == 2 * 7 * numel
    # reads grad_out, input, mean, rstd (one per row), weight, bias; writes grad input, weight, bias
    assert got.bytes == (2 * numel + 2 * rows + 2 * D + numel + 2 * D) * 4


def test_rms_norm_forward(recorded):
    numel = B * T * D
    fused = one(recorded, "aten::_fused_rms_norm")
    assert fused.flops == 4 * numel and not fused.composite
    assert fused.bytes == (numel + D + numel + B * T) * 4  # x, weight → y, rstd
    wrapper = one(recorded, "aten::rms_norm")
    assert wrapper.composite and wrapper.flops == 4 * numel


def test_rms_norm_backward_by_the_documented_layout():
    # _fused_rms_norm_backward(grad_out, input, normalized_shape, rstd, weight, output_mask)
    numel, rows = B * T * D, B * T
    got = op_cost_or_reason("aten::_fused_rms_norm_backward", [[B, T, D], [B, T, D], [], [B, T, 1], [D], []],
                            [F32, F32, "ScalarList", F32, F32, "ScalarList"],
                            ["", "", f"[{D}]", "", "", "[True, True]"])
    assert got.flops == 2 * 4 * numel
    assert got.bytes == (2 * numel + rows + D + numel + D) * 4


def test_group_norm_backward(recorded):
    numel = N * C * H * W
    got = one(recorded, "aten::native_group_norm_backward")
    assert got.flops == 2 * 7 * numel
    # reads grad_out, input, mean and rstd (N·G each), weight; writes grad input, weight, bias
    assert got.bytes == (2 * numel + 2 * N * 3 + C + numel + 2 * C) * 4


def test_batch_norm_backward(recorded):
    numel = N * C * H * W
    got = one(recorded, "aten::native_batch_norm_backward")
    assert got.flops == 2 * 7 * numel
    # reads grad_out, input, weight, running mean/var, saved mean/invstd; writes grad input, weight, bias
    assert got.bytes == (2 * numel + 5 * C + numel + 2 * C) * 4


def test_softmax_backward(recorded):
    numel = B * T * D
    got = one(recorded, "aten::_softmax_backward_data")
    assert got.flops == 4 * numel
    assert got.bytes == 3 * numel * 4  # grad_output and output read, grad_input written


def test_gathers_read_only_the_gathered_elements(recorded):
    select = one(recorded, "aten::index_select")  # dim 1, three indices
    out = B * 3 * D
    assert select.flops == 0 and select.bytes == 3 * 8 + 2 * out * 4
    gather = one(recorded, "aten::gather")  # index [B, T, 3]
    out = B * T * 3
    assert gather.flops == 0 and gather.bytes == out * 8 + 2 * out * 4


def test_index_with_unrecorded_indices_says_why(recorded):
    # PyTorch records `indices` (a list of optional tensors) with an empty type and no shape
    reason = cost_of(recorded["aten::index"][0])
    assert reason == "shape arguments incomplete: indices recorded without shapes (output size unknown)"
    listed = op_cost_or_reason("aten::index", [[B, T, D], [[3]]], [F32, "TensorList"], ["", ""])
    assert listed.bytes == 3 * 8 + 2 * 3 * T * D * 4  # the TensorList form: gathered rows only


def test_index_put_without_index_shapes_counts_the_values():
    # as recorded in 2023 traces: self, indices (empty type), values, accumulate, unsafe
    put = op_cost_or_reason("aten::_index_put_impl_", [[16, 27, 27], [], [16, 351], [], []],
                            [F32, "", F32, "Scalar", "Scalar"], None)
    values = 16 * 351
    assert put.flops == 0 and put.bytes == values * 4 + values * 4  # values read, as many elements written
    accumulate = op_cost_or_reason("aten::index_put_", [[16, 27, 27], [], [16, 351], []],
                                   [F32, "", F32, "Scalar"], ["", "", "", "True"])
    assert accumulate.flops == values and accumulate.bytes == values * 4 + 2 * values * 4


def test_triton_kernels_touch_each_pointer_argument_once():
    # torch.compile records the kernel as an op with its pointer arguments' shapes
    dims, types = [[10, 10], [10, 10], [10, 10], []], [F32, F32, F32, "Scalar"]
    pointwise = op_cost_or_reason("triton_poi_fused_add_cos_sin_0", dims, types, ["", "", "", "100"])
    assert (pointwise.flops, pointwise.bytes, pointwise.model) == (100, 3 * 100 * 4, "elementwise")
    reduction = op_cost_or_reason("triton_red_fused_sum_1", [[64, 1024], [64], []], [F32, F32, "Scalar"], None)
    assert (reduction.flops, reduction.bytes, reduction.model) == (64 * 1024, (64 * 1024 + 64) * 4, "reduction")
    template = op_cost_or_reason("triton_tem_fused_mm_2", [[64, 64], [64, 64], [64, 64]], [F32] * 3, None)
    assert isinstance(template, str) and "Triton template" in template
    assert has_formula("triton_per_fused_softmax_3") and not has_formula("triton_tem_fused_mm_2")


def test_custom_ops_with_clear_semantics():
    bf16, fp8 = "c10::BFloat16", "c10::Float8_e4m3fn"
    t, h = 888, 2880  # argument layouts as recorded by vLLM and fbgemm
    fused = op_cost_or_reason("_C::fused_add_rms_norm", [[t, h], [t, h], [h], []], [bf16, bf16, bf16, "Scalar"], None)
    assert fused.flops == 5 * t * h and fused.bytes == (2 * t * h + h + 2 * t * h) * 2
    norm = op_cost_or_reason("_C::rms_norm", [[t, h], [t, h], [h], []], [bf16, bf16, bf16, "Scalar"], None)
    assert norm.flops == 4 * t * h and norm.bytes == (t * h + h + t * h) * 2
    quant = op_cost_or_reason("_C::static_scaled_fp8_quant", [[t, 512], [t, 512], []], [fp8, bf16, F32], None)
    assert quant.flops == t * 512 and quant.bytes == t * 512 * 2 + 4 + t * 512 * 1  # input, 0-d fp32 scale, fp8 out
    rotary = op_cost_or_reason("_C::rotary_embedding", [[t], [t, 512], [t, 64], [], [131072, 64], []],
                               ["long int", bf16, bf16, "Scalar", bf16, "Scalar"], None)
    qk = t * 512 + t * 64
    assert rotary.flops == 3 * qk and rotary.bytes == t * 8 + t * 64 * 2 + 2 * qk * 2  # only t cache rows read
    permute = op_cost_or_reason("fbgemm::permute_2D_sparse_data", [[24], [24, 16], [768], [], []],
                                ["int", "int", "int", "", "Scalar"], None)
    assert permute.flops == 0 and permute.bytes == (24 + 24 * 16 + 768) * 4 + (24 * 16 + 768) * 4
    cumsum = op_cost_or_reason("fbgemm::asynchronous_complete_cumsum", [[384]], ["int"], None)
    assert cumsum.bytes == (384 + 385) * 4
    moe = op_cost_or_reason("vllm::moe_forward", [[t, 3072], [t, 128], []], [bf16, bf16, ""], None)
    assert moe.startswith("op not modelled: vllm::moe_forward (the experts' weights are not among its arguments")


def test_fbgemm_and_vllm_custom_ops_read_and_write_what_their_arguments_say():
    long = "long"
    # fbgemm::bounds_check_indices(rows_per_table, indices, offsets, mode, warning, weights), hta_a100_large_training
    check = op_cost_or_reason("fbgemm::bounds_check_indices", [[1], [61072], [8193], [], [1], [61072]],
                              [long, long, long, "Scalar", long, F32], None)
    assert check.flops == 61072 and check.bytes == (1 + 61072 + 8193 + 1) * 8 + 61072 * 4
    # row-wise FP8: 256 floats per row → 256 bytes + a float scale and bias (hta_sampled_rank0_no_device_props)
    rows = 1492704
    quant = op_cost_or_reason("fbgemm::FloatToFP8RowwiseQuantized", [[rows, 256], []], [F32, "Scalar"], None)
    assert quant.flops == 2 * rows * 256 and quant.bytes == rows * 256 * 4 + rows * (256 + 8)
    odd = op_cost_or_reason("fbgemm::FloatToFP8RowwiseQuantized", [[3, 10], []], [F32, "Scalar"], None)
    assert odd.bytes == 3 * 10 * 4 + 3 * (12 + 8)  # the row padded to a multiple of 4
    back = op_cost_or_reason("fbgemm::FP8RowwiseQuantizedToFloat", [[rows, 264], []], ["unsigned char", "Scalar"], None)
    assert back.flops == rows * 256 and back.bytes == rows * 264 + rows * 256 * 4 and "float assumed" in back.note
    half = op_cost_or_reason("fbgemm::FP8RowwiseQuantizedToFloat", [[rows, 264], [], []],
                             ["unsigned char", "Scalar", "Scalar"], ["", "True", "1"])
    assert half.bytes == rows * 264 + rows * 256 * 2 and half.dtype == "fp16"
    hfp8 = op_cost_or_reason("fbgemm::FloatToHFP8Quantized", [[1000], [], [], []], [F32] + ["Scalar"] * 3, None)
    assert hfp8.flops == 1000 and hfp8.bytes == 1000 * 4 + 1000
    unhfp8 = op_cost_or_reason("fbgemm::HFP8QuantizedToFloat", [[1000], [], []], ["unsigned char", "Scalar", "Scalar"],
                               None)
    assert unhfp8.bytes == 1000 + 1000 * 4
    permute_back = op_cost_or_reason(
        "torch::autograd::CppNode<fbgemm_gpu::PermutePooledEmbsFunction<&fbgemm_gpu::permute_pooled_embs_gpu> >",
        [[1024, 70904]], [F32], None)
    assert permute_back.flops == 0 and permute_back.bytes == 2 * 1024 * 70904 * 4
    # vLLM's KV-cache write, as recorded in tracelens_b200_vllm_decode_tp8_rank0: an fp8 cache
    bf16, t = "c10::BFloat16", 888
    cache = op_cost_or_reason(
        "_C_cache_ops::reshape_and_cache_flash",
        [[t, 1, 64], [t, 1, 64], [4213816, 16, 1, 64], [4213816, 16, 1, 64], [t], [], [], []],
        [bf16, bf16, "unsigned char", "unsigned char", "long int", "", F32, F32], None)
    # key, value, slot mapping and the two 0-dim float scales read; only the new slots of each cache written
    assert cache.flops == 0 and cache.bytes == 2 * t * 64 * 2 + t * 8 + 2 * 4 + 2 * t * 64 * 1
    attention = op_cost_or_reason("vllm::unified_attention_with_output", [[t, 8, 64]] * 4 + [[]] * 3,
                                  ["c10::Float8_e4m3fn", bf16, bf16, bf16, "", "", ""], None)
    assert "context lengths" in attention
