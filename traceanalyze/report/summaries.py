"""The report's summary figures, each defined once and computed once (by `build_report`), in ns.
Every renderer shows these; none recomputes them. docs/metrics.md defines each figure.

* Window, busy and idle time are **means over device windows** (a device window: one device of
  one rank, from its first to its last GPU op, or its ProfilerStep span). The windows of
  concurrent devices and ranks overlap in time, so their sum is the span of nothing; with one
  device the mean is that device's own figure.
* `idle_fraction` is Σ idle / Σ window over those windows (the ratio of the means).
* Regime shares (`attribution`) are Σ regime time / Σ window over the same windows.
* Idle time by cause is per device window (Σ over gaps / number of windows): it sums to the mean
  idle time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from traceanalyze.analysis.attribution import ATTRIBUTION_KEYS
from traceanalyze.analysis.idle import GAP_CAUSES
from traceanalyze.analysis.job import JobAnalysis
from traceanalyze.figures import EMPTY_IS_UNKNOWN, EMPTY_IS_ZERO, fraction
from traceanalyze.report.schema import COLLECTIVE_LIMIT

LATENCY_METRICS = ("launch_to_start_ns", "queue_wait_ns", "launch_overhead_ns", "launch_cpu_ns", "launch_delay_ns")
SMALL_KERNEL_RUNS_LISTED = 10
STEPS_LISTED = 20  # a per-step table of more steps shows the slowest this many (every step: JSON, charts)
COLLECTIVES_LISTED = 8  # collectives a terminal or document report lists (the JSON: schema.COLLECTIVE_LIMIT)
COLLECTIVE_BARS = 20  # collectives the HTML report's bar chart shows


def listed_steps(steps: pl.DataFrame, most: int = STEPS_LISTED) -> tuple[pl.DataFrame, str]:
    """The rows of a per-step table (one per step and device) and its title: every step in step
    order when there are at most `most`, else the `most` rows of the slowest CPU steps, slowest
    first (an inference trace records thousands of steps: a table of them all buries the rest)."""
    if steps.height <= most:
        return steps, "Per step"
    slowest = steps.sort(["cpu_duration_ns", "step", "device"], descending=[True, False, False],
                         nulls_last=True).head(most)
    rows = f"{steps.height}" if steps["step"].n_unique() == steps.height else f"{steps.height} step × device rows"
    return slowest, f"Slowest steps ({most} of {rows}, by CPU step time)"


@dataclass(frozen=True)
class WindowSummary:
    """GPU window, busy and idle time per device window (means), and the idle fraction."""

    window_ns: float | None
    busy_ns: float | None
    idle_ns: float | None
    idle_fraction: float | None
    device_windows: int


@dataclass(frozen=True)
class AttributionSummary:
    """Regime attribution pooled over device windows: each regime's share of the window and its
    time, and how much of the modelable busy time the op-cost model covered."""

    window_ns: int | None  # Σ over the device windows (the shares' denominator)
    shares: dict[str, float] | None  # regime → Σ regime ns / Σ window ns
    regime_ns: dict[str, int] | None  # regime → Σ ns over the device windows
    model_coverage: float | None
    modelled_busy_ns: int | None
    modelable_busy_ns: int | None
    communication_busy_ns: int | None
    unroofed_busy_ns: int | None = None  # modelled busy time with no roof, counted as unmodeled


@dataclass(frozen=True)
class LatencyFigures:
    """One launch-latency measure over `count` launched GPU ops (ns; None when count is 0)."""

    count: int
    mean: float | None
    p50: float | None
    p90: float | None
    p99: float | None
    max: int | None  # an Int64 column's maximum


@dataclass(frozen=True)
class SmallKernelSummary:
    """Kernels shorter than their launch call: how many, their GPU time and share of kernel time."""

    count: int
    kernels_with_launch: int
    gpu_time_ns: int | None  # None when no kernel is small
    share_of_kernel_time: float


@dataclass(frozen=True)
class Summary:
    """The figures a report (over all ranks) and each rank show at their top."""

    window: WindowSummary
    attribution: AttributionSummary
    idle_by_cause_ns: dict[str, float]  # cause → ns per device window, in GAP_CAUSES order
    latency: dict[str, LatencyFigures]  # LATENCY_METRICS → figures


def window_summary(idle_frames: Sequence[pl.DataFrame]) -> WindowSummary:
    frames = [frame for frame in idle_frames if frame.height]
    if not frames:
        return WindowSummary(None, None, None, None, 0)
    idle = pl.concat(frames)
    window, idle_ns = idle["window_ns"].sum(), idle["gpu_idle_ns"].sum()
    return WindowSummary(
        window_ns=idle["window_ns"].mean(),  # type: ignore[arg-type]
        busy_ns=idle["gpu_busy_ns"].mean(),  # type: ignore[arg-type]
        idle_ns=idle["gpu_idle_ns"].mean(),  # type: ignore[arg-type]
        idle_fraction=fraction(idle_ns, window, empty=EMPTY_IS_ZERO),
        device_windows=idle.height,
    )


def attribution_summary(attribution_frames: Sequence[pl.DataFrame]) -> AttributionSummary:
    frames = [frame for frame in attribution_frames if frame.height]
    if not frames:
        return AttributionSummary(None, None, None, None, None, None, None)
    frame = pl.concat(frames, how="vertical_relaxed")
    window = frame["window_ns"].sum()
    modelable = frame["modelable_busy_ns"].sum()
    return AttributionSummary(
        window_ns=window,
        shares={key: fraction(frame[f"{key}_ns"].sum(), window, empty=EMPTY_IS_ZERO) for key in ATTRIBUTION_KEYS},
        regime_ns={key: frame[f"{key}_ns"].sum() for key in ATTRIBUTION_KEYS},
        model_coverage=fraction(frame["modelled_busy_ns"].sum(), modelable, empty=EMPTY_IS_UNKNOWN),
        modelled_busy_ns=frame["modelled_busy_ns"].sum(),
        modelable_busy_ns=modelable,
        communication_busy_ns=frame["communication_busy_ns"].sum(),
        unroofed_busy_ns=frame["unroofed_busy_ns"].sum(),
    )


def idle_by_cause(gap_frames: Sequence[pl.DataFrame], device_windows: int) -> dict[str, float]:
    """Idle time per cause, averaged over the device windows; `gap_frames`: gaps, or their sums
    per cause (`idle_causes`): any frames with `cause` and `duration_ns`."""
    totals = {cause: 0 for cause in GAP_CAUSES}
    for gaps in gap_frames:
        for cause, duration in gaps.group_by("cause").agg(pl.col("duration_ns").sum()).iter_rows():
            totals[str(cause)] += duration
    windows = max(1, device_windows)
    return {cause: value / windows for cause, value in totals.items()}


def latency_figures(stats: pl.DataFrame) -> dict[str, LatencyFigures]:
    """Each of `LATENCY_METRICS` → its (first) row of a `launch.latency_stats` frame, zero counts
    where it has none (the frame's few rows read once, not filtered per metric)."""
    rows: dict[str, dict] = {}
    for row in stats.iter_rows(named=True):
        rows.setdefault(row["metric"], row)
    figures = {}
    for metric in LATENCY_METRICS:
        values = rows.get(metric)
        figures[metric] = (LatencyFigures(0, None, None, None, None, None) if values is None or values["count"] == 0
                           else LatencyFigures(int(values["count"]), values["mean"], values["p50"], values["p90"],
                                               values["p99"], values["max"]))
    return figures


def small_kernel_summary(small_kernels: pl.DataFrame) -> SmallKernelSummary:
    total = small_kernels["duration_ns"].sum() if small_kernels.height else 0
    small = small_kernels.filter(pl.col("small"))
    return SmallKernelSummary(
        count=small.height,
        kernels_with_launch=small_kernels.height,
        gpu_time_ns=small["duration_ns"].sum() if small.height else None,
        share_of_kernel_time=(small["duration_ns"].sum() / total) if total else 0.0,
    )


def summarise(idle_frames: Sequence[pl.DataFrame], attribution_frames: Sequence[pl.DataFrame],
              gap_frames: Sequence[pl.DataFrame], latency_stats: pl.DataFrame) -> Summary:
    window = window_summary(idle_frames)
    return Summary(
        window=window,
        attribution=attribution_summary(attribution_frames),
        idle_by_cause_ns=idle_by_cause(gap_frames, window.device_windows),
        latency=latency_figures(latency_stats),
    )


def idle_causes(gaps: pl.DataFrame) -> pl.DataFrame:
    """Idle time by gap cause over `gaps`: `cause`, `duration_ns` (Σ), `gaps` (count) and
    `share_of_idle`, longest first; causes without gaps are left out."""
    total = gaps["duration_ns"].sum() if gaps.height else 0
    return (
        gaps.group_by("cause").agg(pl.col("duration_ns").sum(), pl.len().alias("gaps"))
        .sort(["duration_ns", "cause"], descending=[True, False])  # ties in GAP_CAUSES order: the same every run
        .with_columns((pl.col("duration_ns") / total if total else pl.lit(0.0)).alias("share_of_idle"))
    )


def listed_collectives(job: JobAnalysis, limit: int = COLLECTIVE_LIMIT) -> pl.DataFrame:
    """The collectives a report lists: the `limit` most waited on (summed wait, then max wait),
    in their order (process group, sequence)."""
    return (
        job.collectives.sort("wait_ns", "max_wait_ns", "process_group", "seq", descending=[True, True, False, False])
        .head(limit)
        .sort("process_group", "seq")
    )


@dataclass(frozen=True)
class ListedCollectives:
    """The collectives each format lists, chosen once (`chosen_collectives`; renderers only read)."""

    in_order: pl.DataFrame  # the COLLECTIVE_LIMIT most waited on, by (process group, sequence): JSON
    per_rank: pl.DataFrame  # each rank's row of `in_order`'s collectives (+ first_arrival_ns), by rank: JSON
    most_waited: pl.DataFrame  # the COLLECTIVES_LISTED most waited on, most waited first: terminal, Markdown
    bars: pl.DataFrame  # the COLLECTIVE_BARS most waited on, by (process group, sequence): the HTML bars


def chosen_collectives(job: JobAnalysis) -> ListedCollectives:
    """Which collectives each format lists, and in what order (`ListedCollectives`)."""
    in_order = listed_collectives(job)
    per_rank = job.matched.join(in_order.select("process_group", "seq", "first_arrival_ns"),
                                on=["process_group", "seq"]).sort("rank")
    most_waited = listed_collectives(job, COLLECTIVES_LISTED).sort("wait_ns", "seq", descending=[True, False])
    return ListedCollectives(in_order, per_rank, most_waited, listed_collectives(job, COLLECTIVE_BARS))
