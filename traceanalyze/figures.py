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
    """`fraction` row by row: `part / whole`, or `empty` where `whole` is not positive."""
    return pl.when(whole > 0).then(part / whole).otherwise(empty)
