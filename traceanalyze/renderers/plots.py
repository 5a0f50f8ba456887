"""Charts for the HTML report, as SVG strings written by hand: stacked bars (regime attribution,
idle by cause), the roofline, the GPU timeline, a log-x histogram and per-step bars.

Every builder takes plain values (ns, FLOP/s, bytes/s), draws nothing it is not given and
returns one `<svg>` element: inline CSS-free, no script, no external font, hover tooltips as
`<title>`. Each data mark carries `class="mark"` (tests count them) and every name is escaped.
One palette for the regimes and one for idle-gap causes keep the colours the same in every chart
(Paul Tol's colour-blind-safe "vibrant" and "muted" schemes).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
import polars as pl

from traceanalyze.renderers.svg import (
    AXIS,
    GRID,
    INK,
    MUTED,
    WIDTH,
    Linear,
    Log,
    clip_label,
    contrast_ink,
    coord,
    decades,
    empty_chart,
    esc,
    legend,
    linear_ticks,
    log_axes,
    svg_document,
    text_element,
    text_width,
    tooltip,
)
from traceanalyze.units import format_duration_ns, format_percent, format_rate

REGIME_COLOURS: dict[str, str] = {
    "overhead": "#CC3311",  # GPU idle, waiting on the CPU
    "bandwidth": "#EE7733",
    "latency": "#EE3377",
    "compute": "#0077BB",
    "communication": "#009988",
    "memcpy": "#AA3377",
    "unmodeled": "#BBBBBB",
}
CAUSE_COLOURS: dict[str, str] = {
    "host": "#CC3311",  # the bulk of overhead: same red as the regime
    "sync": "#882255",
    "collective": "#009988",  # the communication regime's teal
    "stream_wait": "#33BBEE",
    "launch": "#EE99AA",
    "other": "#DDCC77",
}
BUSY_COLOUR = "#9DB9D8"  # GPU busy (or queued behind busy work) where the regime does not matter
MAX_MARKS = 5000  # most data marks one chart may hold
EXACT_TIMELINE_MARKS = 2000  # up to this many intervals the timeline draws each one


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
    accessible name, drawn when `show_title`."""
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
        marks.append(text_element(plot_left - 8, y + bar_height / 2 + 4, clip_label(row.label, label_width - 14), anchor="end",
                           extra=f' data-label="{esc(row.label)}"' if len(row.label) * 6.7 > label_width - 14 else ""))
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
            tip = f"{row.label} — {key}: {format_percent(share)} ({format_duration_ns(value)} of {format_duration_ns(row.total_ns)})"
            marks.append(f'<rect class="mark" data-key="{esc(key)}" x="{coord(x0)}" y="{coord(y)}" width="{coord(max(x1 - x0, 0.5))}" '
                         f'height="{coord(bar_height)}" fill="{colours[key]}">{tooltip(tip)}</rect>')
            label = format_percent(share) if x1 - x0 >= 46 else (f"{share * 100:.0f}%" if x1 - x0 >= 28 else "")
            if label:
                marks.append(text_element((x0 + x1) / 2, y + bar_height / 2 + 4, label, anchor="middle", size=11,
                                   fill=contrast_ink(colours[key]), extra=' pointer-events="none"'))
        marks.append(text_element(plot_right + 6, y + bar_height / 2 + 4, format_duration_ns(row.total_ns), fill=MUTED, size=11))
        y += bar_height + 8
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        grid.append(f'<line x1="{coord(x(tick))}" x2="{coord(x(tick))}" y1="{coord(top - 4)}" y2="{coord(y)}" stroke="{GRID}"/>')
        grid.append(text_element(x(tick), y + 14, f"{tick * 100:.0f}%", anchor="middle", size=11, fill=MUTED))
    return svg_document(kind, width, y + 22, title, body + grid + marks)


# ---------------------------------------------------------------------------------------------
# roofline


@dataclass(frozen=True)
class RooflinePoint:
    name: str
    intensity_flop_per_byte: float
    flops_per_s: float
    total_ns: float
    bound: str
    tooltip: str = ""
    number: int | None = None  # its row in the kernel table


@dataclass(frozen=True)
class Roof:
    value: float  # FLOP/s, or bytes/s for a bandwidth roof
    label: str
    detail: str = ""  # a second, smaller line: which dtypes meet this roof


def _spread(positions: Sequence[float], *, gap: float, low: float) -> list[float]:
    """Label positions moved apart (downwards) so that neighbours are at least `gap` apart."""
    order = sorted(range(len(positions)), key=lambda i: positions[i])
    placed = [0.0] * len(positions)
    last = low - gap
    for i in order:
        last = max(positions[i], last + gap)
        placed[i] = last
    return placed


def roofline_chart(points: Sequence[RooflinePoint], compute_roofs: Sequence[Roof], bandwidth_roofs: Sequence[Roof], *,
                   title: str = "Roofline", footnote: str = "", width: float = WIDTH, height: float = 470) -> str:
    """Log-log arithmetic intensity (FLOP/byte) against achieved FLOP/s: the bandwidth roof (a
    slope: bytes/s × FLOP/byte) up to each compute roof (flat), one dot per kernel (area ∝ total
    time, colour = bound). Long: one SVG drawn top to bottom, axes, roofs, dots, legend."""
    points = [p for p in points if p.intensity_flop_per_byte > 0 and p.flops_per_s > 0]
    if not points and not compute_roofs:
        return empty_chart("roofline", "roofline: no kernel has a FLOP/byte model and the device peaks are unknown")
    ridges = [c.value / b.value for c in compute_roofs for b in bandwidth_roofs]
    xs = [p.intensity_flop_per_byte for p in points] + ridges
    ys = [p.flops_per_s for p in points] + [c.value for c in compute_roofs]
    x_low, x_high = 10 ** math.floor(math.log10(min(xs) / 2)), 10 ** math.ceil(math.log10(max(xs) * 2))
    y_low, y_high = 10 ** math.floor(math.log10(min(ys) / 2)), 10 ** math.ceil(math.log10(max(ys) * 1.6))
    left, right, top = 104, width - 176, 62  # roof labels in the right margin
    bottom = height - 50
    x, y = Log(x_low, x_high, left, right), Log(y_low, y_high, bottom, top)
    body = [text_element(0, 16, title, size=14, weight="600")]
    bounds = sorted({p.bound for p in points}, key=lambda b: list(REGIME_COLOURS).index(b) if b in REGIME_COLOURS else 99)
    items = [(f"{b}-bound kernel", REGIME_COLOURS.get(b, MUTED)) for b in bounds]
    parts, _ = legend(items, left, 26, right - left, marker="circle")
    body += parts
    body.append(text_element(width - 4, 38, "dot area ∝ total time · hover a dot for its numbers", anchor="end", size=11, fill=MUTED))
    body += log_axes(x, y, x_low, x_high, y_low, y_high, left, right, top, bottom,
                      x_format=lambda v: f"{v:g}", y_format=lambda v: format_rate(v, "FLOP/s"))
    body.append(text_element((left + right) / 2, height - 12, "arithmetic intensity (FLOP / byte)", anchor="middle", fill=MUTED))
    body.append(text_element(14, (top + bottom) / 2, "achieved FLOP/s", anchor="middle", fill=MUTED,
                      extra=f' transform="rotate(-90 14 {coord((top + bottom) / 2)})"'))
    clip = f'<clipPath id="roofclip"><rect x="{left}" y="{top}" width="{coord(right - left)}" height="{coord(bottom - top)}"/></clipPath>'
    body.append(clip)
    top_roof = max((c.value for c in compute_roofs), default=None)
    for bw in bandwidth_roofs:
        x0 = max(x_low, y_low / bw.value)
        x1 = top_roof / bw.value if top_roof else x_high
        body.append(f'<line x1="{coord(x(x0))}" y1="{coord(y(bw.value * x0))}" x2="{coord(x(x1))}" y2="{coord(y(bw.value * x1))}" '
                    f'stroke="{INK}" stroke-width="2" clip-path="url(#roofclip)">{tooltip(bw.label)}</line>')
        mid = math.sqrt(x0 * x1) if x1 > x0 else x0
        mid = min(mid, x1 / 6) if x1 / 6 > x0 else mid
        angle = math.degrees(math.atan2(y(bw.value * x1) - y(bw.value * x0), x(x1) - x(x0)))
        lx, ly = x(mid), y(bw.value * mid) - 6
        body.append(text_element(lx, ly, bw.label, size=11, fill=INK, extra=f' transform="rotate({angle:.1f} {coord(lx)} {coord(ly)})"'))
    labels: list[tuple[float, Roof]] = []
    for i, roof in enumerate(sorted(compute_roofs, key=lambda r: -r.value)):
        ridge = min((roof.value / b.value for b in bandwidth_roofs), default=x_low)
        dashed = "" if i == 0 else ' stroke-dasharray="6 4"'
        body.append(f'<line x1="{coord(x(max(ridge, x_low)))}" y1="{coord(y(roof.value))}" x2="{coord(right)}" y2="{coord(y(roof.value))}" '
                    f'stroke="{INK}" stroke-width="{2 if i == 0 else 1.4}"{dashed}>{tooltip(roof.label + " " + roof.detail)}</line>')
        labels.append((y(roof.value), roof))
    placed = _spread([ly for ly, _ in labels], gap=28 if any(r.detail for _, r in labels) else 15, low=top + 4)
    for (ly, roof), py in zip(labels, placed):
        if abs(py - ly) > 1:
            body.append(f'<polyline points="{coord(right)},{coord(ly)} {coord(right + 5)},{coord(py)}" fill="none" stroke="{AXIS}"/>')
        body.append(text_element(right + 8, py + 4, roof.label, size=11, weight="600"))
        if roof.detail:
            body.append(text_element(right + 8, py + 17, clip_label(roof.detail, width - right - 10, 10), size=10, fill=MUTED))
    largest = max((p.total_ns for p in points), default=1.0) or 1.0
    for p in sorted(points, key=lambda p: -p.total_ns):
        r = 3 + 15 * math.sqrt(p.total_ns / largest)
        colour = REGIME_COLOURS.get(p.bound, MUTED)
        body.append(f'<circle class="mark" cx="{coord(x(p.intensity_flop_per_byte))}" cy="{coord(y(p.flops_per_s))}" r="{coord(r)}" fill="{colour}" '
                    f'fill-opacity="0.72" stroke="#ffffff" stroke-width="1">{tooltip(p.tooltip or p.name)}</circle>')
    tags: list[tuple[float, float, list[int]]] = []  # numbers of dots that sit together share one label
    for p in sorted((p for p in points if p.number is not None), key=lambda p: p.number or 0):
        r = 3 + 15 * math.sqrt(p.total_ns / largest)
        tx, ty = x(p.intensity_flop_per_byte) + r * 0.7 + 2, y(p.flops_per_s) - r * 0.7
        near = next((t for t in tags if abs(t[0] - tx) < 14 and abs(t[1] - ty) < 10), None)
        if near is None:
            tags.append((tx, ty, [p.number or 0]))
        else:
            near[2].append(p.number or 0)
    for tx, ty, numbers in tags:
        body.append(text_element(tx, ty, ",".join(map(str, numbers)), size=11, weight="600", extra=' pointer-events="none"'))
    if footnote:
        body.append(text_element(left, height + 8, footnote, size=11, fill=MUTED))
        height += 16
    return svg_document("roofline", width, height, title, body)


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
    bins: pl.DataFrame | None = None  # the lane cut into pixel bins (`lane_bins`), in place of `intervals`


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


def binned_rows(rows: Sequence[TimelineRow], window: tuple[int, int], *, width: float = WIDTH,
                max_marks: int = MAX_MARKS) -> list[TimelineRow]:
    """`rows` as `timeline_chart` draws them: unchanged up to `EXACT_TIMELINE_MARKS` intervals
    in all, else each lane cut into pixel-wide bins (`lane_bins`, at most `max_marks` over the
    chart) in place of its intervals, so that what is kept does not grow with the intervals."""
    rows = list(rows)
    if any(r.bins is not None for r in rows) or sum(r.intervals.height for r in rows) <= min(EXACT_TIMELINE_MARKS, max_marks):
        return rows
    start, end = window
    bins = max(1, min(int(width - TIMELINE_RIGHT_PAD - TIMELINE_LABEL_WIDTH), max_marks // max(len(rows), 1)))
    return [replace(r, intervals=r.intervals.clear(), bins=lane_bins(r.intervals, start, end, bins)) for r in rows]


def timeline_chart(rows: Sequence[TimelineRow], window: tuple[int, int], *, title: str,
                   legends: Sequence[tuple[str, Mapping[str, str]]] = (), markers: Sequence[Marker] = (),
                   width: float = WIDTH, note: str = "", max_marks: int = MAX_MARKS, kind: str = "timeline") -> str:
    """Lanes of intervals over `window` (ns). Up to `EXACT_TIMELINE_MARKS` intervals each is
    drawn with its own tooltip; beyond, each lane is cut into pixel-wide bins (at most
    `max_marks` over the chart), a bin takes the colour of the category covering most of it and
    an opacity by how much of it is covered, and equal neighbours merge into one rect. `rows`
    may come binned already (`binned_rows`, with the same `width` and `max_marks`)."""
    rows = binned_rows(rows, window, width=width, max_marks=max_marks)
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
        body.append(text_element(left - 8, ly + lane / 2 + 4, clip_label(row.label, label_width - 12), anchor="end", size=11))
        if row.bins is None:
            marks += _exact_lane(row, x, ly, lane, start, end)
        else:
            marks += _binned_lane(row, x, ly, lane, start, end)
    axis = [f'<line x1="{left}" x2="{coord(right)}" y1="{coord(bottom + 4)}" y2="{coord(bottom + 4)}" stroke="{AXIS}"/>']
    for tick in linear_ticks(0, span, 8):
        tx = x(start + tick)
        axis.append(f'<line x1="{coord(tx)}" x2="{coord(tx)}" y1="{coord(bottom + 4)}" y2="{coord(bottom + 8)}" stroke="{AXIS}"/>')
        axis.append(text_element(tx, bottom + 20, "0" if tick == 0 else format_duration_ns(tick), anchor="middle", size=11, fill=MUTED))
    every = max(1, math.ceil(len(markers) / 24))
    for i, marker in enumerate(markers):
        if not start <= marker.at_ns <= end:
            continue
        mx = x(marker.at_ns)
        axis.append(f'<line x1="{coord(mx)}" x2="{coord(mx)}" y1="{coord(top - 12)}" y2="{coord(bottom + 4)}" stroke="{INK}" '
                    f'stroke-opacity="0.45" stroke-dasharray="2 3">{tooltip(marker.label)}</line>')
        if i % every == 0:
            axis.append(text_element(mx + 3, top - 4, marker.label, size=10, fill=MUTED))
    height = bottom + 30
    if note:
        axis.append(text_element(left, height + 4, note, size=11, fill=MUTED))
        height += 14
    return svg_document(kind, width, height, title, body + marks + axis)


def _clipped(frame: pl.DataFrame, start: int, end: int) -> pl.DataFrame:
    return (
        frame.select(
            pl.col("start_ns").clip(start, end), pl.col("end_ns").clip(start, end),
            pl.col("category").cast(pl.String), pl.col("label").cast(pl.String),
        )
        .filter(pl.col("end_ns") > pl.col("start_ns"))
        .sort("start_ns")
    )


def _exact_lane(row: TimelineRow, x: Linear, ly: float, lane: float, start: int, end: int) -> list[str]:
    marks = []
    for s, e, category, label in _clipped(row.intervals, start, end).iter_rows():
        x0, x1 = x(s), x(e)
        colour = row.colours.get(category, MUTED)
        tip = f"{label}\n{category} · {format_duration_ns(e - s)} at {format_duration_ns(s - start)}"
        marks.append(f'<rect class="mark" x="{coord(x0)}" y="{coord(ly)}" width="{max(x1 - x0, 0.6):.2f}" height="{lane}" '
                     f'fill="{colour}">{tooltip(tip)}</rect>')
    return marks


def lane_bins(intervals: pl.DataFrame, start: int, end: int, bins: int) -> pl.DataFrame:
    """A lane's intervals cut into `bins` equal bins of `start`–`end`: per bin and category the
    time covered and the number of intervals (`bin`, `category`, `covered`, `count`; `bin_ns`
    repeats the bin's width), by bin, most covered first."""
    frame = _clipped(intervals, start, end)
    bin_ns = max(1, -(-(end - start) // bins))
    return (
        frame.with_columns(
            ((pl.col("start_ns") - start) // bin_ns).alias("b0"),
            ((pl.col("end_ns") - 1 - start) // bin_ns).alias("b1"),
        )
        .with_columns(pl.int_ranges("b0", pl.col("b1") + 1).alias("bin"))
        .explode("bin")
        .with_columns(
            (pl.min_horizontal("end_ns", pl.col("bin") * bin_ns + start + bin_ns)
             - pl.max_horizontal("start_ns", pl.col("bin") * bin_ns + start)).alias("covered")
        )
        .group_by("bin", "category")
        .agg(pl.col("covered").sum(), pl.len().alias("count"))
        .sort(["bin", "covered", "category"], descending=[False, True, False])  # ties by name: the same every run
        .with_columns(pl.lit(bin_ns, dtype=pl.Int64).alias("bin_ns"))
    )


def _binned_lane(row: TimelineRow, x: Linear, ly: float, lane: float, start: int, end: int) -> list[str]:
    per_bin = row.bins
    if per_bin is None or per_bin.is_empty():
        return []
    bin_ns = int(per_bin["bin_ns"][0])
    last = (end - start - 1) // bin_ns
    runs: list[_Run] = []
    # one pass over the rows, a bin's rows together (a polars group per bin cost 60 ms a lane:
    # 7 s for the timelines of 64 ranks)
    ordered = per_bin.sort("bin", maintain_order=True)
    bins, all_categories, all_covered, all_counts = (ordered[c].to_list() for c in ("bin", "category", "covered", "count"))
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
        tip = (f"{row.label}: {format_duration_ns(s - start)} – {format_duration_ns(e - start)}\n"
               f"{format_percent(run.covered_ns / max(run.span_ns, 1))} {row.what}, mostly {run.category} ({n} intervals: {mix})")
        marks.append(f'<rect class="mark" x="{coord(x0)}" y="{coord(ly)}" width="{max(x1 - x0, 0.6):.2f}" height="{lane}" '
                     f'fill="{row.colours.get(run.category, MUTED)}" fill-opacity="{run.level}">{tooltip(tip)}</rect>')
    return marks


def _runs_of_equal(values: list) -> Iterator[tuple[int, int]]:
    """(first, after) of each run of equal neighbours in `values`."""
    first = 0
    for index in range(1, len(values) + 1):
        if index == len(values) or values[index] != values[first]:
            yield first, index
            first = index


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


def log_histogram(binned: LogBins | None, *, kind: str, title: str, x_label: str, markers: Sequence[tuple[float, str]] = (),
                  width: float = WIDTH, height: float = 300) -> str:
    """The series of `binned` (`log_bins`) stacked, on a log x axis. `markers` draw labelled
    vertical lines (percentiles)."""
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
    body.append(f'<rect x="{left}" y="{top}" width="{coord(right - left)}" height="{coord(bottom - top)}" fill="none" stroke="{AXIS}"/>')
    for tick in y_ticks:
        body.append(f'<line x1="{left}" x2="{coord(right)}" y1="{coord(y(tick))}" y2="{coord(y(tick))}" stroke="{GRID}"/>')
        body.append(text_element(left - 6, y(tick) + 4, f"{tick:g}", anchor="end", size=11, fill=MUTED))
    for tick in decades(low, high):
        body.append(f'<line x1="{coord(x(tick))}" x2="{coord(x(tick))}" y1="{top}" y2="{coord(bottom + 4)}" stroke="{GRID}"/>')
        body.append(text_element(x(tick), bottom + 17, format_duration_ns(tick), anchor="middle", size=11, fill=MUTED))
    body.append(text_element((left + right) / 2, height - 8, x_label, anchor="middle", fill=MUTED))
    body.append(text_element(14, (top + bottom) / 2, "launches", anchor="middle", fill=MUTED,
                      extra=f' transform="rotate(-90 14 {coord((top + bottom) / 2)})"'))
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
            body.append(f'<rect class="mark" x="{coord(x0)}" y="{coord(y1)}" width="{coord(max(x1 - x0, 0.5))}" '
                        f'height="{coord(max(y0 - y1, 0.5))}" fill="{s.colour}">{tooltip(tip)}</rect>')
    placed: list[float] = []
    for value, label in markers:
        if value is None or not low <= value <= high:
            continue
        mx = x(value)
        row = sum(1 for p in placed if abs(p - mx) < text_width(label, 11) + 6)
        placed.append(mx)
        body.append(f'<line x1="{coord(mx)}" x2="{coord(mx)}" y1="{top}" y2="{coord(bottom)}" stroke="{INK}" stroke-dasharray="4 3">'
                    f"{tooltip(label)}</line>")
        body.append(text_element(mx + 3, top + 12 + 13 * row, label, size=11))
    return svg_document(kind, width, height, title, body)


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
        body.append(f'<line x1="{left}" x2="{coord(right)}" y1="{coord(y(tick))}" y2="{coord(y(tick))}" stroke="{GRID}"/>')
        body.append(text_element(left - 6, y(tick) + 4, "0" if tick == 0 else format_duration_ns(tick), anchor="end", size=11, fill=MUTED))
    every = max(1, math.ceil(len(steps) / 40))
    show_share = slot >= 30
    for i, s in enumerate(steps):
        cx = left + slot * (i + 0.5)
        x0 = cx - bar_width / 2
        y_busy = y(s.busy_ns)
        y_top = y(s.busy_ns + s.idle_ns)
        tip = (f"{s.label}: window {format_duration_ns(s.busy_ns + s.idle_ns)}, busy {format_duration_ns(s.busy_ns)}, "
               f"idle {format_duration_ns(s.idle_ns)} ({format_percent(s.idle_fraction)})")
        if s.busy_ns > 0:
            body.append(f'<rect class="mark" x="{coord(x0)}" y="{coord(y_busy)}" width="{coord(bar_width)}" height="{coord(bottom - y_busy)}" '
                        f'fill="{BUSY_COLOUR}">{tooltip(tip)}</rect>')
        if s.idle_ns > 0:
            body.append(f'<rect class="mark" x="{coord(x0)}" y="{coord(y_top)}" width="{coord(bar_width)}" height="{coord(y_busy - y_top)}" '
                        f'fill="{REGIME_COLOURS["overhead"]}">{tooltip(tip)}</rect>')
        if show_share:
            body.append(text_element(cx, y_top - 4, format_percent(s.idle_fraction), anchor="middle", size=11))
        if i % every == 0:
            body.append(text_element(cx, bottom + 15, s.label, anchor="middle", size=11, fill=MUTED))
    body.append(f'<line x1="{left}" x2="{coord(right)}" y1="{coord(bottom)}" y2="{coord(bottom)}" stroke="{AXIS}"/>')
    body.append(text_element((left + right) / 2, height - 6, "step (GPU window of each ProfilerStep)", anchor="middle", fill=MUTED))
    return svg_document("steps", width, height, title, body)
