"""Every finding's predicted saving on every real trace (../shared/traces and fixtures/recorded)
is sane and its gains can all be true: the saving lies between 0 and the rank's window and within the
finding's bound (`bound_ns`: its gain, or the time its remedy takes out of the run where that is
more: docs/whatif.md, "Bounds"), for every rule; a rank's gains (the time its findings name) add up
to at most its window, its kernel findings' gains to at most the GPU busy time, and the top three
together save at most the window."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from shared_traces import REPO_ROOT, real_trace_params

import traceanalyze
from traceanalyze.analysis.findings.kernel_claims import KERNEL_REGIMES
from traceanalyze.pipeline.rank import build_report

RECORDED = sorted((REPO_ROOT / "fixtures" / "recorded").glob("*.json.gz"))


def every_trace() -> list:
    return [*real_trace_params(), *(pytest.param(path, id=f"recorded/{path.name}") for path in RECORDED)]


@pytest.mark.parametrize("path", every_trace())
def test_every_saving_lies_between_zero_and_its_gain_and_the_gains_fit_the_run(path: Path):
    report = build_report(traceanalyze.load_trace(path))  # not the results cache: this code's savings
    for rank in report.ranks:
        window = int(rank.attribution["window_ns"].sum()) if rank.attribution.height else 0
        busy = int(rank.attribution["busy_ns"].sum()) if rank.attribution.height else 0
        named = rank.findings.filter(pl.col("regime").cast(pl.String) != "trace")  # not about the recording
        gains = named["gain_ns"].drop_nulls()
        assert gains.sum() <= window + 1, (rank.rank, window, named.select("id", "gain_ns").rows())
        kernel = rank.findings.filter(pl.col("regime").cast(pl.String).is_in(KERNEL_REGIMES))["gain_ns"]
        assert kernel.drop_nulls().sum() <= busy + 1, (rank.rank, kernel.to_list(), busy)
        if rank.replay.is_empty():
            continue
        replay = rank.replay.row(0, named=True)
        replayed = replay["replayed_ns"]
        for finding in rank.findings.iter_rows(named=True):
            saving, gain, bound = finding["saving_ns"], finding["gain_ns"], finding["bound_ns"]
            where = f"rank {rank.rank} {finding['id']}: saving {saving}, gain {gain}, bound {bound}, window {replayed}"
            if gain is not None:
                assert bound is not None and gain <= bound <= max(gain, replayed), where
            if saving is None:
                continue
            assert 0 <= saving <= replayed, where
            if bound is not None:
                assert saving <= bound + 1, where  # bounds are floats, savings whole ns
        if replay["predicted_window_ns"] is not None:
            assert 0 <= replay["predicted_window_ns"] <= replayed


def _job_gains_and_window(report) -> tuple[float, int]:
    """Σ of a job's gains (every rank's findings but those about the recording, and the job's own,
    whose gains are summed over ranks) and its window (the ranks' windows summed, as the verdict's)."""
    ranks = sum(r.findings.filter(pl.col("regime").cast(pl.String) != "trace")["gain_ns"].drop_nulls().sum()
                for r in report.ranks)
    window = sum(int(r.attribution["window_ns"].sum()) for r in report.ranks if r.attribution.height)
    return ranks + report.job.findings["gain_ns"].drop_nulls().sum(), window


def test_a_jobs_gains_fit_its_summed_window(tmp_path):
    """The straggler's waits, the exposed transfers and each rank's own findings name disjoint
    time: on the synthetic job (tests/multirank.py) and the shared DLRM folder they add up to at
    most the ranks' windows summed."""
    import multirank as mr
    from shared_traces import SHARED_TRACES_DIR

    folders = [mr.write_job(tmp_path / "job")]
    if (SHARED_TRACES_DIR / "param_v100_dlrm_4ranks").is_dir():
        folders.append(SHARED_TRACES_DIR / "param_v100_dlrm_4ranks")
    for folder in folders:
        report = traceanalyze.analyze(folder)
        assert report.job.findings.height >= 2  # the straggler and the exposed transfers are both counted
        gains, window = _job_gains_and_window(report)
        assert gains <= window, (folder, gains, window)
