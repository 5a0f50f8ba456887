"""A small hand-written SVG line chart: side-by-side panels, log₂ x axis, log₁₀ y axis, dashed
reference lines. Pure string building, no plotting library."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from xml.sax.saxutils import escape

PANEL_WIDTH, PANEL_HEIGHT = 330, 270
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 78, 16, 34, 46
TITLE_HEIGHT, FOOTER_HEIGHT = 34, 26
FOOTER_LINE = 14  # px between wrapped footer lines
LINE_COLOUR, ROOF_COLOUR, RIDGE_COLOUR = "#1f77b4", "#d62728", "#7f7f7f"

_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n"))


@dataclass(frozen=True)
class Panel:
    """One panel: `points` as (x, y) with x, y > 0; `hlines`/`vlines` as (value, label)."""

    title: str
    unit: str
    points: tuple[tuple[float, float], ...]
    hlines: tuple[tuple[float, str], ...] = field(default_factory=tuple)
    vlines: tuple[tuple[float, str], ...] = field(default_factory=tuple)


def si(value: float, unit: str, digits: int = 3) -> str:
    """`1.5e12, "FLOP/s"` → `"1.5 TFLOP/s"`."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g} {unit}".strip()
    for scale, prefix in _PREFIXES:
        if abs(value) >= scale * 0.9995:
            return f"{_number(value / scale, digits)} {prefix}{unit}".strip()
    return f"{value:.{digits}g} {unit}".strip()


def _number(value: float, digits: int) -> str:
    text = f"{value:.{digits}g}"
    return f"{value:.0f}" if "e" in text else text


def line_chart(panels: Sequence[Panel], *, title: str, x_label: str, footer: str = "") -> str:
    """The SVG document for `panels` side by side sharing one log₂ x axis."""
    xs = [x for panel in panels for x, _ in panel.points] + [x for panel in panels for x, _ in panel.vlines]
    x_low, x_high = (min(xs), max(xs)) if xs else (1.0, 2.0)
    if x_high <= x_low:
        x_high = x_low * 2
    width = PANEL_WIDTH * len(panels)
    footer_lines = textwrap.wrap(footer, max(20, int(width / 6.2)))  # about 6 px per 11 px character
    height = TITLE_HEIGHT + PANEL_HEIGHT + FOOTER_HEIGHT + FOOTER_LINE * max(0, len(footer_lines) - 1)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{width / 2:.1f}" y="22" text-anchor="middle" font-size="15" font-weight="bold">{escape(title)}</text>',
    ]
    for index, panel in enumerate(panels):
        parts.append(_panel(panel, PANEL_WIDTH * index, TITLE_HEIGHT, x_low, x_high, x_label))
    first_line_y = height - 8 - FOOTER_LINE * max(0, len(footer_lines) - 1)
    for number, line in enumerate(footer_lines):
        parts.append(f'<text x="8" y="{first_line_y + FOOTER_LINE * number}" fill="#555">{escape(line)}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _panel(panel: Panel, left: float, top: float, x_low: float, x_high: float, x_label: str) -> str:
    plot_left, plot_top = left + MARGIN_LEFT, top + MARGIN_TOP
    plot_width = PANEL_WIDTH - MARGIN_LEFT - MARGIN_RIGHT
    plot_height = PANEL_HEIGHT - MARGIN_TOP - MARGIN_BOTTOM
    ys = [y for _, y in panel.points if y > 0] + [y for y, _ in panel.hlines if y > 0]
    y_low, y_high = (min(ys), max(ys)) if ys else (1.0, 10.0)
    y_low, y_high = y_low / 1.6, y_high * 1.6  # breathing room, in log space

    def px(x: float) -> float:
        return plot_left + (math.log2(x) - math.log2(x_low)) / (math.log2(x_high) - math.log2(x_low)) * plot_width

    def py(y: float) -> float:
        span = math.log10(y_high) - math.log10(y_low)
        return plot_top + plot_height - (math.log10(y) - math.log10(y_low)) / span * plot_height

    out = [
        f'<g class="panel">',
        f'<text x="{plot_left + plot_width / 2:.1f}" y="{top + 20}" text-anchor="middle" font-size="13">{escape(panel.title)}</text>',
        f'<rect x="{plot_left}" y="{plot_top}" width="{plot_width}" height="{plot_height}" fill="none" stroke="#333"/>',
    ]
    for tick in _y_ticks(y_low, y_high):
        y = py(tick)
        out.append(f'<line x1="{plot_left}" y1="{y:.1f}" x2="{plot_left + plot_width}" y2="{y:.1f}" stroke="#e5e5e5"/>')
        out.append(f'<text x="{plot_left - 5}" y="{y + 4:.1f}" text-anchor="end">{escape(si(tick, panel.unit, 2))}</text>')
    for tick in _x_ticks(x_low, x_high):
        x = px(tick)
        out.append(f'<line x1="{x:.1f}" y1="{plot_top}" x2="{x:.1f}" y2="{plot_top + plot_height}" stroke="#eeeeee"/>')
        out.append(f'<text x="{x:.1f}" y="{plot_top + plot_height + 15}" text-anchor="middle">{tick:g}</text>')
    out.append(
        f'<text x="{plot_left + plot_width / 2:.1f}" y="{plot_top + plot_height + 34}" text-anchor="middle">{escape(x_label)}</text>'
    )
    for value, label in panel.hlines:
        if value <= 0:
            continue
        y = py(value)
        out.append(
            f'<line x1="{plot_left}" y1="{y:.1f}" x2="{plot_left + plot_width}" y2="{y:.1f}" '
            f'stroke="{ROOF_COLOUR}" stroke-dasharray="6 4"/>'
        )
        out.append(f'<text x="{plot_left + 4}" y="{y - 4:.1f}" fill="{ROOF_COLOUR}">{escape(label)}</text>')
    for value, label in panel.vlines:
        if not x_low <= value <= x_high:
            continue
        x = px(value)
        out.append(
            f'<line x1="{x:.1f}" y1="{plot_top}" x2="{x:.1f}" y2="{plot_top + plot_height}" '
            f'stroke="{RIDGE_COLOUR}" stroke-dasharray="3 3"/>'
        )
        out.append(f'<text x="{x + 3:.1f}" y="{plot_top + 12}" fill="{RIDGE_COLOUR}">{escape(label)}</text>')
    points = [(px(x), py(y)) for x, y in panel.points if x > 0 and y > 0]
    if points:
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        out.append(f'<polyline points="{path}" fill="none" stroke="{LINE_COLOUR}" stroke-width="2"/>')
        out.extend(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{LINE_COLOUR}"/>' for x, y in points)
    out.append("</g>")
    return "\n".join(out)


def _x_ticks(low: float, high: float) -> list[float]:
    first, last = math.ceil(math.log2(low) - 1e-9), math.floor(math.log2(high) + 1e-9)
    ticks = [2.0**k for k in range(first, last + 1)]
    while len(ticks) > 9:
        ticks = ticks[::2]
    return ticks


def _y_ticks(low: float, high: float) -> list[float]:
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    for steps in ((1,), (1, 3), (1, 2, 5)):
        ticks = [m * 10.0**k for k in range(first, last + 1) for m in steps if low <= m * 10.0**k <= high]
        if len(ticks) >= 3:
            break
    while len(ticks) > 7:
        ticks = ticks[::2]
    return ticks
