"""Capture the example scripts end to end, as CI does, and check what the trace holds."""

from __future__ import annotations

import pytest
from capture_helpers import EXAMPLES, complete_events, read_json, read_trace, run_cli, step_names, stderr_lines

TRAINING_EXAMPLES = ["mlp_train.py", "convnet_train.py", "transformer_train.py"]


@pytest.mark.parametrize("example", TRAINING_EXAMPLES)
def test_training_example_records_three_steps_with_shapes(example, tmp_path):
    result = run_cli("capture", "-o", tmp_path / "out", EXAMPLES / example, "--", "--steps", "6", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert_report_printed(result, tmp_path / "out" / "trace.json.gz")

    trace = read_trace(tmp_path / "out" / "trace.json.gz")
    assert step_names(trace) == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"]
    ops = [e for e in complete_events(trace) if e.get("cat") == "cpu_op" and e["name"].startswith("aten::")]
    assert ops
    assert all("Input Dims" in e["args"] for e in ops)  # record_shapes is on
    assert any(dims for e in ops for dims in e["args"]["Input Dims"])  # real shapes, not only scalars
    events = complete_events(trace)
    steps = [e for e in events if e["name"].startswith("ProfilerStep#")]
    optimizer_steps = [e for e in events if e["name"].startswith("Optimizer.step#")]
    assert len(optimizer_steps) == 3
    for op in optimizer_steps:  # a step ends after the optimizer's region closes, never inside it
        assert any(s["ts"] <= op["ts"] and op["ts"] + op["dur"] <= s["ts"] + s["dur"] for s in steps)

    run = read_json(tmp_path / "out" / "run.json")
    assert run["steps_captured"] == 3
    assert run["captured_step_numbers"] == [2, 3, 4]
    assert run["steps_seen"] == 6
    assert run["schedule"] == {"wait": 1, "warmup": 1, "active": 3, "repeat": 1}
    assert run["traces"] == ["trace.json.gz"]
    assert run["argv"] == [str(EXAMPLES / example), "--steps", "6"]
    assert run["exit_status"] == {"code": 0, "outcome": "completed", "script_error": None}
    assert run["torch_version"] and run["device"] == "cpu" and run["device_name"]
    assert run["record_shapes"] is True and run["activities"] == ["cpu"]
    assert any("trace of 3 steps written to" in line for line in stderr_lines(result))


def assert_report_printed(result, trace):
    """The capture printed the report of `trace` on stdout, and no Kineto log line on stderr."""
    assert f"traceanalyze report — {trace}" in result.stdout
    assert "TRACE HEALTH" in result.stdout
    kineto = [line for line in result.stderr.splitlines() if line.startswith(("USDT:", "STAGE:"))]
    assert kineto == []


def test_inference_without_flags_records_the_whole_run_and_reports_it(tmp_path):
    result = run_cli("capture", "-o", tmp_path, EXAMPLES / "transformer_infer.py", "--steps", "5", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert_report_printed(result, tmp_path / "trace.json.gz")
    notes = [line for line in stderr_lines(result) if line.startswith("traceanalyze:")]
    assert len(notes) == 1 and "no optimizer step was seen, so the trace covers the whole run" in notes[0]
    assert "generated 5 tokens" in result.stdout  # the script's own output is kept
    trace = read_trace(tmp_path / "trace.json.gz")
    assert len([e for e in complete_events(trace) if e["name"] == "decode_step"]) == 5  # every token, not a window
    assert step_names(trace) == []
    run = read_json(tmp_path / "run.json")
    assert run["whole_run"] is True and run["steps_seen"] == 0 and run["exit_status"]["code"] == 0


def test_inference_steps_from_a_record_function_region(tmp_path):
    result = run_cli(
        "capture", "--no-report", "--steps-from", "decode_step", "-o", tmp_path,
        EXAMPLES / "transformer_infer.py", "--steps", "8", cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    trace = read_trace(tmp_path / "trace.json.gz")
    assert step_names(trace) == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"]
    decode = [e for e in complete_events(trace) if e["name"] == "decode_step"]
    assert len(decode) == 3
    run = read_json(tmp_path / "run.json")
    assert run["steps_from"] == {"kind": "record_function", "name": "decode_step"}
    assert run["steps_seen"] == 8 and run["steps_captured"] == 3


def test_inference_for_a_duration_then_stop(tmp_path):
    result = run_cli(
        "capture", "--no-report", "--duration", "0.3", "--stop-after-capture", "-o", tmp_path,
        EXAMPLES / "transformer_infer.py", "--steps", "100000", cwd=tmp_path, timeout=60,
    )
    assert result.returncode == 0, result.stderr
    trace = read_trace(tmp_path / "trace.json.gz")
    names = {e["name"] for e in complete_events(trace)}
    assert "decode_step" in names and "aten::linear" in names
    run = read_json(tmp_path / "run.json")
    assert run["exit_status"]["outcome"] == "stopped_after_capture"
    assert run["duration"] == {"delay_s": 0.0, "duration_s": 0.3}
    assert run["schedule"] is None
    assert run["wall_s"] < 30


def test_ddp_example_alone_is_a_job_of_one_rank(tmp_path):
    """ddp_train.py run alone starts a process group of one rank (gloo on a CPU): the trace says
    so in `distributedInfo`, and the report reads it as rank 0 of 1."""
    out = tmp_path / "out"
    result = run_cli("capture", "-o", out, EXAMPLES / "ddp_train.py", "--", "--steps", "6", "--hidden", "128",
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert_report_printed(result, out / "trace.json.gz")
    trace = read_trace(out / "trace.json.gz")
    assert step_names(trace) == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"]
    info = trace["distributedInfo"]
    assert (info["backend"], info["rank"], info["world_size"]) == ("gloo", 0, 1)
    assert f"rank 0 of 1 — {out / 'trace.json.gz'}" in result.stdout
