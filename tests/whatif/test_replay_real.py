"""The unmodified replay against every real trace (../shared/traces and fixtures/recorded): the
window and every step as recorded (the issue's bound: median ≤ 1 %, max ≤ 3 % relative error;
what the replay gives is every recorded time back, which is checked too)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from shared_traces import REPO_ROOT, real_trace_params

import traceanalyze
from traceanalyze.analysis.findings.finding import Remedy
from traceanalyze.whatif import apply, build_graph, predict, replay
from traceanalyze.whatif.graph import GPU
from traceanalyze.whatif.predict import first_change
from traceanalyze.whatif.replay import reproduces_recording

RECORDED = sorted((REPO_ROOT / "fixtures" / "recorded").glob("*.json.gz"))


def every_trace() -> list:
    return [*real_trace_params(), *(pytest.param(path, id=f"recorded/{path.name}") for path in RECORDED)]


@pytest.mark.parametrize("path", every_trace())
def test_the_unmodified_replay_reproduces_the_window_and_every_step(path: Path):
    for rank in traceanalyze.load_trace(path).split_by_rank():
        prediction = predict(rank)
        assert prediction.measured.window_ns == rank_window(rank)
        assert prediction.relative_error <= 0.01
        errors = prediction.steps["relative_error"].to_numpy()
        assert len(errors) == rank.steps.height
        if len(errors):
            assert np.median(errors) <= 0.01 and errors.max() <= 0.03
        graph = build_graph(rank)
        timing = replay(graph)
        assert np.array_equal(timing.start, graph.start) and np.array_equal(timing.end, graph.end)
        assert reproduces_recording(graph)


@pytest.mark.parametrize("path", every_trace())
def test_a_replay_begun_at_the_first_change_equals_the_whole_replay(path: Path):
    """The middle GPU op of each rank at half its time: the replay from the first change on (what
    predict runs per finding) gives the times of the whole replay, and the check of the recorded
    times no longer holds."""
    for rank in traceanalyze.load_trace(path).split_by_rank():
        graph = build_graph(rank)
        gpu = np.flatnonzero(graph.kind == GPU)
        if not len(gpu):
            continue
        middle = gpu[len(gpu) // 2]
        stream = graph.lanes[graph.lane[middle]]
        key = (stream[1], stream[2], int(graph.start[middle]))
        changed = apply(graph, [Remedy("retime", gpu_ops=(key,), durations_ns=(graph.dur[middle] // 2,))])
        whole = replay(changed)
        partial = replay(changed, base=replay(graph), since=first_change(graph, changed))
        assert np.array_equal(whole.start, partial.start) and np.array_equal(whole.end, partial.end)
        assert whole.end[middle] - whole.start[middle] == graph.dur[middle] // 2
        assert not reproduces_recording(changed) or graph.dur[middle] // 2 == graph.dur[middle]


def rank_window(rank) -> int:
    """The GPU activity span computed apart from the replay (the host events' span without GPU ops)."""
    if rank.gpu.height:
        return int(rank.gpu["end_ns"].max() - rank.gpu["start_ns"].min())
    starts = [*rank.runtime["start_ns"].to_list(), *rank.steps["start_ns"].to_list()]
    ends = [*rank.runtime["end_ns"].to_list(), *rank.steps["end_ns"].to_list()]
    return int(max(ends) - min(starts)) if starts else 0
