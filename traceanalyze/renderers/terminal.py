"""The terminal report: the verdict, every finding, then the key sections (overhead, where the time
goes, the roofline's top kernels, trace health); `--details` adds every other table
(docs/report-formats.md#terminal). Everything fits the terminal's width (`text_table`)."""

from __future__ import annotations

from dataclasses import replace
import textwrap

import polars as pl

from traceanalyze.analysis.launch import QUEUE_FULL_DEPTH
from traceanalyze.model import DEVICE_FAMILIES
from traceanalyze.renderers.roofline_text import roofline_details, roofline_section
from traceanalyze.renderers.text_table import Shrinkable, fit_lines, terminal_width, text_table
from traceanalyze.renderers.wording import CAUSE_HINTS, CAUSE_WORDS, cpu_name
from traceanalyze.report.model import RankReport, Report, ReportOptions
from traceanalyze.renderers.verdict_text import beyond_gain_text, verdict_lines
from traceanalyze.units import (distinct_short_names, format_duration_ns, format_percent, format_rate, format_si,
                                plural, short_name)


WINDOW_LABELS = {"activity": "device activity span", "steps": "ProfilerStep span"}
UNCUT = 1_000_000  # a width no verdict line reaches


def window_kind(report: RankReport, window: str) -> str:
    """The window this rank was measured in: the ProfilerStep span falls back to the activity
    span for a rank without steps (a note says so)."""
    return "steps" if window == "steps" and report.cpu_steps.height else "activity"


def _idle_line(report: RankReport, window: str) -> list[str]:
    lines = []
    label = WINDOW_LABELS[window_kind(report, window)]
    for row in report.idle_by_device_named.iter_rows(named=True):
        lines.append(
            f"  device {row['device']} ({row['name'] or 'unnamed'}): GPU idle {format_percent(row['idle_fraction'])} "
            f"of a {format_duration_ns(row['window_ns'])} window ({label}) "
            f"(busy {format_duration_ns(row['gpu_busy_ns'])}, idle {format_duration_ns(row['gpu_idle_ns'])}, "
            f"{plural(row['gpu_ops'], 'GPU op')})"
        )
    return lines


def _cause_lines(causes: pl.DataFrame) -> list[str]:
    if causes.is_empty():
        return ["  no idle gaps"]
    lines = ["  idle time by cause:"]
    for cause, duration, count, share in causes.select("cause", "duration_ns", "gaps", "share_of_idle").iter_rows():
        lines.append(f"    {cause:<11}{format_duration_ns(duration):>10}  {format_percent(share):>6} of idle  "
                     f"{plural(count, 'gap'):>10}  — {CAUSE_HINTS[str(cause)]}")
    return lines


def _gap_table(gaps: pl.DataFrame, limit: int, *, with_rank: bool, width: int | None = None) -> str:
    shown_gaps = list(gaps.head(limit).iter_rows(named=True))

    def suffix(g: dict) -> str:
        return f" [{g['sync_call']}]" if g["cause"] == "sync" and g["sync_call"] else ""

    def where(g: dict, room: int) -> str:
        """The CPU op, then the blocking call while the op keeps 12 characters (the cause says sync)."""
        if room - len(suffix(g)) >= 12 or not suffix(g):
            return cpu_name(g["cpu_op"], room - len(suffix(g))) + suffix(g)
        return cpu_name(g["cpu_op"], room)

    def following(g: dict, room: int) -> str:
        return short_name(g["next_gpu_op"], room) if g["next_gpu_op"] else "none (window ends)"

    rows = []
    for i, g in enumerate(shown_gaps, 1):
        row = [i, format_duration_ns(g["duration_ns"]), format_percent(g["share_of_window"]), str(g["cause"]),
               where(g, 36 + len(suffix(g))), cpu_name(g["annotation"], 44),
               "–" if g["step"] is None else g["step"], following(g, 36)]
        rows.append(([g["rank"]] if with_rank else []) + row)
    headers = (["rank"] if with_rank else []) + ["#", "duration", "% of window", "cause", "CPU op at gap start",
                                                 "annotation", "step", "next GPU op"]
    first = 1 if with_rank else 0
    shrink = {first + 4: Shrinkable(lambda room: [where(g, room) for g in shown_gaps]),
              first + 5: Shrinkable(lambda room: [cpu_name(g["annotation"], room) for g in shown_gaps]),
              first + 7: Shrinkable(lambda room: [following(g, room) for g in shown_gaps])}
    return text_table(rows, headers, width=width, shrink=shrink)


STATS = ("mean", "p50", "p90", "p99", "max")
LATENCY_LABELS = {
    "launch_to_start_ns": "launch → start",
    "queue_wait_ns": "  queue wait",
    "launch_overhead_ns": "  launch overhead",
    "launch_cpu_ns": "launch call (CPU)",
    "launch_delay_ns": "launch end → start",
}


def _latency_table(by_group: pl.DataFrame, width: int | None = None) -> str:
    """One block of rows per group of GPU ops (kernels, memcpy/memset, communication)."""
    rows = []
    for r in by_group.iter_rows(named=True):
        label = LATENCY_LABELS[r["metric"]]
        first = r["metric"] == "launch_to_start_ns"
        rows.append([r["group"] if first else "", label, r["count"], *(format_duration_ns(r[k]) for k in STATS)])
    if not rows:
        return "  no launched GPU work"
    return text_table(rows, ["ops", "", "count", *STATS], width=width)


def _kernel_latency_table(by_kernel: pl.DataFrame, width: int | None = None, limit: int = 10) -> list[str]:
    if by_kernel.is_empty():
        return []
    shown_rows = by_kernel.head(limit)
    names = distinct_short_names(shown_rows["name"].to_list(), 44)
    rows = [[name, r["count"], *(format_duration_ns(r[k]) for k in STATS)]
            for name, r in zip(names, shown_rows.iter_rows(named=True))]
    shown = min(limit, by_kernel.height)
    return [f"  launch → start per kernel name (most launched first, {shown} of {plural(by_kernel.height, 'name')}):",
            text_table(rows, ["kernel", "count", *STATS], width=width,
                       shrink={0: Shrinkable(lambda room: distinct_short_names(shown_rows["name"].to_list(), room))})]


def _small_kernel_lines(report: RankReport, min_run: int, width: int | None = None) -> list[str]:
    summary = report.small_kernel_summary
    if summary.kernels_with_launch == 0:
        return []
    lines = [f"  {summary.count} of {plural(summary.kernels_with_launch, 'launched kernel')} run shorter than their "
             f"launch call takes on the CPU ({format_percent(summary.share_of_kernel_time)} of kernel time): "
             "the CPU cannot keep the GPU fed with these."]
    runs = report.small_kernel_runs
    if runs.height:
        lines.append(f"  {plural(runs.height, 'run')} of ≥{min_run} back-to-back small kernels (each starting within "
                     "its launch call's CPU time of the previous one's end) — candidates for CUDA graphs or "
                     "torch.compile:")
        listed = runs.head(5)
        rows = [[r["kernels"], format_duration_ns(r["span_ns"]), format_duration_ns(r["busy_ns"]), r["stream"],
                 short_name(r["first_kernel"], 44)] for r in listed.iter_rows(named=True)]
        lines.append(text_table(rows, ["kernels", "span", "GPU busy", "stream", "first kernel"], width=width, shrink={
            4: Shrinkable(lambda room: [short_name(name, room) for name in listed["first_kernel"].to_list()])}))
    return lines


def _step_table(steps: pl.DataFrame, width: int | None = None) -> str:
    rows = [[r["step"], r["device"], format_duration_ns(r["cpu_duration_ns"]), format_duration_ns(r["window_ns"]),
             format_duration_ns(r["gpu_busy_ns"]), format_percent(r["idle_fraction"]), r["gpu_ops"]]
            for r in steps.iter_rows(named=True)]
    return text_table(rows, ["step", "device", "CPU step", "GPU window", "GPU busy", "idle", "GPU ops"], width=width)


def _launch_headline(report: RankReport) -> list[str]:
    """The launch latency of the first screen: launch overhead, not queue wait (docs/metrics.md)."""
    overhead, queue = report.summary.latency["launch_overhead_ns"], report.summary.latency["queue_wait_ns"]
    if not overhead.count:
        return []
    return [f"  launch overhead p50 {format_duration_ns(overhead.p50)}, p99 {format_duration_ns(overhead.p99)} over "
            f"{plural(overhead.count, 'launch', 'launches')} "
            "(launch → start less the queue wait behind earlier work; "
            f"queue wait p50 {format_duration_ns(queue.p50)}, healthy when the GPU is busy)"]


def _overhead_details(report: RankReport, options: ReportOptions, width: int | None) -> list[str]:
    """The overhead tables behind `--details`: launch latency, small kernels, the launch queue, steps."""
    lines = ["  launch latency (launched GPU ops without clock skew):", _latency_table(report.latency_by_group, width)]
    lines.extend(_kernel_latency_table(report.latency_by_kernel, width))
    lines.extend(_small_kernel_lines(report, options.min_small_kernel_run, width))
    deepest = report.deepest_launch_queue
    if deepest is not None:
        lines.append(f"  launch queue: deepest on stream {deepest['stream']} at {plural(deepest['max_depth'], 'op')}"
                     + (f", full (≥{QUEUE_FULL_DEPTH}) for {format_duration_ns(deepest['time_at_full_ns'])}"
                        if deepest["time_at_full_ns"] else ""))
    if report.steps.height:
        listed, title = report.listed_steps
        lines.append(f"  {title[0].lower() + title[1:]}:")
        lines.append(_step_table(listed, width))
    return lines


def detail_sections(report: RankReport) -> list[str]:
    """What `--details` adds to this rank's section, in words (empty when it adds nothing)."""
    named = []
    if report.has_gpu:
        named.append("launch latency tables")
        if report.small_kernel_summary.kernels_with_launch:
            named.append("small kernels")
        if report.steps.height:
            named.append("per-step idle")
        named.extend(roofline_details(report))
    return named


def _rank_section(report: RankReport, limit: int, options: ReportOptions, width: int | None = None) -> list[str]:
    # "of N" only with the rank from the same distributedInfo: a rank numbered by file order is no rank of that world
    world = f" of {report.world_size}" if report.world_size and report.rank_source == "distributedInfo" else ""
    family = f" ({DEVICE_FAMILIES[report.device_family]})" if report.device_family not in ("none", None) else ""
    lines = [f"rank {report.rank}{world} — {report.source}{family}"]
    for note in report.notes:
        lines.append(f"  note: {note}")
    if report.has_gpu:
        lines.append("")
        lines.append("OVERHEAD — is the GPU waiting on the CPU?")
        lines.extend(_idle_line(report, options.window))
        lines.extend(_cause_lines(report.idle_causes))
        if report.gap_count:
            lines.append(f"  longest idle gaps ({min(limit, report.gap_count)} of {report.gap_count}):")
            lines.append(_gap_table(report.gaps, limit, with_rank=False, width=width))
        lines.extend(_overhead_details(report, options, width) if options.details else _launch_headline(report))
    lines.extend(roofline_section(report, width, details=options.details))
    if not report.has_gpu and report.cpu_steps.height:
        median, least, most = report.cpu_step_spread
        lines.append("")
        lines.append(f"CPU steps: {report.cpu_steps.height}, median {format_duration_ns(median)}, "
                     f"min {format_duration_ns(least)}, max {format_duration_ns(most)}")
    if not report.has_gpu and report.cpu_ops_top.height:
        top = report.cpu_ops_top
        lines.append("")
        lines.append("CPU — busiest ops (inclusive time):")
        lines.append(text_table([[cpu_name(r["name"], 60), r["count"], format_duration_ns(r["total_ns"])]
                                 for r in top.iter_rows(named=True)], ["op", "calls", "total"], width=width,
                                shrink={0: Shrinkable(lambda room: [cpu_name(name, room) for name in top["name"]])}))
    if report.health.height:
        lines.append("")
        lines.append("TRACE HEALTH")
        lines.append(text_table([[r["finding"], r["count"], r["affects"]] for r in report.health.iter_rows(named=True)],
                                ["finding", "count", "makes unreliable"], width=width))
    return lines


def _ranks_overview(report: Report, width: int | None = None) -> list[str]:
    rows = []
    for r in report.ranks:
        window = r.summary.window
        rows.append([r.rank, format_duration_ns(window.window_ns), format_percent(window.idle_fraction),
                     format_duration_ns(r.summary.latency["launch_overhead_ns"].p50), r.gap_count])
    return ["RANKS", text_table(rows, ["rank", "GPU window", "idle", "launch overhead p50", "gaps"], width=width)]


def findings_section(report: Report, width: int, ranks: tuple[int, ...] | None = None,
                     whole: tuple[tuple[int, str], ...] = ()) -> list[str]:
    """Every finding in full, wrapped to `width` (when `ranks` is given: the job's and those of
    `ranks`, the ranks whose sections are shown): the details behind the verdict. `whole`: the
    `(rank, id)` of findings the verdict above already shows uncut, not repeated."""
    found, others = report.listed_findings(ranks, whole)
    if not found.height and not others:
        return []
    scope = f": the job's and rank {', '.join(map(str, ranks or ()))}'s" if others else ""
    above = f", after the {len(whole)} in the verdict above" if whole else ""
    lines = [f"FINDINGS (largest expected saving first{above}; docs/findings.md){scope}"]
    for number, row in enumerate(found.iter_rows(named=True), len(whole) + 1):
        gain = "no time estimate" if row["gain_ns"] is None else f"gain ≤ {format_duration_ns(row['gain_ns'])}"
        if row.get("saving_ns") is not None:
            gain += f", predicted saving {format_duration_ns(row['saving_ns'])}"
            gain += beyond_gain_text(row["gain_ns"], row["saving_ns"], row["bound_ns"])
        where = f" rank {row['rank']}" if len(report.ranks) > 1 else ""
        head = (f"{number}. [{row['id']}]{where} {row['title']} — {gain}, {row['regime']}, "
                f"confidence {row['confidence']}")
        lines += textwrap.wrap(head, width, subsequent_indent="   ")
        lines += textwrap.wrap(f"evidence: {row['evidence']}", width, initial_indent="   ", subsequent_indent="     ")
        lines += textwrap.wrap(f"action: {row['action']}", width, initial_indent="   ", subsequent_indent="     ")
    if others:
        lines.append(f"{plural(others, 'finding')} of the other ranks: --details shows them")
    return lines + [""]


def predicted_line(replay: pl.DataFrame) -> list[str]:
    """The replay's prediction for the top findings' actions together (docs/whatif.md), one line:
    `predicted: 54 ms → 21 ms per step (−61%)` (the window when there are no steps); none when no
    finding's action could be modelled."""
    if not replay.height or replay["predicted_window_ns"][0] is None:
        return []
    row = replay.row(0, named=True)
    before, after, what = row["step_ns"], row["predicted_step_ns"], "per step"
    if before is None or after is None:
        before, after, what = row["measured_ns"], row["predicted_window_ns"], "window"
    change = (after - before) / before if before else 0.0
    applied = ", ".join(row["predicted_ids"])
    predicted = f"predicted: {format_duration_ns(before)} → {format_duration_ns(after)} {what} ({change:+.0%}"
    return [predicted.replace("-", "−")
            + f") with {applied} (docs/whatif.md)"]


def render_terminal(report: Report, *, width: int | None = None, details: bool | None = None) -> str:
    """The verdict (at most 15 lines), every finding, then the key sections (with `details`, or
    the report's `options.details`: every table, every rank), each line at most `width` columns
    (default: this terminal's width, `terminal_width`)."""
    width = width or terminal_width()
    details = report.options.details if details is None else details
    options = replace(report.options, details=details)
    limit = options.max_gaps
    shown = report.ranks if details or len(report.ranks) == 1 else tuple(
        r for r in report.ranks if r.rank in report.detail_ranks)
    verdict = report.verdict()
    opening = verdict_lines(verdict, width)
    # findings the verdict shows uncut (output to a file or a log: lines kept whole) are not repeated below
    whole = tuple((f.rank, f.id) for f in verdict.top) if opening == verdict_lines(verdict, UNCUT) else ()
    said = report.notes  # the job's notes (missing, skipped or renumbered ranks): before any claim
    lines = [*(f"note: {note}" for note in said), *([""] if said else [])]
    lines += [*opening, *predicted_line(report.replay), ""]
    lines += [f"traceanalyze report — {report.source}", ""]
    lines += findings_section(report, width, tuple(r.rank for r in shown), whole)
    if len(report.ranks) > 1:
        lines.extend(job_section(report, width))
        lines.append("")
        lines.extend(_ranks_overview(report, width))
        lines.append("")
        if not details:
            lines.extend([f"details of rank {', '.join(str(r.rank) for r in shown)} only (--details shows every rank)",
                          ""])
    for rank_report in shown:
        lines.extend(_rank_section(rank_report, limit if len(report.ranks) == 1 else min(limit, 5), options, width))
        lines.append("")
    more = list(dict.fromkeys(name for r in shown for name in detail_sections(r))) if not details else []
    if more:
        lines.append(f"--details adds: {', '.join(more)}")
    return "\n".join(fit_lines(lines, width)).rstrip() + "\n"


# -- the job's screen (a folder of ranks) ------------------------------------------------------------------
# The terminal's job-level screen for a folder of ranks: which rank holds the job back, how much
# time the others lose to it, why it is slow, then ranks × steps, exposed communication and the
# collectives waited on the most. Reads `Report.job` (analysis.job); computes nothing.
def job_section(report: Report, width: int | None = None) -> list[str]:
    job = report.job
    lines = ["JOB — which rank holds the others back?"]
    straggler = report.straggler
    if straggler is None:
        lines.append("  no rank waited for another in a matched collective"
                     + ("" if job.collectives.height else " (no collective matched across ranks)"))
    else:
        lines.append(f"  rank {straggler.rank} is the straggler: the other ranks waited "
                     f"{format_duration_ns(straggler.caused_wait_ns)} "
                     f"for it in {plural(straggler.collectives_last, 'collective')} it arrived last at")
        for row in straggler.steps.iter_rows(named=True):
            why = CAUSE_WORDS.get(row["cause"] or "", "no idle gaps in that step")
            lines.append(f"  step {row['step']}: it arrived {format_duration_ns(row['behind_ns'])} after the others "
                         f"(cost them {format_duration_ns(row['others_wait_ns'])}); its largest idle: "
                         f"{row['cause'] or '–'} {format_duration_ns(row['cause_ns'])} — {why}")
        if straggler.others.height:
            lines.append("  others who made ranks wait: " + ", ".join(
                f"rank {r} {format_duration_ns(ns)}" for r, ns in straggler.others.iter_rows()))
    lines.extend(_ranks_table(report, width))
    lines.extend(_collectives_table(report, width))
    lines.extend(_clock_lines(report))
    return lines


def _ranks_table(report: Report, width: int | None) -> list[str]:
    job = report.job
    caused = dict(job.waits_caused.select("rank", "caused_wait_ns").iter_rows())
    overlap = {r["rank"]: r for r in job.overlap.iter_rows(named=True)}
    rows = []
    for r in report.ranks:
        count, medians = report.job_step_medians(r.rank)
        window = r.summary.window
        exposed = overlap.get(r.rank)
        rows.append([
            r.rank, count,
            *(format_duration_ns(medians[k]) if count else "–"
              for k in ("step_ns", "compute_ns", "comm_ns", "idle_ns", "wait_ns")),
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
    listed = report.listed_collectives.most_waited
    rows = [[r["process_group"], r["seq"], r["collective"], r["ranks"],
             format_si(r["message_bytes"], "B") if r["message_bytes"] is not None else "–", r["last_rank"],
             format_duration_ns(r["max_wait_ns"]), format_duration_ns(r["wait_ns"]),
             format_duration_ns(r["transfer_ns"]),
             format_rate(r["busbw_bytes_per_s"], "B/s"), format_percent(r["link_fraction"])]
            for r in listed.iter_rows(named=True)]
    return [f"  collectives waited on the most ({len(rows)} of {job.collectives.height} matched):",
            text_table(rows, ["group", "#", "collective", "ranks", "size", "last rank", "max wait", "total wait",
                              "transfer", "bus bw", "of link"], width=width, keys=2,
                       shrink={0: Shrinkable(lambda room: [_cut(str(r["process_group"]), room)
                                                           for r in listed.iter_rows(named=True)],
                                             min_width=8)})]


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _clock_lines(report: Report) -> list[str]:
    offsets = report.job.clock_offsets
    if offsets.height < 2:
        return []
    worst = report.job_clock_residual_ns
    parts = ", ".join(f"rank {r} {o / 1e3:+.1f} µs" for r, o in offsets.select("rank", "offset_ns").iter_rows()
                      if r != offsets["reference_rank"][0])
    return [f"  clocks aligned to rank {offsets['reference_rank'][0]} from the collectives' ends: {parts} "
            f"(residuals ≤ {format_duration_ns(worst)})"]
