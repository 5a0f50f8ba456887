"""`traceanalyze.hta.TraceAnalysis` without HTA: the default numbers are our analyses' (ns exact,
every step kept, GPU ops only), `visualize=True` runs without plotly, the methods we do not provide
raise NotImplementedError naming ours, `.report()` is our Report."""

from __future__ import annotations

import sys

import polars as pl
import pytest
from shared_traces import SHARED_TRACES_DIR, real_trace_params, shared_trace

import traceanalyze
from traceanalyze.analysis.idle import idle_summary
from traceanalyze.analysis.launch import launch_latency
from traceanalyze.analysis.overlap import comm_overlap
from traceanalyze.hta import TraceAnalysis
from traceanalyze.hta.missing import MISSING
from traceanalyze.report.model import Report

pytestmark = pytest.mark.filterwarnings("ignore")
RANKS_FOLDER = SHARED_TRACES_DIR / "param_v100_dlrm_4ranks"


def analyzer(path) -> TraceAnalysis:
    return TraceAnalysis(trace_dir=str(path))


@pytest.mark.parametrize("path", real_trace_params())
def test_default_idle_is_our_idle_summary(path):
    """`idle_time(us)` and `kernel_time(us)` are our `idle_summary` (one device per rank in these
    traces), in µs, exact; a rank without GPU work has no row."""
    ours = analyzer(path)
    table = ours.get_temporal_breakdown(visualize=False)
    summary = idle_summary(ours.trace)
    assert sorted(table["rank"]) == sorted(summary["rank"].to_list())
    for row in summary.iter_rows(named=True):
        mine = table[table["rank"] == row["rank"]].iloc[0]
        assert round(mine["idle_time(us)"] * 1000) == row["gpu_idle_ns"]
        assert round(mine["kernel_time(us)"] * 1000) == row["window_ns"]
        parts = mine["idle_time(us)"] + mine["compute_time(us)"] + mine["non_compute_time(us)"]
        assert parts == pytest.approx(mine["kernel_time(us)"])


@pytest.mark.parametrize("path", real_trace_params())
def test_default_launch_stats_are_our_launch_latency(path):
    ours = analyzer(path)
    rank = ours.trace.ranks[0]
    stats = ours.get_cuda_kernel_launch_stats(visualize=False)[rank]
    latency = launch_latency(ours.trace.for_rank(rank))
    assert list(stats.columns) == ["correlation", "cpu_duration", "gpu_duration", "launch_delay"]
    assert stats["correlation"].tolist() == latency["correlation"].to_list()
    assert [round(v * 1000) for v in stats["launch_delay"]] == latency["launch_delay_ns"].to_list()
    assert [round(v * 1000) for v in stats["cpu_duration"]] == latency["launch_cpu_ns"].to_list()


def test_default_overlap_is_our_comm_overlap():
    if not RANKS_FOLDER.is_dir():
        pytest.skip(f"real traces not found: {RANKS_FOLDER}")
    ours = analyzer(RANKS_FOLDER)
    table = ours.get_comm_comp_overlap(visualize=False)
    expected = comm_overlap(ours.trace)
    assert table["rank"].tolist() == expected["rank"].to_list()
    assert table["comp_comm_overlap_pctg"].tolist() == [round(100 * f, 2) for f in expected["overlap_fraction"]]
    assert table["comp_comm_overlap_pctg"].tolist() == [4.50, 2.47, 7.88, 3.31]  # docs/hta.md


def test_default_keeps_the_last_step_hta_drops():
    """HTA drops the last of the trace's ProfilerSteps; by default we keep it, with its GPU work."""
    path = shared_trace("hta_a100_nccl_rank0.json.gz")
    assert analyzer(path).get_profiler_steps() == [4, 5, 6]
    assert TraceAnalysis(trace_dir=str(path), hta_rounding=True).get_profiler_steps() == [4, 5]


def test_trace_files_by_rank():
    if not RANKS_FOLDER.is_dir():
        pytest.skip(f"real traces not found: {RANKS_FOLDER}")
    two = TraceAnalysis(trace_files={1: "rank1.json.gz", 3: "rank3.json.gz"}, trace_dir=str(RANKS_FOLDER))
    whole = analyzer(RANKS_FOLDER).get_temporal_breakdown(visualize=False)
    table = two.get_temporal_breakdown(visualize=False)
    assert table["rank"].tolist() == [1, 3]
    assert table["idle_time(us)"].tolist() == whole.set_index("rank").loc[[1, 3], "idle_time(us)"].tolist()
    with pytest.raises(ValueError, match="rank"):
        TraceAnalysis(trace_files={0: "rank1.json.gz"}, trace_dir=str(RANKS_FOLDER))
    with pytest.raises(ValueError, match="rank"):
        two.get_cuda_kernel_launch_stats(ranks=[0], visualize=False)


def test_visualize_runs_without_plotly(monkeypatch, capsys):
    """Without plotly, `visualize=True` says so and returns the same frame."""
    path = shared_trace("hta_a100_alexnet.json.gz")
    for name in [n for n in sys.modules if n == "plotly" or n.startswith("plotly.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "plotly", None)
    ours = analyzer(path)
    drawn = ours.get_temporal_breakdown(visualize=True)
    assert drawn.equals(ours.get_temporal_breakdown(visualize=False))
    ours.get_gpu_kernel_breakdown(visualize=True)
    ours.get_comm_comp_overlap(visualize=True)
    ours.get_idle_time_breakdown(visualize=True)
    ours.get_cuda_kernel_launch_stats(visualize=True)
    assert capsys.readouterr().err.count("needs plotly") == 5


@pytest.mark.parametrize("name", sorted(MISSING))
def test_methods_we_do_not_provide_name_ours(name):
    ours = analyzer(shared_trace("hta_a100_event_sync.json.gz"))
    with pytest.raises(NotImplementedError, match="traceanalyze"):
        getattr(ours, name)()
    with pytest.raises(AttributeError):
        ours.no_such_method()


def test_report_is_ours():
    path = shared_trace("hta_a100_alexnet.json.gz")
    report = analyzer(path).report()
    assert isinstance(report, Report)
    expected = idle_summary(traceanalyze.load_trace(path))["gpu_idle_ns"].item()
    assert report.ranks[0].idle["gpu_idle_ns"].item() == expected


def test_frames_need_no_pyarrow(monkeypatch):
    """pandas frames are built from numpy columns: no pyarrow."""
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    table = analyzer(shared_trace("hta_a100_event_sync.json.gz")).get_temporal_breakdown(visualize=False)
    assert table["rank"].tolist() == [0]
    assert pl.Series(table["idle_time(us)"]).dtype == pl.Float64


def test_default_stragglers_are_the_job_analysis_slowest_ranks():
    """Ours: the rank the job analysis names slowest (the others' wait it causes); HTA's late-start
    rule with hta_rounding (test_oracle)."""
    if not RANKS_FOLDER.is_dir():
        pytest.skip(f"real traces not found: {RANKS_FOLDER}")
    ours = analyzer(RANKS_FOLDER)
    job = traceanalyze.analyze(RANKS_FOLDER).job
    slowest = job.stragglers.sort("others_wait_ns", descending=True)["slowest_rank"].to_list()
    assert ours.get_potential_stragglers(num_candidates=1) == slowest[:1]
    assert analyzer(shared_trace("hta_a100_nccl_rank0.json.gz")).get_potential_stragglers() == []


def test_methods_take_htas_arguments():
    """Every method we provide takes HTA's arguments, in HTA's order, with HTA's defaults (a
    notebook's positional calls keep working); the rest raise NotImplementedError (MISSING)."""
    hta_analysis = pytest.importorskip("hta.trace_analysis", reason="HolisticTraceAnalysis is not installed")
    import inspect

    theirs_class = hta_analysis.TraceAnalysis
    public = [name for name in vars(theirs_class) if not name.startswith("_")]
    for name in public:
        assert name in MISSING or name in vars(TraceAnalysis), name
        if name in MISSING:
            continue
        theirs = inspect.signature(getattr(theirs_class, name)).parameters
        ours = inspect.signature(getattr(TraceAnalysis, name)).parameters
        assert list(ours)[: len(theirs)] == list(theirs), name
        for parameter in theirs.values():
            if parameter.default is not inspect.Parameter.empty and parameter.name != "straggler_identification_impl":
                assert ours[parameter.name].default == parameter.default, (name, parameter.name)
    init_theirs = inspect.signature(theirs_class.__init__).parameters
    init_ours = inspect.signature(TraceAnalysis.__init__).parameters
    assert list(init_ours)[: len(init_theirs)] == list(init_theirs)
    assert all(init_ours[p].default == init_theirs[p].default for p in init_theirs)
