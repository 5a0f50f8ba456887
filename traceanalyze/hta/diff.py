"""`TraceDiff` and `LabeledTrace`: HTA's comparison of two trace sets' ops, on our tables.

`TraceDiff.compare_traces(control, test)` counts each op and kernel name of one ProfilerStep of one
rank in both traces, and their total durations (µs), as HTA's `hta.trace_diff` does: a CPU-side
event (CPU op, user annotation, runtime call) belongs to the step whose span holds its start, a GPU
op to the step of its launch. Python functions are not loaded (HTA counts them too when the trace
has them) and `cuda_sync` events are not counted; docs/hta.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from traceanalyze.model import Trace

DEVICE_TYPES = ("CPU", "GPU", "ALL")


class LabeledTrace:
    """A trace set with a label: from `trace_dir`, or `t` (our `Trace`, or a `TraceAnalysis`)."""

    def __init__(self, label: str | None = None, t: Any = None, trace_dir: str | None = None) -> None:
        from traceanalyze.load import load_trace

        self.label = label or "trace"
        if t is not None:
            self.t = t if isinstance(t, Trace) else t.trace
        elif trace_dir is not None and Path(trace_dir).exists():
            self.t = load_trace(Path(trace_dir))
        else:
            raise ValueError("either a trace object or a valid trace dir must be provided in LabeledTrace()")

    def ranks(self) -> list[int]:
        return sorted(self.t.ranks)

    def iterations(self) -> list[int]:
        return sorted(self.t.steps["step"].unique().to_list())

    def extract_ops(self, rank: int | list[int] | None = None, iteration: int | list[int] | None = None,
                    device_type: Any = "ALL") -> pl.DataFrame:
        """The ops (`side`, `name`, `duration_ns`) of the given ranks (default: the first) and steps
        (default: the first); `device_type` "CPU", "GPU" or "ALL" (or HTA's `DeviceType`)."""
        ranks = _chosen(rank, self.ranks(), "rank", self.label)
        steps = _chosen(iteration, self.iterations(), "iteration", self.label)
        kind = getattr(device_type, "name", str(device_type)).upper()
        if kind not in DEVICE_TYPES:
            raise ValueError(f"device_type must be one of {DEVICE_TYPES}, not {device_type!r}")
        parts = []
        for r in ranks:
            parts.append(step_ops(self.t.for_rank(r), steps))
        ops = pl.concat(parts)
        return ops if kind == "ALL" else ops.filter(pl.col("side") == kind)


def _chosen(value: int | list[int] | None, available: list[int], what: str, label: str) -> list[int]:
    if value is None:
        if not available:
            raise ValueError(f"Trace {label} doesn't have any {what}.")
        return available[:1]
    chosen = [value] if isinstance(value, int) else list(value)
    for item in chosen:
        if item not in available:
            raise ValueError(f"Invalid argument {what}={value}.")
    return chosen


def step_ops(trace: Trace, steps: list[int]) -> pl.DataFrame:
    """One rank's ops in the given steps: CPU-side events by their start, GPU ops by their launch."""
    spans = trace.steps.filter(pl.col("step").is_in(steps)).select("start_ns", "end_ns").rows()

    def within(column: str) -> pl.Expr:
        inside = pl.lit(False)
        for start, end in spans:
            inside = inside | ((pl.col(column) >= start) & (pl.col(column) < end))
        return inside

    columns = ["name", "start_ns", "duration_ns"]
    cpu = pl.concat([trace.cpu_ops.select(pl.col("name").cast(pl.String), "start_ns", "duration_ns"),
                     trace.runtime.select(pl.col("name").cast(pl.String), "start_ns", "duration_ns")])
    launches = trace.runtime.filter(pl.col("correlation").is_not_null()).select(
        "correlation", pl.col("start_ns").alias("launch_ns")).unique("correlation", keep="last")
    gpu = trace.gpu.select("correlation", pl.col("name").cast(pl.String), "start_ns", "duration_ns").join(
        launches, on="correlation", how="inner")
    return pl.concat([
        cpu.filter(within("start_ns")).select(pl.lit("CPU").alias("side"), *columns),
        gpu.filter(within("launch_ns")).select(pl.lit("GPU").alias("side"), *columns),
    ])


def summary(ops: pl.DataFrame) -> pl.DataFrame:
    """Per name: `counts` and `total_duration` (µs)."""
    return ops.group_by("name").agg(pl.len().cast(pl.Int64).alias("counts"),
                                    (pl.col("duration_ns").sum() / 1000).alias("total_duration"))


class TraceDiff:
    """HTA's `TraceDiff`: what changed between two trace sets, op by op."""

    @classmethod
    def compare_traces(cls, control: Any, test: Any, control_rank: int | list[int] | None = None,
                       test_rank: int | list[int] | None = None, control_iteration: int | list[int] | None = None,
                       test_iteration: int | list[int] | None = None, device_type: Any = "ALL",
                       use_short_name: bool = False) -> Any:
        """Per op name (the index): `<label>_counts`, `<label>_total_duration` (µs) of each trace,
        `diff_counts`, `diff_duration` (test − control), `counts_change_categories` (`+`, `-`, `=`)."""
        import pandas as pd

        if use_short_name:
            raise NotImplementedError("use_short_name: HTA's name shortening is not reproduced; compare full names")
        control, test = _labeled(control, "Control"), _labeled(test, "Test")
        if control.label == test.label:
            test.label = f"{test.label}_test"
        sides = []
        for labeled, rank, iteration in ((control, control_rank, control_iteration), (test, test_rank, test_iteration)):
            table = summary(labeled.extract_ops(rank, iteration, device_type))
            sides.append(table.rename({"counts": f"{labeled.label}_counts",
                                       "total_duration": f"{labeled.label}_total_duration"}))
        both = sides[0].join(sides[1], on="name", how="full", coalesce=True).fill_null(0).sort("name")
        counts = (pl.col(f"{test.label}_counts") - pl.col(f"{control.label}_counts"))
        both = both.with_columns(
            counts.alias("diff_counts"),
            (pl.col(f"{test.label}_total_duration") - pl.col(f"{control.label}_total_duration")).alias("diff_duration"),
            pl.when(counts > 0).then(pl.lit("+")).when(counts < 0).then(pl.lit("-")).otherwise(pl.lit("="))
            .alias("counts_change_categories"),
        )
        frame = pd.DataFrame({c: both[c].to_numpy() for c in both.columns})
        return frame.set_index("name")

    @classmethod
    def ops_diff(cls, control: Any, test: Any, control_rank: int | list[int] | None = None,
                 test_rank: int | list[int] | None = None, control_iteration: int | list[int] | None = None,
                 test_iteration: int | list[int] | None = None, device_type: Any = "ALL") -> dict[str, list[str]]:
        """Op names `added`, `deleted`, `increased`, `decreased`, `unchanged` (by count)."""
        control, test = _labeled(control, "Control"), _labeled(test, "Test")
        if control.label == test.label:
            test.label = f"{test.label}_test"
        df = cls.compare_traces(control, test, control_rank, test_rank, control_iteration, test_iteration,
                                device_type)
        before, after, diff = df[f"{control.label}_counts"], df[f"{test.label}_counts"], df["diff_counts"]
        return {
            "added": df.index[before.eq(0) & after.gt(0)].tolist(),
            "deleted": df.index[before.gt(0) & after.eq(0)].tolist(),
            "increased": df.index[before.gt(0) & diff.gt(0)].tolist(),
            "decreased": df.index[after.gt(0) & diff.lt(0)].tolist(),
            "unchanged": df.index[after.gt(0) & diff.eq(0)].tolist(),
        }


def _labeled(value: Any, label: str) -> LabeledTrace:
    """HTA's argument adapter: a LabeledTrace, a folder (str or Path), our Trace or TraceAnalysis."""
    if isinstance(value, LabeledTrace):
        return value
    if isinstance(value, (str, Path)):
        return LabeledTrace(label=label, trace_dir=str(value))
    return LabeledTrace(label=label, t=value)
