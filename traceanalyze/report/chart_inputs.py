"""What one rank's HTML charts draw (report.html), computed from the rank's per-op frames and
small whatever the rank's size, so that a folder's workers can send it instead of the frames
(`pipeline.rank.bounded`): the GPU timeline of each device (every kernel and idle gap up to
`plots.EXACT_TIMELINE_MARKS` intervals, else each lane cut into pixel bins), idle time by cause
over every gap, the launch → start histogram (counts per log bin) and the roofline's roofs.
The roofline's dots come from the per-name kernel table every report keeps."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import polars as pl

from traceanalyze.analysis.roofline import ON_ROOFLINE
from traceanalyze.units import format_rate, short_name

if TYPE_CHECKING:  # imported where charts are made: a report that draws none never loads the plots
    from traceanalyze.renderers import plots

MAX_TIMELINE_LANES = 16  # streams per device drawn in the timeline (busiest first)


@dataclass(frozen=True)
class DeviceTimeline:
    """One device's timeline chart: its lanes (`binned_rows`: bounded), window and marks."""

    device: int
    window: tuple[int, int]
    rows: tuple[plots.TimelineRow, ...]
    legends: tuple[tuple[str, dict[str, str]], ...]
    markers: tuple[plots.Marker, ...]
    note: str  # "N busiest of M streams shown", or ""


@dataclass(frozen=True)
class RankCharts:
    timelines: tuple[DeviceTimeline, ...]
    timeline_binned: bool  # the rank has more kernels and gaps than the timeline draws one by one
    idle_by_cause: pl.DataFrame  # device, cause, duration_ns: Σ over every idle gap of the rank
    launches: int  # launches with a launch → start (not skewed by the clocks)
    launch_latency: plots.LogBins | None  # their launch → start, by cause (None: none positive)
    compute_roofs: tuple[plots.Roof, ...]
    bandwidth_roofs: tuple[plots.Roof, ...]

    @property
    def idle_by_cause_per_device(self) -> list[tuple[int, dict[str, int]]]:
        """Per device (ascending): its idle time by gap cause (the causes chart's bars)."""
        return [(device, {str(c): ns for c, ns in self.idle_by_cause.filter(pl.col("device") == device)
                          .select("cause", "duration_ns").iter_rows()})
                for device in self.idle_by_cause["device"].unique().sort().to_list()]


def rank_charts(*, roofline: pl.DataFrame, gaps: pl.DataFrame, idle: pl.DataFrame, streams: pl.DataFrame,
                steps: pl.DataFrame, latency: pl.DataFrame) -> RankCharts:
    """The chart inputs of a rank from its full frames (`RankReport.roofline`, every gap,
    every launch, the idle windows, streams and steps)."""
    from traceanalyze.renderers import plots

    compute, bandwidth = _roofs(roofline)
    return RankCharts(
        timelines=tuple(_timelines(roofline, gaps, idle, streams, steps)),
        timeline_binned=roofline.height + gaps.height > plots.EXACT_TIMELINE_MARKS,
        idle_by_cause=gaps.group_by("device", "cause").agg(pl.col("duration_ns").sum())
        .with_columns(pl.col("cause").cast(pl.String)).sort("device", "cause"),
        launches=int((~latency["skewed"]).sum()),
        launch_latency=_latency_bins(latency),
        compute_roofs=tuple(compute),
        bandwidth_roofs=tuple(bandwidth),
    )


def _gap_labels(gaps: pl.DataFrame) -> pl.Series:
    """Each gap's tooltip: "GPU idle (cause, step N) — CPU at op in sync call; next: kernel"
    (where: the CPU op, else the annotation, else "no CPU op"; the next kernel's short name, "–"
    when none). Built by polars, with one `short_name` per distinct next kernel: a 1 GB trace has
    some 300k gaps and a few hundred kernel names (a label per row in Python took 8 s)."""
    def text(column: str) -> pl.Expr:
        return pl.col(column).cast(pl.String)

    def given(column: str) -> pl.Expr:
        return text(column).is_not_null() & (text(column) != "")

    next_ops = gaps["next_gpu_op"].cast(pl.String).unique().drop_nulls().to_list()
    short = {name: short_name(name, 60) for name in next_ops}
    return gaps.select(pl.format(
        "GPU idle ({}{}) — CPU at {}{}; next: {}",
        text("cause").fill_null("None"),
        pl.when(pl.col("step").is_not_null()).then(pl.format(", step {}", pl.col("step"))).otherwise(pl.lit("")),
        pl.when(given("cpu_op")).then(text("cpu_op")).when(given("annotation")).then(text("annotation"))
        .otherwise(pl.lit("no CPU op")),
        pl.when(given("sync_call")).then(pl.format(" in {}", text("sync_call"))).otherwise(pl.lit("")),
        text("next_gpu_op").replace_strict(short, default=None, return_dtype=pl.String).fill_null(short_name(None)),
    ).alias("label")).to_series()


def _timelines(ops: pl.DataFrame, all_gaps: pl.DataFrame, idle: pl.DataFrame, all_streams: pl.DataFrame,
               all_steps: pl.DataFrame) -> list[DeviceTimeline]:
    from traceanalyze.renderers import plots

    timelines = []
    ops = ops.select("device", "stream", "start_ns", "end_ns", "regime", "name")  # not the roofline's 69 columns:
    for window in idle.iter_rows(named=True):  # a filter of them all copied 160 MB on 1 GB traces
        device = window["device"]
        start, end = window["window_start_ns"], window["window_end_ns"]
        streams = all_streams.filter(pl.col("device") == device).sort("busy_ns", descending=True)
        shown = streams.head(MAX_TIMELINE_LANES)["stream"].sort().to_list()
        device_ops = ops.filter(pl.col("device") == device)
        gaps = all_gaps.filter(pl.col("device") == device)
        # past this many intervals the lanes are binned (`binned_rows`), and binned lanes
        # draw no interval's own tooltip: none is made (on 1 GB, 800k labels of up to 100 characters)
        labelled = (device_ops.filter(pl.col("stream").is_in(shown)).height + gaps.height
                    <= min(plots.EXACT_TIMELINE_MARKS, plots.MAX_MARKS))
        names = {n: short_name(n, 100) for n in device_ops["name"].unique().to_list()} if labelled else {}
        lanes = []
        for stream in shown:
            frame = device_ops.filter(pl.col("stream") == stream).select(
                "start_ns", "end_ns", pl.col("regime").cast(pl.String).alias("category"),
                pl.col("name").replace_strict(names, default=None, return_dtype=pl.String).alias("label") if labelled
                else pl.lit(None, dtype=pl.String).alias("label"))
            lanes.append(plots.TimelineRow(f"stream {stream}", frame, plots.REGIME_COLOURS))
        gap_frame = pl.DataFrame(
            {"start_ns": gaps["start_ns"], "end_ns": gaps["end_ns"], "category": gaps["cause"].cast(pl.String),
             "label": _gap_labels(gaps) if labelled else pl.repeat(None, gaps.height, dtype=pl.String, eager=True)},
            schema={"start_ns": pl.Int64, "end_ns": pl.Int64, "category": pl.String, "label": pl.String},
        )
        lanes.append(plots.TimelineRow("GPU idle", gap_frame, plots.CAUSE_COLOURS, what="idle"))
        used_regimes = set(device_ops["regime"].cast(pl.String).unique().to_list())
        used_causes = set(gap_frame["category"].unique().to_list())
        legends = [("kernels:", {k: c for k, c in plots.REGIME_COLOURS.items() if k in used_regimes}),
                   ("idle gaps:", {k: c for k, c in plots.CAUSE_COLOURS.items() if k in used_causes})]
        steps = all_steps.filter(pl.col("device") == device)
        markers = tuple(plots.Marker(r["window_start_ns"], f"step {r['step']}") for r in steps.iter_rows(named=True))
        note = f"{len(shown)} busiest of {streams.height} streams shown" if streams.height > len(shown) else ""
        timelines.append(DeviceTimeline(device, (start, end), tuple(binned_rows(lanes, (start, end))),
                                        tuple(lg for lg in legends if lg[1]), markers, note))
    return timelines


def _latency_bins(latency: pl.DataFrame) -> plots.LogBins | None:
    from traceanalyze.renderers import plots

    latency = latency.filter(~pl.col("skewed"))
    queued = (pl.col("queue_wait_ns") * 2 >= pl.col("launch_to_start_ns")) & (pl.col("launch_to_start_ns") > 0)
    series = [
        plots.Series("mostly launch overhead (GPU was free)", plots.CAUSE_COLOURS["launch"],
                     latency.filter(~queued)["launch_to_start_ns"].to_list()),
        plots.Series("mostly queue wait (GPU busy with earlier work)", plots.BUSY_COLOUR,
                     latency.filter(queued)["launch_to_start_ns"].to_list()),
    ]
    return plots.log_bins([s for s in series if s.values])


def _roofs(roofline: pl.DataFrame) -> tuple[list[plots.Roof], list[plots.Roof]]:
    from traceanalyze.renderers import plots

    modelled = roofline.filter(pl.col("regime").is_in(ON_ROOFLINE))
    combos = (
        modelled.select("compute_dtype", "tensor_core", "peak_flops_per_s")
        .drop_nulls("peak_flops_per_s").unique()
        .sort("peak_flops_per_s", "compute_dtype", descending=[True, False], nulls_last=True)
    )
    by_value: dict[float, dict[str, list[str]]] = {}
    for dtype, tensor, value in combos.iter_rows():
        names = by_value.setdefault(value, {}).setdefault("tensor" if tensor else "SIMT", [])
        if (dtype or "any") not in names:
            names.append(dtype or "any")
    compute = [plots.Roof(v, format_rate(v, "FLOP/s"),
                          "; ".join(f"{', '.join(names)} {unit}" for unit, names in units.items()))
               for v, units in by_value.items()]
    present = set(by_value)
    compute += [plots.Roof(v, format_rate(v, "FLOP/s"), "tf32 tensor (FP32 matmuls with TF32 allowed)")
                for v in modelled["tf32_peak_flops_per_s"].drop_nulls().unique().sort(descending=True).to_list()
                if v not in present]
    bandwidth = [plots.Roof(v, f"memory {format_rate(v, 'B/s')}")
                 for v in modelled["peak_bytes_per_s"].drop_nulls().unique().sort(descending=True).to_list()]
    return compute, bandwidth



# -- the timeline's lanes as drawn: clipped, or cut into pixel bins -----------------------------------------
def binned_rows(rows: Sequence[plots.TimelineRow], window: tuple[int, int], *, width: float | None = None,
                max_marks: int | None = None) -> list[plots.TimelineRow]:
    """`rows` as `plots.timeline_chart` draws them over `window`: up to `EXACT_TIMELINE_MARKS`
    intervals in all, each lane's intervals clipped to the window, by start (`clipped`); else each
    lane cut into pixel-wide bins of a chart `width` wide (`lane_bins`, at most `max_marks` over
    the chart) in place of its intervals, so that what is kept does not grow with the intervals.
    Rows binned already are returned as they are."""
    from traceanalyze.renderers import plots

    width = plots.WIDTH if width is None else width
    max_marks = plots.MAX_MARKS if max_marks is None else max_marks
    rows = list(rows)
    start, end = window
    if any(r.bins is not None for r in rows):
        return rows
    if sum(r.intervals.height for r in rows) <= min(plots.EXACT_TIMELINE_MARKS, max_marks):
        return [replace(r, intervals=clipped(r.intervals, start, end)) for r in rows]
    bins = max(1, min(int(width - plots.TIMELINE_RIGHT_PAD - plots.TIMELINE_LABEL_WIDTH),
                      max_marks // max(len(rows), 1)))
    return [replace(r, intervals=r.intervals.clear(), bins=lane_bins(r.intervals, start, end, bins)) for r in rows]


def clipped(frame: pl.DataFrame, start: int, end: int) -> pl.DataFrame:
    """A lane's intervals (`start_ns, end_ns, category, label`) clipped to `start`–`end`, the
    empty ones dropped, by start."""
    return (
        frame.select(
            pl.col("start_ns").clip(start, end),
            pl.col("end_ns").clip(start, end),
            pl.col("category").cast(pl.String),
            pl.col("label").cast(pl.String),
        )
        .filter(pl.col("end_ns") > pl.col("start_ns"))
        .sort("start_ns")
    )


def lane_bins(intervals: pl.DataFrame, start: int, end: int, bins: int) -> pl.DataFrame:
    """A lane's intervals cut into `bins` equal bins of `start`–`end`: per bin and category the
    time covered and the number of intervals (`bin`, `category`, `covered`, `count`; `bin_ns`
    repeats the bin's width), by bin, most covered first."""
    frame = clipped(intervals, start, end)
    bin_ns = max(1, -(-(end - start) // bins))
    return (
        frame.with_columns(
            ((pl.col("start_ns") - start) // bin_ns).alias("b0"),
            ((pl.col("end_ns") - 1 - start) // bin_ns).alias("b1"),
        )
        .with_columns(pl.int_ranges("b0", pl.col("b1") + 1).alias("bin"))
        .explode("bin")
        .with_columns(
            (
                pl.min_horizontal("end_ns", pl.col("bin") * bin_ns + start + bin_ns)
                - pl.max_horizontal("start_ns", pl.col("bin") * bin_ns + start)
            ).alias("covered")
        )
        .group_by("bin", "category")
        .agg(pl.col("covered").sum(), pl.len().alias("count"))
        .sort(["bin", "covered", "category"], descending=[False, True, False])  # ties by name: the same every run
        .with_columns(pl.lit(bin_ns, dtype=pl.Int64).alias("bin_ns"))
    )
