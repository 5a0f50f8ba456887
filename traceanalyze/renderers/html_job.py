"""The HTML charts of the job section: a ranks × steps heatmap of step time (waiting shown), the
collectives on one aligned clock (each rank's wait, then the transfer), and per-collective wait
and transfer bars. Inputs come from `Report.job`; drawing from report.plots and report.svg."""

from __future__ import annotations

import polars as pl

from traceanalyze.renderers import plots
from traceanalyze.renderers.jsonjob import listed_collectives
from traceanalyze.report.model import Report
from traceanalyze.renderers.svg import GRID, MUTED, WIDTH, contrast_ink, svg_document, text_element, tooltip, coord
from traceanalyze.units import format_duration_ns, format_percent

JOB_COLOURS = {"wait": "#CC3311", "transfer": "#009988"}
COLLECTIVE_BARS = 20


def _shade(fraction: float) -> str:
    """White → dark red as `fraction` goes 0 → 1."""
    f = max(0.0, min(1.0, fraction))
    r, g, b = (255 + (0xCC - 255) * f, 255 + (0x33 - 255) * f, 255 + (0x11 - 255) * f)
    return f"#{round(r):02X}{round(g):02X}{round(b):02X}"


def heatmap(report: Report) -> str:
    """Ranks (rows) × steps (columns): each cell the rank's step time, shaded by the share of it
    spent waiting in collectives for other ranks."""
    steps = report.job.steps
    ranks = sorted(steps["rank"].unique().to_list())
    columns = sorted(steps["step"].unique().to_list())
    cells = {(r["rank"], r["step"]): r for r in steps.iter_rows(named=True)}
    title = "Step time per rank (shade: share of the step spent waiting for other ranks)"
    left, top, cell_h = 80, 40, 24
    cell_w = max(40.0, min(110.0, (WIDTH - left - 20) / max(len(columns), 1)))
    body = [text_element(0, 16, title, size=14, weight="600")]
    for j, step in enumerate(columns):
        body.append(text_element(left + (j + 0.5) * cell_w, top - 6, f"step {step}", anchor="middle", size=11, fill=MUTED))
    for i, rank in enumerate(ranks):
        y = top + i * (cell_h + 2)
        body.append(text_element(left - 8, y + cell_h / 2 + 4, f"rank {rank}", anchor="end", size=11))
        for j, step in enumerate(columns):
            row = cells.get((rank, step))
            x = left + j * cell_w
            if row is None:
                body.append(f'<rect x="{coord(x)}" y="{coord(y)}" width="{coord(cell_w - 2)}" height="{cell_h}" fill="{GRID}"/>')
                continue
            share = row["wait_ns"] / row["step_ns"] if row["step_ns"] else 0.0
            colour = _shade(share)
            tip = (f"rank {rank}, step {step}: {format_duration_ns(row['step_ns'])}; waiting {format_duration_ns(row['wait_ns'])} "
                   f"({format_percent(share)}), compute {format_duration_ns(row['compute_ns'])}, "
                   f"comm {format_duration_ns(row['comm_ns'])}, idle {format_duration_ns(row['idle_ns'])}")
            body.append(f'<rect class="mark" x="{coord(x)}" y="{coord(y)}" width="{coord(cell_w - 2)}" height="{cell_h}" '
                        f'fill="{colour}">{tooltip(tip)}</rect>')
            body.append(text_element(x + (cell_w - 2) / 2, y + cell_h / 2 + 4, format_duration_ns(row["step_ns"]),
                                     anchor="middle", size=10, fill=contrast_ink(colour), extra=' pointer-events="none"'))
    height = top + len(ranks) * (cell_h + 2) + 10
    return svg_document("job-heatmap", WIDTH, height, title, body)


def collective_timeline(report: Report) -> str:
    """One lane per rank on the reference rank's clock: for each matched collective, the rank's
    wait (arrival → last arrival) then its transfer (→ end)."""
    matched = report.job.matched
    rows = []
    for rank in sorted(matched["rank"].unique().to_list()):
        mine = matched.filter(pl.col("rank") == rank)
        label = pl.format("{} #{}: ", pl.col("collective"), pl.col("seq"))
        waits = mine.filter(pl.col("wait_ns") > 0).select(
            pl.col("arrival_ns").alias("start_ns"), (pl.col("arrival_ns") + pl.col("wait_ns")).alias("end_ns"),
            pl.lit("wait").alias("category"),
            pl.concat_str(label, pl.lit("waited "), (pl.col("wait_ns") / 1000).round(1).cast(pl.String), pl.lit(" µs"))
            .alias("label"))
        transfers = mine.select(
            (pl.col("arrival_ns") + pl.col("wait_ns")).alias("start_ns"), pl.col("end_ns"), pl.lit("transfer").alias("category"),
            pl.concat_str(label, pl.lit("transfer "), (pl.col("transfer_ns") / 1000).round(1).cast(pl.String), pl.lit(" µs"))
            .alias("label"))
        intervals = pl.concat([waits, transfers]).filter(pl.col("end_ns") > pl.col("start_ns")).sort("start_ns")
        rows.append(plots.TimelineRow(f"rank {rank}", intervals, JOB_COLOURS))
    window = (int(matched["arrival_ns"].min()), int(matched["end_ns"].max()))
    return plots.timeline_chart(rows, window, title="Collectives on one clock (ranks aligned by their clock offsets)",
                                legends=[("", JOB_COLOURS)], kind="job-timeline")


def collective_bars(report: Report) -> str:
    """Per collective (the most waited on), the longest wait of a rank and the transfer."""
    listed = listed_collectives(report.job, COLLECTIVE_BARS)
    rows = [plots.BarRow(f"{r['collective']} #{r['seq']} ({r['process_group']})",
                         {"wait": r["max_wait_ns"], "transfer": r["transfer_ns"]},
                         float(r["max_wait_ns"] + r["transfer_ns"]))
            for r in listed.iter_rows(named=True)]
    return plots.stacked_bars(rows, JOB_COLOURS, kind="job-collectives",
                              title="Collectives: the longest wait of a rank, then the transfer")


CHARTS = {"job-heatmap": heatmap, "job-timeline": collective_timeline, "job-collectives": collective_bars}
