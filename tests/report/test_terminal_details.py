"""The terminal's first screen and `--details` (docs/report-formats.md#terminal), on the trace of
tests/stepped_trace.py: 7 kernels, each launched 10 µs before it starts except the first (8 µs) and
the one launched at 110 µs, which waits 15 µs behind the kernel running until 125 (queue wait 15,
launch overhead 5): launch overheads 5, 8, 10, 10, 10, 10, 10 µs (p50 10, p99 10), queue waits p50 0."""

from __future__ import annotations

from stepped_trace import stepped_trace

import traceanalyze
from traceanalyze.renderers.terminal import render_terminal

DETAIL_HEADINGS = ("launch latency (launched GPU ops without clock skew):", "per step:",
                   "top ops by kernel time", "unmodeled kernels, by reason:")


def test_first_screen_keeps_the_key_sections(tmp_path):
    text = render_terminal(traceanalyze.analyze(stepped_trace(tmp_path)), width=200)
    for heading in ("VERDICT", "FINDINGS", "OVERHEAD — is the GPU waiting on the CPU?", "longest idle gaps (6 of 6):",
                    "WHERE THE TIME GOES", "ROOFLINE — kernels by total time"):
        assert heading in text
    assert ("  launch overhead p50 10 µs, p99 10 µs over 7 launches (launch → start less the queue wait behind "
            "earlier work; queue wait p50 0 ns, healthy when the GPU is busy)") in text.splitlines()
    assert not [heading for heading in DETAIL_HEADINGS if heading in text]
    assert text.splitlines()[-1] == ("--details adds: launch latency tables, small kernels, per-step idle, top ops, "
                                     "unmodeled kernels by reason")


def test_details_add_every_table(tmp_path):
    report = traceanalyze.analyze(stepped_trace(tmp_path))
    text = render_terminal(report, width=200, details=True)
    assert [heading for heading in DETAIL_HEADINGS if heading in text] == list(DETAIL_HEADINGS)
    assert "--details adds" not in text and "launch overhead p50 10 µs, p99" not in text
    assert "WHAT TO DO" not in text  # the findings are the advice (docs/findings.md)
    default = render_terminal(report, width=200)
    assert text.startswith(default.split("OVERHEAD")[0])  # the same verdict and findings first
