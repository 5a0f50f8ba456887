"""The terminal report: plain text with tabulate tables, widest-impact findings first."""

from __future__ import annotations

import shutil
import textwrap

import polars as pl

from traceanalyze.analysis.launch import QUEUE_FULL_DEPTH
from traceanalyze.model import DEVICE_FAMILIES
from traceanalyze.report.notes import missing_ranks_note
from traceanalyze.report.model import RankReport, Report, ReportOptions
from traceanalyze.report.roofline_text import roofline_section
from traceanalyze.report.text_table import text_table
from traceanalyze.report.wording import CAUSE_HINTS, cpu_name
from traceanalyze.report.terminal_job import detail_ranks, job_section
from traceanalyze.report.verdict import DEFAULT_WIDTH, verdict_lines
from traceanalyze.report.units import distinct_short_names, format_duration_ns, format_percent, plural, short_name

WINDOW_LABELS = {"activity": "device activity span", "steps": "ProfilerStep span"}


def window_kind(report: RankReport, window: str) -> str:
    """The window this rank was measured in: the ProfilerStep span falls back to the activity
    span for a rank without steps (a note says so)."""
    return "steps" if window == "steps" and report.cpu_steps.height else "activity"


def _idle_line(report: RankReport, window: str) -> list[str]:
    lines = []
    label = WINDOW_LABELS[window_kind(report, window)]
    for row in report.idle.join(report.devices.select("rank", "device", "name"), on=["rank", "device"], how="left").iter_rows(named=True):
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


def _gap_table(gaps: pl.DataFrame, limit: int, *, with_rank: bool) -> str:
    rows = []
    for i, g in enumerate(gaps.head(limit).iter_rows(named=True), 1):
        where = cpu_name(g["cpu_op"], 36)
        if g["cause"] == "sync" and g["sync_call"]:
            where = f"{where} [{g['sync_call']}]"
        following = short_name(g["next_gpu_op"], 36) if g["next_gpu_op"] else "none (window ends)"
        row = [i, format_duration_ns(g["duration_ns"]), format_percent(g["share_of_window"]), str(g["cause"]),
               where, cpu_name(g["annotation"], 44), "–" if g["step"] is None else g["step"], following]
        rows.append(([g["rank"]] if with_rank else []) + row)
    headers = (["rank"] if with_rank else []) + ["#", "duration", "% of window", "cause", "CPU op at gap start",
                                                 "annotation", "step", "next GPU op"]
    return text_table(rows, headers)


STATS = ("mean", "p50", "p90", "p99", "max")
LATENCY_LABELS = {
    "launch_to_start_ns": "launch → start",
    "queue_wait_ns": "  queue wait",
    "launch_overhead_ns": "  launch overhead",
    "launch_cpu_ns": "launch call (CPU)",
    "launch_delay_ns": "launch end → start",
}


def _latency_table(by_group: pl.DataFrame) -> str:
    """One block of rows per group of GPU ops (kernels, memcpy/memset, communication)."""
    rows = []
    for r in by_group.iter_rows(named=True):
        label = LATENCY_LABELS[r["metric"]]
        first = r["metric"] == "launch_to_start_ns"
        rows.append([r["group"] if first else "", label, r["count"], *(format_duration_ns(r[k]) for k in STATS)])
    if not rows:
        return "  no launched GPU work"
    return text_table(rows, ["ops", "", "count", *STATS])


def _kernel_latency_table(by_kernel: pl.DataFrame, limit: int = 10) -> list[str]:
    if by_kernel.is_empty():
        return []
    shown_rows = by_kernel.head(limit)
    names = distinct_short_names(shown_rows["name"].to_list(), 44)
    rows = [[name, r["count"], *(format_duration_ns(r[k]) for k in STATS)]
            for name, r in zip(names, shown_rows.iter_rows(named=True))]
    shown = min(limit, by_kernel.height)
    return [f"  launch → start per kernel name (most launched first, {shown} of {plural(by_kernel.height, 'name')}):",
            text_table(rows, ["kernel", "count", *STATS])]


def _small_kernel_lines(report: RankReport, min_run: int) -> list[str]:
    summary = report.small_kernel_summary
    if summary.kernels_with_launch == 0:
        return []
    lines = [f"  {summary.count} of {plural(summary.kernels_with_launch, 'launched kernel')} run shorter than their launch "
             f"call takes on the CPU ({format_percent(summary.share_of_kernel_time)} of kernel time): the CPU cannot keep the "
             "GPU fed with these."]
    runs = report.small_kernel_runs
    if runs.height:
        lines.append(f"  {plural(runs.height, 'run')} of ≥{min_run} back-to-back small kernels (each starting within its "
                     "launch call's CPU time of the previous one's end) — candidates for CUDA graphs or torch.compile:")
        rows = [[r["kernels"], format_duration_ns(r["span_ns"]), format_duration_ns(r["busy_ns"]), r["stream"],
                 short_name(r["first_kernel"], 44)] for r in runs.head(5).iter_rows(named=True)]
        lines.append(text_table(rows, ["kernels", "span", "GPU busy", "stream", "first kernel"]))
    return lines


def _step_table(steps: pl.DataFrame) -> str:
    rows = [[r["step"], r["device"], format_duration_ns(r["cpu_duration_ns"]), format_duration_ns(r["window_ns"]),
             format_duration_ns(r["gpu_busy_ns"]), format_percent(r["idle_fraction"]), r["gpu_ops"]]
            for r in steps.iter_rows(named=True)]
    return text_table(rows, ["step", "device", "CPU step", "GPU window", "GPU busy", "idle", "GPU ops"])


def _rank_section(report: RankReport, limit: int, options: ReportOptions) -> list[str]:
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
        if report.gaps.height:
            lines.append(f"  longest idle gaps ({min(limit, report.gaps.height)} of {report.gaps.height}):")
            lines.append(_gap_table(report.gaps, limit, with_rank=False))
        lines.append("  launch latency (launched GPU ops without clock skew):")
        lines.append(_latency_table(report.latency_by_group))
        lines.extend(_kernel_latency_table(report.latency_by_kernel))
        lines.extend(_small_kernel_lines(report, options.min_small_kernel_run))
        queue = report.queue
        if queue.height:
            deepest = queue.sort("max_depth", descending=True).row(0, named=True)
            lines.append(f"  launch queue: deepest on stream {deepest['stream']} at {plural(deepest['max_depth'], 'op')}"
                         + (f", full (≥{QUEUE_FULL_DEPTH}) for {format_duration_ns(deepest['time_at_full_ns'])}"
                            if deepest["time_at_full_ns"] else ""))
        if report.steps.height:
            lines.append("  per step:")
            lines.append(_step_table(report.steps))
    lines.extend(roofline_section(report))
    if not report.has_gpu and report.cpu_steps.height:
        durations = report.cpu_steps["duration_ns"]
        lines.append("")
        lines.append(f"CPU steps: {report.cpu_steps.height}, median {format_duration_ns(durations.median())}, "
                     f"min {format_duration_ns(durations.min())}, max {format_duration_ns(durations.max())}")
    if not report.has_gpu and report.cpu_ops_top.height:
        lines.append("")
        lines.append("CPU — busiest ops (inclusive time):")
        lines.append(text_table([[cpu_name(r["name"], 60), r["count"], format_duration_ns(r["total_ns"])]
                             for r in report.cpu_ops_top.iter_rows(named=True)], ["op", "calls", "total"]))
    if report.health.height:
        lines.append("")
        lines.append("TRACE HEALTH")
        lines.append(text_table([[r["finding"], r["count"], r["affects"]] for r in report.health.iter_rows(named=True)],
                            ["finding", "count", "makes unreliable"]))
    return lines


def _ranks_overview(report: Report) -> list[str]:
    rows = []
    for r in report.ranks:
        window = r.summary.window
        rows.append([r.rank, format_duration_ns(window.window_ns), format_percent(window.idle_fraction),
                     format_duration_ns(r.summary.latency["launch_overhead_ns"].p50), r.gaps.height])
    return ["RANKS", text_table(rows, ["rank", "GPU window", "idle", "launch overhead p50", "gaps"])]


def terminal_width() -> int:
    """The terminal's width in columns (DEFAULT_WIDTH when it is not a terminal)."""
    return shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns


def findings_section(report: Report, width: int) -> list[str]:
    """Every finding in full, wrapped to `width`: the details behind the verdict."""
    found = report.all_findings()
    if not found.height:
        return []
    lines = ["FINDINGS (largest gain first; docs/findings.md)"]
    for number, row in enumerate(found.iter_rows(named=True), 1):
        gain = "no time estimate" if row["gain_ns"] is None else f"gain ≤ {format_duration_ns(row['gain_ns'])}"
        where = f" rank {row['rank']}" if len(report.ranks) > 1 else ""
        head = f"{number}. [{row['id']}]{where} {row['title']} — {gain}, {row['regime']}, confidence {row['confidence']}"
        lines += textwrap.wrap(head, width, subsequent_indent="   ")
        lines += textwrap.wrap(f"evidence: {row['evidence']}", width, initial_indent="   ", subsequent_indent="     ")
        lines += textwrap.wrap(f"action: {row['action']}", width, initial_indent="   ", subsequent_indent="     ")
    return lines + [""]


def render_terminal(report: Report, *, width: int | None = None) -> str:
    """The verdict (at most 15 lines), then every finding, then the details, for a terminal of
    `width` columns (default: this terminal's width)."""
    width = width or terminal_width()
    limit = report.options.max_gaps
    lines = [*verdict_lines(report.verdict(), width), "", f"traceanalyze report — {report.source}", ""]
    lines += findings_section(report, width)
    missing = missing_ranks_note([r.rank for r in report.ranks], [r.world_size for r in report.ranks])
    if missing:
        lines.extend([f"note: {missing}", ""])
    shown = report.ranks
    if len(report.ranks) > 1:
        lines.extend(job_section(report))
        lines.append("")
        lines.extend(_ranks_overview(report))
        lines.append("")
        if not report.options.details:
            worst = detail_ranks(report)
            shown = tuple(r for r in report.ranks if r.rank in worst)
            lines.extend([f"details of rank {', '.join(map(str, worst))} only (--details shows every rank)", ""])
    for rank_report in shown:
        lines.extend(_rank_section(rank_report, limit if len(report.ranks) == 1 else min(limit, 5), report.options))
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
