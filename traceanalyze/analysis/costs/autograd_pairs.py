"""Shapes the profiler did not record on an op, read from the autograd node paired with it.

Every forward op records the autograd sequence number current when it ran (`Sequence number`); the
op that creates an autograd node gives the node that number, and the backward pass records the node
(`CatBackward0`, `torch::autograd::CppNode<…>`) with it. The node's first argument is the gradient
of the forward op's output, so it has the output's shape and dtype. Ops that record no sequence
number of their own (custom C++ autograd functions such as fbgemm's table-batched embeddings) created
the node numbered like the latest op recorded before them on their thread.

Used for (docs/flops.md):

- fbgemm table-batched embeddings: the forward's output `[B, total_D]` (a scalar argument, recorded
  only with Concrete Inputs) from the gradient of its `CppNode<SplitLookupFunction_*_Op>`; the
  backward node's cost from the forward's arguments (`embedding_tbe`);
- `aten::cat` recorded with an empty TensorList: the output from its `CatBackward0`, or, for a cat
  inside a split's backward node (`SplitBackward0`, `SplitWithSizesBackward0`), the node's
  gradients, which are the cat's inputs;
- `aten::index` whose indices were recorded without a type or shape: the output from its
  `IndexBackward0`.

A pair is used only when it is unique: one forward op and one node for a (rank, sequence number,
node name), and shapes that agree.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from math import prod
from typing import Any

import polars as pl

from traceanalyze.analysis.costs import embedding_tbe
from traceanalyze.analysis.costs.copies import COPY
from traceanalyze.analysis.costs.family import OpCost
from traceanalyze.analysis.costs.tensors import dtype_class, element_size
from traceanalyze.model import latest_on_thread

# forward op → (the autograd nodes it creates, the note on a cost recovered from one): ops whose
# output is a copy of as many input elements as it has, read once and written once
COPY_NODES = {
    "aten::cat": (("CatBackward0", "CatBackward"),
                  "output shape from its CatBackward node's gradient; inputs read at the output's dtype"),
    "aten::index": (("IndexBackward0", "IndexBackward"),
                    "output shape from its IndexBackward node's gradient; the index tensors are not counted"),
}
SPLIT_BACKWARD_NODES = ("SplitBackward0", "SplitWithSizesBackward0", "SplitBackward", "SplitWithSizesBackward")


def node_sequence_numbers(cpu_ops: pl.DataFrame, op_ids: Sequence[int] | pl.Series) -> pl.DataFrame:
    """`op_id, sequence_number` for the ops `op_ids`: the number of the autograd node each would have
    created — its own recorded number, else that of the latest op before it on its thread."""
    ids = pl.Series(op_ids, dtype=pl.Int64).unique().implode()
    # each filter after its select: a filter copies every column it keeps
    wanted = cpu_ops.select("op_id", "rank", "pid", "tid", "start_ns", pl.col("sequence_number").alias("own")).filter(
        pl.col("op_id").is_in(ids))
    recorded = (cpu_ops.select("rank", "pid", "tid", "start_ns", "op_id", pl.col("sequence_number").alias("before"))
                .filter(pl.col("before").is_not_null() & ~pl.col("op_id").is_in(ids)).drop("op_id"))
    found = latest_on_thread(wanted, recorded, left_on="start_ns", right_on="start_ns").sort("start_ns", "op_id")
    return found.select("op_id", "rank", pl.coalesce("own", "before").alias("sequence_number"))


def paired_nodes(cpu_ops: pl.DataFrame, forward: pl.DataFrame) -> pl.DataFrame:
    """For `forward` (`op_id`, `node_name`: the node each op would create) → `op_id`,
    `node_op_id`, `grad_dims`, `grad_type`: the node's first recorded argument. Only unique pairs."""
    if forward.is_empty():
        return pl.DataFrame(schema={"op_id": pl.Int64, "node_op_id": pl.Int64,
                                    "grad_dims": pl.List(pl.Int64), "grad_type": pl.String})
    numbered = node_sequence_numbers(cpu_ops, forward["op_id"]).join(forward, on="op_id")
    nodes = cpu_ops.select("rank", "sequence_number", "name", "op_id", "input_dims", "input_types").filter(
        pl.col("name").is_in(forward["node_name"].unique().to_list()) & pl.col("sequence_number").is_not_null()
    ).select(  # each filter after its select: a filter copies every column it keeps
        "rank", "sequence_number", pl.col("name").cast(pl.String).alias("node_name"),
        pl.col("op_id").alias("node_op_id"),
        pl.col("input_dims").list.first().alias("grad_dims"),
        pl.col("input_types").list.first().cast(pl.String).alias("grad_type"))
    keys = ["rank", "sequence_number", "node_name"]
    # a pair is kept when its key has one op and one node, and its op pairs with nothing else;
    # counted per key before joining, so that a repeated sequence number never multiplies rows
    nodes_per_key = nodes.group_by(keys).agg(pl.len().alias("nodes"))
    numbered = numbered.join(nodes_per_key, on=keys, how="inner").filter(
        (pl.len().over(keys) == 1) & (pl.col("nodes") == 1) & (pl.col("nodes").sum().over("op_id") == 1))
    pairs = numbered.join(nodes, on=keys, how="inner")
    return pairs.select("op_id", "node_op_id", "grad_dims", "grad_type")


def _cost_row(op_id: int, result: OpCost | str, schema: pl.Schema, note: str) -> dict[str, Any]:
    if isinstance(result, str):
        return {"op_id": op_id, "unmodeled_reason": result}
    return {"op_id": op_id, "flops": result.flops, "bytes": result.bytes, "cost_model": result.model,
            "composite": result.composite, "compute_dtype": result.dtype, "flops_source": "model",
            "cost_note": "; ".join(n for n in (result.note, note) if n), "unmodeled_reason": None}


def _cat_cost(parts: list[tuple[Sequence[int], str]], out: tuple[Sequence[int], str] | None) -> OpCost | None:
    """A cat reads its parts and writes their sum; given only the output, as many elements as it
    has are read at its dtype (for an index: the gathered elements)."""
    if out is not None:
        shape, type_name = out
        size = element_size(type_name or "")
        if size is None or not shape:
            return None
        return OpCost(0.0, 2.0 * prod(shape) * size, COPY, False, dtype_class(type_name))
    sized = [(prod(s), element_size(t or "")) for s, t in parts]
    if not sized or any(size is None for _, size in sized):
        return None
    out_size = sized[0][1]
    return OpCost(0.0, float(sum(n * size for n, size in sized) + sum(n for n, _ in sized) * out_size), COPY,
                  False, dtype_class(parts[0][1]))


def recover_costs(costs: pl.DataFrame, cpu_ops: pl.DataFrame) -> pl.DataFrame:
    """`costs` (from `op_costs`) with table-batched embeddings, TensorList-less cats and indexes
    with untyped indices costed from their paired autograd nodes; `cost_note` says where the
    missing shape came from. Ops that stay unpaired keep their reason (or get a more precise one)."""
    names = cpu_ops.select("op_id", "name", "parent_id", "input_dims", "input_types", "concrete_inputs")
    pending = costs.filter(pl.col("unmodeled_reason").is_not_null()).select("op_id").join(names, on="op_id")
    if pending.is_empty():
        return costs
    rows = [*_embedding_rows(pending, cpu_ops, costs.schema), *_cat_rows(pending, cpu_ops, costs.schema)]
    if not rows:
        return costs
    recovered = pl.DataFrame(rows, schema=costs.schema)
    return pl.concat([costs.filter(~pl.col("op_id").is_in(recovered["op_id"].implode())), recovered])


def _embedding_rows(pending: pl.DataFrame, cpu_ops: pl.DataFrame, schema: pl.Schema) -> list[dict[str, Any]]:
    """TBE forwards and their backward nodes, each costed from the pair (forward arguments,
    gradient shape); unpaired forwards from their Concrete Inputs, if any."""
    forward_names = pending["name"].unique(maintain_order=True).to_list()
    is_forward = [n for n in forward_names if embedding_tbe.FORWARD_NAME.match(n or "")]
    is_backward = [n for n in forward_names if embedding_tbe.BACKWARD_NAME.match(n or "")]
    if not is_forward and not is_backward:
        return []
    # every TBE forward in the trace: a launching backward node needs its forward's arguments
    nodes_of = {n: embedding_tbe.backward_node_name(n) for n in cpu_ops["name"].unique(maintain_order=True).to_list()
                if n and embedding_tbe.FORWARD_NAME.match(n)}
    forwards = cpu_ops.select("op_id", "name", "input_dims", "input_types", "concrete_inputs").filter(
        pl.col("name").is_in(list(nodes_of))).with_columns(
        pl.col("name").replace_strict(nodes_of, return_dtype=pl.String).alias("node_name"))
    pairs = paired_nodes(cpu_ops, forwards.select("op_id", "node_name")).join(
        forwards.select("op_id", "name", "input_dims", "input_types", "concrete_inputs"), on="op_id")
    wanted = set(pending["op_id"].to_list())
    paired_forward = set()
    rows: list[tuple[tuple[int, int], dict[str, Any]]] = []  # (where the pair is, forward 0 / node 1), row
    arguments = ["name", "input_dims", "input_types", "concrete_inputs"]
    for group, members in _distinct(pairs, [*arguments, "grad_dims", "grad_type"], ["op_id", "node_op_id"]):
        grad = (group["grad_dims"], group["grad_type"])
        args = tuple(group[name] for name in arguments)
        forward = backward = None  # each costed once per distinct arguments and gradient
        for position, op_id, node_op_id in members:
            if op_id in wanted:
                paired_forward.add(op_id)
                if forward is None:
                    forward = embedding_tbe.forward_cost(*args, output=grad)
                rows.append(((position, 0), _cost_row(op_id, forward, schema,
                                                      "output [B, total_D] from its backward node's gradient")))
            if node_op_id in wanted:
                if backward is None:
                    backward = embedding_tbe.backward_cost(*args, grad=grad)
                rows.append(((position, 1), _cost_row(node_op_id, backward, schema,
                                                      "lookup sizes from its forward op")))
    # forwards without a backward (inference) still have a cost when Concrete Inputs hold total_D
    unpaired = pending.filter(pl.col("name").is_in(is_forward) & ~pl.col("op_id").is_in(list(paired_forward)))
    for group, members in _distinct(unpaired, arguments, ["op_id"]):
        cost = embedding_tbe.forward_cost(*(group[name] for name in arguments))
        rows.extend(((len(pairs) + position, 0), _cost_row(op_id, cost, schema, "")) for position, op_id in members)
    return [row for _, row in sorted(rows, key=lambda item: item[0])]


def _distinct(frame: pl.DataFrame, keys: list[str], ids: list[str]) -> Iterator[tuple[dict[str, Any], list[tuple]]]:
    """Each distinct combination of `keys` in `frame` (a training step repeats its ops: a model
    runs once per distinct shape, not once per op) → (its values, [(row position, *ids)] of the
    rows that have it), in order of first appearance."""
    groups = frame.with_row_index("_position").group_by(keys, maintain_order=True).agg("_position", *ids)
    for group in groups.iter_rows(named=True):
        yield group, list(zip(group["_position"], *(group[name] for name in ids)))


def _cat_rows(pending: pl.DataFrame, cpu_ops: pl.DataFrame, schema: pl.Schema) -> list[dict[str, Any]]:
    """`aten::cat` without TensorList shapes and `aten::index` without index shapes: the output
    from the op's autograd node, read once (gathered) and written once; a cat inside a split's
    backward node: its parts are the node's gradients."""
    copies = pending.filter(pl.col("name").is_in(list(COPY_NODES)))
    if copies.is_empty():
        return []
    rows = []
    done = set()
    # every copy op with each node name it may have created: one pairing for all of them
    candidates = pl.concat([copies.filter(pl.col("name") == name).select("op_id", pl.lit(node).alias("node_name"))
                            for name, (node_names, _) in COPY_NODES.items() for node in node_names])
    pairs = paired_nodes(cpu_ops, candidates).join(copies.select("op_id", "name"), on="op_id")
    for group, members in _distinct(pairs.sort("op_id"), ["name", "grad_dims", "grad_type"], ["op_id"]):
        cost = _cat_cost([], (group["grad_dims"], group["grad_type"]))
        if cost is not None:
            for _, op_id in members:
                done.add(op_id)
                rows.append((op_id, _cost_row(op_id, cost, schema, COPY_NODES[group["name"]][1])))
    rows.sort(key=lambda item: item[0])  # by op id, as the pairs were
    parents = cpu_ops.select(pl.col("op_id").alias("parent_id"), pl.col("name").alias("parent_name"),
                             pl.col("input_dims").alias("parent_dims"), pl.col("input_types").alias("parent_types"))
    inside_split = copies.filter((pl.col("name") == "aten::cat") & ~pl.col("op_id").is_in(list(done))).join(
        parents, on="parent_id").filter(pl.col("parent_name").is_in(SPLIT_BACKWARD_NODES))
    split_rows = []
    for group, members in _distinct(inside_split, ["parent_dims", "parent_types"], ["op_id"]):
        parts = [(d, t) for d, t in zip(group["parent_dims"] or [], group["parent_types"] or []) if d
                 and element_size(t or "")]
        cost = _cat_cost(parts, None)
        if cost is not None:
            split_rows.extend((position, _cost_row(op_id, cost, schema,
                                                   "inputs from the gradients of the split's backward node"))
                              for position, op_id in members)
    return [row for _, row in rows] + [row for _, row in sorted(split_rows, key=lambda item: item[0])]
