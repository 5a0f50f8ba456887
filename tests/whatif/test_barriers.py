"""The job replayed at its collectives (`whatif.barriers`): the unmodified replay gives back every
recorded end; a straggler's saving is exact on the synthetic jobs of tests/multirank.py, agrees
with the full joint replay (`whatif.job.replay_job`) on a two-rank job, and reaches the report's
`straggler` finding."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from builder import TraceBuilder
from shared_traces import SHARED_TRACES_DIR
from test_job_replay import two_ranks

import multirank as mr
import traceanalyze
from traceanalyze.analysis.collectives import MATCHED_SCHEMA
from traceanalyze.analysis.findings.finding import Remedy
from traceanalyze.renderers.formats import RENDERERS
from traceanalyze.whatif.barriers import replayed_ends, straggler_saving
from traceanalyze.whatif.job import replay_job

US = 1_000


def test_the_unmodified_replay_gives_back_every_recorded_end(tmp_path):
    matched = traceanalyze.analyze(mr.write_job(tmp_path / "job")).job.matched
    _, recorded, replayed = replayed_ends(matched)
    assert len(recorded) == matched.height == 12 and np.array_equal(recorded, replayed)


def test_the_late_host_saves_the_others_its_delay(tmp_path):
    """Rank 2 launches 5 ms late in step 2: the three others wait 5 ms there; arriving with them,
    that all-reduce and everything after it end 5 ms earlier on each of the 3 others (their last
    collectives included): 15 ms summed, all of the wait it caused (its gain)."""
    report = traceanalyze.analyze(mr.write_job(tmp_path / "job"))
    assert straggler_saving(report.job.matched, mr.STRAGGLER) == (mr.RANKS - 1) * mr.DELAY_US * US
    straggler = report.job.findings.filter(pl.col("id") == "straggler").row(0, named=True)
    assert straggler["rank"] == mr.STRAGGLER
    assert straggler["gain_ns"] == straggler["saving_ns"] == straggler["bound_ns"] == 3 * mr.DELAY_US * US
    assert "the job replayed at its collectives" in straggler["evidence"]
    document = json.loads(RENDERERS["json"](report))
    (entry,) = [f for f in document["findings"] if f["id"] == "straggler"]
    assert (entry["saving_us"], entry["bound_us"]) == (3 * mr.DELAY_US, 3 * mr.DELAY_US)


def test_only_the_lead_over_the_next_latest_rank_is_saved(tmp_path):
    """Step 2: rank 2 is 5 ms late and rank 1 3 ms: with rank 2 on time rank 1 still holds the
    others, 2 ms saved; step 3: rank 2 alone 1 ms late, 1 ms saved: 3 ms on each of the 3 others,
    less than the 5 + 5 + 2 + 1 + 1 + 1 ms they waited for it. A rank never last saves nothing that
    this replay models."""
    delays = {(2, 2): 5_000, (1, 2): 3_000, (2, 3): 1_000}
    matched = traceanalyze.analyze(mr.write_job(tmp_path / "job", delays=delays)).job.matched
    assert straggler_saving(matched, 2) == 3 * 3_000 * US
    assert straggler_saving(matched, 0) is None


def test_it_agrees_with_the_joint_replay_of_the_ranks(tmp_path):
    """Rank 0: A [10, 30], all-reduce [31, 60]; rank 1: B [10, 50], all-reduce [51, 60]. Rank 1
    arriving with rank 0 (B 20 µs shorter, replayed on the joined graphs) ends rank 0's window 20 µs
    sooner, from either replay."""
    trace = two_ranks(tmp_path)  # written to tmp_path / "job"
    faster = {1: [Remedy("retime", gpu_ops=((0, 7, TraceBuilder().base_ns + 10 * US),), durations_ns=(20 * US,))]}
    joint = replay_job(trace, faster)
    joint_saving = joint.measured_ns[0] - joint.replayed_ns[0]  # rank 0's
    matched = traceanalyze.analyze(tmp_path / "job").job.matched
    assert straggler_saving(matched, 1) == joint_saving == 20 * US


def _matched(rows: list[tuple[str, int, int, int, int]]) -> pl.DataFrame:
    """(group, seq, rank, arrival µs, end µs) → matched rows, the last arrival per collective."""
    frame = pl.DataFrame([{"process_group": g, "seq": s, "rank": r, "arrival_ns": a * US, "end_ns": e * US}
                          for g, s, r, a, e in rows])
    frame = frame.with_columns(pl.col("arrival_ns").max().over("process_group", "seq").alias("last_arrival_ns"))
    return frame.with_columns([pl.lit(None).alias(name) for name in MATCHED_SCHEMA if name not in frame.columns]) \
        .select(list(MATCHED_SCHEMA)).cast(MATCHED_SCHEMA)  # type: ignore[arg-type]


def test_a_collective_issued_while_the_previous_ran_follows_that_arrival():
    """Group a: rank 1 arrives at 30 (rank 0 at 10), both end at 40. Group b, issued while a ran
    on rank 1 (at 35, 5 after its arrival at a; rank 0 at 12), ends at 50. Rank 1 arriving at a
    with rank 0 (at 10) follows it 5 later at most, and at b too it arrives with the next-latest
    rank (its 23 µs lead taken out): 10 + max(5 − 23, 0) = 10, b's last arrival 12, b ends 23 µs
    sooner (a 20 µs): rank 0's last collective 23 µs sooner. Rank 0 was never last: no saving."""
    matched = _matched([("a", 0, 0, 10, 40), ("a", 0, 1, 30, 40), ("b", 0, 0, 12, 50), ("b", 0, 1, 35, 50)])
    _, recorded, replayed = replayed_ends(matched)
    assert np.array_equal(recorded, replayed)
    _, recorded, replayed = replayed_ends(matched, np.array([0, 0, 20 * US, 23 * US]))  # rank 0's rows first
    assert (recorded - replayed).tolist() == [20 * US, 23 * US, 20 * US, 23 * US]
    assert straggler_saving(matched, 1) == 23 * US and straggler_saving(matched, 0) is None


def test_ranks_meeting_collectives_in_contradicting_orders_have_no_replay():
    """Rank 0 meets a then b, rank 1 b then a, each after the other ended: no order of the rows
    respects both, so no saving is predicted."""
    matched = _matched([("a", 0, 0, 10, 20), ("b", 0, 0, 30, 40), ("b", 0, 1, 5, 40), ("a", 0, 1, 45, 50)])
    assert replayed_ends(matched) is None
    assert straggler_saving(matched, 1) is None


def test_the_dlrm_job_replays_exactly_and_its_straggler_saves_within_its_gain():
    path = SHARED_TRACES_DIR / "param_v100_dlrm_4ranks"
    if not path.is_dir():
        pytest.skip(f"real trace folder not found: {path}")
    report = traceanalyze.analyze(path)
    _, recorded, replayed = replayed_ends(report.job.matched)
    assert np.array_equal(recorded, replayed)
    straggler = report.job.findings.filter(pl.col("id") == "straggler").row(0, named=True)
    assert 0 < straggler["saving_ns"] <= straggler["gain_ns"] == straggler["bound_ns"]
