"""Forward convolutions of old traces (no `Concrete Inputs`: stride and padding unknown) take their
output shape from the backward op of the same layer (`costs.conv_geometry`): exact FLOPs and bytes,
each layer's shapes decoded once however many steps repeat them, in op order."""

from __future__ import annotations

import polars as pl
import pytest

from traceanalyze.analysis.costs.conv_geometry import output_shapes_from_backward, recover_forward_costs
from traceanalyze.analysis.costs.table import op_costs

X, W, GRAD = [8, 3, 32, 32], [16, 3, 3, 3], [8, 16, 16, 16]  # a stride-2 layer: 32 → 16
OTHER_X, OTHER_W = [8, 16, 16, 16], [32, 16, 3, 3]


def cpu_ops() -> pl.DataFrame:
    forward = ("aten::cudnn_convolution", [X, W, [], [], [], []], ["float", "float", "", "", "", ""])
    backward = ("aten::cudnn_convolution_backward", [X, GRAD, W, [], [], []], ["float", "float", "float", "", "", ""])
    other = ("aten::cudnn_convolution", [OTHER_X, OTHER_W, [], [], [], []], ["float", "float", "", "", "", ""])
    other_backward = [("aten::cudnn_convolution_backward", [OTHER_X, grad, OTHER_W, [], [], []],
                       ["float", "float", "float", "", "", ""]) for grad in ([8, 32, 8, 8], [8, 32, 16, 16])]
    rows = [forward, other, backward, forward, *other_backward, backward, forward]  # three steps of the first layer
    return pl.DataFrame(
        {"op_id": list(range(10, 10 + len(rows))), "name": [r[0] for r in rows], "category": ["cpu_op"] * len(rows),
         "input_dims": [r[1] for r in rows], "input_types": [r[2] for r in rows],
         "input_strides": [None] * len(rows), "concrete_inputs": [None] * len(rows), "flops": [None] * len(rows)},
        schema_overrides={"flops": pl.Float64, "input_strides": pl.List(pl.List(pl.Int64)),
                          "concrete_inputs": pl.List(pl.String)})


def test_each_layer_maps_to_its_one_recorded_gradient_shape():
    # the second layer's backward ops record two gradient shapes: no single answer, no entry
    assert output_shapes_from_backward(cpu_ops()) == {(tuple(X), tuple(W)): tuple(GRAD)}


def test_forward_convolutions_get_the_exact_cost_of_that_output():
    ops = cpu_ops()
    costs = op_costs(ops)
    forward_ids = [10, 13, 17]
    before = costs.filter(pl.col("op_id").is_in(forward_ids))
    assert before["flops"].null_count() == 3
    assert before["unmodeled_reason"].str.contains("convolution (stride|padding)").all()
    recovered = recover_forward_costs(costs, ops)
    assert recovered.height == costs.height
    assert recovered["op_id"].to_list()[-3:] == forward_ids  # in op order, after the others
    rows = recovered.filter(pl.col("op_id").is_in(forward_ids))
    flops = 2.0 * 8 * 16 * 16 * (16 * 3 * 3 * 3)  # 2 · N · ∏ output spatial · ∏ weight
    moved = 4.0 * (8 * 3 * 32 * 32 + 16 * 3 * 3 * 3 + 8 * 16 * 16 * 16)  # input + weight + output, fp32
    assert rows["flops"].to_list() == [flops] * 3
    assert rows["bytes"].to_list() == [moved] * 3
    assert rows["unmodeled_reason"].null_count() == 3
    assert rows["cost_note"].str.contains("matching backward op").all()
    assert set(rows["cost_model"].cast(pl.String)) == {"conv"}
    # the ambiguous layer stays unmodelled, with its reason
    other = recovered.filter(pl.col("op_id") == 11)
    assert other["flops"].item() is None and "convolution" in other["unmodeled_reason"].item()


@pytest.mark.parametrize("rows", [slice(0, 2), slice(3, 4)])
def test_no_backward_op_or_no_gap_leaves_the_costs_as_they_are(rows):
    ops = cpu_ops()[rows]
    costs = op_costs(ops)
    assert recover_forward_costs(costs, ops).equals(costs)
