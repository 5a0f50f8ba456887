"""The verdict and the findings as document blocks (Markdown, HTML: full evidence and action, no
truncation), and the verdict alone as an HTML fragment (`verdict_html`, Jupyter's `_repr_html_`
of a report). It prints `report.verdict` models, computes nothing."""

from __future__ import annotations

from collections.abc import Sequence

from traceanalyze.renderers.blocks import Block, BulletList, Code, Heading, Inline, Paragraph, Strong
from traceanalyze.renderers.html_text import text_block_html
from traceanalyze.renderers.verdict_text import elsewhere_text, gain_text, headline, regime_bar, regime_legend
from traceanalyze.report.verdict import Verdict, VerdictFinding


def verdict_blocks(v: Verdict) -> list[Block]:
    """The verdict as document blocks (Markdown, HTML): full evidence and action, no truncation."""
    blocks: list[Block] = [Heading(2, f"Verdict: {headline(v)}", "verdict")]
    if v.shares is not None and v.dominant is not None:
        blocks.append(Paragraph((Code(regime_bar(v.shares)), " ", regime_legend(v.shares))))
    if v.excluded:
        blocks.append(Paragraph(("Left out of the gains: ", *_with_code(v.excluded)), note=True))
    if v.elsewhere:
        sentence = elsewhere_text(v.elsewhere)
        blocks.append(Paragraph((sentence[0].upper() + sentence[1:] + ".",), note=True))
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


def findings_blocks(found: Sequence[VerdictFinding], *, level: int, anchor: str) -> list[Block]:
    """Every finding of a rank (`RankReport.verdict_findings`, ranked), the details' findings
    section of a rank (Markdown, HTML)."""
    if not found:
        return []
    items = tuple(finding_item(f) for f in found)
    return [Heading(level, "Findings — largest expected saving first", f"{anchor}-findings"), BulletList(items)]


def _with_code(text: str) -> tuple[Inline, ...]:
    """`text` with its `backtick` spans as Code (kernel and op names, API calls shown verbatim)."""
    parts: list[Inline] = []
    for index, piece in enumerate(text.split("`")):
        if piece:
            parts.append(Code(piece) if index % 2 else piece)
    return tuple(parts)
