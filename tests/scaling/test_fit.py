"""The least-squares line: exact on points on a line, the residual rule with 3+ points."""

from __future__ import annotations

import math

import numpy as np
import pytest

from traceanalyze.scaling.fit import LINE_TOLERANCE, fit_line


def test_points_on_a_line_give_it_back_exactly():
    fit = fit_line([8.0, 16.0, 32.0], [108.0, 116.0, 132.0])
    assert fit.fixed == pytest.approx(100.0, abs=1e-9) and fit.slope == pytest.approx(1.0)
    assert fit.throughput == pytest.approx(1.0)
    assert fit.fits is True and fit.r_squared == pytest.approx(1.0) and fit.max_relative_residual < 1e-12


def test_two_points_pass_through_the_line_and_say_nothing_about_its_shape():
    fit = fit_line([1.0, 3.0], [5.0, 9.0])
    assert (fit.fixed, fit.slope) == (3.0, 2.0)
    assert fit.fits is None and fit.r_squared is None


def test_the_fit_agrees_with_numpy_polyfit_weighted_by_one_over_time():
    work = [1.0, 2.0, 4.0, 8.0, 16.0]
    times = [10.3, 11.1, 13.8, 18.2, 25.7]
    fit = fit_line(work, times)
    slope, intercept = np.polyfit(work, times, 1, w=[1 / t for t in times])  # residuals relative to the time
    assert fit.fixed == pytest.approx(intercept) and fit.slope == pytest.approx(slope)
    worst = max(abs(t - (intercept + slope * w)) / t for w, t in zip(work, times))
    assert fit.max_relative_residual == pytest.approx(worst)
    assert fit.fits is bool(worst <= LINE_TOLERANCE) and worst < LINE_TOLERANCE


def test_a_curve_is_not_a_straight_line():
    work = [1.0, 2.0, 4.0, 8.0]
    fit = fit_line(work, [w * w for w in work])  # quadratic: far off any line at the small end
    assert fit.fits is False and fit.max_relative_residual > LINE_TOLERANCE


def test_a_flat_time_has_no_throughput():
    fit = fit_line([1.0, 2.0, 4.0], [5.0, 5.0, 5.0])
    assert fit.slope == 0 and fit.throughput is None and math.isclose(fit.fixed, 5.0)


@pytest.mark.parametrize("work, times", [([1.0], [1.0]), ([2.0, 2.0], [1.0, 3.0]), ([1.0, 2.0], [1.0])])
def test_a_fit_needs_two_different_works(work, times):
    with pytest.raises(ValueError):
        fit_line(work, times)


def test_small_runs_weigh_as_much_as_large_ones():
    """Ordinary least squares would be pulled by the 1000-long run; relative residuals are not."""
    fit = fit_line([1.0, 2.0, 1000.0], [10.0, 11.0, 1000.0 * 1.2 + 9.0])
    assert abs(fit.residuals[0]) / 10.0 < 0.1 and abs(fit.residuals[1]) / 11.0 < 0.1
