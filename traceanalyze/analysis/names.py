"""Tests on the names of events (kernels, ops, runtime calls), made once per distinct name.

A trace repeats a few thousand names over millions of events, so a regular expression or a prefix
test evaluated on every row costs hundreds of times what it costs on the distinct names. The
result is the same as the row-wise test, null where the name is null.
"""

from __future__ import annotations

from typing import Callable

import polars as pl

NameTest = Callable[[pl.Expr], pl.Expr]  # a name expression (String) → a Boolean expression


def matching(names: pl.Series, test: NameTest) -> pl.Series:
    """`test` on each element of `names` (String, Categorical or Enum), evaluated once per distinct
    name: for a categorical or enum column whose categories are few beside its rows, once per
    category (each row's category number is then looked up: no pass over the rows to find the
    distinct names)."""
    if len(names) <= ROW_BY_ROW_MAX:  # one query on the rows costs less than finding the distinct names
        return names.to_frame("name").select(
            pl.when(pl.col("name").is_not_null()).then(test(pl.col("name").cast(pl.String)).fill_null(False))
            .alias(names.name)).to_series()
    # a Categorical's categories are the process's whole pool (every name any frame held): asked
    # only of a series long enough for them to pay (0.7 ms a call on a small rank's few names)
    categories = _categories(names) if len(names) > CATEGORIES_PER_ROW else None
    if categories is not None and len(categories) * CATEGORIES_PER_ROW < len(names):
        hits = categories.to_frame("name").with_row_index("code").filter(test(pl.col("name")).fill_null(False))["code"]
        return names.to_physical().is_in(hits.cast(names.to_physical().dtype).implode()).alias(names.name)
    distinct = (
        names.unique(maintain_order=True).cast(pl.String).to_frame("name")
    )  # in order: twice as fast on a categorical
    hits = distinct.filter(test(pl.col("name")).fill_null(False))["name"]
    return names.is_in(hits.implode()).alias(names.name)


# a name test on a category costs about what finding the distinct values costs for 256 rows
CATEGORIES_PER_ROW = 256
# up to this many rows, the test on every row (one query: 0.12-0.13 ms) costs less than finding the
# distinct names first (three: 0.3 ms), whatever the names
ROW_BY_ROW_MAX = 1024


def _categories(names: pl.Series) -> pl.Series | None:
    """The strings of a categorical or enum column by their number (`to_physical`), else None."""
    if isinstance(names.dtype, pl.Enum):
        return names.dtype.categories
    if isinstance(names.dtype, pl.Categorical):
        return names.dtype.categories.to_series()
    return None


def contains(names: pl.Series, pattern: str) -> pl.Series:
    """`names.str.contains(pattern)`, once per distinct name."""
    return matching(names, lambda name: name.str.contains(pattern))


def starts_with(names: pl.Series, prefix: str) -> pl.Series:
    """`names.str.starts_with(prefix)`, once per distinct name."""
    return matching(names, lambda name: name.str.starts_with(prefix))
