"""The roofline chart: each kernel as a point against the compute and bandwidth roofs (HTML report)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from traceanalyze.renderers.plots.palette import (
    REGIME_COLOURS,
)
from traceanalyze.renderers.svg import (
    AXIS,
    INK,
    MUTED,
    WIDTH,
    Log,
    clip_label,
    coord,
    empty_chart,
    legend,
    log_axes,
    svg_document,
    text_element,
    tooltip,
)
from traceanalyze.units import format_rate

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
    bounds = sorted({p.bound for p in points},
                    key=lambda b: list(REGIME_COLOURS).index(b) if b in REGIME_COLOURS else 99)
    items = [(f"{b}-bound kernel", REGIME_COLOURS.get(b, MUTED)) for b in bounds]
    parts, _ = legend(items, left, 26, right - left, marker="circle")
    body += parts
    body.append(text_element(width - 4, 38, "dot area ∝ total time · hover a dot for its numbers", anchor="end",
                             size=11, fill=MUTED))
    body += log_axes(x, y, x_low, x_high, y_low, y_high, left, right, top, bottom,
                      x_format=lambda v: f"{v:g}", y_format=lambda v: format_rate(v, "FLOP/s"))
    body.append(text_element((left + right) / 2, height - 12, "arithmetic intensity (FLOP / byte)", anchor="middle",
                             fill=MUTED))
    body.append(text_element(14, (top + bottom) / 2, "achieved FLOP/s", anchor="middle", fill=MUTED,
                      extra=f' transform="rotate(-90 14 {coord((top + bottom) / 2)})"'))
    clip = (f'<clipPath id="roofclip"><rect x="{left}" y="{top}" width="{coord(right - left)}" '
            f'height="{coord(bottom - top)}"/></clipPath>')
    body.append(clip)
    top_roof = max((c.value for c in compute_roofs), default=None)
    for bw in bandwidth_roofs:
        x0 = max(x_low, y_low / bw.value)
        x1 = top_roof / bw.value if top_roof else x_high
        body.append(f'<line x1="{coord(x(x0))}" y1="{coord(y(bw.value * x0))}" x2="{coord(x(x1))}" '
                    f'y2="{coord(y(bw.value * x1))}" '
                    f'stroke="{INK}" stroke-width="2" clip-path="url(#roofclip)">{tooltip(bw.label)}</line>')
        mid = math.sqrt(x0 * x1) if x1 > x0 else x0
        mid = min(mid, x1 / 6) if x1 / 6 > x0 else mid
        angle = math.degrees(math.atan2(y(bw.value * x1) - y(bw.value * x0), x(x1) - x(x0)))
        lx, ly = x(mid), y(bw.value * mid) - 6
        body.append(text_element(lx, ly, bw.label, size=11, fill=INK,
                                 extra=f' transform="rotate({angle:.1f} {coord(lx)} {coord(ly)})"'))
    labels: list[tuple[float, Roof]] = []
    for i, roof in enumerate(sorted(compute_roofs, key=lambda r: -r.value)):
        ridge = min((roof.value / b.value for b in bandwidth_roofs), default=x_low)
        dashed = "" if i == 0 else ' stroke-dasharray="6 4"'
        body.append(f'<line x1="{coord(x(max(ridge, x_low)))}" y1="{coord(y(roof.value))}" x2="{coord(right)}" '
                    f'y2="{coord(y(roof.value))}" '
                    f'stroke="{INK}" '
                    f'stroke-width="{2 if i == 0 else 1.4}"{dashed}>{tooltip(roof.label + " " + roof.detail)}</line>')
        labels.append((y(roof.value), roof))
    placed = _spread([ly for ly, _ in labels], gap=28 if any(r.detail for _, r in labels) else 15, low=top + 4)
    for (ly, roof), py in zip(labels, placed):
        if abs(py - ly) > 1:
            body.append(f'<polyline points="{coord(right)},{coord(ly)} {coord(right + 5)},{coord(py)}" fill="none" '
                        f'stroke="{AXIS}"/>')
        body.append(text_element(right + 8, py + 4, roof.label, size=11, weight="600"))
        if roof.detail:
            body.append(text_element(right + 8, py + 17, clip_label(roof.detail, width - right - 10, 10), size=10,
                                     fill=MUTED))
    largest = max((p.total_ns for p in points), default=1.0) or 1.0
    for p in sorted(points, key=lambda p: -p.total_ns):
        r = 3 + 15 * math.sqrt(p.total_ns / largest)
        colour = REGIME_COLOURS.get(p.bound, MUTED)
        body.append(f'<circle class="mark" cx="{coord(x(p.intensity_flop_per_byte))}" cy="{coord(y(p.flops_per_s))}" '
                    f'r="{coord(r)}" fill="{colour}" '
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
        body.append(text_element(tx, ty, ",".join(map(str, numbers)), size=11, weight="600",
                                 extra=' pointer-events="none"'))
    if footnote:
        body.append(text_element(left, height + 8, footnote, size=11, fill=MUTED))
        height += 16
    return svg_document("roofline", width, height, title, body)
