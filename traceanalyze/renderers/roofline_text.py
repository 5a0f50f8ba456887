"""The terminal's roofline section: regime bar and top kernels against the roof; with `--details`
also the top ops, unmodeled kernels by reason and fusion opportunities."""

from __future__ import annotations

import polars as pl

from traceanalyze.analysis.roofline import ON_ROOFLINE
from traceanalyze.report.model import RankReport
from traceanalyze.renderers.text_table import Shrinkable, text_table
from traceanalyze.renderers.wording import coverage_sentence, peak_figures, roof_fraction_cell, roof_footnotes
from traceanalyze.units import (
    bar, distinct_short_names, format_count, format_duration_ns, format_percent, format_rate, short_name,
)


def peaks_line(report: RankReport) -> list[str]:
    lines = []
    for choice in report.peaks:
        peaks = choice.peaks
        if peaks is None:
            continue
        lines.append(f"  device {choice.device}: {peaks.display_name} ({choice.source}) — {peak_figures(peaks)}")
    return lines


def regime_lines(report: RankReport) -> list[str]:
    attribution = report.summary.attribution
    if attribution.shares is None or attribution.regime_ns is None:
        return []
    devices = report.summary.window.device_windows
    together = f" ({devices} device windows together)" if devices > 1 else ""
    lines = [f"WHERE THE TIME GOES — {format_duration_ns(attribution.window_ns)} of GPU window{together}"]
    for key, share in attribution.shares.items():
        ns = attribution.regime_ns[key]
        lines.append(f"  {key:<14}{bar(share)} {format_percent(share):>6}  {format_duration_ns(ns)}")
    sentence = coverage_sentence(report)
    if sentence:
        lines.append(f"  {sentence}")
    lines.extend(peaks_line(report))
    return lines


def _roofline_rows(table: pl.DataFrame, names: list[str], total: int) -> list[list[object]]:
    rows = []
    for name, r in zip(names, table.iter_rows(named=True)):
        on_roofline = r["bound"] in ON_ROOFLINE
        rows.append([
            name, r["count"], format_duration_ns(r["total_ns"]), format_percent(r["total_ns"] / total),
            f"{r['intensity']:.3g}" if on_roofline and r["intensity"] is not None else "–",
            format_rate(r["achieved_flops_per_s"], "FLOP/s") if on_roofline else "–",
            format_rate(r["achieved_bytes_per_s"], "B/s") if on_roofline or r["bound"] == "memcpy" else "–",
            roof_fraction_cell(r["pct_of_roof"], str(r["bound"])), r["roof"] or "–", str(r["bound"]),
        ])
    return rows


COLUMNS = ["calls", "total", "share", "FLOP/B", "FLOP/s", "bytes/s", "% of roof", "roof", "bound"]


def kernel_table(report: RankReport, width: int | None = None, limit: int = 12) -> list[str]:
    kernels = report.kernels
    if kernels.is_empty():
        return []
    shown = kernels.head(limit)
    names = distinct_short_names(shown["name"].to_list(), 40)
    ops = [short_name(op, 24) for op in shown["op"].to_list()]
    rows = [[name, op, *rest[1:]]
            for name, op, rest in zip(names, ops, _roofline_rows(shown, names, report.kernel_time_ns))]
    shrink = {0: Shrinkable(lambda room: distinct_short_names(shown["name"].to_list(), room)),
              1: Shrinkable(lambda room: [short_name(op, room) for op in shown["op"].to_list()], min_width=12)}
    return ["ROOFLINE — kernels by total time",
            text_table(rows, ["kernel", "op", *COLUMNS], width=width, shrink=shrink),
            *roof_footnotes(report.roof_notes(limit))]


def op_table(report: RankReport, width: int | None = None, limit: int = 8) -> list[str]:
    ops = report.ops
    if ops.is_empty():
        return []
    shown = ops.head(limit)
    names = [short_name(op or "(no op)", 40) for op in shown["op"].to_list()]
    rows = _roofline_rows(shown, names, report.op_time_ns)
    shrink = {0: Shrinkable(lambda room: [short_name(op or "(no op)", room) for op in shown["op"].to_list()])}
    return ["  top ops by kernel time (their kernels together):",
            text_table(rows, ["op", *COLUMNS], width=width, shrink=shrink)]


def unmodeled_lines(report: RankReport) -> list[str]:
    reasons = report.unmodeled.select("unmodeled_reason", "count", "duration_ns")
    if reasons.is_empty():
        return []
    lines = ["  unmodeled kernels, by reason:"]
    for reason, count, ns in reasons.head(6).iter_rows():
        lines.append(f"    {format_duration_ns(ns):>9}  {count:>6} kernel{'s' if count != 1 else ' '}  {reason}")
    return lines


def fusion_lines(report: RankReport, width: int | None = None, limit: int = 6) -> list[str]:
    fusion = report.fusion
    if fusion.is_empty():
        return []
    listed = fusion.head(limit)
    rows = [[short_name(r["ops"], 56), short_name(r["annotation"], 24), r["occurrences"], r["kernels"],
             format_duration_ns(r["duration_ns"]), format_count(r["bytes_saved"], "B"),
             format_duration_ns(r["time_saved_ns"])]
            for r in listed.iter_rows(named=True)]
    shrink = {0: Shrinkable(lambda room: [short_name(ops, room) for ops in listed["ops"].to_list()]),
              1: Shrinkable(lambda room: [short_name(name, room) for name in listed["annotation"].to_list()],
                            min_width=12)}
    return ["FUSION OPPORTUNITIES — runs of bandwidth-bound kernels one fused kernel would replace",
            text_table(rows, ["ops", "module", "runs", "kernels", "time", "bytes saved", "time saved"], width=width,
                       shrink=shrink)]


def roofline_section(report: RankReport, width: int | None = None, *, details: bool = False) -> list[str]:
    """Where the time goes and the top kernels; with `details`, the top ops, the unmodeled kernels
    by reason and the fusion opportunities too (the advice is in the findings)."""
    if not report.has_gpu:
        return []
    blocks = [regime_lines(report), kernel_table(report, width)]
    if details:
        blocks[1] = blocks[1] + op_table(report, width) + unmodeled_lines(report)
        blocks.append(fusion_lines(report, width))
    lines: list[str] = []
    for block in blocks:
        if block:
            lines.append("")
            lines.extend(block)
    return lines


def roofline_details(report: RankReport) -> list[str]:
    """What `details` adds to `roofline_section`, in words (only the parts this rank has)."""
    if not report.has_gpu:
        return []
    parts = {"top ops": report.ops.height > 0,
             "unmodeled kernels by reason": report.has_unmodeled_kernels,
             "fusion opportunities": report.fusion.height > 0}
    return [name for name, present in parts.items() if present]
