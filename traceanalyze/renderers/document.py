"""The report as a document: the blocks that the Markdown and HTML renderers both write.

`document(report)` lays out everything the terminal report shows (overhead, regime attribution,
roofline, fusion, advice, health) as a list of blocks: headings, paragraphs, tables and chart
slots. `renderers.markdown.render_markdown` writes the blocks as Markdown, `renderers.html.render_html`
as one HTML file with a chart in each `Chart` slot. Blocks only format what the report model holds
(its frames and `summary` figures); they compute nothing.
"""

from __future__ import annotations

import polars as pl

from traceanalyze.analysis.roofline import ON_ROOFLINE
from traceanalyze.renderers.blocks import (Block, BulletList, Cell, Chart, Code, Figures, Group, Heading, Inline,
                                           Paragraph, Strong, Table)
from traceanalyze.renderers.wording import (CAUSE_HINTS, CAUSE_WORDS, coverage_sentence, cpu_name,
                                            peak_figures, roof_footnotes, roof_fraction_cell)
# CHARTED_RANKS: how many ranks' charts a job's document draws (Report.charted_ranks), named here too
from traceanalyze.report.model import CHARTED_RANKS, RankReport, Report  # noqa: F401
from traceanalyze.report.summaries import Summary
from traceanalyze.renderers.verdict_document import findings_blocks
from traceanalyze.units import (distinct_short_names, format_count, format_duration_ns, format_percent, format_rate,
                                format_si, plural, short_name)
from traceanalyze.version import __version__


LATENCY_LABELS = {
    "launch_to_start_ns": "launch → start",
    "queue_wait_ns": "↳ queue wait",
    "launch_overhead_ns": "↳ launch overhead",
    "launch_cpu_ns": "launch call (CPU)",
    "launch_delay_ns": "launch end → start",
}
KERNEL_LIMIT = 12
FUSION_LIMIT = 6


def _num(text: str) -> Cell:
    return Cell(text, numeric=True)


def _name(name: str | None, width: int) -> Cell:
    short = short_name(name, width)
    return Cell(short, full=name if name and name != short else None, code=bool(name))


def _cpu_cell(name: str | None, width: int) -> Cell:
    short = cpu_name(name, width)
    return Cell(short, full=name if name and name != short else None, code=bool(name))


def _biggest_regime(summary: Summary) -> tuple[str, float, int] | None:
    """The regime with the largest share of the window: (regime, share, ns); None without attribution."""
    attribution = summary.attribution
    if attribution.shares is None or attribution.regime_ns is None:
        return None
    key = max(attribution.shares, key=lambda k: attribution.shares[k])  # type: ignore[index]
    return key, attribution.shares[key], attribution.regime_ns[key]


def _per_window(count: int) -> str:
    """How a window figure reads with several device windows (it is their mean)."""
    return f" (mean of {count} device windows)" if count > 1 else ""


def _summed(count: int) -> str:
    """How a regime-time figure reads with several device windows (it is their sum, as the JSON's
    `attribution_us`)."""
    return f" ({count} device windows together)" if count > 1 else ""


def _headline(report: Report) -> list[Block]:
    ranks = report.ranks
    window = report.summary.window
    items: list[tuple[str, str, str]] = []
    if window.window_ns:
        per_window = _per_window(window.device_windows)
        items.append(("GPU idle", format_percent(window.idle_fraction),
                      f"{format_duration_ns(window.idle_ns)} of a {format_duration_ns(window.window_ns)} "
                      f"window{per_window}"))
        biggest = _biggest_regime(report.summary)
        if biggest is not None:
            key, share, ns = biggest
            items.append(("biggest regime", key, f"{format_percent(share)} of the window ({format_duration_ns(ns)})"))
        launch = report.summary.latency["launch_overhead_ns"]
        if launch.count:  # launch overhead, not queue wait (healthy when the GPU is busy): issue 14
            items.append(("launch overhead p50", format_duration_ns(launch.p50),
                          f"over {launch.count} launches (queue wait excluded: see launch latency)"))
        gaps = sum(r.gap_count for r in ranks)
        items.append(("idle gaps", str(gaps), f"GPU busy {format_duration_ns(window.busy_ns)}{per_window}"))
    else:
        items.append(("GPU events", "none", "CPU-side report only"))
    if len(ranks) > 1:
        items.append(("ranks", str(len(ranks)), "one section each below"))
    return [Figures(tuple(items))]


def _rank_title(report: RankReport) -> str:
    return f"rank {report.rank}" + (f" of {report.world_size}" if report.world_size else "")


def _notes(report: RankReport) -> list[Block]:
    return [Paragraph(("note: ", note), note=True) for note in report.notes]


def _device_lines(report: RankReport) -> list[Block]:
    joined = report.idle_by_device_named
    return [
        Paragraph((
            f"device {row['device']} ({row['name'] or 'unnamed'}): GPU idle ",
            Strong(format_percent(row["idle_fraction"])),
            f" of a {format_duration_ns(row['window_ns'])} window (busy {format_duration_ns(row['gpu_busy_ns'])}, "
            f"idle {format_duration_ns(row['gpu_idle_ns'])}, {row['gpu_ops']} GPU ops)",
        ))
        for row in joined.iter_rows(named=True)
    ]


def _cause_table(causes: pl.DataFrame) -> list[Block]:
    if causes.is_empty():
        return [Paragraph(("no idle gaps",))]
    rows = tuple(
        (Cell(str(cause), key=str(cause)), _num(format_duration_ns(ns)), _num(format_percent(share)),
         _num(str(count)), Cell(CAUSE_HINTS[str(cause)]))
        for cause, ns, count, share in causes.select("cause", "duration_ns", "gaps", "share_of_idle").iter_rows()
    )
    return [Table(("cause", "idle time", "% of idle", "gaps", "meaning"), rows)]


def _gap_table(report: RankReport, limit: int) -> Table:
    starts = {(r["rank"], r["device"]): r["window_start_ns"] for r in report.idle.iter_rows(named=True)}
    rows = []
    for i, g in enumerate(report.gaps.head(limit).iter_rows(named=True), 1):
        where = _cpu_cell(g["cpu_op"], 36)
        if g["cause"] == "sync" and g["sync_call"]:
            where = Cell(f"{where.text} [{g['sync_call']}]", full=where.full, code=where.code)
        start = starts.get((g["rank"], g["device"]))
        following = _name(g["next_gpu_op"], 36) if g["next_gpu_op"] else Cell("none (window ends)")
        rows.append((
            _num(str(i)), _num(format_duration_ns(g["duration_ns"])), _num(format_percent(g["share_of_window"])),
            _num(format_duration_ns(g["start_ns"] - start) if start is not None else "–"),
            Cell(str(g["cause"]), key=str(g["cause"])), where, _cpu_cell(g["annotation"], 44),
            _num("–" if g["step"] is None else str(g["step"])), following,
        ))
    return Table(("#", "duration", "% of window", "at", "cause", "CPU op at gap start", "annotation", "step",
                  "next GPU op"),
                 tuple(rows))


def _latency_table(stats: pl.DataFrame) -> list[Block]:
    rows = []
    for r in stats.iter_rows(named=True):
        if not r["count"]:
            continue
        rows.append((Cell(LATENCY_LABELS[r["metric"]]), _num(str(r["count"])),
                     *(_num(format_duration_ns(r[k])) for k in ("mean", "p50", "p90", "p99", "max"))))
    if not rows:
        return [Paragraph(("no launched GPU work",))]
    return [Table(("", "count", "mean", "p50", "p90", "p99", "max"), tuple(rows))]


def _small_kernels(report: RankReport, min_run: int) -> list[Block]:
    summary = report.small_kernel_summary
    if summary.kernels_with_launch == 0:
        return []
    blocks: list[Block] = [Paragraph((
        f"{summary.count} of {summary.kernels_with_launch} kernels run shorter than their launch call takes on the CPU "
        f"({format_percent(summary.share_of_kernel_time)} of kernel time): the CPU cannot keep the GPU fed with these.",
    ))]
    runs = report.small_kernel_runs
    if runs.height:
        blocks.append(Paragraph((f"{runs.height} run(s) of ≥{min_run} back-to-back small kernels — "
                                 "candidates for CUDA graphs or torch.compile:",)))
        blocks.append(Table(
            ("kernels", "span", "GPU busy", "stream", "first kernel"),
            tuple((_num(str(r["kernels"])), _num(format_duration_ns(r["span_ns"])),
                   _num(format_duration_ns(r["busy_ns"])),
                   _num(str(r["stream"])), _name(r["first_kernel"], 44)) for r in runs.head(5).iter_rows(named=True)),
        ))
    return blocks


def _queue(report: RankReport) -> list[Block]:
    deepest = report.deepest_launch_queue  # ties: the first stream
    if deepest is None:
        return []
    at_full = deepest["time_at_full_ns"]
    full = f", full (≥1024) for {format_duration_ns(at_full)}" if at_full else ""
    return [Paragraph((f"launch queue: deepest on stream {deepest['stream']} at "
                       f"{plural(deepest['max_depth'], 'op')}{full}",))]


def _step_table(steps: pl.DataFrame) -> Table:
    return Table(
        ("step", "device", "CPU step", "GPU window", "GPU busy", "idle", "GPU ops"),
        tuple((_num(str(r["step"])), _num(str(r["device"])), _num(format_duration_ns(r["cpu_duration_ns"])),
               _num(format_duration_ns(r["window_ns"])), _num(format_duration_ns(r["gpu_busy_ns"])),
               _num(format_percent(r["idle_fraction"])), _num(str(r["gpu_ops"])))
              for r in steps.iter_rows(named=True)),
    )


def _overhead(report: RankReport, limit: int, level: int, anchor: str, min_run: int, omitted: str) -> list[Block]:
    blocks: list[Block] = [Heading(level, "Overhead — is the GPU waiting on the CPU?", f"{anchor}-overhead")]
    blocks += _device_lines(report)
    blocks.append(Chart("timeline", report, omitted=omitted))
    blocks.append(Heading(level + 1, "Idle time by cause", f"{anchor}-causes"))
    blocks.append(Chart("causes", report))
    blocks += _cause_table(report.idle_causes)
    if report.gap_count:
        blocks.append(Heading(level + 1, f"Longest idle gaps ({min(limit, report.gap_count)} of {report.gap_count})",
                              f"{anchor}-gaps"))
        blocks.append(_gap_table(report, limit))
    blocks.append(Heading(level + 1, "Kernel launch latency", f"{anchor}-latency"))
    blocks += _latency_table(report.latency_stats)
    blocks.append(Chart("latency", report))
    blocks += _small_kernels(report, min_run)
    blocks += _queue(report)
    if report.steps.height:
        listed, title = report.listed_steps
        blocks.append(Heading(level + 1, title, f"{anchor}-steps"))
        blocks.append(Chart("steps", report))
        blocks.append(_step_table(listed))
    return blocks


def _peaks(report: RankReport) -> list[Block]:
    items = []
    for choice in report.peaks:
        peaks = choice.peaks
        if peaks is None:
            continue
        items.append((f"device {choice.device}: ", Strong(peaks.display_name),
                      f" ({choice.source}) — {peak_figures(peaks)}"))
    return [BulletList(tuple(items))] if items else []


def _regimes(report: RankReport, level: int, anchor: str) -> list[Block]:
    attribution = report.summary.attribution
    if attribution.shares is None or attribution.regime_ns is None:
        return []
    regime_ns = attribution.regime_ns
    window = f"{format_duration_ns(attribution.window_ns)} of GPU window{_summed(report.summary.window.device_windows)}"
    blocks: list[Block] = [Heading(level, f"Where the time goes — {window}", f"{anchor}-regimes")]
    blocks.append(Chart("regimes", report))
    recover = dict(report.recoverable.select("regime", "recoverable_ns").iter_rows())
    rows = tuple(
        (Cell(key, key=key), Cell("", key=key, share=share), _num(format_percent(share)), _num(format_duration_ns(ns)),
         _num(format_duration_ns(recover[key]) if recover.get(key) else "–"))
        for key, share, ns in ((key, share, regime_ns[key]) for key, share in attribution.shares.items())
    )
    blocks.append(Table(("regime", "", "share", "time", "recoverable"), rows))
    sentence = coverage_sentence(report)
    if sentence:
        blocks.append(Paragraph((sentence,)))
    blocks += _peaks(report)
    return blocks


def _kernels(report: RankReport, level: int, anchor: str, omitted: str = "") -> list[Block]:
    kernels = report.kernels
    if kernels.is_empty():
        return []
    total = report.kernel_time_ns
    rows = []
    shown = kernels.head(KERNEL_LIMIT)
    names = distinct_short_names(shown["name"].to_list(), 40)
    for i, (short, r) in enumerate(zip(names, shown.iter_rows(named=True)), 1):
        modelled = r["bound"] in ON_ROOFLINE
        rows.append((
            _num(str(i)), Cell(short, full=r["name"] if r["name"] != short else None, code=True), _name(r["op"], 24),
            _num(str(r["count"])),
            _num(format_duration_ns(r["total_ns"])), _num(format_percent(r["total_ns"] / total)),
            _num(f"{r['intensity']:.3g}" if modelled and r["intensity"] is not None else "–"),
            _num(format_rate(r["achieved_flops_per_s"], "FLOP/s") if modelled else "–"),
            _num(format_rate(r["achieved_bytes_per_s"], "B/s") if modelled or r["bound"] == "memcpy" else "–"),
            _num(roof_fraction_cell(r["pct_of_roof"], str(r["bound"]))), Cell(r["roof"] or "–"),
            Cell(str(r["bound"]), key=str(r["bound"])),
        ))
    blocks: list[Block] = [Heading(level, "Roofline — kernels by total time", f"{anchor}-roofline"),
                           Chart("roofline", report, omitted=omitted)]
    blocks.append(Table(("#", "kernel", "op", "calls", "total", "share", "FLOP/B", "FLOP/s", "bytes/s", "% of roof",
                         "roof", "bound"), tuple(rows)))
    blocks.extend(Paragraph((line.strip(),)) for line in roof_footnotes(report.roof_notes(KERNEL_LIMIT)))
    reasons = report.unmodeled.select("unmodeled_reason", "count", "duration_ns")
    if reasons.height:
        blocks.append(Paragraph(("unmodeled kernels, by reason:",)))
        blocks.append(Table(("time", "kernels", "reason"), tuple(
            (_num(format_duration_ns(ns)), _num(str(count)), Cell(reason or "–"))
            for reason, count, ns in reasons.head(6).iter_rows()
        )))
    return blocks


def _fusion(report: RankReport, level: int, anchor: str) -> list[Block]:
    if report.fusion.is_empty():
        return []
    rows = tuple(
        (_name(r["ops"], 56), _name(r["annotation"], 24), _num(str(r["occurrences"])), _num(str(r["kernels"])),
         _num(format_duration_ns(r["duration_ns"])), _num(format_count(r["bytes_saved"], "B")),
         _num(format_duration_ns(r["time_saved_ns"])))
        for r in report.fusion.head(FUSION_LIMIT).iter_rows(named=True)
    )
    return [
        Heading(level, "Fusion opportunities", f"{anchor}-fusion"),
        Paragraph(("runs of bandwidth-bound kernels one fused kernel would replace",)),
        Table(("ops", "module", "runs", "kernels", "time", "bytes saved", "time saved"), rows),
    ]


def _cpu_ops(report: RankReport, level: int, anchor: str) -> list[Block]:
    if report.has_gpu or not report.cpu_ops_top.height:
        return []
    rows = tuple((_name(r["name"], 60), _num(str(r["count"])), _num(format_duration_ns(r["total_ns"])))
                 for r in report.cpu_ops_top.iter_rows(named=True))
    return [Heading(level, "CPU — busiest ops (inclusive time)", f"{anchor}-cpu"),
            Table(("op", "calls", "total"), rows)]


def _health(report: RankReport, level: int, anchor: str) -> list[Block]:
    if not report.health.height:
        return []
    rows = tuple((Cell(r["finding"], code=True), _num(str(r["count"])), Cell(r["affects"]), Cell(r["detail"] or ""))
                 for r in report.health.iter_rows(named=True))
    return [Heading(level, "Trace health", f"{anchor}-health"),
            Table(("finding", "count", "makes unreliable", "detail"), rows)]


def rank_blocks(report: RankReport, *, limit: int, level: int, anchor: str, min_run: int = 8,
                omitted: str = "") -> list[Block]:
    """Every section of one rank, headings at `level`; `omitted`: why its timeline and roofline
    charts are not drawn (empty: they are)."""
    blocks: list[Block] = _notes(report)
    if report.has_gpu:
        blocks += _overhead(report, limit, level, anchor, min_run, omitted)
    if report.has_gpu:
        blocks += _regimes(report, level, anchor)
        blocks += _kernels(report, level, anchor, omitted)
        blocks += _fusion(report, level, anchor)
    blocks += findings_blocks(report.verdict_findings, level=level, anchor=anchor)
    blocks += _cpu_ops(report, level, anchor)
    blocks += _health(report, level, anchor)
    return blocks


def _ranks_overview(report: Report, charted: list[int]) -> list[Block]:
    rows = []
    for r in report.ranks:
        window = r.summary.window
        biggest = _biggest_regime(r.summary)
        top = biggest[0] if biggest is not None else "–"
        rows.append((_num(str(r.rank)), _num(format_duration_ns(window.window_ns)),
                     _num(format_percent(window.idle_fraction)),
                     _num(format_duration_ns(r.summary.latency["launch_to_start_ns"].p50)), _num(str(r.gap_count)),
                     Cell(top, key=top if top != "–" else None)))
    blocks: list[Block] = [Heading(2, "Ranks", "ranks"), Chart("ranks"),
                           Table(("rank", "GPU window", "idle", "launch→start p50", "gaps", "biggest regime"),
                                 tuple(rows))]
    if len(charted) < len(report.ranks):  # said where charts are drawn only (HTML)
        blocks.append(Chart("charted-ranks", omitted=(
            f"The timeline and roofline charts below are drawn for {len(charted)} of the {len(report.ranks)} ranks: "
            f"the straggler first, then the most idle (ranks {', '.join(map(str, sorted(charted)))}).")))
    return blocks


def _rank_summary(report: RankReport) -> tuple[Inline, ...]:
    parts: list[Inline] = [Strong(_rank_title(report))]
    window = report.summary.window
    if window.device_windows:
        parts.append(f" — GPU idle {format_percent(window.idle_fraction if window.window_ns else None)} of "
                     f"{format_duration_ns(window.window_ns)}{_per_window(window.device_windows)}")
    else:
        parts.append(" — no GPU events")
    parts += [" — ", Code(str(report.source))]
    return tuple(parts)


def opening(report: Report) -> list[Block]:
    """What a document says before its verdict: its title, its source line, and the job's notes
    (missing, skipped or renumbered ranks, not one job: before any claim about the job)."""
    return [
        Heading(1, "traceanalyze report", "top"),
        Paragraph(("source: ", Code(str(report.source)),
                   f" — window: {report.options.window} — traceanalyze {__version__}")),
        *(Paragraph(("note: ", note), note=True) for note in report.notes),
    ]


def document(report: Report) -> list[Block]:
    """The report as blocks, in reading order: the `opening`, headline numbers, the ranks
    (multi-rank reports), then each rank's sections as the terminal report orders them."""
    limit = report.options.max_gaps
    min_run = report.options.min_small_kernel_run
    blocks: list[Block] = opening(report)
    blocks += _headline(report)
    if len(report.ranks) == 1:
        single = report.ranks[0]
        if single.world_size or single.source != report.source:
            where: tuple[Inline, ...] = (" — ", Code(str(single.source))) if single.source != report.source else ()
            blocks.append(Paragraph((_rank_title(single), *where)))
        blocks += rank_blocks(single, limit=limit, level=2, anchor="rank-%d" % single.rank, min_run=min_run)
        return blocks
    blocks += job_blocks(report)
    charted = report.charted_ranks
    blocks += _ranks_overview(report, charted)
    for rank in report.ranks:
        anchor = f"rank-{rank.rank}"
        omitted = "" if rank.rank in charted else (
            f"Timeline and roofline not drawn: they are for {len(charted)} of the {len(report.ranks)} ranks "
            f"(see Ranks); this rank's alone: traceanalyze report {rank.source} --format html")
        inner = rank_blocks(rank, limit=min(limit, 5), level=3, anchor=anchor, min_run=min_run, omitted=omitted)
        blocks.append(Group(anchor, _rank_summary(rank), tuple(inner)))
    return blocks




# -- the job's blocks (a folder of ranks) ------------------------------------------------------------------
# The job-level blocks of a multi-rank report (Markdown and HTML): which rank holds the others
# back, the wait it costs them and why; a ranks × steps heatmap, the aligned cross-rank timeline
# of the collectives and their wait/transfer bars (HTML charts), the collectives waited on most.
# Reads `Report.job` (analysis.job); computes nothing.
def job_blocks(report: Report) -> list[Block]:
    job = report.job
    blocks: list[Block] = [Heading(2, "Job — which rank holds the others back?", "job")]
    straggler = report.straggler
    if straggler is None:
        blocks.append(Paragraph(("No rank waited for another in a matched collective"
                                 + ("." if job.collectives.height else " (no collective matched across ranks)."),)))
    else:
        blocks.append(Paragraph((Strong(f"rank {straggler.rank} is the straggler"),
                                 f": the other ranks waited {format_duration_ns(straggler.caused_wait_ns)} for it in "
                                 f"{plural(straggler.collectives_last, 'collective')} it arrived last at.")))
        for row in straggler.steps.iter_rows(named=True):
            blocks.append(Paragraph((f"Step {row['step']}: it arrived {format_duration_ns(row['behind_ns'])} "
                                     f"after the others (cost them {format_duration_ns(row['others_wait_ns'])}); "
                                     f"its largest idle cause: {row['cause'] or '–'} "
                                     f"{format_duration_ns(row['cause_ns'])} — "
                                     f"{CAUSE_WORDS.get(row['cause'] or '', 'no idle gaps in that step')}.",)))
    if job.steps.height:
        blocks.append(Chart("job-heatmap"))
    if job.collectives.height:
        blocks += [Chart("job-timeline"), Chart("job-collectives"), _collectives_table(report)]
    return blocks


def _collectives_table(report: Report) -> Table:
    listed = report.listed_collectives.most_waited
    rows = tuple(
        (Cell(r["process_group"]), _num(str(r["seq"])), Cell(r["collective"]), _num(str(r["ranks"])),
         _num(format_si(r["message_bytes"], "B") if r["message_bytes"] is not None else "–"),
         _num(str(r["last_rank"])),
         _num(format_duration_ns(r["max_wait_ns"])), _num(format_duration_ns(r["wait_ns"])),
         _num(format_duration_ns(r["transfer_ns"])), _num(format_rate(r["busbw_bytes_per_s"], "B/s")),
         _num(format_percent(r["link_fraction"])))
        for r in listed.iter_rows(named=True)
    )
    return Table(("group", "#", "collective", "ranks", "size", "last rank", "max wait", "total wait", "transfer",
                  "bus bw", "of link"), rows)
