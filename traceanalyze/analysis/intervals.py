"""Interval arithmetic on polars frames: unions and complements of [start_ns, end_ns) intervals,
per group, vectorised (sort + running max), no Python loops."""

from __future__ import annotations

import polars as pl

from traceanalyze.native import compiled, int64_array, numpy_for_threads
from traceanalyze.scalar_columns import differing_keys, join_keys, varying_keys


NATIVE_MIN_ROWS = 50_000  # fewer intervals merge as fast in polars, without importing numpy


def union_intervals(frame: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Merge overlapping or touching intervals per group → `by + [start_ns, end_ns]`, sorted."""
    if frame.is_empty():
        return frame.select(*by, "start_ns", "end_ns")
    groups = varying_keys(frame, by, at_least_one=False)  # the one rank, the one device: not sorted on
    ordered = frame.select(*by, "start_ns", "end_ns")
    # intervals in start order (a loaded `gpu` table) merge as they are, or grouped by a stable sort
    # on the groups alone (10.8 against 27 ms for 412k GPU ops by stream): the order of equal starts
    # does not change the union
    if not ordered["start_ns"].is_sorted():
        ordered = ordered.sort(*groups, "start_ns", "end_ns")
    elif groups:
        ordered = ordered.sort(*groups, maintain_order=True)
    _native = compiled()
    if _native is not None and ordered.height >= NATIVE_MIN_ROWS:
        return _union_native(_native, ordered, by, groups)
    return _union_vectorised(ordered, by)


def _union_vectorised(ordered: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """A new merged interval wherever an interval starts after every earlier one of its group
    ended (running maximum), then one row per merged interval."""
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


def _union_native(native, ordered: pl.DataFrame, by: list[str], groups: list[str] | None = None) -> pl.DataFrame:
    """The same sweep in one pass of C (`_native.merge`); a group starts where one of `groups`
    (default `by`; the columns of `by` that vary are enough) changes."""
    np = numpy_for_threads()

    groups = by if groups is None else groups
    if groups:
        new_group = pl.any_horizontal(pl.col(c).ne_missing(pl.col(c).shift(1)) for c in groups).fill_null(True)
        group_start = int64_array(
            ordered.select(
                pl.when(new_group | (pl.int_range(pl.len()) == 0))
                .then(pl.int_range(pl.len(), dtype=pl.Int64))
                .forward_fill()
            ).to_series()
        )
    else:  # one group: every interval's group starts at the first
        group_start = np.zeros(ordered.height, dtype=np.int64)
    first, start, end = native.merge(group_start, *map(int64_array, (ordered["start_ns"], ordered["end_ns"])))
    merged = pl.DataFrame(
        {"start_ns": np.frombuffer(start, dtype=np.int64), "end_ns": np.frombuffer(end, dtype=np.int64)}
    )
    if not by:
        return merged
    if not groups:  # each of `by` holds one value: that value once, not gathered per interval
        return merged.select(
            *(pl.lit(ordered[c][0], dtype=ordered.schema[c]).alias(c) for c in by), "start_ns", "end_ns"
        )
    return ordered.select(by).gather(pl.Series(np.frombuffer(first, dtype=np.int64))).hstack(merged)


def clip_to_windows(intervals: pl.DataFrame, windows: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Intervals cut to the window of their group (`windows`: `by + [window_start_ns,
    window_end_ns]`); intervals outside the window are dropped."""
    keys = join_keys(intervals, windows, by)  # one same rank, device... in both: joined without it
    return (
        intervals.join(windows.drop(*(key for key in by if key not in keys)), on=keys, how="inner")
        .with_columns(
            pl.max_horizontal("start_ns", "window_start_ns").alias("start_ns"),
            pl.min_horizontal("end_ns", "window_end_ns").alias("end_ns"),
        )
        .filter(pl.col("end_ns") > pl.col("start_ns"))
    )


def covered_in_windows(
    intervals: pl.DataFrame, windows: pl.DataFrame, by: list[str], *, disjoint: bool = False
) -> pl.Series:
    """For each row of `windows` (`by + [window_start_ns, window_end_ns]`, in its order), how long
    the union of `intervals` (`by + [start_ns, end_ns]`) of its group lies inside the window.
    Linear in both sizes whatever they overlap: coverage up to a point is the covered length of the
    merged intervals that start before it (a running sum, found by an as-of join), and a window's
    coverage is that at its end minus that at its start. Windows may overlap one another.
    `disjoint=True` says the intervals of a group never overlap (idle gaps): no union is needed."""
    if windows.is_empty() or intervals.is_empty():
        return pl.Series("ns", [0] * windows.height, dtype=pl.Int64)
    by = differing_keys(intervals, windows, by)  # one same rank, device... in both: not keyed
    # in start order: a group's rows are then in start order too, and their running sum needs no
    # ordering of its own
    through_end = (pl.col("end_ns") - pl.col("start_ns")).cum_sum()
    merged = intervals.select(*by, "start_ns", "end_ns") if disjoint else union_intervals(intervals, by)
    if not merged["start_ns"].is_sorted():  # (one group's union is in start order already)
        merged = merged.sort("start_ns", maintain_order=True)
    merged = merged.with_columns((through_end.over(by) if by else through_end).alias("_through_end"))
    points = pl.concat(
        [
            windows.select(*by, pl.col("window_start_ns").alias("_at"))
            .with_row_index("_row")
            .with_columns(pl.lit(-1).alias("_sign")),
            windows.select(*by, pl.col("window_end_ns").alias("_at"))
            .with_row_index("_row")
            .with_columns(pl.lit(1).alias("_sign")),
        ]
    )
    before = (
        points.sort("_at")
        .join_asof(
            merged, left_on="_at", right_on="start_ns", by=by or None, strategy="backward", check_sortedness=False
        )
        .select(
            "_row",
            (
                pl.col("_sign")
                * (pl.col("_through_end") - (pl.col("end_ns") - pl.col("_at")).clip(lower_bound=0)).fill_null(0)
            ).alias("ns"),
        )
        .group_by("_row")
        .agg(pl.col("ns").sum().clip(lower_bound=0))
        .sort("_row")
    )
    return before["ns"].cast(pl.Int64)


def complement_in_windows(union: pl.DataFrame, windows: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """The maximal sub-intervals of each window not covered by `union` (already merged and
    clipped to the windows) → `by + [start_ns, end_ns]`. Windows with no interval at all are
    one gap from end to end."""
    bounds = windows.select(*by, "window_start_ns", "window_end_ns")
    # the keys of one same value in both (the rank, one device) are kept as columns, not keyed on
    keys = join_keys(union, bounds, by)
    constant = [key for key in by if key not in keys]
    covered = union.join(bounds.drop(constant), on=keys, how="inner").sort(*keys, "start_ns")
    gaps_between = (
        covered.with_columns(
            pl.col("end_ns").shift(1).over(keys).fill_null(pl.col("window_start_ns")).alias("gap_start_ns"),
        )
        .select(*by, pl.col("gap_start_ns").alias("start_ns"), pl.col("start_ns").alias("end_ns"))
    )
    trailing = covered.group_by(keys).agg(
        *(pl.col(key).first() for key in constant),
        pl.col("end_ns").max().alias("start_ns"),
        pl.col("window_end_ns").first().alias("end_ns"),
    )
    empty_windows = bounds.join(covered.select(keys).unique(), on=keys, how="anti").select(
        *by, pl.col("window_start_ns").alias("start_ns"), pl.col("window_end_ns").alias("end_ns")
    )
    return (
        pl.concat([gaps_between, trailing.select(*by, "start_ns", "end_ns"), empty_windows], how="vertical_relaxed")
        .filter(pl.col("end_ns") > pl.col("start_ns"))
        .sort(*keys, "start_ns")
    )
