"""GPU op → launching CPU op: the deepest `aten::` op around the launch, whatever the ops' start times."""

from __future__ import annotations

import pytest
from builder import TraceBuilder

import traceanalyze
from traceanalyze.analysis.kernel_ops import kernel_ops


@pytest.mark.parametrize("inner_start", [0.0, 1.0])  # the same start as its parent (common at µs precision), or later
def test_launch_belongs_to_the_innermost_aten_op(tmp_path, inner_start):
    b = TraceBuilder()
    b.annotation("## forward ##", 0, 100)
    b.cpu_op("aten::matmul", 0, 50)
    b.cpu_op("aten::mm", inner_start, 40)
    b.cpu_op("cudaFuncGetAttributes-like helper", 30, 2)  # a non-aten op that does not enclose the launch
    b.launch_kernel(launch_us=10, start_us=60, dur_us=5, name="sgemm")
    b.launch_kernel(launch_us=45, start_us=70, dur_us=5, name="after_mm")  # inside matmul, after mm ended
    ops = kernel_ops(traceanalyze.load_trace(b.write(tmp_path / "t.json"))).sort("start_ns")
    assert ops["op_name"].to_list() == ["aten::mm", "aten::matmul"]
    assert ops["op_source"].to_list() == ["aten", "aten"]
    assert ops["annotation"].to_list() == ["## forward ##", "## forward ##"]


def test_external_id_is_the_fallback_only_when_no_op_encloses_the_launch(tmp_path):
    b = TraceBuilder()
    outside = b.cpu_op("aten::add", 0, 5)
    b.cpu_op("aten::mul", 20, 30)
    b.launch_kernel(launch_us=10, start_us=60, dur_us=5, name="orphan_of_add", external_id=outside)
    b.launch_kernel(launch_us=25, start_us=70, dur_us=5, name="in_mul", external_id=outside)
    ops = kernel_ops(traceanalyze.load_trace(b.write(tmp_path / "t.json"))).sort("start_ns")
    assert ops.select("name", "op_name", "op_source").rows() == [
        ("orphan_of_add", "aten::add", "external_id"), ("in_mul", "aten::mul", "aten")]
