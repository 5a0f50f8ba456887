"""`traceanalyze.hta.TraceDiff` against HTA 0.5.0's `hta.trace_diff.TraceDiff` on shared trace pairs:
the same ops counted per name (full or short) in the first step of each, CPU, GPU or both, and the
same total durations where HTA does not round."""

from __future__ import annotations

import polars as pl
import pytest
from shared_traces import SHARED_TRACES_DIR, real_trace_paths, shared_trace

import traceanalyze
from traceanalyze.hta import LabeledTrace, TraceAnalysis, TraceDiff
from traceanalyze.hta.diff import short_name

pytestmark = pytest.mark.filterwarnings("ignore")
CONTROL, TEST = "tutorial_h100_transformer.json.gz", "hta_a100_nccl_rank0.json.gz"  # HTA rounds the second
RANKS = "param_v100_dlrm_4ranks"
# (control, test, control_rank, test_rank): two ranks of one job; Python functions on both sides
# (HTA rounds the second's times); cuda_sync events (Stream Sync on a stream, Event and Context
# Sync on none) against Python functions
PAIRS = {
    "dlrm_rank0_rank1": (RANKS, RANKS, 0, 1),
    "python_functions": ("tutorial_h100_transformer.json.gz", "tracelens_h100_bert_small.json.gz", None, None),
    "cuda_sync": ("hta_a100_event_sync.json.gz", "tutorial_h100_transformer.json.gz", None, None),
}
HTA_ROUNDS = {"tracelens_h100_bert_small.json.gz"}


def folder_of(name: str, tmp_path_factory) -> str:
    """A folder HTA reads: the DLRM folder itself, or one holding a link to the one trace."""
    if (SHARED_TRACES_DIR / name).is_dir():
        return str(SHARED_TRACES_DIR / name)
    path = shared_trace(name)
    folder = tmp_path_factory.mktemp("diff")
    (folder / name).symlink_to(path)
    return str(folder)


@pytest.fixture(scope="module")
def labeled(tmp_path_factory):
    """`labeled(name, label)` → (HTA's LabeledTrace, ours) of one shared trace, parsed once."""
    pytest.importorskip("hta", reason="HolisticTraceAnalysis (the dev extra) is not installed")
    from hta.trace_diff import LabeledTrace as HtaLabeledTrace

    cache: dict[tuple[str, str], tuple] = {}

    def get(name: str, label: str) -> tuple:
        if (name, label) not in cache:
            folder = folder_of(name, tmp_path_factory)
            cache[name, label] = (HtaLabeledTrace(label, trace_dir=folder), LabeledTrace(label, trace_dir=folder))
        return cache[name, label]

    return get


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    return [folder_of(name, tmp_path_factory) for name in (CONTROL, TEST)]


@pytest.mark.parametrize("short", [False, True], ids=["full_names", "short_names"])
@pytest.mark.parametrize("device", ["CPU", "GPU", "ALL"])
@pytest.mark.parametrize("pair", list(PAIRS))
def test_compare_traces_equals_htas(pair, device, short, labeled):
    """Every op name HTA counts in the first step (Python functions, sync events, GPU-side
    annotations included), the same counts, and the same total µs where HTA does not round."""
    from hta.trace_diff import DeviceType
    from hta.trace_diff import TraceDiff as HtaTraceDiff

    control_name, test_name, control_rank, test_rank = PAIRS[pair]
    (their_control, control), (their_test, test) = labeled(control_name, "Control"), labeled(test_name, "Test")
    arguments = dict(control_rank=control_rank, test_rank=test_rank, device_type=DeviceType[device],
                     use_short_name=short)
    theirs = HtaTraceDiff.compare_traces(their_control, their_test, **arguments)
    ours = TraceDiff.compare_traces(control, test, **arguments)
    assert list(ours.columns) == list(theirs.columns) and ours.index.name == theirs.index.name
    assert sorted(ours.index) == sorted(theirs.index) and len(theirs) > 0
    ours = ours.loc[theirs.index]
    for column in ("Control_counts", "Test_counts", "diff_counts", "counts_change_categories"):
        assert ours[column].tolist() == theirs[column].tolist(), column
    for label, name in (("Control", control_name), ("Test", test_name)):
        if name not in HTA_ROUNDS:
            column = f"{label}_total_duration"
            assert ours[column].to_numpy() == pytest.approx(theirs[column].to_numpy(), rel=1e-9), column
    if not short:  # ops_diff has no short names
        changes = TraceDiff.ops_diff(control, test, control_rank, test_rank, device_type=DeviceType[device])
        assert changes == HtaTraceDiff.ops_diff(their_control, their_test, control_rank, test_rank,
                                                device_type=DeviceType[device])


def test_short_name_is_htas_on_every_shared_name():
    """`short_name` gives HTA's `shorten_name` for every op, kernel, runtime and Python function
    name of the shared traces (and shortens many of them)."""
    utils = pytest.importorskip("hta.utils.utils", reason="HolisticTraceAnalysis is not installed")
    names = set()
    for path in real_trace_paths():
        trace = traceanalyze.load_trace(path, include_python=True)
        for table in (trace.gpu, trace.cpu_ops, trace.runtime, trace.python):
            if table is not None:
                names |= set(table["name"].cast(pl.String).unique().to_list())
    if not names:
        pytest.skip("no shared traces")
    assert [n for n in names if short_name(n) != utils.shorten_name(n)] == []
    assert sum(short_name(n) != n for n in names) > 100
    assert short_name("void at::native::vectorized_elementwise_kernel<4, float>(int, float*)") == \
        "at::native::vectorized_elementwise_kernel"


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
