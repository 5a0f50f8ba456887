"""The report model: every table a report shows (`RankReport` per rank, `Report` for the job),
filled once by the pipeline (`pipeline.rank`). Renderers (terminal, Markdown, JSON, HTML) only
format what is here; they never recompute."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import polars as pl

from traceanalyze.analysis.launch import small_kernels_of
from traceanalyze.analysis.job import JobAnalysis
from traceanalyze.analysis.idle import Window
from traceanalyze.analysis.roofline import PeakChoice, PeakOverrides
from traceanalyze.renderers.verdict_document import verdict_html
from traceanalyze.report.chart_inputs import RankCharts, binned_rows, rank_charts
from traceanalyze.report.groups import Diagnosis, HostTables, JobInputs, LaunchTables, OverheadTables, RooflineTables
from traceanalyze.report.notes import job_notes, missing_ranks_note
from traceanalyze.report import summaries
from traceanalyze.report.summaries import ListedCollectives, SmallKernelSummary, Summary
from traceanalyze.report import views
from traceanalyze.report.views import RoofNotes, Straggler
from traceanalyze.report.verdict import Verdict, VerdictFinding, ranked_findings, verdict, verdict_findings
from traceanalyze.whatif import job_replay

# the ranks of a job whose timeline and roofline charts are drawn: each is some 200 KB of SVG, and
# a job of 256 ranks drew 70 MB of HTML; the job's own charts cover every rank
CHARTED_RANKS = 8
DEFAULT_MAX_GAPS = 10  # idle gaps listed per report (the CLI's --max-gaps and `analyze(max_gaps=)`)

if TYPE_CHECKING:  # the plots load where charts are made
    from traceanalyze.renderers.plots import TimelineRow


@dataclass(frozen=True)
class ReportOptions:
    window: Window = "activity"
    max_gaps: int = DEFAULT_MAX_GAPS
    min_small_kernel_run: int = 8
    peaks: PeakOverrides = field(default_factory=PeakOverrides)  # device file or flags
    details: bool = False  # terminal: every table (else the verdict and the key sections; docs/report-formats.md)
    skip_steps: int = 0  # ProfilerSteps left out at the start of each rank (analysis.skip_steps)
    # a folder of ranks: "full" keeps every rank's per-op frames (annotate, the API); "bounded"
    # keeps what the reports show, HTML charts included (`bounded`): the parent's memory stays flat in
    # N; "text" the same without the HTML charts' inputs (the other formats, gate, diff)
    rank_frames: Literal["full", "bounded", "text"] = "full"
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
    def idle_by_device_named(self) -> pl.DataFrame:
        """`idle` with each device's `name` from `devices` (null when unnamed)."""
        return views.named_idle(self.idle, self.devices)

    @property
    def deepest_launch_queue(self) -> dict[str, Any] | None:
        """The row of `queue` of the stream whose launch queue grew deepest (ties: the first)."""
        return views.deepest_queue(self.queue)

    @property
    def cpu_step_spread(self) -> tuple[Any, Any, Any]:
        """(median, min, max) of the CPU steps' durations (ns)."""
        return views.spread(self.cpu_steps["duration_ns"])

    @property
    def kernel_time_ns(self) -> int:
        """The GPU time of every kernel of `kernels` (the share column's denominator)."""
        return self.kernels["total_ns"].sum()

    @property
    def op_time_ns(self) -> int:
        """The kernel time of every op of `ops` (the share column's denominator)."""
        return self.ops["total_ns"].sum()

    def roof_notes(self, shown: int) -> RoofNotes:
        """What the footnotes of the kernel table say about its first `shown` rows."""
        return views.roof_notes(self.kernels.head(shown))

    def longest_gaps(self, limit: int) -> list[tuple[dict[str, Any], int]]:
        """The `limit` longest idle gaps, each with its device window's start (report.views.longest_gaps)."""
        return views.longest_gaps([(self.idle, self.gaps)], limit)

    @property
    def step_count(self) -> int:
        """How many distinct ProfilerSteps `steps` holds (a step on two devices counted once)."""
        return self.steps["step"].n_unique() if self.steps.height else 0

    @property
    def steps_on_several_devices(self) -> bool:
        """Whether `steps` holds the steps of more than one device."""
        return self.steps["device"].n_unique() > 1

    @property
    def has_unmodeled_kernels(self) -> bool:
        """Whether any kernel of `roofline` has no FLOP/byte model (regime "unmodeled")."""
        return bool((self.roofline["regime"] == "unmodeled").any())

    @property
    def launch_to_start_stats(self) -> dict[str, Any] | None:
        """The row of `latency_stats` for launch → start, when it counted a launch."""
        return views.metric_row(self.latency_stats, "launch_to_start_ns")

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

    @property
    def every_note(self) -> tuple[str, ...]:
        """Every note of any rank, and the missing ranks' note, each once, sorted (the JSON's `notes`)."""
        missing = missing_ranks_note([r.rank for r in self.ranks], [r.world_size for r in self.ranks])
        return tuple(sorted({note for r in self.ranks for note in r.notes} | ({missing} if missing else set())))

    @cached_property
    def listed_collectives(self) -> ListedCollectives:
        """The collectives each format lists, in its order (report.summaries.chosen_collectives)."""
        return summaries.chosen_collectives(self.job)

    @cached_property
    def replay(self) -> pl.DataFrame:
        """One row: the ranks' replays together (whatif.job_replay, docs/whatif.md)."""
        return job_replay([r.replay for r in self.ranks])

    @cached_property
    def straggler(self) -> Straggler | None:
        """The slowest rank, the wait it caused and its straggling steps (None: no rank waited)."""
        return views.straggler(self.job.slowest_rank, self.job.waits_caused, self.job.stragglers)

    def job_step_medians(self, rank: int) -> tuple[int, dict[str, Any]]:
        """How many steps of the job's per-step split (`job.steps`) are `rank`'s, and the median of
        each part over them (report.views.step_medians)."""
        return views.step_medians(self.job.steps, rank)

    @property
    def job_clock_residual_ns(self) -> int | None:
        """The largest residual of the clock alignment over the ranks (`job.clock_offsets`)."""
        return self.job.clock_offsets["residual_max_abs_ns"].max()  # type: ignore[return-value]

    def job_health_of(self, rank: int) -> pl.DataFrame:
        """The job-level health findings (`job.health`) about `rank`."""
        return self._job_health_by_rank.get(rank, self.job.health.clear())

    @cached_property
    def _job_health_by_rank(self) -> dict[int, pl.DataFrame]:
        """`job.health` split by rank once (a filter per rank of a thousand cost 0.4 ms each)."""
        return views.by_rank(self.job.health)

    @property
    def step_grid(self) -> tuple[list[int], list[int]]:
        """The ranks and step numbers of the job's per-step split, each ascending (the heatmap's axes)."""
        return views.ranks_and_steps(self.job.steps)

    @cached_property
    def collective_lanes(self) -> tuple[tuple[tuple[int, TimelineRow], ...], tuple[int, int]]:
        """Per rank, its matched collectives' wait and transfer intervals (report.views.collective_lanes)
        as the timeline draws them (`chart_inputs.binned_rows`: clipped, or in pixel bins), and
        their window. The lanes carry no colours and no label: the chart's words."""
        from traceanalyze.renderers.plots import TimelineRow

        lanes, window = views.collective_lanes(self.job.matched)
        rows = binned_rows([TimelineRow("", intervals, {}) for _, intervals in lanes], window)
        return tuple((rank, row) for (rank, _), row in zip(lanes, rows)), window

    @property
    def longest_gaps(self) -> list[tuple[dict[str, Any], int]]:
        """The `options.max_gaps` longest idle gaps over the ranks, each with its device window's start."""
        return views.longest_gaps([(r.idle, r.gaps) for r in self.ranks], self.options.max_gaps)

    @property
    def charted_ranks(self) -> list[int]:
        """The ranks whose timeline and roofline a job's report draws (`CHARTED_RANKS` at most): the
        straggler, then the most idle, then by rank."""
        slowest = self.job.slowest_rank
        order = sorted(self.ranks, key=lambda r: (r.rank != slowest, -(r.summary.window.idle_fraction or 0.0), r.rank))
        return [r.rank for r in order[:CHARTED_RANKS]]

    @property
    def detail_ranks(self) -> list[int]:
        """The ranks whose full sections the terminal shows without `--details`: the slowest rank
        (else the rank with the most GPU idle; ties: the lowest rank)."""
        slowest = self.job.slowest_rank
        if slowest is not None:
            return [slowest]
        idle = [(r.summary.window.idle_fraction or 0.0, -r.rank, r.rank) for r in self.ranks]
        return [max(idle)[2]] if idle else []

    def listed_findings(self, ranks: tuple[int, ...] | None = None,
                        whole: tuple[tuple[int, str], ...] = ()) -> tuple[pl.DataFrame, int]:
        """`all_findings` less `whole` (shown uncut already), the job's and those of `ranks` (None:
        every rank); and how many others were left out."""
        return views.findings_listed(self.all_findings(), self.job.findings, ranks, whole)

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
