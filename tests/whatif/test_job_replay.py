"""Ranks replayed together, joined at their collectives: a rank that did not hold the job saves
nothing by getting faster; the one that did saves every rank's wait. Exact on a synthetic 2-rank
job; the unmodified joint replay of the shared 4-rank DLRM job gives back every recorded time."""

from __future__ import annotations

import numpy as np
import polars as pl
from builder import TraceBuilder
from shared_traces import shared_trace

import traceanalyze
from traceanalyze.analysis.findings.finding import Finding, Remedy
from traceanalyze.whatif import predict
from traceanalyze.whatif.job import job_graph, replay_job
from traceanalyze.whatif.replay import replay, reproduces_recording

US = 1_000
BASE = TraceBuilder().base_ns


def two_ranks(tmp_path):
    """Rank 0: A [10, 30], all-reduce [31, 60]; rank 1: B [10, 50], all-reduce [51, 60]: rank 0
    waited 20 µs for rank 1; the transfer took 9 µs."""
    folder = tmp_path / "job"
    folder.mkdir()
    for rank, work in ((0, 20), (1, 40)):
        b = TraceBuilder(rank=rank, world_size=2)
        b.launch_kernel(launch_us=0, start_us=10, dur_us=work)
        corr = b.launch(12, 5)
        b.nccl_kernel(corr, 11 + work, 49 - work)
        b.write(folder / f"rank{rank}.json")
    return traceanalyze.load_trace(folder)


def test_the_unmodified_joint_replay_is_exact(tmp_path):
    trace = two_ranks(tmp_path)
    job = job_graph(trace)
    assert job.collectives == 1 and job.ranks == (0, 1)
    timing = replay(job.graph)
    assert np.array_equal(timing.start, job.graph.start) and np.array_equal(timing.end, job.graph.end)
    assert replay_job(trace).replayed_ns == (50 * US, 50 * US)


def test_only_the_rank_that_held_the_collective_saves(tmp_path):
    trace = two_ranks(tmp_path)
    faster_a = {0: [Remedy("retime", gpu_ops=((0, 7, BASE + 10 * US),), durations_ns=(10 * US,))]}
    # rank 0 arrives at 22 instead of 31 and waits for rank 1 as before: nothing saved
    assert replay_job(trace, faster_a).replayed_ns == (50 * US, 50 * US)
    # replayed alone, its collective at its recorded length (the wait in it), rank 0 would seem
    # to save 9 µs: the collective from 22 to 51
    alone = predict(trace.for_rank(0), [Finding("a", "compute", "", "", "", None, "high", remedies=tuple(faster_a[0]))])
    assert alone.savings[0].saving_ns == 9 * US
    faster_b = {1: [Remedy("retime", gpu_ops=((0, 7, BASE + 10 * US),), durations_ns=(20 * US,))]}
    # rank 1 arrives at 31: both end at 31 + 9 = 40
    assert replay_job(trace, faster_b).replayed_ns == (30 * US, 30 * US)


def test_the_shared_dlrm_job_replays_exactly_joined_at_its_collectives():
    trace = traceanalyze.load_trace(shared_trace("param_v100_dlrm_4ranks/rank0.json.gz").parent)
    job = job_graph(trace)
    per_rank = trace.gpu.filter(pl.col("kind") == "communication").group_by("rank").len()["len"]
    assert job.collectives == per_rank.min() > 0  # one process group: as many as the rank with the fewest
    assert reproduces_recording(job.graph)
    timing = replay(job.graph)
    assert np.array_equal(timing.start, job.graph.start) and np.array_equal(timing.end, job.graph.end)
    assert replay_job(trace).measured_ns == replay_job(trace).replayed_ns
