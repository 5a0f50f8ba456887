"""GPU op → the CPU op that launched it.

The op is the deepest `aten::` op enclosing the launch call on its thread (time containment); when
no `aten::` op encloses it, the deepest `cpu_op` of any name; when containment finds nothing, the
`cpu_op` whose `External id` the launch call carries. GPU ops that cannot be tied to an op keep a
reason: no launch (orphan), launched by a CUDA-graph replay, or no enclosing op.
"""

from __future__ import annotations

import polars as pl

from traceanalyze.analysis.cpu_context import enclosing_op
from traceanalyze.health import linked_gpu
from traceanalyze.model import Trace


def kernel_ops(trace: Trace) -> pl.DataFrame:
    """Every GPU op with its launching CPU op → the columns of `gpu` plus `gpu_op_id`,
    `launch_kind`, `launch_start_ns`, `op_id`, `op_name`, `op_source` (`aten`, `cpu_op`,
    `external_id`), `annotation` (innermost non-step user annotation at the launch) and
    `no_op_reason`."""
    linked = linked_gpu(trace).with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("gpu_op_id"))
    points = linked.filter(pl.col("launch_start_ns").is_not_null()).select(
        pl.col("gpu_op_id").alias("point_id"), "rank",
        pl.col("launch_pid").alias("pid"), pl.col("launch_tid").alias("tid"),
        pl.col("launch_start_ns").alias("time_ns"),
    )
    ops = trace.cpu_ops
    aten = enclosing_op(points, ops.filter(pl.col("name").str.starts_with("aten::")).pipe(_reparent, ops), category="cpu_op")
    any_op = enclosing_op(points, ops, category="cpu_op")
    annotation = enclosing_op(points, ops, category="user_annotation", exclude_name_pattern=r"^ProfilerStep#")
    by_external = (
        linked.filter(pl.col("launch_external_id").is_not_null())
        .join(
            ops.filter(pl.col("category") == "cpu_op").select("rank", pl.col("external_id").alias("launch_external_id"), pl.col("op_id").alias("external_op_id")).unique(["rank", "launch_external_id"]),
            on=["rank", "launch_external_id"],
            how="inner",
        )
        .select(pl.col("gpu_op_id").alias("point_id"), "external_op_id")
    )
    names = ops.select("op_id", "name")
    chosen = (
        points.select("point_id")
        .join(aten.rename({"op_id": "aten_op_id"}), on="point_id", how="left")
        .join(any_op.rename({"op_id": "any_op_id"}), on="point_id", how="left")
        .join(by_external, on="point_id", how="left")
        .join(annotation.join(names, on="op_id", how="left").select("point_id", pl.col("name").alias("annotation")), on="point_id", how="left")
        .with_columns(
            pl.coalesce("aten_op_id", "any_op_id", "external_op_id").alias("op_id"),
            pl.when(pl.col("aten_op_id").is_not_null()).then(pl.lit("aten"))
            .when(pl.col("any_op_id").is_not_null()).then(pl.lit("cpu_op"))
            .when(pl.col("external_op_id").is_not_null()).then(pl.lit("external_id"))
            .alias("op_source"),
        )
        .join(names, on="op_id", how="left")
        .select(pl.col("point_id").alias("gpu_op_id"), "op_id", pl.col("name").alias("op_name"), "op_source", "annotation")
    )
    graph_replay = pl.col("launch_kind") == "graph_launch"
    return linked.join(chosen, on="gpu_op_id", how="left").with_columns(
        # a graph launch replays kernels recorded earlier: the op around the launch did not make them
        *[pl.when(graph_replay).then(None).otherwise(pl.col(c)).alias(c) for c in ("op_id", "op_name", "op_source")]
    ).with_columns(
        pl.when(pl.col("launch_start_ns").is_null()).then(pl.lit("no launch call in the trace (orphan)"))
        .when(pl.col("launch_kind") == "graph_launch").then(pl.lit("CUDA graph replay: no op per kernel"))
        .when(pl.col("op_id").is_null()).then(pl.lit("launched outside any CPU op (e.g. Triton or a custom launcher)"))
        .alias("no_op_reason")
    )


def _reparent(aten_ops: pl.DataFrame, all_ops: pl.DataFrame) -> pl.DataFrame:
    """`aten::` ops with `parent_id` pointing at their nearest `aten::` ancestor, so that the
    parent walk of `enclosing_op` stays among `aten::` ops."""
    parents = all_ops.select("op_id", "parent_id", "name")
    frame = aten_ops.with_columns(pl.col("parent_id").alias("_candidate"))
    resolved = []
    pending = frame
    while pending.height:
        step = pending.join(parents.rename({"op_id": "_candidate", "parent_id": "_next", "name": "_name"}), on="_candidate", how="left")
        done = step.filter(pl.col("_candidate").is_null() | pl.col("_name").str.starts_with("aten::"))
        resolved.append(done.with_columns(pl.col("_candidate").alias("parent_id")).drop("_next", "_name", "_candidate"))
        pending = step.filter(pl.col("_candidate").is_not_null() & ~pl.col("_name").str.starts_with("aten::")).with_columns(
            pl.col("_next").alias("_candidate")
        ).drop("_next", "_name")
    return pl.concat(resolved).select(aten_ops.columns) if resolved else aten_ops
