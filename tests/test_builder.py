"""The synthetic trace builder, the independent raw counter, and the bundled fixture."""

from __future__ import annotations

import ast
import gzip
import importlib.util
import json
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from builder import DEFAULT_BASE_US, TraceBuilder
from raw_counts import raw_counts
from shared_traces import REPO_ROOT, real_trace_params, shared_trace

BASE_NS = int(DEFAULT_BASE_US) * 1000
DEVICE_PROPERTY_KEYS = {  # as in the A100/H100/B200 traces of ../shared/traces
    "id", "name", "totalGlobalMem", "computeMajor", "computeMinor", "maxThreadsPerBlock",
    "maxThreadsPerMultiprocessor", "regsPerBlock", "regsPerMultiprocessor", "warpSize", "sharedMemPerBlock",
    "sharedMemPerMultiprocessor", "numSms", "sharedMemPerBlockOptin",
}


def events(trace: dict, *, cat: str | None = None, ph: str | None = None) -> list[dict]:
    return [e for e in trace["traceEvents"]
            if (cat is None or e.get("cat") == cat) and (ph is None or e.get("ph") == ph)]


def ns(value: int | float) -> int:
    """A written ts/dur back to exact integer ns (as a careful loader would)."""
    return int(Decimal(value if isinstance(value, int) else repr(value)) * 1000)


# ----------------------------------------------------------------------------------- timestamps

def test_kernel_timestamp_is_base_plus_start():
    b = TraceBuilder()
    b.kernel(b.launch(1, 5), 10.5, 2.25)
    (kernel,) = events(b.to_dict(), cat="kernel")
    assert kernel["ts"] == DEFAULT_BASE_US + 10.5
    assert kernel["dur"] == 2.25


def test_nanosecond_fractions_are_written_exactly():
    b = TraceBuilder()
    b.kernel(b.launch(1, 5), 12.345, 0.001)
    text = json.dumps(b.to_dict())
    assert '"ts": 1700000000012.345, "dur": 0.001' in text
    (kernel,) = events(json.loads(text), cat="kernel")
    assert ns(kernel["ts"]) == BASE_NS + 12_345
    assert round(kernel["ts"] * 1000) == BASE_NS + 12_345


@given(st.integers(min_value=-10**9, max_value=10**11), st.integers(min_value=0, max_value=10**10))
def test_any_nanosecond_time_round_trips(start_ns: int, dur_ns: int):
    b = TraceBuilder()
    b.cpu_op("aten::relu", start_ns / 1000, dur_ns / 1000)
    (op,) = events(json.loads(json.dumps(b.to_dict())), cat="cpu_op")
    assert (ns(op["ts"]), ns(op["dur"])) == (BASE_NS + start_ns, dur_ns)


def test_custom_base_and_integer_mode():
    b = TraceBuilder(base_us=1_623_142_623_460_016, integer_us=True)
    b.kernel(b.launch(3, 5), 12, 7)
    trace = b.to_dict()
    (kernel,) = events(trace, cat="kernel")
    assert (kernel["ts"], kernel["dur"]) == (1_623_142_623_460_028, 7)
    assert all(isinstance(e["ts"], int) for e in trace["traceEvents"])


@pytest.mark.parametrize(("kwargs", "start_us"), [
    ({}, 0.0001),  # finer than 1 ns
    ({"integer_us": True}, 1.5),  # not whole µs
    ({"base_us": 9e15}, 0.001),  # ns not representable at this magnitude
])
def test_refuses_times_it_cannot_write_exactly(kwargs, start_us):
    with pytest.raises(ValueError):
        b = TraceBuilder(**kwargs)
        b.cpu_op("aten::relu", start_us, 1)


# -------------------------------------------------------------------------------------- linking

def test_launch_and_kernel_share_correlation_and_external_id():
    b = TraceBuilder()
    op = b.cpu_op("aten::addmm", 0, 30, input_dims=[[64, 512], [512, 512]], input_types=["c10::BFloat16"] * 2,
                  input_strides=[[512, 1], [512, 1]], concrete_inputs=["", ""])
    corr = b.launch(10, 5, external_id=op)
    b.kernel(corr, 20, 4, name="gemm", stream=13, grid=(4, 2, 1), block=(256, 1, 1))
    trace = b.to_dict()
    (cpu,) = events(trace, cat="cpu_op")
    (runtime,) = events(trace, cat="cuda_runtime")
    (kernel,) = events(trace, cat="kernel")
    assert cpu["args"]["External id"] == runtime["args"]["External id"] == kernel["args"]["External id"] == op
    assert runtime["args"]["correlation"] == kernel["args"]["correlation"] == corr
    assert runtime["args"]["cbid"] == 211 and runtime["name"] == "cudaLaunchKernel"
    assert cpu["args"]["Input Dims"] == [[64, 512], [512, 512]]
    assert cpu["args"]["Input type"] == ["c10::BFloat16", "c10::BFloat16"]
    assert cpu["args"]["Input Strides"] == [[512, 1], [512, 1]]
    assert cpu["args"]["Concrete Inputs"] == ["", ""]
    assert (kernel["pid"], kernel["tid"], kernel["args"]["stream"], kernel["args"]["device"]) == (0, 13, 13, 0)
    assert (kernel["args"]["grid"], kernel["args"]["block"]) == ([4, 2, 1], [256, 1, 1])
    assert (runtime["pid"], runtime["tid"]) == (cpu["pid"], cpu["tid"]) == (1000, 1000)


def test_ids_auto_increment_and_do_not_collide():
    b = TraceBuilder()
    externals = [b.cpu_op("a", 0, 1), b.annotation("b", 0, 1), b.step(3, 0, 1)]
    correlations = [b.launch(0, 1), b.launch(1, 1), b.orphan_kernel(5, 1)]
    assert externals == sorted(set(externals)) and len(externals) == 3
    assert correlations == sorted(set(correlations)) and len(correlations) == 3
    assert not set(externals) & set(correlations)


@pytest.mark.parametrize(("name", "cat"), [
    ("cudaLaunchKernel", "cuda_runtime"), ("cudaLaunchKernelExC", "cuda_runtime"),
    ("cuLaunchKernel", "cuda_driver"), ("cuLaunchKernelEx", "cuda_driver"),
])
def test_launch_category_follows_the_api(name, cat):
    b = TraceBuilder()
    b.launch(0, 1, name=name)
    assert [e["name"] for e in events(b.to_dict(), cat=cat)] == [name]


def test_flows_pair_launch_with_gpu_work():
    b = TraceBuilder()
    corr = b.launch_kernel(launch_us=1, start_us=10, dur_us=3, stream=9)
    trace = b.to_dict()
    (start,) = events(trace, ph="s")
    (finish,) = events(trace, ph="f")
    (runtime,) = events(trace, cat="cuda_runtime")
    (kernel,) = events(trace, cat="kernel")
    assert start["id"] == finish["id"] == corr
    assert start["cat"] == finish["cat"] == "ac2g" and finish["bp"] == "e" and "bp" not in start
    assert (start["pid"], start["tid"], start["ts"]) == (runtime["pid"], runtime["tid"], runtime["ts"])
    assert (finish["pid"], finish["tid"], finish["ts"]) == (kernel["pid"], kernel["tid"], kernel["ts"])


def test_kernel_before_its_launch_still_gets_flows():
    b = TraceBuilder()
    corr = b.launch(5, 2)
    b.kernel(corr, 1, 2)  # clock skew: GPU work before its launch
    assert len(events(b.to_dict(), ph="s")) == len(events(b.to_dict(), ph="f")) == 1


def test_graph_launch_has_one_launch_many_kernels():
    b = TraceBuilder()
    corr = b.graph_launch(0, 8, [(10, 2, "k0"), (12, 3, "k1"), (15, 1, "k2")], stream=3)
    trace = b.to_dict()
    (runtime,) = events(trace, cat="cuda_runtime")
    kernels = events(trace, cat="kernel")
    assert runtime["name"] == "cudaGraphLaunch" and runtime["args"]["correlation"] == corr
    assert [(k["name"], k["args"]["correlation"], k["args"]["graph node id"]) for k in kernels] == [
        ("k0", corr, 1), ("k1", corr, 2), ("k2", corr, 3)]
    assert len({k["args"]["graph id"] for k in kernels}) == 1
    assert len(events(trace, ph="s")) == 1 and len(events(trace, ph="f")) == 3


def test_orphan_kernel_has_no_runtime_event_and_no_flow():
    b = TraceBuilder()
    corr = b.orphan_kernel(3, 2)
    trace = b.to_dict()
    (kernel,) = events(trace, cat="kernel")
    assert kernel["args"]["correlation"] == corr and "External id" not in kernel["args"]
    assert not events(trace, cat="cuda_runtime") and not events(trace, ph="s") and not events(trace, ph="f")


def test_sync_call_writes_runtime_and_gpu_side_events():
    b = TraceBuilder()
    stream_corr = b.sync_call(10, 40.5, stream=20, external_id=7)
    device_corr = b.sync_call(60, 5, name="cudaDeviceSynchronize")
    trace = b.to_dict()
    runtime = events(trace, cat="cuda_runtime")
    sync = events(trace, cat="cuda_sync")
    assert [e["name"] for e in runtime] == ["cudaStreamSynchronize", "cudaDeviceSynchronize"]
    assert [(e["name"], e["tid"], e["args"]["correlation"]) for e in sync] == [
        ("Stream Sync", 20, stream_corr), ("Context Sync", -1, device_corr)]
    assert (sync[0]["ts"], sync[0]["dur"]) == (runtime[0]["ts"], runtime[0]["dur"])
    assert sync[0]["args"]["External id"] == runtime[0]["args"]["External id"] == 7
    assert not events(trace, ph="s")


def test_memcpy_memset_and_nccl_shapes():
    b = TraceBuilder(rank=1, world_size=8)
    b.memcpy(b.launch(0, 5, name="cudaMemcpyAsync"), 6, 2, kind="DtoH", bytes=4096)
    b.memset(b.launch(10, 5, name="cudaMemsetAsync"), 16, 1, bytes=512, stream=3)
    b.nccl_kernel(b.launch(20, 5), 30, 100, nelems=1024)
    trace = b.to_dict()
    (copy,) = events(trace, cat="gpu_memcpy")
    (fill,) = events(trace, cat="gpu_memset")
    (nccl,) = events(trace, cat="kernel")
    assert copy["name"] == "Memcpy DtoH (Device -> Pinned)"
    assert copy["args"]["bytes"] == 4096 and copy["args"]["memory bandwidth (GB/s)"] == 4096 / 2000
    assert fill["name"] == "Memset (Device)" and fill["tid"] == 3 and fill["args"]["bytes"] == 512
    assert nccl["name"].startswith("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*")
    assert {k: nccl["args"][k] for k in ("Collective name", "In msg nelems", "Group size", "dtype")} == {
        "Collective name": "allreduce", "In msg nelems": 1024, "Group size": 8, "dtype": "Float"}
    assert trace["distributedInfo"] == {"backend": "nccl", "rank": 1, "world_size": 8}


def test_annotations_steps_and_python_functions():
    b = TraceBuilder()
    b.step(7, 0, 100)
    b.annotation("## forward ##", 1, 50, tid=1001)
    b.python_function("train.py(12): main", 0, 100)
    trace = b.to_dict()
    assert [(e["name"], e["tid"]) for e in events(trace, cat="user_annotation")] == [
        ("ProfilerStep#7", 1000), ("## forward ##", 1001)]
    (python,) = events(trace, cat="python_function")
    assert python["args"]["Python id"] == 1 and python["args"]["Python parent id"] is None
    thread_names = {(e["pid"], e["tid"]) for e in events(trace, ph="M") if e["name"] == "thread_name"}
    assert {(1000, 1000), (1000, 1001)} <= thread_names


# --------------------------------------------------------------------------------- whole traces

def test_top_level_metadata_like_real_traces():
    b = TraceBuilder(devices=2, device_name="NVIDIA H100 80GB HBM3", num_sms=132, total_memory=85_045_477_376,
                     compute_capability=(9, 0))
    b.launch_kernel(launch_us=0, start_us=10, dur_us=5, device=1, stream=7)
    trace = b.to_dict()
    assert trace["schemaVersion"] == 1 and "distributedInfo" not in trace
    assert [p["id"] for p in trace["deviceProperties"]] == [0, 1]
    for props in trace["deviceProperties"]:
        assert set(props) == DEVICE_PROPERTY_KEYS
        assert (props["name"], props["numSms"], props["computeMajor"]) == ("NVIDIA H100 80GB HBM3", 132, 9)
    labels = {(e["pid"], e["args"]["labels"]) for e in events(trace, ph="M") if e["name"] == "process_labels"}
    assert labels == {(1000, "CPU"), (0, "GPU 0"), (1, "GPU 1")}
    assert any(e["name"] == "thread_name" and (e["pid"], e["tid"]) == (1, 7) for e in events(trace, ph="M"))
    (span,) = events(trace, cat="Trace")
    assert (span["pid"], span["tid"], span["ts"], span["dur"]) == ("Spans", "PyTorch Profiler", DEFAULT_BASE_US, 15.0)


def test_device_must_be_listed():
    with pytest.raises(ValueError):
        TraceBuilder(devices=1).kernel(1, 0, 1, device=1)


def test_schema_2021_writes_old_names():
    b = TraceBuilder(schema="2021", integer_us=True)
    b.step(1, 0, 100)
    op = b.cpu_op("aten::copy_", 1, 50, input_dims=[[4], [4]])
    b.memcpy(b.launch(2, 5, name="cudaMemcpyAsync", external_id=op), 10, 3)
    b.memset(b.launch(20, 5, name="cudaMemsetAsync", external_id=op), 30, 1)
    b.launch_kernel(launch_us=40, start_us=50, dur_us=5, external_id=op, launch_name="cuLaunchKernel")
    b.sync_call(60, 10)
    trace = b.to_dict()
    xs = events(trace, ph="X")
    assert [e["cat"] for e in xs] == ["Operator", "Operator", "Runtime", "Memcpy", "Runtime", "Memset",
                                      "Runtime", "Kernel", "Runtime", "Trace"]
    assert xs[0]["name"] == "ProfilerStep#1"
    assert all(isinstance(e["tid"], str) for e in xs if e["cat"] != "Trace")
    assert [e["tid"] for e in xs if e["cat"] == "Kernel"] == ["stream 7"]
    for e in xs[2:-1]:
        assert "External id" not in e["args"]
        assert e["args"].get("external id") == (None if e["name"] == "cudaStreamSynchronize" else op)
    assert xs[1]["args"]["External id"] == op
    flows = events(trace, ph="s") + events(trace, ph="f")
    assert {(e["cat"], e["name"]) for e in flows} == {("async", "launch")} and len(flows) == 6
    assert "deviceProperties" not in trace and not events(trace, cat="cuda_sync")


def test_raw_event_is_passed_through_verbatim():
    odd = {"ph": "X", "cat": "kernel", "name": "no ts", "pid": 0, "tid": 7, "dur": 1, "args": {}}
    b = TraceBuilder()
    b.raw_event(odd)
    odd["name"] = "mutated after adding"
    assert events(b.to_dict(), cat="kernel") == [{**odd, "name": "no ts"}]


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_write_round_trips(tmp_path: Path, suffix: str):
    b = TraceBuilder()
    b.launch_kernel(launch_us=0, start_us=6.5, dur_us=1.125)
    path = b.write(tmp_path / f"trace{suffix}")
    data = path.read_bytes()
    assert (data[:2] == b"\x1f\x8b") == suffix.endswith(".gz")
    assert json.loads(gzip.decompress(data) if suffix.endswith(".gz") else data) == b.to_dict()


def test_write_refuses_other_suffixes(tmp_path: Path):
    with pytest.raises(ValueError):
        TraceBuilder().write(tmp_path / "trace.txt")


# ----------------------------------------------------------------------------------- raw counts

def test_raw_counts_of_a_builder_trace(tmp_path: Path):
    b = TraceBuilder()
    b.step(1, 0, 500)
    op = b.cpu_op("aten::mm", 1, 50)
    b.launch_kernel(launch_us=2, start_us=10, dur_us=5, external_id=op)  # 1 launch, 1 kernel, 2 flows
    b.launch_kernel(launch_us=3, start_us=20, dur_us=5, launch_name="cuLaunchKernelEx")  # driver launch
    b.memcpy(b.launch(4, 5, name="cudaMemcpyAsync"), 30, 2)
    b.memset(b.launch(5, 5, name="cudaMemsetAsync"), 33, 1, flow=False)  # no flows
    b.graph_launch(6, 5, [(40, 1, "g0"), (41, 1, "g1")])  # 1 s + 2 f
    b.nccl_kernel(b.launch(7, 5), 50, 10)
    b.orphan_kernel(70, 1)
    b.sync_call(80, 10)
    b.python_function("train.py(1): <module>", 0, 500)
    b.annotation("ProfilerStep#x", 0, 1)  # a cpu op, not a step
    b.raw_event({"ph": "X", "cat": "KERNEL", "name": "upper-case cat", "pid": 0, "tid": 7, "ts": 1.0, "dur": 1})
    b.raw_event({"ph": "X", "cat": "Operator", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 1, "dur": 1})
    b.raw_event({"ph": "X", "cat": "kernel", "name": "no ts", "dur": 1})
    b.raw_event({"ph": "X", "cat": "kernel", "name": "negative", "ts": 1, "dur": -1})
    b.raw_event({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 1, "dur": 86_400_000_001})
    b.raw_event({"ph": "X", "cat": "cpu_op", "name": "no dur", "ts": 1})
    b.raw_event({"ph": "X", "cat": "cpu_op", "name": "string ts", "ts": "1", "dur": 1})
    b.raw_event({"ph": "X", "cat": "cpu_op", "name": "exactly one day", "ts": 1, "dur": 86_400_000_000})
    b.raw_event({"ph": "X", "cat": "gpu_user_annotation", "name": "not counted", "ts": 1, "dur": 1})
    b.raw_event({"ph": "s", "cat": "async_cpu_to_gpu", "id": 1, "ts": 1})
    b.raw_event({"ph": "f", "cat": "fwdbwd", "id": 1, "ts": 1})
    b.raw_event({"ph": "i", "cat": "kernel", "name": "instant, not X", "ts": 1})
    path = b.write(tmp_path / "t.json.gz")
    assert raw_counts(path) == {
        "events": len(b.to_dict()["traceEvents"]),
        "gpu": 9,  # 2 launched kernels, 2 graph kernels, orphan, "KERNEL", memcpy, memset, nccl
        "runtime": 7,  # 2 kernel launches, memcpy, memset, graph, nccl launch, stream sync
        "cpu_ops": 5,  # ProfilerStep#1, aten::mm, ProfilerStep#x, raw ProfilerStep#2, exactly one day
        "steps": 2,
        "sync": 1,
        "python": 1,
        "flows": 12,  # s+f for 2 kernels, memcpy, nccl; graph 1 s + 2 f; the raw async_cpu_to_gpu s
        "malformed": 5,  # no ts, negative, > 1 day, no dur, string ts
        "launches": 3,  # cudaLaunchKernel x2, cuLaunchKernelEx
        "graph_launches": 1,
        "gpu_by_kind": {"kernel": 6, "memcpy": 1, "memset": 1, "communication": 1},
    }


def test_raw_counts_reads_plain_json_and_event_arrays(tmp_path: Path):
    events_only = [{"ph": "X", "cat": "Kernel", "name": "k", "ts": 1, "dur": 1},
                   {"ph": "X", "cat": "Runtime", "name": "hipExtModuleLaunchKernel", "ts": 1, "dur": 1},
                   {"ph": "X", "cat": "runtime", "name": "hipGraphLaunch", "ts": 1, "dur": 1},
                   {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchCooperativeKernel", "ts": 1, "dur": 1},
                   {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "ts": 1, "dur": 1},
                   {"ph": "X", "cat": "kernel", "name": "void rcclKernel<...>", "ts": 1, "dur": 1}]
    path = tmp_path / "array.json"
    path.write_text(json.dumps(events_only))
    counts = raw_counts(path)
    assert (counts["events"], counts["gpu"], counts["runtime"]) == (6, 2, 4)
    assert (counts["launches"], counts["graph_launches"]) == (2, 1)
    assert counts["gpu_by_kind"] == {"kernel": 1, "memcpy": 0, "memset": 0, "communication": 1}


def test_raw_counts_is_independent_of_the_loader():
    tree = ast.parse((Path(__file__).parent / "raw_counts.py").read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module}
    assert imported <= {"__future__", "gzip", "json", "re", "pathlib", "typing"}


@pytest.mark.parametrize("path", real_trace_params())
def test_raw_counts_on_real_traces_are_sane(path: Path):
    counts = raw_counts(path)
    by_kind = counts.pop("gpu_by_kind")
    assert all(isinstance(v, int) and v >= 0 for v in [*counts.values(), *by_kind.values()])
    assert sum(by_kind.values()) == counts["gpu"]
    assert counts["steps"] <= counts["cpu_ops"]
    assert counts["launches"] + counts["graph_launches"] <= counts["runtime"]
    counted = sum(counts[k] for k in ("gpu", "runtime", "cpu_ops", "sync", "python", "flows", "malformed"))
    assert 0 < counted <= counts["events"]
    assert counts["malformed"] == 0  # none of the shared traces has a broken duration
    if counts["gpu"]:
        assert counts["runtime"] > 0


@pytest.mark.parametrize(("name", "expected"), [
    # numbers stated in ../shared/traces/SOURCES.md and design/KINETO_FORMAT.md
    ("param_v100_dlrm_4ranks/rank1.json.gz", {"kernels": 310}),  # "64 of 310 kernels"
    ("aipe_b200_deepseek_v3_clock_skew.json.gz", {"kernels": 179}),  # "113 of 179 kernels"
    ("hta_a100_large_training.json.gz", {"kernels": 8568, "events": 109123}),  # "109k events, 8.5k kernels"
    ("hta_cpu_only.json.gz", {"gpu": 0, "runtime": 0}),
    ("hta_no_gpu_events.json.gz", {"gpu": 0}),
    ("hta_a100_cupti_counters.json.gz", {"kernels": 0}),
    ("hta_sampled_rank0_no_device_props.json.gz", {"flows": 0}),
    ("zoology_a100_launches_without_kernels.json.gz", {"kernels": 0}),
    # counted separately with collections.Counter over (ph, cat) when this test was written
    ("kineto_v100_resnet50_2021.json.gz", {"gpu": 9096, "runtime": 11923, "cpu_ops": 23646, "flows": 18192}),
    ("hta_old_category_names.json.gz", {"gpu": 4, "runtime": 8, "flows": 8}),
    ("hta_a100_nccl_rank0.json.gz", {"kernels": 2700, "communication": 21}),
    ("hta_a100_80gb_record_shapes_cudagraph.json.gz", {"kernels": 6080, "graph_launches": 70}),
])
def test_raw_counts_agree_with_known_facts(name: str, expected: dict[str, int]):
    counts = raw_counts(shared_trace(name))
    by_kind = counts["gpu_by_kind"]
    derived = {**counts, "kernels": by_kind["kernel"] + by_kind["communication"],
               "communication": by_kind["communication"]}
    assert {k: derived[k] for k in expected} == expected
    if name == "zoology_a100_launches_without_kernels.json.gz":
        assert counts["launches"] > 0


def test_shared_traces_fixture_lists_the_dlrm_folder(shared_traces: list[Path]):
    assert any(p.parent.name == "param_v100_dlrm_4ranks" for p in shared_traces)
    assert all(p.name.endswith((".json", ".json.gz")) for p in shared_traces)


# -------------------------------------------------------------------------------------- fixture

@pytest.fixture(scope="module")
def make():
    """``scripts/make_fixtures.py`` as a module."""
    spec = importlib.util.spec_from_file_location("make_fixtures", REPO_ROOT / "scripts" / "make_fixtures.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look themselves up there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[spec.name]


FIXTURE = REPO_ROOT / "fixtures" / "synthetic_training.json.gz"


def test_fixture_matches_the_script_and_its_readme(make):
    on_disk = json.loads(gzip.decompress(FIXTURE.read_bytes()))
    assert on_disk == make.build_training_trace().to_dict(), "run scripts/make_fixtures.py"
    readme = make.render_readme(make.ground_truth(on_disk), raw_counts(FIXTURE))
    assert (REPO_ROOT / "fixtures" / "README.md").read_text() == readme, "run scripts/make_fixtures.py"
    assert FIXTURE.stat().st_size < 100_000


def test_fixture_ground_truth(make):
    truth = make.ground_truth(json.loads(gzip.decompress(FIXTURE.read_bytes())))
    assert truth["window"] == (12_200, 2_125_484)
    assert (truth["busy"], truth["idle"]) == (901_744, 1_211_540)
    assert truth["stream_busy"] == {7: 818_944, 20: 192_256}
    gaps = [(g["step"], g["dur"], g["cause"]) for g in sorted(truth["gaps"], key=lambda g: g["start"])]
    assert gaps == [("ProfilerStep#1", 13_396, "host"), ("ProfilerStep#1", 45_500, "sync"),
                    ("ProfilerStep#2", 13_396, "host"), ("ProfilerStep#2", 1_021_456, "host"),
                    ("ProfilerStep#2", 45_500, "sync"), ("ProfilerStep#3", 13_396, "host"),
                    ("ProfilerStep#3", 45_500, "sync"), ("ProfilerStep#4", 13_396, "host")]
    assert sum(g["dur"] for g in truth["gaps"]) == truth["idle"]


def test_fixture_launches_nest_in_their_ops():
    trace = json.loads(gzip.decompress(FIXTURE.read_bytes()))
    xs = events(trace, ph="X")
    host = {e["args"]["External id"]: e for e in xs if e["cat"] in ("cpu_op", "user_annotation")}
    runtime = [e for e in xs if e["cat"] == "cuda_runtime"]
    by_corr = {e["args"]["correlation"]: e for e in runtime}
    for call in runtime:
        op = host[call["args"]["External id"]]
        assert op["tid"] == call["tid"]
        assert ns(op["ts"]) <= ns(call["ts"]) and ns(call["ts"]) + ns(call["dur"]) <= ns(op["ts"]) + ns(op["dur"])
    for gpu in xs:
        if gpu["cat"] in ("kernel", "gpu_memcpy"):
            launch = by_corr[gpu["args"]["correlation"]]
            assert ns(gpu["ts"]) >= ns(launch["ts"]) + 7_500
            assert gpu["args"]["External id"] == launch["args"]["External id"]
    addmm = next(e for e in xs if e["name"] == "aten::addmm")
    assert addmm["args"]["Input type"][:3] == ["c10::BFloat16"] * 3
    assert addmm["args"]["Input Dims"][1:3] == [[16384, 512], [512, 512]]
