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
    """`test` on each element of `names` (String or Categorical), evaluated once per distinct name."""
    distinct = names.unique(maintain_order=True).cast(pl.String).to_frame("name")  # in order: twice as fast on a categorical
    hits = distinct.filter(test(pl.col("name")).fill_null(False))["name"]
    return names.is_in(hits.implode()).alias(names.name)


def contains(names: pl.Series, pattern: str) -> pl.Series:
    """`names.str.contains(pattern)`, once per distinct name."""
    return matching(names, lambda name: name.str.contains(pattern))


def starts_with(names: pl.Series, prefix: str) -> pl.Series:
    """`names.str.starts_with(prefix)`, once per distinct name."""
    return matching(names, lambda name: name.str.starts_with(prefix))
