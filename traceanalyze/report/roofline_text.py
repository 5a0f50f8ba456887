"""The terminal's roofline section: regime bar, top kernels against the roof, fusion
opportunities, recoverable time and advice."""

from __future__ import annotations

import polars as pl
from tabulate import tabulate

from traceanalyze.analysis.attribution import ADVICE, ATTRIBUTION_KEYS
from traceanalyze.report.model import RankReport
from traceanalyze.report.summary import peak_figures
from traceanalyze.report.units import bar, format_count, format_duration_ns, format_percent, format_rate, short_name


def _table(rows, headers) -> str:
    text = tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True)
    return "\n".join("  " + line for line in text.splitlines())


def peaks_line(report: RankReport) -> list[str]:
    lines = []
    for choice in report.peaks:
        peaks = choice.peaks
        if peaks is None:
            continue
        lines.append(f"  device {choice.device}: {peaks.display_name} ({choice.source}) — {peak_figures(peaks)}")
    return lines


def regime_lines(report: RankReport) -> list[str]:
    frame = report.attribution
    if frame.is_empty():
        return []
    window = frame["window_ns"].sum()
    lines = [f"WHERE THE TIME GOES — {format_duration_ns(window)} of GPU window"]
    for key in ATTRIBUTION_KEYS:
        ns = frame[f"{key}_ns"].sum()
        share = ns / window if window else 0.0
        lines.append(f"  {key:<14}{bar(share)} {format_percent(share):>6}  {format_duration_ns(ns)}")
    ops = report.roofline
    total = ops["duration_ns"].sum()
    if total:
        covered = ops.filter(pl.col("modelled"))["duration_ns"].sum() / total
        lines.append(f"  model coverage: {format_percent(covered)} of GPU op time has a FLOP/byte model (copies and collectives included)")
    lines.extend(peaks_line(report))
    return lines


def kernel_table(report: RankReport, limit: int = 12) -> list[str]:
    kernels = report.kernels
    if kernels.is_empty():
        return []
    total = kernels["total_ns"].sum()
    rows = []
    for r in kernels.head(limit).iter_rows(named=True):
        modelled = r["regime"] in ("compute", "bandwidth")
        rows.append([
            short_name(r["name"], 40), short_name(r["op_name"], 24), r["count"], format_duration_ns(r["total_ns"]),
            format_percent(r["total_ns"] / total),
            f"{r['intensity']:.3g}" if modelled and r["intensity"] is not None else "–",
            format_rate(r["achieved_flops_per_s"], "FLOP/s") if modelled else "–",
            format_rate(r["achieved_bytes_per_s"], "B/s") if modelled or r["regime"] == "memcpy" else "–",
            format_percent(r["pct_of_peak"]), str(r["regime"]),
        ])
    return ["ROOFLINE — kernels by total time",
            _table(rows, ["kernel", "op", "calls", "total", "share", "FLOP/B", "FLOP/s", "bytes/s", "% of roof", "bound"])]


def unmodeled_lines(report: RankReport) -> list[str]:
    unmodeled = report.roofline.filter(pl.col("regime") == "unmodeled")
    if unmodeled.is_empty():
        return []
    reasons = unmodeled.group_by("unmodeled_reason").agg(pl.len(), pl.col("duration_ns").sum()).sort("duration_ns", descending=True)
    lines = ["  unmodeled kernels, by reason:"]
    for reason, count, ns in reasons.head(6).iter_rows():
        lines.append(f"    {format_duration_ns(ns):>9}  {count:>6} kernels  {reason}")
    return lines


def fusion_lines(report: RankReport, limit: int = 6) -> list[str]:
    fusion = report.fusion
    if fusion.is_empty():
        return []
    rows = [[short_name(r["ops"], 56), short_name(r["annotation"], 24), r["occurrences"], r["kernels"],
             format_duration_ns(r["duration_ns"]), format_count(r["bytes_saved"], "B"), format_duration_ns(r["time_saved_ns"])]
            for r in fusion.head(limit).iter_rows(named=True)]
    return ["FUSION OPPORTUNITIES — runs of bandwidth-bound kernels one fused kernel would replace",
            _table(rows, ["ops", "module", "runs", "kernels", "time", "bytes saved", "time saved"])]


def advice_lines(report: RankReport) -> list[str]:
    if report.recoverable.is_empty() or report.attribution.is_empty():
        return []
    frame = report.attribution
    window = frame["window_ns"].sum()
    shares = {key: frame[f"{key}_ns"].sum() / window for key in ATTRIBUTION_KEYS} if window else {}
    lines = ["WHAT TO DO — biggest regime first"]
    recover = dict(report.recoverable.select("regime", "recoverable_ns").iter_rows())
    for key, share in sorted(shares.items(), key=lambda kv: -kv[1]):
        if share < 0.01:
            continue
        gain = f", up to {format_duration_ns(recover[key])} recoverable" if recover.get(key) else ""
        lines.append(f"  {key} ({format_percent(share)}{gain}): {ADVICE[key]}")
    return lines


def roofline_section(report: RankReport) -> list[str]:
    if not report.has_gpu:
        return []
    blocks = [regime_lines(report), kernel_table(report) + unmodeled_lines(report), fusion_lines(report), advice_lines(report)]
    lines: list[str] = []
    for block in blocks:
        if block:
            lines.append("")
            lines.extend(block)
    return lines
