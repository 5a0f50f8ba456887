"""The cost columns of a `cpu_ops` table: `op_costs` applies `registry.op_cost_or_reason` to every
distinct (name, arguments) once. Columns: docs/flops.md."""

from __future__ import annotations

from typing import Any

import polars as pl

from traceanalyze.analysis.costs.family import OpCost
from traceanalyze.analysis.costs.registry import FAMILY_NAMES, op_cost_or_reason

OP_COSTS_SCHEMA = pl.Schema(
    {
        "op_id": pl.Int64,
        "flops": pl.Float64,
        "bytes": pl.Float64,
        "cost_model": pl.Enum(FAMILY_NAMES),
        "composite": pl.Boolean,
        "compute_dtype": pl.String,
        "flops_source": pl.Enum(("trace", "model")),
        "cost_note": pl.String,
        "unmodeled_reason": pl.String,
    }
)


def _with_tensor_lists(row: dict[str, Any]) -> list[Any] | None:
    """`input_dims` with each TensorList argument replaced by its shapes from `input_tensor_lists`."""
    dims, lists, types = row.get("input_dims"), row.get("input_tensor_lists"), row.get("input_types")
    if dims is None or lists is None or types is None:
        return dims
    return [lists[i] if i < len(lists) and i < len(types) and types[i] == "TensorList" else shape
            for i, shape in enumerate(dims)]


# the columns of `cpu_ops` that `op_costs` reads
OP_COST_INPUTS = ("op_id", "name", "input_dims", "input_tensor_lists", "input_types", "concrete_inputs",
                  "input_strides", "flops", "category")


def op_costs(cpu_ops: pl.DataFrame) -> pl.DataFrame:
    """`op_cost` for every row of a `cpu_ops` table (`traceanalyze.model.CPU_OPS_SCHEMA`).

    TensorList arguments take their shapes from `input_tensor_lists` when the table has it.
    Returns one row per op with the columns of `OP_COSTS_SCHEMA`: `flops` and `bytes` (null when
    not modelled, with `unmodeled_reason` saying why), `cost_model`, `composite`, `compute_dtype`,
    `cost_note`, and `flops_source`: a `flops` value recorded in the trace wins over ours
    (`"trace"`); the bytes are always ours.

    Examples
    --------
    >>> import polars as pl
    >>> ops = pl.DataFrame({"op_id": [1], "name": ["aten::mm"], "category": ["cpu_op"],
    ...     "input_dims": [[[2, 3], [3, 4]]], "input_types": [["float", "float"]],
    ...     "input_strides": [None], "concrete_inputs": [["", ""]], "flops": [None]},
    ...     schema_overrides={"flops": pl.Float64, "input_strides": pl.List(pl.List(pl.Int64))})
    >>> op_costs(ops).select("op_id", "flops", "bytes").row(0)
    (1, 48.0, 104.0)
    """
    has_category = "category" in cpu_ops.columns
    frame = cpu_ops.select([c for c in OP_COST_INPUTS if c in cpu_ops.columns])
    # ops with the same name and arguments cost the same (each step repeats its ops): the model
    # runs once per distinct op, and a `flops` value recorded in the trace is applied per op
    keys = [c for c in frame.columns if c not in ("op_id", "flops")]
    groups = frame.with_row_index("_row").group_by(keys, maintain_order=True).agg(pl.col("_row"))
    columns: dict[str, list[Any]] = {name: [] for name in
                                     ("model_flops", "bytes", "cost_model", "composite", "compute_dtype",
                                      "model_source", "cost_note", "unmodeled_reason")}
    for row in groups.select(keys).iter_rows(named=True):
        if has_category and row["category"] == "user_annotation":
            result: OpCost | str = "user annotation, not an operator"
        else:
            result = op_cost_or_reason(row["name"] or "", _with_tensor_lists(row), row.get("input_types"),
                                       row.get("concrete_inputs"), row.get("input_strides"))
        if isinstance(result, OpCost):
            columns["model_flops"].append(result.flops)
            columns["bytes"].append(result.bytes)
            columns["cost_model"].append(result.model)
            columns["composite"].append(result.composite)
            columns["compute_dtype"].append(result.dtype)
            columns["model_source"].append("model")
            columns["cost_note"].append(result.note or None)
            columns["unmodeled_reason"].append(None)
        else:
            columns["model_flops"].append(None)
            columns["bytes"].append(None)
            columns["cost_model"].append(None)
            columns["composite"].append(None)
            columns["compute_dtype"].append(None)
            columns["model_source"].append(None)
            columns["cost_note"].append(None)
            columns["unmodeled_reason"].append(result)
    schema = {**OP_COSTS_SCHEMA, "model_flops": pl.Float64, "model_source": OP_COSTS_SCHEMA["flops_source"]}
    per_group = pl.DataFrame(columns, schema={k: schema[k] for k in columns})
    per_row = per_group.with_columns(groups["_row"]).explode("_row").sort("_row")
    trace_flops = (frame["flops"] if "flops" in frame.columns
                   else pl.Series("flops", [None] * frame.height, dtype=pl.Float64))
    return per_row.with_columns(
        frame["op_id"].alias("op_id"),
        trace_flops.cast(pl.Float64).alias("_trace_flops"),
    ).with_columns(
        pl.coalesce("_trace_flops", "model_flops").alias("flops"),
        pl.when(pl.col("_trace_flops").is_not_null()).then(pl.lit("trace")).otherwise(pl.col("model_source"))
        .cast(OP_COSTS_SCHEMA["flops_source"]).alias("flops_source"),
    ).select(OP_COSTS_SCHEMA.names()).cast(OP_COSTS_SCHEMA)  # type: ignore[arg-type]
