"""The analysed tables the rules read: one rank's frames from `pipeline.rank.build_report`, handed
over as a plain dataclass so that analysis never imports report."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from traceanalyze.analysis.devices import DevicePeaks
# a duration for a sentence (the rule modules import it from here): the one rule, units.format_duration_ns
from traceanalyze.units import format_duration_ns as format_ns  # noqa: F401


@dataclass(frozen=True)
class FindingInputs:
    """One rank's analyses (frames as `RankReport` holds them, in ns)."""

    rank: int
    device_family: str  # RankMeta.device_family: CUDA, ROCm, MTIA, accelerator or none
    peaks: DevicePeaks | None  # the first device's peaks (None: unknown device, no roofline)
    roofline: pl.DataFrame  # per GPU op (roofline.kernel_roofline)
    gaps: pl.DataFrame  # idle.idle_gaps
    steps: pl.DataFrame  # idle.step_breakdown
    small_kernel_runs: pl.DataFrame  # launch.small_kernel_runs
    fusion: pl.DataFrame  # attribution.fusion_summary
    attribution: pl.DataFrame  # attribution.attribution (one row per device window)
    health: pl.DataFrame  # analysis.health.trace_health
    cpu_ops: pl.DataFrame  # trace.cpu_ops of this rank (recorded input shapes)
    cpu_steps: pl.DataFrame | None = None  # trace.steps of this rank (ProfilerStep spans, after --skip-steps)
    skipped_steps: int = 0  # ProfilerSteps already left out by --skip-steps (analysis.skip_steps)
    fusion_runs: pl.DataFrame | None = None  # attribution.fusion_opportunities: each chain occurrence (the remedies)
    training: bool | None = None  # run_context.recorded_training(cpu_ops), once known (None: not yet)


def column(frame: pl.DataFrame, *names: str) -> str:
    """The first of `names` that `frame` has (a column that was renamed keeps working)."""
    for name in names:
        if name in frame.columns:
            return name
    raise KeyError(f"none of {names} in {frame.columns}")


def busy_ns(inputs: FindingInputs) -> int:
    """GPU busy time summed over this rank's device windows."""
    return int(inputs.attribution["busy_ns"].sum()) if inputs.attribution.height else 0


KERNEL_NAME_CHARS = 80  # a kernel name in a sentence: no argument list, at most this long


def short_kernel_name(name: str) -> str:
    """A kernel name for a sentence: without `void ` and its argument list, cut to KERNEL_NAME_CHARS."""
    text = name.removeprefix("void ")
    if text.endswith(")"):
        depth = 0
        for index in range(len(text) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(text[index], 0)
            if depth == 0:
                text = text[:index] if index else text
                break
    return text if len(text) <= KERNEL_NAME_CHARS else text[: KERNEL_NAME_CHARS - 1] + "…"


def format_share(part: float, whole: float) -> str:
    """`part` as a percentage of `whole` (one decimal below 10%)."""
    if not whole:
        return "n/a"
    pct = 100 * part / whole
    return f"{pct:.1f}%" if pct < 10 else f"{pct:.0f}%"
