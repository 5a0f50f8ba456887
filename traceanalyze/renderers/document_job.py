"""The job-level blocks of a multi-rank report (Markdown and HTML): which rank holds the others
back, the wait it costs them and why; a ranks × steps heatmap, the aligned cross-rank timeline
of the collectives and their wait/transfer bars (HTML charts), the collectives waited on most.
Reads `Report.job` (analysis.job); computes nothing."""

from __future__ import annotations

import polars as pl

from traceanalyze.renderers.blocks import Block, Cell, Chart, Heading, Paragraph, Strong, Table
from traceanalyze.renderers.jsonjob import listed_collectives
from traceanalyze.report.model import Report
from traceanalyze.renderers.terminal_job import CAUSE_WORDS, COLLECTIVES_LISTED
from traceanalyze.units import format_duration_ns, format_percent, format_rate, format_si, plural


def _num(text: str) -> Cell:
    return Cell(text, numeric=True)


def job_blocks(report: Report) -> list[Block]:
    job = report.job
    blocks: list[Block] = [Heading(2, "Job — which rank holds the others back?", "job")]
    slowest = job.slowest_rank
    if slowest is None:
        blocks.append(Paragraph(("No rank waited for another in a matched collective"
                                 + ("." if job.collectives.height else " (no collective matched across ranks)."),)))
    else:
        caused = job.waits_caused.filter(pl.col("rank") == slowest).row(0, named=True)
        blocks.append(Paragraph((Strong(f"rank {slowest} is the straggler"),
                                 f": the other ranks waited {format_duration_ns(caused['caused_wait_ns'])} for it in "
                                 f"{plural(caused['collectives_last'], 'collective')} it arrived last at.")))
        for row in job.stragglers.filter(pl.col("slowest_rank") == slowest).iter_rows(named=True):
            blocks.append(Paragraph((f"Step {row['step']}: it arrived {format_duration_ns(row['behind_ns'])} after the others "
                                     f"(cost them {format_duration_ns(row['others_wait_ns'])}); its largest idle cause: "
                                     f"{row['cause'] or '–'} {format_duration_ns(row['cause_ns'])} — "
                                     f"{CAUSE_WORDS.get(row['cause'] or '', 'no idle gaps in that step')}.",)))
    if job.steps.height:
        blocks.append(Chart("job-heatmap"))
    if job.collectives.height:
        blocks += [Chart("job-timeline"), Chart("job-collectives"), _collectives_table(report)]
    return blocks


def _collectives_table(report: Report) -> Table:
    job = report.job
    listed = listed_collectives(job, COLLECTIVES_LISTED).sort("wait_ns", "seq", descending=[True, False])
    rows = tuple(
        (Cell(r["process_group"]), _num(str(r["seq"])), Cell(r["collective"]), _num(str(r["ranks"])),
         _num(format_si(r["message_bytes"], "B") if r["message_bytes"] is not None else "–"), _num(str(r["last_rank"])),
         _num(format_duration_ns(r["max_wait_ns"])), _num(format_duration_ns(r["wait_ns"])),
         _num(format_duration_ns(r["transfer_ns"])), _num(format_rate(r["busbw_bytes_per_s"], "B/s")),
         _num(format_percent(r["link_fraction"])))
        for r in listed.iter_rows(named=True)
    )
    return Table(("group", "#", "collective", "ranks", "size", "last rank", "max wait", "total wait", "transfer",
                  "bus bw", "of link"), rows)
