"""What a finding is: one diagnosis with its evidence, the change to make and what it would gain.

A rule (the `rules_*` modules) returns `Finding`s; `table.findings` ranks them into the `findings`
frame (`FINDINGS_SCHEMA`). docs/findings.md defines every rule, its trigger, its gain estimate and
when it stays silent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

import polars as pl

Confidence = Literal["high", "medium", "low"]
CONFIDENCES: tuple[Confidence, ...] = ("high", "medium", "low")
# The regime a finding belongs to: the attribution regimes, plus `trace` for findings about the
# recording itself (what could not be measured, what was left out).
FINDING_REGIMES = ("overhead", "bandwidth", "compute", "latency", "communication", "memcpy", "unmodeled", "trace")
# What a finding's action does to the recorded run, as the replay (traceanalyze.whatif) applies it.
RemedyKind = Literal["retime", "merge", "remove_cpu", "graph", "async_copy", "rank_delay", "unqueue"]
REMEDY_KINDS: tuple[RemedyKind, ...] = ("retime", "merge", "remove_cpu", "graph", "async_copy", "rank_delay",
                                        "unqueue")
MAX_SPANS = 100  # evidence intervals kept per finding (the longest), for the annotated trace

FINDINGS_SCHEMA = pl.Schema(
    {
        "rank": pl.Int32,
        "id": pl.String,
        "regime": pl.Enum(FINDING_REGIMES),
        "title": pl.String,
        "evidence": pl.String,
        "action": pl.String,
        # an upper bound on what the action recovers of the time the finding names (a rank's findings
        # name disjoint time: their gains add up to at most its window); null: not estimated
        "gain_ns": pl.Float64,
        "saving_ns": pl.Float64,  # the window's reduction the replay predicts (docs/whatif.md); null: not modelled
        # the most the action can save: its gain, or the time its remedy takes out of the run where
        # that is more (freed CPU time shortens later gaps too: docs/whatif.md, "Bounds")
        "bound_ns": pl.Float64,
        "confidence": pl.Enum(CONFIDENCES),
        "spans": pl.List(pl.Struct({"start_ns": pl.Int64, "end_ns": pl.Int64})),
    }
)


@dataclass(frozen=True)
class Remedy:
    """What a finding's action changes in the recorded run, in the terms the replay applies
    (`traceanalyze.whatif`, docs/whatif.md). GPU ops are named by `(device, stream, start_ns)`
    on the trace's clock, CPU spans by `(tid, start_ns, end_ns)`.

    - `retime`: each op of `gpu_ops` takes `durations_ns[i]` (a faster format or layout; 0 removes it);
    - `merge`: the ops of `gpu_ops` become one op of `durations_ns[0]` where the first one ran
      (fusion, an attention chain as one SDPA kernel);
    - `remove_cpu`: the CPU time of `cpu_spans` is taken out of its thread (a DataLoader wait, a
      blocking call);
    - `graph`: the launches of `gpu_ops` become one graph launch, their kernels back to back;
    - `async_copy`: the copies of `gpu_ops` no longer block the CPU (pinned memory);
    - `rank_delay`: a job's late rank no longer holds the others (`durations_ns[0]`: its delay);
    - `unqueue`: the ops of `gpu_ops`, queued in time, start as soon as their stream and launch allow.

    `assumption`: one sentence naming what the prediction assumes (an efficiency, a roof)."""

    kind: RemedyKind
    gpu_ops: tuple[tuple[int, int, int], ...] = ()
    durations_ns: tuple[float, ...] = ()
    cpu_spans: tuple[tuple[int, int, int], ...] = ()
    assumption: str = ""


@dataclass(frozen=True)
class Finding:
    """One diagnosis. `gain_ns` is None when the rule cannot bound what the action recovers (a
    note, or a change of recording). `spans` are the evidence intervals (gaps, kernels) on the
    trace's clock, in ns."""

    id: str
    regime: str
    title: str
    evidence: str
    action: str
    gain_ns: float | None
    confidence: Confidence
    spans: tuple[tuple[int, int], ...] = ()
    remedies: tuple[Remedy, ...] = ()  # what the action changes, for the replay; () when it cannot be modelled

    def downgraded(self, reason: str) -> Finding:
        """The same finding one confidence level lower, saying why."""
        level = CONFIDENCES[min(CONFIDENCES.index(self.confidence) + 1, len(CONFIDENCES) - 1)]
        return replace(self, confidence=level, evidence=f"{self.evidence}; {reason}")


def spans_of(frame: pl.DataFrame) -> tuple[tuple[int, int], ...]:
    """The `start_ns, end_ns` intervals of `frame`, the MAX_SPANS longest, in time order."""
    if frame.is_empty():
        return ()
    if frame.height <= SPANS_IN_PYTHON_MAX_ROWS:  # a small rank's few gaps: no query
        starts, ends = frame["start_ns"].to_list(), frame["end_ns"].to_list()
        if None not in starts and None not in ends:
            longest = sorted(zip(starts, ends), key=lambda span: (span[0] - span[1], span[0]))[:MAX_SPANS]
            return tuple((int(start), int(end)) for start, end in sorted(longest))
    kept = (
        frame.select("start_ns", "end_ns")
        .with_columns((pl.col("end_ns") - pl.col("start_ns")).alias("length"))
        .top_k(MAX_SPANS, by=["length", "start_ns"], reverse=[False, True])  # longest, earliest first on ties
        .sort("start_ns")
    )
    return tuple((int(start), int(end)) for start, end in kept.select("start_ns", "end_ns").iter_rows())


SPANS_IN_PYTHON_MAX_ROWS = 4096


def findings_frame(rank: int, found: list[Finding], savings: Sequence[float | None] | None = None,
                   bounds: Sequence[float | None] | None = None) -> pl.DataFrame:
    """The findings of one rank as a frame (`savings`: the replay's predicted saving of each, None:
    not modelled; `bounds`: the most each can save, by default its gain), `ranked`."""
    saved = list(savings) if savings is not None else [None] * len(found)
    bound = list(bounds) if bounds is not None else [f.gain_ns for f in found]
    rows = [
        {"rank": rank, "id": f.id, "regime": f.regime, "title": f.title, "evidence": f.evidence,
         "action": f.action, "gain_ns": f.gain_ns, "saving_ns": saving, "bound_ns": most, "confidence": f.confidence,
         "spans": [{"start_ns": s, "end_ns": e} for s, e in f.spans]}
        for f, saving, most in zip(found, saved, bound, strict=True)
    ]
    return ranked(pl.DataFrame(rows, schema=FINDINGS_SCHEMA))


def ranked(frame: pl.DataFrame) -> pl.DataFrame:
    """Findings (FINDINGS_SCHEMA, one rank's or several) in the order a report lists them: by the
    time each is expected to save, largest first: the replay's predicted saving where its action is
    modelled, else its gain (the upper bound: a lever the replay cannot model is not buried under a
    small modelled one); then by gain, rank and id; findings with neither last (docs/findings.md)."""
    return frame.sort(pl.coalesce("saving_ns", "gain_ns"), "gain_ns", "rank", "id",
                      descending=[True, True, False, False], nulls_last=True)
