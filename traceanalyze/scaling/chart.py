"""The scaling chart (SVG): time per step against work per step, one labelled point per run, the
fitted line (fixed + work / throughput) and the proportional line (through the origin and the
smallest run). Linear axes from zero, so that the fixed cost is where the fitted line meets the
time axis; when the work spans more than `LOG_ABOVE`× (the small runs would sit in one corner),
log-log axes instead, where the proportional line is a straight line of slope 1, the fitted line
bends to the fixed cost (drawn as a dotted floor) at small work."""

from __future__ import annotations

import math

from traceanalyze.renderers.svg import (
    AXIS,
    GRID,
    MUTED,
    Linear,
    Log,
    coord,
    linear_ticks,
    log_axes,
    svg_document,
    text_element,
    text_width,
    tooltip,
)
from traceanalyze.units import format_duration_ns
from traceanalyze.scaling.model import Scaling
from traceanalyze.scaling.tables import work_text

WIDTH, HEIGHT = 720, 420
LEFT, RIGHT, TOP, BOTTOM = 80, 690, 40, 360
FIT_COLOUR, PROPORTIONAL_COLOUR, POINT_COLOUR = "#d62728", "#7f7f7f", "#1f77b4"
LOG_ABOVE = 20  # work ratios above this get log-log axes
SAMPLES = 60  # points of the fitted curve on log axes


def scaling_chart(scaling: Scaling) -> str:
    body = _log_body(scaling) if scaling.work_ratio > LOG_ABOVE else _linear_body(scaling)
    axes = "log-log" if scaling.work_ratio > LOG_ABOVE else "linear"
    body.append(text_element((LEFT + RIGHT) / 2, HEIGHT - 18, f"work per step ({scaling.work_unit}, {axes} axes)",
                             anchor="middle", fill=MUTED))
    body.append(text_element(LEFT, TOP - 22, f"{scaling.time_name} against the work: fitted (red) and "
                             "proportional (dashed)", fill=MUTED))
    return svg_document("scaling", WIDTH, HEIGHT, scaling.headline, body)


def _points(scaling: Scaling, x, y) -> list[str]:
    parts = []
    for run in scaling.runs:
        px, py = x(run.work), y(run.time_ns)
        label = f"{run.label}: {work_text(run.work, scaling.work_unit)}, {format_duration_ns(run.time_ns)}"
        parts.append(f'<circle class="run" cx="{coord(px)}" cy="{coord(py)}" r="5" fill="{POINT_COLOUR}">'
                     f'{tooltip(label + f", {run.fixed_fraction:.0%} fixed")}</circle>')
        right = px + 8 + text_width(run.label, 11) > WIDTH - 4  # a label past the edge goes on the left
        parts.append(text_element(px - 8 if right else px + 8, py - 8, run.label, size=11,
                                  anchor="end" if right else "start"))
    return parts


def _decade_below(value: float) -> float:
    return 10.0 ** math.floor(math.log10(value))


def _decade_above(value: float) -> float:
    return 10.0 ** math.ceil(math.log10(value))


def _fit_tip(scaling: Scaling) -> str:
    return tooltip("fitted: fixed " + format_duration_ns(scaling.fit.fixed) + " + work / throughput")


def _log_body(scaling: Scaling) -> list[str]:
    work = [run.work for run in scaling.runs]
    times = [run.time_ns for run in scaling.runs]
    fit = scaling.fit
    x_low, x_high = _decade_below(work[0] / 1.5), _decade_above(work[-1] * 1.5)
    samples = [x_low * (x_high / x_low) ** (i / (SAMPLES - 1)) for i in range(SAMPLES)]
    fitted = [(w, fit.fixed + fit.slope * w) for w in samples if fit.fixed + fit.slope * w > 0]
    proportional = [(w, times[0] * w / work[0]) for w in (x_low, x_high)]
    values = times + [t for _, t in fitted] + [t for _, t in proportional]
    y_low, y_high = _decade_below(min(values) / 1.2), _decade_above(max(values) * 1.2)
    x = Log(x_low, x_high, LEFT, RIGHT)
    y = Log(y_low, y_high, BOTTOM, TOP)
    parts = log_axes(x, y, x_low, x_high, y_low, y_high, LEFT, RIGHT, TOP, BOTTOM,
                     x_format=lambda v: work_text(v, scaling.work_unit), y_format=format_duration_ns)
    if scaling.fixed_ns > 0:
        parts.append(f'<line class="fixed" x1="{LEFT}" x2="{RIGHT}" y1="{coord(y(scaling.fixed_ns))}" '
                     f'y2="{coord(y(scaling.fixed_ns))}" stroke="{FIT_COLOUR}" stroke-dasharray="2 3" opacity="0.6">'
                     f'{tooltip("fixed cost per step " + format_duration_ns(scaling.fixed_ns))}</line>')
    line = " ".join(f"{coord(x(w))},{coord(y(t))}" for w, t in fitted)
    parts.append(f'<polyline class="fit" points="{line}" fill="none" stroke="{FIT_COLOUR}" stroke-width="2">'
                 f"{_fit_tip(scaling)}</polyline>")
    (w0, t0), (w1, t1) = proportional
    parts.append(f'<line class="proportional" x1="{coord(x(w0))}" y1="{coord(y(t0))}" x2="{coord(x(w1))}" '
                 f'y2="{coord(y(t1))}" stroke="{PROPORTIONAL_COLOUR}" stroke-dasharray="6 4">'
                 f'{tooltip("proportional to the work, from the smallest run")}</line>')
    return parts + _points(scaling, x, y)


def _linear_body(scaling: Scaling) -> list[str]:
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
                 f"{_fit_tip(scaling)}</line>")
    parts.append(f'<line class="proportional" x1="{coord(x(0))}" y1="{coord(y(0))}" x2="{coord(x(work[-1]))}" '
                 f'y2="{coord(y(proportional_end))}" stroke="{PROPORTIONAL_COLOUR}" stroke-dasharray="6 4">'
                 f'{tooltip("proportional to the work, from the smallest run")}</line>')
    return parts + _points(scaling, x, y)
