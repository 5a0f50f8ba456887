"""Clock offsets between ranks, estimated from the collectives themselves.

A collective ends at nearly the same instant on every rank of its group (no rank can finish
before the last one's data arrived, and the last transfer step is short), so the difference of
two ranks' end times of the same collective is their clock offset plus noise. Per rank, the
offset is the **median** of that difference against the reference rank (the lowest rank) over
every collective they share: robust to a few collectives that end apart. The residuals (each
aligned end minus the median aligned end of its collective) say how well one offset explains
every collective; when they are large, collective waits of that size cannot be trusted.
Definitions in docs/metrics.md ("Clock offsets").
"""

from __future__ import annotations

import polars as pl

RESIDUAL_LIMIT_NS = 20_000  # median |residual| above this on a rank: waits that short are unreliable

OFFSET_SCHEMA = pl.Schema({
    "rank": pl.Int32, "reference_rank": pl.Int32, "offset_ns": pl.Int64, "collectives": pl.Int64,
    "residual_median_abs_ns": pl.Int64, "residual_max_abs_ns": pl.Int64,
})


def clock_offsets(matched: pl.DataFrame) -> pl.DataFrame:
    """Per rank, its clock's offset from the reference rank's → `OFFSET_SCHEMA`.

    `matched`: `collectives.match_collectives` without offsets (raw times). The reference rank
    has offset 0; a rank that shares no collective with it gets 0 and `collectives` = 0. Times
    aligned to the reference clock are `t - offset_ns`."""
    if matched.is_empty():
        return pl.DataFrame(schema=OFFSET_SCHEMA)
    by = ["process_group", "seq"]
    reference = int(matched["rank"].min())
    ends = matched.select(*by, "rank", "end_ns")
    ref_ends = ends.filter(pl.col("rank") == reference).select(*by, pl.col("end_ns").alias("ref_end_ns"))
    offsets = (
        ends.join(ref_ends, on=by, how="inner")
        .group_by("rank")
        .agg((pl.col("end_ns") - pl.col("ref_end_ns")).median().round().cast(pl.Int64).alias("offset_ns"),
             pl.len().cast(pl.Int64).alias("collectives"))
    )
    ranks = ends.select("rank").unique()
    offsets = ranks.join(offsets, on="rank", how="left").with_columns(
        pl.col("offset_ns").fill_null(0), pl.col("collectives").fill_null(0))
    aligned = ends.join(offsets.select("rank", "offset_ns"), on="rank").with_columns(
        (pl.col("end_ns") - pl.col("offset_ns")).alias("aligned_end_ns"))
    residuals = (
        aligned.with_columns(
            (pl.col("aligned_end_ns") - pl.col("aligned_end_ns").median().over(by)).abs().alias("residual")
        )
        .group_by("rank")
        .agg(
            pl.col("residual").median().round().cast(pl.Int64).alias("residual_median_abs_ns"),
            pl.col("residual").max().round().cast(pl.Int64).alias("residual_max_abs_ns"),
        )
    )
    return (
        offsets.join(residuals, on="rank", how="left")
        .with_columns(pl.lit(reference).alias("reference_rank"))
        .select(list(OFFSET_SCHEMA)).cast(OFFSET_SCHEMA).sort("rank")  # type: ignore[arg-type]
    )


def clock_health(offsets: pl.DataFrame, limit_ns: int = RESIDUAL_LIMIT_NS) -> pl.DataFrame:
    """A `clock_residuals` health finding per rank whose median |residual| exceeds `limit_ns`
    (schema `model.HEALTH_SCHEMA`)."""
    from traceanalyze.model import HEALTH_SCHEMA

    bad = offsets.filter(pl.col("residual_median_abs_ns") > limit_ns)
    return pl.DataFrame(
        {
            "rank": bad["rank"],
            "finding": ["clock_residuals"] * bad.height,
            "count": bad["collectives"],
            "affects": ["collective waits, the aligned timeline"] * bad.height,
            "detail": [
                f"after aligning rank {r}'s clock (offset {o / 1e6:+.3f} ms), its collectives still end "
                f"{m / 1e3:.0f} µs (median) from their peers': waits shorter than that are unreliable"
                for r, o, m in bad.select("rank", "offset_ns", "residual_median_abs_ns").iter_rows()
            ],
        },
        schema=HEALTH_SCHEMA,
    )
