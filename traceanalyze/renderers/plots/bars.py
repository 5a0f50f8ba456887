"""Stacked horizontal bars: regime attribution, idle by cause (HTML report)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from traceanalyze.renderers.svg import (
    GRID,
    MUTED,
    WIDTH,
    Linear,
    clip_label,
    contrast_ink,
    coord,
    empty_chart,
    esc,
    legend,
    svg_document,
    text_element,
    tooltip,
)
from traceanalyze.units import format_duration_ns, format_percent

# ---------------------------------------------------------------------------------------------
# stacked horizontal bars: regime attribution, idle by cause


@dataclass(frozen=True)
class BarRow:
    """One bar: `values` (ns) per key, as shares of `total_ns`. `values=None` is a heading row."""

    label: str
    values: Mapping[str, float] | None
    total_ns: float = 0.0
    detail: str = ""


def stacked_bars(rows: Sequence[BarRow], colours: Mapping[str, str], *, kind: str, title: str, show_title: bool = True,
                 width: float = WIDTH, label_width: float = 190, bar_height: float = 20) -> str:
    """Horizontal 100 % bars, one per row, segments in `colours` order, share labels inside
    segments wide enough to hold them, the row's total at its right. `title` is the chart's
    accessible name, drawn when `show_title`. Long: one SVG drawn top to bottom, labels, segments,
    totals, grid, legend."""
    data = [r for r in rows if r.values is not None and r.total_ns > 0]
    if not data:
        return empty_chart(kind, f"{title}: nothing to show")
    used = [k for k in colours if any(r.values.get(k, 0) > 0 for r in data)]  # type: ignore[union-attr]
    plot_left, plot_right = label_width, width - 78
    x = Linear(0.0, 1.0, plot_left, plot_right)
    body = [text_element(0, 16, title, size=14, weight="600")] if show_title else []
    head = 26 if show_title else 0
    legend_parts, legend_height = legend([(k, colours[k]) for k in used], plot_left, head, plot_right - plot_left)
    body += legend_parts
    top = head + 4 + legend_height
    y = top
    grid: list[str] = []
    marks: list[str] = []
    for row in rows:
        if row.values is None:
            marks.append(text_element(8, y + 13, row.label, fill=MUTED, size=11, weight="600"))
            y += 20
            continue
        marks.append(
            text_element(
                plot_left - 8,
                y + bar_height / 2 + 4,
                clip_label(row.label, label_width - 14),
                anchor="end",
                extra=f' data-label="{esc(row.label)}"' if len(row.label) * 6.7 > label_width - 14 else "",
            )
        )
        if row.total_ns <= 0:
            marks.append(text_element(plot_left + 4, y + bar_height / 2 + 4, "no GPU time", fill=MUTED))
            y += bar_height + 8
            continue
        cursor = 0.0
        for key in colours:
            value = row.values.get(key, 0) or 0
            if value <= 0:
                continue
            share = value / row.total_ns
            x0, x1 = x(cursor), x(min(1.0, cursor + share))
            cursor += share
            tip = (f"{row.label} — {key}: {format_percent(share)} "
                   f"({format_duration_ns(value)} of {format_duration_ns(row.total_ns)})")
            marks.append(
                f'<rect class="mark" data-key="{esc(key)}" x="{coord(x0)}" y="{coord(y)}" '
                f'width="{coord(max(x1 - x0, 0.5))}" '
                f'height="{coord(bar_height)}" fill="{colours[key]}">{tooltip(tip)}</rect>'
            )
            label = format_percent(share) if x1 - x0 >= 46 else (f"{share * 100:.0f}%" if x1 - x0 >= 28 else "")
            if label:
                marks.append(
                    text_element(
                        (x0 + x1) / 2,
                        y + bar_height / 2 + 4,
                        label,
                        anchor="middle",
                        size=11,
                        fill=contrast_ink(colours[key]),
                        extra=' pointer-events="none"',
                    )
                )
        marks.append(
            text_element(plot_right + 6, y + bar_height / 2 + 4, format_duration_ns(row.total_ns), fill=MUTED, size=11)
        )
        y += bar_height + 8
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        grid.append(
            f'<line x1="{coord(x(tick))}" x2="{coord(x(tick))}" y1="{coord(top - 4)}" y2="{coord(y)}" stroke="{GRID}"/>'
        )
        grid.append(text_element(x(tick), y + 14, f"{tick * 100:.0f}%", anchor="middle", size=11, fill=MUTED))
    return svg_document(kind, width, y + 22, title, body + grid + marks)
