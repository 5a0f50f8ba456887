"""SVG written by hand, the one SVG module of the package: primitives (escaped text, tooltips,
legends, linear and log scales, decade ticks, log-log axes) that the report's charts
(`renderers.plots`) and calibrate's chart (`line_chart` below) are drawn with. Every function
returns SVG text; every string from a trace is escaped (`esc`)."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field

from traceanalyze.renderers.html_text import esc
from traceanalyze.units import format_si

INK, MUTED, GRID, AXIS = "#222222", "#666666", "#E6E6E6", "#999999"
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"

WIDTH = 1080


def coord(value: float) -> str:
    """A coordinate with at most one decimal: 12.0 → "12", 12.25 → "12.2"."""
    return f"{value:.1f}".rstrip("0").rstrip(".")


def text_width(text: str, size: float = 12) -> float:
    """An estimate of rendered width (sans-serif averages ~0.56 em per character)."""
    return len(text) * size * 0.56


def contrast_ink(colour: str) -> str:
    r, g, b = (int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5))
    lum = 0.2126 * r + 0.7152 * g + 0.0722 * b
    return "#ffffff" if lum < 0.55 else INK


def svg_document(kind: str, width: float, height: float, label: str, body: Sequence[str]) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-chart="{esc(kind)}" '
        f'width="{coord(width)}" height="{coord(height)}" viewBox="0 0 {coord(width)} {coord(height)}" '
        f'role="img" aria-label="{esc(label)}" font-family="{FONT}" font-size="12" fill="{INK}">\n'
        + "\n".join(body)
        + "\n</svg>"
    )


def text_element(x: float, y: float, text: str, *, anchor: str = "start", size: float = 12, fill: str = INK,
          weight: str | None = None, extra: str = "") -> str:
    bold = f' font-weight="{weight}"' if weight else ""
    return (f'<text x="{coord(x)}" y="{coord(y)}" text-anchor="{anchor}" font-size="{coord(size)}" '
            f'fill="{fill}"{bold}{extra}>{esc(text)}</text>')


def tooltip(text: str) -> str:
    return f"<title>{esc(text)}</title>"


def legend(items: Sequence[tuple[str, str]], x: float, y: float, max_width: float, *, heading: str = "",
           marker: str = "square") -> tuple[list[str], float]:
    """Swatches with labels, wrapping at `max_width` → (svg parts, height used)."""
    parts: list[str] = []
    cx, cy, line = x, y, 18
    if heading:
        parts.append(text_element(cx, cy + 10, heading, fill=MUTED, size=11))
        cx += text_width(heading, 11) + 8
    for label, colour in items:
        width = 14 + text_width(label, 12) + 14
        if cx + width > x + max_width and cx > x:
            cx, cy = x, cy + line
        if marker == "circle":
            parts.append(f'<circle cx="{coord(cx + 5)}" cy="{coord(cy + 6)}" r="5" fill="{colour}" '
                         f'fill-opacity="0.8"/>')
        else:
            parts.append(f'<rect x="{coord(cx)}" y="{coord(cy + 1)}" width="11" height="11" rx="2" fill="{colour}"/>')
        parts.append(text_element(cx + 15, cy + 11, label))
        cx += width
    return parts, cy - y + line


def nice_step(span: float, target: int) -> float:
    raw = span / max(target, 1)
    if raw <= 0:
        return 1.0
    magnitude = 10 ** math.floor(math.log10(raw))
    for multiple in (1, 2, 2.5, 5, 10):
        if raw <= multiple * magnitude:
            return multiple * magnitude
    return 10 * magnitude


def linear_ticks(low: float, high: float, target: int = 6) -> list[float]:
    step = nice_step(high - low, target)
    first = math.ceil(low / step - 1e-9) * step
    ticks, value = [], first
    while value <= high + step * 1e-9:
        ticks.append(round(value, 12))
        value += step
    return ticks


def decades(low: float, high: float) -> list[float]:
    return [10.0 ** k for k in range(math.floor(math.log10(low) + 1e-9), math.ceil(math.log10(high) - 1e-9) + 1)]


@dataclass(frozen=True)
class Linear:
    low: float
    high: float
    start: float
    end: float

    def __call__(self, value: float) -> float:
        span = self.high - self.low or 1.0
        return self.start + (value - self.low) / span * (self.end - self.start)


@dataclass(frozen=True)
class Log:
    low: float
    high: float
    start: float
    end: float

    def __call__(self, value: float) -> float:
        value = max(value, self.low * 1e-3)
        span = math.log10(self.high) - math.log10(self.low) or 1.0
        return self.start + (math.log10(value) - math.log10(self.low)) / span * (self.end - self.start)


def empty_chart(kind: str, message: str, *, width: float = WIDTH, height: float = 60) -> str:
    return svg_document(kind, width, height, message, [
        f'<rect x="0.5" y="0.5" width="{coord(width - 1)}" height="{coord(height - 1)}" fill="#fafafa" '
        f'stroke="{GRID}"/>',
        text_element(width / 2, height / 2 + 4, message, anchor="middle", fill=MUTED),
    ])


def clip_label(text: str, width: float, size: float = 12) -> str:
    limit = max(4, int(width / (size * 0.56)))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def log_axes(x, y, x_low, x_high, y_low, y_high, left, right, top, bottom, *, x_format, y_format) -> list[str]:
    parts = [f'<rect x="{left}" y="{top}" width="{coord(right - left)}" height="{coord(bottom - top)}" fill="none" '
             f'stroke="{AXIS}"/>']
    x_ticks = decades(x_low, x_high)
    skip_x = 1 if len(x_ticks) <= 12 else 2
    for i, tick in enumerate(x_ticks):
        parts.append(f'<line x1="{coord(x(tick))}" x2="{coord(x(tick))}" y1="{top}" y2="{bottom}" stroke="{GRID}"/>')
        if i % skip_x == 0:
            parts.append(text_element(x(tick), bottom + 16, x_format(tick), anchor="middle", size=11, fill=MUTED))
    y_ticks = decades(y_low, y_high)
    skip_y = 1 if len(y_ticks) <= 10 else 2
    for i, tick in enumerate(y_ticks):
        parts.append(f'<line x1="{left}" x2="{coord(right)}" y1="{coord(y(tick))}" y2="{coord(y(tick))}" '
                     f'stroke="{GRID}"/>')
        if i % skip_y == 0:
            parts.append(text_element(left - 6, y(tick) + 4, y_format(tick), anchor="end", size=11, fill=MUTED))
    return parts


# ---------------------------------------------------------------------------------------------
# panels of log-log line charts (calibrate's figure)

PANEL_WIDTH, PANEL_HEIGHT = 330, 270
PANEL_MARGINS = (78, 16, 34, 46)  # left, right, top, bottom of the plot inside a panel
TITLE_HEIGHT, FOOTER_HEIGHT, FOOTER_LINE = 34, 26, 14
LINE_COLOUR, ROOF_COLOUR, RIDGE_COLOUR = "#1f77b4", "#d62728", "#7f7f7f"


@dataclass(frozen=True)
class Panel:
    """One panel: `points` as (x, y) with x, y > 0; `hlines`/`vlines` as (value, label)."""

    title: str
    unit: str
    points: tuple[tuple[float, float], ...]
    hlines: tuple[tuple[float, str], ...] = field(default_factory=tuple)
    vlines: tuple[tuple[float, str], ...] = field(default_factory=tuple)


def line_chart(panels: Sequence[Panel], *, title: str, x_label: str, footer: str = "") -> str:
    """`panels` side by side sharing one log₂ x axis, each with a log₁₀ y axis, dashed reference
    lines, and `footer` wrapped under them."""
    xs = [x for panel in panels for x, _ in panel.points] + [x for panel in panels for x, _ in panel.vlines]
    x_low, x_high = (min(xs), max(xs)) if xs else (1.0, 2.0)
    if x_high <= x_low:
        x_high = x_low * 2
    width = PANEL_WIDTH * len(panels)
    footer_lines = textwrap.wrap(footer, max(20, int(width / 6.2)))  # about 6 px per 11 px character
    height = TITLE_HEIGHT + PANEL_HEIGHT + FOOTER_HEIGHT + FOOTER_LINE * max(0, len(footer_lines) - 1)
    body = [f'<rect width="{width}" height="{height}" fill="white"/>',
            text_element(width / 2, 22, title, anchor="middle", size=15, weight="bold")]
    body += [_panel(panel, PANEL_WIDTH * index, TITLE_HEIGHT, x_low, x_high, x_label)
             for index, panel in enumerate(panels)]
    first_line_y = height - 8 - FOOTER_LINE * max(0, len(footer_lines) - 1)
    body += [text_element(8, first_line_y + FOOTER_LINE * number, line, size=11, fill=MUTED)
             for number, line in enumerate(footer_lines)]
    return svg_document("line", width, height, title, body) + "\n"


def _panel(panel: Panel, left: float, top: float, x_low: float, x_high: float, x_label: str) -> str:
    margin_left, margin_right, margin_top, margin_bottom = PANEL_MARGINS
    plot_left, plot_top = left + margin_left, top + margin_top
    plot_width = PANEL_WIDTH - margin_left - margin_right
    plot_height = PANEL_HEIGHT - margin_top - margin_bottom
    ys = [y for _, y in panel.points if y > 0] + [y for y, _ in panel.hlines if y > 0]
    y_low, y_high = (min(ys), max(ys)) if ys else (1.0, 10.0)
    y_low, y_high = y_low / 1.6, y_high * 1.6  # breathing room, in log space
    x = Log2(x_low, x_high, plot_left, plot_left + plot_width)
    y = Log(y_low, y_high, plot_top + plot_height, plot_top)
    right, bottom = plot_left + plot_width, plot_top + plot_height
    out = [
        '<g class="panel">',
        text_element(plot_left + plot_width / 2, top + 20, panel.title, anchor="middle", size=13),
        f'<rect x="{coord(plot_left)}" y="{coord(plot_top)}" width="{coord(plot_width)}" height="{coord(plot_height)}" '
        f'fill="none" stroke="#333"/>',
    ]
    for tick in _y_ticks(y_low, y_high):
        out.append(f'<line x1="{coord(plot_left)}" y1="{coord(y(tick))}" x2="{coord(right)}" y2="{coord(y(tick))}" '
                   f'stroke="{GRID}"/>')
        out.append(text_element(plot_left - 5, y(tick) + 4, format_si(tick, panel.unit, digits=2, fractions=True),
                                anchor="end", size=11))
    for tick in _power_of_two_ticks(x_low, x_high):
        out.append(f'<line x1="{coord(x(tick))}" y1="{coord(plot_top)}" x2="{coord(x(tick))}" y2="{coord(bottom)}" '
                   f'stroke="{GRID}"/>')
        out.append(text_element(x(tick), bottom + 15, f"{tick:g}", anchor="middle", size=11))
    out.append(text_element(plot_left + plot_width / 2, bottom + 34, x_label, anchor="middle", size=11))
    for value, label in panel.hlines:
        if value <= 0:
            continue
        out.append(f'<line x1="{coord(plot_left)}" y1="{coord(y(value))}" x2="{coord(right)}" y2="{coord(y(value))}" '
                   f'stroke="{ROOF_COLOUR}" stroke-dasharray="6 4"/>')
        out.append(text_element(plot_left + 4, y(value) - 4, label, size=11, fill=ROOF_COLOUR))
    for value, label in panel.vlines:
        if not x_low <= value <= x_high:
            continue
        out.append(f'<line x1="{coord(x(value))}" y1="{coord(plot_top)}" x2="{coord(x(value))}" y2="{coord(bottom)}" '
                   f'stroke="{RIDGE_COLOUR}" stroke-dasharray="3 3"/>')
        out.append(text_element(x(value) + 3, plot_top + 12, label, size=11, fill=RIDGE_COLOUR))
    points = [(x(px), y(py)) for px, py in panel.points if px > 0 and py > 0]
    if points:
        path = " ".join(f"{coord(px)},{coord(py)}" for px, py in points)
        out.append(f'<polyline class="mark" points="{path}" fill="none" stroke="{LINE_COLOUR}" stroke-width="2"/>')
        out.extend(f'<circle cx="{coord(px)}" cy="{coord(py)}" r="3" fill="{LINE_COLOUR}"/>' for px, py in points)
    out.append("</g>")
    return "\n".join(out)


@dataclass(frozen=True)
class Log2:
    """A log₂ scale from [low, high] onto [start, end] (pixels)."""

    low: float
    high: float
    start: float
    end: float

    def __call__(self, value: float) -> float:
        span = math.log2(self.high) - math.log2(self.low) or 1.0
        return self.start + (math.log2(value) - math.log2(self.low)) / span * (self.end - self.start)


def _power_of_two_ticks(low: float, high: float) -> list[float]:
    first, last = math.ceil(math.log2(low) - 1e-9), math.floor(math.log2(high) + 1e-9)
    ticks = [2.0**k for k in range(first, last + 1)]
    while len(ticks) > 9:
        ticks = ticks[::2]
    return ticks


def _y_ticks(low: float, high: float) -> list[float]:
    """Decades, or 1-3 / 1-2-5 steps when fewer than three decades fit; at most about seven."""
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    ticks: list[float] = []
    for steps in ((1,), (1, 3), (1, 2, 5)):
        ticks = [m * 10.0**k for k in range(first, last + 1) for m in steps if low <= m * 10.0**k <= high]
        if len(ticks) >= 3:
            break
    while len(ticks) > 7:
        ticks = ticks[::2]
    return ticks
