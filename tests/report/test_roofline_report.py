"""The roofline in the reports: the JSON contract, the terminal sections, and `--device-file`,
against a synthetic trace whose answers are written down here."""

from __future__ import annotations

import json

import polars as pl
import pytest
from typer.testing import CliRunner

from builder import TraceBuilder

import traceanalyze
from traceanalyze.analysis.attribution import ATTRIBUTION_KEYS
from traceanalyze.analysis.devices import device_peaks
from traceanalyze.cli import app
from traceanalyze.renderers.jsonout import report_to_dict
from traceanalyze.pipeline.rank import build_report
from traceanalyze.renderers.terminal import render_terminal

A100 = device_peaks("NVIDIA A100-SXM4-80GB", 108, 85899345920)
BF16 = "c10::BFloat16"
GEMM = "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn"
ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16> >"
M = K = N = 4096
NUMEL = 1 << 24


def build(b: TraceBuilder) -> TraceBuilder:
    """mm (compute, 1 ms) → add, mul chained in module "block" (bandwidth, 40 µs each) → an HtoD
    copy of 64 MB (5 ms) → an all-reduce (100 µs) overlapping nothing."""
    op = b.cpu_op("aten::mm", 0, 10, input_dims=[[M, K], [K, N]], input_types=[BF16, BF16],
                  input_strides=[[K, 1], [N, 1]], concrete_inputs=["", ""])
    b.launch_kernel(launch_us=2, start_us=20, dur_us=1000, external_id=op, name=GEMM)
    b.annotation("block", 1020, 200)
    for i, name in enumerate(("aten::add", "aten::mul")):
        start = 1030 + 60 * i
        op = b.cpu_op(name, start, 10, input_dims=[[NUMEL], [NUMEL], []], input_types=[BF16, BF16, "Scalar"],
                      input_strides=[[1], [1], []], concrete_inputs=["", "", "1"])
        b.launch_kernel(launch_us=start + 2, start_us=start + 20, dur_us=40, external_id=op, name=ADD)
    copy = b.launch(1200, 2, name="cudaMemcpyAsync")
    b.memcpy(copy, 1210, 5000, kind="HtoD", bytes=64 << 20)
    nccl = b.launch(6300, 2, name="ncclKernel")
    b.nccl_kernel(nccl, 6310, 100)
    return b


@pytest.fixture(scope="module")
def trace_path(tmp_path_factory):
    return build(TraceBuilder()).write(tmp_path_factory.mktemp("roof") / "t.json.gz")


@pytest.fixture(scope="module")
def report(trace_path):
    return build_report(traceanalyze.load_trace(trace_path))


def kernel(doc, op):
    return next(k for k in doc["kernels"] if k["op"] == op)


def test_json_attribution_and_coverage(report):
    summary = report_to_dict(report)["summary"]
    assert set(summary["attribution"]) == set(ATTRIBUTION_KEYS)
    assert sum(summary["attribution"].values()) == pytest.approx(1.0, abs=1e-12)
    # busy: mm 1000 + add 40 + mul 40 + copy 5000 µs are modelled; the all-reduce is left out
    assert summary["modelable_busy_us"] == pytest.approx(6080.0)
    assert summary["modelled_busy_us"] == pytest.approx(6080.0)
    assert summary["communication_busy_us"] == pytest.approx(100.0)
    assert summary["model_coverage"] == 1.0


def test_json_device_and_kernel_roofs(report):
    doc = report_to_dict(report)
    assert doc["device"]["memory_bandwidth_bytes_per_s"] == A100.memory_bandwidth_bytes_per_s
    assert doc["device"]["peak_flops_per_s"]["bf16:tensor"] == 312e12
    mm = kernel(doc, "aten::mm")
    assert (mm["bound"], mm["roof"], mm["compute_dtype"], mm["math_unit"]) == ("compute", "BF16 TC", "bf16", "tensor")
    assert mm["flops"] == 2 * M * N * K and mm["bytes"] == (M * K + K * N + M * N) * 2
    assert mm["peak_flops_per_s"] == 312e12 and mm["peak_bytes_per_s"] == A100.memory_bandwidth_bytes_per_s
    assert mm["ridge_flops_per_byte"] == pytest.approx(312e12 / A100.memory_bandwidth_bytes_per_s)
    assert mm["pct_of_roof"] == pytest.approx(2 * M * N * K / 1e-3 / 312e12)
    add = kernel(doc, "aten::add")
    assert (add["bound"], add["roof"], add["math_unit"]) == ("bandwidth", "HBM", "simt")
    assert add["pct_of_roof"] == pytest.approx(3 * NUMEL * 2 / 40e-6 / A100.memory_bandwidth_bytes_per_s)
    assert {o["op"] for o in doc["ops"]} == {"aten::mm", "aten::add", "aten::mul"}  # copies, collectives apart


def test_host_copies_are_judged_against_the_host_link(report):
    copy = next(k for k in report_to_dict(report)["kernels"] if k["bound"] == "memcpy")
    assert copy["roof"] == "PCIe Gen4 x16"
    assert copy["peak_bytes_per_s"] == A100.host_link_bytes_per_s == 32e9
    assert copy["pct_of_roof"] == pytest.approx((64 << 20) / 5e-3 / 32e9)
    assert copy["no_roof_reason"] is None


def test_host_copy_without_a_known_link_has_no_pct_and_says_why(tmp_path):
    b = build(TraceBuilder(device_name="AMD Instinct MI250X", num_sms=110, total_memory=68702699520))
    doc = report_to_dict(build_report(traceanalyze.load_trace(b.write(tmp_path / "mi.json.gz"))))
    copy = next(k for k in doc["kernels"] if k["bound"] == "memcpy")
    assert copy["pct_of_roof"] is None and copy["roof"] is None
    assert "host-link bandwidth" in copy["no_roof_reason"]


def test_terminal_roofline_and_fusion(report):
    text = render_terminal(report, details=True)  # the top ops and fusion are behind --details
    roofline = text[text.index("ROOFLINE"):text.index("FUSION")]
    assert "BF16 TC" in roofline and "HBM" in roofline and "PCIe Gen4 x16" in roofline
    assert "top ops by kernel time" in roofline
    fusion = text[text.index("FUSION"):]
    assert "aten::add → aten::mul" in fusion and "block" in fusion
    compute = report.ranks[0].recoverable.filter(pl.col("regime") == "compute").row(0, named=True)
    # the mm's time at its roof / its time
    assert compute["roof_share"] == pytest.approx((2 * M * N * K / 312e12) / 1e-3)


def test_device_file_overrides_the_table(trace_path, tmp_path):
    device = tmp_path / "device.json"
    device.write_text(json.dumps({"format": "traceanalyze-device", "version": 1, "base": "a100-sxm4-80gb",
                                  "memory_bandwidth_bytes_per_s": 1.0e12,
                                  "peak_flops_per_s": {"bf16": {"tensor": 100e12}}}))
    result = CliRunner().invoke(app, ["report", str(trace_path), "--format", "json", "--device-file", str(device)])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["device"]["source"].startswith("device file")
    assert doc["device"]["memory_bandwidth_bytes_per_s"] == 1.0e12
    mm = kernel(doc, "aten::mm")
    assert mm["peak_flops_per_s"] == 100e12
    assert mm["ridge_flops_per_byte"] == pytest.approx(100.0)
    assert mm["pct_of_roof"] == pytest.approx(2 * M * N * K / 1e-3 / 100e12)
