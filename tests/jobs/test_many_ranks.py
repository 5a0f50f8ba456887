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
