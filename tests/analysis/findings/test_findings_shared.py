"""On every shared trace: no finding advises a format the device lacks."""

from __future__ import annotations

import pytest

from shared_traces import real_trace_params

import traceanalyze
from traceanalyze.analysis.findings.capabilities import capabilities
from traceanalyze.report.model import build_report


@pytest.mark.parametrize("path", real_trace_params())
def test_no_finding_contradicts_the_device(path):
    report = build_report(traceanalyze.load_trace(path))
    for rank in report.ranks:
        peaks = next((choice.peaks for choice in rank.peaks if choice.peaks is not None), None)
        caps = capabilities(peaks)
        for row in rank.findings.iter_rows(named=True):
            advice = (row["title"] + " " + row["action"]).lower()
            if not caps.tf32:
                assert "tf32" not in advice, (row["id"], peaks and peaks.key)
            if not caps.fp8:
                assert "fp8" not in advice and "float8" not in advice, (row["id"], peaks and peaks.key)
            if not caps.bf16:
                assert "bfloat16" not in advice, (row["id"], peaks and peaks.key)
            assert row["gain_ns"] is None or row["gain_ns"] >= 0
