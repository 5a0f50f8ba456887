"""Per-step bars: busy and idle time of each step (HTML report)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from traceanalyze.renderers.plots.palette import (
    BUSY_COLOUR,
    REGIME_COLOURS,
)
from traceanalyze.renderers.svg import (
    AXIS,
    GRID,
    MUTED,
    WIDTH,
    Linear,
    coord,
    empty_chart,
    legend,
    linear_ticks,
    svg_document,
    text_element,
    tooltip,
)
from traceanalyze.units import format_duration_ns, format_percent

# ---------------------------------------------------------------------------------------------
# per-step bars


@dataclass(frozen=True)
class StepBar:
    label: str
    busy_ns: float
    idle_ns: float
    idle_fraction: float


def step_bars(steps: Sequence[StepBar], *, title: str, width: float = WIDTH, height: float = 280) -> str:
    """Vertical bars, one per step: GPU busy at the bottom, idle (red) on top, the idle share
    above each bar."""
    if not steps:
        return empty_chart("steps", f"{title}: no steps")
    left, right, top = 70, width - 20, 58
    bottom = height - 40
    peak = max(s.busy_ns + s.idle_ns for s in steps) or 1
    y_ticks = linear_ticks(0, peak, 4)
    y = Linear(0, max(y_ticks[-1], peak), bottom, top)
    slot = (right - left) / len(steps)
    bar_width = min(56.0, slot * 0.7)
    body = [text_element(0, 16, title, size=14, weight="600")]
    parts, _ = legend([("GPU busy", BUSY_COLOUR), ("GPU idle", REGIME_COLOURS["overhead"])], left, 24, right - left)
    body += parts
    for tick in y_ticks:
        body.append(f'<line x1="{left}" x2="{coord(right)}" y1="{coord(y(tick))}" y2="{coord(y(tick))}" '
                    f'stroke="{GRID}"/>')
        body.append(
            text_element(
                left - 6, y(tick) + 4, "0" if tick == 0 else format_duration_ns(tick), anchor="end", size=11, fill=MUTED
            )
        )
    every = max(1, math.ceil(len(steps) / 40))
    show_share = slot >= 30
    for i, s in enumerate(steps):
        cx = left + slot * (i + 0.5)
        x0 = cx - bar_width / 2
        y_busy = y(s.busy_ns)
        y_top = y(s.busy_ns + s.idle_ns)
        tip = (
            f"{s.label}: window {format_duration_ns(s.busy_ns + s.idle_ns)}, busy {format_duration_ns(s.busy_ns)}, "
            f"idle {format_duration_ns(s.idle_ns)} ({format_percent(s.idle_fraction)})"
        )
        if s.busy_ns > 0:
            body.append(
                f'<rect class="mark" x="{coord(x0)}" y="{coord(y_busy)}" width="{coord(bar_width)}" '
                f'height="{coord(bottom - y_busy)}" '
                f'fill="{BUSY_COLOUR}">{tooltip(tip)}</rect>'
            )
        if s.idle_ns > 0:
            body.append(
                f'<rect class="mark" x="{coord(x0)}" y="{coord(y_top)}" width="{coord(bar_width)}" '
                f'height="{coord(y_busy - y_top)}" '
                f'fill="{REGIME_COLOURS["overhead"]}">{tooltip(tip)}</rect>'
            )
        if show_share:
            body.append(text_element(cx, y_top - 4, format_percent(s.idle_fraction), anchor="middle", size=11))
        if i % every == 0:
            body.append(text_element(cx, bottom + 15, s.label, anchor="middle", size=11, fill=MUTED))
    body.append(f'<line x1="{left}" x2="{coord(right)}" y1="{coord(bottom)}" y2="{coord(bottom)}" stroke="{AXIS}"/>')
    body.append(
        text_element(
            (left + right) / 2, height - 6, "step (GPU window of each ProfilerStep)", anchor="middle", fill=MUTED
        )
    )
    return svg_document("steps", width, height, title, body)
