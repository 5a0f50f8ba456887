"""A refactor keeps the JSON report of every shared trace byte for byte: set
TRACEANALYZE_JSON_BASELINE to a folder saved by `scripts/json_snapshot.py save` before the change."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "json_snapshot.py"


def load_snapshot_script():
    spec = importlib.util.spec_from_file_location("json_snapshot", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not os.environ.get("TRACEANALYZE_JSON_BASELINE"),
                    reason="TRACEANALYZE_JSON_BASELINE not set: no saved JSON to compare against")
def test_json_report_unchanged_against_saved_baseline():
    snapshot = load_snapshot_script()
    if not snapshot.snapshot_inputs():
        pytest.skip("no shared traces")
    assert snapshot.differing(Path(os.environ["TRACEANALYZE_JSON_BASELINE"])) == []
