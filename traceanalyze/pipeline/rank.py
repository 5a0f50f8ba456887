"""Run a rank's analyses and findings into the report model: `rank_report` (the map of a job: one
rank's `Trace` → its `RankReport`, the analyses side by side in threads), `rank_reports` (the same
for several small ranks at once: the analyses keyed by rank run once over them), `combine_ranks`
(the reduce: the ranks' results → the `Report`, pooled tables and the job-level analyses),
`build_report` (both, on a loaded trace) and `bounded` (a rank cut to what the reports read)."""

from __future__ import annotations

import os
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass, fields, replace
from pathlib import Path

import polars as pl

from traceanalyze.analysis import attribution, collectives, idle, launch, overlap, roofline, stragglers
from traceanalyze.analysis.device_match import matched_devices
from traceanalyze.analysis.findings import (FindingInputs, excluded_ns, findings_frame, gap_buckets, job_findings,
                                            rank_findings)
from traceanalyze.analysis.findings.finding import ranked
from traceanalyze.analysis.health import trace_health
from traceanalyze.analysis.idle import Window
from traceanalyze.analysis.job import job_analysis
from traceanalyze.analysis.op_tree import OpTree
from traceanalyze.analysis.skip_steps import SkippedSteps, skip_steps, skipped_steps
from traceanalyze.analysis.roofline import PeakChoice
from traceanalyze.model import Trace, concat_traces
from traceanalyze.pipeline.identity import job_identity
from traceanalyze.report.model import RankReport, Report, ReportOptions, with_charts
from traceanalyze.report.summaries import idle_causes, small_kernel_summary, summarise
from traceanalyze.units import format_duration_ns
from traceanalyze.whatif import predict, replay_frame, saving_bounds, with_notes
from traceanalyze.whatif.barriers import with_straggler_saving


def build_report(trace: Trace, options: ReportOptions | None = None) -> Report:
    """Run every analysis on every rank of `trace`.

    Examples
    --------
    >>> report = build_report(load_trace("fixtures/synthetic_training.json.gz"))  # doctest: +SKIP
    """
    options = options or ReportOptions()
    ranks = [rank_report(single, options) for single in trace.split_by_rank()]
    return combine_ranks(ranks, options, trace.source)


def combine_ranks(ranks: list[RankReport], options: ReportOptions, source: Path) -> Report:
    """The reduce of a job: every rank's `RankReport` (from `rank_report`, in rank order) → the
    `Report`, pooled tables and the job-level analyses. Reads no raw trace table."""
    ranks = tuple(ranks)
    if len(ranks) == 1:  # pooled over one rank: its own tables
        pooled, kernels, ops = ranks[0].latency_stats, ranks[0].kernels, ranks[0].ops
    else:
        pooled = launch.latency_stats(pl.concat([r.latency for r in ranks], how="vertical"))
        kernels = attribution.finish_parts(pl.concat([r.name_parts for r in ranks], how="vertical_relaxed"),
                                           attribution.NAME_KEYS)
        ops = attribution.finish_parts(pl.concat([r.op_parts for r in ranks], how="vertical_relaxed"),
                                       attribution.OP_KEYS)
    summary = summarise([r.idle for r in ranks], [r.attribution for r in ranks], [r.idle_causes for r in ranks], pooled)
    job = job_analysis([r.collectives for r in ranks], [r.step_split for r in ranks], [r.overlap for r in ranks],
                       _collective_link(ranks))
    job = replace(job, findings=ranked(with_straggler_saving(job_findings(job), job.matched)))
    return Report(source=source, options=options, ranks=ranks, latency_stats=pooled, kernels=kernels, ops=ops,
                  summary=summary, job=job)


def _collective_link(ranks: tuple[RankReport, ...]) -> float | None:
    """The slowest peer link of the job's devices (bytes/s per direction), or None if unknown."""
    links = [choice.peaks.collective_link_bytes_per_s for r in ranks for choice in r.peaks
             if choice.peaks is not None and choice.peaks.collective_link_bytes_per_s]
    return min(links) if links else None


def rank_report(trace: Trace, options: ReportOptions) -> RankReport:
    """Every analysis of one rank: the map of a job (a pure function of the rank's `Trace`; what
    a worker runs on each rank file)."""
    return rank_reports([trace], options)[0]


def rank_reports(traces: list[Trace], options: ReportOptions) -> list[RankReport]:
    """`rank_report` of each of `traces` (single-rank traces of distinct ranks), in order. The
    per-op analyses run once over the ranks together (`per_op_parts`: every one keyed by rank),
    whose cost is mostly a fixed number of polars queries, whatever the rows; what reads one rank
    alone (its health, summaries, findings and replay: `finished`) runs per rank. The same reports, frame for
    frame, as one rank at a time (tests/jobs/test_rank_batches.py)."""
    started = [started_rank(trace, options) for trace in traces]
    reports: list[RankReport | None] = [None] * len(started)
    with _analysis_pool(_workers(options)) as pool:
        for batch in batches(started):
            if len(batch) == 1:
                start = started[batch[0]]
                slices = [of_one_rank(per_op_parts(start.trace, start.window, start.peaks, options, pool))]
            else:
                joined = concat_traces([started[i].trace for i in batch])
                parts = per_op_parts(joined, started[batch[0]].window,
                                     tuple(c for i in batch for c in started[i].peaks), options, pool)
                slices = by_rank(parts, [started[i].trace for i in batch])
            for index, part in zip(batch, slices):
                reports[index] = finished(started[index], part, options)
    return reports  # type: ignore[return-value]


@dataclass(frozen=True)
class StartedRank:
    """A rank about to be analysed: its trace (steps skipped), the notes said so far, its window
    and the peaks of its devices."""

    trace: Trace
    notes: tuple[str, ...]
    window: Window
    peaks: tuple[PeakChoice, ...]
    devices: pl.DataFrame  # `matched_devices` of the trace


def started_rank(trace: Trace, options: ReportOptions) -> StartedRank:
    """What `rank_report` settles before any analysis: steps skipped, the window (the GPU span
    when there are no steps), what the trace lacks, the peaks."""
    meta = trace.meta[0]
    notes: list[str] = []
    if options.skip_steps:
        notes.append(skipped_note(skipped_steps(trace, options.skip_steps)[0]))
        trace = skip_steps(trace, options.skip_steps)
    has_gpu = trace.gpu.height > 0
    window = options.window
    if window == "steps" and trace.steps.is_empty():
        notes.append("no ProfilerStep spans: the window is the GPU activity span instead")
        window = "activity"
    skipped = trace.skipped.filter(pl.col("count") > 0)
    if not has_gpu and skipped.height:  # e.g. every kernel with a negative duration: recorded, but unusable
        listed = "; ".join(f"{count} {reason}" for reason, count in skipped.select("reason", "count").iter_rows())
        notes.append(f"no usable GPU events in this trace: {int(skipped['count'].sum())} events were skipped as "
                     f"malformed ({listed}), GPU work perhaps among them; only the CPU side is reported")
    elif not has_gpu:
        launches = trace.runtime.filter(pl.col("kind").is_in(["launch", "graph_launch"]))
        notes.append(
            f"no GPU events in this trace: GPU kernels were not recorded, though {launches.height} kernel launch "
            f"call{'s' if launches.height != 1 else ''} took {format_duration_ns(launches['duration_ns'].sum())} "
            "of CPU time; only the CPU side is reported"
            if launches.height
            else "no GPU events in this trace, and no kernel launches (a CPU-only run): only the CPU side is reported"
            if meta.device_family == "none"
            else f"no GPU events in this trace ({meta.device_family} runtime calls, but no device work recorded): "
                 "only the CPU side is reported"
        )
    devices = matched_devices(trace)
    peaks = roofline.choose_peaks(trace, options.peaks, devices)
    for choice in peaks:
        if choice.peaks is None:
            notes.append(
                f"device {choice.device} ({choice.device_name or 'no deviceProperties'}) is not in the peak table: "
                "give both --peak-flops and --peak-bandwidth (or --device-file) for the roofline"
            )
    return StartedRank(trace=trace, notes=tuple(notes), window=window, peaks=tuple(peaks), devices=devices)


def batches(started: list[StartedRank]) -> list[list[int]]:
    """The ranks analysed together (indices into `started`): those of one window, a rank number
    once per batch (a folder's files may claim the same rank)."""
    groups: dict[tuple[Window, int], list[int]] = {}  # (window, how many times the rank came before) → ranks
    seen: dict[tuple[Window, int], int] = {}  # (window, rank) → how many times it came
    for index, start in enumerate(started):
        key = (start.window, start.trace.meta[0].rank)
        groups.setdefault((start.window, seen.get(key, 0)), []).append(index)
        seen[key] = seen.get(key, 0) + 1
    return list(groups.values())


def per_op_parts(trace: Trace, window: Window, peaks: tuple[PeakChoice, ...], options: ReportOptions,
                 pool: Executor) -> dict[str, pl.DataFrame]:
    """The analyses of `trace`'s ranks that are keyed by rank (a `rank` column in every frame):
    the roofline, the timeline (gaps and their buckets, steps, idle, streams, overlap,
    collectives), the launches, the attribution, the kernel and op tables. Independent groups run
    side by side in `pool`'s threads: polars releases the GIL while it works, so one's Python glue
    overlaps another's collects. What they all share is computed first: the join of GPU ops to
    their launches, and the op tree that the roofline's and the gaps' walks up it read (let go once
    both are done: 13 MB for 1.6 M ops)."""
    trace.launch_rows  # noqa: B018
    tree = OpTree.of(trace.cpu_ops)
    roofline_done = pool.submit(roofline.kernel_roofline, trace, options.peaks, choices=list(peaks), tree=tree)
    time_done = pool.submit(_time_parts, trace, window, tree)
    launch_done = pool.submit(_launch_parts, trace, options)
    per_kernel = roofline_done.result()
    attribution_done = pool.submit(attribution.attribution, per_kernel, trace, window=window)
    kernel_done = pool.submit(_kernel_parts, per_kernel, trace)
    timeline = time_done.result()
    del tree
    by_step = pool.submit(attribution.step_attribution, per_kernel, timeline["steps"])
    launches = launch_done.result()
    # each idle gap's finding (its bucket), once for both uses: the findings, the recoverable time
    bucketed = gap_buckets(timeline["gaps"], timeline["steps"], launches["small_kernel_runs"])
    return {"roofline": per_kernel, **timeline, **launches, **kernel_done.result(), "bucketed": bucketed,
            "attribution": attribution_done.result(), "step_attribution": by_step.result()}


OP_ID_COLUMNS = ("op_id", "cost_op_id")  # the roofline's ids of CPU ops, shifted by `concat_traces`


def by_rank(parts: dict[str, pl.DataFrame], traces: list[Trace]) -> list[dict[str, pl.DataFrame]]:
    """`per_op_parts` of several ranks (`traces`, in the order they were joined) → those of each
    rank, with the CPU op ids of each rank's own trace (`concat_traces` shifts them)."""
    split = {name: _split_by_rank(frame, include_key=name not in RANK_ADDED) for name, frame in parts.items()}
    empty = {name: frame.clear() for name, frame in of_one_rank(parts).items()}  # a rank absent from a frame
    slices = []
    shift = 0
    for trace in traces:
        key = (trace.meta[0].rank,)
        part = {name: frames.get(key, empty[name]) for name, frames in split.items()}
        roofline_ids = [c for c in OP_ID_COLUMNS if c in part["roofline"].columns
                        and part["roofline"].schema[c].is_integer()]
        if shift and roofline_ids:
            part["roofline"] = part["roofline"].with_columns(pl.col(c) - shift for c in roofline_ids)
        slices.append(part)
        shift += trace.cpu_ops.height
    return slices


def _split_by_rank(frame: pl.DataFrame, *, include_key: bool) -> dict[tuple[int], pl.DataFrame]:
    """(rank,) → the rows of `frame` about it, in their order: `partition_by(as_dict=True)`, whose
    keys polars reads with a query per partition (a tenth of a small rank's share of its batch)."""
    ranks = frame.get_column("rank").unique(maintain_order=True).to_list()
    return {(rank,): part for rank, part in zip(ranks, frame.partition_by("rank", maintain_order=True,
                                                                           include_key=include_key),
                                                strict=True)}


def of_one_rank(parts: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """`per_op_parts` of one rank as its `RankReport` holds them (without the `rank` column the
    grouped parts keep for several ranks: `RANK_ADDED`)."""
    return {name: frame.drop("rank") if name in RANK_ADDED else frame for name, frame in parts.items()}


def finished(start: StartedRank, parts: dict[str, pl.DataFrame], options: ReportOptions) -> RankReport:
    """One rank's `RankReport` from its `per_op_parts`: what reads the rank alone (its health,
    summaries, findings, the replay)."""
    trace, meta = start.trace, start.trace.meta[0]
    per_kernel, gaps, steps = parts["roofline"], parts["gaps"], parts["steps"]
    per_op = parts["latency"]
    launches = {
        "latency": per_op,
        # a rank without a launch to count has no group: its statistics of nothing (counts of 0)
        "latency_stats": parts["latency_stats"] if parts["latency_stats"].height
        else launch.latency_stats(per_op.clear()),
        "latency_by_kernel": parts["latency_by_kernel"],
        "latency_by_group": parts["latency_by_group"],
        "small_kernel_runs": parts["small_kernel_runs"],
        "small_kernel_summary": small_kernel_summary(parts["small_kernels"]),
        "queue": parts["queue"],
    }
    timeline = {name: parts[name] for name in TIMELINE_PER_OP}
    # one rank's own: its health (checked rank by rank), top CPU ops
    timeline |= {"health": trace_health(trace), "cpu_ops_top": _top_cpu_ops(trace)}
    kernel = {name: parts[name] for name in KERNEL_TABLES}
    kernel["fusion"] = attribution.fusion_summary(parts["fusion_runs"])
    attributed = parts["attribution"]
    inputs = FindingInputs(
        rank=meta.rank, device_family=meta.device_family,
        peaks=next((choice.peaks for choice in start.peaks if choice.peaks is not None), None),
        roofline=per_kernel, gaps=gaps, steps=steps, small_kernel_runs=launches["small_kernel_runs"],
        fusion=kernel["fusion"], fusion_runs=parts["fusion_runs"], attribution=attributed,
        health=timeline["health"], cpu_ops=trace.cpu_ops,
        cpu_steps=trace.steps, skipped_steps=options.skip_steps,
    )
    bucketed = parts["bucketed"] if gaps.height else None
    found_list = rank_findings(inputs, bucketed)
    prediction = predict(trace, found_list)  # the replay (docs/whatif.md): each finding's saving
    found = findings_frame(meta.rank, with_notes(found_list, prediction), [s.saving_ns for s in prediction.savings],
                           saving_bounds(found_list, prediction))
    return RankReport(
        rank=meta.rank,
        source=meta.source,
        world_size=meta.world_size,
        device_family=meta.device_family,
        rank_source=meta.rank_source,
        job_identity=job_identity(meta),
        has_gpu=trace.gpu.height > 0,
        notes=start.notes,
        devices=start.devices.drop("properties_device").sort("device"),
        cpu_steps=trace.steps.select("step", "duration_ns"),
        peaks=start.peaks,
        roofline=per_kernel,
        attribution=attributed,
        step_attribution=parts["step_attribution"],
        recoverable=attribution.recoverable(per_kernel, attributed, left_out_idle_ns=excluded_ns(bucketed)),
        summary=summarise([timeline["idle"]], [attributed], [gaps], launches["latency_stats"]),
        idle_causes=idle_causes(gaps),
        findings=found,
        replay=replay_frame(prediction),
        replay_steps=prediction.steps,
        **kernel, **timeline, **launches,
    )


def _workers(options: ReportOptions) -> int:
    return max(1, min(3, options.analysis_threads or os.cpu_count() or 1))


class _InOrder(Executor):
    """One analysis thread: each submitted call runs at once in the calling thread (its result
    ready), rather than in a thread the caller then waits on (a handoff per call, and no overlap
    to gain from it)."""

    def submit(self, fn, /, *args, **kwargs) -> Future:
        done: Future = Future()
        try:
            done.set_result(fn(*args, **kwargs))
        except BaseException as error:  # raised again by `result()`, as a thread's would be
            done.set_exception(error)
        return done


def _analysis_pool(workers: int) -> Executor:
    """Where the analyses of a rank run: side by side in `workers` threads, or in order in this
    thread when there is one."""
    if workers == 1:
        return _InOrder()
    return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="traceanalyze-analysis")


# what `_kernel_parts` and `_launch_parts` group per rank too: its `rank` column goes once the frames
# are split per rank
KERNEL_TABLES = ("name_parts", "op_parts", "kernels", "ops", "unmodeled")
RANK_ADDED = (*KERNEL_TABLES, "latency_stats", "latency_by_kernel", "latency_by_group")


def _kernel_parts(per_kernel: pl.DataFrame, trace: Trace) -> dict[str, pl.DataFrame]:
    """What is read from the roofline besides the attribution, keyed by rank: time by kernel and
    op, fusion candidates (their runs: the summary is a rank's own), what has no cost model."""
    by_name = attribution.name_parts(per_kernel, by_rank=True)
    by_op = attribution.op_parts(per_kernel, by_rank=True)
    return {
        "fusion_runs": attribution.fusion_opportunities(per_kernel, trace.cpu_ops),
        "name_parts": by_name,
        "op_parts": by_op,
        "kernels": attribution.finish_parts(by_name, attribution.ranked_keys(attribution.NAME_KEYS, True)),
        "ops": attribution.finish_parts(by_op, attribution.ranked_keys(attribution.OP_KEYS, True)),
        "unmodeled": attribution.unmodeled_reasons(per_kernel, by_rank=True),
    }


TIMELINE_PER_OP = ("steps", "idle", "gaps", "step_split", "streams", "overlap", "collectives")


def _time_parts(trace: Trace, window: Window, tree: OpTree) -> dict[str, pl.DataFrame]:
    """The timeline, keyed by rank: steps, idle time and its gaps, streams, communication and its
    overlap (`TIMELINE_PER_OP`)."""
    gaps = idle.idle_gaps(trace, window=window, tree=tree)
    return {
        "steps": idle.step_breakdown(trace),
        "idle": idle.idle_summary(trace, window=window, gaps=gaps),
        "gaps": gaps,
        "step_split": stragglers.rank_steps(trace, gaps),
        "streams": idle.stream_summary(trace, window=window),
        "overlap": overlap.comm_overlap(trace),
        "collectives": collectives.rank_collectives(trace),
    }


def _launch_parts(trace: Trace, options: ReportOptions) -> dict[str, pl.DataFrame]:
    """Per launch, keyed by rank: latencies and their statistics, small kernels and their runs,
    queue depths."""
    per_op = launch.launch_latency(trace)
    # the columns the runs and the summary read
    small = launch.small_kernels(trace, latency=per_op.select(name for name in launch.SMALL_READ if name != "small"))
    return {
        "latency": per_op,
        # the latencies are integers: their means and percentiles are exact whatever the grouping
        "latency_stats": launch.latency_stats(per_op, by=["rank"]),
        "latency_by_kernel": launch.latency_by_kernel(per_op, by_rank=True),
        "latency_by_group": launch.latency_by_group(per_op, by_rank=True),
        "small_kernels": small,
        "small_kernel_runs": launch.small_kernel_runs(trace, min_run=options.min_small_kernel_run, small=small),
        "queue": launch.queue_summary(trace),
    }


def skipped_note(skipped: SkippedSteps) -> str:
    """The note of a rank analysed with `--skip-steps` (`analysis.skip_steps.SkippedSteps`)."""
    steps = (f"ProfilerStep#{skipped.first}" if skipped.count == 1
             else f"{skipped.count} ProfilerSteps (#{skipped.first}–#{skipped.last})")
    return (f"--skip-steps {skipped.count}: {steps} left out; the analysis starts at ProfilerStep#{skipped.kept} "
            "(what ran or was launched before it is not counted)")


def bounded(rank: RankReport, max_gaps: int, *, copy: bool = True, charts: bool = True) -> RankReport:
    """`rank` with its per-op frames cut to what the reports (terminal, Markdown, JSON, gate, HTML)
    read, so that a job's reduce holds small results per rank: the `max_gaps` longest gaps (the
    count stays: `gap_count`), the launch latencies the pooled statistics read (non-skewed
    kernels, memcpy and memset; their metric columns), and no roofline or small-kernel rows (their
    aggregates are kept: kernels, ops, name/op parts, unmodeled, small-kernel summary). What the
    HTML charts draw is computed first from the full frames (`charts`: the timeline binned past
    `plots.EXACT_TIMELINE_MARKS` intervals, histogram counts, idle by cause, the roofs), unless
    `charts` is False (a report that will not be HTML: about 4 ms a small rank).
    `annotate` needs the full frames. `copy`: every frame copied into buffers of its own (not
    needed for a result pickled to another process: pickling copies; 31 Arrow round trips, about
    a tenth of a small rank's time)."""
    latency = rank.latency.filter(~pl.col("skewed") & pl.col("kind").cast(pl.String).is_in(launch.SUMMARY_KINDS))
    kept = replace(
        with_charts(rank) if charts else rank,
        gaps=rank.gaps.head(max_gaps),
        latency=latency.select("skewed", "kind", *launch.STAT_COLUMNS),
        roofline=rank.roofline.clear(),
    )
    # every frame in buffers of its own: a slice or a result built from a larger frame can keep
    # the larger one's buffers alive (in this process; a result sent to another one is copied)
    if not copy:
        return kept
    return replace(kept, **{f.name: _copied(getattr(kept, f.name)) for f in fields(kept)
                            if isinstance(getattr(kept, f.name), pl.DataFrame)})


def _copied(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` in buffers of its own (an Arrow IPC round trip), not a view of a larger frame's."""
    import io

    buffer = io.BytesIO()
    frame.write_ipc(buffer)
    buffer.seek(0)
    return pl.read_ipc(buffer)


def _top_cpu_ops(trace: Trace, limit: int = 15) -> pl.DataFrame:
    """CPU ops by total inclusive time (nested ops count in their parents too), ties by name: the
    CPU-side view, the only one for a trace without GPU events."""
    is_op = pl.col("category") == "cpu_op"  # grouped unfiltered: a filter would copy the columns first
    return (
        trace.cpu_ops.group_by("name")
        .agg(is_op.sum().alias("count"), pl.col("duration_ns").filter(is_op).sum().alias("total_ns"))
        .filter(pl.col("count") > 0)
        .sort(pl.col("total_ns"), pl.col("name").cast(pl.String), descending=[True, False])  # ties in name order
        .head(limit)
    )
