"""Run every rule on one rank's analyses and rank what they find (RULES: add a rule here)."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from traceanalyze.analysis.findings import rules_gaps, rules_kernels, rules_trace
from traceanalyze.analysis.findings.finding import Finding, findings_frame
from traceanalyze.analysis.findings.gap_buckets import bucketed_gaps
from traceanalyze.analysis.findings.inputs import FindingInputs

GapRule = Callable[[FindingInputs, pl.DataFrame], list[Finding]]
Rule = Callable[[FindingInputs], list[Finding]]

# Rules over idle gaps get the gaps with their bucket (each gap counted by one rule only).
GAP_RULES: tuple[GapRule, ...] = (
    rules_gaps.dataloader, rules_gaps.sync, rules_gaps.launch_bound, rules_gaps.host_bound, rules_gaps.warmup,
)
RULES: tuple[Rule, ...] = (
    rules_kernels.fp32_simt_gemm, rules_kernels.lower_precision, rules_kernels.gemm_alignment,
    rules_kernels.latency_bound, rules_kernels.fusion, rules_kernels.pageable_copies, rules_trace.record_shapes,
)


def findings(inputs: FindingInputs) -> pl.DataFrame:
    """The findings of one rank (FINDINGS_SCHEMA), largest gain first, after trace health has
    downgraded or removed what it makes uncertain."""
    found: list[Finding] = []
    if inputs.gaps.height:
        bucketed = bucketed_gaps(inputs)
        for gap_rule in GAP_RULES:
            found.extend(gap_rule(inputs, bucketed))
    if inputs.roofline.height:
        for rule in RULES:
            found.extend(rule(inputs))
    return findings_frame(inputs.rank, rules_trace.apply_health(found, inputs.health))
