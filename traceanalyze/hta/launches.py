"""HTA's per-rank launch views over the events `rules.events` keeps: launch statistics, idle time
by stream, queue length, profiler steps. Pure polars; times in µs (float64, exact ns / 1000),
columns named as HTA names them (hta/analyzers/cuda_kernel_analysis.py, breakdown_analysis.py,
trace_counters.py, straggler.py)."""

from __future__ import annotations

import re

import numpy as np
import polars as pl

from traceanalyze.analysis.launch import launch_latency
from traceanalyze.hta.rules import QUEUE_LAUNCHES, busy
from traceanalyze.model import Trace

KERNEL_LAUNCHES = ("cudaLaunchKernel", "cudaLaunchKernelExC", "runFunction - job_prep_and_submit_for_execution")
MEMORY_LAUNCHES = ("cudaMemcpyAsync", "cudaMemsetAsync")
IDLE_CATEGORIES = {0: "host_wait", 1: "kernel_wait", 2: "other"}
STEP_NUMBER = re.compile(r"ProfilerStep\s*#\s*(\d+)")
LAUNCH_SCHEMA = {"correlation": pl.Int64, "cpu_duration": pl.Float64, "gpu_duration": pl.Float64,
                 "launch_delay": pl.Float64}


def launch_stats(frame: pl.DataFrame, *, include_memory_events: bool) -> pl.DataFrame:
    """One rank's `correlation`, `cpu_duration`, `gpu_duration`, `launch_delay` (µs, clipped at
    0): every CPU-side row against every GPU-side row of a correlation that one of HTA's launch
    calls holds."""
    names = KERNEL_LAUNCHES + (MEMORY_LAUNCHES if include_memory_events else ())
    launched = frame.filter(pl.col("name").is_in(names))["correlation"].drop_nulls().unique().implode()
    chosen = frame.filter(pl.col("correlation").is_in(launched))
    cpu = chosen.filter(pl.col("stream") == -1)
    gpu = busy(chosen)
    joined = cpu.join(gpu, on="correlation", how="inner", suffix="_gpu", maintain_order="left")
    return joined.select(
        "correlation",
        ((pl.col("end_ns") - pl.col("start_ns")) / 1000).alias("cpu_duration"),
        ((pl.col("end_ns_gpu") - pl.col("start_ns_gpu")) / 1000).alias("gpu_duration"),
        (pl.max_horizontal(pl.col("start_ns_gpu") - pl.col("end_ns"), pl.lit(0)) / 1000).alias("launch_delay"),
    ).cast(LAUNCH_SCHEMA)  # type: ignore[arg-type]


def our_launch_stats(trace: Trace, *, include_memory_events: bool) -> pl.DataFrame:
    """`launch_stats`' columns from `analysis.launch.launch_latency`: every launch call, graph
    launches measured to their first op; without `include_memory_events`, kernel launches only."""
    latency = launch_latency(trace)
    if not include_memory_events:
        latency = latency.filter(pl.col("launch_kind").cast(pl.String).is_in(["launch", "graph_launch"]))
    return latency.select(
        "correlation", (pl.col("launch_cpu_ns") / 1000).alias("cpu_duration"),
        (pl.col("duration_ns") / 1000).alias("gpu_duration"), (pl.col("launch_delay_ns") / 1000).alias("launch_delay"),
    ).cast(LAUNCH_SCHEMA)  # type: ignore[arg-type]


def profiler_steps(steps: pl.DataFrame, cutoff: int | None) -> set[int]:
    """The numbers of one rank's `ProfilerStep#N` steps HTA keeps: those starting before `cutoff`
    (`None`: every step); `steps` with HTA's times."""
    numbers = set()
    for name, start in steps.select("name", "start_ns").iter_rows():
        match = STEP_NUMBER.match(str(name))
        if match and (cutoff is None or start < cutoff):
            numbers.add(int(match.group(1)))
    return numbers


def stream_idle(frame: pl.DataFrame, *, consecutive_kernel_delay_us: float, streams: list[int] | None,
                orphan_launch_ns: int | None = None) -> pl.DataFrame:
    """HTA's idle time per stream: the gap before each GPU op on its stream (µs) is `host_wait`
    when its launch began after the previous op ended, `kernel_wait` when it is shorter than
    `consecutive_kernel_delay_us`, `other` otherwise. Columns `stream`, `idle_category` (0, 1, 2),
    `idle_interval` (µs; null for each stream's first op). `orphan_launch_ns`: the launch time HTA
    gives a GPU op without a launch (its join reads "no link", 0, as row 0: the file's first event)."""
    gpu = frame.filter((pl.col("source") == "gpu") & (pl.col("stream") != -1))
    launches = frame.filter(pl.col("source") == "runtime").group_by("correlation").agg(
        pl.col("start_ns").last().alias("launch_ns"))
    gpu = gpu.join(launches, on="correlation", how="left", maintain_order="left")
    if orphan_launch_ns is not None:
        gpu = gpu.with_columns(pl.col("launch_ns").fill_null(orphan_launch_ns))
    chosen = streams if streams else gpu["stream"].unique(maintain_order=True).to_list()
    gpu = gpu.filter(pl.col("stream").is_in(chosen)).sort("stream", "start_ns", maintain_order=True)
    previous_end = pl.col("end_ns").shift(1).over("stream")
    host_wait = (pl.col("launch_ns") > previous_end).fill_null(False)
    interval = (pl.col("start_ns") - previous_end) / 1000
    kernel_wait = ~host_wait & (interval < consecutive_kernel_delay_us).fill_null(False)
    return gpu.select(
        "stream",
        pl.when(host_wait).then(0).when(kernel_wait).then(1).otherwise(2).alias("idle_category"),
        interval.alias("idle_interval"),
    )


def idle_breakdown(intervals: pl.DataFrame, rank: int) -> pl.DataFrame:
    """Per stream and category: `idle_time` (µs) and `idle_time_ratio` of the stream's idle time."""
    table = intervals.group_by("stream", "idle_category").agg(pl.col("idle_interval").sum().alias("idle_time"))
    share = pl.col("idle_time") / pl.col("idle_time").sum().over("stream")
    table = table.with_columns(share.alias("idle_time_ratio"))
    order = intervals["stream"].unique(maintain_order=True).to_list()
    return table.sort(pl.col("stream").replace_strict(order, list(range(len(order)))), "idle_category").select(
        pl.lit(rank, pl.Int64).alias("rank"), "stream",
        pl.col("idle_category").replace_strict(IDLE_CATEGORIES, return_dtype=pl.String), "idle_time", "idle_time_ratio",
    )


def queue_length(frame: pl.DataFrame, *, unlinked: int | None = None, zero_ns: int = 0,
                 rows: pl.DataFrame | None = None) -> pl.DataFrame:
    """HTA's queue length time series of one rank: +1 at each launch call's start, −1 at each
    launched GPU op's start, per stream (`index`, `ts` in µs from `zero_ns`, `pid`, `tid`,
    `stream`, `queue_length`). `unlinked`: a correlation HTA leaves out (the GPU op at its row 0,
    whose link reads as "none"). `rows` (`rules.linked_rows`): HTA's row labels and the GPU events'
    own `pid`, `tid`; with them the changes come in HTA's order, ties included (`hta_order`).
    Without them `index` is a row number, `pid` the device, `tid` the stream, and changes of equal
    time keep launch calls before GPU ops, each by start."""
    gpu = busy(frame)
    calls = frame.filter((pl.col("source") == "runtime") & pl.col("name").is_in(QUEUE_LAUNCHES)
                         & (pl.col("correlation") != (-1 if unlinked is None else unlinked)))
    enqueued = calls.join(gpu.select("correlation", "device", "stream"), on="correlation", how="inner", suffix="_gpu")
    changes = pl.concat([
        enqueued.select("correlation", pl.lit(False).alias("gpu"), "start_ns", pl.col("device_gpu").alias("device"),
                        pl.col("stream_gpu").alias("stream"), pl.lit(1).alias("queue")),
        gpu.filter(pl.col("correlation").is_in(calls["correlation"].implode())).select(
            "correlation", pl.lit(True).alias("gpu"), "start_ns", "device", "stream", pl.lit(-1).alias("queue")),
    ]).with_columns(((pl.col("start_ns") - zero_ns) / 1000).alias("ts"))
    if rows is None:
        changes = changes.sort("start_ns", maintain_order=True).with_row_index("index").with_columns(
            pl.col("index").cast(pl.Int64), pl.col("device").cast(pl.Int64).alias("pid"), pl.col("stream").alias("tid"))
    else:
        changes = hta_order(changes, rows)
    return changes.select(
        "index", "ts", "pid", "tid", "stream", pl.col("queue").cum_sum().over("stream").alias("queue_length"),
    ).sort("stream", maintain_order=True)


def hta_order(changes: pl.DataFrame, rows: pl.DataFrame) -> pl.DataFrame:
    """The queue changes in HTA's order (trace_counters.py): its frame holds the launch calls, then
    the GPU events, each in file order (`rows`' `index`), and pandas' `sort_values(by="ts")` sorts
    it with numpy's quicksort, which is not stable but is deterministic: the same `ts` array in the
    same order (int64 µs where every time is whole, as HTA's) gives the same permutation."""
    labelled = changes.join(rows.select("correlation", "gpu", "index"), on=["correlation", "gpu"], how="left")
    pid_tid = rows.filter(pl.col("gpu")).select("correlation", "pid", "tid").unique("correlation", keep="first",
                                                                                    maintain_order=True)
    labelled = labelled.join(pid_tid, on="correlation", how="left").sort("gpu", "index", maintain_order=True)
    ts = labelled["ts"].to_numpy()
    if ts.size and np.isfinite(ts).all() and (ts == np.round(ts)).all():
        ts = ts.astype(np.int64)
    return labelled[np.argsort(ts, kind="quicksort")]


def describe(values: np.ndarray) -> dict[str, float]:
    """pandas' `describe()` of a numeric column: count, mean, std, min, quartiles, max."""
    values = values[~np.isnan(values)]
    if values.size == 0:
        return {"count": 0.0, "mean": np.nan, "std": np.nan, "min": np.nan, "25%": np.nan, "50%": np.nan,
                "75%": np.nan, "max": np.nan}
    return {
        "count": float(values.size), "mean": float(values.mean()),
        "std": float(values.std(ddof=1)) if values.size > 1 else np.nan,
        "min": float(values.min()), "25%": float(np.percentile(values, 25)), "50%": float(np.percentile(values, 50)),
        "75%": float(np.percentile(values, 75)), "max": float(values.max()),
    }
