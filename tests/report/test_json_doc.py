"""docs/report-json.md names every key the JSON report writes (and nothing it does not)."""

from __future__ import annotations

import re
from pathlib import Path

from traceanalyze.renderers.jsonout import report_to_dict
from traceanalyze.pipeline.rank import build_report

import traceanalyze

REPO = Path(__file__).resolve().parents[2]


def keys(value, found: set[str]) -> set[str]:
    if isinstance(value, dict):
        for key, child in value.items():
            found.add(key)
            keys(child, found)
    elif isinstance(value, list):
        for child in value:
            keys(child, found)
    return found


def test_every_json_key_is_documented():
    doc = report_to_dict(build_report(traceanalyze.load_trace(REPO / "fixtures" / "synthetic_training.json.gz")))
    written = {k for k in keys(doc, set()) if ":" not in k}  # "bf16:tensor" peak keys are data
    text = (REPO / "docs" / "report-json.md").read_text()
    documented = {word for span in re.findall(r"`([^`]+)`", text) for word in re.findall(r"[a-z_0-9]+", span)}
    assert written - documented == set()
