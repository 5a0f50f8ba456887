"""HTA's breakdowns over the events `rules.events` keeps: temporal breakdown, kernel breakdown,
communication-computation overlap. Pure polars; every time in µs (float64, exact ns / 1000),
columns named as HTA names them (hta/analyzers/breakdown_analysis.py, communication_analysis.py)."""

from __future__ import annotations

import numpy as np
import polars as pl

from traceanalyze.hta.rules import busy

COMPUTATION, COMMUNICATION, MEMORY, OTHER = "COMPUTATION", "COMMUNICATION", "MEMORY", "OTHER"


KIND_TYPES = {"kernel": COMPUTATION, "communication": COMMUNICATION, "memcpy": MEMORY, "memset": MEMORY}


def kernel_type(by_kind: bool = False) -> pl.Expr:
    """HTA's `get_kernel_type` of a name (hta/utils/utils.py), as an expression on `name`; with
    `by_kind`, ours: from the GPU op's `kind` (a collective is communication whatever its name)."""
    if by_kind:
        return pl.col("kind").replace_strict(KIND_TYPES, default=OTHER, return_dtype=pl.String)
    name = pl.col("name")
    not_compute = (name.str.contains(r"^nccl.*Kernel") | name.str.contains(r"^.*Memcpy")
                   | name.str.starts_with("Memset") | name.str.contains(r"^.*Sync"))
    return (
        pl.when(name.str.contains(r"^nccl.*Kernel")).then(pl.lit(COMMUNICATION))
        .when(name.str.contains(r"^(Memcpy|Memset|dma)")).then(pl.lit(MEMORY))
        .when(~not_compute).then(pl.lit(COMPUTATION))
        .otherwise(pl.lit(OTHER))
    )


def merged(frame: pl.DataFrame) -> pl.DataFrame:
    """HTA's `merge_kernel_intervals`: sorted by start, an interval starts a new group when it
    starts after every earlier end; (`start_ns`, `end_ns`) per group."""
    if frame.is_empty():
        return pl.DataFrame(schema={"start_ns": pl.Int64, "end_ns": pl.Int64})
    ordered = frame.select("start_ns", "end_ns").sort("start_ns", maintain_order=True)
    group = (pl.col("start_ns") > pl.col("end_ns").shift(1).cum_max()).fill_null(False).cum_sum()
    return ordered.group_by(group.alias("group"), maintain_order=True).agg(
        pl.col("start_ns").min(), pl.col("end_ns").max()
    ).drop("group")


def _length(intervals: pl.DataFrame) -> int:
    return int(intervals["end_ns"].sum() - intervals["start_ns"].sum()) if intervals.height else 0


def pctg(numerator: pl.Series, denominator: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """(ratio, `round(100 · ratio, 2)`) computed as pandas does (numpy's round)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = numerator.to_numpy().astype(np.float64) / denominator.to_numpy().astype(np.float64)
    return ratio, np.round(100 * ratio, 2)


def temporal_breakdown(events: dict[int, pl.DataFrame], *, by_kind: bool = False) -> pl.DataFrame:
    """Per rank: idle, compute and non-compute time in the window of its busy rows (µs)."""
    rows = []
    for rank, frame in events.items():
        gpu = busy(frame)
        if gpu.is_empty():
            continue
        all_merged = merged(gpu)
        window = int(all_merged["end_ns"][-1] - all_merged["start_ns"][0])
        idle = window - _length(all_merged)
        compute = _length(merged(gpu.filter(kernel_type(by_kind) == COMPUTATION)))
        rows.append((rank, idle, compute, window - compute - idle, window))
    columns = ["rank", "idle_time(us)", "compute_time(us)", "non_compute_time(us)", "kernel_time(us)"]
    table = pl.DataFrame(rows, schema={"rank": pl.Int64, **{c: pl.Int64 for c in columns[1:]}}, orient="row")
    table = table.with_columns(pl.col(c) / 1000 for c in columns[1:])
    for column in ("idle_time", "compute_time", "non_compute_time"):
        _, rounded = pctg(table[f"{column}(us)"], table["kernel_time(us)"])
        table = table.with_columns(pl.Series(f"{column}_pctg", rounded, pl.Float64))
    return table


def _sweep(intervals: list[tuple[int, pl.DataFrame]]) -> pl.DataFrame:
    """HTA's running-status sweep: each (bit, merged intervals) adds `bit` at its starts and
    removes it at its ends; → (`running`, `duration_ns`) of every segment between two events."""
    points = pl.concat([
        pl.concat([part.select(pl.col("start_ns").alias("time"), pl.lit(bit, pl.Int64).alias("status")),
                   part.select(pl.col("end_ns").alias("time"), pl.lit(-bit, pl.Int64).alias("status"))])
        for bit, part in intervals
    ]).sort("time", maintain_order=True)
    return points.select(
        pl.col("status").cum_sum().alias("running"),
        (pl.col("time").shift(-1) - pl.col("time")).alias("duration_ns"),
    ).drop_nulls()


def comm_comp_overlap(events: dict[int, pl.DataFrame], *, by_kind: bool = False) -> pl.DataFrame:
    """Per rank: the share of merged communication time that merged computation overlaps (%)."""
    rows = []
    for rank, frame in events.items():
        gpu = busy(frame).with_columns(kernel_type(by_kind).alias("kernel_type"))
        comm = merged(gpu.filter(pl.col("kernel_type") == COMMUNICATION))
        comp = merged(gpu.filter(pl.col("kernel_type") == COMPUTATION))
        overlap = _sweep([(1, comm), (2, comp)]).filter(pl.col("running") == 3)["duration_ns"].sum()
        rows.append((rank, overlap, _length(comm)))
    table = pl.DataFrame(rows, schema={"rank": pl.Int64, "overlap": pl.Int64, "comm": pl.Int64}, orient="row")
    _, rounded = pctg(table["overlap"], table["comm"])
    return table.select("rank", pl.Series("comp_comm_overlap_pctg", rounded, pl.Float64))


def kernel_type_time(gpu: pl.DataFrame, types: list[str]) -> pl.DataFrame:
    """One rank's time per kernel type and per overlap of types (`A overlapping B`), µs."""
    parts = [(1 << i, merged(gpu.filter(pl.col("kernel_type") == t))) for i, t in enumerate(types)]
    segments = _sweep(parts).filter(pl.col("running") > 0)
    labels = {}
    for running in segments["running"].unique().to_list():
        labels[running] = " overlapping ".join(t for i, t in enumerate(types) if running & (1 << i))
    return segments.with_columns(
        pl.col("running").replace_strict(labels, return_dtype=pl.String).alias("kernel_type")
    ).group_by("kernel_type").agg(pl.col("duration_ns").sum().alias("sum"))


def kernel_breakdown(events: dict[int, pl.DataFrame], *, duration_ratio: float, num_kernels: int,
                     include_memory_kernels: bool, by_kind: bool = False) -> tuple[pl.DataFrame, pl.DataFrame]:
    """HTA's `get_gpu_kernel_breakdown`: (time per kernel type over all ranks, per rank the top
    kernels of each type with the rest as `others`), in µs."""
    types = [COMPUTATION, COMMUNICATION] + ([MEMORY] if include_memory_kernels else [])
    per_type, per_kernel = [], []
    for rank, frame in events.items():
        gpu = busy(frame).with_columns(kernel_type(by_kind).alias("kernel_type"),
                                       (pl.col("end_ns") - pl.col("start_ns")).alias("dur"))
        if gpu.is_empty():
            continue
        per_type.append(kernel_type_time(gpu, types))
        for kind in types:
            top = aggregate_kernels(gpu.filter(pl.col("kernel_type") == kind), duration_ratio, num_kernels)
            per_kernel.append(top.with_columns(pl.lit(kind).alias("kernel_type"), pl.lit(rank, pl.Int64).alias("rank")))
    type_schema = {"kernel_type": pl.String, "sum": pl.Int64}
    by_type = pl.concat(per_type) if per_type else pl.DataFrame(schema=type_schema)
    by_type = by_type.group_by("kernel_type").agg(pl.col("sum").sum()).sort("sum", descending=True, maintain_order=True)
    by_type = by_type.with_columns(pl.col("sum") / 1000)
    ratio, _ = pctg(by_type["sum"], pl.Series([by_type["sum"].sum()] * by_type.height))
    by_type = by_type.with_columns(pl.Series("percentage", np.round(100 * ratio, 1), pl.Float64))
    kernels = pl.concat(per_kernel) if per_kernel else pl.DataFrame(schema=KERNEL_SCHEMA)
    kernels = kernels.sort("kernel_type", "name", "rank").rename(
        {"sum": "sum (us)", "mean": "mean (us)", "max": "max (us)", "min": "min (us)", "std": "stddev"})
    columns = ["name", "sum (us)", "max (us)", "min (us)", "stddev", "mean (us)", "kernel_type", "rank"]
    return by_type, kernels.select(columns)


KERNEL_SCHEMA = {"name": pl.String, "sum": pl.Float64, "max": pl.Float64, "min": pl.Float64, "mean": pl.Float64,
                 "std": pl.Float64, "kernel_type": pl.String, "rank": pl.Int64}


def aggregate_kernels(gpu: pl.DataFrame, duration_ratio: float, num_kernels: int,
                      allowlist: list[str] | None = None) -> pl.DataFrame:
    """HTA's `_aggr_gpu_kernel_time`: per name the sum, max, min, mean and std (µs) of durations,
    by sum descending; past `num_kernels` names, or past the `duration_ratio` quantile of the
    running sum, the names become `others`, and then every column is an aggregate of the *sums*
    (so a kept kernel's max, min and mean are its sum, its std 0): HTA's rule, kept. The names in
    `allowlist` are never grouped; without one, those whose sum is negative (HTA's mask `sum < 0`)."""
    us = pl.col("dur") / 1000
    table = gpu.group_by("name").agg(
        us.sum().alias("sum"), us.max().alias("max"), us.min().alias("min"), us.mean().alias("mean"),
        us.std().fill_null(0).fill_nan(0).alias("std"),
    ).sort("sum", descending=True, maintain_order=True).with_columns(pl.col("name").cast(pl.String))
    if table.height <= num_kernels:
        return table
    running = table["sum"].cum_sum().to_numpy()
    threshold = np.quantile(running, duration_ratio)
    # HTA keeps the names where `sum < 0` (its "always false" mask: a kernel of negative total
    # length, which only its rounding makes, stays by name)
    keep = table["name"].is_in(allowlist) if allowlist is not None else table["sum"] < 0
    others = ((running > threshold) | (np.arange(table.height) >= num_kernels)) & ~keep.to_numpy()
    table = table.with_columns(
        pl.when(pl.Series(others)).then(pl.lit("others")).otherwise(pl.col("name")).alias("name"))
    return table.group_by("name").agg(
        pl.col("sum").sum().alias("sum"), pl.col("sum").max().alias("max"), pl.col("sum").min().alias("min"),
        pl.col("sum").mean().alias("mean"), pl.col("sum").std().fill_null(0).alias("std"),
    ).sort("name")


def annotation_breakdown(annotations: dict[int, pl.DataFrame], *, duration_ratio: float, num_kernels: int,
                         allowlist: list[str] | None) -> pl.DataFrame:
    """HTA's `get_gpu_user_annotation_breakdown`: per rank, the annotations by total time (µs),
    `aggregate_kernels`' rule; columns `name`, `sum (us)`, `max (us)`, `min (us)`, `stddev`,
    `mean (us)`, `rank`, by rank and name."""
    parts = []
    for rank, frame in annotations.items():
        durations = frame.with_columns((pl.col("end_ns") - pl.col("start_ns")).alias("dur"))
        parts.append(aggregate_kernels(durations, duration_ratio, num_kernels, allowlist).with_columns(
            pl.lit(rank, pl.Int64).alias("rank")))
    schema = {k: v for k, v in KERNEL_SCHEMA.items() if k != "kernel_type"}
    table = pl.concat([p.select(list(schema)).cast(schema) for p in parts]) if parts else pl.DataFrame(schema=schema)
    return table.sort("rank", "name").rename(
        {"sum": "sum (us)", "mean": "mean (us)", "max": "max (us)", "min": "min (us)", "std": "stddev"}
    ).select("name", "sum (us)", "max (us)", "min (us)", "stddev", "mean (us)", "rank")
