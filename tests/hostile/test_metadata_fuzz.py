"""Property: whatever a trace's metadata holds — `deviceProperties`, `distributedInfo`, step
names, the top-level keys — loading and reporting either work or raise our own one-line error.
(tests/cli/test_fuzz.py mutates the events; a 1e30 in `deviceProperties` once escaped as a
polars traceback.)"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mutations import base_trace, json_values

import traceanalyze
from traceanalyze.errors import TraceAnalyzeError
from traceanalyze.renderers.jsonout import render_json
from traceanalyze.pipeline.rank import build_report
from traceanalyze.renderers.terminal import render_terminal

BASE = base_trace()
VALUES = json_values() | st.integers(-(10**40), 10**40)
DEVICE_KEYS = ["id", "name", "totalGlobalMem", "numSms", "computeMajor", "computeMinor", "maxThreadsPerBlock",
               "sharedMemPerBlock", "regsPerBlock", "warpSize"]
INFO_KEYS = ["rank", "world_size", "backend", "pg_count", "nccl_version"]
TOP_KEYS = ["schemaVersion", "traceName", "cuda_runtime_version", "hip_runtime_version", "cupti_version",
            "record_shapes", "deviceProperties", "distributedInfo"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_metadata_never_escapes(tmp_path, data):
    trace = json.loads(json.dumps(BASE))
    trace["distributedInfo"] = {"rank": 0, "world_size": 1, "backend": "nccl"}
    for _ in range(data.draw(st.integers(1, 4))):
        where = data.draw(st.sampled_from(["device", "info", "top", "step"]))
        if where == "device" and isinstance(trace.get("deviceProperties"), list) and trace["deviceProperties"]:
            entry = trace["deviceProperties"][0]
            if isinstance(entry, dict):
                entry[data.draw(st.sampled_from(DEVICE_KEYS))] = data.draw(VALUES)
        elif where == "info" and isinstance(trace.get("distributedInfo"), dict):
            trace["distributedInfo"][data.draw(st.sampled_from(INFO_KEYS))] = data.draw(VALUES)
        elif where == "step":
            trace["traceEvents"].append({"ph": "X", "cat": "user_annotation", "pid": 1, "tid": 1, "ts": 0, "dur": 5,
                                         "name": f"ProfilerStep#{data.draw(st.integers(-(10**30), 10**30))}"})
        else:
            trace[data.draw(st.sampled_from(TOP_KEYS))] = data.draw(VALUES)
    path = tmp_path / "metadata.json"
    path.write_text(json.dumps(trace))
    try:
        loaded = traceanalyze.load_trace(path)
    except TraceAnalyzeError as error:
        assert str(error) and "\n" not in str(error)
        return
    report = build_report(loaded)
    render_terminal(report)
    json.loads(render_json(report))
