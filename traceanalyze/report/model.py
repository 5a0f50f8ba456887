"""The report model: every table a report shows (`RankReport` per rank, `Report` for the job),
filled once by the pipeline (`pipeline.rank`). Renderers (terminal, Markdown, JSON, HTML) only
format what is here; they never recompute."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Literal

import polars as pl

from traceanalyze.analysis import launch
from traceanalyze.analysis.job import JobAnalysis
from traceanalyze.analysis.idle import Window
from traceanalyze.analysis.roofline import PeakChoice, PeakOverrides
from traceanalyze.report.chart_inputs import RankCharts, rank_charts
from traceanalyze.report.summaries import SmallKernelSummary, Summary
from traceanalyze.report.verdict import Verdict, ranked_findings, verdict, verdict_html

DEFAULT_MAX_GAPS = 10  # idle gaps listed per report (the CLI's --max-gaps and `analyze(max_gaps=)`)


@dataclass(frozen=True)
class ReportOptions:
    window: Window = "activity"
    max_gaps: int = DEFAULT_MAX_GAPS
    min_small_kernel_run: int = 8
    peaks: PeakOverrides = field(default_factory=PeakOverrides)  # device file or flags
    details: bool = False  # terminal: every table (else the verdict and the key sections; docs/report-formats.md)
    skip_steps: int = 0  # ProfilerSteps left out at the start of each rank (analysis.skip_steps)
    # a folder of ranks: "full" keeps every rank's per-op frames (annotate, the API); "bounded"
    # keeps what the reports show, HTML charts included (`bounded`): the parent's memory stays flat in N
    rank_frames: Literal["full", "bounded"] = "full"
    # the groups of analyses of one rank (`rank_report`) run side by side in this many threads
    # (0: one per core, at most 3); the results are the same for any number
    analysis_threads: int = 0


@dataclass(frozen=True)
class OverheadTables:
    """Where one rank's GPU waits (`RankReport.overhead`): the idle time of its window, each idle
    gap and the time by gap cause, launch latency (pooled, by kernel, by op group), runs of small
    kernels, the launch queue, per stream and per step. Times in ns (docs/metrics.md)."""

    idle: pl.DataFrame
    gaps: pl.DataFrame
    idle_causes: pl.DataFrame
    streams: pl.DataFrame
    steps: pl.DataFrame
    latency_stats: pl.DataFrame
    latency_by_kernel: pl.DataFrame
    latency_by_group: pl.DataFrame
    small_kernel_runs: pl.DataFrame
    queue: pl.DataFrame


@dataclass(frozen=True)
class RooflineTables:
    """Bandwidth or compute (`RankReport.roofline_tables`): each kernel against its roof, the
    peaks chosen, the regime attribution (whole window and per step), time by kernel name and by
    op, fusion candidates, the recoverable time, and what has no cost model."""

    roofline: pl.DataFrame
    peaks: tuple[PeakChoice, ...]
    attribution: pl.DataFrame
    step_attribution: pl.DataFrame
    kernels: pl.DataFrame
    ops: pl.DataFrame
    fusion: pl.DataFrame
    recoverable: pl.DataFrame
    unmodeled: pl.DataFrame


@dataclass(frozen=True)
class RankReport:
    """One rank's analyses. Frames are the analysis outputs, in ns."""

    rank: int
    source: Path
    world_size: int | None
    has_gpu: bool
    notes: tuple[str, ...]
    devices: pl.DataFrame
    idle: pl.DataFrame
    streams: pl.DataFrame
    gaps: pl.DataFrame
    steps: pl.DataFrame
    latency: pl.DataFrame
    latency_stats: pl.DataFrame
    latency_by_kernel: pl.DataFrame
    latency_by_group: pl.DataFrame
    small_kernel_runs: pl.DataFrame
    queue: pl.DataFrame
    health: pl.DataFrame
    cpu_ops_top: pl.DataFrame
    cpu_steps: pl.DataFrame
    peaks: tuple[PeakChoice, ...]
    roofline: pl.DataFrame
    attribution: pl.DataFrame
    step_attribution: pl.DataFrame
    kernels: pl.DataFrame
    ops: pl.DataFrame
    fusion: pl.DataFrame
    recoverable: pl.DataFrame
    summary: Summary  # this rank's summary figures (report.summaries)
    small_kernel_summary: SmallKernelSummary
    idle_causes: pl.DataFrame  # idle time by gap cause over this rank's gaps (summaries.idle_causes)
    # small aggregates the pooled tables of a job combine (attribution.name_parts, op_parts) and the
    # unmodeled time by reason (attribution.unmodeled_reasons): no per-op frame needed to render
    name_parts: pl.DataFrame
    op_parts: pl.DataFrame
    unmodeled: pl.DataFrame
    # the small tables the job-level analyses combine (analysis.job)
    collectives: pl.DataFrame  # analysis.collectives.rank_collectives
    step_split: pl.DataFrame  # analysis.stragglers.rank_steps
    overlap: pl.DataFrame  # analysis.overlap.comm_overlap
    findings: pl.DataFrame  # diagnoses ranked by predicted saving, then gain (analysis.findings, docs/findings.md)
    replay: pl.DataFrame  # one row: the replay's window against the recorded one, the top findings together (whatif)
    replay_steps: pl.DataFrame  # per step: measured and replayed time (whatif.STEPS_SCHEMA, docs/whatif.md)
    # what the HTML charts draw (report.chart_inputs), small: filled by `bounded` (the per-op frames
    # it cuts are gone) or on demand (`with_charts`)
    charts: RankCharts | None = None
    device_family: str = "none"  # CUDA, ROCm, MTIA, accelerator or none (RankMeta.device_family)
    rank_source: str = "default"  # where `rank` comes from (RankMeta.rank_source)
    # what the ranks of one job share, as (what, value) pairs (pipeline/identity.job_identity): compared by the reduce
    job_identity: tuple[tuple[str, str], ...] = ()

    @property
    def small_kernels(self) -> pl.DataFrame:
        """The kernel rows of `latency`, with `small` (`launch.small_kernels`): made when read, not
        held beside `latency` (a copy of most of its rows). Empty for a `bounded` rank, whose
        latency rows keep only what the statistics read."""
        if "duration_ns" not in self.latency.columns:
            return pl.DataFrame()
        return launch.small_kernels_of(self.latency)

    @property
    def overhead(self) -> OverheadTables:
        """This rank's overhead tables, grouped (the same frames as the fields of those names)."""
        return OverheadTables(**{f.name: getattr(self, f.name) for f in fields(OverheadTables)})

    @property
    def roofline_tables(self) -> RooflineTables:
        """This rank's roofline and attribution tables, grouped (the same frames as the fields)."""
        return RooflineTables(**{f.name: getattr(self, f.name) for f in fields(RooflineTables)})

    @property
    def gap_count(self) -> int:
        """How many idle gaps the rank has (`gaps` may hold only the longest: `bounded`)."""
        return int(self.idle_causes["gaps"].sum()) if self.idle_causes.height else 0

    def __repr__(self) -> str:
        top = self.findings.head(1)
        finding = f", top finding {top['id'][0]}" if top.height else ""
        return f"RankReport(rank={self.rank}, source={str(self.source)!r}, findings={self.findings.height}{finding})"

    def verdict(self) -> Verdict:
        """This rank's verdict: its regime split and top findings (report.verdict)."""
        return verdict(self.summary, ranked_findings([self.findings]), 1)

    def _repr_html_(self) -> str:
        """Jupyter shows this rank's findings as the HTML verdict."""
        return verdict_html(self.verdict())


@dataclass(frozen=True)
class Report:
    source: Path
    options: ReportOptions
    ranks: tuple[RankReport, ...]
    latency_stats: pl.DataFrame  # pooled over ranks
    kernels: pl.DataFrame  # per kernel name, pooled over ranks
    ops: pl.DataFrame  # per launching op, pooled over ranks
    summary: Summary  # the summary figures over every rank (report.summaries)
    job: JobAnalysis  # cross-rank analyses: collectives, clock offsets, stragglers, overlap (analysis.job)

    def __repr__(self) -> str:
        return short_repr(self)

    def all_findings(self) -> pl.DataFrame:
        """Every rank's findings and the job's (the straggler, exposed communication: filed under
        the rank they name), ranked by gain (largest first, no estimate last), then rank and id."""
        return ranked_findings([*(rank.findings for rank in self.ranks), self.job.findings])

    def verdict(self) -> Verdict:
        """The verdict every format opens with: the regime split and the top findings (report.verdict)."""
        return verdict(self.summary, self.all_findings(), len(self.ranks))

    def _repr_html_(self) -> str:
        """Jupyter shows the verdict (the HTML report's verdict section)."""
        return verdict_html(self.verdict())


def short_repr(report: Report) -> str:
    """`Report(source=…, ranks=N, findings=M, top finding …)`: a repr that fits a line."""
    found = sum(rank.findings.height for rank in report.ranks) + report.job.findings.height
    return f"Report(source={str(report.source)!r}, ranks={len(report.ranks)}, findings={found})"


def with_charts(rank: RankReport) -> RankReport:
    """`rank` with its chart inputs (`RankReport.charts`), computed from its frames if it has
    none yet (a rank from `bounded` always has them)."""
    if rank.charts is not None:
        return rank
    return replace(rank, charts=rank_charts(roofline=rank.roofline, gaps=rank.gaps, idle=rank.idle,
                                            streams=rank.streams,
                                            steps=rank.steps, latency=rank.latency))
