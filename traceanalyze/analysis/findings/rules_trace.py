"""Rules about the recording: time the model could not judge because shapes were not recorded,
and trace health that makes other findings less certain (or void)."""

from __future__ import annotations

import polars as pl

from traceanalyze.analysis.findings.finding import Finding, spans_of
from traceanalyze.analysis.findings.inputs import FindingInputs, busy_ns, format_ns, format_share
from traceanalyze.analysis.names import matching

UNRECORDED_SHAPES = ("no shapes recorded", "shape arguments incomplete")  # unmodeled_reason prefixes
MIN_UNRECORDED_SHARE = 0.05  # of GPU busy time

GAP_FINDINGS = ("dataloader-wait", "sync-in-step", "launch-bound", "cpu-bound-gaps", "queued-kernel-gaps")
ROOFLINE_FINDINGS = ("fp32-simt-gemm", "lower-precision-tf32", "lower-precision-bf16", "lower-precision-fp16",
                     "gemm-shape-alignment", "latency-bound-kernels", "fuse-bandwidth-chain", "record-shapes",
                     "unfused-attention", "layout-conversions", "optimizer-foreach", "far-below-roof")
# health finding (analysis/health.py) → (findings it affects, "downgrade" or "suppress")
HEALTH_EFFECTS = {
    "clock_skew": (GAP_FINDINGS, "downgrade"),
    "launches_without_gpu_work": (GAP_FINDINGS, "downgrade"),
    "orphan_gpu_ops": (ROOFLINE_FINDINGS, "downgrade"),
    "repeated_correlation_ids": (GAP_FINDINGS + ROOFLINE_FINDINGS, "downgrade"),
    "repeated_external_ids": (ROOFLINE_FINDINGS, "downgrade"),
    "device_id_unmatched": (ROOFLINE_FINDINGS, "downgrade"),
    "malformed_events_skipped": (GAP_FINDINGS + ROOFLINE_FINDINGS, "downgrade"),
    "cuda_graph_launches": (("launch-bound",), "suppress"),  # graphs already replay the step
}


def record_shapes(inputs: FindingInputs) -> list[Finding]:
    """GPU time with no cost model because the trace has no (or incomplete) input shapes."""
    unrecorded = matching(inputs.roofline["unmodeled_reason"], lambda reason: pl.any_horizontal(
        [reason.str.starts_with(prefix) for prefix in UNRECORDED_SHAPES]))
    rows = inputs.roofline.select("regime", "unmodeled_reason", "start_ns", "end_ns", "duration_ns").filter(
        (pl.col("regime") == "unmodeled") & pl.lit(unrecorded.fill_null(False)))
    busy = busy_ns(inputs)
    total = int(rows["duration_ns"].sum()) if rows.height else 0
    if not total or total < MIN_UNRECORDED_SHARE * busy:
        return []
    return [Finding(
        id="record-shapes", regime="unmodeled", title="Shapes were not recorded: part of the GPU time is not judged",
        evidence=f"{format_ns(total)} = {format_share(total, busy)} of GPU busy has no FLOP/byte model "
                 f"({rows['unmodeled_reason'].mode().sort()[0]})",
        action="record input shapes: `torch.profiler.profile(..., record_shapes=True)` (`traceanalyze capture` "
               "does it)",
        gain_ns=None, confidence="high", spans=spans_of(rows))]


def apply_health(found: list[Finding], health: pl.DataFrame) -> list[Finding]:
    """Downgrade or drop the findings a health problem of this rank makes uncertain or void."""
    problems = health.filter(pl.col("count") > 0) if health.height else health
    for name, count in (problems.select("finding", "count").iter_rows() if problems.height else ()):
        if name not in HEALTH_EFFECTS:
            continue
        affected, effect = HEALTH_EFFECTS[name]
        if effect == "suppress":
            found = [f for f in found if f.id not in affected]
        else:
            found = [f.downgraded(f"trace health: {name} ({count})") if f.id in affected else f for f in found]
    return found
