"""`rank_report` runs its three groups of analyses (kernels, timeline, launches) side by side in
threads (`ReportOptions.analysis_threads`): the groups really overlap, and the report is the same,
frame for frame, whatever the number of threads."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import pytest
from shared_traces import shared_trace
from test_results_cache import assert_same_rank

from traceanalyze.load import load_trace
from traceanalyze.report import model as report_model
from traceanalyze.report.model import ReportOptions, rank_report

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


def test_the_three_groups_run_at_the_same_time(monkeypatch):
    """Each group waits at a barrier for the other two: run one after another, they would never
    all arrive and the barrier breaks after its timeout."""
    barrier = threading.Barrier(3, timeout=10)
    threads: set[str] = set()

    def meeting(group):
        def run(*args, **kwargs):
            threads.add(threading.current_thread().name)
            barrier.wait()
            return group(*args, **kwargs)
        return run

    for name in ("_kernel_parts", "_time_parts", "_launch_parts"):
        monkeypatch.setattr(report_model, name, meeting(getattr(report_model, name)))
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

    for name in ("_kernel_parts", "_time_parts", "_launch_parts"):
        monkeypatch.setattr(report_model, name, counted(getattr(report_model, name)))
    rank_report(load_trace(FIXTURE, cache=False), ReportOptions(analysis_threads=1))
    assert most == [1, 1, 1]
