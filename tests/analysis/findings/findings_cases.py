"""Synthetic traces for the findings tests: each builder's known values are written next to it."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl

from builder import TraceBuilder

import traceanalyze
from traceanalyze.pipeline.rank import build_report

A100 = dict(device_name="NVIDIA A100-SXM4-80GB", num_sms=108, total_memory=85899345920, compute_capability=(8, 0))
H100 = dict(device_name="NVIDIA H100 80GB HBM3", num_sms=132, total_memory=85899345920, compute_capability=(9, 0))
V100 = dict(device_name="Tesla V100-SXM2-32GB", num_sms=80, total_memory=34359738368, compute_capability=(7, 0))
BF16, F32 = "c10::BFloat16", "float"
SGEMM = "ampere_sgemm_128x64_nn"
BF16_GEMM = "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn"
H100_GEMM = ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_"
             "kernel__5x_cublas")
ADD = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, "
       "3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)")


def mm(b: TraceBuilder, start: float, m: int, k: int, n: int, dtype: str, kernel: str, dur: float,
       shapes: bool = True) -> int:
    """aten::mm [m,k]×[k,n] at `start` µs, launched at start+2, its kernel at start+20 for `dur` µs."""
    if shapes:
        op = b.cpu_op("aten::mm", start, 10, input_dims=[[m, k], [k, n]], input_types=[dtype, dtype],
                      input_strides=[[k, 1], [n, 1]], concrete_inputs=["", ""])
    else:
        op = b.cpu_op("aten::mm", start, 10)
    b.launch_kernel(launch_us=start + 2, start_us=start + 20, dur_us=dur, external_id=op, name=kernel)
    return op


def report_of(b: TraceBuilder, tmp_path: Path, rename: dict[str, str] | None = None):
    """The report of `b` (with event names replaced per `rename`, for names the builder has no option for)."""
    document = b.to_dict()
    for event in document["traceEvents"]:
        if event.get("name") in (rename or {}):
            event["name"] = rename[event["name"]]
    path = tmp_path / "t.json.gz"
    with gzip.open(path, "wt") as handle:
        json.dump(document, handle)
    return build_report(traceanalyze.load_trace(path))


def findings_of(b: TraceBuilder, tmp_path: Path, rename: dict[str, str] | None = None) -> dict[str, dict]:
    """Findings of rank 0 by id."""
    frame: pl.DataFrame = report_of(b, tmp_path, rename).ranks[0].findings
    return {row["id"]: row for row in frame.iter_rows(named=True)}

