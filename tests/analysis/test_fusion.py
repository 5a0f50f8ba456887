"""Fusion opportunities: only data-dependent, bandwidth-bound chains, with exact savings."""

from __future__ import annotations

import pytest

from builder import TraceBuilder

import traceanalyze
from traceanalyze.analysis import attribution, roofline

F32 = "float"
COS = ("void at::native::vectorized_elementwise_kernel<4, at::native::cos_kernel_cuda(at::TensorIteratorBase&)"
       "::{lambda()#1}, at::detail::Array<char*, 2> >")


def unary(b: TraceBuilder, name: str, start: float, shape: list[int], *, dur: float, stream: int = 7) -> int:
    op = b.cpu_op(name, start, 10, input_dims=[shape], input_types=[F32], input_strides=[[1] * len(shape)],
                  concrete_inputs=[""])
    b.launch_kernel(launch_us=start + 2, launch_dur_us=4, start_us=start + 20, dur_us=dur, external_id=op, name=COS,
                    stream=stream)
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
        op = b.cpu_op("aten::add_", i * 130, 10, input_dims=[[1 << 22], [1 << 22], []],
                      input_types=[F32, F32, "Scalar"],
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
    assert table["regime"].cast(str).to_list() == ["latency", "latency"]  # far below both roofs: its own bound
    assert runs.is_empty()


FILL = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >"


def fill(b: TraceBuilder, start: float, shape: list[int], *, dur: float) -> None:
    op = b.cpu_op("aten::fill_", start, 10, input_dims=[shape, []], input_types=[F32, "Scalar"],
                  input_strides=[[1] * len(shape), []], concrete_inputs=["", "0"])
    b.launch_kernel(launch_us=start + 2, launch_dur_us=4, start_us=start + 20, dur_us=dur, external_id=op, name=FILL)


@pytest.mark.parametrize("dur", [0, 50])
def test_fills_are_not_a_chain_whatever_their_time(tmp_path, dur):
    # issue 12: "aten::fill_ runs of 0 ns with 584 kernels": a fill reads nothing, so no fill
    # consumes the one before it, and a run that saves no time is no opportunity
    b = TraceBuilder(integer_us=False)
    for i in range(4):
        fill(b, i * 130, [1 << 24], dur=dur)
    table, runs = runs_of(b, tmp_path)
    assert (table["regime"] == "bandwidth").all()
    assert runs.is_empty()


def test_a_fill_can_feed_a_reader(tmp_path):
    n = 1 << 24
    b = TraceBuilder()
    b.annotation("block", -5, 300)
    fill(b, 0, [n], dur=50)
    unary(b, "aten::cos", 130, [n], dur=100)
    _, runs = runs_of(b, tmp_path)
    assert runs["ops"].to_list() == [["aten::fill_", "aten::cos"]]
    assert runs["bytes_saved"].to_list() == [n * 4]  # 2 × 4n, capped at Σ bytes (4n + 8n) − the largest op's (8n)


def test_runs_without_shapes_are_not_opportunities(tmp_path):
    # issue 12: runs of a single op (aten::cat, whose TensorList leaves no tensor shape): without
    # shapes nothing shows that one op consumes the other's result
    b = TraceBuilder()
    for i in range(3):
        op = b.cpu_op("aten::cat", i * 130, 10, input_dims=[[[1 << 22, 4], [1 << 22, 4]], []],
                      input_types=["TensorList", "Scalar"], concrete_inputs=["", "0"])
        b.launch_kernel(launch_us=i * 130 + 2, start_us=i * 130 + 20, dur_us=100, external_id=op,
                        name="void at::native::CatArrayBatchedCopy<float, unsigned int, 2, 128, 1>")
    table, runs = runs_of(b, tmp_path)
    assert (table["regime"] == "bandwidth").all() and table["cost_model"].cast(str).to_list() == ["copy"] * 3
    assert runs.is_empty()

