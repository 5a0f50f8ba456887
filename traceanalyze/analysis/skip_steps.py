"""`--skip-steps N`: the trace from its (N+1)-th ProfilerStep on, as if recording had begun there
(docs/metrics.md#skipped-steps). Every analysis then reads the cut trace, so the first N steps are
out of everything: idle time, gaps, attribution, roofline, findings.

Per rank, the cut is the CPU start of its (N+1)-th `ProfilerStep#k` by start time. Left out:
the steps before the cut; GPU work launched before it (the launching step is skipped, even when
the work runs after the cut), and GPU work with no launch call that starts before it; runtime
calls, GPU-side sync markers and flow events that start before it. CPU ops, annotations and Python
events still open at the cut are kept from the cut on (their start moved to the cut: the context
of what follows, such as a `record_function` around the whole loop); those that ended before it
are left out.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import polars as pl

from traceanalyze.errors import ConfigError
from traceanalyze.model import Trace, linked_gpu


@dataclass(frozen=True)
class SkippedSteps:
    """What `skip_steps` left out of one rank: `count` steps, numbered `first`…`last`, and the cut
    (the start of step `kept`, the first one analysed)."""

    rank: int
    count: int
    first: int
    last: int
    kept: int
    cut_ns: int


def skipped_steps(trace: Trace, count: int) -> list[SkippedSteps]:
    """Per rank of `trace`, the steps `--skip-steps count` leaves out and where the analysis
    starts. Raises `ConfigError` when a rank has no ProfilerStep or no step would be left."""
    if count < 0:
        raise ConfigError(f"--skip-steps must be a whole number ≥ 0, got {count}")
    found = []
    for meta in trace.meta:
        steps = trace.steps.filter(pl.col("rank") == meta.rank).sort("start_ns", "step")
        if steps.is_empty():
            raise ConfigError(f"{meta.source}: --skip-steps {count}: the trace has no ProfilerStep#N spans to skip "
                              "(record steps with torch.profiler's schedule and prof.step(), or leave the option out)")
        if steps.height <= count:
            raise ConfigError(f"{meta.source}: --skip-steps {count} leaves no step: the trace has only "
                              f"{steps.height} ProfilerStep{'s' if steps.height != 1 else ''}")
        numbers = steps["step"].to_list()
        found.append(SkippedSteps(rank=meta.rank, count=count, first=min(numbers[:count]), last=max(numbers[:count]),
                                  kept=numbers[count], cut_ns=int(steps["start_ns"][count])))
    return found


def skip_steps(trace: Trace, count: int) -> Trace:
    """`trace` without its first `count` ProfilerSteps on each rank (module docstring); the same
    trace when `count` is 0."""
    if count == 0:
        return trace
    cuts = pl.DataFrame([(s.rank, s.cut_ns) for s in skipped_steps(trace, count)],
                        schema={"rank": pl.Int32, "cut_ns": pl.Int64}, orient="row")

    def with_cut(frame: pl.DataFrame) -> pl.DataFrame:
        return frame.join(cuts, on="rank", how="left", maintain_order="left")

    def starting_after(frame: pl.DataFrame, column: str = "start_ns") -> pl.DataFrame:
        return with_cut(frame).filter(pl.col(column) >= pl.col("cut_ns")).drop("cut_ns")

    def from_cut(frame: pl.DataFrame) -> pl.DataFrame:
        """Rows still open at the cut (or starting after it), their start moved to the cut."""
        kept = with_cut(frame).filter((pl.col("end_ns") > pl.col("cut_ns")) | (pl.col("start_ns") >= pl.col("cut_ns")))
        start = pl.max_horizontal("start_ns", "cut_ns")
        return kept.with_columns(start.alias("start_ns"), (pl.col("end_ns") - start).alias("duration_ns")).drop(
            "cut_ns"
        )

    launched_at = linked_gpu(trace, ("start_ns",), launch=("launch_start_ns",))["launch_start_ns"]
    gpu = (with_cut(trace.gpu.with_columns(launched_at.alias("_launched_ns")))
           .filter(pl.coalesce("_launched_ns", "start_ns") >= pl.col("cut_ns"))
           .drop("_launched_ns", "cut_ns"))
    return replace(
        trace,
        gpu=gpu,
        runtime=starting_after(trace.runtime),
        cpu_ops=from_cut(trace.cpu_ops),
        steps=starting_after(trace.steps),
        flows=starting_after(trace.flows, "ts_ns"),
        sync=starting_after(trace.sync),
        python=None if trace.python is None else from_cut(trace.python),
    )
