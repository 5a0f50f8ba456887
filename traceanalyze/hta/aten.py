"""HTA's `get_aten_op_kernels_and_delay` (hta/analyzers/cuda_kernel_analysis.py): which kernels each
ATen op launches, how long after the op's start its first launch comes, how long after the launch
its kernel starts. Pure polars over the events `rules.events` keeps and our `cpu_ops`.

Per kernel launch (a call named `cuda…LaunchKernel…`, `cuLaunchKernel…` or `runFunction…`), the
op is the `aten::` op that wraps the call and starts last, on any thread; the launches of one op
instance (thread, name, start) make its kernel sequence, in launch order; per (op name, kernel
sequence): how many instances, the mean delay from the op's start to its first launch and from that
launch to its kernel (µs, 3 decimals)."""

from __future__ import annotations

import polars as pl

LAUNCH = r"^(cuda.*LaunchKernel|cuLaunchKernel|runFunction)"
SORTABLE = ("aten_op_name", "kernel_sequence", "occurrence_count", "avg_aten_op_launch_delay", "avg_runtime_delay")


def aten_launches(events: pl.DataFrame, aten_ops: pl.DataFrame) -> pl.DataFrame:
    """One row per kernel launch inside an ATen op: `thread_id`, `aten_op_name`, `aten_op_start`,
    `runtime_start`, `device_start`, `correlation_id`, `kernel_name` (ns). `aten_ops`: `tid`,
    `name`, `start_ns`, `end_ns`, `depth`, HTA's times. Raises ValueError, as HTA, for a launch
    inside an op with no GPU op or several (its `.item()`)."""
    calls = events.filter((pl.col("source") == "runtime") & pl.col("name").str.contains(LAUNCH))
    if calls.is_empty() or aten_ops.is_empty():
        return pl.DataFrame(schema={"thread_id": pl.Int64, "aten_op_name": pl.String, "aten_op_start": pl.Int64,
                                    "runtime_start": pl.Int64, "device_start": pl.Int64,
                                    "correlation_id": pl.Int64, "kernel_name": pl.String})
    calls = calls.with_row_index("_call")
    # the op that wraps the call and starts last; of several starting then, the outermost (HTA's
    # stable descending sort keeps the file's order, where a parent precedes its children)
    wrapping = calls.select("_call", "start_ns", "end_ns").join(
        aten_ops.rename({"start_ns": "op_start", "end_ns": "op_end"}), how="cross"
    ).filter((pl.col("op_start") <= pl.col("start_ns")) & (pl.col("op_end") >= pl.col("end_ns")))
    deepest = wrapping.sort("_call", "op_start", "depth", descending=[False, True, False]).group_by(
        "_call", maintain_order=True).first()
    kernels = events.filter(pl.col("stream") != -1).group_by("correlation").agg(
        pl.col("start_ns").alias("device_start"), pl.col("name").alias("kernel_name"))
    found = calls.join(deepest.select("_call", "tid", "name", "op_start"), on="_call", how="inner",
                       suffix="_op").join(kernels, on="correlation", how="left").sort("_call")
    if not found.is_empty() and (found["device_start"].list.len().fill_null(0) != 1).any():
        raise ValueError("a kernel launch inside an ATen op has no GPU op, or several: HTA's .item() fails")
    return found.select(
        pl.col("tid").alias("thread_id"), pl.col("name_op").alias("aten_op_name"),
        pl.col("op_start").alias("aten_op_start"), pl.col("start_ns").alias("runtime_start"),
        pl.col("device_start").list.first().alias("device_start"), pl.col("correlation").alias("correlation_id"),
        pl.col("kernel_name").list.first().alias("kernel_name"),
    )


def aten_summary(launches: pl.DataFrame, sort_by: list[str]) -> pl.DataFrame:
    """Per (op name, kernel sequence): `occurrence_count`, `avg_aten_op_launch_delay`,
    `avg_runtime_delay` (µs, 3 decimals), sorted by `sort_by` descending."""
    unknown = [c for c in sort_by if c not in SORTABLE]
    if unknown:
        raise KeyError(f"sort_by: unknown column(s) {unknown}; one of {SORTABLE}")
    instances = launches.group_by("thread_id", "aten_op_name", "aten_op_start", maintain_order=True).agg(
        pl.col("kernel_name").str.join(" -> ").alias("kernel_sequence"),
        ((pl.col("runtime_start") - pl.col("aten_op_start")).first() / 1000).alias("first_launch_delay"),
        ((pl.col("device_start") - pl.col("runtime_start")).first() / 1000).alias("first_runtime_delay"),
    )
    summary = instances.group_by("aten_op_name", "kernel_sequence").agg(
        pl.len().cast(pl.Int64).alias("occurrence_count"),
        pl.col("first_launch_delay").mean().round(3).alias("avg_aten_op_launch_delay"),
        pl.col("first_runtime_delay").mean().round(3).alias("avg_runtime_delay"),
    ).sort("aten_op_name", "kernel_sequence")
    return summary.sort(sort_by, descending=True, maintain_order=True)
