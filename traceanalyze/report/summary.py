"""Small read-only views of the report model that several renderers show the same way."""

from __future__ import annotations

from traceanalyze.analysis.devices import DevicePeaks
from traceanalyze.report.units import format_rate


def peak_figures(peaks: DevicePeaks) -> str:
    """"bf16 tensor 312 TFLOP/s, …; 1.55 TB/s memory": the three highest FLOP/s and the bandwidth."""
    best = sorted(peaks.flops_per_s.items(), key=lambda kv: -kv[1])[:3]
    figures = ", ".join(f"{dtype} {unit} {format_rate(v, 'FLOP/s')}" for (dtype, unit), v in best)
    if peaks.default_flops_per_s is not None:
        figures = ", ".join(filter(None, [figures, f"{format_rate(peaks.default_flops_per_s, 'FLOP/s')} for any other math"]))
    return f"{figures}; {format_rate(peaks.memory_bandwidth_bytes_per_s, 'B/s')} memory"
