"""`traceanalyze diff --format json`. Shape: docs/gate.md."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import msgspec

from traceanalyze.diff.compare import Diff
from traceanalyze.renderers.escape import json_text

DIFF_SCHEMA_VERSION = "1.1"  # 1.1: `scaling`


def diff_to_dict(diff: Diff) -> dict[str, Any]:
    return {
        "kind": "diff",
        "schema_version": DIFF_SCHEMA_VERSION,
        "base": {"source": diff.base_source, "steps": diff.base_steps},
        "new": {"source": diff.new_source, "steps": diff.new_steps},
        "statistic": diff.statistic,
        "min_change": diff.min_change,
        "metrics": [asdict(m) for m in diff.metrics],
        "kernels": [asdict(k) for k in diff.kernels],
        "changed_kernels": [k.name for k in diff.changed_kernels],
        "notes": list(diff.notes),
        "warnings": list(diff.warnings),
        "scaling": diff.scaling,
    }


def render_diff_json(diff: Diff, *, top: int = 10) -> str:
    """The whole diff as JSON: every kernel is listed, whatever `top` says."""
    return json_text(msgspec.json.format(msgspec.json.encode(diff_to_dict(diff)), indent=2).decode()) + "\n"
