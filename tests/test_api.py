"""The notebook API returns the same tables the report shows."""

from __future__ import annotations

from pathlib import Path

import polars as pl

import traceanalyze
from traceanalyze.analysis import idle

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "synthetic_training.json.gz"


def test_analyze_returns_the_report_tables():
    report = traceanalyze.analyze(FIXTURE)
    rank = report.ranks[0]
    trace = traceanalyze.load_trace(FIXTURE)
    assert rank.idle.equals(idle.idle_summary(trace))
    assert isinstance(rank.roofline, pl.DataFrame) and rank.roofline.height == trace.gpu.height
    total = rank.attribution.select(pl.sum_horizontal("overhead", "bandwidth", "compute", "communication", "memcpy", "unmodeled")).item()
    assert abs(total - 1.0) < 1e-12


def test_analyze_accepts_a_loaded_trace_and_overrides():
    trace = traceanalyze.load_trace(FIXTURE)
    report = traceanalyze.analyze(trace, peak_flops=1e12, peak_bandwidth=1e11)
    assert report.ranks[0].peaks[0].source.startswith("command line")
    assert report.ranks[0].roofline.filter(pl.col("regime") == "compute").height > 0
