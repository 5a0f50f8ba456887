"""Every real trace in ../shared/traces loads, and its table sizes equal an independent count over
the raw JSON (tests/raw_counts.py shares no code with the loader)."""

from __future__ import annotations

import polars as pl
import pytest

from raw_counts import raw_counts
from shared_traces import SHARED_TRACES_DIR, real_trace_params, shared_trace

import traceanalyze
from traceanalyze.model import CPU_OPS_SCHEMA, GPU_SCHEMA, RUNTIME_SCHEMA


@pytest.mark.parametrize("path", real_trace_params())
def test_table_sizes_match_an_independent_count(path):
    trace = traceanalyze.load_trace(path)
    counts = raw_counts(path)
    assert trace.gpu.height == counts["gpu"]
    assert trace.runtime.height == counts["runtime"]
    assert trace.cpu_ops.height == counts["cpu_ops"]
    assert trace.steps.height == counts["steps"]
    assert trace.sync.height == counts["sync"]
    assert sum(m.flow_events for m in trace.meta) == counts["flows"]
    assert trace.flows.is_empty()  # counted, not kept, unless asked
    assert traceanalyze.load_trace(path, include_flows=True).flows.height == counts["flows"]
    by_kind = dict(trace.gpu.group_by("kind").len().iter_rows())
    for kind, expected in counts["gpu_by_kind"].items():
        assert by_kind.get(kind, 0) == expected, kind
    runtime_kinds = dict(trace.runtime.group_by("kind").len().iter_rows())
    assert runtime_kinds.get("launch", 0) == counts["launches"]
    assert runtime_kinds.get("graph_launch", 0) == counts["graph_launches"]
    skipped = trace.skipped["count"].sum() if trace.skipped.height else 0
    assert skipped == counts["malformed"]


@pytest.mark.parametrize("path", real_trace_params())
def test_invariants_hold(path):
    trace = traceanalyze.load_trace(path)
    assert trace.gpu.schema == GPU_SCHEMA
    assert trace.runtime.schema == RUNTIME_SCHEMA
    assert trace.cpu_ops.schema == CPU_OPS_SCHEMA
    for frame in (trace.gpu, trace.runtime, trace.cpu_ops):
        assert (frame["end_ns"] - frame["start_ns"] == frame["duration_ns"]).all()
        assert (frame["duration_ns"] >= 0).all()
    # a parent encloses its child, on the same thread, one level up
    ops = trace.cpu_ops
    pairs = ops.join(ops, left_on="parent_id", right_on="op_id", suffix="_parent")
    assert (pairs["start_ns_parent"] <= pairs["start_ns"]).all()
    assert (pairs["end_ns_parent"] >= pairs["end_ns"]).all()
    assert (pairs["tid_parent"] == pairs["tid"]).all()
    assert (pairs["depth"] == pairs["depth_parent"] + 1).all()
    assert ops.filter(pl.col("parent_id").is_null())["depth"].eq(0).all()


def test_nanosecond_fractions_are_kept():
    path = shared_trace("tracelens_h100_bert_small.json.gz")
    trace = traceanalyze.load_trace(path)
    # float-µs timestamps with a ns fraction: not all multiples of 1000 ns
    assert (trace.gpu["start_ns"] % 1000 != 0).any()
    import gzip
    import json

    raw = json.loads(gzip.decompress(path.read_bytes()))
    first = min((e for e in raw["traceEvents"] if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    assert trace.gpu.filter(pl.col("kind") == "kernel")["start_ns"].min() == round(first["ts"] * 1000)


def test_old_schema_and_string_tids():
    trace = traceanalyze.load_trace(shared_trace("kineto_v100_resnet50_2021.json.gz"))
    assert trace.gpu.height > 0 and trace.cpu_ops.height > 0
    assert set(trace.gpu["stream"].unique().to_list()) <= {7, 13, 14, 15, 16, 17, 18, 19, 20}
    # old traces spell it "external id"
    assert trace.runtime["external_id"].is_not_null().any()
    linked = trace.gpu.join(trace.runtime, on=["rank", "correlation"], how="inner")
    assert linked.height == trace.gpu.height


def test_folder_of_ranks_takes_ranks_from_distributed_info():
    folder = SHARED_TRACES_DIR / "param_v100_dlrm_4ranks"
    if not folder.is_dir():
        pytest.skip(f"real traces not found: {folder}")
    trace = traceanalyze.load_trace(folder)
    assert trace.ranks == [0, 1, 2, 3]
    assert {m.rank_source for m in trace.meta} == {"distributedInfo"}
    assert trace.cpu_ops["op_id"].n_unique() == trace.cpu_ops.height
    single = trace.for_rank(2)
    assert single.gpu["rank"].unique().to_list() == [2]
    assert single.gpu.height == raw_counts(folder / "rank2.json.gz")["gpu"]


def test_python_functions_are_skipped_unless_asked():
    path = shared_trace("tutorial_h100_transformer.json.gz")
    assert traceanalyze.load_trace(path).python is None
    with_python = traceanalyze.load_trace(path, include_python=True)
    assert with_python.python.height == raw_counts(path)["python"]


def test_graph_launch_maps_to_many_kernels():
    trace = traceanalyze.load_trace(shared_trace("hta_a100_80gb_record_shapes_cudagraph.json.gz"))
    graph = trace.runtime.filter(pl.col("kind") == "graph_launch").select("rank", "correlation")
    per_launch = trace.gpu.join(graph, on=["rank", "correlation"]).group_by("correlation").len()
    assert per_launch["len"].max() > 1
