"""A log-x histogram (launch latency, HTML report)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from traceanalyze.renderers.svg import (
    AXIS,
    GRID,
    INK,
    MUTED,
    WIDTH,
    Linear,
    Log,
    coord,
    decades,
    empty_chart,
    legend,
    linear_ticks,
    svg_document,
    text_element,
    text_width,
    tooltip,
)
from traceanalyze.units import format_duration_ns

# ---------------------------------------------------------------------------------------------
# histogram (log x)


@dataclass(frozen=True)
class Series:
    label: str
    colour: str
    values: Sequence[float]


@dataclass(frozen=True)
class LogBins:
    """Series counted in log-spaced bins (`log_bins`): `counts[i][b]` values of series `i` in
    bin `b`, `bins_per_decade` bins a decade from `low` to `high`."""

    labels: tuple[str, ...]
    colours: tuple[str, ...]
    low: float
    high: float
    bins_per_decade: int
    counts: tuple[tuple[int, ...], ...]


def log_bins(series: Sequence[Series], *, bins_per_decade: int = 8) -> LogBins | None:
    """Counts of positive values (ns) in log-spaced bins from the decade below the smallest to
    the decade above the largest; values ≤ the first edge count in the first bin. None when no
    value is positive. Small whatever the number of values: what `log_histogram` draws."""
    values = [v for s in series for v in s.values if v is not None]
    positive = [v for v in values if v > 0]
    if not positive:
        return None
    low = 10 ** math.floor(math.log10(min(positive)))
    high = 10 ** math.ceil(math.log10(max(positive) * 1.0001))
    if high <= low:
        high = low * 10
    decade_count = round(math.log10(high / low))
    n_bins = max(1, decade_count * bins_per_decade)
    counts = [[0] * n_bins for _ in series]
    for i, s in enumerate(series):
        row = counts[i]
        for v in s.values:
            if v is None:
                continue
            b = 0 if v <= low else min(n_bins - 1, int(math.log10(v / low) * bins_per_decade))
            row[b] += 1
    return LogBins(tuple(s.label for s in series), tuple(s.colour for s in series), low, high, bins_per_decade,
                   tuple(tuple(row) for row in counts))


def log_histogram(
    binned: LogBins | None,
    *,
    kind: str,
    title: str,
    x_label: str,
    markers: Sequence[tuple[float, str]] = (),
    width: float = WIDTH,
    height: float = 300,
) -> str:
    """The series of `binned` (`log_bins`) stacked, on a log x axis. `markers` draw labelled
    vertical lines (percentiles). Long: one SVG drawn top to bottom, axes, stacked bars, markers,
    legend."""
    if binned is None:
        return empty_chart(kind, f"{title}: no values to show")
    low, high, bins_per_decade, counts = binned.low, binned.high, binned.bins_per_decade, binned.counts
    series = [Series(label, colour, ()) for label, colour in zip(binned.labels, binned.colours)]
    n_bins = len(counts[0]) if counts else 1
    peak = max(sum(counts[i][b] for i in range(len(series))) for b in range(n_bins))
    left, right, top = 70, width - 20, 52
    bottom = height - 44
    x = Log(low, high, left, right)
    y_ticks = linear_ticks(0, peak * 1.3, 4)
    y = Linear(0, max(y_ticks[-1], peak * 1.3), bottom, top)
    body = [text_element(0, 16, title, size=14, weight="600")]
    parts, _ = legend([(s.label, s.colour) for s in series], left, 24, right - left)
    body += parts
    body.append(
        f'<rect x="{left}" y="{top}" width="{coord(right - left)}" height="{coord(bottom - top)}" '
        f'fill="none" stroke="{AXIS}"/>'
    )
    for tick in y_ticks:
        body.append(
            f'<line x1="{left}" x2="{coord(right)}" y1="{coord(y(tick))}" y2="{coord(y(tick))}" stroke="{GRID}"/>'
        )
        body.append(text_element(left - 6, y(tick) + 4, f"{tick:g}", anchor="end", size=11, fill=MUTED))
    for tick in decades(low, high):
        body.append(
            f'<line x1="{coord(x(tick))}" x2="{coord(x(tick))}" y1="{top}" y2="{coord(bottom + 4)}" stroke="{GRID}"/>'
        )
        body.append(text_element(x(tick), bottom + 17, format_duration_ns(tick), anchor="middle", size=11, fill=MUTED))
    body.append(text_element((left + right) / 2, height - 8, x_label, anchor="middle", fill=MUTED))
    body.append(
        text_element(
            14,
            (top + bottom) / 2,
            "launches",
            anchor="middle",
            fill=MUTED,
            extra=f' transform="rotate(-90 14 {coord((top + bottom) / 2)})"',
        )
    )
    for b in range(n_bins):
        edge0, edge1 = low * 10 ** (b / bins_per_decade), low * 10 ** ((b + 1) / bins_per_decade)
        x0, x1 = x(edge0) + 0.5, x(edge1) - 0.5
        stacked = 0
        for i, s in enumerate(series):
            count = counts[i][b]
            if not count:
                continue
            y0, y1 = y(stacked), y(stacked + count)
            stacked += count
            tip = f"{s.label}: {count} in {format_duration_ns(edge0)} – {format_duration_ns(edge1)}"
            body.append(
                f'<rect class="mark" x="{coord(x0)}" y="{coord(y1)}" width="{coord(max(x1 - x0, 0.5))}" '
                f'height="{coord(max(y0 - y1, 0.5))}" fill="{s.colour}">{tooltip(tip)}</rect>'
            )
    placed: list[float] = []
    for value, label in markers:
        if value is None or not low <= value <= high:
            continue
        mx = x(value)
        row = sum(1 for p in placed if abs(p - mx) < text_width(label, 11) + 6)
        placed.append(mx)
        body.append(
            f'<line x1="{coord(mx)}" x2="{coord(mx)}" y1="{top}" y2="{coord(bottom)}" stroke="{INK}" '
            f'stroke-dasharray="4 3">'
            f"{tooltip(label)}</line>"
        )
        body.append(text_element(mx + 3, top + 12 + 13 * row, label, size=11))
    return svg_document(kind, width, height, title, body)
