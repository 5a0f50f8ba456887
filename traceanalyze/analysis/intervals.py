"""Interval arithmetic on polars frames: unions and complements of [start_ns, end_ns) intervals,
per group, vectorised (sort + running max), no Python loops."""

from __future__ import annotations

import polars as pl


def union_intervals(frame: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Merge overlapping or touching intervals per group → `by + [start_ns, end_ns]`, sorted."""
    if frame.is_empty():
        return frame.select(*by, "start_ns", "end_ns")
    ordered = frame.select(*by, "start_ns", "end_ns").sort(*by, "start_ns", "end_ns")
    if by:
        previous_end = pl.col("end_ns").cum_max().shift(1).over(by)
    else:
        previous_end = pl.col("end_ns").cum_max().shift(1)
    segment = (pl.col("start_ns") > previous_end).fill_null(True).cast(pl.Int64)
    segment = segment.cum_sum().over(by) if by else segment.cum_sum()
    return (
        ordered.with_columns(segment.alias("_segment"))
        .group_by(*by, "_segment", maintain_order=True)
        .agg(pl.col("start_ns").min(), pl.col("end_ns").max())
        .drop("_segment")
    )


def clip_to_windows(intervals: pl.DataFrame, windows: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Intervals cut to the window of their group (`windows`: `by + [window_start_ns,
    window_end_ns]`); intervals outside the window are dropped."""
    return (
        intervals.join(windows, on=by, how="inner")
        .with_columns(
            pl.max_horizontal("start_ns", "window_start_ns").alias("start_ns"),
            pl.min_horizontal("end_ns", "window_end_ns").alias("end_ns"),
        )
        .filter(pl.col("end_ns") > pl.col("start_ns"))
    )


def complement_in_windows(union: pl.DataFrame, windows: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """The maximal sub-intervals of each window not covered by `union` (already merged and
    clipped to the windows) → `by + [start_ns, end_ns]`. Windows with no interval at all are
    one gap from end to end."""
    bounds = windows.select(*by, "window_start_ns", "window_end_ns")
    covered = union.join(bounds, on=by, how="inner").sort(*by, "start_ns")
    gaps_between = (
        covered.with_columns(
            pl.col("end_ns").shift(1).over(by).fill_null(pl.col("window_start_ns")).alias("gap_start_ns"),
        )
        .select(*by, pl.col("gap_start_ns").alias("start_ns"), pl.col("start_ns").alias("end_ns"))
    )
    trailing = (
        covered.group_by(by).agg(pl.col("end_ns").max().alias("start_ns"), pl.col("window_end_ns").first().alias("end_ns"))
    )
    empty_windows = bounds.join(covered.select(by).unique(), on=by, how="anti").select(
        *by, pl.col("window_start_ns").alias("start_ns"), pl.col("window_end_ns").alias("end_ns")
    )
    return (
        pl.concat([gaps_between, trailing.select(*by, "start_ns", "end_ns"), empty_windows], how="vertical_relaxed")
        .filter(pl.col("end_ns") > pl.col("start_ns"))
        .sort(*by, "start_ns")
    )
