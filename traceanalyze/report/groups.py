"""One rank's tables in a handful of groups (`RankReport.overhead`, `.launch`, `.roofline_tables`,
`.host`, `.diagnosis`, `.job_inputs`): what a notebook user reads, by question. Each group holds
the same frames as the `RankReport` fields of those names (no copy); every field of a
`RankReport` is in one group or is one of its `IDENTITY` fields (tests/test_public_api.py)."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from traceanalyze.analysis.roofline import PeakChoice
from traceanalyze.report.summaries import SmallKernelSummary

# the RankReport fields that are no table: which rank, from where, what it ran on, its summary
IDENTITY = ("rank", "source", "world_size", "has_gpu", "notes", "summary", "charts", "device_family", "rank_source",
            "job_identity")


@dataclass(frozen=True)
class OverheadTables:
    """Where one rank's GPU waits (`RankReport.overhead`): the idle time of its window, each idle
    gap and the time by gap cause, per stream and per step. Times in ns (docs/metrics.md)."""

    idle: pl.DataFrame
    gaps: pl.DataFrame
    idle_causes: pl.DataFrame
    streams: pl.DataFrame
    steps: pl.DataFrame


@dataclass(frozen=True)
class LaunchTables:
    """How the CPU feeds the GPU (`RankReport.launch`): each launch's latency, pooled, by kernel and
    by op group, runs of small kernels and their summary, the launch queue. Times in ns."""

    latency: pl.DataFrame
    latency_stats: pl.DataFrame
    latency_by_kernel: pl.DataFrame
    latency_by_group: pl.DataFrame
    small_kernel_runs: pl.DataFrame
    small_kernel_summary: SmallKernelSummary
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
class HostTables:
    """The CPU side and the trace itself (`RankReport.host`): the devices, the top CPU ops, CPU time
    per step, the trace's health checks."""

    devices: pl.DataFrame
    cpu_ops_top: pl.DataFrame
    cpu_steps: pl.DataFrame
    health: pl.DataFrame


@dataclass(frozen=True)
class Diagnosis:
    """What to change (`RankReport.diagnosis`): the findings ranked by expected saving, the replay's
    window against the recorded one (the top findings together), measured and replayed time per step
    (docs/findings.md, docs/whatif.md)."""

    findings: pl.DataFrame
    replay: pl.DataFrame
    replay_steps: pl.DataFrame


@dataclass(frozen=True)
class JobInputs:
    """The small tables a job's reduce combines (`RankReport.job_inputs`): collectives, per-step
    split and communication overlap (analysis.job), and the kernel-name and op aggregates the pooled
    tables add up (attribution.name_parts, op_parts)."""

    collectives: pl.DataFrame
    step_split: pl.DataFrame
    overlap: pl.DataFrame
    name_parts: pl.DataFrame
    op_parts: pl.DataFrame


GROUPS = {"overhead": OverheadTables, "launch": LaunchTables, "roofline_tables": RooflineTables,
          "host": HostTables, "diagnosis": Diagnosis, "job_inputs": JobInputs}
