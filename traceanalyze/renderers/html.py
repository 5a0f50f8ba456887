"""The HTML report: one self-contained file (inline CSS and SVG, no script, no external font or
image) that reads the same opened from disk, attached to a ticket or served.

It writes the blocks of `markdown.document` (so it holds everything the Markdown and terminal
reports hold) and fills each chart slot with a chart from `plots`: regime attribution per rank
and per step, the GPU timeline, idle by cause, the launch-latency histogram, per-step idle bars
and the roofline. Like every renderer it only formats what the report model holds.

Examples
--------
>>> Path("report.html").write_text(render_html(build_report(load_trace("trace.json.gz"))))  # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import replace

from traceanalyze.analysis.attribution import ATTRIBUTION_KEYS
from traceanalyze.analysis.roofline import ON_ROOFLINE
from traceanalyze.renderers import plots
from traceanalyze.renderers.blocks import Block, Cell, Chart, Figures, Group, Heading, Paragraph, Strong, Table
from traceanalyze.renderers.document import KERNEL_LIMIT, document, opening
from traceanalyze.renderers.html_text import esc, inline_html, text_block_html
from traceanalyze.renderers.svg import GRID, MUTED, WIDTH, contrast_ink, coord, svg_document, text_element, tooltip
from traceanalyze.report.chart_inputs import RankCharts
from traceanalyze.report.model import RankReport, Report
from traceanalyze.renderers.verdict_document import verdict_blocks
from traceanalyze.units import format_duration_ns, format_percent, format_rate
from traceanalyze.version import __version__


MAX_STEP_ROWS = 60

KEY_COLOURS = {**plots.CAUSE_COLOURS, **plots.REGIME_COLOURS}

CSS = """
:root { --ink: #222; --muted: #666; --line: #e3e3e3; --soft: #f6f7f9; --accent: #0077bb; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: #fff;
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1240px; margin: 0 auto; padding: 24px 28px 64px; }
header.top { border-bottom: 1px solid var(--line); margin-bottom: 8px; }
h1 { font-size: 26px; margin: 0 0 4px; letter-spacing: -0.01em; }
h2 { font-size: 20px; margin: 36px 0 10px; padding-top: 10px; border-top: 1px solid var(--line); }
h3 { font-size: 17px; margin: 26px 0 8px; }
h4 { font-size: 15px; margin: 20px 0 6px; }
h2 + p, h3 + p, h4 + p { margin-top: 4px; }
p { margin: 8px 0; }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
code { font: 12.5px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace;
  background: var(--soft); padding: 1px 4px; border-radius: 3px; overflow-wrap: anywhere; }
td code { overflow-wrap: normal; }
.meta { color: var(--muted); font-size: 13px; margin: 2px 0 14px; }
nav.toc { font-size: 13px; margin: 10px 0 6px; display: flex; flex-wrap: wrap; gap: 4px 14px; }
nav.toc a { white-space: nowrap; }
.figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(200px, 1fr)); gap: 12px; margin: 18px 0; }
.figure { border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; background: #fff; }
.figure .label { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.figure .value { font-size: 24px; font-weight: 650; margin: 2px 0; }
.figure .detail { color: var(--muted); font-size: 12.5px; }
.note { border-left: 4px solid #ddcc77; background: #fbf8ec; padding: 8px 12px; \
border-radius: 0 6px 6px 0; font-size: 14px; }
.table-wrap { overflow-x: auto; margin: 8px 0 14px; }
table { border-collapse: collapse; font-size: 13px; width: 100%; }
th, td { padding: 5px 8px; border-bottom: 1px solid var(--line); text-align: left; \
vertical-align: top; white-space: nowrap; }
td.wrap { white-space: normal; min-width: 220px; }
th { font-weight: 600; color: var(--muted); background: var(--soft); white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tbody tr:hover { background: #fafbfd; }
td code { background: none; padding: 0; }
.chip { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 6px; vertical-align: -1px; }
.bar { display: inline-block; width: 160px; height: 10px; background: #eee; \
border-radius: 2px; vertical-align: middle; }
.bar > span { display: block; height: 100%; border-radius: 2px; }
figure.chart { margin: 14px 0 18px; padding: 12px 14px 8px; border: 1px solid var(--line); \
border-radius: 8px; background: #fff; }
figure.chart svg { display: block; max-width: 100%; height: auto; }
figure.chart figcaption { color: var(--muted); font-size: 12.5px; margin-top: 4px; }
details.rank { margin: 26px 0; border: 1px solid var(--line); border-radius: 8px; padding: 4px 18px 12px; }
details.rank > summary { cursor: pointer; font-size: 17px; padding: 10px 0; }
details.rank > summary code { font-size: 13px; }
ul { padding-left: 22px; }
li { margin: 5px 0; }
footer { margin-top: 40px; color: var(--muted); font-size: 12px; border-top: 1px solid var(--line); padding-top: 10px; }
@media print { details.rank { border: none; padding: 0; } figure.chart { break-inside: avoid; } }
"""


# ---------------------------------------------------------------------------------------------
# blocks


def _cell(cell: Cell, tag: str = "td") -> str:
    wrap = not cell.numeric and not cell.code and len(cell.text) > 32
    classes = ' class="num"' if cell.numeric else ' class="wrap"' if wrap else ""
    title = f' title="{esc(cell.full)}"' if cell.full else ""
    if cell.share is not None:
        colour = KEY_COLOURS.get(cell.key or "", plots.MUTED)
        width = max(0.0, min(1.0, cell.share)) * 100
        inner = (f'<span class="bar" '
                 f'title="{esc(format_percent(cell.share))}"><span '
                 f'style="width:{width:.1f}%;background:{colour}"></span></span>')
    elif cell.code and cell.text not in ("", "–"):
        inner = f"<code>{esc(cell.text)}</code>"
    else:
        inner = esc(cell.text)
    if cell.key in KEY_COLOURS and cell.share is None:
        inner = f'<span class="chip" style="background:{KEY_COLOURS[cell.key]}"></span>{inner}'
    return f"<{tag}{classes}{title}>{inner}</{tag}>"


def _table(table: Table) -> str:
    numeric = [bool(table.rows) and all(row[i].numeric for row in table.rows) for i in range(len(table.headers))]
    head = "".join(f'<th{" class=num" if numeric[i] else ""}>{esc(h.strip())}</th>'
                   for i, h in enumerate(table.headers))
    body = "\n".join("<tr>" + "".join(_cell(c) for c in row) + "</tr>" for row in table.rows)
    return f'<div class="table-wrap"><table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table></div>'


def _figures(block: Figures) -> str:
    cards = "".join(
        f'<div class="figure"><div class="label">{esc(label)}</div><div class="value">{esc(value)}</div>'
        f'<div class="detail">{esc(detail)}</div></div>'
        for label, value, detail in block.items
    )
    return f'<div class="figures">{cards}</div>'


def _block(block: Block, report: Report) -> str:
    text = text_block_html(block)
    if text is not None:
        return text
    if isinstance(block, Table):
        return _table(block)
    if isinstance(block, Figures):
        return _figures(block)
    if isinstance(block, Chart):
        return _chart(block, report)
    if isinstance(block, Group):
        inner = "\n".join(_block(b, report) for b in block.blocks)
        return (f'<details class="rank" id="{esc(block.anchor)}" '
                f'open>\n<summary>{inline_html(block.summary)}</summary>\n{inner}\n</details>')
    return ""


def _toc(blocks: list[Block]) -> str:
    links = []
    for block in blocks:
        if isinstance(block, Heading) and block.level == 2:
            links.append(f'<a href="#{esc(block.anchor)}">{esc(block.text.split(" — ")[0])}</a>')
        elif isinstance(block, Group):
            label = next((p.text for p in block.summary if isinstance(p, Strong)), block.anchor)
            links.append(f'<a href="#{esc(block.anchor)}">{esc(label)}</a>')
    return f'<nav class="toc">{"".join(links)}</nav>' if links else ""


def render_html(report: Report) -> str:
    """The whole report as one HTML document (a string), charts inline.

    Examples
    --------
    >>> html = render_html(report)  # doctest: +SKIP
    """
    if report.options.rank_frames == "text":
        raise ValueError("this report's ranks were analysed without the HTML charts' inputs "
                         "(rank_frames='text'): analyse with rank_frames='bounded' or 'full' to render HTML")
    blocks, head = document(report), len(opening(report))
    # blocks[1] is the source line; the header shows it; the job's notes come before the verdict
    body = "\n".join(_block(b, report) for b in [*blocks[2:head], *verdict_blocks(report.verdict()), *blocks[head:]])
    name = report.source.name or str(report.source)
    meta = inline_html(blocks[1].parts) if isinstance(blocks[1], Paragraph) else ""
    return page(f"traceanalyze — {name}", "Why is the GPU not going brrrr?",
                f'<div class="meta">{meta}</div>\n{_toc(blocks)}', body)


def page(title: str, heading: str, header_html: str, body_html: str) -> str:
    """A self-contained HTML page in the report's style (inline CSS, no scripts). `header_html`
    and `body_html` are already-escaped HTML; `title` and `heading` are plain text."""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="traceanalyze {esc(__version__)}">
<title>{esc(title)}</title>
<style>{CSS}</style>
</head>
<body>
<main>
<header class="top">
<h1>{esc(heading)}</h1>
{header_html}
</header>
{body_html}
<footer>traceanalyze {esc(__version__)} — overhead, bandwidth or compute, read from a PyTorch (Kineto) trace.
Hover a chart mark for its numbers; shares are of each device's analysis window.</footer>
</main>
</body>
</html>
"""


# ---------------------------------------------------------------------------------------------
# charts: model frames → plot inputs


def _figure(svg: str, caption: str = "") -> str:
    cap = f"<figcaption>{esc(caption)}</figcaption>" if caption else ""
    return f'<figure class="chart">{svg}{cap}</figure>'


def _chart(block: Chart, report: Report) -> str:
    if block.omitted:
        return f'<p class="note">{esc(block.omitted)}</p>'
    rank = block.rank
    if block.kind == "ranks":
        return _figure(_ranks_chart(report))
    if block.kind in JOB_CHARTS:
        return _figure(JOB_CHARTS[block.kind](report))
    if rank is None:
        return ""
    builders = {
        "regimes": _regimes_chart,
        "timeline": _timeline_charts,
        "causes": _causes_chart,
        "latency": _latency_chart,
        "steps": _steps_chart,
        "roofline": _roofline_chart,
    }
    return builders[block.kind](rank)


def _charts(rank: RankReport) -> RankCharts:
    """What `rank`'s charts draw: sent by its worker (`model.bounded`), else from its frames."""
    return rank.chart_inputs


def _attribution_row(label: str, row: dict) -> plots.BarRow:
    return plots.BarRow(label, {key: row[f"{key}_ns"] or 0 for key in ATTRIBUTION_KEYS}, row["window_ns"] or 0)


def _ranks_chart(report: Report) -> str:
    rows = []
    for rank in report.ranks:
        for row in rank.attribution.iter_rows(named=True):
            label = f"rank {rank.rank}" + (f" · device {row['device']}" if rank.attribution.height > 1 else "")
            rows.append(_attribution_row(label, row))
    return plots.stacked_bars(rows, plots.REGIME_COLOURS, kind="ranks", title="Where the GPU time goes, per rank")


def _regimes_chart(rank: RankReport) -> str:
    rows = []
    devices = rank.attribution.height
    for row in rank.attribution.iter_rows(named=True):
        rows.append(_attribution_row("whole window" if devices == 1 else f"device {row['device']}", row))
    steps = rank.step_attribution
    caption = ""
    if steps.height:
        rows.append(plots.BarRow("per step", None))
        for row in steps.head(MAX_STEP_ROWS).iter_rows(named=True):
            rows.append(_attribution_row(f"step {row['step']}" + (f" · device {row['device']}" if devices > 1 else ""),
                                         row))
        if steps.height > MAX_STEP_ROWS:
            caption = f"first {MAX_STEP_ROWS} of {steps.height} steps shown"
    svg = plots.stacked_bars(rows, plots.REGIME_COLOURS, kind="regimes",
                             title="Regime attribution — each instant of the window counted once")
    return _figure(svg, caption or "overhead = GPU idle; where streams overlap, compute wins over bandwidth, "
                   "then unmodeled, communication and copies.")


def _causes_chart(rank: RankReport) -> str:
    totals = _charts(rank).idle_by_cause
    if totals.is_empty():
        return ""
    rows = []
    per_device = _charts(rank).idle_by_cause_per_device
    for device, values in per_device:
        rows.append(plots.BarRow("idle time" if len(per_device) == 1 else f"device {device}", values,
                                 sum(values.values())))
    return _figure(plots.stacked_bars(rows, plots.CAUSE_COLOURS, kind="causes", title="Idle time by cause",
                                      show_title=False))


def _timeline_charts(rank: RankReport) -> str:
    charts = _charts(rank)
    figures = []
    for timeline in charts.timelines:
        start, end = timeline.window
        svg = plots.timeline_chart(timeline.rows, timeline.window,
                                   title=f"GPU timeline — device {timeline.device}, "
                                   f"{format_duration_ns(end - start)} window",
                                   legends=timeline.legends, markers=timeline.markers, note=timeline.note)
        caption = ("Each lane is a stream; the last lane is the device's idle time (no stream busy). "
                   + ("Long traces are drawn at one bin per pixel: a bin takes the colour of what covers most of it, "
                      "fainter when little of it is covered." if charts.timeline_binned else ""))
        figures.append(_figure(svg, caption.strip()))
    return "\n".join(figures)


def _latency_chart(rank: RankReport) -> str:
    charts = _charts(rank)
    if not charts.launches:
        return ""
    row = rank.launch_to_start_stats
    markers = []
    if row is not None:
        markers = [(row[k], f"{k} {format_duration_ns(row[k])}") for k in ("p50", "p90", "p99")]
    svg = plots.log_histogram(charts.launch_latency, kind="latency", title="Launch → start, per launched GPU op",
                              x_label="time from the launch call's start to the GPU op's start (log scale)",
                              markers=markers)
    return _figure(svg, "A long launch → start made of queue wait is healthy (the CPU runs ahead); "
                   "launch overhead on an idle GPU is time lost.")


def _steps_chart(rank: RankReport) -> str:
    steps = rank.steps
    if steps.is_empty():
        return ""
    multi = rank.steps_on_several_devices
    bars = [plots.StepBar(f"{r['step']}" + (f"·d{r['device']}" if multi else ""), r["gpu_busy_ns"], r["gpu_idle_ns"],
                          r["idle_fraction"])
            for r in steps.iter_rows(named=True)]
    return _figure(plots.step_bars(bars, title="GPU busy and idle per step"))


def _roofline_chart(rank: RankReport) -> str:
    kernels = rank.kernels
    if kernels.is_empty():
        return ""
    charts = _charts(rank)
    compute, bandwidth = list(charts.compute_roofs), list(charts.bandwidth_roofs)
    points = []
    hidden_ns = 0
    total_ns = rank.kernel_time_ns
    for i, r in enumerate(kernels.iter_rows(named=True), 1):
        plotted = (r["bound"] in ON_ROOFLINE and (r["intensity"] or 0) > 0 and (r["achieved_flops_per_s"] or 0) > 0)
        if not plotted:
            hidden_ns += r["total_ns"]
            continue
        tip = (f"{r['name']}\n{r['op'] or 'no op'} · {r['count']} calls · {format_duration_ns(r['total_ns'])}\n"
               f"{r['intensity']:.3g} FLOP/B · {format_rate(r['achieved_flops_per_s'], 'FLOP/s')} · "
               f"{format_rate(r['achieved_bytes_per_s'], 'B/s')} · {format_percent(r['pct_of_roof'])} of roof "
               f"({r['roof'] or '–'}) · {r['bound']}-bound")
        points.append(plots.RooflinePoint(r["name"], r["intensity"], r["achieved_flops_per_s"], r["total_ns"],
                                          str(r["bound"]),
                                          tip, i if i <= KERNEL_LIMIT else None))
    if not points and not compute:
        return _figure(plots.empty_chart("roofline",
                                         "roofline: nothing to plot — no kernel has both a FLOP/byte model and "
                                         "a device peak (see the reasons below)"))
    footnote = ""
    if hidden_ns:
        footnote = (f"not plotted: {format_percent(hidden_ns / total_ns if total_ns else None)} of GPU op time "
                    "(copies, collectives, kernels with no FLOPs or no FLOP/byte model)")
    svg = plots.roofline_chart(points, compute, bandwidth, title="Roofline — one dot per kernel name",
                               footnote=footnote)
    return _figure(svg, "Numbers next to dots are rows of the table below. Dots under the slope are bandwidth-bound, "
                   "under a flat roof compute-bound; the gap to the roof is time a better kernel could save.")


# -- the job's charts (a folder of ranks) ------------------------------------------------------------------
# The HTML charts of the job section: a ranks × steps heatmap of step time (waiting shown), the
# collectives on one aligned clock (each rank's wait, then the transfer), and per-collective wait
# and transfer bars. Inputs come from `Report.job`; drawing from report.plots and report.svg.
JOB_COLOURS = {"wait": "#CC3311", "transfer": "#009988"}


def _shade(fraction: float) -> str:
    """White → dark red as `fraction` goes 0 → 1."""
    f = max(0.0, min(1.0, fraction))
    r, g, b = (255 + (0xCC - 255) * f, 255 + (0x33 - 255) * f, 255 + (0x11 - 255) * f)
    return f"#{round(r):02X}{round(g):02X}{round(b):02X}"


def heatmap(report: Report) -> str:
    """Ranks (rows) × steps (columns): each cell the rank's step time, shaded by the share of it
    spent waiting in collectives for other ranks."""
    steps = report.job.steps
    ranks, columns = report.step_grid
    cells = {(r["rank"], r["step"]): r for r in steps.iter_rows(named=True)}
    title = "Step time per rank (shade: share of the step spent waiting for other ranks)"
    left, top, cell_h = 80, 40, 24
    cell_w = max(40.0, min(110.0, (WIDTH - left - 20) / max(len(columns), 1)))
    body = [text_element(0, 16, title, size=14, weight="600")]
    for j, step in enumerate(columns):
        body.append(text_element(left + (j + 0.5) * cell_w, top - 6, f"step {step}", anchor="middle", size=11,
                                 fill=MUTED))
    for i, rank in enumerate(ranks):
        y = top + i * (cell_h + 2)
        body.append(text_element(left - 8, y + cell_h / 2 + 4, f"rank {rank}", anchor="end", size=11))
        for j, step in enumerate(columns):
            row = cells.get((rank, step))
            x = left + j * cell_w
            if row is None:
                body.append(f'<rect x="{coord(x)}" y="{coord(y)}" width="{coord(cell_w - 2)}" height="{cell_h}" '
                            f'fill="{GRID}"/>')
                continue
            share = row["wait_ns"] / row["step_ns"] if row["step_ns"] else 0.0
            colour = _shade(share)
            tip = (f"rank {rank}, step {step}: {format_duration_ns(row['step_ns'])}; waiting "
                   f"{format_duration_ns(row['wait_ns'])} "
                   f"({format_percent(share)}), compute {format_duration_ns(row['compute_ns'])}, "
                   f"comm {format_duration_ns(row['comm_ns'])}, idle {format_duration_ns(row['idle_ns'])}")
            body.append(f'<rect class="mark" x="{coord(x)}" y="{coord(y)}" width="{coord(cell_w - 2)}" '
                        f'height="{cell_h}" '
                        f'fill="{colour}">{tooltip(tip)}</rect>')
            body.append(text_element(x + (cell_w - 2) / 2, y + cell_h / 2 + 4, format_duration_ns(row["step_ns"]),
                                     anchor="middle", size=10, fill=contrast_ink(colour),
                                     extra=' pointer-events="none"'))
    height = top + len(ranks) * (cell_h + 2) + 10
    return svg_document("job-heatmap", WIDTH, height, title, body)


def collective_timeline(report: Report) -> str:
    """One lane per rank on the reference rank's clock: for each matched collective, the rank's
    wait (arrival → last arrival) then its transfer (→ end)."""
    lanes, window = report.collective_lanes
    rows = [replace(lane, label=f"rank {rank}", colours=JOB_COLOURS) for rank, lane in lanes]
    return plots.timeline_chart(rows, window, title="Collectives on one clock (ranks aligned by their clock offsets)",
                                legends=[("", JOB_COLOURS)], kind="job-timeline")


def collective_bars(report: Report) -> str:
    """Per collective (the most waited on), the longest wait of a rank and the transfer."""
    listed = report.listed_collectives.bars
    rows = [plots.BarRow(f"{r['collective']} #{r['seq']} ({r['process_group']})",
                         {"wait": r["max_wait_ns"], "transfer": r["transfer_ns"]},
                         float(r["max_wait_ns"] + r["transfer_ns"]))
            for r in listed.iter_rows(named=True)]
    return plots.stacked_bars(rows, JOB_COLOURS, kind="job-collectives",
                              title="Collectives: the longest wait of a rank, then the transfer")


JOB_CHARTS = {"job-heatmap": heatmap, "job-timeline": collective_timeline, "job-collectives": collective_bars}
