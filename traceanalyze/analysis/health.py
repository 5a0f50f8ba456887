"""Trace health: findings that make some of the numbers unreliable, each with a count and what it
affects. A pure function of the `Trace`; the loader already counted the events it had to skip."""

from __future__ import annotations

import polars as pl

from traceanalyze.analysis.device_match import device_id_findings
from traceanalyze.model import HEALTH_SCHEMA, LAUNCH_KINDS, Trace, linked_gpu


def trace_health(trace: Trace) -> pl.DataFrame:
    """The trace's health findings: one row per problem of the recording (docs/limits.md).

    Long: one short check per health finding, in the order docs/limits.md lists them; splitting
    them into functions would only pass `add` around."""
    rows: list[dict] = []

    def add(rank: int, finding: str, count: int, affects: str, detail: str) -> None:
        if count:
            rows.append({"rank": rank, "finding": finding, "count": count, "affects": affects, "detail": detail})

    # only the columns read below, counted rather than filtered (a filter copies every column it
    # keeps); a trace of one rank is not filtered by rank at all
    linked = linked_gpu(trace, ("start_ns",), launch=("launch_start_ns",))
    runtimes = trace.runtime.select("rank", "kind", "correlation")
    one_rank = len(trace.meta) == 1

    def of_rank(frame: pl.DataFrame, rank: int) -> pl.DataFrame:
        return frame if one_rank else frame.filter(pl.col("rank") == rank)

    for meta in trace.meta:
        rank = meta.rank
        gpu = of_rank(linked, rank)
        runtime = of_rank(runtimes, rank)
        # each table's counts in one query (a small rank's health was a dozen queries)
        orphans, skewed = _counts(gpu, pl.col("launch_start_ns").is_null(),
                                  pl.col("start_ns") < pl.col("launch_start_ns"))
        add(rank, "orphan_gpu_ops", orphans, "launch latency; kernel → op attribution",
            "GPU ops whose correlation id matches no runtime launch call")
        launch_ids = pl.col("correlation").filter(
            pl.col("kind").is_in(LAUNCH_KINDS) & pl.col("correlation").is_not_null()
        )
        launched = gpu["correlation"].drop_nulls().unique().implode()
        unlaunched, graphs, ids, distinct = runtime.select(
            (pl.col("kind").is_in(["launch", "graph_launch"]) & ~pl.col("correlation").is_in(launched)).sum(),
            (pl.col("kind") == "graph_launch").sum().alias("graphs"),
            launch_ids.len().alias("ids"), launch_ids.n_unique().alias("distinct")).row(0)
        add(rank, "launches_without_gpu_work", unlaunched or 0,
            "idle time and GPU busy time (GPU activity may be missing)",
            "kernel launch calls with no GPU op of the same correlation id")
        add(rank, "repeated_correlation_ids", ids - distinct,
            "launch latency; kernel → op attribution (GPU ops of a repeated id link to its first launch call)",
            "launch, copy and set calls whose correlation id an earlier call of the rank already carries")
        op_ids = pl.col("external_id").filter(pl.col("category") == "cpu_op").drop_nulls()
        ids, distinct = of_rank(trace.cpu_ops.select("rank", "category", "external_id"), rank).select(
            op_ids.len(), op_ids.n_unique().alias("distinct")).row(0)
        add(rank, "repeated_external_ids", ids - distinct,
            "kernel → op attribution of launches no op encloses (they link to the first op of their External id)",
            "CPU ops whose External id an earlier op of the rank already carries")
        add(rank, "clock_skew", skewed,
            "launch latency and queue depth (these ops are left out of both); the cause of the idle gap "
            "before each of them (`other`, never `host` or `launch`)",
            "GPU ops that start before their launch call began (CPU/GPU clock skew)")
        add(
            rank,
            "cuda_graph_launches",
            graphs or 0,
            "launch latency (measured to the graph's first kernel); kernel → op attribution",
            "cudaGraphLaunch/hipGraphLaunch calls: one launch replays many kernels",
        )
        steps = of_rank(trace.steps, rank).height
        if steps == 0:
            add(
                rank, "no_profiler_steps", 1, "per-step breakdown and step time", "no ProfilerStep#N spans in the trace"
            )
        if gpu.is_empty():
            add(rank, "no_gpu_events", 1, "every GPU metric (a CPU-side report only)",
                "no kernel, memcpy or memset events")
        if not meta.has_device_properties:
            add(rank, "no_device_properties", 1, "roofline (device peaks are unknown unless supplied)",
                "the trace has no deviceProperties")
        for finding, count, detail in device_id_findings(trace, rank):
            affects = (
                "device name and roofline peaks (taken from the matched entry)"
                if finding == "device_id_remapped"
                else "roofline (device peaks unknown unless supplied)"
            )
            add(rank, finding, count, affects, detail)
        declared = meta.distributed_info.get("rank") if isinstance(meta.distributed_info, dict) else None
        if declared is not None and meta.rank_source != "distributedInfo":
            add(rank, "distributed_rank_not_used", 1, "which file is which rank",
                f"distributedInfo says rank {declared}, but the folder's files do not all carry distinct "
                f"distributedInfo ranks: rank {rank} comes from the {meta.rank_source}")
        skipped = of_rank(trace.skipped, rank)
        for reason, count in zip(skipped["reason"].to_list(), skipped["count"].to_list()):
            add(rank, "malformed_events_skipped", count, "nothing computed from them", reason)
    return pl.DataFrame(rows, schema=HEALTH_SCHEMA) if rows else pl.DataFrame(schema=HEALTH_SCHEMA)


def _counts(frame: pl.DataFrame, *conditions: pl.Expr) -> list[int]:
    """How many rows of `frame` meet each of `conditions` (null counts as not), without copying them."""
    counted = frame.select(condition.sum().alias(f"c{k}") for k, condition in enumerate(conditions)).row(0)
    return [int(count or 0) for count in counted]
