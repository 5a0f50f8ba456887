"""fbgemm table-batched embeddings and TensorList-less cats: exact formulas (docs/flops.md), and the
forward ↔ backward pairing by autograd sequence number on synthetic traces."""

from __future__ import annotations

import gzip
import json
import math

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builder import TraceBuilder

import traceanalyze
from traceanalyze.analysis import roofline
from traceanalyze.analysis.costs import embedding_tbe
from traceanalyze.analysis.costs.autograd_pairs import node_sequence_numbers
from traceanalyze.analysis.costs.family import OpCost
from traceanalyze.analysis.costs.registry import op_cost_or_reason

F32, F16, LONG, INT = "float", "c10::Half", "long", "int"
FORWARD = "fbgemm::split_embedding_codegen_lookup_rowwise_adagrad_function"
BACKWARD = "torch::autograd::CppNode<SplitLookupFunction_rowwise_adagrad_Op>"
T, B, L, TOTAL_D, ROWS = 2, 4, 12, 24, 100  # two tables of dim 12, a batch of 4 bags, 12 lookups


def split_lookup(weights_type=F32, weighted=False, rows=ROWS, states=None):
    """The 29 arguments fbgemm records for a split (rowwise adagrad) lookup, as in the real traces."""
    dims = [[0], [rows * TOTAL_D // T], [0], [0, 0], [T], [T], [T + 1], [], [], [T + 1], [], [L], [T * B + 1], [],
            [L] if weighted else [], [], [0], [], [], [], [states or rows], [0], [T], [T], [], [], [], [], []]
    types = [F32, weights_type, weights_type, weights_type, INT, LONG, INT, "Scalar", "Scalar", LONG, "Scalar", LONG,
             LONG, "Scalar", F32 if weighted else "", "", INT, "Scalar", "Scalar", "Scalar", F32, F32, INT, LONG,
             "Scalar", "Scalar", "Scalar", "Scalar", "Scalar"]
    return dims, types


METADATA_BYTES = T * 4 + T * 8 + (T + 1) * 4  # weights_placements (int), weights_offsets (long), D_offsets (int)


def test_forward_gathers_the_mean_dim_per_lookup_and_writes_the_pooled_output():
    dims, types = split_lookup()
    cost = embedding_tbe.forward_cost(FORWARD, dims, types, None, output=([B, TOTAL_D], F32))
    gathered = L * TOTAL_D / T
    assert isinstance(cost, OpCost)
    assert cost.flops == gathered  # one add per gathered value
    assert cost.bytes == L * 8 + (T * B + 1) * 8 + METADATA_BYTES + gathered * 4 + B * TOTAL_D * 4
    assert (cost.model, cost.dtype) == ("embedding", "fp32") and "mean embedding dim" in cost.note
    weighted = embedding_tbe.forward_cost(FORWARD, *split_lookup(weighted=True), None, output=([B, TOTAL_D], F32))
    assert weighted.flops == 2 * gathered and weighted.bytes == cost.bytes + L * 4  # a multiply-add, the weights read
    half = embedding_tbe.forward_cost(FORWARD, *split_lookup(F16), None, output=([B, TOTAL_D], F32))
    assert half.bytes == cost.bytes - gathered * 2 and half.dtype == "fp16"  # rows read at 2 bytes


def test_forward_takes_total_d_from_concrete_inputs_or_says_why_not():
    dims, types = split_lookup()
    concrete = [""] * len(dims)
    concrete[7] = str(TOTAL_D)
    from_scalar = embedding_tbe.forward_cost(FORWARD, dims, types, concrete)
    assert from_scalar == embedding_tbe.forward_cost(FORWARD, dims, types, None, output=([B, TOTAL_D], F32))
    missing = embedding_tbe.forward_cost(FORWARD, dims, types, None)
    assert missing.startswith("shape arguments incomplete: total_D not recorded")
    wrong_batch = embedding_tbe.forward_cost(FORWARD, dims, types, None, output=([B + 1, TOTAL_D], F32))
    assert wrong_batch.startswith("shape arguments inconsistent")
    concrete[13] = "2"  # PoolingMode.NONE: one row per lookup, not a bag
    assert "unpooled" in embedding_tbe.forward_cost(FORWARD, dims, types, concrete)


def test_one_table_forward_counts_the_flops_of_aten_embedding_bag():
    """With one table the lookup is an embedding bag: the same gathered values, the same FLOPs."""
    dim = 16
    dims = [[0], [ROWS * dim], [0], [0, 0], [1], [1], [2], [], [], [2], [], [L], [B + 1], [], [], [], [0], [], [], [],
            [ROWS], [0], [1], [1], [], [], [], [], []]
    types = split_lookup()[1]
    tbe = embedding_tbe.forward_cost(FORWARD, dims, types, None, output=([B, dim], F32))
    bag = op_cost_or_reason("aten::_embedding_bag", [[ROWS, dim], [L], [B]] + [[]] * 6,
                            [F32, LONG, LONG, "Scalar", "Scalar", "Scalar", "", "Scalar", "Scalar"], None)
    assert tbe.flops == bag.flops == L * dim and tbe.note == ""  # one table: no mean-dim estimate


@pytest.mark.parametrize(("optimizer", "state_size", "state_values_per_lookup", "flops_per_value"), [
    ("rowwise_adagrad", ROWS, 1, 1 + 4),           # one momentum per row
    ("adagrad", ROWS * TOTAL_D // T, TOTAL_D // T, 1 + 5),  # a momentum per weight
    ("sgd", None, 0, 1 + 2),
])
def test_backward_reads_the_gradient_and_updates_every_looked_up_row(optimizer, state_size, state_values_per_lookup,
                                                                     flops_per_value):
    dims, types = split_lookup(states=state_size)
    if state_size is None:  # sgd has no state tensors: the learning rate follows the clipping flags
        dims, types = dims[:20] + [[]] * 3, types[:20] + ["Scalar"] * 3
    name = f"fbgemm::split_embedding_codegen_lookup_{optimizer}_function"
    cost = embedding_tbe.backward_cost(name, dims, types, None, grad=([B, TOTAL_D], F32))
    gathered = L * TOTAL_D // T
    reads = L * 8 + (T * B + 1) * 8 + METADATA_BYTES + B * TOTAL_D * 4
    assert cost.flops == gathered * flops_per_value
    assert cost.bytes == reads + 2 * gathered * 4 + 2 * state_values_per_lookup * L * 4
    assert "repeated rows counted each time" in cost.note


def test_dense_backward_zero_fills_a_full_gradient_then_accumulates():
    # fbgemm::dense_embedding_codegen_lookup_function as recorded in param_v100_dlrm_4ranks
    dims = [[112], [2], [3], [], [], [3], [], [32], [33], [], [], [], []]
    types = [F32, "long int", INT, "Scalar", "Scalar", "long int", "Scalar", "long int", "long int", "Scalar", "", "",
             "Scalar"]
    name = "fbgemm::dense_embedding_codegen_lookup_function"
    assert embedding_tbe.backward_node_name(name) == "torch::autograd::CppNode<SplitLookupFunction_Dense_Op>"
    cost = embedding_tbe.backward_cost(name, dims, types, None, grad=([16, 32], F32))
    gathered = 32 * 16  # 32 lookups at dim 32 / 2 tables
    assert cost.flops == gathered
    assert cost.bytes == (32 + 33) * 8 + 2 * 8 + 3 * 4 + 16 * 32 * 4 + 112 * 4 + 2 * gathered * 4
    unknown = embedding_tbe.backward_cost("fbgemm::split_embedding_codegen_lookup_lamb_function", *split_lookup(), None,
                                          grad=([B, TOTAL_D], F32))
    assert unknown == "op not modelled: table-batched embedding backward with optimizer lamb"


# --------------------------------------------------------------------------------------------
# Pairing on synthetic traces
# --------------------------------------------------------------------------------------------


def write(b: TraceBuilder, path, sequence_numbers: dict[int, int]):
    """The trace with `Sequence number` set on the ops whose External id is a key."""
    data = b.to_dict()
    for event in data["traceEvents"]:
        args = event.get("args", {})
        if event.get("cat") == "cpu_op" and args.get("External id") in sequence_numbers:
            args["Sequence number"] = sequence_numbers[args["External id"]]
            args["Fwd thread id"] = 1
    with gzip.open(path, "wt") as out:
        json.dump(data, out)
    return traceanalyze.load_trace(path)


def lookup_trace(b: TraceBuilder, backward_sequence_numbers=(7,)):
    """A forward TBE between ops recording sequence numbers 7 and 8 (it creates node 7), each of
    `backward_sequence_numbers` a backward node with gradient [B, TOTAL_D]."""
    dims, types = split_lookup()
    before = b.cpu_op("aten::zero_", 0, 5, input_dims=[[1]], input_types=[LONG])
    forward = b.cpu_op(FORWARD, 10, 20, input_dims=dims, input_types=types)
    b.launch_kernel(launch_us=12, start_us=40, dur_us=10, external_id=forward,
                    name="split_embedding_codegen_forward_kernel")
    after = b.cpu_op("aten::cat", 35, 5, input_dims=[[], []], input_types=["TensorList", "Scalar"])
    numbers = {before: 7, after: 8}
    for i, number in enumerate(backward_sequence_numbers):
        node = b.cpu_op(BACKWARD, 100 + 50 * i, 20, tid=2, input_dims=[[B, TOTAL_D]], input_types=[F32])
        b.launch_kernel(launch_us=102 + 50 * i, start_us=110 + 50 * i, dur_us=10, tid=2, external_id=node,
                        name="split_embedding_backward_codegen_rowwise_adagrad_kernel")
        numbers[node] = number
    return forward, numbers


def test_the_forward_and_its_backward_node_are_costed_from_each_other(tmp_path):
    b = TraceBuilder()
    forward, numbers = lookup_trace(b)
    trace = write(b, tmp_path / "t.json.gz", numbers)
    assert node_sequence_numbers(trace.cpu_ops, trace.cpu_ops.filter(pl.col("name") == FORWARD)["op_id"].to_list())[
        "sequence_number"].to_list() == [7]
    kernels = roofline.kernel_roofline(trace).filter(pl.col("kind") == "kernel").sort("start_ns")
    dims, types = split_lookup()
    expected_forward = embedding_tbe.forward_cost(FORWARD, dims, types, None, output=([B, TOTAL_D], F32))
    expected_backward = embedding_tbe.backward_cost(FORWARD, dims, types, None, grad=([B, TOTAL_D], F32))
    assert kernels["op_name"].to_list() == [FORWARD, BACKWARD]
    assert kernels["flops"].to_list() == [expected_forward.flops, expected_backward.flops]
    assert kernels["bytes"].to_list() == [expected_forward.bytes, expected_backward.bytes]
    assert kernels["modelled"].all()
    assert "from its backward node" in kernels["cost_note"][0] and "from its forward op" in kernels["cost_note"][1]


def test_an_ambiguous_pair_is_not_guessed(tmp_path):
    b = TraceBuilder()
    _, numbers = lookup_trace(b, backward_sequence_numbers=(7, 7))  # two nodes claim the forward's number
    kernels = roofline.kernel_roofline(write(b, tmp_path / "t.json.gz", numbers)).filter(pl.col("kind") == "kernel")
    assert not kernels["modelled"].any()
    reasons = kernels.sort("start_ns")["unmodeled_reason"].to_list()
    assert reasons[0].startswith("shape arguments incomplete: total_D not recorded")
    assert reasons[1].startswith(f"op not modelled: {BACKWARD} (a table-batched embedding backward")


def test_cat_without_tensor_list_shapes_takes_its_output_from_cat_backward(tmp_path):
    b = TraceBuilder()
    cat = b.cpu_op("aten::cat", 0, 10, input_dims=[[], []], input_types=["TensorList", "Scalar"])
    b.launch_kernel(launch_us=2, start_us=20, dur_us=5, external_id=cat, name="CatArrayBatchedCopy")
    node = b.cpu_op("CatBackward0", 100, 10, tid=2, input_dims=[[8, 6]], input_types=[F16])
    # a cat inside a split's backward concatenates the node's gradients
    split = b.cpu_op("SplitWithSizesBackward0", 200, 30, tid=2, input_dims=[[8, 2], [8, 4]], input_types=[F32, F32])
    inner = b.cpu_op("aten::cat", 205, 10, tid=2, input_dims=[[], []], input_types=["TensorList", "Scalar"])
    b.launch_kernel(launch_us=207, start_us=220, dur_us=5, tid=2, external_id=inner, name="CatArrayBatchedCopy")
    trace = write(b, tmp_path / "t.json.gz", {cat: 3, node: 3, split: 2})
    kernels = roofline.kernel_roofline(trace).filter(pl.col("kind") == "kernel").sort("start_ns")
    assert kernels["bytes"].to_list() == [2 * 8 * 6 * 2, 2 * (8 * 2 + 8 * 4) * 4]
    assert kernels["flops"].to_list() == [0, 0] and kernels["modelled"].all()
    assert kernels["compute_dtype"].to_list() == ["fp16", "fp32"]


def test_cat_without_a_node_keeps_its_reason(tmp_path):
    b = TraceBuilder()
    cat = b.cpu_op("aten::cat", 0, 10, input_dims=[[], []], input_types=["TensorList", "Scalar"])
    b.launch_kernel(launch_us=2, start_us=20, dur_us=5, external_id=cat, name="CatArrayBatchedCopy")
    trace = write(b, tmp_path / "t.json.gz", {cat: 3})
    row = roofline.kernel_roofline(trace).filter(pl.col("kind") == "kernel").row(0, named=True)
    assert not row["modelled"]
    assert row["unmodeled_reason"] == "shape arguments incomplete: TensorList shapes not recorded"


_TYPES = [F32, F16, LONG, INT, "long int", "Scalar", "", "TensorList", "mystery"]
_shape = st.lists(st.integers(min_value=0, max_value=40), max_size=3)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), name=st.sampled_from([FORWARD, "fbgemm::dense_embedding_codegen_lookup_function",
                                             "fbgemm::split_embedding_codegen_lookup_sgd_function"]))
def test_any_recorded_arguments_give_a_cost_or_a_reason(data, name):
    n = data.draw(st.integers(min_value=0, max_value=30))
    dims = data.draw(st.lists(_shape, min_size=n, max_size=n))
    types = data.draw(st.lists(st.sampled_from(_TYPES), min_size=n, max_size=n))
    concrete = data.draw(st.one_of(st.none(), st.lists(st.sampled_from(["", "0", "2", "24", "x"]), min_size=n,
                                                       max_size=n)))
    grad = (data.draw(st.one_of(st.none(), _shape)), data.draw(st.sampled_from(_TYPES)))
    for result in (embedding_tbe.forward_cost(name, dims, types, concrete, output=grad),
                   embedding_tbe.forward_cost(name, dims, types, concrete),
                   embedding_tbe.backward_cost(name, dims, types, concrete, grad=grad)):
        if isinstance(result, OpCost):
            assert result.flops >= 0 and result.bytes >= 0 and math.isfinite(result.bytes)
        else:
            assert isinstance(result, str) and result


def test_index_with_untyped_indices_takes_its_output_from_index_backward(tmp_path):
    # dlrm's interaction x[:, li, lj] as param_v100_dlrm_4ranks records it: indices without a type or shape
    b = TraceBuilder()
    index = b.cpu_op("aten::index", 0, 10, input_dims=[[16, 27, 27], []], input_types=[F32, ""])
    b.launch_kernel(launch_us=2, start_us=20, dur_us=5, external_id=index, name="index_elementwise_kernel")
    node = b.cpu_op("IndexBackward0", 100, 10, tid=2, input_dims=[[16, 351]], input_types=[F32])
    trace = write(b, tmp_path / "t.json.gz", {index: 5, node: 5})
    row = roofline.kernel_roofline(trace).filter(pl.col("kind") == "kernel").row(0, named=True)
    assert row["modelled"] and row["flops"] == 0 and row["bytes"] == 2 * 16 * 351 * 4  # gathered, then written
    assert "index tensors are not counted" in row["cost_note"]


def test_repeated_pairs_are_each_costed_once_per_shape_and_given_to_every_op(tmp_path):
    # three steps: the same cat twice, then one of another shape; each cat pairs with its own node
    b = TraceBuilder()
    numbers = {}
    for step, (rows, number) in enumerate(((8, 3), (8, 4), (16, 5))):
        at = 300 * step
        cat = b.cpu_op("aten::cat", at, 10, input_dims=[[], []], input_types=["TensorList", "Scalar"])
        b.launch_kernel(launch_us=at + 2, start_us=at + 20, dur_us=5, external_id=cat, name="CatArrayBatchedCopy")
        node = b.cpu_op("CatBackward0", at + 100, 10, tid=2, input_dims=[[rows, 6]], input_types=[F16])
        numbers.update({cat: number, node: number})
    trace = write(b, tmp_path / "t.json.gz", numbers)
    kernels = roofline.kernel_roofline(trace).filter(pl.col("kind") == "kernel").sort("start_ns")
    assert kernels["bytes"].to_list() == [2 * 8 * 6 * 2, 2 * 8 * 6 * 2, 2 * 16 * 6 * 2]
    assert kernels["modelled"].all() and kernels["cost_note"].cast(pl.String).str.contains("CatBackward").all()
