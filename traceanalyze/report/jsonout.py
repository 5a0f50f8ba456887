"""The JSON report: a documented, versioned dict (docs/report-json.md). Times in µs."""

from __future__ import annotations

from typing import Any

import msgspec
import polars as pl

from traceanalyze import __version__
from traceanalyze.analysis.attribution import ATTRIBUTION_KEYS
from traceanalyze.health import missing_ranks_note
from traceanalyze.report.model import SCHEMA_VERSION, RankReport, Report


def _us(value_ns: Any) -> float | None:
    return None if value_ns is None else round(value_ns / 1000.0, 3)


def _stats_us(stats: pl.DataFrame, metric: str) -> dict[str, Any]:
    row = stats.filter(pl.col("metric") == metric)
    if row.is_empty() or row["count"][0] == 0:
        return {"count": 0, "mean": None, "p50": None, "p90": None, "p99": None, "max": None}
    values = row.row(0, named=True)
    return {"count": int(values["count"]), **{k: _us(values[k]) for k in ("mean", "p50", "p90", "p99", "max")}}


KERNEL_LIMIT = 50

LATENCY_METRICS = {
    "launch_to_start_us": "launch_to_start_ns",
    "queue_wait_us": "queue_wait_ns",
    "launch_overhead_us": "launch_overhead_ns",
    "launch_cpu_us": "launch_cpu_ns",
    "launch_delay_us": "launch_delay_ns",
}


def _idle_totals(reports: list[RankReport]) -> dict[str, Any]:
    """Window, busy and idle per device window, averaged over the device windows of every rank
    (the windows of concurrent ranks overlap in time: their sum is no span of anything);
    `idle_fraction` is the ratio of the sums, i.e. of the means."""
    frames = [r.idle for r in reports if r.idle.height]
    if not frames:
        return {"window_us": None, "gpu_busy_us": None, "gpu_idle_us": None, "idle_fraction": None, "device_windows": 0}
    idle = pl.concat(frames)
    window, idle_ns = idle["window_ns"].sum(), idle["idle_ns"].sum()
    return {
        "window_us": _us(idle["window_ns"].mean()),
        "gpu_busy_us": _us(idle["busy_ns"].mean()),
        "gpu_idle_us": _us(idle["idle_ns"].mean()),
        "idle_fraction": idle_ns / window if window else 0.0,
        "device_windows": idle.height,
    }


def _idle_by_cause(reports: list[RankReport]) -> dict[str, float]:
    """Idle time by gap cause per device window (averaged as `_idle_totals`): sums to `gpu_idle_us`."""
    totals = {cause: 0 for cause in ("host", "sync", "launch", "other")}
    for report in reports:
        for cause, duration in report.gaps.group_by("cause").agg(pl.col("duration_ns").sum()).iter_rows():
            totals[str(cause)] += duration
    windows = max(1, sum(r.idle.height for r in reports))
    return {cause: _us(value / windows) for cause, value in totals.items()}


def _latency_by_group(report: RankReport) -> dict[str, Any]:
    groups = report.latency_by_group["group"].unique(maintain_order=True).to_list()
    return {
        group.replace("/", "_"): {key: _stats_us(report.latency_by_group.filter(pl.col("group") == group), metric)
                for key, metric in LATENCY_METRICS.items()}
        for group in groups
    }


def _latency_by_kernel(report: RankReport, limit: int) -> list[dict[str, Any]]:
    return [
        {"name": r["name"], "count": r["count"], **{k: _us(r[k]) for k in ("mean", "p50", "p90", "p99", "max")}}
        for r in report.latency_by_kernel.head(limit).iter_rows(named=True)
    ]


def _gap(row: dict[str, Any], window_start_ns: int) -> dict[str, Any]:
    return {
        "rank": row["rank"],
        "device": row["device"],
        "start_us": _us(row["start_ns"] - window_start_ns),
        "trace_ts_us": _us(row["start_ns"]),
        "duration_us": _us(row["duration_ns"]),
        "share_of_window": row["share_of_window"],
        "cause": str(row["cause"]),
        "cpu_op": row["cpu_op"],
        "annotation": row["annotation"],
        "step": row["step"],
        "sync_call": row["sync_call"],
        "previous_gpu_op": row["previous_gpu_op"],
        "next_gpu_op": row["next_gpu_op"],
    }


def _gaps(reports: list[RankReport], limit: int) -> list[dict[str, Any]]:
    rows = []
    for report in reports:
        starts = {(r["rank"], r["device"]): r["window_start_ns"] for r in report.idle.iter_rows(named=True)}
        for row in report.gaps.head(limit).iter_rows(named=True):
            rows.append(_gap(row, starts[(row["rank"], row["device"])]))
    rows.sort(key=lambda g: -g["duration_us"])
    return rows[:limit]


def _small_kernels(report: RankReport) -> dict[str, Any]:
    kernels = report.small_kernels
    total = kernels["duration_ns"].sum() if kernels.height else 0
    small = kernels.filter(pl.col("small"))
    return {
        "count": small.height,
        "kernels_with_launch": kernels.height,
        "gpu_time_us": _us(small["duration_ns"].sum()) if small.height else 0.0,
        "share_of_kernel_time": (small["duration_ns"].sum() / total) if total else 0.0,
        "runs": [
            {"stream": r["stream"], "kernels": r["kernels"], "span_us": _us(r["span_ns"]), "busy_us": _us(r["busy_ns"]),
             "first_kernel": r["first_kernel"]}
            for r in report.small_kernel_runs.head(10).iter_rows(named=True)
        ],
    }


def _attribution(reports: list[RankReport]) -> dict[str, Any]:
    frames = [r.attribution for r in reports if r.attribution.height]
    if not frames:
        return {"attribution": None, "attribution_us": None, "model_coverage": None, "modelled_busy_us": None,
                "modelable_busy_us": None, "communication_busy_us": None}
    frame = pl.concat(frames, how="vertical_relaxed")
    window = frame["window_ns"].sum()
    modelable = frame["modelable_busy_ns"].sum()
    return {
        "attribution": {key: (frame[f"{key}_ns"].sum() / window if window else 0.0) for key in ATTRIBUTION_KEYS},
        "attribution_us": {key: _us(frame[f"{key}_ns"].sum()) for key in ATTRIBUTION_KEYS},
        "model_coverage": frame["modelled_busy_ns"].sum() / modelable if modelable else None,
        "modelled_busy_us": _us(frame["modelled_busy_ns"].sum()),
        "modelable_busy_us": _us(modelable),
        "communication_busy_us": _us(frame["communication_busy_ns"].sum()),
    }


def _peaks(report: RankReport) -> list[dict[str, Any]]:
    entries = []
    for choice in report.peaks:
        peaks = choice.peaks
        entries.append({
            "device": choice.device,
            "name": choice.device_name,
            "matched": peaks.display_name if peaks else None,
            "source": choice.source,
            "memory_bandwidth_bytes_per_s": peaks.memory_bandwidth_bytes_per_s if peaks else None,
            "peak_flops_per_s": {f"{dtype}:{unit}": value for (dtype, unit), value in peaks.flops_per_s.items()} if peaks else None,
        })
    return entries


def _number(value: Any) -> Any:
    return None if value is None or value != value else value


def _roofline_row(r: dict[str, Any]) -> dict[str, Any]:
    """The fields a per-kernel and a per-op entry share: totals, rates and the roof used."""
    modelled = r["regime"] in ("compute", "bandwidth", "memcpy")
    on_roofline = r["regime"] in ("compute", "bandwidth")
    return {
        "count": r["count"],
        "total_us": _us(r["total_ns"]),
        "flops": r["flops"] if modelled else None,
        "bytes": r["bytes"] if modelled else None,
        "intensity": _number(r["intensity"]) if modelled else None,
        "achieved_flops_per_s": _number(r["achieved_flops_per_s"]) if modelled else None,
        "achieved_bytes_per_s": _number(r["achieved_bytes_per_s"]) if modelled else None,
        "bound": str(r["regime"]),
        "roof": r["roof"] if modelled else None,
        "compute_dtype": r["compute_dtype"] if on_roofline else None,
        "math_unit": ("tensor" if r["tensor_core"] else "simt") if on_roofline else None,
        "peak_flops_per_s": _number(r["peak_flops_per_s"]) if on_roofline else None,
        "peak_bytes_per_s": _number(r["peak_bytes_per_s"]) if modelled else None,
        "ridge_flops_per_byte": _number(r["ridge"]) if on_roofline else None,
        "pct_of_roof": _number(r["pct_of_peak"]),
        "pct_of_peak": _number(r["pct_of_peak"]),
        "no_roof_reason": r["no_roof_reason"] if modelled else None,
        "recoverable_us": _us(r["recoverable_ns"]) if r["recoverable_ns"] else 0.0,
        "unmodeled_reason": r["unmodeled_reason"] if r["regime"] == "unmodeled" else None,
    }


def _kernels(kernels: pl.DataFrame, limit: int) -> list[dict[str, Any]]:
    return [{"name": r["name"], "op": r["op_name"], **_roofline_row(r)} for r in kernels.head(limit).iter_rows(named=True)]


def _ops(ops: pl.DataFrame, limit: int) -> list[dict[str, Any]]:
    return [{"op": r["op_name"], **_roofline_row(r)} for r in ops.head(limit).iter_rows(named=True)]


def _fusion(report: RankReport, limit: int) -> list[dict[str, Any]]:
    return [
        {"ops": r["ops"], "annotation": r["annotation"], "occurrences": r["occurrences"], "kernels": r["kernels"],
         "duration_us": _us(r["duration_ns"]), "bytes_saved": r["bytes_saved"], "time_saved_us": _us(r["time_saved_ns"])}
        for r in report.fusion.head(limit).iter_rows(named=True)
    ]


def _steps(report: RankReport) -> list[dict[str, Any]]:
    attributed = {}
    if report.step_attribution.height:
        for r in report.step_attribution.iter_rows(named=True):
            attributed[(r["device"], r["step"])] = {key: r[key] for key in ATTRIBUTION_KEYS}
    return [
        {"device": r["device"], "step": r["step"], "cpu_duration_us": _us(r["cpu_duration_ns"]),
         "window_us": _us(r["window_ns"]), "gpu_busy_us": _us(r["busy_ns"]), "gpu_idle_us": _us(r["idle_ns"]),
         "idle_fraction": r["idle_fraction"], "gpu_ops": r["gpu_ops"],
         "attribution": attributed.get((r["device"], r["step"]))}
        for r in report.steps.iter_rows(named=True)
    ]


def _rank_entry(report: RankReport, limit: int) -> dict[str, Any]:
    summary = {
        **_idle_totals([report]),
        **_attribution([report]),
        "idle_by_cause_us": _idle_by_cause([report]),
        **{key: _stats_us(report.latency_stats, metric) for key, metric in LATENCY_METRICS.items()},
        "small_kernels": _small_kernels(report),
        "steps": report.steps["step"].n_unique() if report.steps.height else 0,
    }
    return {
        "rank": report.rank,
        "source": str(report.source),
        "world_size": report.world_size,
        "has_gpu_events": report.has_gpu,
        "notes": list(report.notes),
        "summary": summary,
        "devices": [
            {
                "device": r["device"],
                "name": r["name"],
                "window_us": _us(r["window_ns"]),
                "gpu_busy_us": _us(r["busy_ns"]),
                "gpu_idle_us": _us(r["idle_ns"]),
                "idle_fraction": r["idle_fraction"],
                "gpu_ops": r["gpu_ops"],
            }
            for r in report.idle.join(report.devices.select("rank", "device", "name"), on=["rank", "device"], how="left").iter_rows(named=True)
        ],
        "streams": [
            {"device": r["device"], "stream": r["stream"], "gpu_ops": r["gpu_ops"], "busy_us": _us(r["busy_ns"]),
             "idle_fraction": r["idle_fraction"]}
            for r in report.streams.iter_rows(named=True)
        ],
        "steps": _steps(report),
        "cpu_steps": [{"step": r["step"], "duration_us": _us(r["duration_ns"])} for r in report.cpu_steps.iter_rows(named=True)],
        "idle_gaps": _gaps([report], limit),
        "device": (_peaks(report) or [None])[0],
        "peaks": _peaks(report),
        "launch_latency_by_kind": _latency_by_group(report),
        "launch_latency_by_kernel": _latency_by_kernel(report, KERNEL_LIMIT),
        "kernels": _kernels(report.kernels, KERNEL_LIMIT),
        "kernels_total": report.kernels.height,
        "ops": _ops(report.ops, KERNEL_LIMIT),
        "ops_total": report.ops.height,
        "fusion_opportunities": _fusion(report, limit),
        "recoverable_us": {r["regime"]: _us(r["recoverable_ns"]) for r in report.recoverable.iter_rows(named=True)
                           if r["recoverable_ns"] is not None},
        "queue": [
            {"device": r["device"], "stream": r["stream"], "max_depth": r["max_depth"], "mean_depth": r["mean_depth"],
             "time_at_full_us": _us(r["time_at_full_ns"])}
            for r in report.queue.iter_rows(named=True)
        ],
        "health": [
            {"finding": r["finding"], "count": r["count"], "affects": r["affects"], "detail": r["detail"]}
            for r in report.health.iter_rows(named=True)
        ],
    }


def report_to_dict(report: Report) -> dict[str, Any]:
    ranks = list(report.ranks)
    limit = report.options.max_gaps
    missing = missing_ranks_note([r.rank for r in ranks], [r.world_size for r in ranks])
    summary = {
        **_idle_totals(ranks),
        **_attribution(ranks),
        "idle_by_cause_us": _idle_by_cause(ranks),
        **{key: _stats_us(report.latency_stats, metric) for key, metric in LATENCY_METRICS.items()},
        "ranks": len(ranks),
    }
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "traceanalyze", "version": __version__},
        "source": str(report.source),
        "options": {"window": report.options.window, "max_gaps": limit},
        "notes": sorted({note for r in ranks for note in r.notes} | ({missing} if missing else set())),
        "summary": summary,
        "idle_gaps": _gaps(ranks, limit),
        "device": next((p for r in ranks for p in _peaks(r)), None),
        "kernels": _kernels(report.kernels, KERNEL_LIMIT),
        "kernels_total": report.kernels.height,
        "ops": _ops(report.ops, KERNEL_LIMIT),
        "ops_total": report.ops.height,
        "ranks": [_rank_entry(r, limit) for r in ranks],
    }


def render_json(report: Report) -> str:
    return msgspec.json.format(msgspec.json.encode(report_to_dict(report)), indent=2).decode() + "\n"
