"""FLOPs and bytes per CPU op: exact hand-computed cases, PyTorch's own FlopCounterMode as the
reference for the ops it counts (shapes taken from a real profiler export), and coverage on the
real traces in ../shared/traces."""

from __future__ import annotations

import bisect
import gzip
import json
import math
from collections import Counter, defaultdict
from pathlib import Path

import polars as pl
import pytest

from shared_traces import shared_trace
from traceanalyze.analysis.costs.family import OpCost
from traceanalyze.analysis.costs.registry import op_cost, op_cost_or_reason
from traceanalyze.analysis.costs.table import OP_COSTS_SCHEMA, op_costs

BF16, F32 = "c10::BFloat16", "float"


def cost(name, dims, types, concrete=None, strides=None) -> OpCost:
    result = op_cost_or_reason(name, dims, types, concrete if concrete is not None else [""] * len(dims), strides)
    assert isinstance(result, OpCost), result
    return result


# --------------------------------------------------------------------------------------------
# Exact cases
# --------------------------------------------------------------------------------------------


def test_bf16_mm_is_2mnk_flops_and_every_tensor_once_at_two_bytes():
    m, k, n = 128, 64, 32
    c = cost("aten::mm", [[m, k], [k, n]], [BF16, BF16])
    assert c.flops == 2 * m * n * k
    assert c.bytes == (m * k + k * n + m * n) * 2
    assert (c.model, c.composite, c.dtype) == ("matmul", False, "bf16")


def test_addmm_counts_the_product_and_reads_the_bias():
    c = cost("aten::addmm", [[512], [141, 512], [512, 512], [], []], [BF16, BF16, BF16, "Scalar", "Scalar"],
             ["", "", "", "1", "1"])
    assert c.flops == 2 * 141 * 512 * 512
    assert c.bytes == (512 + 141 * 512 + 512 * 512 + 141 * 512) * 2


def test_bmm_and_baddbmm():
    assert cost("aten::bmm", [[8, 4, 16], [8, 16, 5]], [F32, F32]).flops == 2 * 8 * 4 * 5 * 16
    c = cost("aten::baddbmm", [[8, 4, 5], [8, 4, 16], [8, 16, 5], [], []], [F32] * 3 + ["Scalar"] * 2)
    assert c.flops == 2 * 8 * 4 * 5 * 16
    assert c.bytes == (8 * 4 * 5 + 8 * 4 * 16 + 8 * 16 * 5 + 8 * 4 * 5) * 4


def test_wrappers_are_flagged_composite_and_cost_like_their_child():
    linear = cost("aten::linear", [[1, 141, 512], [2048, 512], [2048]], [BF16] * 3)
    addmm = cost("aten::addmm", [[2048], [141, 512], [512, 2048], [], []], [BF16] * 3 + ["Scalar"] * 2)
    assert linear.composite and not addmm.composite
    assert linear.flops == addmm.flops
    matmul = cost("aten::matmul", [[1024, 96, 50], [50, 15]], [F32, F32])
    assert matmul.composite and matmul.flops == 2 * 1024 * 96 * 15 * 50
    assert cost("aten::matmul", [[7], [7]], [F32, F32]).flops == 14  # dot


def test_scaled_mm_output_dtype_comes_from_out_dtype():
    c = cost("aten::_scaled_mm", [[32, 64], [64, 16], [], [], [], [], [], []],
             ["c10::Float8_e4m3fn"] * 2 + [F32, F32, "", "", "Scalar", "Scalar"],
             ["", "", "", "", "", "", "15", "False"])
    assert c.flops == 2 * 32 * 16 * 64
    assert c.bytes == 32 * 64 + 64 * 16 + 4 + 4 + 32 * 16 * 2  # fp8 operands, fp32 scales, bf16 output
    assert c.dtype == "fp8"


def test_conv2d_with_stride_and_padding():
    # input [2,3,16,16], weight [4,3,3,3], stride 2, padding 1 -> output [2,4,8,8]
    c = cost("aten::convolution", [[2, 3, 16, 16], [4, 3, 3, 3]] + [[]] * 7,
             [F32, F32, "", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"],
             ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"])
    out = 2 * 4 * 8 * 8
    assert c.flops == 2 * out * 3 * 3 * 3
    assert c.bytes == (2 * 3 * 16 * 16 + 4 * 3 * 3 * 3 + out) * 4
    assert c.model == "conv" and c.composite


def test_grouped_and_transposed_conv():
    depthwise = cost("aten::cudnn_convolution", [[1, 8, 10, 10], [8, 1, 3, 3]] + [[]] * 7,
                     [F32, F32] + ["ScalarList"] * 3 + ["Scalar"] * 4,
                     ["", "", "[1, 1]", "[1, 1]", "[1, 1]", "8", "", "", ""])
    assert depthwise.flops == 2 * 1 * 8 * 10 * 10 * 9
    transposed = cost("aten::convolution", [[1, 4, 5, 5], [4, 2, 3, 3]] + [[]] * 7,
                      [F32, F32, "", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"],
                      ["", "", "", "[2, 2]", "[0, 0]", "[1, 1]", "True", "[0, 0]", "1"])
    assert transposed.flops == 2 * 1 * 5 * 5 * (4 * 2 * 3 * 3)  # every input point times the kernel
    assert transposed.bytes == (4 * 25 + 72 + 2 * 11 * 11) * 4  # output (5-1)*2+3 = 11


def test_conv_backward_follows_output_mask():
    dims = [[2, 4, 8, 8], [2, 3, 16, 16], [4, 3, 3, 3]] + [[]] * 8
    types = [F32] * 3 + ["ScalarList"] * 4 + ["Scalar", "ScalarList", "Scalar", "ScalarList"]
    concrete = ["", "", "", "[0]", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1", "[True, True, False]"]
    forward = 2 * 2 * 4 * 8 * 8 * 27
    assert cost("aten::convolution_backward", dims, types, concrete).flops == 2 * forward
    concrete[-1] = "[False, True, False]"
    weight_only = cost("aten::convolution_backward", dims, types, concrete)
    assert weight_only.flops == forward
    assert weight_only.bytes == (2 * 4 * 64 + 2 * 3 * 256 + 108) * 4 + 108 * 4  # reads + grad_weight


def test_causal_attention_is_half_of_non_causal():
    dims = [[1, 8, 141, 64]] * 3 + [[]] * 4
    types = [BF16] * 3 + ["Scalar"] * 4
    full = cost("aten::_scaled_dot_product_flash_attention", dims, types, ["", "", "", "0.", "False", "False", "0.125"])
    causal = cost("aten::_scaled_dot_product_flash_attention", dims, types,
                  ["", "", "", "0.", "True", "False", "0.125"])
    assert full.flops == 4 * 1 * 8 * 141 * 141 * 64
    assert causal.flops == full.flops / 2
    assert "causal" in causal.note and full.bytes == causal.bytes


def test_flash_kernel_layout_is_batch_seq_heads_dim():
    # aten::_flash_attention_forward takes [B, S, H, D] (tracelens_h100_bert_small.json.gz)
    dims = [[1, 141, 8, 64]] * 3 + [[]] * 12
    types = [BF16] * 3 + ["", "", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", "", "", "", ""]
    concrete = ["", "", "", "", "", "141", "141", "0.", "False", "False", "0.125", "", "", "", ""]
    assert cost("aten::_flash_attention_forward", dims, types, concrete).flops == 4 * 8 * 141 * 141 * 64


def test_variable_length_attention_assumes_equal_sequences():
    dims = [[300, 4, 64], [300, 4, 64], [300, 4, 64], [4], [4]] + [[]] * 10
    types = [BF16] * 3 + ["int", "int"] + ["Scalar"] * 10
    concrete = [""] * 5 + ["100", "100", "0.", "False", "False"] + [""] * 5
    c = cost("aten::_flash_attention_forward", dims, types, concrete)
    assert c.flops == 3 * 4 * 4 * 100 * 100 * 64  # three sequences of 100 tokens
    assert "equal sequence lengths" in c.note


def test_broadcasting_elementwise_writes_the_broadcast_shape():
    c = cost("aten::add", [[4, 1], [1, 8], []], [F32, F32, "Scalar"], ["", "", "1"])
    assert c.flops == 32
    assert c.bytes == (4 + 8 + 32) * 4
    bias = cost("aten::add", [[141, 512], [512], []], [BF16, BF16, "Scalar"], ["", "", "1"])
    assert bias.bytes == (141 * 512 * 2 + 512) * 2


def test_elementwise_dtypes_in_place_and_out_tensors():
    assert cost("aten::gt", [[1024], []], ["long int", "Scalar"], ["", "0"]).bytes == 1024 * 8 + 1024  # bool out
    mixed = cost("aten::mul", [[10], [10]], [BF16, BF16])
    assert mixed.bytes == 30 * 2
    promoted = cost("aten::add", [[10], [10], []], [BF16, "c10::Half", "Scalar"])
    assert promoted.bytes == 10 * 2 + 10 * 2 + 10 * 4  # bf16 + fp16 -> fp32
    in_place = cost("aten::add_", [[1024, 96, 15], [15], []], [F32, F32, "Scalar"])
    assert in_place.bytes == (1024 * 96 * 15 * 2 + 15) * 4
    out_param = cost("aten::logical_and", [[1024, 1], [1024, 1], [1024, 1]], ["bool"] * 3)
    assert out_param.bytes == 3 * 1024  # the out= tensor is written, not read
    resized = cost("aten::abs", [[4096], [0]], [F32, F32])
    assert resized.bytes == 2 * 4096 * 4
    assert cost("aten::addcmul_", [[6], [6], [6], []], [F32] * 3 + ["Scalar"]).flops == 18


def test_copies_fills_views_and_dropout():
    assert cost("aten::copy_", [[16, 64], [16, 64], []], [F32, BF16, "Scalar"]).bytes == 16 * 64 * (2 + 4)
    to_bf16 = cost("aten::_to_copy", [[100], [], [], [], [], [], []], [F32, "Scalar", "", "", "", "Scalar", ""],
                   ["", "15", "", "", "", "False", ""])
    assert to_bf16.bytes == 100 * 4 + 100 * 2
    assert cost("aten::transpose", [[512, 512], [], []], [BF16, "Scalar", "Scalar"]).bytes == 0
    assert cost("aten::zeros", [[]] * 5, ["ScalarList", "", "", "", "Scalar"],
                ["[2, 3]", "", "", "", "False"]).bytes == 24
    cat = cost("aten::cat", [[[2, 3], [4, 3]], []], ["TensorList", "Scalar"], ["", "0"])
    assert cat.bytes == (6 + 12) * 4 * 2
    contiguous = cost("aten::contiguous", [[4, 8], []], [F32, "Scalar"], ["", "0"], [[8, 1], []])
    assert contiguous.bytes == 0 and contiguous.model == "view"
    assert cost("aten::contiguous", [[4, 8], []], [F32, "Scalar"], ["", "0"], [[1, 4], []]).bytes == 2 * 32 * 4
    assert cost("aten::dropout", [[1, 141, 512], [], []], [BF16, "Scalar", "Scalar"],
                ["", "0.1", "False"]).bytes == 0  # eval mode: identity
    train = cost("aten::native_dropout", [[100], [], []], [F32, "Scalar", "Scalar"], ["", "0.1", "True"])
    assert train.bytes == 100 * 4 * 2 + 100  # input, output, bool mask


def test_norms_softmax_embedding_and_losses():
    ln = cost("aten::native_layer_norm", [[1, 141, 512], [], [512], [512], []],
              [BF16, "ScalarList", BF16, BF16, "Scalar"],
              ["", "[512]", "", "", "1e-12"])
    assert ln.flops == 7 * 141 * 512
    assert ln.bytes == (141 * 512 * 2 + 2 * 512) * 2 + 2 * 141 * 4  # x, gamma, beta, y; fp32 mean/rstd
    softmax = cost("aten::_softmax", [[16, 8, 128, 128], [], [], [16, 8, 128, 128]], [F32, "Scalar", "Scalar", F32],
                   ["", "3", "False", ""])
    assert softmax.flops == 5 * 16 * 8 * 128 * 128 and softmax.bytes == 2 * 16 * 8 * 128 * 128 * 4
    emb = cost("aten::embedding", [[30522, 512], [1, 141], [], [], []],
               [BF16, "long int", "Scalar", "Scalar", "Scalar"])
    assert emb.bytes == 141 * 8 + 2 * 141 * 512 * 2  # only the gathered rows are read
    nll = cost("aten::nll_loss_forward", [[10, 50257], [10], [], [], []], [F32, "long int", "", "Scalar", "Scalar"],
               ["", "", "", "1", "-100"])
    assert nll.bytes == 10 * 8 + 10 * 4 + 4 + 4
    ce = cost("aten::cross_entropy_loss", [[32, 1000], [32], [], [], [], []],
              [F32, "long int", "", "Scalar", "Scalar", "Scalar"],
              ["", "", "", "1", "-100", "0."])
    assert ce.composite and ce.flops == 5 * 32 * 1000 + 32


def test_reductions_use_the_recorded_dims():
    full = cost("aten::sum", [[2, 4, 8, 8], []], [F32, ""])
    assert full.bytes == (512 + 1) * 4
    by_dim = cost("aten::sum", [[16, 8, 128, 128], [], [], []], [F32, "ScalarList", "Scalar", ""],
                  ["", "[1]", "False", ""])
    assert by_dim.flops == 16 * 8 * 128 * 128 and by_dim.bytes == (16 * 8 * 128 * 128 + 16 * 128 * 128) * 4
    unknown = op_cost("aten::sum", [[1024, 40], [], [], []], [F32, "", "Scalar", ""], None)
    assert unknown.bytes == (1024 * 40 + 1) * 4 and "lower bound" in unknown.note


def test_foreach_needs_every_list_element_shape():
    c = cost("aten::_foreach_add_", [[[3, 4], [5]], [[3, 4], [5]], []], ["TensorList", "TensorList", "Scalar"],
             ["", "", "0.5"])
    assert c.flops == 17 and c.bytes == 3 * 17 * 4 and c.model == "optimizer"
    assert c.note == "TensorList dtype not recorded: fp32 assumed"
    truncated = op_cost_or_reason("aten::_foreach_add_", [[3, 4], [3, 4], []], ["TensorList", "TensorList", "Scalar"],
                                  None)
    assert truncated == "shape arguments incomplete: TensorList shapes not recorded"


def test_reasons_for_what_cannot_be_modelled():
    assert op_cost_or_reason("aten::mm", None, None, None) == "no shapes recorded"
    assert op_cost_or_reason("aten::frobnicate", [[2]], [F32], [""]) == "op not modelled: aten::frobnicate"
    assert op_cost_or_reason("fbgemm::permute_2D", [[2]], ["int"], [""]) == "op not modelled: fbgemm::permute_2D"
    stale = op_cost_or_reason("aten::linear", [[2048, 1953]] * 3 + [[2048, 1024], [541, 1024], [541]], [F32] * 6, None)
    assert stale.startswith("shape arguments inconsistent: 6 arguments recorded")
    assert op_cost_or_reason("aten::nonzero", [[10]], [F32], [""]) == "output size is data-dependent"
    assert op_cost("aten::mm", [[2, 3], [4, 5]], [F32, F32], None) is None  # inner dims differ


def test_op_costs_frame_trace_flops_win_and_reasons():
    ops = pl.DataFrame(
        {
            "op_id": [1, 2, 3, 4],
            "category": ["cpu_op", "cpu_op", "cpu_op", "user_annotation"],
            "name": ["aten::mm", "aten::mm", "aten::frob", "ProfilerStep#1"],
            "input_dims": [[[2, 3], [3, 4]], [[2, 3], [3, 4]], [[1]], None],
            "input_types": [[F32, F32], [F32, F32], [F32], None],
            "input_strides": [None, None, None, None],
            "concrete_inputs": [["", ""], ["", ""], [""], None],
            "flops": [None, 99.0, None, None],
        },
        schema_overrides={"flops": pl.Float64, "input_strides": pl.List(pl.List(pl.Int64)),
                          "input_dims": pl.List(pl.List(pl.Int64))},
    )
    out = op_costs(ops)
    assert out.schema == OP_COSTS_SCHEMA
    rows = out.rows(named=True)
    assert (rows[0]["flops"], rows[0]["bytes"], rows[0]["flops_source"]) == (48.0, 104.0, "model")
    assert (rows[1]["flops"], rows[1]["bytes"], rows[1]["flops_source"]) == (99.0, 104.0, "trace")
    assert rows[2]["flops"] is None and rows[2]["unmodeled_reason"] == "op not modelled: aten::frob"
    assert rows[3]["unmodeled_reason"] == "user annotation, not an operator"


# --------------------------------------------------------------------------------------------
# Reference: FlopCounterMode on real tensors, shapes from the profiler's exported trace
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def recorded_ops(torch, fn, tmp_path: Path) -> list[dict]:
    """Run `fn` under torch.profiler(record_shapes=True), export, and return the cpu_op events."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        fn()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    return [e for e in json.loads(path.read_text())["traceEvents"] if e.get("cat") == "cpu_op"]


def flop_counts(torch, fn) -> dict[str, int]:
    """FlopCounterMode's counts, keyed like the trace ("aten::mm")."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        fn()
    return {str(op).replace("aten.", "aten::", 1): n for op, n in counter.get_flop_counts()["Global"].items()}


def ours(event: dict) -> float:
    args = event["args"]
    result = op_cost_or_reason(event["name"], args.get("Input Dims"), args.get("Input type"),
                               args.get("Concrete Inputs"), args.get("Input Strides"))
    assert isinstance(result, OpCost), f"{event['name']}: {result} ({args.get('Input Dims')})"
    return result.flops


def assert_matches_flop_counter(torch, fn, tmp_path, same_as: dict[str, str] | None = None):
    """Every op FlopCounterMode counts gets the same FLOPs from op_cost on the recorded event;
    `same_as` maps other recorded ops (wrappers, backend kernels) to the counted op they equal."""
    events = recorded_ops(torch, fn, tmp_path)
    counts = flop_counts(torch, fn)
    assert counts, "FlopCounterMode counted nothing"
    by_name: dict[str, list[dict]] = defaultdict(list)
    for event in events:
        by_name[event["name"]].append(event)
    for name, expected in counts.items():
        assert by_name[name], f"{name} not recorded by the profiler"
        assert sum(ours(e) for e in by_name[name]) == expected, name
    for name, reference in (same_as or {}).items():
        assert by_name[name], f"{name} not recorded by the profiler"
        for event in by_name[name]:
            assert ours(event) == counts[reference] / len(by_name[reference]), name


def test_matmuls_match_flop_counter(torch, tmp_path):
    a, b = torch.randn(33, 17), torch.randn(17, 9)
    x, y = torch.randn(5, 7, 11), torch.randn(5, 11, 3)
    assert_matches_flop_counter(torch, lambda: torch.mm(a, b), tmp_path)
    assert_matches_flop_counter(torch, lambda: torch.addmm(torch.randn(9), a, b, beta=0.5), tmp_path)
    assert_matches_flop_counter(torch, lambda: torch.bmm(x, y), tmp_path)
    assert_matches_flop_counter(torch, lambda: torch.baddbmm(torch.randn(5, 7, 3), x, y), tmp_path)
    weight, bias = torch.randn(13, 17), torch.randn(13)
    assert_matches_flop_counter(torch, lambda: torch.nn.functional.linear(a, weight, bias), tmp_path,
                                same_as={"aten::linear": "aten::addmm"})
    assert_matches_flop_counter(torch, lambda: torch.matmul(x, y), tmp_path, same_as={"aten::matmul": "aten::bmm"})


def test_scaled_mm_matches_flop_counter(torch, tmp_path):
    if not hasattr(torch, "float8_e4m3fn"):
        pytest.skip("this torch has no float8")
    a = torch.randn(32, 64).to(torch.float8_e4m3fn)
    b = torch.randn(16, 64).to(torch.float8_e4m3fn).t()
    one = torch.tensor(1.0)
    try:
        torch._scaled_mm(a, b, one, one, out_dtype=torch.bfloat16)
    except (RuntimeError, NotImplementedError) as error:
        pytest.skip(f"_scaled_mm does not run on this CPU build: {error}")
    assert_matches_flop_counter(torch, lambda: torch._scaled_mm(a, b, one, one, out_dtype=torch.bfloat16), tmp_path)


CONV_CASES = [
    # (input shape, weight shape, kwargs)
    ((2, 3, 16, 16), (4, 3, 3, 3), dict(stride=2, padding=1)),
    ((1, 4, 9, 11), (6, 2, 3, 2), dict(stride=(1, 2), padding=(2, 0), dilation=(2, 1), groups=2)),
    ((2, 8, 7, 7), (8, 1, 3, 3), dict(padding=1, groups=8)),
    ((3, 5, 20), (7, 5, 4), dict(stride=3)),
    ((1, 2, 5, 6, 7), (3, 2, 2, 3, 2), dict(padding=1)),
]


@pytest.mark.parametrize("x_shape, w_shape, kwargs", CONV_CASES)
def test_convolution_forward_matches_flop_counter(torch, tmp_path, x_shape, w_shape, kwargs):
    conv = {3: torch.nn.functional.conv1d, 4: torch.nn.functional.conv2d, 5: torch.nn.functional.conv3d}[len(x_shape)]
    x, w = torch.randn(*x_shape), torch.randn(*w_shape)
    same = {"aten::_convolution": "aten::convolution", f"aten::conv{len(x_shape) - 2}d": "aten::convolution"}
    assert_matches_flop_counter(torch, lambda: conv(x, w, **kwargs), tmp_path, same_as=same)


@pytest.mark.parametrize("input_grad", [True, False])
@pytest.mark.parametrize("x_shape, w_shape, kwargs", [c for c in CONV_CASES if "groups" not in c[2]])
def test_convolution_backward_matches_flop_counter(torch, tmp_path, x_shape, w_shape, kwargs, input_grad):
    # Grouped convolutions are left out: FlopCounterMode counts their weight gradient as if
    # groups=1 (g times too many); op_cost counts the grouped work (docs/flops.md).
    conv = {3: torch.nn.functional.conv1d, 4: torch.nn.functional.conv2d, 5: torch.nn.functional.conv3d}[len(x_shape)]
    x = torch.randn(*x_shape, requires_grad=input_grad)
    w = torch.randn(*w_shape, requires_grad=True)
    assert_matches_flop_counter(torch, lambda: conv(x, w, **kwargs).sum().backward(), tmp_path)


def test_transposed_convolution_matches_flop_counter(torch, tmp_path):
    x = torch.randn(2, 4, 5, 6, requires_grad=True)
    w = torch.randn(4, 3, 3, 2, requires_grad=True)
    run = lambda: torch.nn.functional.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1).sum().backward()
    assert_matches_flop_counter(torch, run, tmp_path, same_as={"aten::_convolution": "aten::convolution"})


def test_grouped_convolution_backward_counts_grouped_work(torch, tmp_path):
    x = torch.randn(1, 4, 8, 8, requires_grad=True)
    w = torch.randn(6, 2, 3, 3, requires_grad=True)
    events = recorded_ops(torch, lambda: torch.nn.functional.conv2d(x, w, groups=2).sum().backward(), tmp_path)
    backward = [e for e in events if e["name"] == "aten::convolution_backward"]
    forward_flops = 2 * 1 * 6 * 6 * 6 * (2 * 3 * 3)
    assert [ours(e) for e in backward] == [2 * forward_flops]


def test_cpu_sdpa_forward_and_backward_match_flop_counter_formulas(torch, tmp_path):
    # FlopCounterMode registers no formula for the CPU kernel (_scaled_dot_product_flash_attention_for_cpu);
    # its sdpa formulas are applied to the recorded shapes instead.
    from torch.utils.flop_counter import sdpa_backward_flop_count, sdpa_flop_count

    q = torch.randn(2, 4, 12, 8, requires_grad=True)
    k = torch.randn(2, 4, 10, 8, requires_grad=True)
    v = torch.randn(2, 4, 10, 8, requires_grad=True)
    for causal in (False, True):
        run = lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal).sum().backward()
        events = recorded_ops(torch, run, tmp_path)
        half = 0.5 if causal else 1.0
        fwd = sdpa_flop_count(q.shape, k.shape, v.shape) * half
        grad_out = (*q.shape[:-1], v.shape[-1])
        bwd = sdpa_backward_flop_count(grad_out, q.shape, k.shape, v.shape) * half
        names = Counter(e["name"] for e in events)
        assert names["aten::_scaled_dot_product_flash_attention_for_cpu"] == 1
        for e in events:
            if e["name"] in ("aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention_for_cpu"):
                assert ours(e) == fwd
            if e["name"] == "aten::_scaled_dot_product_flash_attention_for_cpu_backward":
                assert ours(e) == bwd


def test_gpu_attention_kernels_match_flop_counter_on_meta_tensors(torch, tmp_path):
    """The fused attention kernels have no CPU implementation; on the meta device they still
    dispatch (with their real argument layout) under both the profiler and FlopCounterMode."""
    aten = torch.ops.aten
    batch, heads, seq, dim = 2, 4, 16, 8
    q, k, v = (torch.empty(batch, heads, seq, dim, device="meta", dtype=torch.bfloat16) for _ in range(3))
    out, lse, cq, ck, mq, mk, seed, offset, _ = aten._scaled_dot_product_flash_attention(q, k, v, 0.0, False)
    eff = aten._scaled_dot_product_efficient_attention(q, k, v, None, True, 0.0, False)
    cud = aten._scaled_dot_product_cudnn_attention(q, k, v, None, True, 0.0, False)
    calls = {
        "flash": lambda: aten._scaled_dot_product_flash_attention(q, k, v, 0.0, False),
        "efficient": lambda: aten._scaled_dot_product_efficient_attention(q, k, v, None, True, 0.0, False),
        "cudnn": lambda: aten._scaled_dot_product_cudnn_attention(q, k, v, None, True, 0.0, False),
        "flash_bwd": lambda: aten._scaled_dot_product_flash_attention_backward(
            out, q, k, v, out, lse, cq, ck, seq, seq, 0.0, False, seed, offset),
        "efficient_bwd": lambda: aten._scaled_dot_product_efficient_attention_backward(
            eff[0], q, k, v, None, eff[0], eff[1], eff[2], eff[3], 0.0, [True, True, True, False], False),
        "cudnn_bwd": lambda: aten._scaled_dot_product_cudnn_attention_backward(
            cud[0], q, k, v, cud[0], cud[1], cud[6], cud[7], None, None, None, seq, seq, 0.0, False),
    }
    for name, call in calls.items():
        assert_matches_flop_counter(torch, call, tmp_path)


def test_flash_kernel_entry_points_use_their_bshd_layout(torch, tmp_path):
    """aten::_flash_attention_forward/_efficient_attention_forward (and backward) take
    [batch, seq, heads, dim]. FlopCounterMode reads their shapes as [batch, heads, seq, dim] and
    undercounts; op_cost must equal FlopCounterMode's count for the same problem through the
    [batch, heads, seq, dim] entry points."""
    aten = torch.ops.aten
    batch, heads, seq, dim = 2, 4, 16, 8
    q, k, v = (torch.empty(batch, heads, seq, dim, device="meta", dtype=torch.bfloat16) for _ in range(3))
    qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    reference_fwd = flop_counts(torch, lambda: aten._scaled_dot_product_flash_attention(q, k, v, 0.0, False))
    out, lse, cq, ck, *_ = aten._scaled_dot_product_flash_attention(q, k, v, 0.0, False)
    reference_bwd = flop_counts(torch, lambda: aten._scaled_dot_product_flash_attention_backward(
        out, q, k, v, out, lse, cq, ck, seq, seq, 0.0, False, _[2], _[3]))
    fwd, bwd = sum(reference_fwd.values()), sum(reference_bwd.values())
    flash = aten._flash_attention_forward(qt, kt, vt, None, None, seq, seq, 0.0, False, False)
    eff = aten._efficient_attention_forward(qt, kt, vt, None, None, None, None, None, 0.0, 0, True)
    runs = {
        "aten::_flash_attention_forward": (lambda: aten._flash_attention_forward(
            qt, kt, vt, None, None, seq, seq, 0.0, False, False), fwd),
        "aten::_efficient_attention_forward": (lambda: aten._efficient_attention_forward(
            qt, kt, vt, None, None, None, None, None, 0.0, 0, True), fwd),
        "aten::_flash_attention_backward": (lambda: aten._flash_attention_backward(
            flash[0], qt, kt, vt, flash[0], flash[1], None, None, seq, seq, 0.0, False, flash[2], flash[3]), bwd),
        "aten::_efficient_attention_backward": (lambda: aten._efficient_attention_backward(
            eff[0], qt, kt, vt, None, eff[0], None, None, seq, seq, eff[1], 0.0, eff[2], eff[3], 0, False), bwd),
    }
    for name, (call, expected) in runs.items():
        events = [e for e in recorded_ops(torch, call, tmp_path) if e["name"] == name]
        assert len(events) == 1 and ours(events[0]) == expected, name


def _bytes_cases(torch):
    aten, r = torch.ops.aten, torch.randn
    x = r(2, 3, 9, 8)
    w, b = r(8), r(8)
    return [
        # (op recorded, arguments, call): every tensor argument read once, every output written once
        ("aten::add", (r(4, 1), r(1, 8, dtype=torch.float64)), lambda a: aten.add(*a)),
        ("aten::gelu", (x.bfloat16(),), lambda a: aten.gelu(*a)),
        ("aten::sum", (x,), lambda a: aten.sum(a[0], [1], True)),
        ("aten::amax", (x,), lambda a: aten.amax(a[0], [1, 2])),
        ("aten::max", (x,), lambda a: aten.max(a[0], 2)),
        ("aten::var", (x,), lambda a: aten.var(a[0], [3])),
        ("aten::argmax", (x,), lambda a: aten.argmax(a[0], 1)),
        ("aten::cumsum", (x.long(),), lambda a: aten.cumsum(a[0], 1)),
        ("aten::max_pool2d_with_indices", (x,),
         lambda a: aten.max_pool2d_with_indices(a[0], [3, 3], [2, 2], [1, 1], [1, 1], True)),
        ("aten::avg_pool2d", (x,), lambda a: aten.avg_pool2d(a[0], [2, 2], [2, 1], [1, 0], True)),
        ("aten::constant_pad_nd", (x,), lambda a: aten.constant_pad_nd(a[0], [1, 2, 3, 4], 0.0)),
        ("aten::repeat", (x,), lambda a: aten.repeat(a[0], [2, 1, 1, 1, 3])),
        ("aten::cat", ([x, r(2, 5, 9, 8)],), lambda a: aten.cat(a[0], 1)),
        ("aten::_softmax", (x,), lambda a: aten._softmax(a[0], -1, False)),
        ("aten::_log_softmax", (x.half(),), lambda a: aten._log_softmax(a[0], 1, False)),
        ("aten::_to_copy", (x,), lambda a: aten._to_copy(a[0], dtype=torch.bfloat16)),
        ("aten::where", (x > 0, x, r(1, 1, 1, 8)), lambda a: aten.where(*a)),
        ("aten::native_layer_norm", (x, w, b), lambda a: aten.native_layer_norm(a[0], [8], a[1], a[2], 1e-5)),
        ("aten::native_group_norm", (x, r(3), r(3)),
         lambda a: aten.native_group_norm(a[0], a[1], a[2], 2, 3, 72, 3, 1e-5)),
        ("aten::native_batch_norm", (x, r(3), r(3), r(3), r(3).abs()),
         lambda a: aten.native_batch_norm(a[0], a[1], a[2], a[3], a[4], False, 0.1, 1e-5)),
        ("aten::mse_loss", (x, r(2, 3, 9, 8)), lambda a: aten.mse_loss(a[0], a[1], 0)),
        ("aten::addmm", (r(5), r(3, 4), r(4, 5)), lambda a: aten.addmm(*a)),
        ("aten::convolution", (r(2, 4, 11, 9), r(6, 2, 3, 3), r(6)),
         lambda a: aten.convolution(*a, [2, 1], [1, 0], [1, 2], False, [0, 0], 2)),
        ("aten::convolution", (r(2, 4, 5, 6), r(4, 3, 3, 2)),
         lambda a: aten.convolution(*a, None, [2, 2], [1, 1], [1, 1], True, [1, 1], 1)),
        ("aten::_fused_adam_", ([r(3, 4), r(5)], [r(3, 4), r(5)], [r(3, 4), r(5)], [r(3, 4), r(5)], [],
                                [torch.tensor(1.0), torch.tensor(1.0)]),
         lambda a: aten._fused_adam_(*a, lr=1e-3, beta1=0.9, beta2=0.99, weight_decay=0.0, eps=1e-8, amsgrad=False,
                                     maximize=False)),
    ]


def _nbytes(value) -> int:
    if isinstance(value, (list, tuple)):
        return sum(_nbytes(v) for v in value)
    return value.numel() * value.element_size() if hasattr(value, "element_size") else 0


def test_bytes_are_inputs_plus_outputs_of_real_calls(torch, tmp_path):
    """For ops without gathers or write-only arguments, bytes = every tensor argument once plus
    every tensor the call returns, as measured on the real tensors."""
    for name, inputs, call in _bytes_cases(torch):
        result = call(inputs)
        expected = _nbytes(inputs) + _nbytes(result)
        if name == "aten::_fused_adam_":  # in place: params and both moments written back
            expected = _nbytes(inputs[:4]) + _nbytes([inputs[0], inputs[2], inputs[3]])
        events = [e for e in recorded_ops(torch, lambda: call(inputs), tmp_path) if e["name"] == name]
        assert events, name
        args = events[0]["args"]
        got = op_cost_or_reason(name, args["Input Dims"], args["Input type"], args.get("Concrete Inputs"),
                                args.get("Input Strides"))
        assert isinstance(got, OpCost), (name, got)
        assert got.bytes == expected, (name, got.bytes, expected)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_recorded_dtype_names_and_codes_match_torch(torch, tmp_path):
    """Every dtype PyTorch records: its `Input type` has the right element size, and the
    c10::ScalarType code recorded for `dtype=` arguments means the same dtype."""
    dtypes = [d for d in vars(torch).values() if isinstance(d, torch.dtype)]
    dtypes = sorted(set(dtypes), key=str)
    tensors = []
    for d in dtypes:
        try:
            tensors.append(torch.empty(4, dtype=d, device="meta"))
        except (RuntimeError, TypeError):
            continue

    def run():
        for t in tensors:
            torch.ops.aten.alias(t)
            torch.empty(4, dtype=t.dtype, device="meta")

    events = recorded_ops(torch, run, tmp_path)
    aliases = [e for e in events if e["name"] == "aten::alias"]
    codes = [e["args"]["Concrete Inputs"][1] for e in events if e["name"] == "aten::empty"]
    assert len(aliases) == len(tensors) == len(codes)
    checked = 0
    for t, alias, code in zip(tensors, aliases, codes):
        type_name = alias["args"]["Input type"][0]
        if t.dtype.is_complex or str(t.dtype).startswith(("torch.bits", "torch.int1", "torch.int2", "torch.int3",
                                                           "torch.int4", "torch.int5", "torch.int6", "torch.int7",
                                                           "torch.uint1", "torch.uint2", "torch.uint3", "torch.uint4",
                                                           "torch.uint5", "torch.uint6", "torch.uint7")):
            continue  # sub-byte and bit types: never seen in traces
        c = cost("aten::clone", [[4], []], [type_name, "Scalar"])
        assert c.bytes == 2 * 4 * t.element_size(), (t.dtype, type_name)
        to = cost("aten::_to_copy", [[4]] + [[]] * 6, ["float", "Scalar", "", "", "", "Scalar", ""],
                  ["", code, "", "", "", "False", ""])
        assert to.bytes == 4 * 4 + 4 * t.element_size(), (t.dtype, code)
        checked += 1
    assert checked >= 15


def test_argument_positions_agree_with_torch_schemas(torch):
    """The argument indices the formulas read (is_causal, output_mask, stride, ...) are where the
    PyTorch schemas put them, and the arity limits are the schemas' maxima."""
    from traceanalyze.analysis.costs import attention, conv, normalization, registry

    def schema(name):
        packet = getattr(torch.ops.aten, name)
        return [a.name for a in packet.default._schema.arguments] if "default" in packet.overloads() else None

    aliases = {"input": {"input", "self"}, "grad_output": {"grad_output", "grad_out"}}
    for name, (roles, _transposed, _composite) in conv.CONV_FORWARD.items():
        names = schema(name) if hasattr(torch.ops.aten, name) else None
        if names is None:
            continue
        if name in ("conv1d", "conv2d", "conv3d"):
            continue  # aten::convNd.default is fine; checked through convolution
        for i, role in enumerate(roles):
            assert names[i] in aliases.get(role, {role}), (name, i, role, names[i])
    for name, spec in attention.ATTENTION_SPECS.items():
        names = schema(name)
        assert names[spec.q] in ("query", "grad_out", "grad_out_") or names[spec.q + 1] == "query", name
        if spec.causal is not None:
            assert names[spec.causal] == "is_causal", name
        if spec.mask_type is not None:
            assert names[spec.mask_type] == "custom_mask_type", name
        if spec.cum_seq_q is not None:
            assert names[spec.cum_seq_q] in ("cum_seq_q", "cu_seqlens_q"), name
        if isinstance(spec.lse, int) and not isinstance(spec.lse, bool):
            assert names[spec.lse] == "compute_log_sumexp", name
    for name, (gi, xi, wi, transposed, mask) in conv.CONV_BACKWARD.items():
        if not hasattr(torch.ops.aten, name):
            continue
        packet = getattr(torch.ops.aten, name)
        overload = "default" if "default" in packet.overloads() else "output_mask"
        names = [a.name for a in getattr(packet, overload)._schema.arguments]
        assert (names[gi], names[wi]) == ("grad_output", "weight") and names[xi] in ("input", "self"), name
        assert names[mask] == "output_mask", name
        if not isinstance(transposed, bool):
            assert names[transposed] == "transposed", name
    for name, (xi, wi, gi, mask, _composite) in normalization.BATCH_NORM.items():
        names = schema(name)
        assert names[xi] == "input" and names[wi] == "weight", name
        if gi is not None:
            assert names[gi] in ("grad_out", "grad_output"), name
        if mask is not None:
            assert names[mask] == "output_mask", name
    for name, limit in ((op.name, op.max_args) for op in registry.registered_aten_ops() if op.max_args is not None):
        packet = getattr(torch.ops.aten, name)
        assert limit == max(len(getattr(packet, o)._schema.arguments) for o in packet.overloads()), name


# --------------------------------------------------------------------------------------------
# Real traces
# --------------------------------------------------------------------------------------------

LAUNCHES = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx", "cudaMemcpyAsync",
            "cudaMemsetAsync", "hipLaunchKernel", "hipExtModuleLaunchKernel", "cudaGraphLaunch", "hipGraphLaunch")


def launching_ops(events: list[dict]) -> set[int]:
    """Indices of the innermost CPU ops that enclose a launch call on the same thread: the ops
    whose cost the roofline charges to kernels (found independently of the loader)."""
    ops: dict[tuple, list[tuple[float, float, int]]] = defaultdict(list)
    launches: dict[tuple, list[float]] = defaultdict(list)
    for i, e in enumerate(events):
        if e.get("ph") != "X":
            continue
        key = (e.get("pid"), e.get("tid"))
        if e.get("cat") in ("cpu_op", "Operator"):
            ops[key].append((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)), i))
        elif e.get("cat") in ("cuda_runtime", "cuda_driver", "Runtime") and e.get("name", "").startswith(LAUNCHES):
            launches[key].append(float(e["ts"]))
    found = set()
    for key, times in launches.items():
        spans = sorted(ops.get(key, []), key=lambda s: (s[0], -s[1]))
        starts = [s[0] for s in spans]
        for ts in times:
            # The innermost enclosing op is the latest-starting op that still covers ts.
            j = bisect.bisect_right(starts, ts) - 1
            while j >= 0 and spans[j][1] < ts:
                j -= 1
            if j >= 0:
                found.add(spans[j][2])
    return found


def coverage(path: Path) -> tuple[int, int, int, int, Counter]:
    with gzip.open(path, "rt") as handle:
        events = json.load(handle)["traceEvents"]
    launching = launching_ops(events)
    modelled = total = l_modelled = l_total = 0
    missing: Counter = Counter()
    for i, e in enumerate(events):
        args = e.get("args") or {}
        if e.get("cat") not in ("cpu_op",
                                "Operator") or not e.get("name", "").startswith("aten::") or not args.get("Input Dims"):
            continue
        result = op_cost_or_reason(e["name"], args["Input Dims"], args.get("Input type"), args.get("Concrete Inputs"),
                                   args.get("Input Strides"))
        ok = isinstance(result, OpCost)
        total += 1
        modelled += ok
        if i in launching:
            l_total += 1
            l_modelled += ok
        if not ok:
            missing[(e["name"], result, i in launching)] += 1
    return modelled, total, l_modelled, l_total, missing


@pytest.mark.parametrize("name", ["tracelens_h100_bert_small.json.gz", "hta_a100_large_training.json.gz",
                                  "tutorial_h100_transformer.json.gz"])
def test_most_kernel_launching_aten_ops_on_real_traces_are_modelled(name):
    path = shared_trace(name)
    modelled, total, l_modelled, l_total, missing = coverage(path)
    listing = "\n".join(f"  {n} x {op} ({'launches' if launching else 'no launch'}): {why}"
                        for (op, why, launching), n in missing.most_common())
    print(f"{name}: {l_modelled}/{l_total} kernel-launching aten ops modelled, {modelled}/{total} aten ops "
          f"with Input Dims\nunmodelled:\n{listing}")
    assert l_total > 0
    assert l_modelled / l_total >= 0.95, listing
    assert modelled / total >= 0.95, listing


def test_op_costs_takes_tensor_list_shapes_from_their_column():
    ops = pl.DataFrame(
        {
            "op_id": [1, 2],
            "name": ["aten::_foreach_add_", "aten::cat"],
            "input_dims": [[[], [], []], [[], []]],
            "input_tensor_lists": [[[[3, 4], [5]], [[3, 4], [5]], []], [[[2, 3], [4, 3]], []]],
            "input_types": [["TensorList", "TensorList", "Scalar"], ["TensorList", "Scalar"]],
            "concrete_inputs": [["", "", "0.5"], ["", "0"]],
            "flops": [None, None],
        },
        schema_overrides={"flops": pl.Float64, "input_dims": pl.List(pl.List(pl.Int64)),
                          "input_tensor_lists": pl.List(pl.List(pl.List(pl.Int64)))},
    )
    out = op_costs(ops).rows(named=True)
    assert (out[0]["flops"], out[0]["bytes"], out[0]["cost_model"]) == (17.0, 3 * 17 * 4, "optimizer")
    assert (out[1]["flops"], out[1]["bytes"], out[1]["cost_model"]) == (0.0, 18 * 4 * 2, "copy")
    legacy = op_costs(ops.drop("input_tensor_lists")).rows(named=True)
    assert legacy[0]["unmodeled_reason"] == "shape arguments incomplete: TensorList shapes not recorded"


def test_op_costs_on_a_loaded_real_trace():
    path = shared_trace("tracelens_h100_bert_small.json.gz")
    from traceanalyze.load import load_trace

    trace = load_trace(path)
    costs = op_costs(trace.cpu_ops)
    assert costs.height == trace.cpu_ops.height
    joined = costs.join(trace.cpu_ops.select("op_id", "name"), on="op_id")
    addmm = joined.filter(pl.col("name") == "aten::addmm")
    assert addmm.height == 26 and addmm["cost_model"].cast(pl.String).unique().to_list() == ["matmul"]
    attention = joined.filter(pl.col("name") == "aten::_flash_attention_forward")
    assert attention["flops"].to_list() == [4.0 * 8 * 141 * 141 * 64] * 4
    ops_with_dims = joined.filter(pl.col("name").cast(pl.String).str.starts_with("aten::"))
    assert ops_with_dims["unmodeled_reason"].null_count() / ops_with_dims.height > 0.95
    assert math.isclose(costs["flops"].sum(), costs.filter(pl.col("flops_source") == "model")["flops"].sum())


def test_optimizer_and_cat_ops_are_modelled_through_the_loader():
    path = shared_trace("aipe_b200_deepseek_v3_clock_skew.json.gz")
    from traceanalyze.load import load_trace

    trace = load_trace(path)
    joined = op_costs(trace.cpu_ops).join(trace.cpu_ops.select("op_id", "name"), on="op_id")
    name = pl.col("name").cast(pl.String)
    lists = joined.filter(name.str.starts_with("aten::_foreach_") | (name == "aten::cat"))
    assert lists.height > 0
    unmodeled = pl.col("unmodeled_reason")
    assert lists["unmodeled_reason"].null_count() == lists.height, lists.filter(unmodeled.is_not_null())


# --------------------------------------------------------------------------------------------
# Robustness: any recorded arguments give a cost or a reason, never an exception
# --------------------------------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from traceanalyze.analysis.costs import registry as _registry  # noqa: E402

_NAMES = sorted({f"aten::{op.name}" for op in _registry.registered_aten_ops()}
                | {"aten::_foreach_add_", "aten::_foreach_norm", "aten::add_", "aten::relu_", "aten::unknown_op"}
                | set(_registry.CUSTOM) | {f"{prefix}<x> >" for prefix in _registry.CUSTOM_PREFIXES})
_TYPES = ["float", BF16, "c10::Half", "long int", "int", "bool", "double", "Scalar", "ScalarList", "TensorList", "",
          "GenericList", "c10::Float8_e4m3fn", "mystery"]
_shape = st.lists(st.integers(min_value=0, max_value=64), max_size=5)
_dim = st.one_of(_shape, st.lists(_shape, max_size=3))
_concrete = st.sampled_from(["", "True", "False", "0", "1", "-1", "[1, 1]", "[2]", "[]", "0.5", "same", "15",
                             "[True, False, True]"])


@settings(max_examples=600, deadline=None)
@given(name=st.sampled_from(_NAMES), data=st.data())
def test_any_recorded_arguments_give_a_cost_or_a_reason(name, data):
    n = data.draw(st.integers(min_value=0, max_value=10))
    dims = data.draw(st.lists(_dim, min_size=n, max_size=n))
    types = data.draw(st.one_of(st.none(), st.lists(st.sampled_from(_TYPES), min_size=n, max_size=n)))
    concrete = data.draw(st.one_of(st.none(), st.lists(_concrete, min_size=n, max_size=n)))
    result = op_cost_or_reason(name, dims, types, concrete)
    if isinstance(result, OpCost):
        assert result.flops >= 0 and result.bytes >= 0 and math.isfinite(result.flops) and math.isfinite(result.bytes)
    else:
        assert isinstance(result, str) and result


@pytest.mark.parametrize("sizes", ["-1", "[8, -1, 3, 3]", "[8, 4]", "[8, 4, 3, 3, 3]"])
def test_convolution_backward_sizes_that_cannot_be_a_batch_or_weight_give_a_reason(sizes):
    """Found by the property above: recorded sizes of `[-1]` made a negative FLOP count. Sizes
    must have the gradient's dimensions (3 or more) and none negative."""
    dims = [[], [8, 16, 30, 30], [8, 4, 32, 32], [], [], []]
    result = op_cost_or_reason("aten::cudnn_convolution_backward_weight", dims, ["int[]", "float", "float"] + [""] * 3,
                               [sizes, "", "", "", "", ""])
    assert isinstance(result, str) and result.startswith("shape arguments incomplete")
    good = op_cost_or_reason("aten::cudnn_convolution_backward_weight", dims, ["int[]", "float", "float"] + [""] * 3,
                             ["[16, 4, 3, 3]", "", "", "", "", ""])
    assert isinstance(good, OpCost) and good.flops == 2.0 * 8 * 30 * 30 * 16 * 4 * 3 * 3
