"""GPU op → the CPU op that launched it.

The op is the deepest `aten::` op enclosing the launch call on its thread (time containment); when
no `aten::` op encloses it, the deepest `cpu_op` of any name; when containment finds nothing, the
`cpu_op` whose `External id` the launch call carries. GPU ops that cannot be tied to an op keep a
reason: no launch (orphan), launched by a CUDA-graph replay, or no enclosing op.
"""

from __future__ import annotations

import polars as pl

from traceanalyze.analysis.cpu_context import by_op_id, enclosing_ops, in_place
from traceanalyze.analysis.op_tree import OpTree
from traceanalyze.model import Trace, linked_gpu


_LAUNCH_READ = ("launch_pid", "launch_tid", "launch_external_id")  # what finds the op, not kept


def kernel_ops(trace: Trace, tree: OpTree | None = None) -> pl.DataFrame:
    """Every GPU op with its launching CPU op → the columns of `gpu` plus `gpu_op_id`,
    `launch_kind`, `launch_start_ns`, `op_id`, `op_name`, `op_source` (`aten`, `cpu_op`,
    `external_id`), `annotation` (innermost non-step user annotation at the launch) and
    `no_op_reason`. `tree`: the op tree of `trace.cpu_ops` when the caller has it."""
    linked = linked_gpu(trace, launch=("launch_kind", "launch_start_ns", *_LAUNCH_READ)).with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("gpu_op_id"))
    points = linked.filter(pl.col("launch_start_ns").is_not_null()).select(
        pl.col("gpu_op_id").alias("point_id"), "rank",
        pl.col("launch_pid").alias("pid"), pl.col("launch_tid").alias("tid"),
        pl.col("launch_start_ns").alias("time_ns"),
    )
    ops = trace.cpu_ops
    tree = tree or OpTree.of(ops)
    aten, any_op, annotation = enclosing_ops(
        points, ops, [("cpu_op", None, "aten::"), ("cpu_op", None), ("user_annotation", r"^ProfilerStep#")], tree)
    # each of them is in the order of `points`
    # the op whose External id the launch carries, only for launches that no op encloses
    unenclosed = (
        points.filter(aten["op_id"].is_null() & any_op["op_id"].is_null())
        .select(pl.col("point_id").alias("gpu_op_id"))
        .join(linked.select("gpu_op_id", "rank", "launch_external_id"), on="gpu_op_id", how="inner")
        .drop_nulls("launch_external_id")
    )
    by_external = (
        unenclosed.join(
            ops.filter((pl.col("category") == "cpu_op")
                       & pl.col("external_id").is_in(unenclosed["launch_external_id"].unique().implode()))
            .select("rank", pl.col("external_id").alias("launch_external_id"), pl.col("op_id").alias("external_op_id"))
            .unique(["rank", "launch_external_id"], keep="first", maintain_order=True),
            on=["rank", "launch_external_id"],
            how="inner",
        )
        .select(pl.col("gpu_op_id").alias("point_id"), "external_op_id")
    )
    with_name = by_op_id(ops.select("op_id", "name"), "op_id", tree)
    chosen = (
        points.select("point_id", aten["op_id"].alias("aten_op_id"), any_op["op_id"].alias("any_op_id"),
                      with_name(annotation)["name"].alias("annotation"))
        .join(by_external, on="point_id", how="left", maintain_order="left")
        .with_columns(
            pl.coalesce("aten_op_id", "any_op_id", "external_op_id").alias("op_id"),
            pl.when(pl.col("aten_op_id").is_not_null()).then(pl.lit("aten"))
            .when(pl.col("any_op_id").is_not_null()).then(pl.lit("cpu_op"))
            .when(pl.col("external_op_id").is_not_null()).then(pl.lit("external_id"))
            .alias("op_source"),
        )
        .pipe(with_name)
        .select("point_id", "op_id", pl.col("name").alias("op_name"), "op_source", "annotation")
    )
    # the points are the launched GPU ops: their columns scatter back to those rows
    linked = linked.with_columns(in_place(linked.height, chosen["point_id"], chosen[c], c)
                                 for c in ("op_id", "op_name", "op_source", "annotation"))
    graph_replay = pl.col("launch_kind") == "graph_launch"
    return linked.drop(_LAUNCH_READ).with_columns(
        # a graph launch replays kernels recorded earlier: the op around the launch did not make them
        *[pl.when(graph_replay).then(None).otherwise(pl.col(c)).alias(c) for c in ("op_id", "op_name", "op_source")]
    ).with_columns(
        pl.when(pl.col("launch_start_ns").is_null()).then(pl.lit("no launch call in the trace (orphan)"))
        .when(pl.col("launch_kind") == "graph_launch").then(pl.lit("CUDA graph replay: no op per kernel"))
        .when(pl.col("op_id").is_null()).then(pl.lit("launched outside any CPU op (e.g. Triton or a custom launcher)"))
        .alias("no_op_reason")
    )
