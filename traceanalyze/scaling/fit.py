"""The line time = fixed + work / throughput, by relative least squares over the runs: each run's
residual counts relative to its time (weights 1 / time²), so that the small runs, where a fixed cost
shows, weigh as much as the large ones whose times are many times longer (pure; docs/scaling.md)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

# With 3+ points, the line fits when every run's time is within this fraction of the line's.
LINE_TOLERANCE = 0.10


@dataclass(frozen=True)
class LineFit:
    """`fixed` (the time at zero work, in the unit of the times) and `slope` (time per unit of
    work); `residuals` = time − line per point; `max_relative_residual` = max |residual| / time;
    `fits`: None with 2 points (a line through 2 points always fits), else whether every point is
    within `LINE_TOLERANCE` of the line; `r_squared` (weighted as the fit): None with 2 points."""

    fixed: float
    slope: float
    residuals: tuple[float, ...]
    max_relative_residual: float
    r_squared: float | None
    fits: bool | None

    @property
    def throughput(self) -> float | None:
        """Work per unit of time at the margin (1 / slope); None when the time did not grow."""
        return 1.0 / self.slope if self.slope > 0 else None


def fit_line(work: Sequence[float], times: Sequence[float]) -> LineFit:
    """Relative least squares of `times` against `work` (2+ points, at least 2 distinct works).

    >>> f = fit_line([1.0, 2.0, 4.0], [3.0, 4.0, 6.0])
    >>> (f.fixed, f.slope, f.fits)
    (2.0, 1.0, True)
    """
    if len(work) != len(times) or len(work) < 2:
        raise ValueError("a fit needs two or more (work, time) points")
    n = len(work)
    weights = [1.0 / (y * y) if y > 0 else 1.0 for y in times]
    total_weight = math.fsum(weights)
    mean_x = math.fsum(w * x for w, x in zip(weights, work)) / total_weight
    mean_y = math.fsum(w * y for w, y in zip(weights, times)) / total_weight
    var = math.fsum(w * (x - mean_x) ** 2 for w, x in zip(weights, work))
    if var <= 0:
        raise ValueError("a fit needs at least two different amounts of work")
    slope = math.fsum(w * (x - mean_x) * (y - mean_y) for w, x, y in zip(weights, work, times)) / var
    if abs(slope) * max(work) < 1e-12 * max(times):  # rounding of a flat time: no growth at all
        slope = 0.0
    fixed = mean_y - slope * mean_x
    residuals = tuple(y - (fixed + slope * x) for x, y in zip(work, times))
    worst = max((abs(r) / y if y > 0 else 0.0) for r, y in zip(residuals, times))
    if n < 3:
        return LineFit(fixed, slope, residuals, worst, None, None)
    total = math.fsum(w * (y - mean_y) ** 2 for w, y in zip(weights, times))
    r_squared = 1.0 - math.fsum(w * r * r for w, r in zip(weights, residuals)) / total if total > 0 else 1.0
    return LineFit(fixed, slope, residuals, worst, r_squared, worst <= LINE_TOLERANCE)
