"""Real GPU traces recorded by others (../shared/traces): one run's per-step figures recomputed from
the trace's own tables with plain Python, and two different programs refused."""

from __future__ import annotations

import statistics

import pytest
from shared_traces import SHARED_TRACES_DIR

from traceanalyze.api import analyze
from traceanalyze.errors import ConfigError
from traceanalyze.load import load_trace
from traceanalyze.scaling.measure import measure_run
from traceanalyze.scaling.runs import scaling_of_paths

STEPPED_GPU = ["tutorial_h100_transformer.json.gz", "tracelens_h100_bert_small.json.gz"]


def shared(name):
    path = SHARED_TRACES_DIR / name
    if not path.is_file():
        pytest.skip(f"{path} not found")
    return path


@pytest.mark.parametrize("name", STEPPED_GPU)
def test_per_step_work_and_times_agree_with_a_plain_recomputation(name):
    trace = load_trace(shared(name), cache=False)
    rank = analyze(trace).ranks[0]
    point = measure_run(trace, rank, label=name)
    steps = [(row["start_ns"], row["end_ns"]) for row in trace.steps.sort("start_ns").iter_rows(named=True)]
    flops = [0.0] * len(steps)
    for row in rank.roofline.iter_rows(named=True):
        at = row["launch_start_ns"] if row["launch_start_ns"] is not None else row["start_ns"]
        for index, (start, end) in enumerate(steps):
            if row["kind"] == "kernel" and start <= at < end:
                flops[index] += row["flops"] or 0.0
    assert point.steps == len(steps) and point.has_gpu
    assert point.flops == pytest.approx(statistics.median(flops))
    assert point.flops > 0
    assert point.cpu_step_ns == statistics.median(end - start for start, end in steps)
    assert point.gpu_window_ns == statistics.median(rank.steps["window_ns"].to_list())
    assert point.gpu_busy_ns == statistics.median(rank.steps["gpu_busy_ns"].to_list())


def test_two_different_programs_are_refused():
    paths = [shared(name) for name in STEPPED_GPU]
    with pytest.raises(ConfigError, match="are not one program: op 1 of a step is Model Forward Pass"):
        scaling_of_paths(paths, cache=False)


def test_a_trace_against_itself_is_not_a_sweep():
    path = shared(STEPPED_GPU[0])
    with pytest.raises(ConfigError, match="same modelled work per step"):
        scaling_of_paths([path, path], cache=False)
