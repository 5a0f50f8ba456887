"""A baseline whose roofline model covers another share of the busy time (shapes recorded on one
side only) is compared like with like: the bandwidth, compute, latency and unmodeled rows are
"cannot compare", said once, not a failure (issue 35: "bandwidth 0.000 → 32.136 ms" failed)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from typer.testing import CliRunner

from traceanalyze.cli import app

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "synthetic_training.json.gz"


def test_a_baseline_without_shapes_is_not_a_regression(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    trace = json.loads(gzip.decompress(FIXTURE.read_bytes()))
    for event in trace["traceEvents"]:
        for key in ("Input Dims", "Input type", "Input Strides", "Concrete Inputs"):
            (event.get("args") or {}).pop(key, None)
    (tmp_path / "noshapes.json").write_text(json.dumps(trace))
    result = CliRunner().invoke(app, ["gate", str(FIXTURE), "--baseline", "noshapes.json", "--max-regression", "5%",
                                      "--allow-unreliable", "--no-cache", "-f", "json"])
    assert result.exit_code == 0, result.output
    verdict = json.loads(result.stdout)
    status = {row["name"]: row["status"] for row in verdict["baseline"]["regressions"]}
    assert status["bandwidth_ms"] == status["compute_ms"] == status["unmodeled_ms"] == "info"
    assert status["step_time_ms"] == status["overhead_ms"] == "pass"  # what the model does not decide: judged
    said = [note for note in verdict["notes"] if note.startswith("cannot compare bandwidth, compute")]
    assert len(said) == 1 and "covers 2% of the baseline's busy GPU time and 90% of this trace's" in said[0]
