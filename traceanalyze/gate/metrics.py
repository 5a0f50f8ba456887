"""The numbers the gate (and `diff`) judge, read from the JSON report (`ReportV1`, report/schema.py),
so a trace and a saved JSON report of it give identical numbers. Pure.

Per step (one value per `ProfilerStep#N` seen, over all ranks and devices that ran GPU work in it):

* `step_time_ms`: the step's CPU duration (`cpu_duration_us`); with several ranks, the slowest
  rank's (the job's step ends when the last rank's does);
* `idle_fraction`: the step's GPU idle time over its GPU window (pooled: Σ idle / Σ window over
  devices and ranks);
* `<regime>` for each attribution regime (`overhead`, `bandwidth`, `compute`, …): the share of the
  step's GPU window (pooled the same way, weighted by window);
* `<regime>_ms`: that share × the step time, i.e. how much of the step each regime takes (the
  regimes' times add up to the step time).

Whole window (the report's `summary`): `idle_fraction`, each regime share, and `launch_p99_us`
(p99 of the launch overhead — launch → start less the wait behind earlier work on the stream, which is
healthy when the GPU is busy — over kernels, memcpy and memset, collectives excluded; the report has
no per-step latency).

Several ranks (`stragglers.rank_steps` of the report): per step and over the window,
`wait_fraction` (collective wait ÷ step time) and `exposed_comm` (collective time with no other GPU
work ÷ step time). `Measured.per_rank` holds every rank's own numbers, so the gate can judge each
rank (`--ranks worst`, the default) instead of the pool (`--ranks pooled`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

from traceanalyze.figures import EMPTY_IS_UNKNOWN, fraction
from traceanalyze.analysis.attribution import ATTRIBUTION_KEYS
from traceanalyze.gate.budgets import Statistic
from traceanalyze.report.schema import Rank, RankStep, ReportV1, Step, Summary, SummaryFields

REGIMES = ATTRIBUTION_KEYS
JOB_METRICS = ("wait_fraction", "exposed_comm")
STEP_METRICS = ("step_time_ms", "idle_fraction", *REGIMES, *(f"{r}_ms" for r in REGIMES), *JOB_METRICS)
WINDOW_METRICS = ("idle_fraction", *REGIMES, "launch_p99_us", *JOB_METRICS)

# health findings (docs/metrics.md) under which the gate will not pass a trace unless told to
# Findings that make idle time or the per-step numbers artifacts. A CUDA-graph replay with its
# kernels recorded is not one of them (only launch latency and op attribution depend on it); a
# replay whose kernels were not recorded shows up as `launches_without_gpu_work`.
UNRELIABLE_FINDINGS = ("no_gpu_events", "launches_without_gpu_work", "clock_skew")


@dataclass(frozen=True)
class Finding:
    rank: int | None
    finding: str
    count: int
    detail: str


@dataclass(frozen=True)
class Measured:
    """What one trace (or saved report) measures. `per_step[metric]` holds one value per step in
    `steps` order (`None` where that step lacks it); `window[metric]` the whole-window number."""

    source: str
    steps: tuple[int, ...]
    per_step: Mapping[str, tuple[float | None, ...]]
    window: Mapping[str, float | None]
    findings: tuple[Finding, ...] = ()
    window_option: str | None = None
    skipped_steps: int = 0  # --skip-steps of the report (0 for a saved report from before the option)
    notes: tuple[str, ...] = field(default_factory=tuple)
    devices: tuple[str, ...] = ()  # the device names the report saw (ranks[].devices[].name), sorted
    per_rank: Mapping[int, "Measured"] = field(default_factory=dict)  # several ranks: each rank's own numbers

    def step_values(self, metric: str) -> list[float]:
        return [v for v in self.per_step.get(metric, ()) if v is not None]

    def statistic(self, metric: str, which: Statistic) -> float | None:
        """`which` of the per-step values of `metric`; None when no step has one."""
        return statistic(self.step_values(metric), which)


def statistic(values: Sequence[float], which: Statistic) -> float | None:
    """median, p90 (linear interpolation between order statistics, as everywhere in the report),
    mean or max of `values`; None for no values.

    Examples
    --------
    >>> statistic([1.0, 2.0, 3.0, 10.0], "median"), statistic([1.0, 2.0, 3.0, 10.0], "p90")
    (2.5, 7.900000000000001)
    """
    if not values:
        return None
    ordered = sorted(values)
    if which == "max":
        return ordered[-1]
    if which == "mean":
        return math.fsum(ordered) / len(ordered)
    q = 0.5 if which == "median" else 0.9
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    if position == low:
        return ordered[low]
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _pooled(rows: list[Step], value: Callable[[Step], Any]) -> float | None:
    """Σ value(row) × window / Σ window; the row's own value when there is one row (exact)."""
    pairs = [(value(r), r.window_us) for r in rows]
    pairs = [(v, w) for v, w in pairs if v is not None and w is not None]
    if not pairs:
        return None
    if len(pairs) == 1:
        return float(pairs[0][0])
    window = math.fsum(w for _, w in pairs)
    return fraction(math.fsum(v * w for v, w in pairs), window, empty=EMPTY_IS_UNKNOWN)


def _step_values(rows: list[Step]) -> dict[str, float | None]:
    durations = [r.cpu_duration_us for r in rows if r.cpu_duration_us is not None]
    step_ms = max(durations) / 1000.0 if durations else None
    values: dict[str, float | None] = {"step_time_ms": step_ms}
    if len(rows) == 1:
        values["idle_fraction"] = rows[0].idle_fraction
    else:
        window = math.fsum(r.window_us or 0.0 for r in rows)
        idle = math.fsum(r.gpu_idle_us or 0.0 for r in rows)
        values["idle_fraction"] = fraction(idle, window, empty=EMPTY_IS_UNKNOWN)
    attributed = [r for r in rows if r.attribution]
    for regime in REGIMES:
        share = _pooled(attributed, lambda r, k=regime: r.attribution.get(k))
        values[regime] = share
        values[f"{regime}_ms"] = share * step_ms if share is not None and step_ms is not None else None
    return values


def _launch_p99(summary: Summary) -> float | None:
    stats = summary.launch_overhead_us  # not launch → start: its queue wait is healthy (issue 14)
    return stats.p99 if stats.count else None


def measure(report: ReportV1, *, source: str | None = None) -> Measured:
    """The gate's numbers from a JSON report (`jsonout.report_v1`, or a saved JSON report decoded
    by `gate.inputs`); `source` names it in the verdict (default: the report's own `source`, the
    trace it was made from).

    Examples
    --------
    >>> from traceanalyze.renderers.jsonout import report_v1  # doctest: +SKIP
    >>> measure(report_v1(build_report(load_trace("fixtures/synthetic_training.json.gz")))).steps  # doctest: +SKIP
    (1, 2, 3, 4)
    """
    source = source if source is not None else report.source
    pooled = _measure_ranks(report, list(report.ranks), report.summary, source)
    if len(report.ranks) < 2:
        return pooled
    per_rank = {rank.rank: _measure_ranks(report, [rank], rank.summary, source)
                for rank in report.ranks if rank.rank is not None}
    return replace(pooled, per_rank=per_rank)


def _measure_ranks(report: ReportV1, ranks: list[Rank], summary: SummaryFields, source: str) -> Measured:
    """The numbers of `ranks` pooled (all of the report's, or one), with `summary` their
    whole-window figures. Wait and exposed communication come from the job's per-rank steps
    (`stragglers.rank_steps`) and per-rank overlap."""
    numbers = {rank.rank for rank in ranks}
    by_step: dict[int, list[Step]] = {}
    findings: list[Finding] = []
    for rank in ranks:
        for row in rank.steps:
            by_step.setdefault(row.step, []).append(row)
        for item in rank.health:
            findings.append(Finding(rank.rank, item.finding, item.count, item.detail or ""))
    job_steps: dict[int, list[RankStep]] = {}
    for row in report.stragglers.rank_steps:
        if row.rank in numbers:
            job_steps.setdefault(row.step, []).append(row)
    steps = tuple(sorted(by_step))
    devices = tuple(sorted({d.name for rank in ranks for d in rank.devices if d.name}))
    columns: dict[str, list[float | None]] = {metric: [] for metric in STEP_METRICS}
    for step in steps:
        values = {**_step_values(by_step[step]), **_job_values(job_steps.get(step, []))}
        for metric in STEP_METRICS:
            columns[metric].append(values.get(metric))
    attribution = summary.attribution or {}
    window: dict[str, float | None] = {"idle_fraction": summary.idle_fraction}
    window.update({regime: attribution.get(regime) for regime in REGIMES})
    window["launch_p99_us"] = _launch_p99(summary)
    window["model_coverage"] = summary.model_coverage  # the share of busy time the roofline model covers
    window.update(_job_values([row for rows in job_steps.values() for row in rows]))
    return Measured(
        source=source,
        steps=steps,
        per_step={metric: tuple(values) for metric, values in columns.items()},
        window=window,
        findings=tuple(findings),
        window_option=report.options.window,
        skipped_steps=report.options.skip_steps or 0,
        notes=tuple(report.notes),
        devices=devices,
    )


def skipped_steps_notes(first: Measured, second: Measured, names: tuple[str, str]) -> list[str]:
    """What the gate and the diff say about `--skip-steps`: how many steps were left out, and that
    the two sides differ when they do (their step numbers then cover different parts of the runs)."""
    if first.skipped_steps == second.skipped_steps:
        count = first.skipped_steps
        steps = "ProfilerStep" if count == 1 else f"{count} ProfilerSteps"
        return [f"--skip-steps {count}: the first {steps} of each rank left out"] if count else []
    return [f"the {names[0]} was analysed with --skip-steps {first.skipped_steps}, the {names[1]} with --skip-steps "
            f"{second.skipped_steps}: they cover different parts of the runs"]


def _job_values(rows: list[RankStep]) -> dict[str, float | None]:
    """`wait_fraction` (collective wait ÷ step time) and `exposed_comm` (collective time with no
    other GPU work ÷ step time), pooled over `rows` (per rank and step); None without rows."""
    total = math.fsum(r.step_us for r in rows)
    if not rows or total <= 0:
        return {"wait_fraction": None, "exposed_comm": None}
    return {"wait_fraction": math.fsum(r.wait_us for r in rows) / total,
            "exposed_comm": math.fsum(r.comm_us for r in rows) / total}


def device_mismatch(base: Measured, new: Measured) -> str | None:
    """A warning when the two sides ran on different devices (by name), else None: their times and
    regime shares then differ for reasons no code change made.

    >>> print(device_mismatch(Measured("b", (), {}, {}, devices=("NVIDIA A100-SXM4-80GB",)),
    ...                       Measured("n", (), {}, {}, devices=("NVIDIA H100 80GB HBM3",))))
    ... # doctest: +NORMALIZE_WHITESPACE
    different devices: the baseline ran on NVIDIA A100-SXM4-80GB, this run on NVIDIA H100 80GB HBM3; its
    times and regime shares are not comparable (make the baseline on the same device)
    """
    if not base.devices or not new.devices or base.devices == new.devices:
        return None
    return (f"different devices: the baseline ran on {', '.join(base.devices)}, this run on {', '.join(new.devices)}; "
            "its times and regime shares are not comparable (make the baseline on the same device)")


def unreliable_findings(findings: Iterable[Finding]) -> list[str]:
    """One line per unreliable finding kind, counts summed over ranks. Launches without GPU work in
    a trace with CUDA-graph launches say so: a replay whose kernels were not recorded is one."""
    findings = list(findings)
    graphs = sum(f.count for f in findings if f.finding == "cuda_graph_launches")
    grouped: dict[str, tuple[int, list[int | None], str]] = {}
    for f in findings:
        if f.finding not in UNRELIABLE_FINDINGS:
            continue
        count, ranks, detail = grouped.get(f.finding, (0, [], f.detail))
        grouped[f.finding] = (count + f.count, [*ranks, f.rank], detail)
    lines = []
    for name in UNRELIABLE_FINDINGS:
        if name in grouped:
            count, ranks, detail = grouped[name]
            where = f" on {len(ranks)} ranks" if len(ranks) > 1 else ""
            graph_note = (f"; the trace has {graphs} CUDA-graph launch{'es' if graphs != 1 else ''}, and a replay "
                          "whose kernels were not recorded is one of these: its GPU time is missing from idle and "
                          "busy time"
                          if name == "launches_without_gpu_work" and graphs else "")
            lines.append(f"{name} ({count}{where}): {detail}{graph_note}")
    return lines


# how a report's notes about the folder as a whole begin (report/notes.missing_ranks_note,
# jobs/identity.py, pipeline/mapreduce.py): the verdict repeats them
_JOB_NOTE_START = ("not one job", "rank file skipped", "distributedInfo.rank collides")


def is_job_note(note: str) -> bool:
    """Whether `note` (of a report's `notes`) is about the folder as a whole."""
    return note.startswith(_JOB_NOTE_START) or " ranks present (world size " in note


# the regimes the roofline model splits busy time into: only comparable when both sides' model
# covers about the same share of it (shapes recorded on one side only: "bandwidth 0.000 → 32.136 ms")
MODELLED_REGIMES = ("bandwidth", "compute", "latency", "unmodeled")
MAX_COVERAGE_GAP = 0.25


def coverage_mismatch(base: Measured, new: Measured) -> str | None:
    """Why the modelled regimes of `base` and `new` cannot be compared, or None when they can."""
    before, after = base.window.get("model_coverage"), new.window.get("model_coverage")
    if before is None and after is None:
        return None
    if before is not None and after is not None and abs(after - before) <= MAX_COVERAGE_GAP:
        return None
    shown = ["not known" if value is None else f"{100 * value:.0f}%" for value in (before, after)]
    return (f"cannot compare {', '.join(MODELLED_REGIMES)} time: the roofline model covers {shown[0]} of the "
            f"baseline's busy GPU time and {shown[1]} of this trace's (shapes recorded on one side only?); "
            "shown, not judged")
