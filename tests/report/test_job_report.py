"""The job-level screen of the terminal report and the JSON sections `collectives`,
`stragglers`, `overlap`, `clock_offsets`, on the synthetic job of tests/multirank.py."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import multirank as mr
from traceanalyze.cli import app
from traceanalyze.report.schema import report_from_builtins

runner = CliRunner()


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return mr.write_job(tmp_path_factory.mktemp("job"))


def test_terminal_names_the_straggler_first(folder):
    result = runner.invoke(app, ["report", str(folder)])
    assert result.exit_code == 0, result.output
    text = result.output
    job_at = text.index("JOB — which rank holds the others back?")
    assert f"rank {mr.STRAGGLER} is the straggler: the other ranks waited 15 ms for it in 1 collective" in text
    assert f"step {mr.DELAY_STEP}: it arrived 5 ms after the others (cost them 15 ms); its largest idle: host" in text
    assert job_at < text.index("RANKS")
    # only the straggler's full section without --details
    assert f"details of rank {mr.STRAGGLER} only" in text
    assert [line.split(" —")[0] for line in text.splitlines() if line.startswith("rank ") and " of " in line] == [
        f"rank {mr.STRAGGLER} of {mr.RANKS}"]
    detailed = runner.invoke(app, ["report", str(folder), "--details"]).output
    assert [line.split(" —")[0] for line in detailed.splitlines() if line.startswith("rank ") and " of " in line] == [
        f"rank {r} of {mr.RANKS}" for r in range(mr.RANKS)]


def test_json_sections(folder):
    result = runner.invoke(app, ["report", str(folder), "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    report_from_builtins(doc)  # the schema decodes it
    assert doc["collectives_total"] == 3
    second = doc["collectives"][1]
    assert (second["seq"], second["collective"], second["last_rank"]) == (1, "all_reduce", mr.STRAGGLER)
    assert second["message_bytes"] == mr.MESSAGE_BYTES
    assert second["wait_us"] == 3 * mr.DELAY_US and second["transfer_us"] == mr.TRANSFER_US
    assert second["busbw_bytes_per_s"] == pytest.approx(mr.MESSAGE_BYTES / 2e-3 * 1.5)
    assert [(p["rank"], p["arrival_us"], p["wait_us"]) for p in second["per_rank"]] == [
        (r, mr.DELAY_US if r == mr.STRAGGLER else 0.0, 0.0 if r == mr.STRAGGLER
         else mr.DELAY_US) for r in range(mr.RANKS)]
    stragglers = doc["stragglers"]
    # the straggler's host idle in step 2's window: before its late compute kernel, after the all-reduce
    straggler_host_us = ((20 + mr.DELAY_US) + mr.step_start(mr.DELAY_STEP) + mr.STEP_US
                         - mr.collective_end(mr.DELAY_STEP))
    assert stragglers["slowest_rank"] == mr.STRAGGLER
    assert stragglers["steps"] == [{"step": mr.DELAY_STEP, "slowest_rank": mr.STRAGGLER, "behind_us": mr.DELAY_US,
                                    "others_wait_us": 3 * mr.DELAY_US, "collectives_last": 1, "ranks": mr.RANKS,
                                    "cause": "host", "cause_us": straggler_host_us}]
    assert len(stragglers["rank_steps"]) == mr.RANKS * mr.STEPS
    assert [c["offset_us"] for c in doc["clock_offsets"]] == [mr.OFFSETS_US[r] for r in range(mr.RANKS)]
    assert doc["overlap"][0]["overlapped_us"] == mr.OVERLAP_US


def test_one_rank_has_empty_job_sections(tmp_path):
    path = mr.build_rank(0).write(tmp_path / "rank0.json")
    doc = json.loads(runner.invoke(app, ["report", str(path), "--format", "json"]).output)
    assert doc["collectives"] == [] and doc["clock_offsets"] == [] and doc["stragglers"]["slowest_rank"] is None
    assert doc["overlap"][0]["communication_us"] == 3 * mr.TRANSFER_US + mr.DELAY_US  # its kernels, waits included


def test_html_job_charts(folder, tmp_path):
    out = tmp_path / "job.html"
    result = runner.invoke(app, ["report", str(folder), "--format", "html", "-o", str(out)])
    assert result.exit_code == 0, result.output
    html = out.read_text()
    job_at = html.index('id="job"')
    for label in ("Step time per rank", "Collectives on one clock", "Collectives: the longest wait of a rank"):
        assert job_at < html.index(label) < html.index('id="ranks"')
    # the heatmap cell of a waiting rank in the straggler's step, and the aligned timeline's wait
    assert f"rank 0, step {mr.DELAY_STEP}: 20 ms; waiting 5 ms (25.0%)" in html
    assert f"rank {mr.STRAGGLER}, step {mr.DELAY_STEP}: 20 ms; waiting 0 ns (0.0%)" in html
    assert "all_reduce #1: waited 5000.0 µs" in html
    markdown = runner.invoke(app, ["report", str(folder), "--format", "markdown"]).output
    assert f"**rank {mr.STRAGGLER} is the straggler**: the other ranks waited 15 ms" in markdown


def test_a_job_of_many_ranks_draws_the_timelines_of_the_straggler_and_the_most_idle(tmp_path):
    """Ten ranks, rank 7 the straggler: the HTML draws the timeline and roofline of 8 ranks
    (`document.CHARTED_RANKS`), the straggler among them; each other rank's section says why its
    charts are missing and how to draw them; the Markdown says nothing of charts."""
    from html import unescape

    from traceanalyze.renderers.document import CHARTED_RANKS

    folder = mr.write_job(tmp_path / "job", ranks=10, delays={(7, mr.DELAY_STEP): mr.DELAY_US})
    html_path, md_path = tmp_path / "job.html", tmp_path / "job.md"
    for fmt, out in (("html", html_path), ("markdown", md_path)):
        result = CliRunner().invoke(app, ["report", str(folder), "--format", fmt, "-o", str(out), "--no-cache"])
        assert result.exit_code == 0, result.output
    html = unescape(html_path.read_text())
    sections = html.split('<details class="rank" id="rank-')[1:]
    assert len(sections) == 10
    drawn = [int(s.split('"', 1)[0]) for s in sections if "Timeline and roofline not drawn" not in s]
    assert len(drawn) == CHARTED_RANKS == 8 and 7 in drawn
    undrawn = next(s for s in sections if "Timeline and roofline not drawn" in s)
    assert "traceanalyze report " in undrawn and "--format html" in undrawn
    assert "drawn for 8 of the 10 ranks" in html
    assert "roofline charts" not in md_path.read_text()
