"""Small ranks analysed together (`pipeline.rank.rank_reports`, `mapreduce.analyse_files`) give
each rank the report it gets alone, frame for frame and number for number, on the synthetic job,
on ranks of different devices, programs and shapes (every shared and recorded trace as a rank of
one batch), with colliding rank numbers, and when a rank of the batch is bad input."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import polars as pl
import pytest

import multirank as mr
from builder import TraceBuilder
from shared_traces import SHARED_TRACES_DIR
from traceanalyze.errors import TraceAnalyzeError
from traceanalyze.load import load_rank
from traceanalyze.pipeline import mapreduce
from traceanalyze.pipeline import results_cache
from traceanalyze.pipeline.mapreduce import SkippedRank, analyse_file, analyse_files
from traceanalyze.pipeline.rank import batches, rank_report, rank_reports, started_rank
from traceanalyze.report.model import RankReport, ReportOptions

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
FULL = ReportOptions(analysis_threads=1)


def _differences(alone: RankReport, together: RankReport) -> list[str]:
    """The fields in which two reports of one rank differ (frames: values, types and row order)."""
    names = []
    for field in dataclasses.fields(RankReport):
        a, b = getattr(alone, field.name), getattr(together, field.name)
        if not (a.equals(b) if isinstance(a, pl.DataFrame) else a == b):
            names.append(field.name)
    return names


def _assert_same_as_alone(traces) -> None:
    together = rank_reports(traces, FULL)
    for trace, report in zip(traces, together):
        assert _differences(rank_report(trace, FULL), report) == [], trace.meta[0].source


def _mixed_ranks(folder: Path) -> list[Path]:
    """The synthetic job, a CPU-only rank and a rank of one op, as files."""
    job = mr.write_job(folder, ranks=4)
    cpu_only = TraceBuilder(rank=4, world_size=6)
    for step in range(1, 3):
        cpu_only.step(step, step * 1_000, 900)
        cpu_only.cpu_op("aten::mm", step * 1_000 + 10, 300)
    cpu_only.write(job / "rank4.json")
    one_op = TraceBuilder(rank=5, world_size=6)
    one_op.cpu_op("aten::add", 500, 5)
    one_op.write(job / "rank5.json")
    return sorted(job.glob("rank*.json"))


def test_ranks_together_get_their_own_reports(tmp_path):
    _assert_same_as_alone([load_rank(path) for path in _mixed_ranks(tmp_path / "job")])


@pytest.mark.skipif(not SHARED_TRACES_DIR.is_dir(),
                    reason=f"{SHARED_TRACES_DIR} is absent (the shared traces sit next to the repository)")
def test_every_shared_and_recorded_trace_in_one_batch_gets_its_own_report():
    """Devices, vendors, PyTorch versions, CPU-only and GPU-only ranks side by side: no rank's
    figures depend on the others (a sort without ties broken, a sum in another order, a quotient
    by a divisor that is one value for one rank, a check run over every rank would show here)."""
    paths = sorted(SHARED_TRACES_DIR.glob("*.json.gz")) + sorted(FIXTURES.glob("**/*.json.gz"))
    paths += sorted((SHARED_TRACES_DIR / "param_v100_dlrm_4ranks").glob("*.json.gz"))
    traces = [load_rank(path) for path in paths]
    assert len(batches([started_rank(t, FULL) for t in traces])) > 1  # many files of rank 0: several batches
    _assert_same_as_alone(traces)


def test_batches_hold_a_rank_number_once_and_one_window(tmp_path):
    paths = _mixed_ranks(tmp_path / "job")
    traces = [load_rank(p) for p in paths] + [load_rank(paths[0]), load_rank(paths[1]), load_rank(paths[0])]
    steps = dataclasses.replace(FULL, window="steps")
    started = [started_rank(t, steps) for t in traces]
    # rank 5 has no steps: its window falls back to the GPU span, so it goes alone
    assert [s.window for s in started] == ["steps"] * 5 + ["activity"] + ["steps"] * 3
    assert batches(started) == [[0, 1, 2, 3, 4], [5], [6, 7], [8]]
    together = rank_reports(traces, steps)
    assert [r.rank for r in together] == [0, 1, 2, 3, 4, 5, 0, 1, 0]
    assert _differences(rank_report(traces[6], steps), together[6]) == []


def _json_of(results) -> list[str]:
    out = []
    for result in results:
        if isinstance(result, SkippedRank):
            out.append(f"skipped {Path(result.path).name}: {result.error}")
        else:
            out.append(repr(report_to_dict_of_rank(result)))
    return out


def report_to_dict_of_rank(report: RankReport) -> dict:
    """A rank's bounded report as a plain dict, to compare two of them."""
    return {field.name: (getattr(report, field.name).to_dicts() if isinstance(getattr(report, field.name), pl.DataFrame)
                         else repr(getattr(report, field.name)))
            for field in dataclasses.fields(RankReport)}


def test_files_batched_as_the_worker_reads_them(tmp_path, monkeypatch):
    """`analyse_files` batches the small ranks up to `BATCH_EVENTS` and analyses a larger one alone,
    and each result is the one `analyse_file` gives for that file."""
    paths = [str(p) for p in _mixed_ranks(tmp_path / "job")]
    events = [load_rank(p).meta[0].event_count for p in paths]
    seen: list[list[int]] = []
    real = mapreduce.rank_reports

    def spy(traces, options):
        seen.append([t.meta[0].rank for t in traces])
        return real(traces, options)

    monkeypatch.setattr(mapreduce, "rank_reports", spy)
    monkeypatch.setattr(mapreduce, "SMALL_RANK_EVENTS", events[1] - 1)  # rank 1 and larger ones: alone
    monkeypatch.setattr(mapreduce, "BATCH_EVENTS", events[4] + events[5])  # ranks 4 and 5 fill a batch
    bounded = dataclasses.replace(FULL, rank_frames="bounded")
    results = analyse_files(paths, bounded)
    small = [r for r, n in enumerate(events) if n <= events[1] - 1]
    large = [r for r, n in enumerate(events) if n > events[1] - 1]
    assert 1 in large and {4, 5} <= set(small)
    assert sorted(r for batch in seen for r in batch) == list(range(6))
    assert [[r] for r in large] == [batch for batch in seen if len(batch) == 1 and batch[0] in large]
    assert [4, 5] in seen  # the two smallest, together
    alone = [analyse_file(p, bounded) for p in paths]
    assert _json_of(results) == _json_of(alone)


def test_a_bad_rank_of_a_batch_is_skipped_alone(tmp_path):
    paths = [str(p) for p in _mixed_ranks(tmp_path / "job")]
    truncated = Path(paths[2])
    truncated.write_bytes(truncated.read_bytes()[:200])
    bounded = dataclasses.replace(FULL, rank_frames="bounded")
    results = analyse_files(paths, bounded, skip_bad=True)
    assert isinstance(results[2], SkippedRank) and results[2].path == paths[2]
    assert [isinstance(r, SkippedRank) for r in results] == [False, False, True, False, False, False]
    kept = [p for i, p in enumerate(paths) if i != 2]
    assert _json_of([r for r in results if not isinstance(r, SkippedRank)]) == _json_of(
        [analyse_file(p, bounded) for p in kept])
    with pytest.raises(TraceAnalyzeError, match=truncated.name):
        analyse_files(paths, bounded)


def test_an_analysis_that_fails_in_a_batch_names_its_rank(tmp_path):
    """--skip-steps 2 leaves rank 4 (CPU only, 2 steps) nothing: the batch fails, its ranks are then
    analysed one by one and only that rank is skipped (or ends the job, naming it)."""
    paths = [str(p) for p in _mixed_ranks(tmp_path / "job")[:5]]
    for path in paths[:4]:  # the GPU ranks get a third step
        mr_path = Path(path)
        assert load_rank(mr_path).steps.height >= 3
    options = dataclasses.replace(FULL, rank_frames="bounded", skip_steps=2)
    results = analyse_files(paths, options, skip_bad=True)
    assert [isinstance(r, SkippedRank) for r in results] == [False] * 4 + [True]
    assert "rank4.json" in results[4].path
    with pytest.raises(TraceAnalyzeError):
        analyse_files(paths, options)


def test_batched_results_are_cached_and_read_back(tmp_path, monkeypatch, cache_everything):
    paths = [str(p) for p in _mixed_ranks(tmp_path / "job")[:4]]  # the GPU ranks (whose entries come back exact)
    bounded = dataclasses.replace(FULL, rank_frames="bounded")
    cache = tmp_path / "cache"
    first = analyse_files(paths, bounded, cache=cache)
    results_cache.frame_schemas()  # (its probe of an empty rank is not counted)
    calls = []
    monkeypatch.setattr(mapreduce, "rank_reports", lambda traces, options: calls.append(traces) or [])
    again = analyse_files(paths, bounded, cache=cache)
    assert calls == []  # every rank from its cache entry
    assert _json_of(again) == _json_of(first)
