"""Non-CUDA accelerators (issue 12, point 6): MTIA's `mtia_ccp_events`, launched by
`runFunction - job_prep_and_submit_for_execution` and linked by correlation (as HTA's loader
does), and any `<accelerator>_kernel`/`_memcpy`/`_memset` category, are device work with their
launches; every trace says which device family it is about."""

from __future__ import annotations

import json

import polars as pl
import pytest

from builder import TraceBuilder

from traceanalyze.analysis.health import trace_health
from traceanalyze.load import columnar, load_trace
from traceanalyze.load.classify import device_family, gpu_category_kind, is_runtime_category, runtime_kind
from traceanalyze.load.fast import msgspec_chunk
from traceanalyze.load.general import general_chunk as _general_chunk
from traceanalyze.model import linked_gpu
from traceanalyze.renderers.jsonout import render_json
from traceanalyze.pipeline.rank import build_report
from traceanalyze.renderers.terminal import render_terminal

LAUNCH = "runFunction - job_prep_and_submit_for_execution"


def mtia_events() -> list[dict]:
    events = []
    for i in range(5):  # 5 launches; jobs on streams 0, 1, 0, 1, 0; launch i at 10 i µs, its job 3 µs later
        events.append({"ph": "X", "cat": "mtia_runtime", "name": LAUNCH, "pid": 1, "tid": 1, "ts": 10 * i, "dur": 2,
                       "args": {"correlation": 100 + i}})
        events.append({"ph": "X", "cat": "mtia_ccp_events", "name": f"job_{i}", "pid": 2, "tid": i % 2,
                       "ts": 10 * i + 3, "dur": 4, "args": {"correlation": 100 + i, "stream": i % 2, "device": 0}})
    events.append({"ph": "X", "cat": "mtia_memcpy", "name": "copy", "pid": 2, "tid": 5, "ts": 60, "dur": 1,
                   "args": {"stream": 5, "device": 0}})
    events.append({"ph": "X", "cat": "cpu_kernel", "name": "not device work", "pid": 1, "tid": 1, "ts": 70, "dur": 1})
    return events


def test_categories():
    assert [gpu_category_kind(c) for c in ("mtia_ccp_events", "kernel", "xpu_kernel", "npu_memcpy", "hpu_memset")] == \
        ["kernel", "kernel", "kernel", "memcpy", "memset"]
    assert [gpu_category_kind(c) for c in ("cpu_kernel", "cpu_op", "gpu_user_annotation", "kernel_x",
                                           "python_function")] == \
        [None] * 5
    assert [is_runtime_category(c) for c in ("mtia_runtime", "xpu_runtime", "cuda_driver", "cpu_runtime",
                                             "cpu_op")] == \
        [True, True, True, False, False]
    assert runtime_kind(LAUNCH) == "launch"


def test_mtia_trace(tmp_path):
    path = tmp_path / "mtia.json"
    path.write_text(json.dumps({"traceEvents": mtia_events()}))
    trace = load_trace(path)
    assert trace.gpu.sort("start_ns").select("name", "kind", "stream", "start_ns", "duration_ns").rows() == [
        *[(f"job_{i}", "kernel", i % 2, (10 * i + 3) * 1000, 4000)
          for i in range(5)], ("copy", "memcpy", 5, 60_000, 1000)]
    assert trace.runtime.select("kind").to_series().to_list() == ["launch"] * 5
    linked = linked_gpu(trace).sort("start_ns")
    assert linked["launch_start_ns"].to_list() == [10_000 * i for i in range(5)] + [None]
    assert trace.meta[0].device_family == "MTIA"
    health = trace_health(trace)
    assert health.filter(pl.col("finding") == "orphan_gpu_ops")["count"].to_list() == [1]  # the copy: no launch
    assert health.filter(pl.col("finding") == "no_gpu_events").is_empty()
    report = build_report(trace)
    assert report.ranks[0].has_gpu and report.ranks[0].device_family == "MTIA"
    assert report.ranks[0].latency.height == 5  # one launch → start per job
    assert f"— {path} (MTIA)" in render_terminal(report)
    assert json.loads(render_json(report))["ranks"][0]["device_family"] == "MTIA"


@pytest.mark.parametrize("path_name", ["columnar", "msgspec", "general"])
def test_every_decode_path_routes_them(path_name):
    text = json.dumps(mtia_events()).encode()
    if path_name == "columnar":
        if not columnar.available():
            pytest.skip("the compiled scanner is not built")
        chunk = columnar.chunk_tables(text, False)
    else:
        chunk = msgspec_chunk(text) if path_name == "msgspec" else _general_chunk(text, False)
    expected = [*((f"job_{i}", "kernel") for i in range(5)), ("copy", "memcpy")]
    assert chunk.frames["gpu"].select("name", "kind").rows() == expected
    assert chunk.frames["runtime"].height == 5


def test_device_family_rules():
    assert device_family(has_device_work=True, runtime_names=["cudaLaunchKernel"], device_names=[]) == "CUDA"
    assert device_family(has_device_work=True, runtime_names=["hipLaunchKernel"], device_names=[]) == "ROCm"
    assert device_family(has_device_work=True, runtime_names=[], device_names=["AMD Instinct MI300X VF"]) == "ROCm"
    assert device_family(has_device_work=True, runtime_names=[LAUNCH], device_names=[]) == "MTIA"
    assert device_family(has_device_work=True, runtime_names=["zeCommandListAppendLaunchKernel"],
                         device_names=[]) == "accelerator"
    assert device_family(has_device_work=False, runtime_names=[], device_names=["NVIDIA H100"],
                         cuda_runtime_version=12) == "none"
    assert device_family(has_device_work=False, runtime_names=["cudaLaunchKernel"], device_names=[]) == "CUDA"


def test_cuda_and_cpu_only_traces(tmp_path):
    builder = TraceBuilder()
    op = builder.cpu_op("aten::relu", 0, 20)
    builder.kernel(builder.launch(5, 4, external_id=op), 12.5, 3.25)
    assert load_trace(builder.write(tmp_path / "cuda.json")).meta[0].device_family == "CUDA"
    cpu = TraceBuilder()
    cpu.cpu_op("aten::relu", 0, 20)
    trace = load_trace(cpu.write(tmp_path / "cpu.json"))
    assert trace.meta[0].device_family == "none"
    assert "a CPU-only run" in " ".join(build_report(trace).ranks[0].notes)
