"""The report model: every table a report shows (`RankReport` per rank, `Report` for the job),
filled once by the pipeline (`pipeline.rank`). Renderers (terminal, Markdown, JSON, HTML) only
format what is here; they never recompute."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from pathlib import Path
from typing import Literal

import polars as pl

from traceanalyze.analysis.launch import small_kernels_of
from traceanalyze.analysis.job import JobAnalysis
from traceanalyze.analysis.idle import Window
from traceanalyze.analysis.roofline import PeakChoice, PeakOverrides
from traceanalyze.renderers.verdict_document import verdict_html
from traceanalyze.report.chart_inputs import RankCharts, rank_charts
from traceanalyze.report.groups import Diagnosis, HostTables, JobInputs, LaunchTables, OverheadTables, RooflineTables
from traceanalyze.report.notes import job_notes
from traceanalyze.report import summaries
from traceanalyze.report.summaries import ListedCollectives, SmallKernelSummary, Summary
from traceanalyze.report.verdict import Verdict, VerdictFinding, ranked_findings, verdict, verdict_findings
from traceanalyze.whatif import job_replay

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
class RankReport:
    """One rank's analyses. Frames are the analysis outputs, in ns, read by group:

    - `overhead`: where the GPU waits (idle, gaps, idle causes, streams, steps);
    - `launch`: how the CPU feeds it (launch latency, small-kernel runs, the queue);
    - `roofline_tables`: bandwidth or compute (roofline, peaks, attribution, kernels, ops, fusion);
    - `host`: the CPU side and the trace (devices, CPU ops, CPU steps, health);
    - `diagnosis`: what to change (findings, the replay's prediction, replayed steps);
    - `job_inputs`: what a job's reduce combines (collectives, step split, overlap, parts);

    and `rank`, `source`, `world_size`, `has_gpu`, `notes`, `summary`, `device_family`,
    `rank_source`. Each group holds the same frames as the fields of those names (report.groups)."""

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
    # it cuts are gone) or when first read (`chart_inputs`)
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
        return small_kernels_of(self.latency)

    @property
    def overhead(self) -> OverheadTables:
        """Where this rank's GPU waits: idle, gaps, idle causes, streams, steps."""
        return OverheadTables(**{f.name: getattr(self, f.name) for f in fields(OverheadTables)})

    @property
    def launch(self) -> LaunchTables:
        """How the CPU feeds this rank's GPU: launch latency, small-kernel runs, the launch queue."""
        return LaunchTables(**{f.name: getattr(self, f.name) for f in fields(LaunchTables)})

    @property
    def roofline_tables(self) -> RooflineTables:
        """Bandwidth or compute: the roofline, peaks, regime attribution, kernels, ops, fusion."""
        return RooflineTables(**{f.name: getattr(self, f.name) for f in fields(RooflineTables)})

    @property
    def host(self) -> HostTables:
        """The CPU side and the trace: devices, top CPU ops, CPU steps, health checks."""
        return HostTables(**{f.name: getattr(self, f.name) for f in fields(HostTables)})

    @property
    def diagnosis(self) -> Diagnosis:
        """What to change: the findings, the replay's prediction, measured and replayed steps."""
        return Diagnosis(**{f.name: getattr(self, f.name) for f in fields(Diagnosis)})

    @property
    def job_inputs(self) -> JobInputs:
        """What a job's reduce combines: collectives, step split, overlap, name and op parts."""
        return JobInputs(**{f.name: getattr(self, f.name) for f in fields(JobInputs)})

    @cached_property
    def chart_inputs(self) -> RankCharts:
        """What the HTML charts draw: `charts` (a `bounded` rank's), else computed from the frames
        when first read (report.chart_inputs)."""
        if self.charts is not None:
            return self.charts
        return rank_charts(roofline=self.roofline, gaps=self.gaps, idle=self.idle, streams=self.streams,
                           steps=self.steps, latency=self.latency)

    @cached_property
    def verdict_findings(self) -> tuple[VerdictFinding, ...]:
        """Every finding of this rank, ranked, each with its gain as a share of the rank's window."""
        return verdict_findings(self.findings, self.summary.attribution.window_ns)

    @property
    def listed_steps(self) -> tuple[pl.DataFrame, str]:
        """The per-step table's rows and title (report.summaries.listed_steps): every step in step
        order, or the slowest `STEPS_LISTED` of many."""
        return summaries.listed_steps(self.steps)

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

    @cached_property
    def notes(self) -> tuple[str, ...]:
        """What the report says first, in every format (report.notes.job_notes): the missing ranks,
        then the notes every rank of several carries."""
        return tuple(job_notes([r.rank for r in self.ranks], [r.world_size for r in self.ranks],
                               [r.notes for r in self.ranks]))

    @cached_property
    def listed_collectives(self) -> ListedCollectives:
        """The collectives each format lists, in its order (report.summaries.chosen_collectives)."""
        return summaries.chosen_collectives(self.job)

    @cached_property
    def replay(self) -> pl.DataFrame:
        """One row: the ranks' replays together (whatif.job_replay, docs/whatif.md)."""
        return job_replay([r.replay for r in self.ranks])

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
    """`rank` with its chart inputs held (`RankReport.charts`: what `bounded` keeps)."""
    return rank if rank.charts is not None else replace(rank, charts=rank.chart_inputs)
