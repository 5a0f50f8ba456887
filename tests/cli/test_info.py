"""`traceanalyze info` on every real trace: one screen whose counts equal an independent count."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from raw_counts import raw_counts
from shared_traces import real_trace_params

from traceanalyze.cli import app

runner = CliRunner()


def count_row(output: str, label: str) -> int:
    match = re.search(rf"^\s*{re.escape(label)}\s+(\d+)\s*$", output, re.MULTILINE)
    assert match, f"no '{label}' row in:\n{output}"
    return int(match.group(1))


@pytest.mark.parametrize("path", real_trace_params())
def test_info_counts_match_the_raw_json(path):
    result = runner.invoke(app, ["info", str(path)])
    assert result.exit_code == 0, result.output
    counts = raw_counts(path)
    assert count_row(result.output, "kernels") == counts["gpu_by_kind"]["kernel"]
    assert count_row(result.output, "communication kernels") == counts["gpu_by_kind"]["communication"]
    assert count_row(result.output, "memcpy") == counts["gpu_by_kind"]["memcpy"]
    assert count_row(result.output, "memset") == counts["gpu_by_kind"]["memset"]
    assert count_row(result.output, "runtime calls") == counts["runtime"]
    assert count_row(result.output, "of which kernel launches") == counts["launches"]
    assert count_row(result.output, "of which graph launches") == counts["graph_launches"]
    if counts["steps"]:
        assert f"steps: {counts['steps']} " in result.output
    else:
        assert "steps: none" in result.output
    if counts["gpu"] == 0:
        assert "no_gpu_events" in result.output


def test_info_on_the_bundled_fixture():
    from pathlib import Path

    fixture = Path(__file__).resolve().parents[2] / "fixtures" / "synthetic_training.json.gz"
    result = runner.invoke(app, ["info", str(fixture)])
    assert result.exit_code == 0
    assert "NVIDIA A100-SXM4-80GB" in result.output and "on 2 streams" in result.output
    assert "steps: 4 (ProfilerStep#1–#4)" in result.output
