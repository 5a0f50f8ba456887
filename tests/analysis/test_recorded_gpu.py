"""The CUDA path end to end on traces `traceanalyze capture` recorded on an H100
(fixtures/recorded/README.md): the device, the math units of real cuBLAS/cuDNN kernel names, the
FLOP model against torch's FlopCounterMode of the same steps, capture's own synchronize, and a
device file `calibrate` measured there."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl
import pytest

from traceanalyze.analysis.devices import math_unit_from_kernel_name
from traceanalyze.api import analyze
from traceanalyze import RunOptions

RECORDED = Path(__file__).resolve().parents[2] / "fixtures" / "recorded"
MLP = RECORDED / "h100_mlp_fp32_train.json.gz"
GPT = RECORDED / "h100_transformer_bf16_train.json.gz"
FLOP_COUNTER = json.loads((RECORDED / "h100_flop_counter.json").read_text())


def raw_events(path: Path) -> list[dict]:
    return json.loads(gzip.open(path).read())["traceEvents"]


@pytest.fixture(scope="module")
def reports():
    return {path: analyze(path, run=RunOptions(cache=False)) for path in (MLP, GPT)}


def test_the_device_is_the_h100_sxm_of_the_datasheet(reports):
    for report in reports.values():
        (choice,) = report.ranks[0].peaks
        assert choice.peaks.key == "h100-sxm"
        assert choice.peaks.peak_flops("bf16", True) == 989.5e12


@pytest.mark.parametrize("path", [MLP, GPT], ids=["mlp_fp32", "transformer_bf16"])
def test_matmul_flops_are_flop_counters_for_each_recorded_step(reports, path):
    """Three recorded steps: the matmul kernels' FLOPs are 3 × FlopCounterMode's `mm` + `addmm`
    of one step, exactly; causal attention is half of its count (it ignores causality,
    docs/flops.md)."""
    roofline = reports[path].ranks[0].roofline
    assert reports[path].ranks[0].cpu_steps.height == 3
    by_op = FLOP_COUNTER[path.name]["by_op"]
    model = pl.col("cost_model").cast(pl.String)
    assert roofline.filter(model == "matmul")["flops"].sum() == 3 * (by_op["aten.mm"] + by_op["aten.addmm"])
    attention = sum(count for op, count in by_op.items() if "attention" in op)
    assert roofline.filter(model == "attention")["flops"].sum() == 3 * attention / 2
    assert (attention > 0) == (path == GPT)


def test_fp32_gemm_kernels_of_cublas_are_judged_on_the_simt_roof(reports):
    """TF32 is off: every GEMM kernel cuBLAS ran (cutlass simt, sgemm, xmma …_ffma_…) is SIMT, and
    the fp32-simt-gemm finding counts each one that has a cost and is not latency-bound."""
    names = [e["name"] for e in raw_events(MLP) if e.get("cat") == "kernel" and "gemm" in e["name"]]
    assert len(names) == 27 and any("_ffma_" in name for name in names)
    assert {math_unit_from_kernel_name(name) for name in names} == {"simt"}
    rank = reports[MLP].ranks[0]
    gemms = rank.roofline.filter(pl.col("name").cast(pl.String).str.contains("gemm"))
    assert not gemms["tensor_core"].any()
    counted = gemms.filter((pl.col("flops") > 0) & (pl.col("regime") != "latency"))
    assert counted.height > 0 and set(counted["peak_flops_per_s"].to_list()) == {67e12}
    (evidence,) = rank.findings.filter(pl.col("id") == "fp32-simt-gemm")["evidence"].to_list()
    assert evidence.startswith(f"{counted.height} FP32 GEMM kernels, ")  # no convolution among them


@pytest.mark.parametrize("path", [MLP, GPT], ids=["mlp_fp32", "transformer_bf16"])
def test_captures_own_synchronize_lies_after_the_last_step(reports, path):
    """capture waits for the window's last kernels with a synchronize: after the last
    ProfilerStep span, so no step holds it and no sync finding blames the script for it."""
    events = raw_events(path)
    steps = [e for e in events if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")]
    last_end = max(e["ts"] + e["dur"] for e in steps)
    syncs = [e for e in events if e.get("name") == "cudaDeviceSynchronize"]
    assert syncs and all(e["ts"] >= last_end for e in syncs)
    rank = reports[path].ranks[0]
    assert "sync-in-step" not in rank.findings["id"].to_list()
    assert rank.gaps.filter(pl.col("cause") == "sync").is_empty()


def test_the_calibrated_device_file_of_that_gpu_sets_the_roofs(tmp_path):
    """`calibrate` on the H100 measured 51.6 TFLOP/s FP32 SIMT: with its device file the FP32
    GEMMs are judged against that roof (the datasheet's 67 otherwise)."""
    device_file = json.loads((RECORDED / "h100_calibrate_device.json").read_text())
    measured = device_file["peak_flops_per_s"]["fp32"]["simt"]
    rank = analyze(MLP, device_file=RECORDED / "h100_calibrate_device.json", run=RunOptions(cache=False)).ranks[0]
    gemms = rank.roofline.filter(pl.col("name").cast(pl.String).str.contains("gemm") & (pl.col("flops") > 0))
    assert set(gemms["peak_flops_per_s"].to_list()) == {measured}
    assert set(gemms["peak_bytes_per_s"].to_list()) == {device_file["memory_bandwidth_bytes_per_s"]}


COMPILED = RECORDED / "h100_transformer_compiled_train.json.gz"
GRAPHS = RECORDED / "h100_transformer_cuda_graphs_train.json.gz"


def test_a_compiled_model_is_not_told_to_compile_its_inductor_kernels():
    rank = analyze(COMPILED, run=RunOptions(cache=False)).ranks[0]
    (chain,) = rank.findings.filter(pl.col("id") == "fuse-bandwidth-chain").rows(named=True)
    assert chain["evidence"].split("top ")[1].startswith("triton_")
    assert "torch.compile(model)" not in chain["action"] and "graph_breaks" in chain["action"]


def test_a_step_replayed_as_cuda_graphs():
    """Every kernel a `cudaGraphLaunch` launched (same correlation) has no op of its own: the
    roofline leaves exactly those unmodeled as graph replays; health counts the launches, and the
    late-CPU finding does not advise capturing graphs."""
    events = raw_events(GRAPHS)
    graph_launches = {e["args"]["correlation"] for e in events if e.get("name") == "cudaGraphLaunch"}
    replayed = [e for e in events if e.get("cat") == "kernel" and e["args"].get("correlation") in graph_launches]
    assert len(graph_launches) == 6 and len(replayed) > 100
    rank = analyze(GRAPHS, run=RunOptions(cache=False)).ranks[0]
    assert rank.health.filter(pl.col("finding") == "cuda_graph_launches")["count"].to_list() == [6]
    reasons = rank.roofline.filter(pl.col("kind") == "kernel")["unmodeled_reason"].cast(pl.String)
    assert reasons.str.starts_with("CUDA graph replay").sum() == len(replayed)
    (late,) = rank.findings.filter(pl.col("id") == "cpu-bound-gaps")["action"].to_list()
    assert "reduce-overhead" not in late and "CUDA graphs the step already replays" in late
