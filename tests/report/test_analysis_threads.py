"""`rank_report` runs its analyses side by side in threads (`ReportOptions.analysis_threads`): the
roofline, the timeline group and the launch group, then what reads the roofline. They really
overlap, and the report is the same, frame for frame, whatever the number of threads."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import pytest
from shared_traces import shared_trace
from test_results_cache import assert_same_rank

from traceanalyze.load import load_trace
from traceanalyze.pipeline import rank as report_model
from traceanalyze.report.model import ReportOptions
from traceanalyze.pipeline.rank import rank_report

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "synthetic_training.json.gz"
# shapes that exercise every group: recorded shapes and CUDA graphs, NCCL on several streams,
# many small kernels, a DLRM rank with fbgemm embeddings
REAL = ["hta_a100_80gb_record_shapes_cudagraph.json.gz", "hta_a100_nccl_rank0.json.gz",
        "tracelens_b200_vllm_decode_tp8_rank0.json.gz", "param_v100_dlrm_4ranks/rank0.json.gz"]


def test_one_thread_and_three_give_the_same_report_on_the_synthetic_trace():
    trace = load_trace(FIXTURE, cache=False)
    alone = rank_report(trace, ReportOptions(analysis_threads=1))
    assert alone.roofline.height and alone.gaps.height and alone.latency.height  # every group has rows to compare
    assert_same_rank(rank_report(trace, ReportOptions(analysis_threads=3)), alone)


@pytest.mark.parametrize("name", REAL)
def test_one_thread_and_three_give_the_same_report_on_real_traces(name):
    trace = load_trace(shared_trace(name), cache=False).split_by_rank()[0]
    options = ReportOptions(window="steps")
    assert_same_rank(rank_report(trace, dataclasses.replace(options, analysis_threads=3)),
                     rank_report(trace, dataclasses.replace(options, analysis_threads=1)))


FIRST_WAVE = ((report_model.roofline, "kernel_roofline"), (report_model, "_time_parts"),
              (report_model, "_launch_parts"))
EVERY_TASK = (*FIRST_WAVE, (report_model, "_kernel_parts"), (report_model.attribution, "attribution"),
              (report_model.attribution, "step_attribution"))


def test_the_first_three_run_at_the_same_time(monkeypatch):
    """Each of the roofline, the timeline group and the launch group waits at a barrier for the
    other two: run one after another, they would never all arrive and the barrier breaks after its
    timeout."""
    barrier = threading.Barrier(3, timeout=10)
    threads: set[str] = set()

    def meeting(group):
        def run(*args, **kwargs):
            threads.add(threading.current_thread().name)
            barrier.wait()
            return group(*args, **kwargs)
        return run

    for owner, name in FIRST_WAVE:
        monkeypatch.setattr(owner, name, meeting(getattr(owner, name)))
    report = rank_report(load_trace(FIXTURE, cache=False), ReportOptions(analysis_threads=3))
    assert report.roofline.height
    assert len(threads) == 3 and all(name.startswith("traceanalyze-analysis") for name in threads)


def test_one_thread_runs_the_groups_one_after_another(monkeypatch):
    running = []
    most = []

    def counted(group):
        def run(*args, **kwargs):
            running.append(1)
            most.append(len(running))
            try:
                return group(*args, **kwargs)
            finally:
                running.pop()
        return run

    for owner, name in EVERY_TASK:
        monkeypatch.setattr(owner, name, counted(getattr(owner, name)))
    rank_report(load_trace(FIXTURE, cache=False), ReportOptions(analysis_threads=1))
    assert most == [1] * len(EVERY_TASK)
