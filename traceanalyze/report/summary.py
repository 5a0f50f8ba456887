"""Small read-only views of the report model that several renderers show the same way."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from traceanalyze.analysis.devices import DevicePeaks
from traceanalyze.report.model import RankReport
from traceanalyze.report.units import format_rate


def peak_figures(peaks: DevicePeaks) -> str:
    """"bf16 tensor 312 TFLOP/s, …; 1.55 TB/s memory": the three highest FLOP/s and the bandwidth."""
    best = sorted(peaks.flops_per_s.items(), key=lambda kv: -kv[1])[:3]
    figures = ", ".join(f"{dtype} {unit} {format_rate(v, 'FLOP/s')}" for (dtype, unit), v in best)
    if peaks.default_flops_per_s is not None:
        figures = ", ".join(filter(None, [figures, f"{format_rate(peaks.default_flops_per_s, 'FLOP/s')} for any other math"]))
    return f"{figures}; {format_rate(peaks.memory_bandwidth_bytes_per_s, 'B/s')} memory"


@dataclass(frozen=True)
class RankTotals:
    window_ns: int | None
    idle_fraction: float | None
    launch_p50_ns: float | None


def rank_totals(rank: RankReport) -> RankTotals:
    """One rank's window, idle fraction (summed over its devices) and launch→start median."""
    idle = rank.idle
    window = idle["window_ns"].sum() if idle.height else None
    idle_ns = idle["idle_ns"].sum() if idle.height else None
    p50 = rank.latency_stats.filter(pl.col("metric") == "launch_to_start_ns")["p50"]
    return RankTotals(window, idle_ns / window if window else None, p50[0] if p50.len() else None)
