"""Property: whatever a trace file holds — truncated, mutated, wrongly typed — loading and reporting
either work or raise our own one-line error; nothing else escapes."""

from __future__ import annotations

import copy
import gzip
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builder import TraceBuilder

import traceanalyze
from traceanalyze.errors import TraceAnalyzeError
from traceanalyze.report.jsonout import render_json
from traceanalyze.report.model import build_report
from traceanalyze.report.terminal import render_terminal


def base_trace() -> dict:
    b = TraceBuilder()
    b.step(1, -20, 300)
    op = b.cpu_op("aten::mm", -10, 8, input_dims=[[4, 8], [8, 16]], input_types=["float", "float"])
    b.launch_kernel(launch_us=-8, start_us=0, dur_us=10, external_id=op)
    b.sync_call(12, 5)
    b.graph_launch(30, 5, [(40, 5, "g1"), (45, 5, "g2")])
    b.orphan_kernel(80, 5)
    c = b.launch(90, 3, name="cudaMemcpyAsync")
    b.memcpy(c, 95, 4)
    return b.to_dict()


BASE = base_trace()
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=6,
)
FIELDS = ["ph", "cat", "name", "pid", "tid", "ts", "dur", "id", "args"]
ARG_KEYS = ["correlation", "device", "stream", "External id", "Input Dims", "Input type", "grid", "bytes", "Concrete Inputs"]


def run_pipeline(path) -> None:
    try:
        trace = traceanalyze.load_trace(path)
    except TraceAnalyzeError as error:
        assert str(error) and "\n" not in str(error)
        return
    report = build_report(trace)
    render_terminal(report)
    json.loads(render_json(report))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_events_never_escape(tmp_path, data):
    trace = copy.deepcopy(BASE)
    events = trace["traceEvents"]
    for _ in range(data.draw(st.integers(1, 6))):
        event = events[data.draw(st.integers(0, len(events) - 1))]
        if data.draw(st.booleans()) and isinstance(event.get("args"), dict):
            event["args"][data.draw(st.sampled_from(ARG_KEYS))] = data.draw(JSON_VALUES)
        elif data.draw(st.booleans()):
            event.pop(data.draw(st.sampled_from(FIELDS)), None)
        else:
            event[data.draw(st.sampled_from(FIELDS))] = data.draw(JSON_VALUES)
    path = tmp_path / "mutated.json"
    path.write_text(json.dumps(trace))
    run_pipeline(path)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.floats(0.0, 1.0), compress=st.booleans())
def test_truncated_files_never_escape(tmp_path, cut, compress):
    raw = json.dumps(BASE).encode()
    if compress:
        raw = gzip.compress(raw)
    path = tmp_path / ("cut.json.gz" if compress else "cut.json")
    path.write_bytes(raw[: int(len(raw) * cut)])
    run_pipeline(path)
