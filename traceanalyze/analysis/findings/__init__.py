"""Findings: diagnoses from the analysed tables of one rank, each with its evidence, the change to
make (with the PyTorch API) and an upper bound on the time it recovers. docs/findings.md.

Add a rule: a function `(FindingInputs) -> list[Finding]` (or `(FindingInputs, bucketed_gaps)`
for one that claims idle gaps, with a bucket in `gap_buckets`) in a `rules_*` module, one line in
`table.RULES` / `table.GAP_RULES`, its section in docs/findings.md, and a firing and a silent
synthetic test in tests/analysis/findings/. A rule over a job's cross-rank tables:
`(JobAnalysis) -> list[(rank, Finding)]` in `rules_job`, one line in `table.JOB_RULES`.
"""

from traceanalyze.analysis.findings.finding import FINDINGS_SCHEMA, Finding, findings_frame
from traceanalyze.analysis.findings.gap_buckets import bucketed_gaps, excluded_ns, gap_buckets
from traceanalyze.analysis.findings.inputs import FindingInputs
from traceanalyze.analysis.findings.table import findings, job_findings, rank_findings

__all__ = ["FINDINGS_SCHEMA", "Finding", "FindingInputs", "bucketed_gaps", "excluded_ns", "findings", "findings_frame",
           "gap_buckets", "job_findings", "rank_findings"]
