"""The verdict as terminal text (`verdict_lines`: at most VERDICT_MAX_LINES lines, each at most
`width` columns) and the words every format writes it with: the headline, the regime bar and its
legend, a finding's gain (docs/report-formats.md). It prints a `report.verdict.Verdict`, computes
nothing."""

from __future__ import annotations

from traceanalyze.analysis.attribution import ATTRIBUTION_KEYS
from traceanalyze.report.verdict import REGIME_WORDS, Elsewhere, Verdict, VerdictFinding
from traceanalyze.units import format_duration_ns

VERDICT_MAX_LINES = 15
DEFAULT_WIDTH = 100
BAR_WIDTH = 30
REGIME_MARKS = {"overhead": "O", "bandwidth": "B", "compute": "C", "latency": "L", "communication": "N",
                "memcpy": "M", "unmodeled": "U"}


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
    beyond = beyond_gain_text(f.gain_ns, f.saving_ns, f.bound_ns)
    return f"gain ≤ {format_duration_ns(f.gain_ns)}{share}{saving}{beyond}"


def beyond_gain_text(gain_ns: float | None, saving_ns: float | None, bound_ns: float | None) -> str:
    """Why a predicted saving exceeds its finding's gain, with the bound it stays within ("" when
    it does not exceed it)."""
    if gain_ns is None or saving_ns is None or saving_ns <= gain_ns:
        return ""
    most = f" (at most {format_duration_ns(bound_ns)})" if bound_ns is not None else ""
    return f", beyond its gain: the time its remedy frees shortens gaps other findings name{most}"


def elsewhere_text(e: Elsewhere) -> str:
    """Why the verdict's first finding is not in its dominant regime, as one sentence."""
    return (f"the largest saving lies in {e.regime}, not {e.dominant}: "
            f"{e.saving_share:.0%} of the window from finding 1, more than any change found for the "
            f"{e.dominant} time ({e.dominant_share:.0%} of the window)")


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
        lines.append(elsewhere_text(v.elsewhere))
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
