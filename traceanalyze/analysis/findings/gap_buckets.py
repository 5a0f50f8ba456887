"""Each idle gap goes to exactly one finding, so their gains never count a nanosecond twice:
excluded (warm-up, autotune, an outlying first step) → DataLoader → sync → inside a run of
launch-bound kernels → host (the CPU was late). A sync gap whose blocking call returned before the
gap ended is cut there: the rest is the CPU work that followed the call (DataLoader or host).
Collective and stream-wait gaps belong to the communication findings; `other` gaps (orphans, clock
skew) to none."""

from __future__ import annotations

import polars as pl

from traceanalyze.analysis.findings.inputs import FindingInputs
from traceanalyze.analysis.cpu_context import in_place
from traceanalyze.analysis.intervals import union_intervals
from traceanalyze.analysis.names import contains

WARMUP_CONTEXT = r"(?i)warm[_ -]?up|autotun"  # annotations/ops of warm-up and autotuning
DATALOADER_CONTEXT = r"(?i)dataloader"  # enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__
FIRST_STEP_FACTOR = 2.0  # a first step idle more than this many times the median of the others ...
FIRST_STEP_MARGIN_NS = 100_000  # ... plus this much is a warm-up outlier
MIN_STEPS_FOR_OUTLIER = 3
BUCKETS = ("excluded", "dataloader", "sync", "launch_run", "host", "queued", "none")


def outlier_first_steps(steps: pl.DataFrame) -> pl.DataFrame:
    """`rank, device, step` of each device's first step when it is an idle-time outlier: at least
    MIN_STEPS_FOR_OUTLIER steps and idle > FIRST_STEP_FACTOR × median(other steps) + margin."""
    if steps.is_empty():
        return pl.DataFrame(schema={"rank": pl.Int32, "device": pl.Int32, "step": pl.Int64})
    ordered = steps.sort("step")
    per_device = ordered.group_by(["rank", "device"], maintain_order=True).agg(
        pl.col("step").first().alias("step"),
        pl.col("gpu_idle_ns").first().alias("first_idle_ns"),
        pl.col("gpu_idle_ns").slice(1).median().alias("other_idle_ns"),
        pl.len().alias("steps"),
    )
    return per_device.filter(
        (pl.col("steps") >= MIN_STEPS_FOR_OUTLIER)
        & (pl.col("first_idle_ns") > FIRST_STEP_FACTOR * pl.col("other_idle_ns") + FIRST_STEP_MARGIN_NS)
    ).select("rank", "device", "step")


def bucketed_gaps(inputs: FindingInputs) -> pl.DataFrame:
    """`inputs.gaps` plus `bucket` (one of BUCKETS) and `in_outlier_step` (bool), in the order of
    `inputs.gaps`; each sync gap whose call returned before the gap ended ends there, and the rest
    follows the gaps as a row of its own (`after_sync_rows`)."""
    return gap_buckets(inputs.gaps, inputs.steps, inputs.small_kernel_runs)


def gap_buckets(gaps: pl.DataFrame, steps: pl.DataFrame, small_kernel_runs: pl.DataFrame) -> pl.DataFrame:
    """`bucketed_gaps` from what it reads (`idle.idle_gaps`, `idle.step_breakdown`,
    `launch.small_kernel_runs`): it can run as soon as those are done. The columns of `gaps` are
    kept as they are (shared, not copied: 400 k gaps are 30 MB); only the two columns are new,
    and the sync gaps are cut where their call returned (`after_sync_rows`)."""
    if gaps.is_empty():
        return gaps.with_columns(pl.lit(None, pl.String).alias("bucket"), pl.lit(False).alias("in_outlier_step"))
    outliers = outlier_first_steps(steps).with_columns(pl.lit(True).alias("in_outlier_step"))
    in_outlier = gaps.select("rank", "device", "step").join(outliers, on=["rank", "device", "step"], how="left",
                                                            maintain_order="left")["in_outlier_step"]
    gaps = gaps.with_columns(in_outlier.fill_null(False), _run_end_at_start(gaps, _run_spans(small_kernel_runs)))
    in_run = pl.col("run_end_ns").is_not_null() & (pl.col("end_ns") <= pl.col("run_end_ns"))
    bucket = (
        pl.when(_in_context(gaps, WARMUP_CONTEXT) | pl.col("in_outlier_step")).then(pl.lit("excluded"))
        # a DataLoader gap is one whose next work the CPU launched after the gap began: before work
        # queued in time the GPU did not wait for the loader, whatever the CPU was doing
        .when(_in_context(gaps, DATALOADER_CONTEXT) & (pl.col("cause") == "host")).then(pl.lit("dataloader"))
        .when(pl.col("cause") == "sync").then(pl.lit("sync"))
        .when(pl.col("cause").is_in(["host", "launch"]) & in_run).then(pl.lit("launch_run"))
        .when(pl.col("cause") == "host").then(pl.lit("host"))
        .when(pl.col("cause") == "launch").then(pl.lit("queued"))
        .otherwise(pl.lit("none"))
    )
    return after_sync_rows(gaps.with_columns(bucket.alias("bucket")).drop("run_end_ns"))


def after_sync_rows(bucketed: pl.DataFrame) -> pl.DataFrame:
    """Each `sync` gap whose blocking call returned (`sync_end_ns`) before the next work's launch
    began keeps the rest of the gap but `[sync_end_ns, next_launch_start_ns)`: what the CPU did
    after the call returned (`after_sync_op`, `after_sync_annotation`), a row of its own, appended:
    `dataloader` when that work is a DataLoader's, else `host`. The launch latency after that launch
    stays the sync's (the queue it drained refills from there). The sync row ends at `sync_end_ns`
    (its span) and its `duration_ns` is the gap's less the cut. Without the columns, unchanged."""
    if "sync_end_ns" not in bucketed.columns:
        return bucketed
    cut_end = pl.min_horizontal(pl.col("end_ns"), pl.col("next_launch_start_ns").fill_null(pl.col("end_ns")))
    cut = (pl.col("bucket") == "sync") & pl.col("sync_end_ns").is_not_null() & (pl.col("sync_end_ns") < cut_end)
    rests = bucketed.filter(cut)
    if rests.is_empty():
        return bucketed
    loader = (contains(rests["after_sync_op"], DATALOADER_CONTEXT).fill_null(False)
              | contains(rests["after_sync_annotation"], DATALOADER_CONTEXT).fill_null(False))
    rests = rests.with_columns(
        pl.col("sync_end_ns").alias("start_ns"), cut_end.alias("end_ns"),
        (cut_end - pl.col("sync_end_ns")).alias("duration_ns"),
        pl.col("after_sync_op").alias("cpu_op"), pl.col("after_sync_annotation").alias("annotation"),
        pl.when(pl.lit(loader)).then(pl.lit("dataloader")).otherwise(pl.lit("host")).alias("bucket"),
    )
    kept = bucketed.with_columns(
        pl.when(cut).then(pl.col("duration_ns") - (cut_end - pl.col("sync_end_ns"))).otherwise(pl.col("duration_ns"))
        .alias("duration_ns"),
        pl.when(cut).then(pl.col("sync_end_ns")).otherwise(pl.col("end_ns")).alias("end_ns"),
    )
    return pl.concat([kept, rests.select(kept.columns).cast(kept.schema)])


def _run_end_at_start(gaps: pl.DataFrame, runs: pl.DataFrame) -> pl.Series:
    """For each gap (in the order of `gaps`), the end of the latest merged run of its device
    (`_run_spans`) that starts at or before the gap's start → `run_end_ns` (null if none)."""
    found = (
        gaps.select(pl.int_range(pl.len(), dtype=pl.Int64).alias("_row"), "rank", "device", "start_ns")
        .sort("start_ns")
        .join_asof(runs, left_on="start_ns", right_on="run_start_ns", by=["rank", "device"], strategy="backward",
                   check_sortedness=False)
        .drop_nulls("run_end_ns")
    )
    return in_place(gaps.height, found["_row"], found["run_end_ns"], "run_end_ns")


def _in_context(gaps: pl.DataFrame, pattern: str) -> pl.Expr:
    """Whether the gap's CPU op or annotation matches `pattern` (tested once per distinct name)."""
    return pl.lit(contains(gaps["cpu_op"], pattern).fill_null(False)
                  | contains(gaps["annotation"], pattern).fill_null(False))


def excluded_ns(bucketed: pl.DataFrame | None) -> int:
    """Idle time in the `excluded` bucket (warm-up, autotune, an outlying first step): what every
    gain leaves out, and the overhead regime's recoverable time too (attribution.recoverable)."""
    if bucketed is None or bucketed.is_empty():
        return 0
    return int(bucketed.filter(pl.col("bucket") == "excluded")["duration_ns"].sum())


def _run_spans(runs: pl.DataFrame) -> pl.DataFrame:
    """Runs of launch-bound kernels merged per device: `rank, device, run_start_ns, run_end_ns`."""
    schema = {"rank": pl.Int32, "device": pl.Int32, "run_start_ns": pl.Int64, "run_end_ns": pl.Int64}
    if runs.is_empty():
        return pl.DataFrame(schema=schema)
    spans = runs.select("rank", "device", pl.col("first_start_ns").alias("start_ns"),
                        pl.col("last_end_ns").alias("end_ns"))
    merged = union_intervals(spans, ["rank", "device"])
    return merged.select("rank", "device", pl.col("start_ns").alias("run_start_ns"),
                         pl.col("end_ns").alias("run_end_ns")).cast(schema).sort("run_start_ns")
