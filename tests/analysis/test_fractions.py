"""Fractions (a gap's share of its window, idle fractions) are the correctly rounded quotient,
whether the divisor is one value for every row (one rank, one device) or varies (ranks analysed
together): polars would divide by a one-value divisor as a product with its reciprocal."""

from __future__ import annotations

import polars as pl

from traceanalyze.analysis.attribution import recoverable
from traceanalyze.figures import fraction_column, share_column


def test_a_divisor_of_one_value_gives_the_exact_quotient():
    frame = pl.DataFrame({"part": [1, 2, 3]}).with_columns(pl.lit(5).alias("whole"))  # a scalar column
    assert frame.select(pl.col("part") / pl.col("whole")).to_series().to_list()[2] != 0.6  # what polars does
    assert frame.select(share_column(pl.col("part"), pl.col("whole"))).to_series().to_list() == [0.2, 0.4, 0.6]
    varying = pl.DataFrame({"part": [3, 3], "whole": [5, 7]})
    assert varying.select(share_column(pl.col("part"), pl.col("whole"))).to_series().to_list() == [3 / 5, 3 / 7]


def test_fraction_of_nothing_is_the_empty_value():
    frame = pl.DataFrame({"part": [3, 1], "whole": [5, 0]})
    assert frame.select(fraction_column(pl.col("part"), pl.col("whole"), empty=0.0)).to_series().to_list() == [0.6, 0.0]


def test_recoverable_time_is_summed_in_row_order_whatever_polars_knows_of_the_order():
    """The same rows give the same sums whether polars knows them sorted by regime (one rank's
    frame) or not (a slice of several ranks' frame)."""
    values = [(k * 7919 % 1000) * 10.0 ** (k % 7) / 3 for k in range(2000)]  # a group_by sums these two ways
    rows = pl.DataFrame({
        "regime": pl.Series(["latency"] * len(values), dtype=pl.Enum(["compute", "bandwidth", "latency"])),
        "recoverable_ns": values, "ideal_ns": values, "duration_ns": [v * 3 for v in values],
    })
    flagged = rows.with_columns(pl.col("regime").set_sorted())
    attributed = pl.DataFrame({"overhead_ns": [0]})
    got = [recoverable(frame, attributed).filter(pl.col("regime") == "latency").row(0) for frame in (rows, flagged)]
    assert got[0] == got[1]
    assert got[0][1] == rows.select(pl.col("recoverable_ns").sum()).item()
