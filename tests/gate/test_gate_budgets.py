"""Budgets and verdicts as pure functions: parsing thresholds, the config table, statistics, and
equal-to-threshold behaviour."""

from __future__ import annotations

import math

import pytest

from traceanalyze.errors import ConfigError
from traceanalyze.gate import Measured, evaluate, resolve_options, statistic
from traceanalyze.gate.budgets import parse_fraction, parse_regression, parse_table


@pytest.mark.parametrize("value, expected", [(0.15, 0.15), ("0.15", 0.15), ("15%", 0.15), ("15 %", 0.15), (0, 0.0),
                                             (1, 1.0), ("100%", 1.0)])
def test_fractions(value, expected):
    assert parse_fraction(value, "x") == pytest.approx(expected)


@pytest.mark.parametrize("value", [-0.01, 1.01, "150%", "-5%", "abc", "", True, None, math.nan, math.inf, [0.1]])
def test_bad_fractions(value):
    with pytest.raises(ConfigError):
        parse_fraction(value, "x")


@pytest.mark.parametrize("value, expected", [("5%", 0.05), (0.05, 0.05), ("0.05", 0.05), (0, 0.0), ("150%", 1.5),
                                             (1, 1.0)])
def test_regression_thresholds(value, expected):
    assert parse_regression(value, "x") == pytest.approx(expected)


@pytest.mark.parametrize("value", [5, "5", -0.05, "-5%", "five", math.nan])
def test_bad_regression_thresholds(value):
    with pytest.raises(ConfigError):
        parse_regression(value, "x")


def test_table_keys_with_dashes_or_underscores():
    values = parse_table({"max-idle-fraction": "15%", "min_compute": 0.2, "statistic": "p90", "min-steps": 5,
                          "max-regression": "5%", "allow-unreliable": True, "baseline": "base.json"}, source="t")
    assert values == {"max_idle_fraction": 0.15, "min_compute": 0.2, "statistic": "p90", "min_steps": 5,
                      "max_regression": 0.05, "allow_unreliable": True, "baseline": "base.json"}


@pytest.mark.parametrize("table, fragment", [
    ({"max_idle": 0.1}, "unknown key 'max_idle'"),
    ({"max_idle_fraction": 1.5}, "between 0 and 1"),
    ({"max_idle_fraction": -0.1}, "between 0 and 1"),
    ({"max_step_time_ms": -3}, "positive"),
    ({"max_step_time_ms": 0}, "positive"),
    ({"max_launch_p99_us": "fast"}, "positive"),
    ({"statistic": "p50"}, "median, p90, mean, max"),
    ({"min_steps": 0}, "≥ 1"),
    ({"min_steps": True}, "≥ 1"),
    ({"min_steps": 2.5}, "≥ 1"),
    ({"allow_unreliable": "yes"}, "true or false"),
    ({"max_idle_fraction": 0.1, "max-idle-fraction": 0.2}, "given twice"),
    ({"baseline": 3}, "path"),
])
def test_bad_tables(table, fragment):
    with pytest.raises(ConfigError, match=None) as error:
        parse_table(table, source="pyproject.toml [tool.traceanalyze.gate]")
    assert fragment in str(error.value)
    assert "pyproject.toml" in str(error.value)


def test_flags_override_the_file():
    options = resolve_options({"max_idle_fraction": 0.2, "statistic": "p90", "min_compute": 0.3},
                              {"max_idle_fraction": "10%", "statistic": None, "min_steps": 4})
    assert dict(options.thresholds) == {"max_idle_fraction": 0.1, "min_compute": 0.3}
    assert options.statistic == "p90" and options.min_steps == 4


@pytest.mark.parametrize("flags, fragment", [
    ({}, "nothing to check"),
    ({"baseline": "b.json"}, "needs --max-regression"),
    ({"max_regression": "5%", "max_idle_fraction": 0.1}, "needs a baseline"),
    ({"max_idle_fraction": "-1"}, "--max-idle-fraction"),
    ({"max_step_time_ms": "-5"}, "--max-step-time-ms"),
    ({"min_compute": "2"}, "--min-compute"),
    ({"max_idle_fraction": 0.1, "statistic": "p95"}, "--statistic"),
])
def test_bad_option_combinations(flags, fragment):
    with pytest.raises(ConfigError) as error:
        resolve_options({}, flags)
    assert fragment in str(error.value)


def test_statistics():
    assert statistic([3.0, 1.0, 2.0], "median") == 2.0
    assert statistic([1.0, 2.0, 3.0, 10.0], "median") == 2.5
    assert statistic([1.0, 2.0, 3.0, 10.0], "mean") == 4.0
    assert statistic([1.0, 2.0, 3.0, 10.0], "max") == 10.0
    assert statistic([float(i) for i in range(11)], "p90") == 9.0  # 0.9 × 10 = 9th order statistic
    assert statistic([1.0, 2.0], "p90") == pytest.approx(1.9)
    assert statistic([], "median") is None


def measured(idle: tuple[float, ...], compute: tuple[float, ...] | None = None,
             steps: tuple[int, ...] | None = None) -> Measured:
    steps = steps if steps is not None else tuple(range(1, len(idle) + 1))
    per_step = {"idle_fraction": idle, "compute": compute or tuple(0.5 for _ in idle),
                "step_time_ms": tuple(10.0 for _ in idle)}
    return Measured(source="t.json", steps=steps, per_step=per_step,
                    window={"idle_fraction": 0.9, "compute": 0.1, "launch_p99_us": None})


def test_equal_to_a_max_threshold_passes():
    verdict = evaluate(measured((0.15, 0.15, 0.15)), resolve_options({}, {"max_idle_fraction": 0.15}))
    check = verdict.checks[0]
    assert (check.status, check.measured, check.threshold, check.margin) == ("pass", 0.15, 0.15, 0.0)
    assert verdict.exit_code == 0
    assert "passes by 0.00 points" in check.message


def test_equal_to_a_min_threshold_passes():
    verdict = evaluate(measured((0.1,) * 3, compute=(0.3,) * 3), resolve_options({}, {"min_compute": 0.3}))
    assert verdict.checks[0].status == "pass" and verdict.exit_code == 0


def test_just_over_a_max_threshold_fails():
    verdict = evaluate(measured((0.1501,) * 3), resolve_options({}, {"max_idle_fraction": 0.15}))
    check = verdict.checks[0]
    assert check.status == "fail" and check.margin == pytest.approx(-0.0001) and verdict.exit_code == 1
    assert "over the 15.00% budget by 0.01 points" in check.message


def test_statistic_choice_changes_the_verdict():
    m = measured((0.1, 0.1, 0.1, 0.1, 0.3))
    assert evaluate(m, resolve_options({}, {"max_idle_fraction": 0.15})).exit_code == 0  # median 0.1
    assert evaluate(m, resolve_options({}, {"max_idle_fraction": 0.15, "statistic": "mean"})).exit_code == 0  # 0.14
    assert evaluate(m, resolve_options({}, {"max_idle_fraction": 0.15, "statistic": "p90"})).exit_code == 1  # 0.22
    assert evaluate(m, resolve_options({}, {"max_idle_fraction": 0.15, "statistic": "max"})).exit_code == 1


def test_too_few_steps_is_an_error_unless_allowed():
    m = measured((0.1, 0.1))
    verdict = evaluate(m, resolve_options({}, {"max_idle_fraction": 0.15}))
    assert verdict.exit_code == 2 and "only 2 steps" in verdict.problems[0]
    allowed = evaluate(m, resolve_options({}, {"max_idle_fraction": 0.15, "allow_unreliable": True}))
    assert allowed.exit_code == 0 and allowed.basis == "steps"


def test_no_steps_judges_the_whole_window_when_allowed():
    m = measured((), steps=())
    assert evaluate(m, resolve_options({}, {"max_idle_fraction": 0.95})).exit_code == 2
    verdict = evaluate(m, resolve_options({}, {"max_idle_fraction": 0.95, "allow_unreliable": True}))
    assert verdict.basis == "window" and verdict.checks[0].measured == 0.9 and verdict.exit_code == 0
    assert any("whole trace window" in note for note in verdict.notes)


def test_a_budget_that_cannot_be_measured_is_an_error():
    m = measured((0.1,) * 3)
    verdict = evaluate(m, resolve_options({}, {"max_launch_p99_us": 50}))
    assert verdict.checks[0].status == "unmeasured" and verdict.exit_code == 2
    no_steps = evaluate(measured((), steps=()), resolve_options({}, {"max_step_time_ms": 5, "allow_unreliable": True}))
    assert no_steps.checks[0].status == "unmeasured" and no_steps.exit_code == 2
