"""`gate SCALING_JSON --max-fixed-fraction F`: a sweep's scaling report (`traceanalyze scaling -f
json`, or the `scaling.json` of `capture --sweep`) judged on the fixed-cost share of its largest run,
the size a CI sweeps up to: its production batch size (docs/gate.md, docs/scaling.md#gate)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from traceanalyze.errors import ConfigError, TraceAnalyzeError
from traceanalyze.gate.budgets import parse_fraction
from traceanalyze.scaling.render_json import read_scaling


@dataclass(frozen=True)
class FixedFractionVerdict:
    label: str  # the largest run's
    measured: float
    limit: float

    @property
    def passed(self) -> bool:
        return self.measured <= self.limit

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    def line(self) -> str:
        mark = "PASS" if self.passed else "FAIL"
        return (f"{mark}  fixed overhead of the largest run ({self.label}): {self.measured:.1%} "
                f"{'≤' if self.passed else '>'} {self.limit:.1%} (--max-fixed-fraction)")


def judge_fixed_fraction(document: dict[str, Any], limit: float, *, source: str = "") -> FixedFractionVerdict:
    runs = document.get("runs")
    value = document.get("fixed_fraction_largest")
    if not isinstance(runs, list) or not runs or not isinstance(value, (int, float)):
        raise ConfigError(f"{source}: the scaling JSON has no runs or no fixed_fraction_largest")
    return FixedFractionVerdict(str(runs[-1].get("label")), float(value), limit)


def gate_scaling(path: Path, limit_text: str, *, echo: Callable[..., None]) -> int:
    """Judge the file, print one line (an error: one line on stderr), return the exit code."""
    from traceanalyze.renderers.escape import visible

    try:
        verdict = judge_fixed_fraction(read_scaling(path), parse_fraction(limit_text, "--max-fixed-fraction"),
                                       source=str(path))
    except TraceAnalyzeError as error:
        echo(visible(f"traceanalyze: error: {error}"), err=True)
        return error.exit_code
    echo(visible(verdict.line()))
    return verdict.exit_code
