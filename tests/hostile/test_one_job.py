"""A folder is one job or it is refused (jobs/identity.py): rank files that disagree on the world
size, the device family or the time they ran are named in one line, exit 2, unless --force-job,
which reports them as one with a note saying why they are not (issue 35: 25 unrelated traces read
as "rank 5 is the straggler", clock offsets of 240 days)."""

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

DAY_US = 86_400 * 10**6
UNRELATED = ("hta_a100_alexnet", "hta_mi250_rocm", "kineto_v100_resnet50_2021", "tracelens_h100_bert_small")


def _edit(path: Path, change) -> None:
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document))


def _shift(document: dict, by_us: float) -> None:
    for event in document["traceEvents"]:
        if isinstance(event.get("ts"), (int, float)):
            event["ts"] += by_us


def test_the_ranks_of_one_job_are_one_job(tmp_path):
    report = analyze(write_job(tmp_path / "job"), run=RunOptions(workers=1, cache=False))
    assert [rank.rank for rank in report.ranks] == [0, 1, 2, 3]
    assert not any("not one job" in note for rank in report.ranks for note in rank.notes)


def test_a_rank_from_another_day_is_refused_and_named(tmp_path):
    job = write_job(tmp_path / "job")
    _edit(job / "rank3.json", lambda d: _shift(d, 240 * DAY_US))
    with pytest.raises(NotOneJob, match=r"job: not one job: ran at another time than rank\d.json \(up to 240 days "
                                        r"apart\): rank3.json; .*--force-job"):
        analyze(job, run=RunOptions(workers=1, cache=False))


def test_a_rank_of_another_world_size_is_refused_and_named(tmp_path):
    job = write_job(tmp_path / "job")
    _edit(job / "rank1.json", lambda d: d["distributedInfo"].update(world_size=8))
    with pytest.raises(NotOneJob, match=r"not one job: world size 8 in rank1.json, 4 in the 3 others"):
        analyze(job, run=RunOptions(workers=1, cache=False))


@pytest.mark.parametrize("form", ["terminal", "json", "markdown", "html"])
def test_force_job_reports_them_with_a_note_in_every_format(tmp_path, form):
    job = write_job(tmp_path / "job")
    _edit(job / "rank3.json", lambda d: _shift(d, 240 * DAY_US))
    refused = CliRunner().invoke(app, ["report", str(job), "--workers", "1", "--no-cache", "-f", form])
    assert refused.exit_code == 2 and "not one job" in refused.output
    forced = CliRunner().invoke(app, ["report", str(job), "--workers", "1", "--no-cache", "-f", form, "--force-job",
                                      "--details"])
    assert forced.exit_code == 0, forced.output
    assert "not one job (reported as one: --force-job): ran at another time" in forced.output


@pytest.mark.skipif(not (SHARED_TRACES_DIR / "param_v100_dlrm_4ranks").is_dir(), reason="no shared traces")
def test_unrelated_shared_traces_are_refused_and_the_real_job_is_not(tmp_path):
    for name in UNRELATED:
        (tmp_path / f"{name}.json.gz").symlink_to(SHARED_TRACES_DIR / f"{name}.json.gz")
    with pytest.raises(NotOneJob, match="not one job: device family ROCm in hta_mi250_rocm.json.gz"):
        analyze(tmp_path, run=RunOptions(workers=1, cache=False))
    assert len(analyze(SHARED_TRACES_DIR / "param_v100_dlrm_4ranks", run=RunOptions(workers=1, cache=False)).ranks) == 4


def test_skip_bad_ranks_reports_the_readable_ones_and_names_the_others(tmp_path):
    job = write_job(tmp_path / "job")
    (job / "rank2.json").write_text((job / "rank2.json").read_text()[:5000])  # truncated
    (job / "rank9.json").symlink_to(job / "rank9.json")  # a link loop: was skipped without a word
    with pytest.raises(Exception, match=r"rank2.json"):
        analyze(job, run=RunOptions(workers=1, cache=False))
    report = analyze(job, run=RunOptions(workers=1, cache=False, skip_bad_ranks=True))
    assert [rank.rank for rank in report.ranks] == [0, 1, 3]
    notes = report.ranks[0].notes
    assert any(n.startswith("rank file skipped (--skip-bad-ranks): ") and "rank2.json" in n for n in notes), notes
    assert any("rank9.json" in n and "symbolic link loop" in n for n in notes), notes
    result = CliRunner().invoke(app, ["report", str(job), "--workers", "1", "--no-cache", "--skip-bad-ranks"])
    assert result.exit_code == 0, result.output
    assert "rank file skipped (--skip-bad-ranks)" in result.output


def test_colliding_ranks_are_said(tmp_path):
    job = write_job(tmp_path / "job")
    _edit(job / "rank3.json", lambda d: d["distributedInfo"].update(rank=1))
    report = analyze(job, run=RunOptions(workers=1, cache=False))
    assert [rank.rank for rank in report.ranks] == [0, 1, 2, 3]  # by file name
    assert any(n.startswith("distributedInfo.rank collides (rank 1: rank1.json, rank3.json)") for n in
               report.ranks[0].notes), report.ranks[0].notes


@pytest.mark.parametrize("form", ["terminal", "markdown", "html"])
def test_missing_and_skipped_ranks_come_before_any_claim(tmp_path, form):
    job = write_job(tmp_path / "job", ranks=4)
    for rank in range(4):
        _edit(job / f"rank{rank}.json", lambda d: d["distributedInfo"].update(world_size=8))
    (job / "rank3.json").write_text("{")  # truncated
    result = CliRunner().invoke(app, ["report", str(job), "--workers", "1", "--no-cache", "-f", form,
                                      "--skip-bad-ranks", "--width", "200"])
    assert result.exit_code == 0, result.output
    text = result.output
    missing = text.find("3 of 8 ranks present")
    skipped = text.find("rank file skipped (--skip-bad-ranks)")
    claim = text.find("straggler", text.find("<body") if form == "html" else 0)
    assert 0 <= missing < claim and 0 <= skipped < claim, (missing, skipped, claim)
    if form == "terminal":
        assert missing < text.find("traceanalyze report —")


def test_gate_says_the_missing_and_skipped_ranks(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    job = write_job(tmp_path / "job", ranks=4)
    for rank in range(4):
        _edit(job / f"rank{rank}.json", lambda d: d["distributedInfo"].update(world_size=8))
    result = CliRunner().invoke(app, ["gate", str(job), "--max-idle-fraction", "1", "--width", "200"])
    assert result.exit_code == 0, result.output
    assert "4 of 8 ranks present" in result.output
