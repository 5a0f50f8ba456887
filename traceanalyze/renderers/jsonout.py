"""The JSON report: the model's tables and summary figures put into the `ReportV1` structs
(report/schema.py, docs/report-json.md) and encoded. Times in µs. Nothing is computed here beyond
unit conversion and choosing which rows to list."""

from __future__ import annotations

from typing import Any

import msgspec
import polars as pl

from traceanalyze.analysis.attribution import ATTRIBUTION_KEYS
from traceanalyze.analysis.job import JobAnalysis
from traceanalyze.analysis.roofline import ON_ROOFLINE
from traceanalyze.report import schema
from traceanalyze.report.model import RankReport, Report
from traceanalyze.report.schema import KERNEL_LIMIT, SCHEMA_VERSION
from traceanalyze.report.summaries import (
    SMALL_KERNEL_RUNS_LISTED, LatencyFigures, ListedCollectives, SmallKernelSummary, Summary,
)
from traceanalyze.units import json_us as _us
from traceanalyze.version import __version__


# JSON key of each launch-latency measure
LATENCY_KEYS = {
    "launch_to_start_ns": "launch_to_start_us",
    "queue_wait_ns": "queue_wait_us",
    "launch_overhead_ns": "launch_overhead_us",
    "launch_cpu_ns": "launch_cpu_us",
    "launch_delay_ns": "launch_delay_us",
}


def _number(value: Any) -> Any:
    return None if value is None or value != value else value


def _latency(figures: LatencyFigures) -> schema.LatencyStats:
    if figures.count == 0:
        return schema.LatencyStats(count=0)
    return schema.LatencyStats(count=figures.count, mean=_us(figures.mean), p50=_us(figures.p50), p90=_us(figures.p90),
                               p99=_us(figures.p99), max=_us(figures.max))


def _replay(frame: pl.DataFrame, steps: pl.DataFrame | None = None) -> schema.Replay | None:
    """The replay's row (whatif.REPLAY_SCHEMA) and, for a rank, its steps, in µs (docs/whatif.md)."""
    if not frame.height:
        return None
    row = frame.row(0, named=True)
    return schema.Replay(
        measured_us=_us(row["measured_ns"]), replayed_us=_us(row["replayed_ns"]), relative_error=row["relative_error"],
        step_us=_us(row["step_ns"]), replayed_step_us=_us(row["replayed_step_ns"]),
        predicted_window_us=_us(row["predicted_window_ns"]), predicted_step_us=_us(row["predicted_step_ns"]),
        predicted_findings=list(row["predicted_ids"]),
        steps=[schema.ReplayStep(step=r["step"], measured_us=_us(r["measured_ns"]),  # type: ignore[arg-type]
                                 replayed_us=_us(r["replayed_ns"]), relative_error=r["relative_error"])
               for r in (steps.iter_rows(named=True) if steps is not None else ())],
    )


def _summary_fields(summary: Summary) -> dict[str, Any]:
    """The keyword arguments of `schema.SummaryFields` from the model's summary."""
    window, attribution = summary.window, summary.attribution
    return {
        "window_us": _us(window.window_ns),
        "gpu_busy_us": _us(window.busy_ns),
        "gpu_idle_us": _us(window.idle_ns),
        "idle_fraction": window.idle_fraction,
        "device_windows": window.device_windows,
        "attribution": attribution.shares,
        "attribution_us": ({key: _us(ns) for key, ns in attribution.regime_ns.items()}
                           if attribution.regime_ns is not None else None),
        "model_coverage": attribution.model_coverage,
        "modelled_busy_us": _us(attribution.modelled_busy_ns),
        "modelable_busy_us": _us(attribution.modelable_busy_ns),
        "communication_busy_us": _us(attribution.communication_busy_ns),
        "idle_by_cause_us": {cause: _us(ns) for cause, ns in summary.idle_by_cause_ns.items()},
        **{LATENCY_KEYS[metric]: _latency(figures) for metric, figures in summary.latency.items()},
    }


def _stats_row(row: dict[str, Any]) -> schema.LatencyStats:
    if row["count"] == 0:
        return schema.LatencyStats(count=0)
    return schema.LatencyStats(count=int(row["count"]),
                               **{k: _us(row[k]) for k in ("mean", "p50", "p90", "p99", "max")})


def _latency_by_group(report: RankReport) -> dict[str, schema.LaunchLatency]:
    by_group: dict[str, dict[str, schema.LatencyStats]] = {}
    for row in report.latency_by_group.iter_rows(named=True):
        by_group.setdefault(row["group"], {})[LATENCY_KEYS[row["metric"]]] = _stats_row(row)
    return {group.replace("/", "_"): schema.LaunchLatency(**stats) for group, stats in by_group.items()}


def _latency_by_kernel(report: RankReport, limit: int) -> list[schema.KernelLatency]:
    return [
        schema.KernelLatency(name=r["name"], count=r["count"],
                             **{k: _us(r[k]) for k in ("mean", "p50", "p90", "p99", "max")})
        for r in report.latency_by_kernel.head(limit).iter_rows(named=True)
    ]


def _gap(row: dict[str, Any], window_start_ns: int) -> schema.Gap:
    return schema.Gap(
        rank=row["rank"],
        device=row["device"],
        start_us=_us(row["start_ns"] - window_start_ns),  # type: ignore[arg-type]
        trace_ts_us=_us(row["start_ns"]),  # type: ignore[arg-type]
        duration_us=_us(row["duration_ns"]),  # type: ignore[arg-type]
        share_of_window=row["share_of_window"],
        cause=str(row["cause"]),
        cpu_op=row["cpu_op"],
        annotation=row["annotation"],
        step=row["step"],
        sync_call=row["sync_call"],
        previous_gpu_op=row["previous_gpu_op"],
        next_gpu_op=row["next_gpu_op"],
    )


def _gaps(longest: list[tuple[dict[str, Any], int]]) -> list[schema.Gap]:
    """The longest gaps (`RankReport.longest_gaps`, `Report.longest_gaps`), each with its start in
    its device's window."""
    return [_gap(row, start) for row, start in longest]


def _small_kernels(summary: SmallKernelSummary, runs: pl.DataFrame) -> schema.SmallKernels:
    return schema.SmallKernels(
        count=summary.count,
        kernels_with_launch=summary.kernels_with_launch,
        gpu_time_us=_us(summary.gpu_time_ns) if summary.gpu_time_ns is not None else 0.0,  # type: ignore[arg-type]
        share_of_kernel_time=summary.share_of_kernel_time,
        runs=[
            schema.SmallKernelRun(stream=r["stream"], kernels=r["kernels"], span_us=_us(r["span_ns"]),
                                  busy_us=_us(r["busy_ns"]), first_kernel=r["first_kernel"])  # type: ignore[arg-type]
            for r in runs.head(SMALL_KERNEL_RUNS_LISTED).iter_rows(named=True)
        ],
    )


def _peaks(report: RankReport) -> list[schema.Peak]:
    entries = []
    for choice in report.peaks:
        peaks = choice.peaks
        entries.append(schema.Peak(
            device=choice.device,
            name=choice.device_name,
            matched=peaks.display_name if peaks else None,
            source=choice.source,
            memory_bandwidth_bytes_per_s=peaks.memory_bandwidth_bytes_per_s if peaks else None,
            peak_flops_per_s=({f"{dtype}:{unit}": value for (dtype, unit), value in peaks.flops_per_s.items()}
                              if peaks else None),
        ))
    return entries


def _roofline_fields(r: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of `schema.RooflineFields` from a kernel or op row."""
    modelled = r["bound"] in (*ON_ROOFLINE, "memcpy")
    on_roofline = r["bound"] in ON_ROOFLINE
    return {
        "count": r["count"],
        "total_us": _us(r["total_ns"]),
        "flops": r["flops"] if modelled else None,
        "bytes": r["bytes"] if modelled else None,
        "intensity": _number(r["intensity"]) if modelled else None,
        "achieved_flops_per_s": _number(r["achieved_flops_per_s"]) if modelled else None,
        "achieved_bytes_per_s": _number(r["achieved_bytes_per_s"]) if modelled else None,
        "bound": str(r["bound"]),
        "roof": r["roof"] if modelled else None,
        "compute_dtype": r["compute_dtype"] if on_roofline else None,
        "math_unit": ("tensor" if r["tensor_core"] else "simt") if on_roofline else None,
        "peak_flops_per_s": _number(r["peak_flops_per_s"]) if on_roofline else None,
        "peak_bytes_per_s": _number(r["peak_bytes_per_s"]) if modelled else None,
        "ridge_flops_per_byte": _number(r["ridge_flops_per_byte"]) if on_roofline else None,
        "pct_of_roof": _number(r["pct_of_roof"]),
        "pct_of_peak": _number(r["pct_of_roof"]),
        "no_roof_reason": r["no_roof_reason"] if modelled else None,
        "recoverable_us": _us(r["recoverable_ns"]) if r["recoverable_ns"] else 0.0,
        "unmodeled_reason": r["unmodeled_reason"] if r["bound"] == "unmodeled" else None,
        "tf32_peak_flops_per_s": _number(r.get("tf32_peak_flops_per_s")) if on_roofline else None,
        "tf32_roof_fraction": _number(r.get("tf32_roof_fraction")) if on_roofline else None,
    }


def _kernels(kernels: pl.DataFrame) -> list[Any]:
    return [schema.Kernel(name=r["name"], op=r["op"], **_roofline_fields(r))
            for r in kernels.head(KERNEL_LIMIT).iter_rows(named=True)]


def _ops(ops: pl.DataFrame) -> list[Any]:
    return [schema.Op(op=r["op"], **_roofline_fields(r)) for r in ops.head(KERNEL_LIMIT).iter_rows(named=True)]


def _fusion(report: RankReport, limit: int) -> list[schema.Fusion]:
    return [
        schema.Fusion(ops=r["ops"], annotation=r["annotation"], occurrences=r["occurrences"], kernels=r["kernels"],
                      duration_us=_us(r["duration_ns"]), bytes_saved=r["bytes_saved"],  # type: ignore[arg-type]
                      time_saved_us=_us(r["time_saved_ns"]))  # type: ignore[arg-type]
        for r in report.fusion.head(limit).iter_rows(named=True)
    ]


def _steps(report: RankReport) -> list[schema.Step]:
    attributed = {}
    if report.step_attribution.height:
        for r in report.step_attribution.iter_rows(named=True):
            attributed[(r["device"], r["step"])] = {key: r[key] for key in ATTRIBUTION_KEYS}
    return [
        schema.Step(device=r["device"], step=r["step"], cpu_duration_us=_us(r["cpu_duration_ns"]),
                    window_us=_us(r["window_ns"]), gpu_busy_us=_us(r["gpu_busy_ns"]), gpu_idle_us=_us(r["gpu_idle_ns"]),
                    idle_fraction=r["idle_fraction"], gpu_ops=r["gpu_ops"],
                    attribution=attributed.get((r["device"], r["step"])))
        for r in report.steps.iter_rows(named=True)
    ]


def _devices(report: RankReport) -> list[schema.Device]:
    named = report.idle_by_device_named
    return [
        schema.Device(device=r["device"], name=r["name"], window_us=_us(r["window_ns"]),
                      gpu_busy_us=_us(r["gpu_busy_ns"]),
                      gpu_idle_us=_us(r["gpu_idle_ns"]), idle_fraction=r["idle_fraction"], gpu_ops=r["gpu_ops"])
        for r in named.iter_rows(named=True)
    ]


def _rank_entry(report: RankReport, limit: int) -> schema.Rank:
    peaks = _peaks(report)
    summary = schema.RankSummary(
        **_summary_fields(report.summary),
        small_kernels=_small_kernels(report.small_kernel_summary, report.small_kernel_runs),
        steps=report.step_count,
        replay=_replay(report.replay, report.replay_steps),
    )
    return schema.Rank(
        rank=report.rank,
        source=str(report.source),
        world_size=report.world_size,
        device_family=report.device_family,
        has_gpu_events=report.has_gpu,
        notes=list(report.notes),
        summary=summary,
        devices=_devices(report),
        streams=[
            schema.Stream(device=r["device"], stream=r["stream"], gpu_ops=r["gpu_ops"],
                          busy_us=_us(r["busy_ns"]),  # type: ignore[arg-type]
                          idle_fraction=r["idle_fraction"])
            for r in report.streams.iter_rows(named=True)
        ],
        steps=_steps(report),
        cpu_steps=[schema.CpuStep(step=r["step"], duration_us=_us(r["duration_ns"]))  # type: ignore[arg-type]
                   for r in report.cpu_steps.iter_rows(named=True)],
        idle_gaps=_gaps(report.longest_gaps(limit)),
        device=(peaks or [None])[0],
        peaks=peaks,
        launch_latency_by_kind=_latency_by_group(report),
        launch_latency_by_kernel=_latency_by_kernel(report, KERNEL_LIMIT),
        kernels=_kernels(report.kernels),
        kernels_total=report.kernels.height,
        ops=_ops(report.ops),
        ops_total=report.ops.height,
        fusion_opportunities=_fusion(report, limit),
        recoverable_us={r["regime"]: _us(r["recoverable_ns"]) for r in report.recoverable.iter_rows(named=True)
                        if r["recoverable_ns"] is not None},
        queue=[
            schema.Queue(device=r["device"], stream=r["stream"], max_depth=r["max_depth"], mean_depth=r["mean_depth"],
                         time_at_full_us=_us(r["time_at_full_ns"]))  # type: ignore[arg-type]
            for r in report.queue.iter_rows(named=True)
        ],
        health=[
            schema.Health(finding=r["finding"], count=r["count"], affects=r["affects"], detail=r["detail"])
            for r in report.health.iter_rows(named=True)
        ],
    )


def _findings(report: Report) -> list[schema.Finding]:
    found = report.all_findings()
    return [
        schema.Finding(rank=row["rank"], id=row["id"], regime=str(row["regime"]), title=row["title"],
                       evidence=row["evidence"], action=row["action"],
                       gain_us=None if row["gain_ns"] is None else row["gain_ns"] / 1000,
                       saving_us=None if row["saving_ns"] is None else row["saving_ns"] / 1000,
                       bound_us=None if row["bound_ns"] is None else row["bound_ns"] / 1000,
                       confidence=str(row["confidence"]))
        for row in (found.iter_rows(named=True) if found.height else ())
    ]


def report_v1(report: Report) -> schema.ReportV1:
    """The report model as the JSON schema's `ReportV1`."""
    ranks = list(report.ranks)
    limit = report.options.max_gaps
    return schema.ReportV1(
        schema_version=SCHEMA_VERSION,
        tool=schema.Tool(name="traceanalyze", version=__version__),
        source=str(report.source),
        options=schema.Options(window=report.options.window, max_gaps=limit, skip_steps=report.options.skip_steps),
        notes=list(report.every_note),
        summary=schema.Summary(**_summary_fields(report.summary), ranks=len(ranks),
                               replay=_replay(report.replay)),
        findings=_findings(report),
        idle_gaps=_gaps(report.longest_gaps),
        device=next((p for r in ranks for p in _peaks(r)), None),
        kernels=_kernels(report.kernels),
        kernels_total=report.kernels.height,
        ops=_ops(report.ops),
        ops_total=report.ops.height,
        ranks=[_with_job_health(_rank_entry(r, limit), report.job_health_of(r.rank)) for r in ranks],
        **job_sections(report.job, report.listed_collectives),
    )


def _with_job_health(entry: schema.Rank, mine: pl.DataFrame) -> schema.Rank:
    """A rank's entry with the job-level health findings about it (`mine`: clock residuals,
    unmatched collectives) after its own."""
    if mine.is_empty():
        return entry
    extra = [schema.Health(finding=r["finding"], count=r["count"], affects=r["affects"], detail=r["detail"])
             for r in mine.iter_rows(named=True)]
    return msgspec.structs.replace(entry, health=[*entry.health, *extra])


def report_to_dict(report: Report) -> dict[str, Any]:
    """The JSON report as Python objects (what `json.loads(render_json(report))` gives)."""
    return msgspec.to_builtins(report_v1(report))


def render_json(report: Report) -> str:
    return schema.encode_report(report_v1(report))


# -- the job's sections (a folder of ranks) ------------------------------------------------------------------
# The JSON report's job-level sections (`collectives`, `stragglers`, `overlap`,
# `clock_offsets`, docs/report-json.md) from `analysis.job.JobAnalysis`. Times in µs.
def job_sections(job: JobAnalysis, listed: ListedCollectives) -> dict[str, Any]:
    """The keyword arguments of `schema.ReportV1` for the job-level sections."""
    return {
        "collectives": collectives(listed),
        "collectives_total": job.collectives.height,
        "stragglers": stragglers(job),
        "overlap": [
            schema.Overlap(rank=r["rank"], communication_us=_us(r["communication_ns"]),
                           overlapped_us=_us(r["overlapped_ns"]),  # type: ignore[arg-type]
                           exposed_us=_us(r["exposed_ns"]), overlap_fraction=_number(r["overlap_fraction"]),
                           wait_us=_us(r["wait_ns"]), hideable_us=_us(r["hideable_ns"]))
            for r in job.overlap.iter_rows(named=True)
        ],
        "clock_offsets": [
            schema.ClockOffset(rank=r["rank"], reference_rank=r["reference_rank"],
                               offset_us=_us(r["offset_ns"]),  # type: ignore[arg-type]
                               collectives=r["collectives"], residual_median_abs_us=_us(r["residual_median_abs_ns"]),
                               residual_max_abs_us=_us(r["residual_max_abs_ns"]))
            for r in job.clock_offsets.iter_rows(named=True)
        ],
    }


def collectives(chosen: ListedCollectives) -> list[schema.Collective]:
    listed = chosen.in_order
    ranks: dict[tuple[str, int], list[schema.CollectiveRank]] = {}
    for r in chosen.per_rank.iter_rows(named=True):
        ranks.setdefault((r["process_group"], r["seq"]), []).append(schema.CollectiveRank(
            rank=r["rank"], arrival_us=_us(r["arrival_ns"] - r["first_arrival_ns"]),  # type: ignore[arg-type]
            wait_us=_us(r["wait_ns"]),  # type: ignore[arg-type]
            transfer_us=_us(r["transfer_ns"]), duration_us=_us(r["duration_ns"])))  # type: ignore[arg-type]
    return [
        schema.Collective(
            process_group=r["process_group"], seq=r["seq"], collective=r["collective"], algorithm=r["algorithm"],
            protocol=r["protocol"], ranks=r["ranks"], message_bytes=r["message_bytes"],
            first_arrival_ts_us=_us(r["first_arrival_ns"]),  # type: ignore[arg-type]
            last_arrival_us=_us(r["last_arrival_ns"] - r["first_arrival_ns"]),  # type: ignore[arg-type]
            last_rank=r["last_rank"], wait_us=_us(r["wait_ns"]),
            max_wait_us=_us(r["max_wait_ns"]),  # type: ignore[arg-type]
            transfer_us=_us(r["transfer_ns"]),
            algbw_bytes_per_s=_number(r["algbw_bytes_per_s"]),  # type: ignore[arg-type]
            busbw_bytes_per_s=_number(r["busbw_bytes_per_s"]),
            link_peak_bytes_per_s=_number(r["link_peak_bytes_per_s"]),
            link_fraction=_number(r["link_fraction"]), consistent=r["consistent"],
            per_rank=ranks.get((r["process_group"], r["seq"]), []),
        )
        for r in listed.iter_rows(named=True)
    ]


def stragglers(job: JobAnalysis) -> schema.Stragglers:
    return schema.Stragglers(
        slowest_rank=job.slowest_rank,
        waits_caused=[schema.WaitCaused(rank=r["rank"],
                                        caused_wait_us=_us(r["caused_wait_ns"]),  # type: ignore[arg-type]
                                        collectives_last=r["collectives_last"])
                      for r in job.waits_caused.iter_rows(named=True)],
        steps=[schema.StragglerStep(step=r["step"], slowest_rank=r["slowest_rank"],
                                    behind_us=_us(r["behind_ns"]),  # type: ignore[arg-type]
                                    others_wait_us=_us(r["others_wait_ns"]),
                                    collectives_last=r["collectives_last"],  # type: ignore[arg-type]
                                    ranks=r["ranks"], cause=r["cause"], cause_us=_us(r["cause_ns"]))
               for r in job.stragglers.iter_rows(named=True)],
        rank_steps=[schema.RankStep(rank=r["rank"], device=r["device"], step=r["step"],
                                    step_us=_us(r["step_ns"]),  # type: ignore[arg-type]
                                    compute_us=_us(r["compute_ns"]), comm_us=_us(r["comm_ns"]),
                                    idle_us=_us(r["idle_ns"]),  # type: ignore[arg-type]
                                    wait_us=_us(r["wait_ns"]), work_us=_us(r["work_ns"]))  # type: ignore[arg-type]
                    for r in job.steps.iter_rows(named=True)],
    )
