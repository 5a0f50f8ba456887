"""Schedules, windows and ranks, in-process on a tiny training script."""

from __future__ import annotations

import pytest
from capture_helpers import SCRIPTS, capture_in_process, read_json, read_trace, step_names

pytest.importorskip("torch")
TRAIN = SCRIPTS / "endless_training.py"


def test_repeat_writes_one_trace_per_window(tmp_path):
    result = capture_in_process(
        "--wait", "0", "--warmup", "1", "--active", "2", "--repeat", "2", "-o", tmp_path, TRAIN, "--steps", "8",
        cwd=tmp_path
    )
    assert result.exit_code == 0, result.stderr
    assert step_names(read_trace(tmp_path / "trace.json.gz")) == ["ProfilerStep#1", "ProfilerStep#2"]
    assert step_names(read_trace(tmp_path / "cycles" / "trace_cycle2.json.gz")) == ["ProfilerStep#4", "ProfilerStep#5"]
    run = read_json(tmp_path / "run.json")
    assert run["traces"] == ["trace.json.gz", "cycles/trace_cycle2.json.gz"]
    assert run["captured_step_numbers"] == [1, 2, 4, 5]


@pytest.mark.filterwarnings("ignore:Profiler won.t be using warmup")
def test_no_wait_no_warmup_records_from_the_start(tmp_path):
    result = capture_in_process("--wait", "0", "--warmup", "0", "--active", "2", "-o", tmp_path, TRAIN, "--steps", "4",
                                cwd=tmp_path)
    assert result.exit_code == 0, result.stderr
    assert step_names(read_trace(tmp_path / "trace.json.gz")) == ["ProfilerStep#0", "ProfilerStep#1"]


def test_torchrun_rank_names_the_files(tmp_path):
    env = {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1"}
    result = capture_in_process("-o", tmp_path, TRAIN, "--steps", "5", cwd=tmp_path, env=env)
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "trace_rank1.json.gz").is_file() and not (tmp_path / "trace.json.gz").exists()
    run = read_json(tmp_path / "run_rank1.json")
    assert (run["rank"], run["world_size"], run["local_rank"]) == (1, 2, 1)
    assert "traceanalyze: rank 1: trace of 3 steps" in result.stderr


def test_duration_window_marks_the_steps_inside_it(tmp_path):
    # the first optimizer step imports torch._dynamo (~1 s): open the window after it
    result = capture_in_process(
        "--delay", "1.5", "--duration", "0.2", "--stop-after-capture", "-o", tmp_path, TRAIN, cwd=tmp_path
    )
    assert result.exit_code == 0, result.stderr
    names = step_names(read_trace(tmp_path / "trace.json.gz"))
    numbers = [int(name.removeprefix("ProfilerStep#")) for name in names]
    assert len(numbers) >= 3 and numbers == list(range(numbers[0], numbers[0] + len(numbers)))
    run = read_json(tmp_path / "run.json")
    assert run["captured_step_numbers"] == numbers[:-1]  # the last one is cut by the window's end
    assert run["exit_status"]["outcome"] == "stopped_after_capture"


def test_with_stack_and_memory(tmp_path):
    result = capture_in_process("--with-stack", "--profile-memory", "-o", tmp_path, TRAIN, "--steps", "5", cwd=tmp_path)
    assert result.exit_code == 0, result.stderr
    events = read_trace(tmp_path / "trace.json.gz")["traceEvents"]
    assert any(e.get("cat") == "python_function" for e in events)
    assert any(e.get("name") == "[memory]" for e in events)
    run = read_json(tmp_path / "run.json")
    assert run["with_stack"] is True and run["profile_memory"] is True


def test_hooks_are_removed_after_a_capture(tmp_path):
    import torch

    capture_in_process("-o", tmp_path, TRAIN, "--steps", "5", cwd=tmp_path)
    from torch.optim.optimizer import _global_optimizer_post_hooks

    assert not _global_optimizer_post_hooks
    assert torch.autograd.profiler.record_function.__exit__.__module__ == "torch.autograd.profiler"
    assert torch.autograd.profiler.record_function.__enter__.__module__ == "torch.autograd.profiler"
