"""The ratios several stages compute, each defined once: a part over its whole (the idle fraction
of a window, a regime's share, the model coverage), for Python numbers and for polars columns.

What a ratio over nothing is (an empty window) is the caller's to say, and each says it here by
name: the report's figures read 0.0 (nothing idle over no window: `EMPTY_IS_ZERO`), the gate's
read None (nothing to judge: `EMPTY_IS_UNKNOWN`, so a budget is not passed on no data)."""

from __future__ import annotations

import polars as pl

EMPTY_IS_ZERO = 0.0
EMPTY_IS_UNKNOWN = None


def fraction(part: float, whole: float | None, *, empty: float | None) -> float | None:
    """`part / whole`, or `empty` when `whole` is missing or not positive (docs/metrics.md)."""
    if whole is None or not whole > 0:
        return empty
    return part / whole


def fraction_column(part: pl.Expr, whole: pl.Expr, *, empty: float | None) -> pl.Expr:
    """`fraction` row by row: `part / whole` (`share_column`: correctly rounded), or `empty` where
    `whole` is not positive."""
    return pl.when(whole > 0).then(share_column(part, whole)).otherwise(empty)


def share_column(part: pl.Expr, whole: pl.Expr) -> pl.Expr:
    """`part / whole` row by row, correctly rounded. polars divides by a divisor that is one value
    in every row (a literal, or a frame's scalar column: one rank's window, one device's) as a
    product with its reciprocal, which can be off in the last bit (3 / 5 → 0.6000000000000001),
    and by a column of several values exactly: a rank's figures would then depend on whether it was
    analysed alone or beside other ranks (`pipeline.rank.rank_reports`). The divisor is first made
    one value per row (adding a zero per row), so the quotient is the exact one in both."""
    return part / (whole + pl.int_range(pl.len(), dtype=pl.Int64) * 0)
