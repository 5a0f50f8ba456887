"""Communication hidden behind compute, per rank (HTA's comm-comp overlap).

`communication_ns` is the union of the rank's collective kernels' intervals; `overlapped_ns` the
part of it during which a compute kernel (kind `kernel`: not a collective, memcpy or memset) ran
on another stream of the same device; `exposed_ns` = communication − overlapped: the
communication time that overlap could still hide. `overlap_fraction` = overlapped /
communication is HTA's `comp_comm_overlap_ratio`. Definitions in docs/metrics.md ("Overlap").
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
