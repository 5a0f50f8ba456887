"""The terminal report: plain text with tabulate tables, widest-impact findings first."""

from __future__ import annotations

import polars as pl
from tabulate import tabulate

from traceanalyze.report.model import RankReport, Report
from traceanalyze.report.roofline_text import roofline_section
from traceanalyze.report.summary import rank_totals
from traceanalyze.report.units import format_duration_ns, format_percent, short_name

CAUSE_HINTS = {
    "host": "the CPU was late to launch the next work (Python / framework overhead)",
    "sync": "the CPU waited on the GPU (synchronize, .item(), blocking copy) and the queue drained",
    "launch": "work was queued but started late (launch latency between kernels)",
    "other": "no launch recorded for the next work",
}


def _table(rows, headers, align=None) -> str:
    text = tabulate(rows, headers=headers, tablefmt="simple", colalign=align, disable_numparse=True)
    return "\n".join("  " + line for line in text.splitlines())


def _idle_line(report: RankReport) -> list[str]:
    lines = []
    for row in report.idle.join(report.devices.select("rank", "device", "name"), on=["rank", "device"], how="left").iter_rows(named=True):
        lines.append(
            f"  device {row['device']} ({row['name'] or 'unnamed'}): GPU idle {format_percent(row['idle_fraction'])} "
            f"of a {format_duration_ns(row['window_ns'])} window "
            f"(busy {format_duration_ns(row['busy_ns'])}, idle {format_duration_ns(row['idle_ns'])}, {row['gpu_ops']} GPU ops)"
        )
    return lines


def _cause_lines(gaps: pl.DataFrame) -> list[str]:
    if gaps.is_empty():
        return ["  no idle gaps"]
    total = gaps["duration_ns"].sum()
    by_cause = gaps.group_by("cause").agg(pl.col("duration_ns").sum(), pl.len()).sort("duration_ns", descending=True)
    lines = ["  idle time by cause:"]
    for cause, duration, count in by_cause.iter_rows():
        lines.append(f"    {cause:<7}{format_duration_ns(duration):>10}  {format_percent(duration / total):>6}  "
                     f"{count:>6} gaps  — {CAUSE_HINTS[str(cause)]}")
    return lines


def _gap_table(gaps: pl.DataFrame, limit: int, *, with_rank: bool) -> str:
    rows = []
    for i, g in enumerate(gaps.head(limit).iter_rows(named=True), 1):
        where = g["cpu_op"] or g["annotation"] or "–"
        if g["cause"] == "sync" and g["sync_call"]:
            where = f"{where} [{g['sync_call']}]"
        row = [i, format_duration_ns(g["duration_ns"]), format_percent(g["share_of_window"]), str(g["cause"]),
               short_name(where, 40), "–" if g["step"] is None else g["step"], short_name(g["next_gpu_op"], 36)]
        rows.append(([g["rank"]] if with_rank else []) + row)
    headers = (["rank"] if with_rank else []) + ["#", "duration", "share", "cause", "CPU op at gap start", "step", "next GPU op"]
    return _table(rows, headers)


def _latency_table(stats: pl.DataFrame) -> str:
    labels = {
        "launch_to_start_ns": "launch → start",
        "queue_wait_ns": "  queue wait",
        "launch_overhead_ns": "  launch overhead",
        "launch_cpu_ns": "launch call (CPU)",
        "launch_delay_ns": "launch end → start",
    }
    rows = []
    for r in stats.iter_rows(named=True):
        if not r["count"]:
            continue
        rows.append([labels[r["metric"]], r["count"], *(format_duration_ns(r[k]) for k in ("mean", "p50", "p90", "p99", "max"))])
    if not rows:
        return "  no launched GPU work"
    return _table(rows, ["", "count", "mean", "p50", "p90", "p99", "max"])


def _small_kernel_lines(report: RankReport) -> list[str]:
    kernels = report.small_kernels
    if kernels.is_empty():
        return []
    small = kernels.filter(pl.col("small"))
    share = small["duration_ns"].sum() / kernels["duration_ns"].sum() if kernels["duration_ns"].sum() else 0
    lines = [f"  {small.height} of {kernels.height} kernels run shorter than their launch call takes on the CPU "
             f"({format_percent(share)} of kernel time): the CPU cannot keep the GPU fed with these."]
    runs = report.small_kernel_runs
    if runs.height:
        lines.append(f"  {runs.height} run(s) of ≥{8} back-to-back small kernels — candidates for CUDA graphs or torch.compile:")
        rows = [[r["kernels"], format_duration_ns(r["span_ns"]), format_duration_ns(r["busy_ns"]), r["stream"],
                 short_name(r["first_kernel"], 44)] for r in runs.head(5).iter_rows(named=True)]
        lines.append(_table(rows, ["kernels", "span", "GPU busy", "stream", "first kernel"]))
    return lines


def _step_table(steps: pl.DataFrame) -> str:
    rows = [[r["step"], r["device"], format_duration_ns(r["cpu_duration_ns"]), format_duration_ns(r["window_ns"]),
             format_duration_ns(r["busy_ns"]), format_percent(r["idle_fraction"]), r["gpu_ops"]]
            for r in steps.iter_rows(named=True)]
    return _table(rows, ["step", "device", "CPU step", "GPU window", "GPU busy", "idle", "GPU ops"])


def _rank_section(report: RankReport, limit: int) -> list[str]:
    lines = [f"rank {report.rank}" + (f" of {report.world_size}" if report.world_size else "") + f" — {report.source}"]
    for note in report.notes:
        lines.append(f"  note: {note}")
    if report.has_gpu:
        lines.append("")
        lines.append("OVERHEAD — is the GPU waiting on the CPU?")
        lines.extend(_idle_line(report))
        lines.extend(_cause_lines(report.gaps))
        if report.gaps.height:
            lines.append(f"  longest idle gaps ({min(limit, report.gaps.height)} of {report.gaps.height}):")
            lines.append(_gap_table(report.gaps, limit, with_rank=False))
        lines.append("  kernel launch latency:")
        lines.append(_latency_table(report.latency_stats))
        lines.extend(_small_kernel_lines(report))
        queue = report.queue
        if queue.height:
            deepest = queue.sort("max_depth", descending=True).row(0, named=True)
            lines.append(f"  launch queue: deepest on stream {deepest['stream']} at {deepest['max_depth']} ops"
                         + (f", full (≥1024) for {format_duration_ns(deepest['time_at_full_ns'])}" if deepest["time_at_full_ns"] else ""))
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
        lines.append(_table([[short_name(r["name"], 60), r["count"], format_duration_ns(r["total_ns"])]
                             for r in report.cpu_ops_top.iter_rows(named=True)], ["op", "calls", "total"]))
    if report.health.height:
        lines.append("")
        lines.append("TRACE HEALTH")
        lines.append(_table([[r["finding"], r["count"], r["affects"]] for r in report.health.iter_rows(named=True)],
                            ["finding", "count", "makes unreliable"]))
    return lines


def _ranks_overview(report: Report) -> list[str]:
    rows = []
    for r in report.ranks:
        totals = rank_totals(r)
        rows.append([r.rank, format_duration_ns(totals.window_ns), format_percent(totals.idle_fraction),
                     format_duration_ns(totals.launch_p50_ns), r.gaps.height])
    return ["RANKS", _table(rows, ["rank", "GPU window", "idle", "launch→start p50", "gaps"])]


def render_terminal(report: Report) -> str:
    limit = report.options.max_gaps
    lines = [f"traceanalyze report — {report.source}", ""]
    if len(report.ranks) > 1:
        lines.extend(_ranks_overview(report))
        lines.append("")
    for rank_report in report.ranks:
        lines.extend(_rank_section(rank_report, limit if len(report.ranks) == 1 else min(limit, 5)))
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
