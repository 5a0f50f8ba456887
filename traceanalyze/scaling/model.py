"""Runs of one program at several sizes → `Scaling`: the fitted line, the fixed cost per step, the
marginal throughput, each regime's growth, each run's regime and the verdict in the essay's words.
Every figure is defined in docs/scaling.md; the renderers only word them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from traceanalyze.errors import ConfigError
from traceanalyze.scaling.fit import LineFit, fit_line
from traceanalyze.scaling.measure import REGIME_KEYS, RunPoint
from traceanalyze.scaling.program import first_difference, kernel_variants_note

OVERHEAD_BOUND = 0.5  # a run is overhead-bound when the fixed cost is at least this share of its time
INTENSITY_CHANGE = 1.5  # a main op's FLOP/byte changing by this factor across the runs is the footnote's case
MAIN_OPS = 3  # the ops with the most time in the largest run whose intensity is followed

WorkUnit = Literal["FLOP", "byte", "size"]
Regime = Literal["overhead", "bandwidth", "compute", "other"]


@dataclass(frozen=True)
class RunRegime:
    """One run: its work per step (in `Scaling.work_unit`), time per step (ns), the fitted fixed
    cost's share of that time, and the regime it runs in."""

    label: str
    work: float
    time_ns: float
    fixed_fraction: float
    regime: Regime


@dataclass(frozen=True)
class IntensityShift:
    """A main op whose FLOP/byte changes with the size (the essay's footnote): per run, smallest first."""

    op: str
    intensities: tuple[float | None, ...]


@dataclass(frozen=True)
class Scaling:
    points: tuple[RunPoint, ...]  # smallest work first
    work_unit: WorkUnit
    fit: LineFit  # time per step (ns) against the work per step
    fixed_ns: float  # the fitted fixed cost per step, 0 when the fit's is negative
    fixed_fraction: float  # fixed_ns / the smallest run's time
    work_ratio: float  # largest / smallest work
    time_ratio: float  # largest / smallest time
    exponent: float | None  # log(time_ratio) / log(work_ratio): 1 proportional, 0 flat
    marginal_flops_per_s: float | None
    marginal_bytes_per_s: float | None
    runs: tuple[RunRegime, ...]
    regime_growth: dict[str, float | None]  # REGIME_KEYS → largest / smallest time per step
    intensity_shifts: tuple[IntensityShift, ...]
    headline: str
    notes: tuple[str, ...]

    @property
    def time_name(self) -> str:
        return self.points[0].time_name


def build_scaling(points: Sequence[RunPoint], *, sizes: Sequence[float] | None = None) -> Scaling:
    """The `Scaling` of 2+ runs of one program. Raises `ConfigError` (exit 2) when they are not one
    program, mix CPU-only and GPU traces, or do not differ in work (and no `sizes` are given)."""
    if len(points) < 2:
        raise ConfigError("scaling needs two or more traces of one program at different sizes")
    if sizes is not None and len(sizes) != len(points):
        raise ConfigError(f"--sizes gives {len(sizes)} sizes for {len(points)} traces")
    if len({p.has_gpu for p in points}) > 1:
        gpu = next(p for p in points if p.has_gpu)
        cpu = next(p for p in points if not p.has_gpu)
        raise ConfigError(f"{gpu.source} has GPU kernels and {cpu.source} has none: not one program")
    difference = first_difference(points)
    if difference is not None:
        raise ConfigError(difference)
    unit, work = _work(points, sizes)
    order = sorted(range(len(points)), key=lambda i: (work[i], points[i].time_ns))
    points = tuple(points[i] for i in order)
    work = [work[i] for i in order]
    times = [p.time_ns for p in points]
    if min(times) <= 0:
        raise ConfigError(f"{points[times.index(min(times))].source}: no time per step was measured")
    fit = fit_line(work, times)
    fixed = max(fit.fixed, 0.0)
    small, large = points[0], points[-1]
    work_ratio, time_ratio = work[-1] / work[0] if work[0] > 0 else math.inf, times[-1] / times[0]
    exponent = (math.log(time_ratio) / math.log(work_ratio)) if 1 < work_ratio < math.inf else None
    seconds = (times[-1] - times[0]) / 1e9
    runs = tuple(_run_regime(p, w, fixed) for p, w in zip(points, work))
    growth = {key: (large.regime_ns[key] / small.regime_ns[key] if small.regime_ns[key] > 0 else None)
              for key in REGIME_KEYS}
    notes = _notes(points, fit)
    return Scaling(
        points=points, work_unit=unit, fit=fit, fixed_ns=fixed, fixed_fraction=runs[0].fixed_fraction,
        work_ratio=work_ratio, time_ratio=time_ratio, exponent=exponent,
        marginal_flops_per_s=_marginal(small.flops, large.flops, seconds),
        marginal_bytes_per_s=_marginal(small.bytes, large.bytes, seconds),
        runs=runs, regime_growth=growth, intensity_shifts=intensity_shifts(points),
        headline=headline(work_ratio, time_ratio, fixed, fit.fixed, runs), notes=notes,
    )


def _marginal(small: float, large: float, seconds: float) -> float | None:
    """(large − small) / seconds: the extra FLOPs or bytes per extra second; None when either did not grow."""
    return (large - small) / seconds if seconds > 0 and large > small else None


def _work(points: Sequence[RunPoint], sizes: Sequence[float] | None) -> tuple[WorkUnit, list[float]]:
    if sizes is not None:
        if any(not s > 0 for s in sizes) or len(set(sizes)) < 2:
            raise ConfigError("--sizes must be positive numbers, at least two of them different")
        return "size", [float(s) for s in sizes]
    for unit, values in (("FLOP", [p.flops for p in points]), ("byte", [p.bytes for p in points])):
        if all(v > 0 for v in values) and len(set(values)) > 1:
            return unit, values  # type: ignore[return-value]
    if all(p.flops > 0 or p.bytes > 0 for p in points):
        raise ConfigError("the traces do the same modelled work per step: not one program at different sizes "
                          "(give the sizes with --sizes)")
    bare = next(p for p in points if not (p.flops > 0 or p.bytes > 0))
    raise ConfigError(f"{bare.source}: no op with recorded shapes that the cost models know; give the sizes "
                      "with --sizes 8,16,32")


def _run_regime(point: RunPoint, work: float, fixed: float) -> RunRegime:
    share = min(fixed / point.time_ns, 1.0)  # a line that misses the small end may put it above the run's time
    if share >= OVERHEAD_BOUND:
        regime: Regime = "overhead"
    else:  # the largest of the work's regimes (ties: compute, then bandwidth)
        times = {key: point.regime_ns[key] for key in ("compute", "bandwidth", "other")}
        regime = max(times, key=lambda key: times[key])  # type: ignore[assignment]
    return RunRegime(point.label, work, point.time_ns, share, regime)


def regime_words(regime: Regime) -> str:
    """"overhead-bound", …; "other-bound": most of the work's time is latency-bound kernels, copies,
    collectives or unmodelled ops (docs/scaling.md#regimes)."""
    return f"{regime}-bound"


def headline(work_ratio: float, time_ratio: float, fixed: float, fitted: float, runs: Sequence[RunRegime]) -> str:
    """The verdict in the essay's words (docs/scaling.md#the-verdict)."""
    small, large = runs[0], runs[-1]
    head = f"{_ratio(work_ratio)} the work took {_ratio(time_ratio)} the time: "
    if fitted <= 0:
        return head + ("no fixed cost (the time grew at least in proportion to the work); "
                       f"the small run is {regime_words(small.regime)}, the large run is {regime_words(large.regime)}")
    return (head + f"{small.fixed_fraction:.0%} of the small run is fixed overhead ({regime_words(small.regime)}); "
            f"the large run is {regime_words(large.regime)}")


def _ratio(value: float) -> str:
    return "∞×" if math.isinf(value) else f"{value:.1f}×"


def intensity_shifts(points: Sequence[RunPoint]) -> tuple[IntensityShift, ...]:
    """The main ops (most time in the largest run, with FLOPs) whose FLOP/byte changes by
    `INTENSITY_CHANGE` or more between any two runs."""
    main = [op.name for op in points[-1].ops if op.flops > 0][:MAIN_OPS]
    shifts = []
    for name in main:
        values = tuple(next((op.intensity for op in p.ops if op.name == name), None) for p in points)
        known = [v for v in values if v]
        if len(known) >= 2 and max(known) >= INTENSITY_CHANGE * min(known):
            shifts.append(IntensityShift(name, values))
    return tuple(shifts)


def times_of(points: Sequence[RunPoint]) -> list[float]:
    return [p.time_ns for p in points]


def _notes(points: Sequence[RunPoint], fit: LineFit) -> tuple[str, ...]:
    notes = []
    if not points[0].has_gpu:
        notes.append("CPU-only traces: the time per step is the CPU step time; compute = matmul, convolution and "
                     "attention ops, bandwidth = the other costed ops, overhead = the rest of the step")
    for p in points:
        if p.steps == 0:
            notes.append(f"{p.source}: no ProfilerStep spans, the whole trace counts as one step")
        elif p.steps < 3:
            notes.append(f"{p.source}: {p.steps} step(s) only, a median of few steps is noisy")
    if fit.fixed > times_of(points)[0]:
        notes.append("the fitted fixed cost is longer than the smallest run: its fixed share is shown as 100%")
    if fit.fits is False:
        notes.append(f"a straight line does not fit: a run is {fit.max_relative_residual:.0%} off the line "
                     "(the fixed cost and the throughput are an average over the sizes)")
    variants = kernel_variants_note(points)
    if variants:
        notes.append(variants)
    return tuple(notes)
