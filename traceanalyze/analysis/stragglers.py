"""Stragglers: per step, which rank holds the others back, by how much, and why.

- `rank_steps(trace, gaps)` (one rank, in a worker): per step, the step's CPU span on the GPU
  timeline split into compute (non-collective GPU work), exposed communication
  (collective time with no other work running) and idle, with the idle gaps by cause.
- `step_waits(rank_steps, matched, offsets)` and `stragglers(per_rank_step, matched)` (the reduce):
  each rank's collective wait per step (from `collectives.match_collectives`) and `work_ns` =
  step − wait; per step the slowest rank (the one whose late arrivals cost the others the most
  wait), how far behind the others it arrived, the wait it caused, and its likely cause: its own
  idle gaps in that step by cause.

Definitions in docs/metrics.md ("Stragglers").
"""

from __future__ import annotations

import polars as pl

from traceanalyze.analysis.intervals import covered_in_windows
from traceanalyze.model import Trace

DEVICE = ["rank", "device"]
RANK_STEP_SCHEMA = pl.Schema({
    "rank": pl.Int32, "device": pl.Int32, "step": pl.Int64, "window_start_ns": pl.Int64, "window_end_ns": pl.Int64,
    "step_ns": pl.Int64, "compute_ns": pl.Int64, "comm_ns": pl.Int64, "idle_ns": pl.Int64,
    "idle_by_cause": pl.List(pl.Struct({"cause": pl.String, "ns": pl.Int64})),
})


def rank_steps(trace: Trace, gaps: pl.DataFrame) -> pl.DataFrame:
    """Per ProfilerStep and device of one rank (`gaps`: `idle.idle_gaps`, every gap) →
    `RANK_STEP_SCHEMA`. The step's window is its CPU span (`ProfilerStep#N`), on every device the
    rank used: GPU time inside it is compute (non-collective work), comm (collective time with no
    other work running) or idle; compute + comm + idle = step_ns. Idle gaps count in a step for
    the part of them inside its window."""
    devices = trace.gpu.select(*DEVICE).unique(maintain_order=True)
    if trace.steps.is_empty() or devices.is_empty():
        return pl.DataFrame(schema=RANK_STEP_SCHEMA)
    windows = (
        trace.steps.select("rank", "step", pl.col("start_ns").alias("window_start_ns"),
                           pl.col("end_ns").alias("window_end_ns"))
        .join(devices, on="rank", how="inner")
        .sort(*DEVICE, "step")
        .with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("_window"))
    )
    gpu = trace.gpu.select(*DEVICE, "start_ns", "end_ns", "kind")
    windows = windows.with_columns(
        covered_in_windows(gpu, windows, DEVICE).alias("busy_ns"),
        covered_in_windows(gpu.filter(pl.col("kind") != "communication"), windows, DEVICE).alias("compute_ns"),
    )
    gaps = gaps.select(*DEVICE, "start_ns", "end_ns", "cause")
    per_cause = [
        windows.select(
            "_window",
            pl.lit(cause).alias("cause"),
            covered_in_windows(gaps.filter(pl.col("cause") == cause), windows, DEVICE, disjoint=True).alias("ns"),
        )
        for cause in sorted(
            gaps["cause"].drop_nulls().unique().cast(pl.String).to_list()
        )  # the causes, not each gap's, as text
    ]
    by_cause = (
        pl.concat(per_cause).filter(pl.col("ns") > 0)
        .sort("ns", "cause", descending=[True, False])
        .group_by("_window", maintain_order=True).agg(pl.struct("cause", "ns").alias("idle_by_cause"))
        if per_cause else pl.DataFrame(schema={"_window": pl.Int64, "idle_by_cause": RANK_STEP_SCHEMA["idle_by_cause"]})
    )
    return (
        windows.join(by_cause, on="_window", how="left")
        .with_columns(
            (pl.col("window_end_ns") - pl.col("window_start_ns")).alias("step_ns"),
            pl.col("compute_ns").fill_null(0),
        )
        .with_columns(
            (pl.col("busy_ns").fill_null(0) - pl.col("compute_ns")).alias("comm_ns"),
            (pl.col("step_ns") - pl.col("busy_ns").fill_null(0)).alias("idle_ns"),
        )
        .select(list(RANK_STEP_SCHEMA)).cast(RANK_STEP_SCHEMA)  # type: ignore[arg-type]
        .sort(*DEVICE, "step")
    )


def step_waits(
    per_rank_steps: pl.DataFrame, matched: pl.DataFrame, offsets: pl.DataFrame | None = None
) -> pl.DataFrame:
    """`per_rank_steps` of every rank with `wait_ns` (the rank's collective waits whose aligned
    arrival falls in the step's aligned window) and `work_ns` = step_ns − wait_ns."""
    frame = per_rank_steps
    if frame.is_empty():
        return frame.with_columns(
            pl.lit(0, dtype=pl.Int64).alias("wait_ns"), pl.lit(0, dtype=pl.Int64).alias("work_ns")
        )
    if offsets is not None and not offsets.is_empty():
        frame = frame.join(offsets.select("rank", "offset_ns"), on="rank", how="left").with_columns(
            (pl.col("window_start_ns") - pl.col("offset_ns").fill_null(0)).alias("aligned_start_ns"),
            (pl.col("window_end_ns") - pl.col("offset_ns").fill_null(0)).alias("aligned_end_ns"),
        ).drop("offset_ns")
    else:
        frame = frame.with_columns(pl.col("window_start_ns").alias("aligned_start_ns"),
                                   pl.col("window_end_ns").alias("aligned_end_ns"))
    in_step = _collectives_in_steps(frame, matched)
    waits = in_step.group_by("rank", "step").agg(pl.col("wait_ns").sum())
    return (
        frame.join(waits, on=["rank", "step"], how="left")
        .with_columns(pl.col("wait_ns").fill_null(0))
        .with_columns((pl.col("step_ns") - pl.col("wait_ns")).alias("work_ns"))
        .sort("rank", "step")
    )


def _collectives_in_steps(steps: pl.DataFrame, matched: pl.DataFrame) -> pl.DataFrame:
    """Each matched row with the step of its rank whose aligned window holds its arrival."""
    if matched.is_empty():
        return matched.with_columns(pl.lit(None, dtype=pl.Int64).alias("step"))
    bounds = steps.select("rank", "step", "aligned_start_ns", "aligned_end_ns").sort("aligned_start_ns")
    return (
        matched.sort("arrival_ns")
        .join_asof(bounds, left_on="arrival_ns", right_on="aligned_start_ns", by="rank", strategy="backward",
                   check_sortedness=False)
        .filter(pl.col("step").is_not_null() & (pl.col("arrival_ns") < pl.col("aligned_end_ns")))
    )


STRAGGLER_SCHEMA = pl.Schema({
    "step": pl.Int64, "slowest_rank": pl.Int32, "behind_ns": pl.Int64, "others_wait_ns": pl.Int64,
    "collectives_last": pl.Int64, "ranks": pl.Int64, "cause": pl.String, "cause_ns": pl.Int64,
})


def stragglers(with_waits: pl.DataFrame, matched: pl.DataFrame) -> pl.DataFrame:
    """Per step in which some rank waited for another → `STRAGGLER_SCHEMA`. `with_waits`:
    `step_waits`. A collective belongs to the step of its last arriver; per step, the slowest rank
    is the one whose late arrivals cost the others the most wait (`others_wait_ns`: the other
    ranks' waits summed over the collectives it arrived last at; ties: the lowest rank);
    `behind_ns` sums, over those collectives, its arrival minus the median arrival of the others;
    `cause` is the largest of its own idle gaps' causes in that step, `collective` (waiting on its
    peers) left out."""
    if with_waits.is_empty() or matched.is_empty():
        return pl.DataFrame(schema=STRAGGLER_SCHEMA)
    by = ["process_group", "seq"]
    in_step = _collectives_in_steps(with_waits, matched)
    per_collective = (
        in_step.group_by(by)
        .agg(
            pl.col("step").filter(pl.col("rank") == pl.col("last_rank")).first(),
            pl.col("last_rank").first(),
            pl.col("last_arrival_ns").first(),
            pl.col("wait_ns").filter(pl.col("rank") != pl.col("last_rank")).sum().alias("others_wait_ns"),
            pl.col("arrival_ns").filter(pl.col("rank") != pl.col("last_rank")).median().alias("others_arrival_ns"),
            pl.col("rank").n_unique().cast(pl.Int64).alias("ranks"),
        )
        .filter(pl.col("step").is_not_null() & (pl.col("others_wait_ns") > 0))
        .with_columns(
            (pl.col("last_arrival_ns") - pl.col("others_arrival_ns")).round().cast(pl.Int64).alias("behind_ns")
        )
    )
    if per_collective.is_empty():
        return pl.DataFrame(schema=STRAGGLER_SCHEMA)
    slowest = (
        per_collective.group_by("step", "last_rank")
        .agg(
            pl.col("others_wait_ns").sum(),
            pl.col("behind_ns").sum(),
            pl.len().cast(pl.Int64).alias("collectives_last"),
            pl.col("ranks").max(),
        )
        .sort("others_wait_ns", "last_rank", descending=[True, False])
        .group_by("step", maintain_order=True)
        .first()
        .rename({"last_rank": "slowest_rank"})
    )
    causes = with_waits.group_by("rank", "step").agg(pl.col("idle_by_cause").first()).rename({"rank": "slowest_rank"})
    # its own cause: waiting on its peers (`collective` gaps) is not why it is late
    top = (
        pl.col("idle_by_cause")
        .list.eval(pl.element().filter(pl.element().struct.field("cause") != "collective"))
        .list.first()
    )
    return (
        slowest.join(causes, on=["slowest_rank", "step"], how="left")
        .with_columns(top.struct.field("cause").alias("cause"), top.struct.field("ns").alias("cause_ns"))
        .select(list(STRAGGLER_SCHEMA)).cast(STRAGGLER_SCHEMA).sort("step")  # type: ignore[arg-type]
    )
