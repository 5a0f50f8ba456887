"""The verdict every report opens with: the regime split, then the top findings (title, evidence,
action, gain). One model (`verdict`, which `Report.verdict()` calls) for every format; the
renderers print it (`renderers.verdict_text` for the terminal, `renderers.verdict_document` for
Markdown, HTML and Jupyter; docs/report-formats.md).

It sits below the report model (`report.model` calls it for `Report.verdict()` and `_repr_html_`):
it reads a summary and a findings frame, never a `Report`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from traceanalyze.analysis.findings.finding import ranked
from traceanalyze.report.summaries import Summary

TOP_FINDINGS = 3
MIN_VERDICT_SHARE = 0.01  # findings that would gain less of the window stay off the first screen
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
    expected_share: float | None = None  # what findings are ranked by (the saving, else the gain) / Σ window
    bound_ns: float | None = None  # the most the action can save (≥ gain; docs/whatif.md, "Bounds")


@dataclass(frozen=True)
class Elsewhere:
    """The first finding lies in `regime`, not in the `dominant` one: finding 1 would save
    `saving_share` of the window (its predicted saving, or its gain where the replay does not model
    it: what findings are ranked by), more than any change found for the dominant regime's time
    (`dominant_share` of the window)."""

    regime: str
    dominant: str
    saving_share: float
    dominant_share: float


@dataclass(frozen=True)
class Verdict:
    shares: dict[str, float] | None  # regime → share of the window (None: no GPU work)
    dominant: str | None
    top: tuple[VerdictFinding, ...]
    more: int  # findings not in `top`
    ranks: int
    excluded: str | None = None  # the warm-up finding's evidence: time left out of every gain
    elsewhere: Elsewhere | None = None  # why the first finding's regime is not the dominant one


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
    largest = pl.max_horizontal("gain_ns", "saving_ns")  # what it names, or what it saves where that is more
    shown = found.filter(pl.col("gain_ns").is_null() | (largest >= MIN_VERDICT_SHARE * (window or 0))) \
        if found.height else found
    chosen = [_verdict_finding(row, window) for row in (shown.head(top).iter_rows(named=True) if shown.height else ())]
    warmup = found.filter(pl.col("id") == "warmup-excluded") if found.height else found
    excluded = warmup["evidence"][0] if warmup.height and not any(f.id == "warmup-excluded" for f in chosen) else None
    return Verdict(shares=shares, dominant=dominant, top=tuple(chosen), more=max(found.height - len(chosen), 0),
                   ranks=ranks, excluded=excluded, elsewhere=_elsewhere(shares, dominant, chosen))


def _elsewhere(shares: dict[str, float] | None, dominant: str | None,
               chosen: list[VerdictFinding]) -> Elsewhere | None:
    """When the first finding belongs to another regime than the one that holds most of the window
    (its fix saves more than any found for the dominant regime): the figures that say why."""
    first = chosen[0] if chosen else None
    if (not shares or dominant is None or first is None or first.expected_share is None
            or first.regime in (None, dominant)):
        return None
    if first.regime not in shares and first.regime not in REGIME_WORDS:
        return None
    return Elsewhere(regime=first.regime, dominant=dominant, saving_share=first.expected_share,
                     dominant_share=shares[dominant])


def verdict_findings(found: pl.DataFrame, window_ns: int | None) -> tuple[VerdictFinding, ...]:
    """Every finding of `found` (a findings frame, ranked), with its gain as a share of `window_ns`."""
    return tuple(_verdict_finding(row, window_ns) for row in found.iter_rows(named=True))


def _verdict_finding(row: dict, window_ns: int | None) -> VerdictFinding:
    gain, saving = row["gain_ns"], row.get("saving_ns")
    expected = saving if saving is not None else gain
    return VerdictFinding(rank=row["rank"], id=row["id"], title=row["title"], evidence=row["evidence"],
                          action=row["action"], gain_ns=gain,
                          gain_share=gain / window_ns if gain is not None and window_ns else None,
                          confidence=str(row["confidence"]), regime=str(row["regime"]) if row.get("regime") else None,
                          saving_ns=saving,
                          expected_share=expected / window_ns if expected is not None and window_ns else None,
                          bound_ns=row.get("bound_ns", gain))
