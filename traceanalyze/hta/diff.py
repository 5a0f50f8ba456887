"""`TraceDiff` and `LabeledTrace`: HTA's comparison of two trace sets' ops, on our tables.

`TraceDiff.compare_traces(control, test)` counts each op and kernel name of one ProfilerStep of one
rank in both traces, and their total durations (µs), as HTA's `hta.trace_diff` does: a CPU-side
event (CPU op, user annotation, Python function, runtime call, a sync event on no stream, a GPU-side
annotation) belongs to the step whose span holds its start, a GPU op or stream sync to the step of
its launch (`step_ops`); docs/hta.md."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from traceanalyze.hta import rules
from traceanalyze.hta.launches import STEP_NUMBER
from traceanalyze.model import Trace

DEVICE_TYPES = ("CPU", "GPU", "ALL")
MEMORY_NAME = re.compile(r"Memcpy|Memset|dma")  # at the start: HTA's MEMORY_KERNEL_RE
CLOSING = {">": "<", ")": "("}


class LabeledTrace:
    """A trace set with a label: from `trace_dir` (loaded with its Python functions, which HTA
    counts), or `t`: our `Trace` as it is, or a `TraceAnalysis` (its folder loaded again with
    the Python functions, unless it was given `trace_files`)."""

    def __init__(self, label: str | None = None, t: Any = None, trace_dir: str | None = None) -> None:
        from traceanalyze.load import load_trace

        self.label = label or "trace"
        if isinstance(t, Trace):
            self.t = t
        elif t is not None:  # a TraceAnalysis: its folder again, with the Python functions HTA counts
            self.t = t.trace if t.trace.python is not None or t.trace_files else load_trace(
                Path(t.trace_dir), include_python=True)
        elif trace_dir is not None and Path(trace_dir).exists():
            self.t = load_trace(Path(trace_dir), include_python=True)
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
    """One rank's ops in the given steps, as HTA's `add_iteration` assigns them: a CPU-side event
    (CPU op, user annotation, Python function, runtime call, a sync event on no stream, the
    GPU-side annotations HTA reads as CPU-side) to the last ProfilerStep span, in start order,
    that holds its start; a GPU op or stream sync on stream > 0 to the step of its launch call;
    one on stream 0 to none (HTA's `stream.gt(0)`)."""
    spans = _step_spans(trace)
    name = pl.col("name").cast(pl.String)
    cpu_side = [trace.cpu_ops.select(name, "start_ns", "duration_ns"),
                trace.runtime.select(name, "start_ns", "duration_ns"),
                trace.sync.filter(pl.col("stream") < 0).select(name, "start_ns", "duration_ns")]
    if trace.python is not None:
        cpu_side.append(trace.python.select(name, "start_ns", "duration_ns"))
    cpu_side.append(_gpu_annotations(trace))
    cpu = pl.concat(cpu_side)
    cpu = cpu.with_columns(pl.Series("iteration", _iteration(cpu["start_ns"].to_numpy(), spans), pl.Int64))
    launches = trace.runtime.filter(pl.col("correlation").is_not_null()).select(
        "correlation", pl.Series("launch_iteration", _iteration(trace.runtime["start_ns"].to_numpy(), spans),
                                 pl.Int64).filter(trace.runtime["correlation"].is_not_null())
    ).unique("correlation", keep="last")
    gpu = pl.concat([trace.gpu.select("correlation", "stream", name, "start_ns", "duration_ns"),
                     trace.sync.filter(pl.col("stream") >= 0).select("correlation", "stream", name, "start_ns",
                                                                     "duration_ns")])
    gpu = gpu.filter(pl.col("stream") > 0).join(launches, on="correlation", how="inner")
    columns = ["name", "start_ns", "duration_ns"]
    return pl.concat([
        cpu.filter(pl.col("iteration").is_in(steps)).select(pl.lit("CPU").alias("side"), *columns),
        gpu.filter(pl.col("launch_iteration").is_in(steps)).select(pl.lit("GPU").alias("side"), *columns),
    ])


def _step_spans(trace: Trace) -> list[tuple[int, int, int]]:
    """HTA's ProfilerStep spans (number, start_ns, end_ns): the CPU-side steps and the GPU-side
    `ProfilerStep#N` annotations (same name, so HTA takes them for steps too), by start."""
    spans = [(int(step), start, end) for step, start, end in trace.steps.select("step", "start_ns", "end_ns").rows()]
    for name, start, duration in _gpu_annotations(trace).rows():
        match = STEP_NUMBER.match(name)
        if match:
            spans.append((int(match.group(1)), start, start + duration))
    return sorted(spans, key=lambda span: span[1])


def _iteration(starts: np.ndarray, spans: list[tuple[int, int, int]]) -> np.ndarray:
    """Per start, the number of the last span (in `spans`' order) holding it; -1 for none."""
    iteration = np.full(len(starts), -1, dtype=np.int64)
    for number, start, end in spans:
        iteration[(starts >= start) & (starts < end)] = number
    return iteration


def _gpu_annotations(trace: Trace) -> pl.DataFrame:
    """The GPU-side user annotations of a one-file rank (`name`, `start_ns`, `duration_ns`; from
    the file's scan, `rules.raw_facts`); none for a trace not read from one file."""
    rows = rules.raw_facts(trace.source).gpu_annotations if rules.one_file(trace) else ()
    frame = pl.DataFrame(rows, schema={"name": pl.String, "start_ns": pl.Int64, "end_ns": pl.Int64}, orient="row")
    return frame.select("name", "start_ns", (pl.col("end_ns") - pl.col("start_ns")).alias("duration_ns"))


def short_name(name: str) -> str:
    """HTA's `use_short_name` rule (hta/utils/utils.py, `shorten_name`): a copy or set keeps its
    name; otherwise, once `->` is removed, every `<…>` and `(…)` span is cut out (an unmatched
    closing bracket cuts everything before it), and the last space-separated word is the name.
    `void at::native::foo<float>(int)` → `at::native::foo`."""
    if MEMORY_NAME.match(name) or ("<" not in name and "(" not in name):
        return name
    kept: list[str] = []
    for char in name.replace("->", ""):
        opener = CLOSING.get(char)
        if opener is None:
            kept.append(char)
            continue
        while kept and kept[-1] != opener:
            kept.pop()
        if kept:
            kept.pop()
    return "".join(kept).split(" ")[-1]


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
        `diff_counts`, `diff_duration` (test − control), `counts_change_categories` (`+`, `-`, `=`).
        `use_short_name`: names shortened as HTA does (`short_name`), the ops of one short name
        added together."""
        import pandas as pd

        control, test = _labeled(control, "Control"), _labeled(test, "Test")
        if control.label == test.label:
            test.label = f"{test.label}_test"
        sides = []
        for labeled, rank, iteration in ((control, control_rank, control_iteration), (test, test_rank, test_iteration)):
            ops = labeled.extract_ops(rank, iteration, device_type)
            if use_short_name:
                ops = ops.with_columns(pl.col("name").map_elements(short_name, return_dtype=pl.String))
            table = summary(ops)
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
        return frame.set_index("name").rename_axis("short_name" if use_short_name else "name")

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
