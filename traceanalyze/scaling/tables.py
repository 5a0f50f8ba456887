"""The rows every format of the scaling report shows, worded once (the renderers lay them out)."""

from __future__ import annotations

from traceanalyze.units import format_duration_ns, format_si, short_name
from traceanalyze.scaling.measure import REGIME_KEYS
from traceanalyze.scaling.model import Scaling, regime_words

UNIT_WORDS = {"FLOP": "FLOP", "byte": "B", "size": ""}


def work_text(value: float, unit: str) -> str:
    return format_si(value, UNIT_WORDS[unit]) if unit != "size" else f"{value:g}"


def ratio_text(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}×"


def share_text(fraction: float) -> str:
    """A share of a roof: one decimal, or two significant digits below 0.1% (never "0.0%")."""
    return f"{fraction:.1%}" if fraction >= 0.001 else f"{fraction * 100:.2g}%"


def title(scaling: Scaling) -> str:
    return f"traceanalyze scaling — {len(scaling.points)} runs of one program, time = {scaling.time_name}"


def run_table(scaling: Scaling) -> tuple[list[str], list[list[str]]]:
    headers = ["run", "work/step", "time/step", "fixed share", "regime"]
    rows = [[run.label, work_text(run.work, scaling.work_unit), format_duration_ns(run.time_ns),
             f"{run.fixed_fraction:.0%}", regime_words(run.regime)] for run in scaling.runs]
    return headers, rows


def fit_lines(scaling: Scaling) -> list[str]:
    fit = scaling.fit
    unit = UNIT_WORDS[scaling.work_unit] or "size"
    rate = format_si(fit.throughput * 1e9, f"{unit}/s") if fit.throughput else "– (the time did not grow)"
    shape = ("2 runs: the line passes through both" if fit.fits is None else
             f"max residual {fit.max_relative_residual:.1%}, R² {fit.r_squared:.3f}: "
             + ("a straight line fits" if fit.fits else "a straight line does NOT fit"))
    lines = [f"time/step = {format_duration_ns(fit.fixed)} + work / {rate}   ({shape})",
             (f"fixed cost per step: {format_duration_ns(scaling.fixed_ns)} = {scaling.fixed_fraction:.0%} "
              f"of the smallest run ({format_duration_ns(scaling.points[0].time_ns)})"),
             f"{scaling.work_ratio:.2f}× the work, {scaling.time_ratio:.2f}× the time: scaling exponent "
             + (f"{scaling.exponent:.2f}" if scaling.exponent is not None else "–")
             + " (1 = proportional, 0 = flat)"]
    marginal = [format_si(v, u) for v, u in ((scaling.marginal_flops_per_s, "FLOP/s"),
                                              (scaling.marginal_bytes_per_s, "B/s")) if v]
    if marginal:
        roofs = roof_text(scaling)
        lines.append("marginal throughput (smallest → largest run): " + ", ".join(marginal)
                     + (f"; {roofs}" if roofs else ""))
    return lines


def roof_text(scaling: Scaling) -> str:
    """The marginal rates against the device's roofs, or why there are none."""
    peak_flops = scaling.points[-1].peak_flops_per_s
    peak_bytes = scaling.points[-1].peak_bytes_per_s
    parts = []
    if peak_flops and scaling.marginal_flops_per_s:
        share = share_text(scaling.marginal_flops_per_s / peak_flops)
        parts.append(f"{share} of the {format_si(peak_flops, 'FLOP/s')} roof")
    if peak_bytes and scaling.marginal_bytes_per_s:
        share = share_text(scaling.marginal_bytes_per_s / peak_bytes)
        parts.append(f"{share} of the {format_si(peak_bytes, 'B/s')} roof")
    if not parts:
        return "no device roofs (CPU-only traces)" if not scaling.points[0].has_gpu else "device roofs unknown"
    return ", ".join(parts)


def time_table(scaling: Scaling) -> tuple[list[str], list[list[str]]]:
    headers = ["run", "GPU window/step", "GPU busy/step", "CPU step", "steps"]
    rows = [[p.label, format_duration_ns(p.gpu_window_ns), format_duration_ns(p.gpu_busy_ns),
             format_duration_ns(p.cpu_step_ns), str(p.steps) if p.steps else "whole trace"] for p in scaling.points]
    return headers, rows


def regime_table(scaling: Scaling) -> tuple[list[str], list[list[str]]]:
    """Each regime's time per step at each size, and its growth against the work's."""
    headers = ["regime", *[p.label for p in scaling.points], f"growth (work {scaling.work_ratio:.2f}×)"]
    keys = [k for k in REGIME_KEYS if k != "other" or any(p.regime_ns["other"] > 0 for p in scaling.points)]
    rows = [[key, *[format_duration_ns(p.regime_ns[key]) for p in scaling.points],
             ratio_text(scaling.regime_growth[key])] for key in keys]
    return headers, rows


def intensity_table(scaling: Scaling) -> tuple[list[str], list[list[str]]] | None:
    if not scaling.intensity_shifts:
        return None
    headers = ["op", *[f"FLOP/B at {p.label}" for p in scaling.points]]
    rows = [[short_name(shift.op, 40), *["–" if v is None else f"{v:.3g}" for v in shift.intensities]]
            for shift in scaling.intensity_shifts]
    return headers, rows


INTENSITY_LINE = ("The essay's footnote: a bigger size raises the FLOP/byte of these ops (a [B, D] × [D, D] "
                  "matmul with B < D reads barely more bytes for twice the FLOPs), so part of the sub-linear "
                  "growth is the ops getting more efficient, not only fixed overhead.")
