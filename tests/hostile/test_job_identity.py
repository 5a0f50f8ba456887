"""A folder is one job only when its ranks agree on the process group and job `distributedInfo`
records (backend, NCCL version, `pg_count`, the default process group of `pg_config`) and on the
trace's `schemaVersion` (pipeline/identity.py, `job_identity`): a rank that disagrees is named in one
line, exit 2, unless --force-job, which reports the ranks as one with the note."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from multirank import write_job
from shared_traces import SHARED_TRACES_DIR
from traceanalyze.api import analyze
from traceanalyze.cli import app
from traceanalyze.pipeline.identity import NotOneJob
from traceanalyze.pipeline.options import RunOptions

RUN = RunOptions(workers=1, cache=False)


def _edit(path: Path, change) -> None:
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document))


def _groups(size: int, backend: str = "cuda:nccl"):
    return lambda d: d["distributedInfo"].update(
        pg_count=2, nccl_version="2.17.1",
        pg_config=[{"pg_name": "0", "pg_desc": "default_pg", "backend_config": backend, "pg_size": size,
                    "ranks": list(range(size))},
                   {"pg_name": "1", "pg_desc": "undefined", "backend_config": backend, "pg_size": 2, "ranks": [0, 1]}])


def _job(tmp_path: Path) -> Path:
    job = write_job(tmp_path / "job")
    for rank in range(4):
        _edit(job / f"rank{rank}.json", _groups(4))
    return job


def test_ranks_that_share_their_process_groups_are_one_job(tmp_path):
    report = analyze(_job(tmp_path), run=RUN)
    assert dict(report.ranks[0].job_identity) == {
        "backend": "nccl", "nccl_version": "2.17.1", "pg_count": "2", "default_pg": "cuda:nccl, 4 ranks",
        "schema_version": "1"}
    assert not any("not one job" in note for rank in report.ranks for note in rank.notes)


@pytest.mark.parametrize(("change", "said"), [
    (lambda d: d["distributedInfo"].update(backend="gloo"), "backend gloo in rank2.json, nccl in the 3 others"),
    (lambda d: d["distributedInfo"].update(nccl_version="2.21.5"),
     "NCCL version 2.21.5 in rank2.json, 2.17.1 in the 3 others"),
    (lambda d: d["distributedInfo"].update(pg_count=9), "process group count 9 in rank2.json, 2 in the 3 others"),
    (_groups(4, "cpu:gloo,cuda:gloo"),
     "default process group cpu:gloo,cuda:gloo, 4 ranks in rank2.json, cuda:nccl, 4 ranks in the 3 others"),
    (lambda d: d.update(schemaVersion=2), "trace schemaVersion 2 in rank2.json, 1 in the 3 others"),
])
def test_a_rank_of_another_process_group_is_refused_and_named(tmp_path, change, said):
    job = _job(tmp_path)
    _edit(job / "rank2.json", change)
    with pytest.raises(NotOneJob, match="not one job: " + said.replace("(", r"\(")):
        analyze(job, run=RUN)
    result = CliRunner().invoke(app, ["report", str(job), "--no-cache", "--workers", "1"])
    assert result.exit_code == 2 and "Traceback" not in result.output and said in result.output
    forced = analyze(job, run=RunOptions(workers=1, cache=False, force_job=True))
    assert all(f"not one job (reported as one: --force-job): {said}" in rank.notes[0] for rank in forced.ranks)


def test_a_rank_that_does_not_record_it_is_not_odd(tmp_path):
    job = _job(tmp_path)
    _edit(job / "rank1.json", lambda d: [d["distributedInfo"].pop(key) for key in ("pg_config", "nccl_version")])
    analyze(job, run=RUN)


def test_the_dlrm_ranks_are_one_job():
    folder = SHARED_TRACES_DIR / "param_v100_dlrm_4ranks"
    if not folder.is_dir():
        pytest.skip("shared traces not present")
    report = analyze(folder, run=RUN)
    assert len(report.ranks) == 4 and not any("not one job" in n for r in report.ranks for n in r.notes)
