"""The scaling report as JSON (`SCALING_SCHEMA_VERSION`; every key: docs/scaling.md#json). The
gate reads `fixed_fraction_largest` from it (`gate --max-fixed-fraction`)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from traceanalyze.errors import ConfigError
from traceanalyze.renderers.escape import json_text
from traceanalyze.scaling.model import Scaling

SCALING_SCHEMA_VERSION = 1
KIND = "traceanalyze.scaling"


def _number(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else value


def scaling_dict(scaling: Scaling) -> dict[str, Any]:
    fit = scaling.fit
    return {
        "schema_version": SCALING_SCHEMA_VERSION,
        "kind": KIND,
        "verdict": scaling.headline,
        "time_basis": "gpu_window" if scaling.points[0].has_gpu else "cpu_step",
        "work_unit": scaling.work_unit,
        "fixed_ns": scaling.fixed_ns,
        "fixed_fraction": scaling.fixed_fraction,
        "fixed_fraction_largest": scaling.runs[-1].fixed_fraction,
        "work_ratio": _number(scaling.work_ratio),
        "time_ratio": scaling.time_ratio,
        "exponent": scaling.exponent,
        "fit": {
            "fixed_ns": fit.fixed,
            "slope_ns_per_unit": fit.slope,
            "throughput_per_s": fit.throughput * 1e9 if fit.throughput else None,
            "residuals_ns": list(fit.residuals),
            "max_relative_residual": fit.max_relative_residual,
            "r_squared": fit.r_squared,
            "line_fits": fit.fits,
        },
        "marginal_flops_per_s": scaling.marginal_flops_per_s,
        "marginal_bytes_per_s": scaling.marginal_bytes_per_s,
        "peak_flops_per_s": scaling.points[-1].peak_flops_per_s,
        "peak_bytes_per_s": scaling.points[-1].peak_bytes_per_s,
        "runs": [
            {
                "label": run.label,
                "source": point.source,
                "steps": point.steps,
                "work": run.work,
                "flops": point.flops,
                "bytes": point.bytes,
                "time_ns": run.time_ns,
                "gpu_window_ns": point.gpu_window_ns,
                "gpu_busy_ns": point.gpu_busy_ns,
                "cpu_step_ns": point.cpu_step_ns,
                "fixed_fraction": run.fixed_fraction,
                "regime": run.regime,
                "regime_ns": dict(point.regime_ns),
            }
            for run, point in zip(scaling.runs, scaling.points)
        ],
        "regime_growth": dict(scaling.regime_growth),
        "intensity_shifts": [{"op": s.op, "intensities": list(s.intensities)} for s in scaling.intensity_shifts],
        "notes": list(scaling.notes),
    }


def render_scaling_json(scaling: Scaling) -> str:
    return json_text(json.dumps(scaling_dict(scaling), indent=2, ensure_ascii=False)) + "\n"


def read_scaling(path: Path) -> dict[str, Any]:
    """The decoded scaling JSON at `path`; `ConfigError` when it is not one (of this schema)."""
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise ConfigError(f"{path}: not a readable scaling JSON ({type(error).__name__})") from None
    if not isinstance(document, dict) or document.get("kind") != KIND:
        raise ConfigError(f"{path}: --max-fixed-fraction judges a scaling report (traceanalyze scaling -f json, "
                          "or capture --sweep's scaling.json)")
    if document.get("schema_version") != SCALING_SCHEMA_VERSION:
        raise ConfigError(f"{path}: scaling schema_version {document.get('schema_version')!r}, "
                          f"this traceanalyze reads {SCALING_SCHEMA_VERSION}")
    return document
