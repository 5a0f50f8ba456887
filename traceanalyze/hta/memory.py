"""HTA's memory bandwidth of copies and sets (hta/analyzers/trace_counters.py) over the events
`rules.events` keeps. Pure polars; `ts` in µs from the time zero, bandwidth in GB/s."""

from __future__ import annotations

import polars as pl

from traceanalyze.hta.breakdown import MEMORY, kernel_type
from traceanalyze.hta.rules import busy


def memory_type() -> pl.Expr:
    """HTA's `get_memory_kernel_type`: `Memset`, the first 11 characters of a `Memcpy…` name
    (`Memcpy HtoD`), else `Memcpy Unknown`."""
    name = pl.col("name")
    return (pl.when(name.str.starts_with("Memset")).then(pl.lit("Memset"))
            .when(~name.str.starts_with("Memcpy")).then(pl.lit("Memcpy Unknown"))
            .otherwise(name.str.slice(0, 11)))


def bandwidth_series(frame: pl.DataFrame, *, zero_ns: int = 0, by_kind: bool = False) -> pl.DataFrame:
    """One rank's bandwidth step function per memory type: each copy or set adds its bandwidth at
    its start and removes it at its end (an op of length 0 lasts 1 µs, as in HTA). The bandwidth:
    with `by_kind` (ours), bytes / the op's exact duration (GB/s), else Kineto's `memory bandwidth
    (GB/s)` argument (0 when absent, as HTA), which Kineto computed from its own unrounded
    duration. Columns `ts` (µs from `zero_ns`), `pid` (the device), `name`, `memory_bw_gbps`."""
    exact = pl.col("bytes") / (pl.col("end_ns") - pl.col("start_ns"))
    copies = busy(frame).filter(kernel_type(by_kind) == MEMORY).with_columns(
        memory_type().alias("type"),
        (exact if by_kind else pl.col("memory_bw_gbps").fill_null(0.0)).cast(pl.Float64).alias("bw"),
        pl.when(pl.col("end_ns") == pl.col("start_ns")).then(pl.col("start_ns") + 1000)
        .otherwise(pl.col("end_ns")).alias("until_ns"),
    )
    points = pl.concat([
        copies.select(pl.col("start_ns").alias("at"), "device", "type", "bw"),
        copies.select(pl.col("until_ns").alias("at"), "device", "type", (-pl.col("bw")).alias("bw")),
    ]).sort("at", maintain_order=True)
    return points.sort("type", maintain_order=True).select(
        ((pl.col("at") - zero_ns) / 1000).alias("ts"), pl.col("device").alias("pid"), pl.col("type").alias("name"),
        pl.col("bw").cum_sum().over("type").alias("memory_bw_gbps"),
    )
