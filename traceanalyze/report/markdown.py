"""The report as a document, and its GitHub-flavoured Markdown rendering.

`document(report)` lays out everything the terminal report shows (overhead, regime attribution,
roofline, fusion, advice, health) as a list of blocks: headings, paragraphs, tables and chart
slots. `render_markdown` writes the blocks as Markdown for a PR, an issue or
`$GITHUB_STEP_SUMMARY` (tables by `tabulate(tablefmt="github")`, the regime shares as text bars,
no images); `traceanalyze.report.html.render_html` writes the same blocks as one HTML file and
draws a chart in each `Chart` slot. Blocks only format what the report model holds.

Examples
--------
>>> text = render_markdown(build_report(load_trace("trace.json.gz")))  # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Union

import polars as pl
from tabulate import tabulate

from traceanalyze import __version__
from traceanalyze.analysis.attribution import ATTRIBUTION_KEYS
from traceanalyze.report.model import RankReport, Report
from traceanalyze.report.terminal import CAUSE_HINTS, cpu_name
from traceanalyze.report.roofline_text import coverage_sentence, pct_of_roof_cell, roof_footnotes
from traceanalyze.report.summary import peak_figures, rank_totals
from traceanalyze.report.units import bar, distinct_short_names, format_count, format_duration_ns, format_percent, format_rate, short_name

GAP_CAUSES = ("host", "sync", "launch", "other")
LATENCY_LABELS = {
    "launch_to_start_ns": "launch → start",
    "queue_wait_ns": "↳ queue wait",
    "launch_overhead_ns": "↳ launch overhead",
    "launch_cpu_ns": "launch call (CPU)",
    "launch_delay_ns": "launch end → start",
}
KERNEL_LIMIT = 12
FUSION_LIMIT = 6


# ---------------------------------------------------------------------------------------------
# the document


@dataclass(frozen=True)
class Code:
    """Inline code: a kernel, op or file name, shown verbatim."""

    text: str


@dataclass(frozen=True)
class Strong:
    text: str


Inline = Union[str, Code, Strong]


@dataclass(frozen=True)
class Cell:
    """A table cell. `full` is the untruncated text (an HTML tooltip); `key` a regime or gap cause
    (a colour chip in HTML); `share` in [0, 1] draws a bar (text in Markdown)."""

    text: str
    full: str | None = None
    code: bool = False
    numeric: bool = False
    key: str | None = None
    share: float | None = None


@dataclass(frozen=True)
class Heading:
    level: int
    text: str
    anchor: str


@dataclass(frozen=True)
class Paragraph:
    parts: tuple[Inline, ...]
    note: bool = False


@dataclass(frozen=True)
class BulletList:
    items: tuple[tuple[Inline, ...], ...]


@dataclass(frozen=True)
class Table:
    headers: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]


@dataclass(frozen=True)
class Figures:
    """Headline numbers: (label, value, detail)."""

    items: tuple[tuple[str, str, str], ...]


@dataclass(frozen=True, eq=False)
class Chart:
    """A slot for a chart of `rank` (None: all ranks of the report). Kinds: `ranks`, `regimes`,
    `timeline`, `causes`, `latency`, `steps`, `roofline`."""

    kind: str
    rank: RankReport | None = None


@dataclass(frozen=True, eq=False)
class Group:
    """One rank of a multi-rank report: collapsible, summarised by `summary`."""

    anchor: str
    summary: tuple[Inline, ...]
    blocks: tuple["Block", ...]


Block = Union[Heading, Paragraph, BulletList, Table, Figures, Chart, Group]


def _num(text: str) -> Cell:
    return Cell(text, numeric=True)


def _name(name: str | None, width: int) -> Cell:
    short = short_name(name, width)
    return Cell(short, full=name if name and name != short else None, code=bool(name))


def _cpu_cell(name: str | None, width: int) -> Cell:
    short = cpu_name(name, width)
    return Cell(short, full=name if name and name != short else None, code=bool(name))


def _window_totals(ranks: tuple[RankReport, ...]) -> tuple[int, int, int]:
    frames = [r.idle for r in ranks if r.idle.height]
    if not frames:
        return 0, 0, 0
    idle = pl.concat(frames)
    return int(idle["window_ns"].sum()), int(idle["busy_ns"].sum()), int(idle["idle_ns"].sum())


def regime_shares(frame: pl.DataFrame) -> tuple[int, dict[str, tuple[float, int]]]:
    """The attribution frame summed over its rows → window ns, {regime: (share, ns)}."""
    window = int(frame["window_ns"].sum()) if frame.height else 0
    shares = {}
    for key in ATTRIBUTION_KEYS:
        ns = int(frame[f"{key}_ns"].sum()) if frame.height else 0
        shares[key] = (ns / window if window else 0.0, ns)
    return window, shares


def _headline(report: Report) -> list[Block]:
    ranks = report.ranks
    window, busy, idle_ns = _window_totals(ranks)
    items: list[tuple[str, str, str]] = []
    if window:
        items.append(("GPU idle", format_percent(idle_ns / window), f"{format_duration_ns(idle_ns)} of a {format_duration_ns(window)} window"))
        frames = [r.attribution for r in ranks if r.attribution.height]
        if frames:
            _, shares = regime_shares(pl.concat(frames, how="vertical_relaxed"))
            key, (share, ns) = max(shares.items(), key=lambda kv: kv[1][0])
            items.append(("biggest regime", key, f"{format_percent(share)} of the window ({format_duration_ns(ns)})"))
        p50 = report.latency_stats.filter(pl.col("metric") == "launch_to_start_ns")
        if p50.height and p50["count"][0]:
            items.append(("launch → start p50", format_duration_ns(p50["p50"][0]), f"over {p50['count'][0]} launches"))
        gaps = sum(r.gaps.height for r in ranks)
        items.append(("idle gaps", str(gaps), f"GPU busy {format_duration_ns(busy)}"))
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
    joined = report.idle.join(report.devices.select("rank", "device", "name"), on=["rank", "device"], how="left")
    return [
        Paragraph((
            f"device {row['device']} ({row['name'] or 'unnamed'}): GPU idle ", Strong(format_percent(row["idle_fraction"])),
            f" of a {format_duration_ns(row['window_ns'])} window (busy {format_duration_ns(row['busy_ns'])}, "
            f"idle {format_duration_ns(row['idle_ns'])}, {row['gpu_ops']} GPU ops)",
        ))
        for row in joined.iter_rows(named=True)
    ]


def _cause_table(gaps: pl.DataFrame) -> list[Block]:
    if gaps.is_empty():
        return [Paragraph(("no idle gaps",))]
    total = gaps["duration_ns"].sum()
    by_cause = gaps.group_by("cause").agg(pl.col("duration_ns").sum(), pl.len()).sort("duration_ns", descending=True)
    rows = tuple(
        (Cell(str(cause), key=str(cause)), _num(format_duration_ns(ns)), _num(format_percent(ns / total)),
         _num(str(count)), Cell(CAUSE_HINTS[str(cause)]))
        for cause, ns, count in by_cause.iter_rows()
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
    return Table(("#", "duration", "% of window", "at", "cause", "CPU op at gap start", "annotation", "step", "next GPU op"),
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
    kernels = report.small_kernels
    if kernels.is_empty():
        return []
    small = kernels.filter(pl.col("small"))
    share = small["duration_ns"].sum() / kernels["duration_ns"].sum() if kernels["duration_ns"].sum() else 0
    blocks: list[Block] = [Paragraph((
        f"{small.height} of {kernels.height} kernels run shorter than their launch call takes on the CPU "
        f"({format_percent(share)} of kernel time): the CPU cannot keep the GPU fed with these.",
    ))]
    runs = report.small_kernel_runs
    if runs.height:
        blocks.append(Paragraph((f"{runs.height} run(s) of ≥{min_run} back-to-back small kernels — candidates for CUDA graphs or torch.compile:",)))
        blocks.append(Table(
            ("kernels", "span", "GPU busy", "stream", "first kernel"),
            tuple((_num(str(r["kernels"])), _num(format_duration_ns(r["span_ns"])), _num(format_duration_ns(r["busy_ns"])),
                   _num(str(r["stream"])), _name(r["first_kernel"], 44)) for r in runs.head(5).iter_rows(named=True)),
        ))
    return blocks


def _queue(report: RankReport) -> list[Block]:
    queue = report.queue
    if not queue.height:
        return []
    deepest = queue.sort("max_depth", descending=True).row(0, named=True)
    full = f", full (≥1024) for {format_duration_ns(deepest['time_at_full_ns'])}" if deepest["time_at_full_ns"] else ""
    return [Paragraph((f"launch queue: deepest on stream {deepest['stream']} at {deepest['max_depth']} ops{full}",))]


def _step_table(steps: pl.DataFrame) -> Table:
    return Table(
        ("step", "device", "CPU step", "GPU window", "GPU busy", "idle", "GPU ops"),
        tuple((_num(str(r["step"])), _num(str(r["device"])), _num(format_duration_ns(r["cpu_duration_ns"])),
               _num(format_duration_ns(r["window_ns"])), _num(format_duration_ns(r["busy_ns"])),
               _num(format_percent(r["idle_fraction"])), _num(str(r["gpu_ops"])))
              for r in steps.iter_rows(named=True)),
    )


def _overhead(report: RankReport, limit: int, level: int, anchor: str, min_run: int) -> list[Block]:
    blocks: list[Block] = [Heading(level, "Overhead — is the GPU waiting on the CPU?", f"{anchor}-overhead")]
    blocks += _device_lines(report)
    blocks.append(Chart("timeline", report))
    blocks.append(Heading(level + 1, "Idle time by cause", f"{anchor}-causes"))
    blocks.append(Chart("causes", report))
    blocks += _cause_table(report.gaps)
    if report.gaps.height:
        blocks.append(Heading(level + 1, f"Longest idle gaps ({min(limit, report.gaps.height)} of {report.gaps.height})", f"{anchor}-gaps"))
        blocks.append(_gap_table(report, limit))
    blocks.append(Heading(level + 1, "Kernel launch latency", f"{anchor}-latency"))
    blocks += _latency_table(report.latency_stats)
    blocks.append(Chart("latency", report))
    blocks += _small_kernels(report, min_run)
    blocks += _queue(report)
    if report.steps.height:
        blocks.append(Heading(level + 1, "Per step", f"{anchor}-steps"))
        blocks.append(Chart("steps", report))
        blocks.append(_step_table(report.steps))
    return blocks


def _peaks(report: RankReport) -> list[Block]:
    items = []
    for choice in report.peaks:
        peaks = choice.peaks
        if peaks is None:
            continue
        items.append((f"device {choice.device}: ", Strong(peaks.display_name), f" ({choice.source}) — {peak_figures(peaks)}"))
    return [BulletList(tuple(items))] if items else []


def _regimes(report: RankReport, level: int, anchor: str) -> list[Block]:
    if report.attribution.is_empty():
        return []
    window, shares = regime_shares(report.attribution)
    blocks: list[Block] = [Heading(level, f"Where the time goes — {format_duration_ns(window)} of GPU window", f"{anchor}-regimes")]
    blocks.append(Chart("regimes", report))
    recover = dict(report.recoverable.select("regime", "recoverable_ns").iter_rows())
    rows = tuple(
        (Cell(key, key=key), Cell("", key=key, share=share), _num(format_percent(share)), _num(format_duration_ns(ns)),
         _num(format_duration_ns(recover[key]) if recover.get(key) else "–"))
        for key, (share, ns) in shares.items()
    )
    blocks.append(Table(("regime", "", "share", "time", "recoverable"), rows))
    sentence = coverage_sentence(report)
    if sentence:
        blocks.append(Paragraph((sentence,)))
    blocks += _peaks(report)
    return blocks


def _kernels(report: RankReport, level: int, anchor: str) -> list[Block]:
    kernels = report.kernels
    if kernels.is_empty():
        return []
    total = kernels["total_ns"].sum()
    rows = []
    shown = kernels.head(KERNEL_LIMIT)
    names = distinct_short_names(shown["name"].to_list(), 40)
    for i, (short, r) in enumerate(zip(names, shown.iter_rows(named=True)), 1):
        modelled = r["regime"] in ("compute", "bandwidth")
        rows.append((
            _num(str(i)), Cell(short, full=r["name"] if r["name"] != short else None, code=True), _name(r["op_name"], 24), _num(str(r["count"])),
            _num(format_duration_ns(r["total_ns"])), _num(format_percent(r["total_ns"] / total)),
            _num(f"{r['intensity']:.3g}" if modelled and r["intensity"] is not None else "–"),
            _num(format_rate(r["achieved_flops_per_s"], "FLOP/s") if modelled else "–"),
            _num(format_rate(r["achieved_bytes_per_s"], "B/s") if modelled or r["regime"] == "memcpy" else "–"),
            _num(pct_of_roof_cell(r["pct_of_peak"])), Cell(r["roof"] or "–"), Cell(str(r["regime"]), key=str(r["regime"])),
        ))
    blocks: list[Block] = [Heading(level, "Roofline — kernels by total time", f"{anchor}-roofline"), Chart("roofline", report)]
    blocks.append(Table(("#", "kernel", "op", "calls", "total", "share", "FLOP/B", "FLOP/s", "bytes/s", "% of roof", "roof", "bound"), tuple(rows)))
    blocks.extend(Paragraph((line.strip(),)) for line in roof_footnotes(shown))
    unmodeled = report.roofline.filter(pl.col("regime") == "unmodeled")
    if unmodeled.height:
        reasons = unmodeled.group_by("unmodeled_reason").agg(pl.len(), pl.col("duration_ns").sum()).sort("duration_ns", descending=True)
        blocks.append(Paragraph(("unmodeled kernels, by reason:",)))
        blocks.append(Table(("time", "kernels", "reason"), tuple(
            (_num(format_duration_ns(ns)), _num(str(count)), Cell(reason or "–")) for reason, count, ns in reasons.head(6).iter_rows()
        )))
    return blocks


def _fusion(report: RankReport, level: int, anchor: str) -> list[Block]:
    if report.fusion.is_empty():
        return []
    rows = tuple(
        (_name(r["ops"], 56), _name(r["annotation"], 24), _num(str(r["occurrences"])), _num(str(r["kernels"])),
         _num(format_duration_ns(r["duration_ns"])), _num(format_count(r["bytes_saved"], "B")), _num(format_duration_ns(r["time_saved_ns"])))
        for r in report.fusion.head(FUSION_LIMIT).iter_rows(named=True)
    )
    return [
        Heading(level, "Fusion opportunities", f"{anchor}-fusion"),
        Paragraph(("runs of bandwidth-bound kernels one fused kernel would replace",)),
        Table(("ops", "module", "runs", "kernels", "time", "bytes saved", "time saved"), rows),
    ]


def _advice(report: RankReport, level: int, anchor: str) -> list[Block]:
    if report.recoverable.is_empty() or report.attribution.is_empty():
        return []
    window, shares = regime_shares(report.attribution)
    if not window:
        return []
    recover = dict(report.recoverable.select("regime", "recoverable_ns").iter_rows())
    how = dict(report.recoverable.select("regime", "how").iter_rows())
    items = []
    for key, (share, _) in sorted(shares.items(), key=lambda kv: -kv[1][0]):
        if share < 0.01:
            continue
        gain = f", up to {format_duration_ns(recover[key])} recoverable" if recover.get(key) else ""
        items.append((Strong(key), f" ({format_percent(share)}{gain}): {how[key]}"))
    return [Heading(level, "What to do — biggest regime first", f"{anchor}-advice"), BulletList(tuple(items))] if items else []


def _cpu_ops(report: RankReport, level: int, anchor: str) -> list[Block]:
    if report.has_gpu or not report.cpu_ops_top.height:
        return []
    rows = tuple((_name(r["name"], 60), _num(str(r["count"])), _num(format_duration_ns(r["total_ns"])))
                 for r in report.cpu_ops_top.iter_rows(named=True))
    return [Heading(level, "CPU — busiest ops (inclusive time)", f"{anchor}-cpu"), Table(("op", "calls", "total"), rows)]


def _health(report: RankReport, level: int, anchor: str) -> list[Block]:
    if not report.health.height:
        return []
    rows = tuple((Cell(r["finding"], code=True), _num(str(r["count"])), Cell(r["affects"]), Cell(r["detail"] or ""))
                 for r in report.health.iter_rows(named=True))
    return [Heading(level, "Trace health", f"{anchor}-health"), Table(("finding", "count", "makes unreliable", "detail"), rows)]


def rank_blocks(report: RankReport, *, limit: int, level: int, anchor: str, min_run: int = 8) -> list[Block]:
    """Every section of one rank, headings at `level`."""
    blocks: list[Block] = _notes(report)
    if report.has_gpu:
        blocks += _overhead(report, limit, level, anchor, min_run)
    if report.has_gpu:
        blocks += _regimes(report, level, anchor)
        blocks += _kernels(report, level, anchor)
        blocks += _fusion(report, level, anchor)
        blocks += _advice(report, level, anchor)
    blocks += _cpu_ops(report, level, anchor)
    blocks += _health(report, level, anchor)
    return blocks


def _ranks_overview(report: Report) -> list[Block]:
    rows = []
    for r in report.ranks:
        totals = rank_totals(r)
        top = "–"
        if r.attribution.height:
            _, shares = regime_shares(r.attribution)
            top = max(shares.items(), key=lambda kv: kv[1][0])[0]
        rows.append((_num(str(r.rank)), _num(format_duration_ns(totals.window_ns)), _num(format_percent(totals.idle_fraction)),
                     _num(format_duration_ns(totals.launch_p50_ns)), _num(str(r.gaps.height)),
                     Cell(top, key=top if top != "–" else None)))
    return [Heading(2, "Ranks", "ranks"), Chart("ranks"),
            Table(("rank", "GPU window", "idle", "launch→start p50", "gaps", "biggest regime"), tuple(rows))]


def _rank_summary(report: RankReport) -> tuple[Inline, ...]:
    parts: list[Inline] = [Strong(_rank_title(report))]
    if report.idle.height:
        window, idle_ns = report.idle["window_ns"].sum(), report.idle["idle_ns"].sum()
        parts.append(f" — GPU idle {format_percent(idle_ns / window if window else None)} of {format_duration_ns(window)}")
    else:
        parts.append(" — no GPU events")
    parts += [" — ", Code(str(report.source))]
    return tuple(parts)


def document(report: Report) -> list[Block]:
    """The report as blocks, in reading order: headline numbers, the ranks (multi-rank reports),
    then each rank's sections as the terminal report orders them."""
    limit = report.options.max_gaps
    min_run = report.options.min_small_kernel_run
    blocks: list[Block] = [
        Heading(1, "traceanalyze report", "top"),
        Paragraph(("source: ", Code(str(report.source)), f" — window: {report.options.window} — traceanalyze {__version__}")),
    ]
    blocks += _headline(report)
    if len(report.ranks) == 1:
        single = report.ranks[0]
        if single.world_size or single.source != report.source:
            where: tuple[Inline, ...] = (" — ", Code(str(single.source))) if single.source != report.source else ()
            blocks.append(Paragraph((_rank_title(single), *where)))
        blocks += rank_blocks(single, limit=limit, level=2, anchor="rank-%d" % single.rank, min_run=min_run)
        return blocks
    blocks += _ranks_overview(report)
    for rank in report.ranks:
        anchor = f"rank-{rank.rank}"
        inner = rank_blocks(rank, limit=min(limit, 5), level=3, anchor=anchor, min_run=min_run)
        blocks.append(Group(anchor, _rank_summary(rank), tuple(inner)))
    return blocks


# ---------------------------------------------------------------------------------------------
# Markdown


_MD_SPECIAL = set("\\`*_[]<>|~#!")


def md_escape(text: str) -> str:
    """Plain text for Markdown: punctuation that could start markup is backslash-escaped."""
    return "".join("\\" + ch if ch in _MD_SPECIAL else ch for ch in text)


def md_code(text: str, *, in_table: bool = False) -> str:
    """A code span holding `text` verbatim (fences longer than any backtick run inside)."""
    if in_table:
        text = text.replace("|", "\\|")
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _md_inline(parts: tuple[Inline, ...]) -> str:
    out = []
    for part in parts:
        if isinstance(part, Code):
            out.append(md_code(part.text))
        elif isinstance(part, Strong):
            out.append(f"**{md_escape(part.text)}**")
        else:
            out.append(md_escape(part))
    return "".join(out)


def _md_cell(cell: Cell) -> str:
    if cell.share is not None:
        return md_code(bar(cell.share, 20), in_table=True)
    text = " ".join(cell.text.split())  # a line break would end the table row
    if cell.code and text not in ("", "–"):
        return md_code(text, in_table=True)
    return md_escape(text)


def _md_block(block: Block) -> str:
    if isinstance(block, Heading):
        return f"{'#' * block.level} {md_escape(block.text)}"
    if isinstance(block, Paragraph):
        text = _md_inline(block.parts)
        return f"> {text}" if block.note else text
    if isinstance(block, BulletList):
        return "\n".join(f"- {_md_inline(item)}" for item in block.items)
    if isinstance(block, Table):
        rows = [[_md_cell(c) for c in row] for row in block.rows]
        headers = [md_escape(h.strip()) for h in block.headers]
        return tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True)
    if isinstance(block, Figures):
        return "\n".join(f"- {md_escape(label)}: **{md_escape(value)}** — {md_escape(detail)}" for label, value, detail in block.items)
    if isinstance(block, Group):
        inner = "\n\n".join(text for text in (_md_block(b) for b in block.blocks) if text)
        # GitHub renders Markdown inside <details> when blank lines surround it
        return f"<details open>\n<summary>{_html_summary(block.summary)}</summary>\n\n{inner}\n\n</details>"
    return ""  # charts have no Markdown form; the tables beside them hold the numbers


def _html_summary(parts: tuple[Inline, ...]) -> str:
    out = []
    for part in parts:
        if isinstance(part, Code):
            out.append(f"<code>{escape(part.text)}</code>")
        elif isinstance(part, Strong):
            out.append(f"<b>{escape(part.text)}</b>")
        else:
            out.append(escape(part))
    return "".join(out)


def render_markdown(report: Report) -> str:
    """GitHub-flavoured Markdown: the whole report, tables included, no images.

    Examples
    --------
    >>> Path("summary.md").write_text(render_markdown(report))  # doctest: +SKIP
    """
    parts = [text for text in (_md_block(b) for b in document(report)) if text]
    return "\n\n".join(parts).rstrip() + "\n"
