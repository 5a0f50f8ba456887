"""The JSON schema (`ReportV1`) reads back every report the tool writes: decoding the JSON of each
shared trace (and the fixture) against it gives the same document, and re-encoding it gives the
same bytes. A wrong type declared in report/schema.py fails here, not in a user's CI."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from shared_traces import real_trace_params

import traceanalyze
from traceanalyze.renderers.jsonout import render_json, report_v1
from traceanalyze.report.schema import KERNEL_LIMIT, ReportV1, encode_report, report_from_builtins

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "synthetic_training.json.gz"


def round_trip(text: str) -> None:
    decoded = msgspec.json.decode(text.encode(), type=ReportV1)
    assert msgspec.to_builtins(decoded) == json.loads(text)
    assert encode_report(decoded) == text


def test_fixture_report_round_trips():
    report = traceanalyze.analyze(FIXTURE)
    text = render_json(report)
    round_trip(text)
    assert report_from_builtins(json.loads(text)) == msgspec.json.decode(text.encode(), type=ReportV1)
    assert report_v1(report).summary.ranks == 1


@pytest.mark.parametrize("path", real_trace_params())
def test_real_trace_reports_round_trip(path):
    try:
        report = traceanalyze.analyze(path)
    except traceanalyze.TraceAnalyzeError as error:
        pytest.skip(f"not analysable: {error}")
    round_trip(render_json(report))
    listed = report_v1(report)
    assert len(listed.kernels) == min(KERNEL_LIMIT, listed.kernels_total)


def test_a_wrong_type_names_its_field():
    document = json.loads(render_json(traceanalyze.analyze(FIXTURE)))
    document["ranks"][0]["streams"][0]["busy_us"] = "12"
    with pytest.raises(msgspec.ValidationError,
                       match=r"Expected `float`, got `str` - at `\$.ranks\[0\].streams\[0\].busy_us`"):
        report_from_builtins(document)
