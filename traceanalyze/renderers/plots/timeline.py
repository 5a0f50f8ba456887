"""The GPU timeline (HTML report): one lane per stream, each interval drawn or, past
`EXACT_TIMELINE_MARKS` intervals, its pixel bins (cut by `report.chart_inputs.binned_rows`)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import polars as pl
from traceanalyze.renderers.svg import (
    AXIS,
    INK,
    MUTED,
    WIDTH,
    Linear,
    clip_label,
    coord,
    legend,
    linear_ticks,
    svg_document,
    text_element,
    tooltip,
)
from traceanalyze.units import format_duration_ns, format_percent

# ---------------------------------------------------------------------------------------------
# timeline


@dataclass(frozen=True)
class TimelineRow:
    """One lane: `intervals` with `start_ns, end_ns, category, label` (label: the tooltip),
    coloured by `colours[category]`."""

    label: str
    intervals: pl.DataFrame
    colours: Mapping[str, str]
    what: str = "busy"  # the word for covered time in binned tooltips ("busy", "idle")
    # the lane cut into pixel bins (`report.chart_inputs.lane_bins`), in place of `intervals`
    bins: pl.DataFrame | None = None


@dataclass(frozen=True)
class Marker:
    at_ns: int
    label: str


@dataclass
class _Run:
    """Neighbouring bins of one lane with the same colour and opacity, drawn as one rect."""

    first_bin: int
    last_bin: int
    category: str
    level: float
    covered_ns: int
    span_ns: int
    counts: dict[str, int] = field(default_factory=dict)


TIMELINE_LABEL_WIDTH, TIMELINE_RIGHT_PAD = 118, 16


def timeline_chart(
    rows: Sequence[TimelineRow],
    window: tuple[int, int],
    *,
    title: str,
    legends: Sequence[tuple[str, Mapping[str, str]]] = (),
    markers: Sequence[Marker] = (),
    width: float = WIDTH,
    note: str = "",
    kind: str = "timeline",
) -> str:
    """Lanes of intervals over `window` (ns), as `report.chart_inputs.binned_rows` made them (with
    the same `width`): a lane's intervals, clipped to the window and by start, each drawn with its
    own tooltip; or a binned lane (`bins`): a bin takes the colour of the category covering most of
    it and an opacity by how much of it is covered, and equal neighbours merge into one rect."""
    start, end = window
    span = max(end - start, 1)
    label_width, right_pad = TIMELINE_LABEL_WIDTH, TIMELINE_RIGHT_PAD
    left, right = label_width, width - right_pad
    x = Linear(float(start), float(end), left, right)
    body = [text_element(0, 16, title, size=14, weight="600")]
    y = 26.0
    for heading, colours in legends:
        parts, used = legend(list(colours.items()), left, y, right - left, heading=heading)
        body += parts
        y += used
    top = y + 4 + (14 if markers else 0)
    lane, gap = 18, 6
    bottom = top + len(rows) * (lane + gap) - gap
    marks: list[str] = []
    for index, row in enumerate(rows):
        ly = top + index * (lane + gap)
        body.append(f'<rect x="{left}" y="{coord(ly)}" width="{coord(right - left)}" height="{lane}" fill="#f6f6f6"/>')
        body.append(
            text_element(left - 8, ly + lane / 2 + 4, clip_label(row.label, label_width - 12), anchor="end", size=11)
        )
        if row.bins is None:
            marks += _exact_lane(row, x, ly, lane, start, end)
        else:
            marks += _binned_lane(row, x, ly, lane, start, end)
    axis = [
        f'<line x1="{left}" x2="{coord(right)}" y1="{coord(bottom + 4)}" y2="{coord(bottom + 4)}" stroke="{AXIS}"/>'
    ]
    for tick in linear_ticks(0, span, 8):
        tx = x(start + tick)
        axis.append(
            f'<line x1="{coord(tx)}" x2="{coord(tx)}" y1="{coord(bottom + 4)}" y2="{coord(bottom + 8)}" '
            f'stroke="{AXIS}"/>'
        )
        axis.append(
            text_element(
                tx, bottom + 20, "0" if tick == 0 else format_duration_ns(tick), anchor="middle", size=11, fill=MUTED
            )
        )
    every = max(1, math.ceil(len(markers) / 24))
    for i, marker in enumerate(markers):
        if not start <= marker.at_ns <= end:
            continue
        mx = x(marker.at_ns)
        axis.append(
            f'<line x1="{coord(mx)}" x2="{coord(mx)}" y1="{coord(top - 12)}" y2="{coord(bottom + 4)}" '
            f'stroke="{INK}" '
            f'stroke-opacity="0.45" stroke-dasharray="2 3">{tooltip(marker.label)}</line>'
        )
        if i % every == 0:
            axis.append(text_element(mx + 3, top - 4, marker.label, size=10, fill=MUTED))
    height = bottom + 30
    if note:
        axis.append(text_element(left, height + 4, note, size=11, fill=MUTED))
        height += 14
    return svg_document(kind, width, height, title, body + marks + axis)


def _exact_lane(row: TimelineRow, x: Linear, ly: float, lane: float, start: int, end: int) -> list[str]:
    marks = []
    for s, e, category, label in row.intervals.select("start_ns", "end_ns", "category", "label").iter_rows():
        x0, x1 = x(s), x(e)
        colour = row.colours.get(category, MUTED)
        tip = f"{label}\n{category} · {format_duration_ns(e - s)} at {format_duration_ns(s - start)}"
        marks.append(
            f'<rect class="mark" x="{coord(x0)}" y="{coord(ly)}" width="{max(x1 - x0, 0.6):.2f}" '
            f'height="{lane}" '
            f'fill="{colour}">{tooltip(tip)}</rect>'
        )
    return marks


def _binned_lane(row: TimelineRow, x: Linear, ly: float, lane: float, start: int, end: int) -> list[str]:
    per_bin = row.bins
    if per_bin is None or per_bin.is_empty():
        return []
    bin_ns = int(per_bin["bin_ns"][0])
    last = (end - start - 1) // bin_ns
    runs: list[_Run] = []
    # one pass over the rows (by bin: `lane_bins`), a bin's rows together (a polars group per bin
    # cost 60 ms a lane: 7 s for the timelines of 64 ranks)
    bins, all_categories, all_covered, all_counts = (
        per_bin[c].to_list() for c in ("bin", "category", "covered", "count")
    )
    for first, after in _runs_of_equal(bins):
        b = int(bins[first])
        categories = all_categories[first:after]
        covered = int(sum(all_covered[first:after]))
        length = min(bin_ns, end - (start + b * bin_ns)) if b == last else bin_ns
        fraction = min(1.0, covered / max(length, 1))
        level = 1.0 if fraction >= 0.66 else 0.7 if fraction >= 0.33 else 0.45
        counts = dict(zip(categories, all_counts[first:after]))
        dominant = categories[0]
        previous = runs[-1] if runs else None
        if previous and previous.last_bin == b - 1 and previous.category == dominant and previous.level == level:
            previous.last_bin = b
            previous.covered_ns += covered
            previous.span_ns += length
            for k, v in counts.items():
                previous.counts[k] = previous.counts.get(k, 0) + v
        else:
            runs.append(_Run(b, b, dominant, level, covered, length, counts))
    marks = []
    for run in runs:
        s = start + run.first_bin * bin_ns
        e = min(end, start + (run.last_bin + 1) * bin_ns)
        x0, x1 = x(s), x(e)
        n = sum(run.counts.values())
        mix = ", ".join(f"{k} {v}" for k, v in sorted(run.counts.items(), key=lambda kv: -kv[1])[:3])
        tip = (
            f"{row.label}: {format_duration_ns(s - start)} – {format_duration_ns(e - start)}\n"
            f"{format_percent(run.covered_ns / max(run.span_ns, 1))} {row.what}, mostly {run.category} "
            f"({n} intervals: {mix})"
        )
        marks.append(
            f'<rect class="mark" x="{coord(x0)}" y="{coord(ly)}" width="{max(x1 - x0, 0.6):.2f}" '
            f'height="{lane}" '
            f'fill="{row.colours.get(run.category, MUTED)}" fill-opacity="{run.level}">{tooltip(tip)}</rect>'
        )
    return marks


def _runs_of_equal(values: list) -> Iterator[tuple[int, int]]:
    """(first, after) of each run of equal neighbours in `values`."""
    first = 0
    for index in range(1, len(values) + 1):
        if index == len(values) or values[index] != values[first]:
            yield first, index
            first = index
