"""The bundled fixture: our analyses equal the ground truth that scripts/make_fixtures.py computes
from the raw JSON with a separate, plain-Python implementation of docs/metrics.md."""

from __future__ import annotations

import gzip
import importlib.util
import json
import sys
from pathlib import Path

import polars as pl
import pytest

import traceanalyze
from traceanalyze.analysis import idle

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "fixtures" / "synthetic_training.json.gz"


@pytest.fixture(scope="module")
def truth():
    spec = importlib.util.spec_from_file_location("make_fixtures", REPO / "scripts" / "make_fixtures.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("make_fixtures", module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module.ground_truth(json.loads(gzip.decompress(FIXTURE.read_bytes())))


@pytest.fixture(scope="module")
def trace():
    return traceanalyze.load_trace(FIXTURE)


def relative(frame: pl.DataFrame, column: str, base_ns: int) -> list[int]:
    return (frame[column] - base_ns).to_list()


def test_idle_summary(trace, truth):
    row = idle.idle_summary(trace).row(0, named=True)
    assert row["window_ns"] == truth["window_dur"]
    assert row["gpu_busy_ns"] == truth["busy"]
    assert row["gpu_idle_ns"] == truth["idle"]
    streams = dict(idle.stream_summary(trace).select("stream", "busy_ns").iter_rows())
    assert streams == truth["stream_busy"]


def test_gaps_and_causes(trace, truth):
    base = round(truth["base_us"] * 1000)
    ours = idle.idle_gaps(trace).sort("start_ns")
    expected = sorted(truth["gaps"], key=lambda g: g["start"])
    assert relative(ours, "start_ns", base) == [g["start"] for g in expected]
    assert ours["duration_ns"].to_list() == [g["dur"] for g in expected]
    assert [str(c) for c in ours["cause"]] == [g["cause"] for g in expected]
    assert [f"ProfilerStep#{s}" for s in ours["step"]] == [g["step"] for g in expected]


def test_per_step(trace, truth):
    base = round(truth["base_us"] * 1000)
    ours = idle.step_breakdown(trace)
    expected = truth["steps"]
    assert [f"ProfilerStep#{s}" for s in ours["step"]] == [s["step"] for s in expected]
    assert relative(ours, "window_start_ns", base) == [s["start"] for s in expected]
    assert ours["window_ns"].to_list() == [s["dur"] for s in expected]
    assert ours["gpu_busy_ns"].to_list() == [s["busy"] for s in expected]
    assert ours["gpu_ops"].to_list() == [s["gpu_ops"] for s in expected]
