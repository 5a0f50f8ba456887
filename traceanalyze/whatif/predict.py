"""What the replay says about one rank: how well it reproduces the recorded run, and what each
finding's action would save (docs/whatif.md, "Predictions").

The *window* is the rank's GPU activity span (first GPU op start to last GPU op end; the span of
its host events when it has no GPU op). A *step*'s time follows docs/metrics.md ("Per-step
idle"): GPU work belongs to step N when its launch began inside step N's CPU span; step N runs
from its first GPU op's start to the next such step's first GPU op's start (the last one to its
last GPU op's end); a step without GPU work runs over its CPU span.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import polars as pl

from traceanalyze.analysis.findings.finding import Finding
from traceanalyze.model import Trace
from traceanalyze.whatif.graph import GPU, MARK, Graph, build_graph
from traceanalyze.whatif.replay import Timing, replay, reproduces_recording
from traceanalyze.whatif.transform import Unmodelled, apply

TOP_COMBINED = 3  # the findings whose actions are also predicted together

STEPS_SCHEMA = pl.Schema({"rank": pl.Int32, "step": pl.Int64, "measured_ns": pl.Int64, "replayed_ns": pl.Int64,
                          "relative_error": pl.Float64})


@dataclass(frozen=True)
class Span:
    """The window and every step's time of one timing of a graph (ns)."""

    window_ns: int
    steps_ns: np.ndarray  # per row of trace.steps

    @property
    def step_ns(self) -> float | None:
        """The mean step time (None without steps)."""
        return float(self.steps_ns.mean()) if len(self.steps_ns) else None


@dataclass(frozen=True)
class Saving:
    """One finding's prediction: the window's reduction (`saving_ns`, None: not modelled, `why`),
    and `removed_ns`, the time its remedies take out of the graph (`removed_ns`): the window cannot
    shrink by more (docs/whatif.md, "Bounds")."""

    id: str
    saving_ns: float | None
    window_ns: int | None
    step_ns: float | None
    why: str = ""
    removed_ns: float | None = None


@dataclass(frozen=True)
class RankPrediction:
    """The replay of one rank: measured and replayed window and steps, each finding's saving, and
    the top findings' actions applied together (`combined_ids`, `combined`)."""

    rank: int
    measured: Span
    replayed: Span
    steps: pl.DataFrame  # STEPS_SCHEMA
    savings: tuple[Saving, ...]
    combined_ids: tuple[str, ...]
    combined: Span | None

    @property
    def relative_error(self) -> float:
        return relative_error(self.measured.window_ns, self.replayed.window_ns)


def relative_error(measured: float, replayed: float) -> float:
    """|replayed − measured| / measured (0 when both are 0)."""
    if measured == 0:
        return 0.0 if replayed == 0 else float("inf")
    return abs(replayed - measured) / measured


def _step_of_ops(graph: Graph, trace: Trace) -> np.ndarray:
    """Per GPU node (in node order), the row of `trace.steps` its launch began in (-1: none)."""
    gpu = np.flatnonzero(graph.kind == GPU)
    out = np.full(len(gpu), -1, np.int64)
    if trace.steps.is_empty() or len(gpu) == 0:
        return out
    launched = (~graph.wait) & (~graph.src_end) & (graph.kind[graph.dst] == GPU) & (graph.kind[graph.src] != GPU)
    launch_time = np.full(graph.size, np.iinfo(np.int64).min)
    launch_time[graph.dst[launched]] = graph.start[graph.src[launched]]
    starts = trace.steps["start_ns"].to_numpy()
    ends = trace.steps["end_ns"].to_numpy()
    by_start = np.argsort(starts, kind="stable")
    at = launch_time[gpu]
    pos = np.searchsorted(starts[by_start], at, side="right") - 1
    inside = (pos >= 0) & (at >= starts[by_start][np.maximum(pos, 0)]) & (at <= ends[by_start][np.maximum(pos, 0)])
    out[inside] = by_start[pos[inside]]
    return out


def span(graph: Graph, start: np.ndarray, end: np.ndarray, step_of_ops: np.ndarray) -> Span:
    """The window and steps of one timing (`start`, `end` per node)."""
    gpu = np.flatnonzero(graph.kind == GPU)
    nodes = gpu if len(gpu) else np.arange(graph.size)
    window = int(end[nodes].max() - start[nodes].min()) if len(nodes) else 0
    marks = np.flatnonzero(graph.kind == MARK)
    n_steps = len(marks) // 2
    steps = np.zeros(n_steps, np.int64)
    if n_steps == 0:
        return Span(window, steps)
    mark_time = np.empty(2 * n_steps, np.int64)
    mark_time[graph.row[marks]] = start[marks]
    steps[:] = mark_time[1::2] - mark_time[0::2]  # the CPU span, for steps without GPU work
    has = step_of_ops >= 0
    if has.any():
        owner, op_start, op_end = step_of_ops[has], start[gpu][has], end[gpu][has]
        first = np.full(n_steps, np.iinfo(np.int64).max)
        last = np.full(n_steps, np.iinfo(np.int64).min)
        np.minimum.at(first, owner, op_start)
        np.maximum.at(last, owner, op_end)
        with_ops = np.flatnonzero(first < np.iinfo(np.int64).max)
        with_ops = with_ops[np.argsort(first[with_ops], kind="stable")]
        following = np.append(first[with_ops][1:], last[with_ops][-1])
        steps[with_ops] = following - first[with_ops]
    return Span(window, steps)


def predict(trace: Trace, found: Sequence[Finding] = ()) -> RankPrediction:
    """Replay one rank (`trace` of one rank) unmodified, then with each finding's remedies, then
    with the remedies of the `TOP_COMBINED` findings of the largest saving together.

    Examples
    --------
    >>> from traceanalyze.whatif import predict  # doctest: +SKIP
    >>> predict(trace, findings).relative_error  # doctest: +SKIP
    0.0
    """
    graph = build_graph(trace)
    owners = _step_of_ops(graph, trace)
    measured = span(graph, graph.start, graph.end, owners)
    base = Timing(graph.start, graph.end) if reproduces_recording(graph) else replay(graph)
    replayed = span(graph, base.start, base.end, owners)
    rank = trace.meta[0].rank if trace.meta else 0
    steps = pl.DataFrame({
        "rank": [rank] * len(measured.steps_ns),
        "step": trace.steps["step"].to_list(),
        "measured_ns": measured.steps_ns.tolist(),
        "replayed_ns": replayed.steps_ns.tolist(),
        "relative_error": [relative_error(m, r) for m, r in zip(measured.steps_ns, replayed.steps_ns)],
    }, schema=STEPS_SCHEMA)
    savings = tuple(_saving(graph, owners, base, replayed, f) for f in found)
    modelled = sorted((s for s in savings if s.saving_ns is not None and s.saving_ns > 0),
                      key=lambda s: (-s.saving_ns, s.id))[:TOP_COMBINED]
    combined = None
    if modelled:
        chosen = {s.id for s in modelled}
        remedies = [r for f in found if f.id in chosen for r in f.remedies]
        combined, _ = _timed(graph, owners, base, remedies)
    return RankPrediction(rank=rank, measured=measured, replayed=replayed, steps=steps, savings=savings,
                          combined_ids=tuple(s.id for s in modelled), combined=combined)


def first_change(graph: Graph, changed: Graph) -> int:
    """The first position of `graph.order` whose node's time `changed` (the same graph with other
    durations, costs, flags or offsets) may move: where its replay needs to begin."""
    nodes = (graph.dur != changed.dur) | (graph.fixed != changed.fixed) | (graph.blocking != changed.blocking)
    nodes[changed.dst[graph.offset != changed.offset]] = True
    if not nodes.any():
        return len(graph.order)
    position = np.empty(len(graph.order), np.int64)
    position[graph.order] = np.arange(len(graph.order))
    return int(position[2 * np.flatnonzero(nodes)].min())


def removed_ns(graph: Graph, changed: Graph, base: Timing) -> int:
    """The time `changed` takes out of `graph` (timed `base`): Σ over nodes of how much shorter
    each became (a call that no longer blocks: its whole base span less its new duration; a call
    that still blocks: its own cost) plus Σ over edges of how much each offset shrank. Every node's
    replayed time moves earlier by at most this much (each time is the length of a longest path
    whose elements' shortening adds up to at most it), so the window shrinks by at most it."""
    unblocked = graph.blocking & ~changed.blocking
    before = np.where(unblocked, base.end - base.start, np.where(graph.blocking, graph.fixed, graph.dur))
    after = np.where(changed.blocking, changed.fixed, changed.dur)
    nodes = np.maximum(before - after, 0)
    edges = np.maximum(graph.offset - changed.offset, 0)[~graph.wait]
    return int(nodes.sum() + edges.sum())


def _timed(graph: Graph, owners: np.ndarray, base: Timing, remedies) -> tuple[Span, int]:
    """The span of the graph with `remedies` applied, and the time they take out of it."""
    changed = apply(graph, remedies)
    timing = replay(changed, base=base, since=first_change(graph, changed))
    return span(graph, timing.start, timing.end, owners), removed_ns(graph, changed, base)


def _saving(graph: Graph, owners: np.ndarray, base: Timing, replayed: Span, finding: Finding) -> Saving:
    if not finding.remedies:
        return Saving(finding.id, None, None, None, "the action is not modelled by the replay")
    try:
        after, removed = _timed(graph, owners, base, finding.remedies)
    except Unmodelled as reason:
        return Saving(finding.id, None, None, None, str(reason))
    return Saving(finding.id, float(replayed.window_ns - after.window_ns), after.window_ns, after.step_ns,
                  removed_ns=float(removed))


REPLAY_SCHEMA = pl.Schema({
    "rank": pl.Int32,
    "measured_ns": pl.Int64,  # the recorded window
    "replayed_ns": pl.Int64,  # the unmodified replay's window
    "relative_error": pl.Float64,
    "steps": pl.Int64,
    "step_ns": pl.Float64,  # the recorded mean step time (null without steps)
    "replayed_step_ns": pl.Float64,
    "predicted_window_ns": pl.Int64,  # the top findings' actions together (null: none modelled)
    "predicted_step_ns": pl.Float64,
    "predicted_ids": pl.List(pl.String),
})


def replay_frame(prediction: RankPrediction) -> pl.DataFrame:
    """One row (REPLAY_SCHEMA): the rank's replay, measured against the recorded run, and the top
    findings' actions predicted together."""
    combined = prediction.combined
    return pl.DataFrame([{
        "rank": prediction.rank,
        "measured_ns": prediction.measured.window_ns,
        "replayed_ns": prediction.replayed.window_ns,
        "relative_error": prediction.relative_error,
        "steps": len(prediction.measured.steps_ns),
        "step_ns": prediction.measured.step_ns,
        "replayed_step_ns": prediction.replayed.step_ns,
        "predicted_window_ns": None if combined is None else combined.window_ns,
        "predicted_step_ns": None if combined is None else combined.step_ns,
        "predicted_ids": list(prediction.combined_ids),
    }], schema=REPLAY_SCHEMA)


def job_replay(replays: Sequence[pl.DataFrame]) -> pl.DataFrame:
    """One row (REPLAY_SCHEMA, `rank` null) over the ranks' `replay_frame`s: windows and step times
    are means over the ranks, `relative_error` the largest; a rank none of whose findings is
    modelled counts with its recorded times in the predicted means (null when no rank has one)."""
    rows = pl.concat([frame for frame in replays if frame.height], how="vertical") if replays else None
    if rows is None or rows.height == 0:
        return pl.DataFrame(schema=REPLAY_SCHEMA)
    predicted = rows["predicted_window_ns"].is_not_null().any()
    return pl.DataFrame([{
        "rank": None,
        "measured_ns": round(rows["measured_ns"].mean()),
        "replayed_ns": round(rows["replayed_ns"].mean()),
        "relative_error": rows["relative_error"].max(),
        "steps": rows["steps"].sum(),
        "step_ns": rows["step_ns"].mean(),
        "replayed_step_ns": rows["replayed_step_ns"].mean(),
        "predicted_window_ns": round(rows["predicted_window_ns"].fill_null(rows["measured_ns"]).mean())
        if predicted else None,
        "predicted_step_ns": rows["predicted_step_ns"].fill_null(rows["step_ns"]).mean() if predicted else None,
        "predicted_ids": sorted({i for ids in rows["predicted_ids"].to_list() for i in ids}),
    }], schema=REPLAY_SCHEMA)


def with_notes(found: Sequence[Finding], prediction: RankPrediction) -> list[Finding]:
    """The findings as the replay leaves them: each whose remedies the replay could not apply
    (`Unmodelled`: an op this rank's trace lacks) saying so in its evidence. A finding without
    remedies is left as it is (its rule says why, when it says anything)."""
    out = []
    for finding, saving in zip(found, prediction.savings, strict=True):
        if finding.remedies and saving.saving_ns is None:
            finding = replace(finding, evidence=f"{finding.evidence}; the replay cannot predict its saving "
                                                f"({saving.why})")
        out.append(finding)
    return out


def saving_bounds(found: Sequence[Finding], prediction: RankPrediction) -> list[float | None]:
    """Per finding, the most its action can save: its rule's gain, or the time its remedies take
    out of the run (`Saving.removed_ns`, at most the window) where that is more, e.g. the CPU time a
    removed sync frees, which shortens later gaps that other findings name (docs/whatif.md,
    "Bounds"). Every modelled finding's saving lies within it; the gains stay the time each finding
    names (disjoint: they add up to at most the window), the bounds may overlap."""
    window = float(prediction.measured.window_ns)
    out: list[float | None] = []
    for finding, saving in zip(found, prediction.savings, strict=True):
        removed = None if saving.removed_ns is None else min(saving.removed_ns, window)
        known = [value for value in (finding.gain_ns, removed) if value is not None]
        out.append(max(known) if known else None)
    return out
