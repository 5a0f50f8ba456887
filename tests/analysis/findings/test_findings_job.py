"""The job-level findings (`straggler`, `exposed-communication`, findings/rules_job.py) on the
synthetic job of tests/multirank.py, where every number is known: where they fire (exact
evidence, gain, spans) and where they stay silent; and the 4-rank DLRM folder end to end."""

from __future__ import annotations

import dataclasses
import json

import polars as pl
import pytest
from typer.testing import CliRunner

import multirank as mr
import traceanalyze
from builder import DEFAULT_BASE_US
from shared_traces import SHARED_TRACES_DIR
from traceanalyze.analysis import clocks
from traceanalyze.analysis.findings.table import job_findings
from traceanalyze.cli import app
from traceanalyze import RunOptions

US = 1_000
DLRM = SHARED_TRACES_DIR / "param_v100_dlrm_4ranks"


def _job(tmp_path, **variant):
    return traceanalyze.analyze(mr.write_job(tmp_path / "job", **variant), run=RunOptions(workers=1))


PREDICTED = ("; predicted saving: how much earlier the other ranks' last collectives end, summed, if rank {rank} "
             "arrives at each of those collectives with the next-latest rank (the job replayed at its collectives)")


def _finding(report, id_):
    rows = report.job.findings.filter(pl.col("id") == id_)
    return rows.row(0, named=True) if rows.height else None


def _on_clock(rank: int, true_us: int) -> int:
    """A true time (µs from the job's start) on rank `rank`'s trace clock, ns."""
    return int((DEFAULT_BASE_US + mr.OFFSETS_US[rank] + true_us) * US)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    return _job(tmp_path_factory.mktemp("job"))


def test_straggler_names_the_late_rank_its_cost_and_why(report):
    row = _finding(report, "straggler")
    delay, others = mr.DELAY_US * US, [r for r in range(mr.RANKS) if r != mr.STRAGGLER]
    assert row["rank"] == mr.STRAGGLER and str(row["regime"]) == "communication" and str(row["confidence"]) == "high"
    assert row["gain_ns"] == 3 * delay  # the three others' waits
    # inside step 2 the straggler's GPU idles DELAY_US longer before its compute kernel (host: its
    # launch came late): its host idle in that step's window, against the others' (equal) one
    host_after = mr.step_start(mr.DELAY_STEP) + mr.STEP_US - mr.collective_end(mr.DELAY_STEP)  # all-reduce → step end
    own_host = (20 + mr.DELAY_US) + host_after
    assert row["evidence"] == (
        f"the other ranks waited 15 ms for rank {mr.STRAGGLER} in 1 collective it arrived last at (100% of the job's "
        f"collective wait): " + ", ".join(f"rank {r} 5 ms" for r in others)
        + f"; in step {mr.DELAY_STEP} it arrived 5 ms after the others' median; there it had more GPU idle waiting for "
        f"its CPU to launch work (host: data loading, Python, framework): {own_host / 1000:.3g} ms, 5 ms more than the "
        "other ranks' median" + PREDICTED.format(rank=mr.STRAGGLER))
    assert row["saving_ns"] == 3 * delay  # the others' last all-reduces 5 ms sooner (tests/whatif/test_barriers)
    assert "rank 2's CPU late" in row["action"]
    # how far behind the others it was, on its own clock
    early, late = mr.arrival(0, mr.DELAY_STEP), mr.arrival(mr.STRAGGLER, mr.DELAY_STEP)
    assert row["spans"] == [{"start_ns": _on_clock(mr.STRAGGLER, early), "end_ns": _on_clock(mr.STRAGGLER, late)}]


def test_straggler_that_reaches_its_step_late(tmp_path):
    report = _job(tmp_path, delays={}, late_starts={(1, 3): 4_000})
    row = _finding(report, "straggler")
    assert row["rank"] == 1 and row["gain_ns"] == 3 * 4_000 * US
    assert row["evidence"].endswith("; in step 3 it arrived 4 ms after the others' median; it began that step 4 ms "
                                    "after the other ranks (their median): the delay arose before the step"
                                    + PREDICTED.format(rank=1))
    assert row["saving_ns"] == 3 * 4_000 * US
    assert row["action"].startswith("look at what rank 1 does between steps and in the step before")


@pytest.mark.parametrize("delays", [{}, {(1, 1): 1_000, (2, 2): 1_000, (3, 3): 1_000}],
                         ids=["nobody late", "each rank late once (jitter, no one rank)"])
def test_straggler_is_silent_without_one_late_rank(tmp_path, delays):
    report = _job(tmp_path, delays=delays)
    assert _finding(report, "straggler") is None
    if delays:  # someone waited, but the wait is spread over three ranks: a third each
        assert report.job.slowest_rank == 1


def test_exposed_communication_is_the_transfer_not_the_wait(report):
    row = _finding(report, "exposed-communication")
    # per rank: its three 2 ms transfers; rank 0 hides 1 ms of step 1's behind compute. Exposed:
    # ranks 0, 1, 3 also sat 5 ms in step 2's all-reduce waiting for the straggler (not hideable)
    hideable = {0: 3 * mr.TRANSFER_US - mr.OVERLAP_US, 1: 3 * mr.TRANSFER_US, 2: 3 * mr.TRANSFER_US,
                3: 3 * mr.TRANSFER_US}
    overlap = report.job.overlap.sort("rank")
    assert dict(overlap.select("rank", "hideable_ns").iter_rows()) == {r: v * US for r, v in hideable.items()}
    assert dict(overlap.select("rank", "wait_ns").iter_rows()) == {
        r: 0 if r == mr.STRAGGLER else mr.DELAY_US * US for r in range(mr.RANKS)}
    assert row["rank"] == 1 and row["gain_ns"] == sum(hideable.values()) * US  # 1: the lowest of the 6 ms ranks
    assert str(row["confidence"]) == "medium"
    assert row["evidence"] == (
        "38 ms of communication ran with no compute beside it (97% of it, summed over 4 ranks); at most 23 ms of that "
        "is transfer that overlap could hide: rank 1 6 ms, rank 2 6 ms, rank 3 6 ms, rank 0 5 ms; the other 15 ms or "
        "more is waiting for late peers (no overlap hides it); the replay cannot predict its saving (it does not model "
        "overlap)")
    assert "async_op=True" in row["action"]
    # rank 1's transfers, on its clock
    assert row["spans"] == [{"start_ns": _on_clock(1, mr.collective_end(s) - mr.TRANSFER_US),
                             "end_ns": _on_clock(1, mr.collective_end(s))} for s in range(1, mr.STEPS + 1)]


def test_exposed_communication_is_silent_when_compute_hides_every_collective(tmp_path):
    report = _job(tmp_path, hide_collectives=True)
    assert _finding(report, "exposed-communication") is None
    assert report.job.overlap["exposed_ns"].to_list() == [0] * mr.RANKS
    assert _finding(report, "straggler")["rank"] == mr.STRAGGLER  # the wait is still there


def test_one_rank_alone_has_no_job_finding(tmp_path):
    report = traceanalyze.analyze(mr.build_rank(0).write(tmp_path / "rank0.json"))
    assert report.job.findings.is_empty()
    assert report.job.overlap["hideable_ns"].to_list() == [None]  # its waits cannot be told from its transfers


def test_clock_residuals_downgrade_the_job_findings(report):
    offsets = report.job.clock_offsets.with_columns(
        pl.when(pl.col("rank") == 3).then(clocks.RESIDUAL_LIMIT_NS + 1).otherwise(0).alias("residual_median_abs_ns"))
    found = job_findings(dataclasses.replace(report.job, health=clocks.clock_health(offsets)))
    assert found["id"].to_list() == ["exposed-communication", "straggler"]  # 23 ms, then 15 ms
    assert [str(c) for c in found["confidence"]] == ["low", "medium"]
    assert all(e.endswith("; trace health: clock_residuals (1 rank)") for e in found["evidence"])


def test_the_verdict_and_the_json_lead_with_the_job_findings(report, tmp_path):
    runner = CliRunner()
    folder = tmp_path / "job"
    mr.write_job(folder)
    text = runner.invoke(app, ["report", str(folder), "--width", "200"]).output
    verdict = [line for line in text.splitlines() if line[:3] in ("1. ", "2. ")][:2]
    assert verdict[0].startswith("1. Collective transfers are not hidden behind compute (rank 1) — gain ≤ 23 ms")
    assert verdict[1].startswith(f"2. The other ranks wait for this rank (straggler) (rank {mr.STRAGGLER}) — "
                                 "gain ≤ 15 ms")
    doc = json.loads(runner.invoke(app, ["report", str(folder), "--format", "json"]).output)
    assert [(f["id"], f["rank"], f["gain_us"]) for f in doc["findings"][:2]] == [
        ("exposed-communication", 1, 23_000), ("straggler", mr.STRAGGLER, 15_000)]
    assert [o["hideable_us"] for o in doc["overlap"]] == [5_000, 6_000, 6_000, 6_000]


@pytest.mark.skipif(not DLRM.is_dir(), reason=f"{DLRM} is absent (the shared traces sit next to the repository)")
def test_dlrm_names_rank_2_the_straggler_in_the_verdict():
    from traceanalyze.analysis.findings.inputs import format_ns

    result = CliRunner().invoke(app, ["report", str(DLRM), "--width", "200"])
    assert result.exit_code == 0, result.output
    report = traceanalyze.analyze(DLRM)
    # ranked by expected saving: the hideable transfers' bound (no replay models overlap), then the
    # straggler's predicted saving, summed over the other ranks like its gain
    saving = format_ns(_finding(report, "straggler")["saving_ns"])
    listed = [line for line in result.output.splitlines() if line[:3] in ("1. ", "2. ")]
    assert listed[0].startswith("1. Collective transfers are not hidden behind compute (rank 1) — gain ≤ 13.2 ms")
    assert listed[1].startswith("2. The other ranks wait for this rank (straggler) (rank 2) — gain ≤ 16.4 ms (26% of "
                                f"the window), predicted saving {saving} [high]")
    row = _finding(report, "straggler")
    assert row["rank"] == 2
    # the gain and the victims, recomputed from the matched collectives
    waits = (report.job.matched.filter((pl.col("last_rank") == 2) & (pl.col("rank") != 2))
             .group_by("rank").agg(pl.col("wait_ns").sum()).sort("wait_ns", descending=True))
    assert row["gain_ns"] == waits["wait_ns"].sum()
    victims = ", ".join(f"rank {r} {format_ns(w)}" for r, w in waits.iter_rows())
    assert (f"for rank 2 in 5 collectives it arrived last at (99% of the job's collective wait): {victims};"
            in row["evidence"])
    # rank 2 began step 10 well after the others (aligned ProfilerStep starts): the delay is before the step
    starts = dict(report.job.steps.select("rank", "aligned_start_ns").iter_rows())
    late = starts[2] - sorted(starts[r] for r in (0, 1, 3))[1]
    assert late > 5_000_000
    assert (f"it began that step {format_ns(late)} after the other ranks (their median): the delay arose"
            in row["evidence"])
    exposed = _finding(report, "exposed-communication")
    overlap = report.job.overlap
    assert exposed["gain_ns"] == overlap["hideable_ns"].sum() < overlap["exposed_ns"].sum() / 2  # mostly waiting
