"""The map/reduce of a folder gives the same report as loading every rank at once, on every
executor (local processes, Ray tasks, Dask futures), and a worker's bad input still fails with
its one-line error."""

from __future__ import annotations

import importlib.util
import json
import shutil

import pytest

import multirank as mr
import traceanalyze
from shared_traces import SHARED_TRACES_DIR
from traceanalyze.errors import TraceAnalyzeError
from traceanalyze.renderers.jsonout import render_json
from traceanalyze import RunOptions

DLRM = SHARED_TRACES_DIR / "param_v100_dlrm_4ranks"
needs_dlrm = pytest.mark.skipif(not DLRM.is_dir(),
                                reason=f"{DLRM} is absent (the shared traces sit next to the repository)")


@pytest.fixture(scope="module")
def job_folder(tmp_path_factory):
    return mr.write_job(tmp_path_factory.mktemp("job"))


def _json(report) -> str:
    return render_json(report)


def _all_at_once(folder) -> str:
    return _json(traceanalyze.analyze(traceanalyze.load_trace(folder, workers=1)))


@needs_dlrm
def test_local_map_reduce_equals_loading_every_rank():
    expected = _all_at_once(DLRM)
    assert _json(traceanalyze.analyze(DLRM, run=RunOptions(workers=1))) == expected
    assert _json(traceanalyze.analyze(DLRM, run=RunOptions(workers=2))) == expected


def test_synthetic_job_equals_loading_every_rank(job_folder):
    assert _json(traceanalyze.analyze(job_folder, run=RunOptions(workers=1))) == _all_at_once(job_folder)


def test_ranks_from_file_names_when_distributed_info_is_absent(tmp_path):
    for rank in (3, 1):  # no distributedInfo: the names give the ranks
        builder = mr.build_rank(rank)
        builder.rank = None
        builder.write(tmp_path / f"worker_rank{rank}.json")
    report = traceanalyze.analyze(tmp_path, run=RunOptions(workers=1))
    assert [r.rank for r in report.ranks] == [1, 3]
    assert [r.rank_source for r in report.ranks] == ["file name", "file name"]
    assert report.ranks[0].collectives["rank"].unique().to_list() == [1]
    assert _json(report) == _all_at_once(tmp_path)


def test_fsspec_url_is_read_by_the_worker(job_folder):
    from traceanalyze.pipeline.mapreduce import analyse_file, reduce_ranks
    from traceanalyze.report.model import ReportOptions

    options = ReportOptions()
    files = sorted(job_folder.glob("*.json"))
    import fsspec

    memory = fsspec.filesystem("memory")
    for f in files:
        memory.pipe(f"/job/{f.name}", f.read_bytes())
    from_urls = reduce_ranks([analyse_file(f"memory://job/{f.name}", options) for f in files],
                             [f.name for f in files], options, job_folder)
    local = reduce_ranks([analyse_file(str(f), options) for f in files], [f.name for f in files], options, job_folder)
    a, b = json.loads(_json(from_urls)), json.loads(_json(local))
    for entry in (*a["ranks"], *b["ranks"]):
        entry.pop("source", None)
    assert a == b


def _without_sources(text: str) -> dict:
    doc = json.loads(text)
    doc.pop("source")
    for entry in doc["ranks"]:
        entry.pop("source")
    return doc


def test_folder_url_is_listed_here_and_read_by_the_workers(job_folder, tmp_path):
    """A folder named by URL (fsspec): `memory://` (this process only: one worker) and `file://`
    through the command (two spawned workers read the URLs themselves) give the local JSON."""
    import fsspec
    from typer.testing import CliRunner

    from traceanalyze.cli import app

    local = _without_sources(_json(traceanalyze.analyze(job_folder, run=RunOptions(workers=1))))
    memory = fsspec.filesystem("memory")
    for f in sorted(job_folder.glob("*.json")):
        memory.pipe(f"/urljob/{f.name}", f.read_bytes())
    memory.pipe("/urljob/notes.txt", b"not a trace")
    report = traceanalyze.analyze("memory://urljob", run=RunOptions(workers=1))
    # the URLs as they are (fsspec lists them as memory:///…), not folded to memory:/… by Path
    assert [str(r.source) for r in report.ranks] == [f"memory:///urljob/rank{r}.json" for r in range(mr.RANKS)]
    assert str(report.source) == "memory://urljob"
    assert _without_sources(_json(report)) == local
    result = CliRunner().invoke(app, ["report", f"file://{job_folder}", "--format", "json", "--workers", "2"])
    assert result.exit_code == 0, result.output
    assert _without_sources(result.output) == local


@pytest.mark.parametrize(("url", "message"), [
    ("nosuchscheme://bucket/job", "nosuchscheme://bucket/job: "),
    ("memory://emptyjob", "memory://emptyjob: folder holds no .json or .json.gz trace files"),
])
def test_bad_folder_url_is_one_line(url, message):
    import fsspec
    from typer.testing import CliRunner

    from traceanalyze.cli import app

    fsspec.filesystem("memory").makedirs("/emptyjob", exist_ok=True)
    result = CliRunner().invoke(app, ["report", url])
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output


def test_bad_rank_file_fails_with_its_error(tmp_path, job_folder):
    folder = tmp_path / "bad"
    shutil.copytree(job_folder, folder)
    (folder / "rank2.json").write_text('{"traceEvents": [')
    for workers in (1, 2):
        with pytest.raises(TraceAnalyzeError, match="rank2.json"):
            traceanalyze.analyze(folder, run=RunOptions(workers=workers))


def test_unknown_executor_is_refused(job_folder):
    with pytest.raises(TraceAnalyzeError, match="--executor"):
        traceanalyze.analyze(job_folder, run=RunOptions(executor="slurm"))


@pytest.mark.skipif(importlib.util.find_spec("distributed") is None,
                    reason="Dask is not installed (pip install 'traceanalyze[dask]')")
@needs_dlrm
def test_dask_local_cluster_gives_the_same_json():
    assert _json(traceanalyze.analyze(DLRM, run=RunOptions(executor="dask", workers=2))) == _all_at_once(DLRM)


@pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                    reason="Ray is not installed (pip install 'traceanalyze[ray]')")
@needs_dlrm
def test_ray_gives_the_same_json(monkeypatch):
    import ray

    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        assert _json(traceanalyze.analyze(DLRM, run=RunOptions(executor="ray"))) == _all_at_once(DLRM)
    finally:
        ray.shutdown()


@pytest.mark.parametrize(("executor", "workers", "ranks", "asked", "threads"), [
    ("local", 2, 4, 0, 1),     # ranks side by side on the cores: one thread each
    ("local", 1, 4, 0, 0),     # one rank at a time: its analyses use the cores
    ("local", None, 1, 0, 0),  # one rank
    ("ray", None, 4, 0, 1),    # a cluster runs ranks side by side
    ("local", 2, 4, 3, 3),     # a number the options name stays
])
def test_workers_analysing_ranks_side_by_side_use_one_thread_each(executor, workers, ranks, asked, threads):
    from traceanalyze.pipeline.executors import per_worker
    from traceanalyze.report.model import ReportOptions

    assert per_worker(ReportOptions(analysis_threads=asked), executor, workers, ranks).analysis_threads == threads


def test_the_local_workers_get_one_thread_each(job_folder, monkeypatch):
    from traceanalyze.pipeline import executors
    from traceanalyze.report.model import ReportOptions

    seen = []
    real = executors.EXECUTORS["local"]

    def spying(paths, options, *rest, **keywords):
        seen.append((options.analysis_threads, rest[0]))
        return real(paths, options, *rest, **keywords)

    monkeypatch.setitem(executors.EXECUTORS, "local", spying)
    executors.analyse_folder(job_folder, ReportOptions(), workers=2)
    assert seen == [(1, 2)]
