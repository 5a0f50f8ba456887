"""The verdict every report opens with: the regime split as one bar, then the top findings (title,
evidence, action, gain). One model (`verdict`) for every format: `verdict_lines` for the terminal
(at most VERDICT_MAX_LINES lines, each at most `width` columns), `verdict_blocks` for Markdown and
HTML (docs/report-formats.md)."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from traceanalyze.analysis.attribution import ATTRIBUTION_KEYS
from traceanalyze.report.blocks import Block, BulletList, Code, Heading, Inline, Paragraph, Strong
from traceanalyze.report.model import Report
from traceanalyze.report.units import format_duration_ns

TOP_FINDINGS = 3
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


@dataclass(frozen=True)
class Verdict:
    shares: dict[str, float] | None  # regime → share of the window (None: no GPU work)
    dominant: str | None
    top: tuple[VerdictFinding, ...]
    more: int  # findings not in `top`
    ranks: int
    excluded: str | None = None  # the warm-up finding's evidence: time left out of every gain


def all_findings(report: Report) -> pl.DataFrame:
    """Every rank's findings, ranked by gain (largest first, no estimate last), then rank and id."""
    frames = [rank.findings for rank in report.ranks if rank.findings.height]
    if not frames:
        return report.ranks[0].findings if report.ranks else pl.DataFrame()
    return pl.concat(frames).sort(["gain_ns", "rank", "id"], descending=[True, False, False], nulls_last=True)


def verdict(report: Report, top: int = TOP_FINDINGS) -> Verdict:
    shares = report.summary.attribution.shares
    window = report.summary.attribution.window_ns
    dominant = max(shares, key=lambda key: shares[key]) if shares and any(shares.values()) else None
    found = all_findings(report)
    chosen = []
    for row in found.head(top).iter_rows(named=True) if found.height else ():
        gain = row["gain_ns"]
        chosen.append(VerdictFinding(
            rank=row["rank"], id=row["id"], title=row["title"], evidence=row["evidence"], action=row["action"],
            gain_ns=gain, gain_share=gain / window if gain is not None and window else None,
            confidence=str(row["confidence"])))
    warmup = found.filter(pl.col("id") == "warmup-excluded") if found.height else found
    excluded = warmup["evidence"][0] if warmup.height and not any(f.id == "warmup-excluded" for f in chosen) else None
    return Verdict(shares=shares, dominant=dominant, top=tuple(chosen), more=max(found.height - top, 0),
                   ranks=len(report.ranks), excluded=excluded)


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
    return f"gain ≤ {format_duration_ns(f.gain_ns)}{share}"


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def verdict_lines(report: Report, width: int = DEFAULT_WIDTH) -> list[str]:
    """The terminal verdict: at most VERDICT_MAX_LINES lines of at most `width` columns."""
    v = verdict(report)
    lines = [f"VERDICT  {headline(v)}"]
    if v.shares is not None and v.dominant is not None:
        lines.append(f"[{regime_bar(v.shares)}] {regime_legend(v.shares)}")
    if v.excluded:
        lines.append(f"left out of the gains: {v.excluded}")
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


def verdict_blocks(report: Report) -> list[Block]:
    """The verdict as document blocks (Markdown, HTML): full evidence and action, no truncation."""
    v = verdict(report)
    blocks: list[Block] = [Heading(2, f"Verdict: {headline(v)}", "verdict")]
    if v.shares is not None and v.dominant is not None:
        blocks.append(Paragraph((Code(regime_bar(v.shares)), " ", regime_legend(v.shares))))
    if v.excluded:
        blocks.append(Paragraph(("Left out of the gains: ", *_with_code(v.excluded)), note=True))
    items: list[tuple[Inline, ...]] = []
    for f in v.top:
        where = f" (rank {f.rank})" if v.ranks > 1 else ""
        items.append((Strong(f.title + where), f" — {gain_text(f)}, confidence {f.confidence}. Evidence: ",
                      *_with_code(f.evidence), ". Fix: ", *_with_code(f.action)))
    if items:
        blocks.append(BulletList(tuple(items)))
    else:
        blocks.append(Paragraph(("No finding: nothing in this trace points at a change worth making.",)))
    if v.more:
        blocks.append(Paragraph((f"{v.more} more finding{'s' if v.more != 1 else ''} in the details.",)))
    return blocks


def _with_code(text: str) -> tuple[Inline, ...]:
    """`text` with its `backtick` spans as Code (kernel and op names, API calls shown verbatim)."""
    parts: list[Inline] = []
    for index, piece in enumerate(text.split("`")):
        if piece:
            parts.append(Code(piece) if index % 2 else piece)
    return tuple(parts)
