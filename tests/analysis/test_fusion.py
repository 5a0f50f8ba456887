"""Fusion opportunities: only data-dependent, bandwidth-bound chains, with exact savings."""

from __future__ import annotations

import pytest

from builder import TraceBuilder

import traceanalyze
from traceanalyze.analysis import attribution, roofline
from traceanalyze.analysis.attribution import LATENCY_BOUND_MAX_NS

F32 = "float"
COS = "void at::native::vectorized_elementwise_kernel<4, at::native::cos_kernel_cuda(at::TensorIteratorBase&)::{lambda()#1}, at::detail::Array<char*, 2> >"


def unary(b: TraceBuilder, name: str, start: float, shape: list[int], *, dur: float, stream: int = 7) -> int:
    op = b.cpu_op(name, start, 10, input_dims=[shape], input_types=[F32], input_strides=[[1] * len(shape)], concrete_inputs=[""])
    b.launch_kernel(launch_us=start + 2, launch_dur_us=4, start_us=start + 20, dur_us=dur, external_id=op, name=COS, stream=stream)
    return op


def runs_of(b: TraceBuilder, tmp_path):
    trace = traceanalyze.load_trace(b.write(tmp_path / "t.json.gz"))
    table = roofline.kernel_roofline(trace)
    return table, attribution.fusion_opportunities(table, trace.cpu_ops)


def test_cos_cos_chain_saves_the_intermediate_write_and_read(tmp_path):
    n = 1 << 24
    b = TraceBuilder()
    unary(b, "aten::cos", 0, [n], dur=100)
    unary(b, "aten::cos", 130, [n], dur=100)
    table, runs = runs_of(b, tmp_path)
    assert table["regime"].to_list() == ["bandwidth", "bandwidth"]
    assert runs.height == 1
    run = runs.row(0, named=True)
    assert run["kernels"] == 2 and run["ops"] == ["aten::cos"]
    assert run["bytes"] == 2 * (2 * n * 4)
    assert run["bytes_saved"] == 2 * n * 4          # the intermediate: written once, read back once
    assert run["time_saved_ns"] == pytest.approx(200_000 / 2)


def test_ops_on_unrelated_shapes_do_not_chain(tmp_path):
    b = TraceBuilder()
    b.annotation("block", -5, 400)
    unary(b, "aten::cos", 0, [1 << 24], dur=100)
    unary(b, "aten::sin", 130, [1 << 20, 3], dur=100)  # same module, but not the first one's result
    _, runs = runs_of(b, tmp_path)
    assert runs.is_empty()


def test_a_shape_chain_needs_the_same_op_or_module(tmp_path):
    b = TraceBuilder()
    b.annotation("encoder", -5, 120)
    unary(b, "aten::cos", 0, [1 << 24], dur=100)
    b.annotation("decoder", 125, 120)
    unary(b, "aten::sin", 130, [1 << 24], dur=100)
    _, runs = runs_of(b, tmp_path)
    assert runs.is_empty()
    b2 = TraceBuilder()
    b2.annotation("block", -5, 400)
    unary(b2, "aten::cos", 0, [1 << 24], dur=100)
    unary(b2, "aten::sin", 130, [1 << 24], dur=100)
    _, runs = runs_of(b2, tmp_path)
    assert runs.height == 1 and runs["ops"].to_list() == [["aten::cos", "aten::sin"]]


def test_per_parameter_optimizer_updates_are_not_intermediate_traffic(tmp_path):
    b = TraceBuilder()
    b.annotation("Optimizer.step#SGD.step", -5, 600)
    for i in range(4):  # one add_ per parameter, all of the same shape
        op = b.cpu_op("aten::add_", i * 130, 10, input_dims=[[1 << 22], [1 << 22], []], input_types=[F32, F32, "Scalar"],
                      input_strides=[[1], [1], []], concrete_inputs=["", "", "-0.01"])
        b.launch_kernel(launch_us=i * 130 + 2, start_us=i * 130 + 20, dur_us=60, external_id=op, name=COS)
    table, runs = runs_of(b, tmp_path)
    assert (table["regime"] == "bandwidth").all()
    assert runs.is_empty()


def test_latency_bound_kernels_are_not_bandwidth_savings(tmp_path):
    b = TraceBuilder()
    unary(b, "aten::cos", 0, [256], dur=3)    # 2 KB in 3 µs: ~1 ns at 2 TB/s
    unary(b, "aten::cos", 30, [256], dur=3)
    table, runs = runs_of(b, tmp_path)
    assert (table["duration_ns"] < LATENCY_BOUND_MAX_NS).all()
    assert table.select(attribution.latency_bound(table))["regime"].all()
    assert runs.is_empty()
