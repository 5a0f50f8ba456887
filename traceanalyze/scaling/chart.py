"""The scaling chart (SVG): time per step against work per step, one labelled point per run, the
fitted line (fixed + work / throughput) and the proportional line (through the origin and the
smallest run). Linear axes from zero, so that the fixed cost is where the fitted line meets the
time axis."""

from __future__ import annotations

from traceanalyze.report.svg import (
    AXIS,
    GRID,
    MUTED,
    Linear,
    coord,
    linear_ticks,
    svg_document,
    text_element,
    tooltip,
)
from traceanalyze.report.units import format_duration_ns
from traceanalyze.scaling.model import Scaling
from traceanalyze.scaling.tables import work_text

WIDTH, HEIGHT = 720, 420
LEFT, RIGHT, TOP, BOTTOM = 80, 690, 40, 360
FIT_COLOUR, PROPORTIONAL_COLOUR, POINT_COLOUR = "#d62728", "#7f7f7f", "#1f77b4"


def scaling_chart(scaling: Scaling) -> str:
    work = [run.work for run in scaling.runs]
    times = [run.time_ns for run in scaling.runs]
    small_work, small_time = work[0], times[0]
    proportional_end = small_time * work[-1] / small_work
    fit_end = scaling.fit.fixed + scaling.fit.slope * work[-1]
    x_high = max(work) * 1.08
    y_high = max(max(times), proportional_end, fit_end, scaling.fit.fixed) * 1.08
    x = Linear(0.0, x_high, LEFT, RIGHT)
    y = Linear(0.0, y_high, BOTTOM, TOP)
    parts = [f'<rect x="{LEFT}" y="{TOP}" width="{RIGHT - LEFT}" height="{BOTTOM - TOP}" fill="none" stroke="{AXIS}"/>']
    for tick in linear_ticks(0.0, x_high, 5):
        parts.append(f'<line x1="{coord(x(tick))}" x2="{coord(x(tick))}" y1="{TOP}" y2="{BOTTOM}" stroke="{GRID}"/>')
        parts.append(text_element(x(tick), BOTTOM + 16, work_text(tick, scaling.work_unit), anchor="middle",
                                  size=11, fill=MUTED))
    for tick in linear_ticks(0.0, y_high, 5):
        parts.append(f'<line x1="{LEFT}" x2="{RIGHT}" y1="{coord(y(tick))}" y2="{coord(y(tick))}" stroke="{GRID}"/>')
        parts.append(text_element(LEFT - 6, y(tick) + 4, format_duration_ns(tick), anchor="end", size=11, fill=MUTED))
    fixed = max(scaling.fit.fixed, 0.0)
    start_x = 0.0 if scaling.fit.fixed >= 0 else -scaling.fit.fixed / scaling.fit.slope
    parts.append(f'<line class="fit" x1="{coord(x(start_x))}" y1="{coord(y(fixed if start_x == 0 else 0.0))}" '
                 f'x2="{coord(x(work[-1]))}" y2="{coord(y(fit_end))}" stroke="{FIT_COLOUR}" stroke-width="2">'
                 f'{tooltip("fitted: fixed " + format_duration_ns(scaling.fit.fixed) + " + work / throughput")}</line>')
    parts.append(f'<line class="proportional" x1="{coord(x(0))}" y1="{coord(y(0))}" x2="{coord(x(work[-1]))}" '
                 f'y2="{coord(y(proportional_end))}" stroke="{PROPORTIONAL_COLOUR}" stroke-dasharray="6 4">'
                 f'{tooltip("proportional to the work, from the smallest run")}</line>')
    for run in scaling.runs:
        px, py = x(run.work), y(run.time_ns)
        label = f"{run.label}: {work_text(run.work, scaling.work_unit)}, {format_duration_ns(run.time_ns)}"
        parts.append(f'<circle class="run" cx="{coord(px)}" cy="{coord(py)}" r="5" fill="{POINT_COLOUR}">'
                     f'{tooltip(label + f", {run.fixed_fraction:.0%} fixed")}</circle>')
        parts.append(text_element(px + 8, py - 8, run.label, size=11))
    parts.append(text_element((LEFT + RIGHT) / 2, HEIGHT - 18, f"work per step ({scaling.work_unit})", anchor="middle",
                              fill=MUTED))
    parts.append(text_element(LEFT, TOP - 22, f"{scaling.time_name} against the work: fitted (red) and proportional "
                              "(dashed)", fill=MUTED))
    return svg_document("scaling", WIDTH, HEIGHT, scaling.headline, parts)
