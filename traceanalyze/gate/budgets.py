"""Gate options: budgets, thresholds and how to judge them, parsed and checked. Pure: values come
in from flags or from an already-parsed TOML table (`traceanalyze.gate.config` reads the file)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, Mapping

from traceanalyze.errors import ConfigError

Statistic = Literal["median", "p90", "mean", "max"]
STATISTICS: tuple[Statistic, ...] = ("median", "p90", "mean", "max")
BudgetKind = Literal["max", "min"]
Unit = Literal["fraction", "ms", "us"]


@dataclass(frozen=True)
class BudgetSpec:
    """One budget the gate knows: its option name, the measured metric it bounds, and how."""

    name: str  # option / TOML key / JUnit testcase name
    metric: str  # key of `Measured.per_step` / `Measured.window`
    kind: BudgetKind  # "max": measured ≤ threshold passes; "min": measured ≥ threshold passes
    unit: Unit
    label: str
    flag: str


BUDGETS: tuple[BudgetSpec, ...] = (
    BudgetSpec("max_idle_fraction", "idle_fraction", "max", "fraction", "GPU idle fraction", "--max-idle-fraction"),
    BudgetSpec("max_overhead", "overhead", "max", "fraction", "overhead share", "--max-overhead"),
    BudgetSpec("min_compute", "compute", "min", "fraction", "compute share", "--min-compute"),
    BudgetSpec("max_step_time_ms", "step_time_ms", "max", "ms", "step time", "--max-step-time-ms"),
    BudgetSpec("max_launch_p99_us", "launch_p99_us", "max", "us", "launch overhead p99", "--max-launch-p99-us"),
    BudgetSpec("max_wait_fraction", "wait_fraction", "max", "fraction", "collective wait fraction",
               "--max-wait-fraction"),
    BudgetSpec("max_exposed_comm", "exposed_comm", "max", "fraction", "exposed communication share",
               "--max-exposed-comm"),
)
RankMode = Literal["worst", "pooled"]
RANK_MODES: tuple[RankMode, ...] = ("worst", "pooled")
BUDGET_BY_NAME = {spec.name: spec for spec in BUDGETS}

# keys a [tool.traceanalyze.gate] table may hold (written with - or _)
CONFIG_KEYS = (*BUDGET_BY_NAME, "max_regression", "statistic", "min_steps", "allow_unreliable", "baseline", "ranks",
               "skip_steps")


@dataclass(frozen=True)
class GateOptions:
    """What the gate checks. `thresholds` maps budget names (`BUDGETS`) to their threshold;
    `max_regression` applies with a baseline (a fraction: 0.05 is 5 %)."""

    thresholds: Mapping[str, float]
    max_regression: float | None = None
    statistic: Statistic = "median"
    min_steps: int = 3
    allow_unreliable: bool = False
    baseline: str | None = None
    ranks: RankMode = "worst"  # several ranks: judge each and report the worst, or judge them pooled
    skip_steps: int = 0  # ProfilerSteps left out at the start of each rank of the traces judged (--skip-steps)


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{what} must be a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise ConfigError(f"{what} must be a finite number, got {value!r}")
    return number


def _percent_or_number(value: Any, what: str) -> tuple[float, bool]:
    """`'5%'` → (0.05, True); `'0.05'` or `0.05` → (0.05, False)."""
    if isinstance(value, str):
        text = value.strip()
        is_percent = text.endswith("%")
        try:
            number = float(text.removesuffix("%").strip())
        except ValueError:
            raise ConfigError(f"{what} must be a number or a percentage (0.15 or 15%), got {value!r}") from None
        number = _number(number, what)
        return (number / 100.0 if is_percent else number), is_percent
    return _number(value, what), False


def parse_fraction(value: Any, what: str) -> float:
    """A fraction of time, 0…1, written `0.15` or `15%`."""
    number, _ = _percent_or_number(value, what)
    if not 0.0 <= number <= 1.0:
        raise ConfigError(f"{what} must be a fraction between 0 and 1 (e.g. 0.15 or 15%), got {value!r}")
    return number


def parse_positive(value: Any, what: str) -> float:
    """A positive duration (ms or µs as the option says)."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise ConfigError(f"{what} must be a positive number, got {value!r}") from None
    number = _number(value, what)
    if not number > 0:
        raise ConfigError(f"{what} must be a positive number, got {value!r}")
    return number


def parse_regression(value: Any, what: str) -> float:
    """How much worse than the baseline is allowed: `5%` or `0.05` (→ 0.05). A bare number above 1
    is refused as ambiguous (5 could mean 5 % or 500 %); write `500%` for large allowances."""
    number, is_percent = _percent_or_number(value, what)
    if number < 0:
        raise ConfigError(f"{what} must not be negative, got {value!r}")
    if number > 1 and not is_percent:
        raise ConfigError(f"{what} = {value!r} is ambiguous: write a percentage ({value}%) or a fraction (0.05)")
    return number


def parse_statistic(value: Any, what: str) -> Statistic:
    if value not in STATISTICS:
        raise ConfigError(f"{what} must be one of {', '.join(STATISTICS)}, got {value!r}")
    return value


def parse_min_steps(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{what} must be a whole number of steps ≥ 1, got {value!r}")
    return value


def parse_skip_steps(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{what} must be a whole number of steps ≥ 0, got {value!r}")
    return value


def parse_rank_mode(value: Any, what: str) -> RankMode:
    if value not in RANK_MODES:
        raise ConfigError(f"{what} must be 'worst' or 'pooled', got {value!r}")
    return value  # type: ignore[return-value]


def parse_bool(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{what} must be true or false, got {value!r}")
    return value


def parse_budget(name: str, value: Any, what: str) -> float:
    spec = BUDGET_BY_NAME[name]
    return parse_fraction(value, what) if spec.unit == "fraction" else parse_positive(value, what)


def parse_table(table: Mapping[str, Any], *, source: str) -> dict[str, Any]:
    """A `[tool.traceanalyze.gate]` table → checked values by key (`CONFIG_KEYS`). Keys may be
    written `max-idle-fraction` or `max_idle_fraction`; an unknown key is an error (a typo must not
    silently drop a budget). `baseline` is returned as written (relative to the file's folder)."""
    values: dict[str, Any] = {}
    for raw_key, value in table.items():
        key = str(raw_key).replace("-", "_")
        what = f"{source}: {raw_key}"
        if key not in CONFIG_KEYS:
            raise ConfigError(f"{source}: unknown key {raw_key!r}; known keys: {', '.join(CONFIG_KEYS)}")
        if key in values:
            raise ConfigError(f"{source}: {raw_key!r} is given twice")
        if key in BUDGET_BY_NAME:
            values[key] = parse_budget(key, value, what)
        elif key == "max_regression":
            values[key] = parse_regression(value, what)
        elif key == "statistic":
            values[key] = parse_statistic(value, what)
        elif key == "min_steps":
            values[key] = parse_min_steps(value, what)
        elif key == "allow_unreliable":
            values[key] = parse_bool(value, what)
        elif key == "ranks":
            values[key] = parse_rank_mode(value, what)
        elif key == "skip_steps":
            values[key] = parse_skip_steps(value, what)
        elif key == "baseline":
            if not isinstance(value, str) or not value:
                raise ConfigError(f"{what} must be a path (a string), got {value!r}")
            values[key] = value
    return values


def resolve_options(file_values: Mapping[str, Any], flags: Mapping[str, Any]) -> GateOptions:
    """Merge the config file's checked values with the command-line flags (raw, `None` when not
    given); flags win. Raises `ConfigError` for a bad flag value or when nothing is to be checked.

    Examples
    --------
    >>> resolve_options({"max_idle_fraction": 0.2}, {"max_idle_fraction": "15%"}).thresholds
    {'max_idle_fraction': 0.15}
    """
    merged: dict[str, Any] = dict(file_values)
    for name, value in flags.items():
        if value is None:
            continue
        flag = "--" + name.replace("_", "-")
        if name in BUDGET_BY_NAME:
            merged[name] = parse_budget(name, value, flag)
        elif name == "max_regression":
            merged[name] = parse_regression(value, flag)
        elif name == "statistic":
            merged[name] = parse_statistic(value, flag)
        elif name == "min_steps":
            merged[name] = parse_min_steps(value, flag)
        elif name == "allow_unreliable":
            merged[name] = bool(value) or bool(merged.get(name, False))
        elif name == "baseline":
            merged[name] = str(value)
        elif name == "ranks":
            merged[name] = parse_rank_mode(value, flag)
        elif name == "skip_steps":
            merged[name] = parse_skip_steps(value, flag)
        else:
            raise ValueError(f"unknown gate option {name!r}")
    thresholds = {spec.name: merged[spec.name] for spec in BUDGETS if merged.get(spec.name) is not None}
    baseline = merged.get("baseline")
    max_regression = merged.get("max_regression")
    if baseline is not None and max_regression is None:
        raise ConfigError("a baseline needs --max-regression (e.g. 5% or 0.05): how much worse than the "
                          "baseline may it get?")
    if max_regression is not None and baseline is None:
        raise ConfigError("--max-regression needs a baseline (--baseline BASE.json or a trace)")
    if not thresholds and baseline is None:
        raise ConfigError(
            "nothing to check: give a budget (--max-idle-fraction 0.15, --max-overhead, --min-compute, "
            "--max-step-time-ms, --max-launch-p99-us, --max-wait-fraction, --max-exposed-comm), a --baseline with "
            "--max-regression, or a [tool.traceanalyze.gate] table in pyproject.toml"
        )
    return GateOptions(
        thresholds=thresholds,
        max_regression=max_regression,
        statistic=merged.get("statistic", "median"),
        min_steps=merged.get("min_steps", 3),
        allow_unreliable=bool(merged.get("allow_unreliable", False)),
        baseline=baseline,
        ranks=merged.get("ranks", "worst"),
        skip_steps=merged.get("skip_steps", 0),
    )
