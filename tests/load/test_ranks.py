"""Which rank a file is: distributedInfo, else the file name, else the file's order in a folder."""

from __future__ import annotations

import json

import polars as pl
from typer.testing import CliRunner

from builder import TraceBuilder

import traceanalyze
from traceanalyze.cli import app
from traceanalyze.renderers.jsonout import report_to_dict
from traceanalyze.pipeline.rank import build_report
from traceanalyze.analysis.health import trace_health


def one_kernel(rank=None, world_size=None) -> TraceBuilder:
    b = TraceBuilder(rank=rank, world_size=world_size)
    b.launch_kernel(launch_us=0, start_us=5, dur_us=5)
    return b


def meta(trace):
    return [(m.rank, m.rank_source) for m in trace.meta]


def findings(trace, name):
    return trace_health(trace).filter(pl.col("finding") == name)


def test_single_file_takes_its_rank_from_its_name(tmp_path):
    trace = traceanalyze.load_trace(one_kernel().write(tmp_path / "rank3.json"))
    assert meta(trace) == [(3, "file name")]
    assert trace.gpu["rank"].to_list() == [3]


def test_single_file_prefers_distributed_info_over_its_name(tmp_path):
    trace = traceanalyze.load_trace(one_kernel(rank=5, world_size=8).write(tmp_path / "rank3.json"))
    assert meta(trace) == [(5, "distributedInfo")]


def test_single_file_without_any_rank_is_rank_0(tmp_path):
    assert meta(traceanalyze.load_trace(one_kernel().write(tmp_path / "trace.json"))) == [(0, "default")]


def test_folder_ranks_from_file_order(tmp_path):
    for name in ("worker_b.json", "worker_a.json", "worker_c.json.gz"):
        one_kernel().write(tmp_path / name)
    trace = traceanalyze.load_trace(tmp_path)
    assert meta(trace) == [(0, "file order"), (1, "file order"), (2, "file order")]
    assert [m.source.name for m in trace.meta] == ["worker_a.json", "worker_b.json", "worker_c.json.gz"]
    assert findings(trace, "distributed_rank_not_used").is_empty()


def test_folder_ranks_from_file_names(tmp_path):
    for rank in (7, 2):
        one_kernel().write(tmp_path / f"trace_rank_{rank}.json")
    assert meta(traceanalyze.load_trace(tmp_path)) == [(2, "file name"), (7, "file name")]


def test_duplicated_distributed_ranks_fall_back_with_a_finding(tmp_path):
    one_kernel(rank=0, world_size=2).write(tmp_path / "rank0.json")
    one_kernel(rank=0, world_size=2).write(tmp_path / "rank1.json")  # copied config: rank 0 twice
    trace = traceanalyze.load_trace(tmp_path)
    assert meta(trace) == [(0, "file name"), (1, "file name")]
    found = findings(trace, "distributed_rank_not_used")
    assert found["rank"].to_list() == [0, 1] and found["count"].to_list() == [1, 1]
    assert "distributedInfo says rank 0" in found["detail"][1] and "file name" in found["detail"][1]


def test_distinct_distributed_ranks_have_no_finding(tmp_path):
    one_kernel(rank=1, world_size=2).write(tmp_path / "a.json")
    one_kernel(rank=0, world_size=2).write(tmp_path / "b.json")
    trace = traceanalyze.load_trace(tmp_path)
    assert meta(trace) == [(0, "distributedInfo"), (1, "distributedInfo")]
    assert findings(trace, "distributed_rank_not_used").is_empty()


def test_missing_ranks_are_noted(tmp_path):
    for rank in (0, 2, 4, 6):
        one_kernel(rank=rank, world_size=8).write(tmp_path / f"rank{rank}.json")
    note = "4 of 8 ranks present (world size 8 in distributedInfo); missing: 1, 3, 5, 7"
    doc = report_to_dict(build_report(traceanalyze.load_trace(tmp_path)))
    assert note in doc["notes"]
    runner = CliRunner()
    for command in ("report", "info"):
        result = runner.invoke(app, [command, str(tmp_path)])
        assert result.exit_code == 0, result.output
        assert f"note: {note}" in result.output


def test_no_missing_ranks_note_when_all_present_or_single_file(tmp_path):
    for rank in (0, 1):
        one_kernel(rank=rank, world_size=2).write(tmp_path / f"rank{rank}.json")
    single = tmp_path / "single"
    single.mkdir()
    path = one_kernel(rank=0, world_size=8).write(single / "rank0.json")
    for source in (tmp_path, path):
        doc = report_to_dict(build_report(traceanalyze.load_trace(source)))
        assert not any("ranks present" in note for note in doc["notes"]), json.dumps(doc["notes"])
