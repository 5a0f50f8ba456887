"""The gate verdict as JSON (`traceanalyze gate --format json`). Shape: docs/gate.md."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import msgspec

from traceanalyze.gate.verdict import Verdict
from traceanalyze.renderers.escape import json_text

VERDICT_SCHEMA_VERSION = "1.0"


def verdict_to_dict(verdict: Verdict) -> dict[str, Any]:
    baseline = None
    if verdict.baseline is not None:
        baseline = {
            "source": verdict.baseline,
            "steps": verdict.baseline_steps,
            "max_regression": verdict.max_regression,
            "regressions": [asdict(r) for r in verdict.regressions],
        }
    return {
        "kind": "gate_verdict",
        "schema_version": VERDICT_SCHEMA_VERSION,
        "outcome": verdict.outcome,
        "exit_code": verdict.exit_code,
        "source": verdict.source,
        "statistic": verdict.statistic,
        "basis": verdict.basis,
        "steps": verdict.steps,
        "min_steps": verdict.min_steps,
        "allow_unreliable": verdict.allow_unreliable,
        "problems": list(verdict.problems),
        "checks": [asdict(c) for c in verdict.checks],
        "baseline": baseline,
        "notes": list(verdict.notes),
        "warnings": list(verdict.warnings),
    }


def render_verdict_json(verdict: Verdict) -> str:
    return json_text(msgspec.json.format(msgspec.json.encode(verdict_to_dict(verdict)), indent=2).decode()) + "\n"
