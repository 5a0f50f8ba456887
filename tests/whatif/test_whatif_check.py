"""scripts/whatif_check.py: the prediction of a pair from a before report, the measured row and
its error, the table; and, end to end on this machine's CPU at tiny size, one pair captured before
and after with the predictions written before the after run began."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "whatif_check.py"


@pytest.fixture(scope="module")
def check():
    spec = importlib.util.spec_from_file_location("whatif_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["whatif_check"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def report(step_us: float | None, steps: int, findings: list[dict]) -> dict:
    replay = None if step_us is None else {"step_us": step_us, "steps": [{}] * steps}
    return {"ranks": [{"summary": {"replay": replay}}], "findings": findings}


def test_a_pair_is_predicted_from_its_findings_largest_saving(check):
    pair = check.PAIRS["item"]
    before = report(50_000.0, 4, [
        {"id": "sync-in-step", "saving_us": 40_000.0},
        {"id": "fp32-simt-gemm", "saving_us": 90_000.0},  # not this pair's
        {"id": "sync-in-step", "saving_us": None},
    ])
    predicted = check.predict_pair("item", pair, before)
    assert predicted["finding"] == "sync-in-step"
    assert predicted["predicted_step_us"] == 50_000.0 - 40_000.0 / 4
    row = check.measured_row(predicted, report(44_000.0, 4, []))
    assert row["measured_step_us"] == 44_000.0
    assert row["error"] == pytest.approx(abs(40_000.0 - 44_000.0) / 50_000.0)
    assert row["within_target"] is True
    assert "| item | sync-in-step | 50.000 ms | 40.000 ms | 44.000 ms | 8.0% |" in check.table([row])


def test_a_pair_without_a_modelled_finding_is_said_so(check):
    pair = check.PAIRS["pinned"]
    assert check.predict_pair("pinned", pair, report(10.0, 2, []))["why"] == "no finding of the pair fired"
    unmodelled = check.predict_pair("pinned", pair, report(10.0, 2, [{"id": "pageable-h2d", "saving_us": None}]))
    assert unmodelled["predicted_step_us"] is None and unmodelled["why"] == "the finding's action is not modelled"
    row = check.measured_row(unmodelled, None)
    assert row["error"] is None and row["within_target"] is None


def test_one_pair_end_to_end_on_the_cpu(check, tmp_path):
    pytest.importorskip("torch")
    assert check.main(["--size", "tiny", "--pairs", "item", "--device", "cpu", "--out", str(tmp_path)]) == 0
    predictions = json.loads((tmp_path / "predictions.json").read_text())
    measured = json.loads((tmp_path / "measured.json").read_text())
    assert [p["pair"] for p in predictions["predictions"]] == ["item"]
    assert predictions["predictions"][0]["before_step_us"] > 0
    # the predictions were written before the after run was captured
    assert (tmp_path / "predictions.json").stat().st_mtime <= (tmp_path / "item" / "trace.json.gz").stat().st_mtime
    assert predictions["code_digest"] == measured["code_digest"] == check.code_digest()
    row = measured["rows"][0]
    assert row["measured_step_us"] > 0 and row["after_flags"] == ["--item-every", "10"]
    assert (tmp_path / "measured.md").read_text().startswith("| pair | finding |")
