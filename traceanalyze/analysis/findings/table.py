"""Run every rule on one rank's analyses, or on a job's cross-rank tables, and rank what they find
(RULES, GAP_RULES, JOB_RULES: add a rule here)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

import polars as pl

from traceanalyze.analysis.findings import kernel_claims, rules_gaps, rules_job, rules_regimes, rules_trace
from traceanalyze.analysis.findings.finding import FINDINGS_SCHEMA, Finding, findings_frame, ranked
from traceanalyze.analysis.findings.gap_buckets import bucketed_gaps
from traceanalyze.analysis.findings.inputs import FindingInputs
from traceanalyze.analysis.findings.run_context import recorded_training

if TYPE_CHECKING:
    from traceanalyze.analysis.job import JobAnalysis

GapRule = Callable[[FindingInputs, rules_gaps.GapBuckets], list[Finding]]
Rule = Callable[[FindingInputs], list[Finding]]
JobRule = Callable[["JobAnalysis"], list[tuple[int, Finding]]]  # (the rank it names, the finding)

# Rules over idle gaps get the gaps with their bucket (each gap counted by one rule only).
GAP_RULES: tuple[GapRule, ...] = (
    rules_gaps.dataloader, rules_gaps.sync, rules_gaps.launch_bound, rules_gaps.host_bound, rules_gaps.queued,
    rules_gaps.warmup,
)
# the kernel rules run together (`kernel_claims.KERNEL_RULES`): each kernel's time counts in one finding
RULES: tuple[Rule, ...] = (kernel_claims.kernel_findings, rules_trace.record_shapes)
# Rules over what the others found (a busy GPU that no finding explains)
ClosingRule = Callable[[list[Finding], FindingInputs], list[Finding]]
CLOSING_RULES: tuple[ClosingRule, ...] = (rules_regimes.busy_without_lever,)
# Rules over the cross-rank tables of a job (several ranks); each finding names its rank.
JOB_RULES: tuple[JobRule, ...] = (rules_job.straggler, rules_job.exposed_communication)


# The per-kernel roofline columns the rules read: they see only these, so that a rule's filter of
# the kernels it is about copies a few columns, not the roofline's seventy (on 1 GB traces the
# bandwidth-bound kernels alone are most of 320 k rows). A rule that reads another column fails
# its tests until the column is named here.
ROOFLINE_READ = ("device", "stream", "launch_start_ns", "ideal_ns",
                 "kind", "name", "op_name", "op_id", "start_ns", "end_ns", "duration_ns", "regime", "unmodeled_reason",
                 "flops", "bytes", "peak_flops_per_s", "peak_bytes_per_s", "tf32_peak_flops_per_s", "tensor_core",
                 "pct_of_roof", "compute_dtype", "cost_model", "recoverable_ns")


def findings(inputs: FindingInputs, bucketed: pl.DataFrame | None = None) -> pl.DataFrame:
    """The findings of one rank (FINDINGS_SCHEMA), largest expected saving first, after trace health has
    downgraded or removed what it makes uncertain. `bucketed`: `bucketed_gaps(inputs)` when the
    caller has it already."""
    return findings_frame(inputs.rank, rank_findings(inputs, bucketed))


def rank_findings(inputs: FindingInputs, bucketed: pl.DataFrame | None = None) -> list[Finding]:
    """The `Finding`s of one rank (their `remedies` kept, for the replay), after trace health has
    downgraded or removed what it makes uncertain, in the rules' order."""
    found: list[Finding] = []
    if inputs.training is None:  # read once, not by each rule that words its advice by it
        inputs = replace(inputs, training=recorded_training(inputs.cpu_ops))
    if inputs.gaps.height:
        buckets = rules_gaps.split_buckets(bucketed_gaps(inputs) if bucketed is None else bucketed)
        for gap_rule in GAP_RULES:
            found.extend(gap_rule(inputs, buckets))
    if inputs.roofline.height:
        read = [name for name in ROOFLINE_READ if name in inputs.roofline.columns]
        narrow = replace(inputs, roofline=inputs.roofline.select(read))  # a rule's filter copies what it keeps
        for rule in RULES:
            found.extend(rule(narrow))
    window = int(inputs.attribution["window_ns"].sum()) if inputs.attribution.height else 0
    for closing_rule in CLOSING_RULES:
        found.extend(closing_rule(found, inputs))
    found = kernel_claims.within_window(found, window)
    return rules_trace.apply_health(found, inputs.health)


def job_findings(job: JobAnalysis) -> pl.DataFrame:
    """The job-level findings (FINDINGS_SCHEMA, each filed under the rank it names), largest gain
    first; the job's health findings (clock residuals, unmatched collectives) downgrade them: the
    waits they rest on are less certain."""
    found: list[tuple[int, Finding]] = [pair for rule in JOB_RULES for pair in rule(job)]
    for name, ranks in job.health.group_by("finding", maintain_order=True).agg(pl.len()).iter_rows():
        reason = f"trace health: {name} ({ranks} rank{'s' if ranks != 1 else ''})"
        found = [(rank, f.downgraded(reason)) for rank, f in found]
    frames = [findings_frame(rank, [f]) for rank, f in found]
    if not frames:
        return pl.DataFrame(schema=FINDINGS_SCHEMA)
    return ranked(pl.concat(frames))
