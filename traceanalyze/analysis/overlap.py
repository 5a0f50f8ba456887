"""Communication hidden behind compute, per rank (HTA's comm-comp overlap).

`communication_ns` is the union of the rank's collective kernels' intervals; `overlapped_ns` the
part of it during which a compute kernel (kind `kernel`: not a collective, memcpy or memset) ran
on another stream of the same device; `exposed_ns` = communication − overlapped: the
communication time that overlap could still hide. `overlap_fraction` = overlapped /
communication is HTA's `comp_comm_overlap_ratio`.

Exposed communication is not all hideable: part of it is waiting for a late peer (a straggler),
which no overlap removes. `hideable` (the reduce of a job, where waits are known) bounds what
overlap could hide: the exposed transfer. Definitions in docs/metrics.md ("Overlap").
"""

from __future__ import annotations

import polars as pl

from traceanalyze.analysis.intervals import union_intervals
from traceanalyze.model import Trace

DEVICE = ["rank", "device"]
OVERLAP_SCHEMA = pl.Schema({
    "rank": pl.Int32, "communication_ns": pl.Int64, "overlapped_ns": pl.Int64, "exposed_ns": pl.Int64,
    "overlap_fraction": pl.Float64,
})


def _length(intervals: pl.DataFrame) -> pl.DataFrame:
    return intervals.group_by(DEVICE).agg((pl.col("end_ns") - pl.col("start_ns")).sum().alias("ns"))


def comm_overlap(trace: Trace) -> pl.DataFrame:
    """Per rank with collectives → `OVERLAP_SCHEMA` (no row for a rank without any)."""
    gpu = trace.gpu.select(*DEVICE, "kind", "start_ns", "end_ns")
    comm = gpu.filter(pl.col("kind") == "communication")
    if comm.is_empty():
        return pl.DataFrame(schema=OVERLAP_SCHEMA)
    compute = gpu.filter(pl.col("kind") == "kernel")
    both = pl.concat([comm, compute])
    comm_len = _length(union_intervals(comm, DEVICE)).rename({"ns": "comm"})
    compute_len = _length(union_intervals(compute, DEVICE)).rename({"ns": "compute"}) if compute.height else None
    union_len = _length(union_intervals(both, DEVICE)).rename({"ns": "union"})
    per_device = comm_len.join(union_len, on=DEVICE, how="left")
    if compute_len is not None:
        per_device = per_device.join(compute_len, on=DEVICE, how="left")
    else:
        per_device = per_device.with_columns(pl.lit(0, dtype=pl.Int64).alias("compute"))
    per_device = per_device.with_columns(
        (pl.col("comm") + pl.col("compute").fill_null(0) - pl.col("union")).alias("overlapped"))
    return (
        per_device.group_by("rank")
        .agg(pl.col("comm").sum().alias("communication_ns"), pl.col("overlapped").sum().alias("overlapped_ns"))
        .with_columns((pl.col("communication_ns") - pl.col("overlapped_ns")).alias("exposed_ns"),
                      (pl.col("overlapped_ns") / pl.col("communication_ns")).alias("overlap_fraction"))
        .select(list(OVERLAP_SCHEMA)).cast(OVERLAP_SCHEMA).sort("rank")  # type: ignore[arg-type]
    )


JOB_OVERLAP_SCHEMA = pl.Schema({**OVERLAP_SCHEMA, "wait_ns": pl.Int64, "hideable_ns": pl.Int64})


def hideable(overlap: pl.DataFrame, per_rank: pl.DataFrame, matched: pl.DataFrame) -> pl.DataFrame:
    """Every rank's `comm_overlap` row with `wait_ns` (its collective waits, summed over its
    matched collectives) and `hideable_ns` (an upper bound on the exposed time overlap could
    hide: its exposed transfer) → `JOB_OVERLAP_SCHEMA`.

    `per_rank`: `collectives.rank_collectives` of every rank; `matched`:
    `collectives.match_collectives`. Per collective kernel, at most min(duration − overlapped,
    transfer) of it is exposed transfer (overlapped time may lie in the wait or the transfer: the
    bound assumes the worst); a kernel left unmatched counts whole (duration − overlapped). The
    rank's sum is capped at its `exposed_ns`. Both are null for a rank none of whose collectives
    was matched (a lone rank: its waits cannot be told from its transfers)."""
    keys = ["rank", "process_group", "seq"]
    if matched.is_empty():
        return overlap.with_columns(
            pl.lit(None, dtype=pl.Int64).alias("wait_ns"), pl.lit(None, dtype=pl.Int64).alias("hideable_ns")
        ).cast(JOB_OVERLAP_SCHEMA)  # type: ignore[arg-type]
    exposed = pl.col("duration_ns") - pl.col("overlapped_ns")
    in_matched = matched.select(
        *keys, "wait_ns", pl.min_horizontal(exposed, "transfer_ns").clip(lower_bound=0).alias("bound_ns")
    )
    unmatched = per_rank.join(matched.select(keys), on=keys, how="anti").select(
        *keys, pl.lit(0, dtype=pl.Int64).alias("wait_ns"), exposed.clip(lower_bound=0).alias("bound_ns"))
    ranks = matched.select("rank").unique()
    per_kernel = pl.concat([in_matched, unmatched.join(ranks, on="rank", how="semi")], how="vertical_relaxed")
    sums = per_kernel.group_by("rank").agg(pl.col("wait_ns").sum(), pl.col("bound_ns").sum())
    return (
        overlap.join(sums, on="rank", how="left")
        .with_columns(pl.min_horizontal("bound_ns", "exposed_ns").alias("hideable_ns"))
        .select(list(JOB_OVERLAP_SCHEMA)).cast(JOB_OVERLAP_SCHEMA)  # type: ignore[arg-type]
        .sort("rank")
    )
