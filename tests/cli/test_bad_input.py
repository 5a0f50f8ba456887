"""Bad input: one line naming the file and the problem, exit code 2, never a traceback."""

from __future__ import annotations

import gzip
import json

import pytest
from typer.testing import CliRunner

from traceanalyze.cli import app
from traceanalyze.analysis.health import trace_health

runner = CliRunner()


def run(*args):
    return runner.invoke(app, list(map(str, args)))


def assert_clean_failure(result, path_fragment):
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert "Traceback" not in result.output
    assert path_fragment in lines[0]


VALID_EVENT = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1.0, "dur": 2.0,
               "args": {"device": 0, "stream": 7, "correlation": 1}}


@pytest.fixture
def bad_files(tmp_path):
    files = {}
    files["empty"] = tmp_path / "empty.json"
    files["empty"].write_bytes(b"")
    files["truncated_gzip"] = tmp_path / "truncated.json.gz"
    files["truncated_gzip"].write_bytes(gzip.compress(json.dumps({"traceEvents": [VALID_EVENT] * 50}).encode())[:40])
    files["invalid_json"] = tmp_path / "invalid.json"
    files["invalid_json"].write_text('{"traceEvents": [{"ph": "X", ')
    files["not_a_trace"] = tmp_path / "other.json"
    files["not_a_trace"].write_text('{"name": "package.json", "version": "1.0"}')
    files["not_json"] = tmp_path / "notes.json"
    files["not_json"].write_text("hello, world")
    files["json_scalar"] = tmp_path / "scalar.json"
    files["json_scalar"].write_text("42")
    files["events_not_a_list"] = tmp_path / "events_dict.json"
    files["events_not_a_list"].write_text('{"traceEvents": {"a": 1}}')
    files["no_events"] = tmp_path / "no_events.json"
    files["no_events"].write_text('{"traceEvents": []}')
    return files


@pytest.mark.parametrize("command", ["info", "report"])
@pytest.mark.parametrize(
    "case",
    ["empty", "truncated_gzip", "invalid_json", "not_a_trace", "not_json", "json_scalar", "events_not_a_list",
     "no_events"],
)
def test_bad_files_fail_cleanly(bad_files, case, command):
    path = bad_files[case]
    assert_clean_failure(run(command, path), path.name)


@pytest.mark.parametrize("command", ["info", "report"])
def test_missing_path(tmp_path, command):
    assert_clean_failure(run(command, tmp_path / "nope.json.gz"), "nope.json.gz")


def test_folder_without_traces(tmp_path):
    (tmp_path / "readme.txt").write_text("not a trace")
    assert_clean_failure(run("report", tmp_path), str(tmp_path.name))


def test_events_missing_required_fields_are_skipped_and_counted(tmp_path):
    events = [
        VALID_EVENT,
        {"ph": "X", "cat": "kernel", "name": "no ts", "dur": 1.0},
        {"ph": "X", "cat": "kernel", "name": "negative", "ts": 5.0, "dur": -3.0},
        {"ph": "X", "cat": "cpu_op", "name": "absurd", "ts": 5.0, "dur": 1e12},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": "soon", "dur": 1},
    ]
    path = tmp_path / "some_bad.json"
    path.write_text(json.dumps({"traceEvents": events}))
    import traceanalyze

    trace = traceanalyze.load_trace(path)
    assert trace.gpu.height == 1
    assert trace.skipped["count"].sum() == 4
    health = trace_health(trace)
    assert health.filter(health["finding"] == "malformed_events_skipped")["count"].sum() == 4
    result = run("info", path)
    assert result.exit_code == 0, result.output
    assert "malformed_events_skipped" in result.output


def test_wrongly_typed_args_do_not_lose_the_trace(tmp_path):
    odd = dict(VALID_EVENT, args={"device": 0, "stream": 7, "correlation": 2, "grid": "not a list",
                                  "shared memory": "big"})
    broken = dict(VALID_EVENT, args=["not", "an", "object"])
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"traceEvents": [VALID_EVENT, odd, broken]}))
    import traceanalyze

    trace = traceanalyze.load_trace(path)
    assert trace.gpu.height == 2
    assert trace.skipped["count"].sum() == 1


def test_bare_event_list_is_accepted(tmp_path):
    path = tmp_path / "list.json"
    path.write_text(json.dumps([VALID_EVENT]))
    result = run("report", path, "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["summary"]["gpu_busy_us"] == 2.0


HUGE_TS = dict(VALID_EVENT, name="huge ts", ts=2**70)  # an integer µs whose ns do not fit in int64


def test_integer_ts_beyond_int64_is_skipped_and_counted(tmp_path):
    path = tmp_path / "huge_ts.json"
    path.write_text(json.dumps({"traceEvents": [VALID_EVENT, HUGE_TS]}))
    result = run("report", path, "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["summary"]["gpu_busy_us"] == 2.0  # only the valid kernel
    health = {h["finding"]: h["count"] for h in doc["ranks"][0]["health"]}
    assert health["malformed_events_skipped"] == 1


@pytest.mark.parametrize("command", ["info", "report"])
@pytest.mark.parametrize("events", [
    [HUGE_TS],
    [HUGE_TS, {"ph": "X", "cat": "kernel", "name": "no ts", "dur": 1.0}, dict(VALID_EVENT, dur=-3.0)],
    [{"ph": "X", "cat": "unknown_category", "name": "x", "ts": 1, "dur": 1}, {"ph": "M", "name": "process_name"}],
], ids=["huge_ts", "all_malformed", "nothing_analysed"])
def test_trace_without_usable_events_fails_cleanly(tmp_path, command, events):
    path = tmp_path / "unusable.json"
    path.write_text(json.dumps({"traceEvents": events}))
    result = run(command, path)
    assert_clean_failure(result, "unusable.json")
    assert "usable" in result.output
