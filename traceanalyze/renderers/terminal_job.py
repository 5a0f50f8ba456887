"""The terminal's job-level screen for a folder of ranks: which rank holds the job back, how much
time the others lose to it, why it is slow, then ranks × steps, exposed communication and the
collectives waited on the most. Reads `Report.job` (analysis.job); computes nothing."""

from __future__ import annotations

import polars as pl
from traceanalyze.renderers.jsonjob import listed_collectives
from traceanalyze.report.model import Report
from traceanalyze.renderers.text_table import Shrinkable, text_table
from traceanalyze.units import format_duration_ns, format_percent, format_rate, format_si, plural

CAUSE_WORDS = {
    "host": "its CPU was late to launch work (data loading, Python, framework overhead)",
    "sync": "its CPU waited on its GPU (synchronize, .item(), blocking copy)",
    "launch": "its queued work started late (launch latency)",
    "stream_wait": "its queued work waited on another stream's event",
    "other": "gaps of unknown cause (no launch recorded, or clock skew)",
}
COLLECTIVES_LISTED = 8


def detail_ranks(report: Report) -> list[int]:
    """The ranks whose full sections the terminal shows without `--details`: the slowest rank
    (else the rank with the most GPU idle)."""
    slowest = report.job.slowest_rank
    if slowest is not None:
        return [slowest]
    idle = [(r.summary.window.idle_fraction or 0.0, -r.rank, r.rank) for r in report.ranks]
    return [max(idle)[2]] if idle else []


def job_section(report: Report, width: int | None = None) -> list[str]:
    job = report.job
    lines = ["JOB — which rank holds the others back?"]
    slowest = job.slowest_rank
    if slowest is None:
        lines.append("  no rank waited for another in a matched collective"
                     + ("" if job.collectives.height else " (no collective matched across ranks)"))
    else:
        caused = job.waits_caused.filter(pl.col("rank") == slowest).row(0, named=True)
        lines.append(f"  rank {slowest} is the straggler: the other ranks waited {format_duration_ns(caused['caused_wait_ns'])} "
                     f"for it in {plural(caused['collectives_last'], 'collective')} it arrived last at")
        for row in job.stragglers.filter(pl.col("slowest_rank") == slowest).iter_rows(named=True):
            why = CAUSE_WORDS.get(row["cause"] or "", "no idle gaps in that step")
            lines.append(f"  step {row['step']}: it arrived {format_duration_ns(row['behind_ns'])} after the others "
                         f"(cost them {format_duration_ns(row['others_wait_ns'])}); its largest idle: "
                         f"{row['cause'] or '–'} {format_duration_ns(row['cause_ns'])} — {why}")
        others = job.waits_caused.filter((pl.col("rank") != slowest) & (pl.col("caused_wait_ns") > 0))
        if others.height:
            lines.append("  others who made ranks wait: " + ", ".join(
                f"rank {r} {format_duration_ns(ns)}" for r, ns in others.select("rank", "caused_wait_ns").iter_rows()))
    lines.extend(_ranks_table(report, width))
    lines.extend(_collectives_table(report, width))
    lines.extend(_clock_lines(report))
    return lines


def _ranks_table(report: Report, width: int | None) -> list[str]:
    job = report.job
    steps = job.steps
    caused = dict(job.waits_caused.select("rank", "caused_wait_ns").iter_rows())
    overlap = {r["rank"]: r for r in job.overlap.iter_rows(named=True)}
    rows = []
    for r in report.ranks:
        mine = steps.filter(pl.col("rank") == r.rank)
        window = r.summary.window
        exposed = overlap.get(r.rank)
        rows.append([
            r.rank, mine.height,
            format_duration_ns(mine["step_ns"].median()) if mine.height else "–",
            format_duration_ns(mine["compute_ns"].median()) if mine.height else "–",
            format_duration_ns(mine["comm_ns"].median()) if mine.height else "–",
            format_duration_ns(mine["idle_ns"].median()) if mine.height else "–",
            format_duration_ns(mine["wait_ns"].median()) if mine.height else "–",
            format_percent(window.idle_fraction),
            format_duration_ns(exposed["exposed_ns"]) if exposed else "–",
            format_percent(exposed["overlap_fraction"]) if exposed else "–",
            format_duration_ns(caused.get(r.rank, 0)),
        ])
    return ["  ranks (per-step figures: medians over the rank's steps):",
            text_table(rows, ["rank", "steps", "step", "compute", "comm", "idle", "waiting", "GPU idle",
                              "exposed comm", "overlapped", "others waited for it"], width=width)]


def _collectives_table(report: Report, width: int | None) -> list[str]:
    job = report.job
    if job.collectives.is_empty():
        return []
    listed = listed_collectives(job, COLLECTIVES_LISTED).sort("wait_ns", "seq", descending=[True, False])
    rows = [[r["process_group"], r["seq"], r["collective"], r["ranks"],
             format_si(r["message_bytes"], "B") if r["message_bytes"] is not None else "–", r["last_rank"],
             format_duration_ns(r["max_wait_ns"]), format_duration_ns(r["wait_ns"]), format_duration_ns(r["transfer_ns"]),
             format_rate(r["busbw_bytes_per_s"], "B/s"), format_percent(r["link_fraction"])]
            for r in listed.iter_rows(named=True)]
    return [f"  collectives waited on the most ({len(rows)} of {job.collectives.height} matched):",
            text_table(rows, ["group", "#", "collective", "ranks", "size", "last rank", "max wait", "total wait",
                              "transfer", "bus bw", "of link"], width=width, keys=2,
                       shrink={0: Shrinkable(lambda room: [_cut(str(r["process_group"]), room) for r in listed.iter_rows(named=True)],
                                             min_width=8)})]


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _clock_lines(report: Report) -> list[str]:
    offsets = report.job.clock_offsets
    if offsets.height < 2:
        return []
    worst = offsets["residual_max_abs_ns"].max()
    parts = ", ".join(f"rank {r} {o / 1e3:+.1f} µs" for r, o in offsets.select("rank", "offset_ns").iter_rows()
                      if r != offsets["reference_rank"][0])
    return [f"  clocks aligned to rank {offsets['reference_rank'][0]} from the collectives' ends: {parts} "
            f"(residuals ≤ {format_duration_ns(worst)})"]
