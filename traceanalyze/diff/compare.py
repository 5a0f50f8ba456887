"""Two reports side by side (`traceanalyze diff BASE NEW`): step time, idle fraction, attribution,
launch latency, and kernels matched by name — added, removed, faster, slower. Pure: works on JSON
reports (`ReportV1`: built from a trace, or saved and decoded), like the gate, with the same
per-step numbers (`traceanalyze.gate.metrics`).

A kernel is faster or slower when its mean time per call changed by at least `min_change`
(relative); per call, because two captures may hold different numbers of steps. A report lists at
most `KERNEL_LIMIT` kernels (the longest in total); a kernel missing from a full list may only
have dropped below it, so it is `unlisted`, not added or removed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from traceanalyze.gate.budgets import Statistic
from traceanalyze.gate.metrics import REGIMES, Measured, device_mismatch, measure, skipped_steps_notes
from traceanalyze.report.schema import KERNEL_LIMIT, ReportV1

KernelStatus = Literal["added", "removed", "faster", "slower", "unchanged", "unlisted"]
ChangeKind = Literal["relative", "points", "count"]


@dataclass(frozen=True)
class MetricRow:
    name: str
    label: str
    unit: str  # "fraction", "ms", "us", "count"
    base: float | None
    new: float | None
    change: float | None  # relative for times and counts, absolute for fractions (points)
    change_kind: ChangeKind


@dataclass(frozen=True)
class KernelRow:
    name: str
    status: KernelStatus
    base_count: int | None
    new_count: int | None
    base_total_us: float | None
    new_total_us: float | None
    base_mean_us: float | None
    new_mean_us: float | None
    change: float | None  # relative change of the mean time per call (over ranks listing it on both sides)
    base_bound: str | None
    new_bound: str | None


@dataclass(frozen=True)
class Diff:
    base_source: str
    new_source: str
    statistic: Statistic
    min_change: float
    base_steps: int
    new_steps: int
    metrics: tuple[MetricRow, ...]
    kernels: tuple[KernelRow, ...]  # every kernel seen, longest (max of both totals) first
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()  # shown first: e.g. the two runs used different devices
    # one program at two sizes: the scaling verdict every format opens with (docs/scaling.md#in-diff)
    scaling: str | None = None

    @property
    def changed_kernels(self) -> tuple[KernelRow, ...]:
        """Added, removed, slower and faster kernels, in that order, biggest change in total time first."""
        order = {"added": 0, "removed": 1, "slower": 2, "faster": 3}
        rows = [k for k in self.kernels if k.status in order]
        return tuple(sorted(rows, key=lambda k: (order[k.status],
                                                 -abs((k.new_total_us or 0.0) - (k.base_total_us or 0.0)))))


@dataclass(frozen=True)
class _Listed:
    """One kernel name as a report lists it: (count, total µs) per rank, and µs per bound."""

    by_rank: dict[int, tuple[int, float]]
    bounds: dict[str, float]

    def totals(self, ranks: set[int] | None = None) -> tuple[int, float]:
        chosen = [v for r, v in self.by_rank.items() if ranks is None or r in ranks]
        return sum(c for c, _ in chosen), sum(t for _, t in chosen)


def _kernels(report: ReportV1) -> tuple[dict[str, _Listed], bool]:
    """Kernels by name, per rank (entries of one name with several bounds summed), and whether some
    list was full (so it may be truncated)."""
    lists: list[tuple[int, list[Any]]] = [(rank.rank or 0, rank.kernels)
                                          for rank in report.ranks] or [(0, report.kernels)]
    merged: dict[str, _Listed] = {}
    for rank, rows in lists:
        for row in rows:
            entry = merged.setdefault(row.name, _Listed({}, {}))
            count, total = entry.by_rank.get(rank, (0, 0.0))
            entry.by_rank[rank] = (count + row.count, total + float(row.total_us))
            bound = str(row.bound)
            entry.bounds[bound] = entry.bounds.get(bound, 0.0) + float(row.total_us)
    truncated = any(len(rows) >= KERNEL_LIMIT for _, rows in lists)
    return merged, truncated


def _bound(entry: _Listed | None) -> str | None:
    if not entry or not entry.bounds:
        return None
    return max(entry.bounds.items(), key=lambda item: item[1])[0]


def _mean(entry: _Listed, ranks: set[int] | None) -> float | None:
    count, total = entry.totals(ranks)
    return total / count if count else None


def _kernel_rows(base: ReportV1, new: ReportV1, min_change: float) -> tuple[list[KernelRow], list[str]]:
    base_kernels, base_truncated = _kernels(base)
    new_kernels, new_truncated = _kernels(new)
    rows = []
    for name in {*base_kernels, *new_kernels}:
        b, n = base_kernels.get(name), new_kernels.get(name)
        b_mean = _mean(b, None) if b else None
        n_mean = _mean(n, None) if n else None
        change = None
        if b and n:
            # per call over the ranks that list it on both sides (a truncated list may drop it on some)
            common = set(b.by_rank) & set(n.by_rank) or None
            before, after = _mean(b, common), _mean(n, common)
            change = after / before - 1.0 if before and after is not None else None
        status: KernelStatus
        if b is None:
            status = "unlisted" if base_truncated else "added"
        elif n is None:
            status = "unlisted" if new_truncated else "removed"
        elif change is not None and change >= min_change:
            status = "slower"
        elif change is not None and change <= -min_change:
            status = "faster"
        else:
            status = "unchanged"
        base_count, base_total = b.totals() if b else (None, None)
        new_count, new_total = n.totals() if n else (None, None)
        rows.append(KernelRow(
            name=name, status=status, base_count=base_count, new_count=new_count,
            base_total_us=base_total, new_total_us=new_total, base_mean_us=b_mean, new_mean_us=n_mean, change=change,
            base_bound=_bound(b), new_bound=_bound(n),
        ))
    rows.sort(key=lambda k: (-max(k.base_total_us or 0.0, k.new_total_us or 0.0), k.name))
    notes = []
    for side, truncated in (("base", base_truncated), ("new", new_truncated)):
        if truncated:
            notes.append(f"the {side} report lists only the {KERNEL_LIMIT} longest kernels of each rank: a kernel "
                         "missing from it is shown as 'unlisted', not added or removed")
    return rows, notes


def _relative(base: float | None, new: float | None) -> float | None:
    return new / base - 1.0 if base and new is not None else None


def _points(base: float | None, new: float | None) -> float | None:
    return new - base if base is not None and new is not None else None


def _metric_rows(b: Measured, n: Measured, base: ReportV1, new: ReportV1,
                 statistic: Statistic) -> list[MetricRow]:
    rows = [
        MetricRow("steps", "steps with GPU work", "count", float(len(b.steps)), float(len(n.steps)),
                  _relative(float(len(b.steps)), float(len(n.steps))), "count"),
    ]
    b_step, n_step = b.statistic("step_time_ms", statistic), n.statistic("step_time_ms", statistic)
    rows.append(MetricRow("step_time_ms", f"step time ({statistic})", "ms", b_step, n_step, _relative(b_step, n_step),
                          "relative"))
    b_idle, n_idle = b.statistic("idle_fraction", statistic), n.statistic("idle_fraction", statistic)
    rows.append(MetricRow("step_idle_fraction", f"GPU idle per step ({statistic})", "fraction", b_idle, n_idle,
                          _points(b_idle, n_idle), "points"))
    b_win, n_win = b.window.get("idle_fraction"), n.window.get("idle_fraction")
    rows.append(MetricRow("idle_fraction", "GPU idle (whole window)", "fraction", b_win, n_win, _points(b_win, n_win),
                          "points"))
    for regime in REGIMES:
        b_share, n_share = b.window.get(regime), n.window.get(regime)
        rows.append(MetricRow(f"attribution.{regime}", f"{regime} share", "fraction", b_share, n_share,
                              _points(b_share, n_share), "points"))
    for key, label in (("p50", "launch → start p50"), ("p99", "launch → start p99")):
        b_lat = getattr(base.summary.launch_to_start_us, key)
        n_lat = getattr(new.summary.launch_to_start_us, key)
        rows.append(MetricRow(f"launch_to_start_{key}_us", label, "us", b_lat, n_lat, _relative(b_lat, n_lat),
                              "relative"))
    b_busy, n_busy = base.summary.gpu_busy_us, new.summary.gpu_busy_us
    rows.append(MetricRow("gpu_busy_us", "GPU busy (whole window)", "us", b_busy, n_busy, _relative(b_busy, n_busy),
                          "relative"))
    return rows


def diff_reports(base: ReportV1, new: ReportV1, *, statistic: Statistic = "median",
                 min_change: float = 0.05, sources: tuple[str, str] | None = None) -> Diff:
    """Compare two JSON reports (`jsonout.report_v1`, or saved reports decoded by `gate.inputs`);
    `sources` names them (default: each report's own `source`).

    Examples
    --------
    >>> d = diff_reports(report_v1(base_report), report_v1(new_report))  # doctest: +SKIP
    >>> [(k.name, k.status) for k in d.changed_kernels]  # doctest: +SKIP
    [('new_kernel', 'added'), ('old_kernel', 'removed'), ('gemm', 'slower')]
    """
    b = measure(base, source=sources[0] if sources else None)
    n = measure(new, source=sources[1] if sources else None)
    kernels, notes = _kernel_rows(base, new, min_change)
    mismatch = device_mismatch(b, n)
    notes += skipped_steps_notes(b, n, ("base", "new run"))
    if b.window_option and n.window_option and b.window_option != n.window_option:
        notes.append(f"the reports used different windows ({b.window_option} vs {n.window_option}): "
                     "whole-window numbers differ in definition")
    return Diff(
        base_source=b.source, new_source=n.source, statistic=statistic, min_change=min_change,
        base_steps=len(b.steps), new_steps=len(n.steps),
        metrics=tuple(_metric_rows(b, n, base, new, statistic)), kernels=tuple(kernels), notes=tuple(notes),
        warnings=(mismatch,) if mismatch else (),
    )
