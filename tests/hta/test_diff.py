"""`traceanalyze.hta.TraceDiff` against HTA 0.5.0's `hta.trace_diff.TraceDiff` on two shared traces:
the same GPU kernels counted per name in the first step of each, and the same total durations
where HTA does not round (docs/hta.md: HTA also counts Python functions on the CPU side)."""

from __future__ import annotations

import pytest
from shared_traces import shared_trace

from traceanalyze.hta import LabeledTrace, TraceAnalysis, TraceDiff

pytestmark = pytest.mark.filterwarnings("ignore")
CONTROL, TEST = "tutorial_h100_transformer.json.gz", "hta_a100_nccl_rank0.json.gz"  # HTA rounds the second


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    result = []
    for name in (CONTROL, TEST):
        folder = tmp_path_factory.mktemp("diff")
        (folder / name).symlink_to(shared_trace(name))
        result.append(folder)
    return result


def test_gpu_counts_equal_htas(folders):
    pytest.importorskip("hta", reason="HolisticTraceAnalysis (the dev extra) is not installed")
    from hta.trace_diff import DeviceType
    from hta.trace_diff import TraceDiff as HtaTraceDiff

    control, test = (str(f) for f in folders)
    theirs = HtaTraceDiff.compare_traces(control, test, device_type=DeviceType.GPU)
    ours = TraceDiff.compare_traces(control, test, device_type=DeviceType.GPU)
    assert list(ours.columns) == list(theirs.columns) and ours.index.name == theirs.index.name
    assert sorted(ours.index) == sorted(theirs.index)
    ours = ours.loc[theirs.index]
    for column in ("Control_counts", "Test_counts", "diff_counts", "counts_change_categories"):
        assert ours[column].tolist() == theirs[column].tolist(), column
    assert ours["Control_total_duration"].round(6).tolist() == theirs["Control_total_duration"].round(6).tolist()
    assert (ours["Test_total_duration"] != theirs["Test_total_duration"]).any()  # HTA's µs rounding


def test_ops_diff_of_a_trace_with_itself(folders):
    same = TraceAnalysis(trace_dir=str(folders[0]))
    changes = TraceDiff.ops_diff(LabeledTrace("a", t=same), LabeledTrace("b", t=same))
    assert not changes["added"] and not changes["deleted"] and not changes["increased"] and not changes["decreased"]
    assert len(changes["unchanged"]) > 0
    frame = TraceDiff.compare_traces(same, same)
    assert (frame["diff_counts"] == 0).all() and (frame["counts_change_categories"] == "=").all()


def test_trace_diff_takes_htas_arguments():
    import inspect

    hta_diff = pytest.importorskip("hta.trace_diff", reason="HolisticTraceAnalysis is not installed")
    for name in ("compare_traces", "ops_diff"):
        theirs = list(inspect.signature(getattr(hta_diff.TraceDiff, name)).parameters)
        assert list(inspect.signature(getattr(TraceDiff, name)).parameters) == theirs, name
