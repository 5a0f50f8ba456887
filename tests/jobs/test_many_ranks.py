"""A folder of many tiny ranks (a rank's cost is mostly fixed: about a quarter of a second on 2
busy cores, whatever its size) runs on every core from `MANY_RANKS` files, however small the folder,
and the local executor hands each worker its ranks in batches (one task, one round trip per batch):
the report is the same, byte for byte, in file order."""

from __future__ import annotations

import multirank as mr
import traceanalyze
from traceanalyze import RunOptions
from traceanalyze.pipeline import executors
from traceanalyze.renderers.jsonout import render_json


def test_many_tiny_ranks_use_every_core(tmp_path, monkeypatch):
    files = [tmp_path / f"rank{rank}.json" for rank in range(executors.MANY_RANKS)]
    for path in files:
        path.write_text("{}")
    monkeypatch.setattr(executors.os, "cpu_count", lambda: 2)
    assert executors._local_workers(files) == 2
    assert executors._local_workers(files[:executors.MANY_RANKS - 1]) == 1  # few tiny ranks: here, one by one


def test_batches_give_the_report_of_one_rank_at_a_time(tmp_path, monkeypatch):
    job = mr.write_job(tmp_path / "job", ranks=6)
    one_by_one = render_json(traceanalyze.analyze(job, run=RunOptions(workers=1, cache=False)))
    monkeypatch.setattr(executors, "BATCHES_PER_WORKER", 1)  # 6 ranks, 2 workers: 2 batches of 3
    assert executors.batch_size(6, 2) == 3
    batched = traceanalyze.analyze(job, run=RunOptions(workers=2, cache=False))
    assert render_json(batched) == one_by_one
    assert [rank.rank for rank in batched.ranks] == list(range(6))


def test_worker_path_gives_the_report_of_the_parent_path_on_mixed_ranks(tmp_path):
    """The path a many-rank folder takes (batches in worker processes: each rank's analyses in order
    in one thread, one polars thread per worker, its frames not copied before they are pickled back)
    against every rank analysed here with the analysis threads: the same JSON and Markdown, byte
    for byte, on ranks with collectives and steps, a rank without GPU events and a rank of one CPU op (no steps; a
    rank without events is refused)."""
    from builder import TraceBuilder

    from traceanalyze.renderers.markdown import render_markdown

    job = mr.write_job(tmp_path / "job", ranks=4)
    cpu_only = TraceBuilder(rank=4, world_size=6)
    for step in range(1, 3):
        cpu_only.step(step, step * 1_000, 900)
        cpu_only.cpu_op("aten::mm", step * 1_000 + 10, 300)
    cpu_only.write(job / "rank4.json")
    nearly_empty = TraceBuilder(rank=5, world_size=6)  # no events at all is refused: one op, no step
    nearly_empty.cpu_op("aten::add", 500, 5)
    nearly_empty.write(job / "rank5.json")
    here = traceanalyze.analyze(job, run=RunOptions(workers=1, cache=False, force_job=True))
    in_workers = traceanalyze.analyze(job, run=RunOptions(workers=2, cache=False, force_job=True))
    assert [rank.has_gpu for rank in here.ranks] == [True] * 4 + [False, False]
    assert here.ranks[0].collectives.height and here.ranks[0].step_split.height  # what the job analyses read
    assert render_json(in_workers) == render_json(here)
    assert render_markdown(in_workers) == render_markdown(here)


def test_every_executor_cuts_the_files_into_ordered_batches():
    paths = [f"rank{rank}.json" for rank in range(1000)]
    batches = executors.in_batches(paths, 2)
    assert [len(batch) for batch in batches] == [125] * 8  # 4 tasks a worker
    assert [p for batch in batches for p in batch] == paths
    assert executors.in_batches(paths[:3], 16) == [["rank0.json"], ["rank1.json"], ["rank2.json"]]
    assert executors.in_batches(paths[:9], 0) == [paths[0:2], paths[2:4], paths[4:6], paths[6:8], paths[8:9]]
