"""Failures handled the way users expect: the script's exit code and traceback, Ctrl-C, and a
one-line error (exit 2) when there is nothing to run. Most run in-process through CliRunner."""

from __future__ import annotations

import json
import os
import sys
import time

import pytest
from capture_helpers import REPO, SCRIPTS, read_json, read_trace, run_cli, step_names, stderr_lines
from capture_helpers import capture_in_process as capture

pytest.importorskip("torch")


def test_script_that_raises_keeps_its_exit_code_traceback_and_trace(tmp_path):
    result = capture("-o", tmp_path, SCRIPTS / "raises_midway.py", "--fail-at", "3", cwd=tmp_path)
    assert result.exit_code == 1
    assert "Traceback (most recent call last):" in result.stderr
    assert str(SCRIPTS / "raises_midway.py") in result.stderr
    assert "ValueError: bad batch at step 3" in result.stderr
    assert "runpy" not in result.stderr and "traceanalyze/capture" not in result.stderr  # the script's, not ours
    trace = read_trace(tmp_path / "trace.json.gz")  # what ran: step 2 complete, step 3 cut short
    assert step_names(trace) == ["ProfilerStep#2", "ProfilerStep#3"]
    run = read_json(tmp_path / "run.json")
    assert run["exit_status"] == {"code": 1, "outcome": "exception", "script_error": "ValueError: bad batch at step 3"}
    assert run["steps_captured"] == 1


def test_script_failing_in_its_first_step_keeps_the_trace_of_what_ran(tmp_path):
    result = capture("-o", tmp_path, SCRIPTS / "raises_midway.py", "--fail-at", "0", cwd=tmp_path)
    assert result.exit_code == 1
    assert "the script stopped early; the trace of what ran is in" in result.stderr
    run = read_json(tmp_path / "run.json")
    assert run["traces"] == ["trace.json.gz"] and run["whole_run"] is True and run["steps_captured"] == 0
    names = {e["name"] for e in read_trace(tmp_path / "trace.json.gz")["traceEvents"] if e.get("ph") == "X"}
    assert any(name.startswith("aten::") for name in names)  # the ops of step 0, up to the failure


def test_script_sees_its_own_argv_name_path_and_cwd_and_its_exit_code_is_ours(tmp_path):
    report = tmp_path / "seen.json"
    script = SCRIPTS / "echo_argv.py"
    result = capture("-o", tmp_path / "out", script, "--", "--report", report, "--exit-code", "3", "x", "--", "y",
                     cwd=tmp_path)
    assert result.exit_code == 3
    seen = json.loads(report.read_text())
    assert seen["argv"] == [str(script), "--report", str(report), "--exit-code", "3", "x", "--", "y"]
    assert seen["name"] == "__main__"
    assert seen["path0"] == str(SCRIPTS)  # so `from tiny_training import train` worked
    assert seen["file"] == str(script)
    assert seen["cwd"] == str(tmp_path)
    assert sys.argv[0] != str(script)  # restored afterwards
    run = read_json(tmp_path / "out" / "run.json")
    assert run["exit_status"]["code"] == 3 and run["exit_status"]["outcome"] == "system_exit"
    assert run["steps_captured"] == 3


def test_options_after_the_script_belong_to_the_script(tmp_path):
    report = tmp_path / "seen.json"
    result = capture("-o", tmp_path, SCRIPTS / "echo_argv.py", "--report", report, "--active", "2", cwd=tmp_path)
    assert result.exit_code == 0, result.stderr
    assert json.loads(report.read_text())["argv"][1:] == ["--report", str(report), "--active", "2"]
    assert read_json(tmp_path / "run.json")["schedule"]["active"] == 3


def test_stop_after_capture_ends_a_long_run_once_recorded(tmp_path):
    began = time.monotonic()
    result = capture("--stop-after-capture", "-o", tmp_path, SCRIPTS / "endless_training.py", cwd=tmp_path)
    assert result.exit_code == 0, result.stderr
    assert time.monotonic() - began < 30
    run = read_json(tmp_path / "run.json")
    assert run["steps_seen"] == 5  # wait 1 + warmup 1 + active 3, then stop
    assert run["exit_status"]["outcome"] == "stopped_after_capture"
    assert step_names(read_trace(tmp_path / "trace.json.gz")) == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"]


def test_short_script_records_what_it_can(tmp_path):
    result = capture("-o", tmp_path, SCRIPTS / "endless_training.py", "--steps", "3", cwd=tmp_path)
    assert result.exit_code == 0, result.stderr
    assert step_names(read_trace(tmp_path / "trace.json.gz")) == ["ProfilerStep#2", "ProfilerStep#3"]
    assert "only 1 of the 3 active steps" in result.stderr


def test_script_without_optimizer_and_no_duration_records_the_whole_run(tmp_path):
    result = capture("-o", tmp_path, SCRIPTS / "no_optimizer.py", "--seconds", "0.05", cwd=tmp_path)
    assert result.exit_code == 0, result.stderr
    assert "no optimizer step was seen, so the trace covers the whole run" in result.stderr
    assert "--duration" in result.stderr
    run = read_json(tmp_path / "run.json")
    assert run["traces"] == ["trace.json.gz"] and run["whole_run"] is True
    events = [e for e in read_trace(tmp_path / "trace.json.gz")["traceEvents"] if e.get("ph") == "X"]
    assert len([e for e in events
                if e["name"] == "infer"]) >= 2  # up to 25 iterations of 2 ms; a loaded runner runs fewer


def test_duration_records_a_script_without_optimizer(tmp_path):
    result = capture("--duration", "0.2", "-o", tmp_path, SCRIPTS / "no_optimizer.py", "--seconds", "0.6", cwd=tmp_path)
    assert result.exit_code == 0, result.stderr
    events = [e for e in read_trace(tmp_path / "trace.json.gz")["traceEvents"] if e.get("ph") == "X"]
    regions = [e for e in events if e["name"] == "infer"]
    assert 2 <= len(regions) < 150  # ~0.2 s of 2 ms iterations (fewer on a loaded runner), not the whole 0.6 s run
    assert step_names(read_trace(tmp_path / "trace.json.gz")) == []  # no optimizer: no steps


def test_steps_from_an_unknown_region_says_so(tmp_path):
    result = capture("--steps-from", "nope", "-o", tmp_path, SCRIPTS / "no_optimizer.py", "--seconds", "0.05",
                     cwd=tmp_path)
    assert result.exit_code == 0, result.stderr
    assert "no record_function region named 'nope' was seen, so the trace covers the whole run" in result.stderr
    assert read_json(tmp_path / "run.json")["whole_run"] is True


def test_missing_script_is_one_line_exit_2(tmp_path):
    result = capture("-o", tmp_path, tmp_path / "train.py", cwd=tmp_path)
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [f"traceanalyze: error: {tmp_path / 'train.py'}: no such file"]


@pytest.mark.parametrize(
    ("name", "content", "why"),
    [
        ("train.sh", b"#!/bin/sh\necho hello world\n", "is not a Python script"),
        ("model.bin", b"\x7fELF\x00\x01\x02", "is a binary file"),
    ],
)
def test_non_python_file_is_one_line_exit_2(tmp_path, name, content, why):
    path = tmp_path / name
    path.write_bytes(content)
    result = capture(path, cwd=tmp_path)
    assert result.exit_code == 2
    assert len(result.stderr.splitlines()) == 1 and why in result.stderr
    assert not (tmp_path / "traceanalyze-out").exists()


def test_bad_option_combinations_are_exit_2(tmp_path):
    script = SCRIPTS / "endless_training.py"
    assert capture("--active", "0", script, cwd=tmp_path).exit_code == 2
    result = capture("--delay", "1", script, cwd=tmp_path)
    assert result.exit_code == 2 and "--delay only applies with --duration" in result.stderr
    result = capture("--repeat", "0", "--stop-after-capture", script, cwd=tmp_path)
    assert result.exit_code == 2 and "finite schedule" in result.stderr


def test_ctrl_c_saves_the_trace_and_exits_130(tmp_path):
    result = run_cli("capture", "--no-report", "-o", tmp_path, SCRIPTS / "interrupts_itself.py", cwd=tmp_path)
    assert result.returncode == 130, result.stderr
    assert "KeyboardInterrupt" in result.stderr
    assert step_names(read_trace(tmp_path / "trace.json.gz")) == ["ProfilerStep#2", "ProfilerStep#3"]
    assert read_json(tmp_path / "run.json")["exit_status"]["outcome"] == "interrupted"


def test_without_torch_a_one_line_install_hint(tmp_path):
    script = SCRIPTS / "endless_training.py"
    code = (
        "import sys\n"
        "sys.modules['torch'] = None  # makes `import torch` fail as if it were not installed\n"
        f"sys.argv = ['traceanalyze', 'capture', {str(script)!r}]\n"
        "from traceanalyze.cli import main\n"
        "main()\n"
    )
    import subprocess

    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.returncode == 2
    lines = stderr_lines(result)
    assert len(lines) == 1 and "pip install torch" in lines[0]
