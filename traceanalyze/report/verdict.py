"""The verdict every report opens with: the regime split as one bar, then the top findings (title,
evidence, action, gain). One model (`verdict`, which `Report.verdict()` calls) for every format:
`verdict_lines` for the terminal (at most VERDICT_MAX_LINES lines, each at most `width` columns),
`verdict_blocks` for Markdown and HTML, `verdict_html` for Jupyter (docs/report-formats.md).

It sits below the report model (`report.model` calls it for `Report.verdict()` and `_repr_html_`):
it reads a summary and a findings frame, never a `Report`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from traceanalyze.analysis.attribution import ATTRIBUTION_KEYS
from traceanalyze.analysis.findings.finding import ranked
from traceanalyze.renderers.blocks import Block, BulletList, Code, Heading, Inline, Paragraph, Strong
from traceanalyze.renderers.html_text import text_block_html
from traceanalyze.report.summaries import Summary
from traceanalyze.units import format_duration_ns

TOP_FINDINGS = 3
MIN_VERDICT_SHARE = 0.01  # findings that would gain less of the window stay off the first screen
VERDICT_MAX_LINES = 15
DEFAULT_WIDTH = 100
BAR_WIDTH = 30
REGIME_MARKS = {"overhead": "O", "bandwidth": "B", "compute": "C", "latency": "L", "communication": "N",
                "memcpy": "M", "unmodeled": "U"}
REGIME_WORDS = {"overhead": "overhead-bound (the GPU waits, idle)", "bandwidth": "bandwidth-bound",
                "compute": "compute-bound", "latency": "latency-bound (kernels too small to fill the GPU)",
                "communication": "communication-bound", "memcpy": "bound by host/device copies",
                "unmodeled": "mostly unmodeled (no FLOP/byte model for most GPU time)"}


@dataclass(frozen=True)
class VerdictFinding:
    rank: int
    id: str
    title: str
    evidence: str
    action: str
    gain_ns: float | None
    gain_share: float | None  # gain / Σ window
    confidence: str
    regime: str | None = None
    saving_ns: float | None = None  # the replay's predicted saving (docs/whatif.md); None: not modelled


@dataclass(frozen=True)
class Verdict:
    shares: dict[str, float] | None  # regime → share of the window (None: no GPU work)
    dominant: str | None
    top: tuple[VerdictFinding, ...]
    more: int  # findings not in `top`
    ranks: int
    excluded: str | None = None  # the warm-up finding's evidence: time left out of every gain
    elsewhere: str | None = None  # why the first finding's regime is not the dominant one


def ranked_findings(per_rank: Sequence[pl.DataFrame]) -> pl.DataFrame:
    """Every rank's findings, `analysis.findings.finding.ranked`."""
    frames = [found for found in per_rank if found.height]
    if not frames:
        return per_rank[0] if per_rank else pl.DataFrame()
    return ranked(pl.concat(frames))


def verdict(summary: Summary, found: pl.DataFrame, ranks: int, top: int = TOP_FINDINGS) -> Verdict:
    """The verdict of a report (or of one rank) from its summary figures, its `ranked_findings`
    and its number of ranks."""
    shares = summary.attribution.shares
    window = summary.attribution.window_ns
    dominant = max(shares, key=lambda key: shares[key]) if shares and any(shares.values()) else None
    shown = found.filter(pl.col("gain_ns").is_null() | (pl.col("gain_ns") >= MIN_VERDICT_SHARE * (window or 0))) \
        if found.height else found
    chosen = [_verdict_finding(row, window) for row in (shown.head(top).iter_rows(named=True) if shown.height else ())]
    warmup = found.filter(pl.col("id") == "warmup-excluded") if found.height else found
    excluded = warmup["evidence"][0] if warmup.height and not any(f.id == "warmup-excluded" for f in chosen) else None
    return Verdict(shares=shares, dominant=dominant, top=tuple(chosen), more=max(found.height - len(chosen), 0),
                   ranks=ranks, excluded=excluded, elsewhere=_elsewhere(shares, dominant, chosen))


def _elsewhere(shares: dict[str, float] | None, dominant: str | None, chosen: list[VerdictFinding]) -> str | None:
    """When the first finding belongs to another regime than the one that holds most of the window:
    the sentence that says why (its fix saves more than any found for the dominant regime)."""
    first = chosen[0] if chosen else None
    if (not shares or dominant is None or first is None or first.gain_share is None
            or first.regime in (None, dominant)):
        return None
    if first.regime not in shares and first.regime not in REGIME_WORDS:
        return None
    return (f"the largest saving lies in {first.regime}, not {dominant}: "
            f"{first.gain_share:.0%} of the window from finding 1, more than any change found for the "
            f"{dominant} time ({shares[dominant]:.0%} of the window)")


def regime_bar(shares: dict[str, float], width: int = BAR_WIDTH) -> str:
    """One bar, a mark per regime (O overhead, B bandwidth, …) in proportion to its share."""
    cells = []
    for key in ATTRIBUTION_KEYS:
        cells.append(REGIME_MARKS.get(key, "?") * round(shares.get(key, 0.0) * width))
    text = "".join(cells)[:width]
    return text + "·" * (width - len(text))


def regime_legend(shares: dict[str, float]) -> str:
    """`O overhead 57% · B bandwidth 25% · …`: the regimes of at least 0.5% of the window, largest first."""
    ordered = sorted((key for key in ATTRIBUTION_KEYS if shares.get(key, 0.0) >= 0.005), key=lambda k: -shares[k])
    return " · ".join(f"{REGIME_MARKS.get(key, '?')} {key} {shares[key]:.0%}" for key in ordered)


def headline(v: Verdict) -> str:
    if v.shares is None or v.dominant is None:
        return "no GPU work in this trace: only the CPU side is reported"
    return f"{REGIME_WORDS.get(v.dominant, v.dominant)}: {v.dominant} {v.shares[v.dominant]:.0%} of the GPU window"


def gain_text(f: VerdictFinding) -> str:
    if f.gain_ns is None:
        return "no time estimate"
    share = f" ({f.gain_share:.0%} of the window)" if f.gain_share is not None else ""
    saving = f", predicted saving {format_duration_ns(f.saving_ns)}" if f.saving_ns is not None else ""
    return f"gain ≤ {format_duration_ns(f.gain_ns)}{share}{saving}"


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def verdict_lines(v: Verdict, width: int = DEFAULT_WIDTH) -> list[str]:
    """The terminal verdict: at most VERDICT_MAX_LINES lines of at most `width` columns."""
    lines = [f"VERDICT  {headline(v)}"]
    if v.shares is not None and v.dominant is not None:
        lines.append(f"[{regime_bar(v.shares)}] {regime_legend(v.shares)}")
    if v.excluded:
        lines.append(f"left out of the gains: {v.excluded}")
    if v.elsewhere:
        lines.append(v.elsewhere)
    if not v.top:
        lines.append("no finding: nothing in this trace points at a change worth making")
    for number, f in enumerate(v.top, 1):
        where = f" (rank {f.rank})" if v.ranks > 1 else ""
        lines.append(f"{number}. {f.title}{where} — {gain_text(f)} [{f.confidence}]")
        lines.append(f"   {f.evidence}")
        lines.append(f"   → {f.action}")
    if v.more:
        lines.append(f"   … {v.more} more finding{'s' if v.more != 1 else ''} in FINDINGS below")
    return [_fit(line, width) for line in lines[:VERDICT_MAX_LINES]]


def verdict_blocks(v: Verdict) -> list[Block]:
    """The verdict as document blocks (Markdown, HTML): full evidence and action, no truncation."""
    blocks: list[Block] = [Heading(2, f"Verdict: {headline(v)}", "verdict")]
    if v.shares is not None and v.dominant is not None:
        blocks.append(Paragraph((Code(regime_bar(v.shares)), " ", regime_legend(v.shares))))
    if v.excluded:
        blocks.append(Paragraph(("Left out of the gains: ", *_with_code(v.excluded)), note=True))
    if v.elsewhere:
        blocks.append(Paragraph((v.elsewhere[0].upper() + v.elsewhere[1:] + ".",), note=True))
    items = tuple(finding_item(f, with_rank=v.ranks > 1) for f in v.top)
    if items:
        blocks.append(BulletList(items))
    else:
        blocks.append(Paragraph(("No finding: nothing in this trace points at a change worth making.",)))
    if v.more:
        blocks.append(Paragraph((f"{v.more} more finding{'s' if v.more != 1 else ''} in the details.",)))
    return blocks


def verdict_html(v: Verdict) -> str:
    """The verdict alone as an HTML fragment (Jupyter's `_repr_html_` of a report)."""
    return "\n".join(text_block_html(block) or "" for block in verdict_blocks(v))


def finding_item(f: VerdictFinding, *, with_rank: bool = False) -> tuple[Inline, ...]:
    """One finding as a list item: title, gain, confidence, evidence and fix (Markdown, HTML)."""
    where = f" (rank {f.rank})" if with_rank else ""
    return (Strong(f.title + where), f" — {gain_text(f)}, confidence {f.confidence}. Evidence: ",
            *_with_code(f.evidence), ". Fix: ", *_with_code(f.action))


def findings_blocks(found: pl.DataFrame, window_ns: int | None, *, level: int, anchor: str) -> list[Block]:
    """Every finding of `found` (a findings frame, ranked), with its gain as a share of `window_ns`:
    the details' findings section of a rank (Markdown, HTML)."""
    if not found.height:
        return []
    items = tuple(finding_item(_verdict_finding(row, window_ns)) for row in found.iter_rows(named=True))
    return [Heading(level, "Findings — largest expected saving first", f"{anchor}-findings"), BulletList(items)]


def _verdict_finding(row: dict, window_ns: int | None) -> VerdictFinding:
    gain = row["gain_ns"]
    return VerdictFinding(rank=row["rank"], id=row["id"], title=row["title"], evidence=row["evidence"],
                          action=row["action"], gain_ns=gain,
                          gain_share=gain / window_ns if gain is not None and window_ns else None,
                          confidence=str(row["confidence"]), regime=str(row["regime"]) if row.get("regime") else None,
                          saving_ns=row.get("saving_ns"))


def _with_code(text: str) -> tuple[Inline, ...]:
    """`text` with its `backtick` spans as Code (kernel and op names, API calls shown verbatim)."""
    parts: list[Inline] = []
    for index, piece in enumerate(text.split("`")):
        if piece:
            parts.append(Code(piece) if index % 2 else piece)
    return tuple(parts)
