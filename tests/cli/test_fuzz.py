"""Property: whatever a trace file holds — truncated, mutated, wrongly typed — loading and reporting
either work or raise our own one-line error; nothing else escapes."""

from __future__ import annotations

import gzip
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mutations import base_trace, json_values, mutated

import traceanalyze
from traceanalyze.errors import TraceAnalyzeError
from traceanalyze.renderers.jsonout import render_json
from traceanalyze.pipeline.rank import build_report
from traceanalyze.renderers.terminal import render_terminal


BASE = base_trace()
JSON_VALUES = json_values()


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
    trace = mutated(BASE, data, JSON_VALUES)
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
