"""The shortcuts the analyses take to share work, held on every real trace of ../shared/traces to
what they replace: the idle summary from the gaps against a union of the GPU ops, the GEMM
alignment rule on the shapes against the rule written out per op, the launch statistics of one
metric against that metric's rows of all of them, and a walk given the op tree against one that
builds its own."""

from __future__ import annotations

import polars as pl
import pytest

from shared_traces import real_trace_params

import traceanalyze
from traceanalyze.analysis import idle, kernel_ops, launch, roofline
from traceanalyze.analysis.findings.rules_kernels import ALIGNMENT, _misaligned
from traceanalyze.analysis.op_tree import OpTree


@pytest.fixture(scope="module", params=real_trace_params())
def trace(request):
    return traceanalyze.load_trace(request.param, cache=False)


@pytest.mark.parametrize("window", ["activity", "steps"])
def test_idle_summary_from_the_gaps(trace, window):
    if window == "steps" and trace.steps.is_empty():
        pytest.skip("no ProfilerStep spans")
    gaps = idle.idle_gaps(trace, window=window)
    assert idle.idle_summary(trace, window=window, gaps=gaps).rows() == idle.idle_summary(trace, window=window).rows()


def test_gemm_alignment_on_the_shapes(trace):
    per_kernel = roofline.kernel_roofline(trace).filter(
        (pl.col("cost_model") == "matmul") & pl.col("compute_dtype").is_in(list(ALIGNMENT))
        & pl.col("op_id").is_not_null())
    ops = (per_kernel.select("op_id", "compute_dtype").unique("op_id", maintain_order=True)
           .join(trace.cpu_ops.select("op_id", "input_dims"), on="op_id", how="left", maintain_order="left"))

    def by_hand(dtype, dims):
        shapes = [shape for shape in (dims or []) if shape is not None and len(shape) >= 2]
        return any(size % ALIGNMENT[dtype] for shape in shapes for size in shape[-2:] if size is not None)

    assert _misaligned(ops).to_list() == [by_hand(d, dims)
                                          for d, dims in ops.select("compute_dtype", "input_dims").iter_rows()]


def test_launch_statistics_of_one_metric(trace):
    latency = launch.launch_latency(trace)
    every = launch.latency_stats(latency)
    assert every["metric"].unique(maintain_order=True).to_list() == (list(launch.STAT_COLUMNS) if every.height else [])
    for metric in launch.STAT_COLUMNS:
        assert launch.latency_stats(latency,
                                    metrics=(metric,)).rows() == every.filter(pl.col("metric") == metric).rows()


def test_walks_given_the_op_tree(trace):
    tree = OpTree.of(trace.cpu_ops)
    assert kernel_ops.kernel_ops(trace, tree).equals(kernel_ops.kernel_ops(trace))
    assert idle.idle_gaps(trace, tree=tree).equals(idle.idle_gaps(trace))
