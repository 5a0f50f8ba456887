"""Budgets → verdict. Pure: `evaluate(measured, options, baseline=...)` judges the numbers of
`traceanalyze.gate.metrics` against `GateOptions` and says, for each budget, its threshold, the
measured value and by how much it passes or fails.

* A max budget passes when the measured value is **at most** the threshold (equal passes); a min
  budget when it is at least the threshold. Comparisons allow 1e-9 × max(1, |threshold|) of
  floating-point rounding.
* Per-step metrics are judged on `options.statistic` over the steps; `launch_p99_us` is over the
  whole window. Without steps (and with `allow_unreliable`) the whole-window numbers are used.
* A budget that cannot be measured (no GPU events, no steps for step time, no launches) is an
  error (exit 2), never a pass.
* Fewer steps than `min_steps`, or an unreliable health finding, make the verdict an error (exit 2)
  unless `allow_unreliable`; the values are still shown.
* With a baseline: step time may grow by `max_regression` (relative); the idle fraction by
  `max_regression` in absolute terms (0.05 = 5 percentage points); each regime's time per step by
  `max_regression` × the baseline step time.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from traceanalyze.gate.budgets import BUDGETS, BudgetSpec, GateOptions, Statistic, Unit
from traceanalyze.gate.metrics import (MODELLED_REGIMES, REGIMES, Measured, coverage_mismatch, device_mismatch,
                                      is_job_note, skipped_steps_notes, unreliable_findings)
from traceanalyze.gate.comparable import device_reason, skip_steps_reason, window_reason
from traceanalyze.units import plural

Status = Literal["pass", "fail", "unmeasured", "info"]
Outcome = Literal["pass", "fail", "error"]
Basis = Literal["steps", "window"]
ChangeKind = Literal["relative", "points", "share_of_base_step"]
EXIT_CODES: dict[str, int] = {"pass": 0, "fail": 1, "error": 2}

REGIME_LABELS = {regime: f"{regime} time per step" for regime in REGIMES}


@dataclass(frozen=True)
class Check:
    """One budget judged."""

    name: str
    label: str
    metric: str
    kind: Literal["max", "min"]
    unit: Unit
    threshold: float
    measured: float | None
    margin: float | None  # > 0: passes by this much; < 0: fails by −margin (in `unit`)
    basis: Basis
    status: Status
    message: str
    rank: int | None = None  # several ranks judged one by one: the worst rank, the one named
    ranks_judged: int | None = None  # how many ranks were judged (None: pooled)
    # several ranks judged one by one: every other rank that breaks the budget too, worst first
    # (each a Check of that rank alone), so no rank over a budget goes unnamed
    other_failures: tuple[Check, ...] = ()


@dataclass(frozen=True)
class Regression:
    """One number compared with the baseline. `change` is in `change_kind` units: relative (0.07 =
    7 % slower), points (0.03 = 3 percentage points more idle) or share_of_base_step (regime time
    grew by 0.03 × the baseline step time). `base_share`/`new_share` are the regime fractions."""

    name: str
    label: str
    unit: str
    base: float | None
    new: float | None
    change: float | None
    change_kind: ChangeKind
    threshold: float
    status: Status
    message: str
    base_share: float | None = None
    new_share: float | None = None


@dataclass(frozen=True)
class Verdict:
    source: str
    statistic: Statistic
    basis: Basis
    steps: int
    min_steps: int
    allow_unreliable: bool
    problems: tuple[str, ...]  # why the numbers cannot be trusted
    checks: tuple[Check, ...]
    regressions: tuple[Regression, ...] = ()
    baseline: str | None = None
    baseline_steps: int | None = None
    max_regression: float | None = None
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()  # shown prominently; they do not change the outcome

    @property
    def outcome(self) -> Outcome:
        judged = [*self.checks, *self.regressions]
        if any(item.status == "unmeasured" for item in judged):
            return "error"
        if self.problems and not self.allow_unreliable:
            return "error"
        return "fail" if any(item.status == "fail" for item in judged) else "pass"

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.outcome]


def _tolerance(threshold: float) -> float:
    return 1e-9 * max(1.0, abs(threshold))


# decimals per unit, the same in every row of a table: ms to the µs, µs to 0.1 µs
DECIMALS = {"ms": 3, "us": 1}


def format_value(value: float | None, unit: str, *, percent_decimals: int = 2) -> str:
    """0.1234, "fraction" → "12.34%"; 12.5, "ms" → "12.500 ms"; 1234.56, "us" → "1,234.6 µs"."""
    if value is None:
        return "–"
    if unit == "fraction":
        return f"{100 * value:.{percent_decimals}f}%"
    if unit == "count":
        return f"{value:,.0f}"
    suffix = {"us": "µs", "ms": "ms"}.get(unit, unit)
    return f"{value:,.{DECIMALS.get(unit, 3)}f} {suffix}"


def steps_text(count: int | None) -> str:
    """3 → "3 steps", 1 → "1 step"."""
    return plural(count, "step")  # type: ignore[arg-type]


def format_margin(value: float, unit: str) -> str:
    if unit == "fraction":
        return f"{100 * value:.2f} points"
    return format_value(value, unit)


def _describe_basis(basis: Basis, statistic: Statistic, steps: int, metric: str) -> str:
    if metric == "launch_p99_us":
        return "all launches in the trace"
    if basis == "window":
        return "whole trace window"
    return f"{statistic} of {steps_text(steps)}"


def _check(spec: BudgetSpec, threshold: float, measured: Measured, basis: Basis, statistic: Statistic) -> Check:
    metric_basis: Basis = "window" if spec.metric == "launch_p99_us" else basis
    value = measured.window.get(spec.metric) if metric_basis == "window" else measured.statistic(spec.metric, statistic)
    where = _describe_basis(metric_basis, statistic, len(measured.steps), spec.metric)
    bound = "≤" if spec.kind == "max" else "≥"
    if value is None:
        reason = {
            "step_time_ms": "needs ProfilerStep spans, and the trace has none with GPU work",
            "launch_p99_us": "no launch call linked to GPU work in the trace",
        }.get(spec.metric, "the trace has no GPU activity to measure it on")
        return Check(spec.name, spec.label, spec.metric, spec.kind, spec.unit, threshold, None, None, metric_basis,
                     "unmeasured", f"{spec.label} {bound} {format_value(threshold, spec.unit)}: not measured: {reason}")
    margin = threshold - value if spec.kind == "max" else value - threshold
    passed = margin >= -_tolerance(threshold)
    if passed:
        message = (f"{spec.label} {format_value(value, spec.unit)} ({where}) {bound} "
                   f"{format_value(threshold, spec.unit)}: "
                   f"passes by {format_margin(max(margin, 0.0), spec.unit)}")
    else:
        over = "over" if spec.kind == "max" else "under"
        message = (f"{spec.label} {format_value(value, spec.unit)} ({where}) is {over} the "
                   f"{format_value(threshold, spec.unit)} budget by {format_margin(-margin, spec.unit)}")
    return Check(spec.name, spec.label, spec.metric, spec.kind, spec.unit, threshold, value, margin, metric_basis,
                 "pass" if passed else "fail", message)


def _worst_rank_check(spec: BudgetSpec, threshold: float, measured: Measured, statistic: Statistic) -> Check:
    """The budget judged on every rank alone; the rank with the smallest margin (the one that
    breaks it, or comes closest) is the check, its message naming the rank. Ranks where the
    number cannot be measured are skipped unless none can."""
    judged = {rank: _check(spec, threshold, alone, "steps" if alone.steps else "window", statistic)
              for rank, alone in sorted(measured.per_rank.items())}
    measured_checks = {rank: check for rank, check in judged.items() if check.margin is not None}
    if not measured_checks:
        rank, check = next(iter(judged.items()))
        return replace(check, rank=None, ranks_judged=len(judged))
    ordered = sorted(measured_checks.items(), key=lambda item: (item[1].margin, item[0]))
    rank, check = ordered[0]
    others = tuple(replace(other, rank=r, ranks_judged=len(judged), message=f"rank {r}: {other.message}")
                   for r, other in ordered[1:] if other.status == "fail")
    failing = 1 + len(others) if check.status == "fail" else 0
    suffix = (f" (the worst of {len(judged)} ranks" + (f"; {failing} ranks break it)" if failing > 1 else ")"))
    return replace(check, rank=rank, ranks_judged=len(judged), message=f"rank {rank}: {check.message}{suffix}",
                   other_failures=others)


def _judge(change: float | None, threshold: float) -> Status:
    if change is None:
        return "unmeasured"
    return "pass" if change <= threshold + _tolerance(threshold) else "fail"


def _change_text(change: float, kind: ChangeKind) -> str:
    if kind == "relative":
        return f"{100 * change:+.2f}%"
    if kind == "points":
        return f"{100 * change:+.2f} points"
    return f"{100 * change:+.2f}% of the baseline step"


def _regression_message(label: str, unit: str, base: float | None, new: float | None, change: float | None,
                        kind: ChangeKind, threshold: float, status: Status) -> str:
    if status == "unmeasured" or change is None:
        return f"{label}: not compared (baseline {format_value(base, unit)}, now {format_value(new, unit)})"
    limit = _change_text(threshold, kind).lstrip("+")
    verb = {"pass": "within", "fail": "beyond", "info": "not judged; limit"}[status]
    change_text = _change_text(change, kind)
    return f"{label} {format_value(base, unit)} → {format_value(new, unit)} ({change_text}, {verb} {limit})"


def _regression(name: str, label: str, unit: str, base: float | None, new: float | None, change: float | None,
                kind: ChangeKind, threshold: float, *, judged: bool = True, base_share: float | None = None,
                new_share: float | None = None) -> Regression:
    status: Status = _judge(change, threshold) if judged else "info"
    message = _regression_message(label, unit, base, new, change, kind, threshold, status)
    return Regression(name, label, unit, base, new, change, kind, threshold, status, message, base_share, new_share)


def _regressions(new: Measured, base: Measured, threshold: float, statistic: Statistic,
                 basis: Basis, *, judged: bool = True) -> tuple[list[Regression], list[str]]:
    """The baseline rows and their notes; with `judged` False (`gate/comparable.py`: another device,
    --skip-steps or window) every row is shown, not judged."""
    rows: list[Regression] = []
    notes: list[str] = []
    mismatch = coverage_mismatch(base, new)
    notes += [mismatch] if mismatch and judged else []  # said once; those rows shown, not judged
    if basis == "steps":
        base_step, new_step = base.statistic("step_time_ms", statistic), new.statistic("step_time_ms", statistic)
        relative = new_step / base_step - 1.0 if base_step and new_step is not None else None
        rows.append(_regression("step_time_ms", "step time", "ms", base_step, new_step, relative, "relative", threshold,
                                judged=judged))
        base_idle, new_idle = base.statistic("idle_fraction", statistic), new.statistic("idle_fraction", statistic)
        points = new_idle - base_idle if base_idle is not None and new_idle is not None else None
        rows.append(_regression("idle_fraction", "GPU idle fraction", "fraction", base_idle, new_idle, points, "points",
                                threshold, judged=judged))
        for regime in REGIMES:
            base_ms, new_ms = base.statistic(f"{regime}_ms", statistic), new.statistic(f"{regime}_ms", statistic)
            share = (new_ms - base_ms) / base_step if base_ms is not None and new_ms is not None and base_step else None
            rows.append(_regression(f"{regime}_ms", REGIME_LABELS[regime], "ms", base_ms, new_ms, share,
                                    "share_of_base_step",
                                    threshold, judged=judged and not (mismatch and regime in MODELLED_REGIMES),
                                    base_share=base.statistic(regime, statistic),
                                    new_share=new.statistic(regime, statistic)))
        return rows, notes
    side = "the baseline" if not base.steps else "this trace"
    notes.append(f"compared with the baseline over the whole window: {side} has no ProfilerStep spans with GPU work; "
                 "step time is not compared and regime shares are shown, not judged")
    rows.append(_regression("step_time_ms", "step time", "ms", None, None, None, "relative", threshold, judged=False))
    base_idle, new_idle = base.window.get("idle_fraction"), new.window.get("idle_fraction")
    points = new_idle - base_idle if base_idle is not None and new_idle is not None else None
    rows.append(_regression("idle_fraction", "GPU idle fraction", "fraction", base_idle, new_idle, points, "points",
                            threshold, judged=judged))
    for regime in REGIMES:
        b, n = base.window.get(regime), new.window.get(regime)
        rows.append(_regression(f"{regime}_ms", f"{regime} share", "fraction", b, n,
                                n - b if b is not None and n is not None else None, "points", threshold, judged=False,
                                base_share=b, new_share=n))
    return rows, notes


def _problems(measured: Measured, min_steps: int, prefix: str = "") -> list[str]:
    problems = []
    steps = len(measured.steps)
    if steps == 0:
        problems.append(f"{prefix}no ProfilerStep spans with GPU work: there is no per-step distribution to judge "
                        "(capture with a profiler schedule, e.g. `traceanalyze capture`)")
    elif steps < min_steps:
        problems.append(f"{prefix}only {steps_text(steps)} with GPU work (--min-steps {min_steps}): "
                        "too few to tell a regression from noise")
    problems += [prefix + line for line in unreliable_findings(measured.findings)]
    return problems


def evaluate(measured: Measured, options: GateOptions, *, baseline: Measured | None = None) -> Verdict:
    """Judge `measured` against the budgets of `options` (and `baseline`, when given).

    Examples
    --------
    >>> from traceanalyze.gate.budgets import resolve_options
    >>> m = Measured(source="t.json", steps=(1, 2, 3), per_step={"idle_fraction": (0.1, 0.2, 0.3)}, window={})
    >>> v = evaluate(m, resolve_options({}, {"max_idle_fraction": 0.2}))
    >>> v.outcome, v.checks[0].measured
    ('pass', 0.2)
    """
    basis: Basis = "steps" if measured.steps else "window"
    checks = tuple(
        _worst_rank_check(spec, options.thresholds[spec.name], measured, options.statistic)
        if options.ranks == "worst" and len(measured.per_rank) > 1
        else _check(spec, options.thresholds[spec.name], measured, basis, options.statistic)
        for spec in BUDGETS if spec.name in options.thresholds
    )
    problems = _problems(measured, options.min_steps)
    notes = [note for note in measured.notes if is_job_note(note)]  # missing, skipped, colliding ranks: said first
    compared = baseline is not None and options.max_regression is not None
    skip_reason = skip_steps_reason(baseline, measured) if compared else None  # type: ignore[arg-type]
    notes += [skip_reason] if skip_reason else skipped_steps_notes(baseline if baseline is not None else measured,
                                                                   measured, ("baseline", "trace judged"))
    if basis == "window":
        notes.append("no ProfilerStep spans with GPU work: judged on the whole trace window" +
                     (" (--allow-unreliable)" if options.allow_unreliable else ""))
    regressions: list[Regression] = []
    mismatch = None
    if baseline is not None:
        mismatch = device_reason(baseline, measured) if compared else device_mismatch(baseline, measured)
    if baseline is not None and options.max_regression is not None:
        problems += _problems(baseline, options.min_steps, prefix="baseline: ")
        compare_basis: Basis = "steps" if measured.steps and baseline.steps else "window"
        window_note = window_reason(baseline, measured, compare_basis)
        judged = not (mismatch or skip_reason or (window_note or "").startswith("cannot compare"))
        regressions, more = _regressions(measured, baseline, options.max_regression, options.statistic, compare_basis,
                                         judged=judged)
        notes += more
        notes += [window_note] if window_note else []
    if problems and options.allow_unreliable:
        notes.append("unreliable numbers judged anyway (--allow-unreliable)")
    return Verdict(
        source=measured.source,
        statistic=options.statistic,
        basis=basis,
        steps=len(measured.steps),
        min_steps=options.min_steps,
        allow_unreliable=options.allow_unreliable,
        problems=tuple(problems),
        checks=checks,
        regressions=tuple(regressions),
        baseline=baseline.source if baseline is not None else None,
        baseline_steps=len(baseline.steps) if baseline is not None else None,
        max_regression=options.max_regression,
        notes=tuple(notes),
        warnings=(mismatch,) if mismatch else (),
    )
