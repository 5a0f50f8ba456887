"""Kernel launch latency, small kernels, and per-stream queue depth (the overhead regime).

Definitions (docs/metrics.md), for every GPU op that has a launch call (same rank and correlation):
- `launch_to_start_ns = gpu.start − launch.start`
- `queue_wait_ns`: the part of it spent behind earlier work on the same stream,
  `clip(previous_end_on_stream − launch.start, 0, launch_to_start)`
- `launch_overhead_ns = launch_to_start − queue_wait`
- `launch_cpu_ns = launch.end − launch.start` (the launch call's own CPU time)
- `launch_delay_ns = max(0, gpu.start − launch.end)` (HTA's "launch delay", for comparison)
A graph launch counts once, to the graph's first GPU op. Ops that start before their launch began
(clock skew) are flagged `skewed` and left out of the statistics. The overall statistics cover
kernels, memcpy and memset; collectives (`communication`), which wait for their peers, have their
own group in `latency_by_group`.
"""

from __future__ import annotations

import polars as pl

from traceanalyze.model import Trace, linked_gpu
from traceanalyze.scalar_columns import first_of_keys, varying_keys

STREAM = ["rank", "device", "stream"]
QUEUE_FULL_DEPTH = 1024
SUMMARY_KINDS = ("kernel", "memcpy", "memset")  # communication waits on peers: not launch latency
LATENCY_GROUPS = {"kernel": "kernels", "memcpy": "memcpy/memset", "memset": "memcpy/memset",
                  "communication": "communication"}


def launch_latency(trace: Trace) -> pl.DataFrame:
    """One row per launch call: its first GPU op by start (a kernel launch has one; a graph launch's
    first op stands for the graph), in the order of `gpu`; zero-duration ops included (their start
    is recorded) →
    `rank, device, stream, kind, name, correlation, start_ns, end_ns, duration_ns, launch_name, launch_kind,
    launch_start_ns, launch_end_ns, launch_cpu_ns, launch_to_start_ns, queue_wait_ns,
    launch_overhead_ns, launch_delay_ns, skewed`."""
    linked = linked_gpu(trace, (*STREAM, "kind", "name", "start_ns", "end_ns", "duration_ns"),
                        launch=("launch_name", "launch_kind", "launch_start_ns", "launch_end_ns"))
    # sorts and picks on the time columns and row numbers (keyed by the stream columns that vary),
    # then gathers the other columns once, in the final order
    times = linked.select(pl.int_range(pl.len(), dtype=pl.UInt32).alias("_row"), *STREAM, "correlation",
                          "start_ns", "end_ns", "launch_start_ns")
    stream = varying_keys(times, STREAM)
    busy_until = (
        times.select("_row", *stream, "start_ns", "end_ns").sort(*stream, "start_ns", "end_ns", "_row")
        .select("_row", pl.col("end_ns").cum_max().shift(1).over(stream).alias("stream_busy_until_ns"))
        .sort("_row")["stream_busy_until_ns"]
    )
    launch = varying_keys(times, ("rank", "correlation"))
    first_rows = (
        times.filter(pl.col("launch_start_ns").is_not_null())
        .select("_row", "start_ns", *launch)
        .sort("start_ns", "_row")
        .filter(first_of_keys(launch))["_row"]
    )
    # in the GPU ops' order, filtered: where every op is the first of its launch (no graph
    # replays, no orphans) the columns of `gpu` are kept as they are, not copied (400 k ops: 23 MB)
    first = pl.int_range(pl.len(), dtype=pl.UInt32).is_in(first_rows.implode())
    first_of_launch = linked.with_columns(busy_until).filter(first)
    launch_to_start = pl.col("start_ns") - pl.col("launch_start_ns")
    return (
        first_of_launch.with_columns(
            launch_to_start.alias("launch_to_start_ns"),
            (pl.col("launch_end_ns") - pl.col("launch_start_ns")).alias("launch_cpu_ns"),
            pl.max_horizontal(pl.col("start_ns") - pl.col("launch_end_ns"), pl.lit(0)).alias("launch_delay_ns"),
            (launch_to_start < 0).alias("skewed"),
        )
        .with_columns(
            pl.min_horizontal(
                pl.max_horizontal((pl.col("stream_busy_until_ns") - pl.col("launch_start_ns")).fill_null(0), pl.lit(0)),
                pl.max_horizontal(pl.col("launch_to_start_ns"), pl.lit(0)),
            ).alias("queue_wait_ns"),
        )
        .with_columns((pl.col("launch_to_start_ns") - pl.col("queue_wait_ns")).alias("launch_overhead_ns"))
        .select(
            *STREAM, "kind", "name", "correlation", "start_ns", "end_ns", "duration_ns", "launch_name",
            "launch_kind", "launch_start_ns", "launch_end_ns", "launch_cpu_ns", "launch_to_start_ns",
            "queue_wait_ns", "launch_overhead_ns", "launch_delay_ns", "skewed",
        )
    )


STAT_COLUMNS = ("launch_to_start_ns", "queue_wait_ns", "launch_overhead_ns", "launch_cpu_ns", "launch_delay_ns")


def distribution(column: str) -> list[pl.Expr]:
    """count, mean, p50, p90, p99, max of a column (nearest-rank percentiles... linear, see docs)."""
    values = pl.col(column)
    return [
        values.count().alias("count"),
        values.mean().alias("mean"),
        values.quantile(0.5, interpolation="linear").alias("p50"),
        values.quantile(0.9, interpolation="linear").alias("p90"),
        values.quantile(0.99, interpolation="linear").alias("p99"),
        values.max().alias("max"),
    ]


def latency_stats(latency: pl.DataFrame, *, by: list[str] | None = None,
                  kinds: tuple[str, ...] | None = SUMMARY_KINDS,
                  metrics: tuple[str, ...] = STAT_COLUMNS) -> pl.DataFrame:
    """Distributions of each latency metric (of `metrics`: by default every one) over non-skewed
    launches of GPU ops of `kinds` (default: kernels, memcpy and memset; None: all) → long table
    `[*by], metric, count, mean, p50, p90, p99, max` (ns), a metric's rows after another's."""
    # only the columns read: a filter copies every column it keeps (of 400 k launches)
    valid = latency.select(*(by or []), "skewed", "kind", *metrics).filter(~pl.col("skewed"))
    if kinds is not None:
        valid = valid.filter(pl.col("kind").is_in(kinds))  # on the Enum: no String per row
    # every metric's figures in one pass over the rows (one grouping), then a block of rows each
    figures = [
        expr.alias(f"{metric}\x00{expr.meta.output_name()}") for metric in metrics for expr in distribution(metric)
    ]
    wide = valid.group_by(by, maintain_order=True).agg(figures) if by else valid.select(figures)
    names = [expr.meta.output_name() for expr in distribution(metrics[0])]
    return pl.concat([wide.select(*(by or []), pl.lit(metric).alias("metric"),
                                  *(pl.col(f"{metric}\x00{name}").alias(name) for name in names))
                      for metric in metrics], how="vertical_relaxed")


def latency_by_group(latency: pl.DataFrame, *, by_rank: bool = False) -> pl.DataFrame:
    """`latency_stats` per group of GPU op kind (`LATENCY_GROUPS`: kernels, memcpy/memset,
    communication), groups in that order, groups without launches left out → `group, metric, …`
    (`by_rank`: per rank too, a `rank` column first, ranks in order)."""
    order = list(dict.fromkeys(LATENCY_GROUPS.values()))
    ranks = ["rank"] if by_rank else []
    grouped = latency.select(*ranks, "skewed", "kind", *STAT_COLUMNS).with_columns(
        pl.col("kind").replace_strict(LATENCY_GROUPS, default=None, return_dtype=pl.String).alias("group")
    ).drop_nulls("group")
    position = pl.col("group").replace_strict(order, list(range(len(order))))
    return (
        latency_stats(grouped, by=[*ranks, "group"], kinds=None).filter(pl.col("count") > 0)
        .sort(*ranks, position, maintain_order=True)
    )


def latency_by_kernel(latency: pl.DataFrame, *, limit: int | None = None, by_rank: bool = False) -> pl.DataFrame:
    """`launch_to_start` per kernel name (kernels only, no collectives, no skewed launches), most
    launches first → `name, count, mean, p50, p90, p99, max` (ns) (`by_rank`: per rank too, a
    `rank` column first, ranks in order; `limit` then applies to all of them)."""
    ranks = ["rank"] if by_rank else []
    stats = latency_stats(latency, by=[*ranks, "name"], kinds=("kernel",), metrics=("launch_to_start_ns",))
    ordered = stats.drop("metric").sort([*ranks, "count", "mean", "name"],
                                        descending=[*(False for _ in ranks), True, True, False])
    return ordered if limit is None else ordered.head(limit)


def small_kernels(trace: Trace, *, latency: pl.DataFrame | None = None) -> pl.DataFrame:
    """Kernels that run shorter than their launch call takes on the CPU: for these the GPU cannot
    be kept busy by one launching thread → the per-kernel rows of `launch_latency` with
    `small = 0 < duration_ns < launch_cpu_ns` (a kernel recorded with no duration is not known to be
    short: it is not small). `latency`: `launch_latency(trace)` if already computed."""
    return small_kernels_of(launch_latency(trace) if latency is None else latency)


def small_kernels_of(latency: pl.DataFrame) -> pl.DataFrame:
    """`small_kernels` from the rows of `launch_latency`."""
    return latency.filter(pl.col("kind") == "kernel").with_columns(
        ((pl.col("duration_ns") > 0) & (pl.col("duration_ns") < pl.col("launch_cpu_ns"))).alias("small")
    )


# the columns of `small_kernels` that its runs and its summary (`report.summaries`) read (a sort or
# filter copies every column it keeps)
SMALL_READ = (*STREAM, "kind", "name", "start_ns", "end_ns", "duration_ns", "launch_cpu_ns", "small")


def small_kernel_runs(trace: Trace, *, min_run: int = 8, small: pl.DataFrame | None = None) -> pl.DataFrame:
    """Runs of at least `min_run` back-to-back small kernels on one stream (the pattern that CUDA
    graphs or torch.compile remove): a small kernel continues the run of the small kernel before it
    on its stream when it starts at most its own launch call's CPU time after that one ends (the
    idle a launch-bound sequence leaves) → `rank, device, stream, kernels, first_start_ns,
    last_end_ns, span_ns, busy_ns, first_kernel, last_kernel`, most kernels first (then the longest
    span, then in stream and start order). `small`:
    `small_kernels(trace)` if already computed."""
    kernels = (small_kernels(trace) if small is None else small).select(SMALL_READ).sort(*STREAM, "start_ns")
    previous_small = pl.col("small").shift(1).over(STREAM)
    idle_before = pl.col("start_ns") - pl.col("end_ns").shift(1).over(STREAM)
    continues = pl.col("small") & previous_small & (idle_before <= pl.col("launch_cpu_ns"))
    runs = kernels.with_columns((~continues.fill_null(False)).cum_sum().over(STREAM).alias("_run")).filter(
        pl.col("small")
    )
    return (
        runs.group_by(*STREAM, "_run")
        .agg(
            pl.len().alias("kernels"),
            pl.col("start_ns").min().alias("first_start_ns"),
            pl.col("end_ns").max().alias("last_end_ns"),
            pl.col("duration_ns").sum().alias("busy_ns"),
            pl.col("name").first().alias("first_kernel"),
            pl.col("name").last().alias("last_kernel"),
        )
        .filter(pl.col("kernels") >= min_run)
        .with_columns((pl.col("last_end_ns") - pl.col("first_start_ns")).alias("span_ns"))
        .drop("_run")
        # ties (as many kernels over as long a span) in stream and time order: the same order
        # however the rows were grouped (one rank, or several analysed together)
        .sort(["kernels", "span_ns", *STREAM, "first_start_ns"],
              descending=[True, True, *(False for _ in STREAM), False])
    )


def queue_depth(trace: Trace) -> pl.DataFrame:
    """Launch-queue depth per stream over time: GPU ops launched and not yet started. Each op with
    a launch adds 1 at its launch start and removes 1 at its own start (a graph launch enqueues all
    of its ops at once) → `rank, device, stream, time_ns, depth` after each change, streams in
    order. Ops that start when they are launched never wait, and ops that start before it (clock
    skew) are left out, so the depth is never negative."""
    timelines = [
        timeline.with_columns(stream).select(*STREAM, "time_ns", "depth")
        for stream, timeline in _stream_timelines(_queued_ops(trace))
    ]
    if timelines:
        return pl.concat(timelines, rechunk=True)
    return pl.DataFrame(schema={**trace.gpu.select(STREAM).schema, "time_ns": pl.Int64, "depth": pl.Int64})


def queue_summary(trace: Trace, *, full_depth: int = QUEUE_FULL_DEPTH) -> pl.DataFrame:
    """Per stream → `rank, device, stream, max_depth, mean_depth, time_at_full_ns` where mean
    depth is time-weighted over the stream's queue timeline and `time_at_full_ns` is the time
    spent with `full_depth` (1024: the launch queue is full) or more ops waiting. Up to
    `ONE_QUERY_MAX_OPS` queued ops (a rank, or small ranks analysed together), every stream's
    timeline in one query (a query or more a stream cost a small rank of a batch 1 ms); more, one
    stream's timeline at a time, as `queue_depth` builds them (a sort by one integer key each: the
    one query's sort by stream and time took four times as long on 2 M ops). The same figures."""
    ops = _queued_ops(trace)
    if ops.is_empty():
        return pl.DataFrame(schema={**trace.gpu.select(STREAM).schema, "max_depth": pl.Int64,
                                    "mean_depth": pl.Float64, "time_at_full_ns": pl.Int64})
    if ops.height > ONE_QUERY_MAX_OPS:
        return pl.concat([timeline.select(*stream, *_queue_figures(full_depth))
                          for stream, timeline in _stream_timelines(ops)], rechunk=True)
    changes = pl.concat([  # −1 at each start, +1 at each launch; at equal times starts first
        ops.lazy().select(*STREAM, pl.col("start_ns").alias("time_ns"), pl.lit(-1, pl.Int64).alias("delta")),
        ops.lazy().select(*STREAM, pl.col("launch_start_ns").alias("time_ns"), pl.lit(1, pl.Int64).alias("delta")),
    ])
    return (
        changes.sort(*STREAM, "time_ns", "delta", nulls_last=False)
        .with_columns(pl.col("delta").cum_sum().over(STREAM).alias("depth"))
        .group_by(STREAM, maintain_order=True)  # streams in order, nulls first
        .agg(*_queue_figures(full_depth))
        .collect(engine="in-memory")
    )


ONE_QUERY_MAX_OPS = 100_000


def _queue_figures(full_depth: int) -> list[pl.Expr]:
    """max_depth, mean_depth and time_at_full_ns of one stream's `time_ns, depth` timeline (each
    depth held until the next change)."""
    held = (pl.col("time_ns").shift(-1) - pl.col("time_ns")).fill_null(0)
    return [pl.col("depth").max().alias("max_depth"),
            ((pl.col("depth") * held).sum() / held.sum()).alias("mean_depth"),
            held.filter(pl.col("depth") >= full_depth).sum().alias("time_at_full_ns")]


def _queued_ops(trace: Trace) -> pl.DataFrame:
    """`STREAM`, launch_start_ns, start_ns of the GPU ops that started after their launch began."""
    return linked_gpu(trace, (*STREAM, "start_ns"), launch=("launch_start_ns",)).select(
        *STREAM, "launch_start_ns", "start_ns").filter(pl.col("start_ns") > pl.col("launch_start_ns"))


def _stream_timelines(ops: pl.DataFrame):
    """Each stream's queue timeline of the queued `ops`, streams in order: (its `STREAM` values as
    literal columns, `time_ns, depth` after each change). At equal times, starts (−1) are applied
    before launches (+1)."""
    if ops.is_empty():
        return
    schema = ops.schema
    parts = ops.partition_by(STREAM, as_dict=True, maintain_order=False)
    for values, part in sorted(
        parts.items(), key=lambda item: [(value is not None, value) for value in item[0]]
    ):  # nulls first
        yield ([pl.lit(value, schema[name]).alias(name) for name, value in zip(STREAM, values)],
               _depth_timeline(part["launch_start_ns"], part["start_ns"]))


def _depth_timeline(launches: pl.Series, starts: pl.Series) -> pl.DataFrame:
    """`time_ns, depth` of one stream: +1 at each launch, −1 at each start, in time order."""
    low = min(launches.min(), starts.min())
    if max(launches.max(), starts.max()) - low < 2**61:  # one integer key: time, then starts before launches
        keys = pl.concat([(starts - low) * 2, (launches - low) * 2 + 1]).sort()
        return pl.DataFrame([(keys // 2 + low).alias("time_ns"), ((keys % 2) * 2 - 1).cum_sum().alias("depth")])
    events = pl.DataFrame([pl.concat([starts, launches]).alias("time_ns"),
                           pl.Series("delta", [-1] * len(starts) + [1] * len(launches), dtype=pl.Int64)])
    return events.sort("time_ns", "delta").select("time_ns", pl.col("delta").cum_sum().alias("depth"))
