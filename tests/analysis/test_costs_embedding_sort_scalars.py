"""Issue 12 point 4: embedding-bag backward FLOPs per lookup, `_embedding_bag_backward` and
`aten::sort` modelled, Python scalars not read from device memory. Argument layouts as the PyTorch
profiler records them (torch 2.13, CPU); expected values are the formulas of docs/flops.md."""

from __future__ import annotations

import pytest

from traceanalyze.analysis.costs.family import OpCost
from traceanalyze.analysis.costs.registry import op_cost_or_reason

F32, I64 = "float", "long int"
B, L, D, ROWS = 2, 8, 3, 10  # bags, lookups, embedding dim, table rows


def cost(name, dims, types, concrete) -> OpCost:
    result = op_cost_or_reason(name, dims, types, concrete)
    assert isinstance(result, OpCost), result
    return result


def dense_backward(mode: str, max_indices: list[int]) -> OpCost:
    # (grad, indices, offset2bag, bag_size, maximum_indices, num_weights, scale_grad_by_freq, mode,
    #  per_sample_weights, padding_idx)
    return cost("aten::_embedding_bag_dense_backward",
                [[B, D], [L], [L], [B], max_indices, [], [], [], [], []],
                [F32, I64, I64, I64, I64, "Scalar", "Scalar", "Scalar", "", "Scalar"],
                ["", "", "", "", "", str(ROWS), "False", mode, "", "-1"])


def test_embedding_bag_dense_backward_accumulates_once_per_lookup():
    summed = dense_backward("0", [B])
    assert summed.flops == L * D  # was B * D: one weight-gradient accumulate per looked-up row
    # reads grad, indices, offset2bag, bag_size, maximum_indices; writes the [ROWS, D] weight gradient
    assert summed.bytes == (B * D) * 4 + (L + L + B + B) * 8 + ROWS * D * 4
    assert summed.model == "embedding" and not summed.composite
    mean = dense_backward("1", [B])
    assert mean.flops == L * D


def test_embedding_bag_dense_backward_in_max_mode_updates_one_row_per_output_element():
    maxed = dense_backward("2", [B, D])
    assert maxed.flops == B * D  # each bag's output element came from one looked-up row
    assert maxed.bytes == (B * D) * 4 + (L + L + B + B * D) * 8 + ROWS * D * 4


def test_embedding_bag_dense_backward_without_mode_assumes_sum():
    unknown = dense_backward("", [B])
    assert unknown.flops == L * D and "mode not recorded" in unknown.note


def bag_backward(sparse: str) -> OpCost | str:
    # (grad, indices, offsets, offset2bag, bag_size, maximum_indices, num_weights, scale_grad_by_freq,
    #  mode, sparse, per_sample_weights, padding_idx), as recorded for mode="sum" on CPU
    return op_cost_or_reason("aten::_embedding_bag_backward",
                             [[B, D], [L], [B], [0], [B], [B], [], [], [], [], [], []],
                             [F32, I64, I64, I64, I64, I64, "Scalar", "Scalar", "Scalar", "Scalar", "", "Scalar"],
                             ["", "", "", "", "", "", str(ROWS), "False", "0", sparse, "", "-1"])


def test_embedding_bag_backward_is_modelled():
    dense = bag_backward("False")
    assert isinstance(dense, OpCost), dense
    assert dense.flops == L * D and dense.composite and dense.model == "embedding"
    assert dense.bytes == (B * D) * 4 + (L + B + 0 + B + B) * 8 + ROWS * D * 4
    sparse = bag_backward("True")
    assert isinstance(sparse, OpCost), sparse
    # a sparse gradient: one row of D values per lookup, and the lookups' row indices
    assert sparse.flops == L * D
    assert sparse.bytes == (B * D) * 4 + (L + B + 0 + B + B) * 8 + L * D * 4 + L * 8


@pytest.mark.parametrize("dims, types, concrete, size", [
    ([[4, 8], [], []], [F32, "Scalar", "Scalar"], ["", "0", "False"], 4),                     # sort(x, 0)
    ([[4, 8], [], [], []], [F32, "Scalar", "Scalar", "Scalar"], ["", "False", "-1", "False"], 8),  # stable
    ([[4, 8], [], [], []], [F32, "Scalar", "Scalar", "Scalar"], ["", "True", "1", "True"], 8),
    ([[5, 8], [], []], [F32, "Scalar", "Scalar"], ["", "0", "True"], 5),
])
def test_sort_is_a_comparison_sort_along_its_dim(dims, types, concrete, size):
    got = cost("aten::sort", dims, types, concrete)
    numel = dims[0][0] * dims[0][1]
    comparisons = {4: 2, 8: 3, 5: 3}[size]  # ⌈log2 k⌉ per element
    assert got.flops == numel * comparisons
    assert got.bytes == numel * 4 + numel * 4 + numel * 8  # read self; write values and int64 indices
    assert got.model == "reduction" and not got.composite


def test_sort_with_out_tensors_and_without_dim():
    out = cost("aten::sort", [[16], [], [], [16], [16]], [F32, "Scalar", "Scalar", F32, I64],
               ["", "0", "False", "", ""])
    assert out.flops == 16 * 4 and out.bytes == 16 * 4 + 16 * 4 + 16 * 8  # out= tensors written, not read
    unknown = cost("aten::sort", [[4, 8], [], []], [F32, "Scalar", "Scalar"], None)
    assert unknown.flops == 32 * 3 and "last dimension assumed" in unknown.note
    assert cost("aten::sort", [[4, 1], [], []], [F32, "Scalar", "Scalar"], ["", "1", "False"]).flops == 0


def test_a_python_scalar_operand_is_not_read_from_device_memory():
    # x * 2.0 and x + 1: PyTorch wraps the number as a 0-dim double / int64 tensor
    mul = cost("aten::mul", [[4, 8], []], [F32, "double"], ["", ""])
    assert (mul.flops, mul.bytes) == (32, 32 * 4 + 32 * 4)
    add = cost("aten::add", [[4, 8], [], []], [F32, I64, "Scalar"], ["", "", "1"])
    assert (add.flops, add.bytes) == (32, 32 * 4 + 32 * 4)
    inplace = cost("aten::mul_", [[4, 8], []], [F32, "double"], ["", ""])
    assert inplace.bytes == 32 * 4 + 32 * 4
    assert mul.dtype == "fp32"


def test_a_zero_dim_device_tensor_is_still_read():
    # x.add(torch.tensor(2.0)): a 0-dim float tensor is a tensor the kernel reads
    add = cost("aten::add", [[4, 8], [], []], [F32, F32, "Scalar"], ["", "", "1"])
    assert add.bytes == 32 * 4 + 4 + 32 * 4
    # without a dimensioned operand nothing says which 0-dim tensor came from a number: all read
    scalars = cost("aten::add", [[], [], []], ["double", "double", "Scalar"], ["", "", "1"])
    assert scalars.bytes == 8 + 8 + 8
