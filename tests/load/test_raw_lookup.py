"""A chunk's per-name and per-category values (`raw._mapped`) are what `replace_strict(mapping,
default=None)` gives: null where the value is absent or null, whatever the column's type."""

from __future__ import annotations

import polars as pl
from hypothesis import given
from hypothesis import strategies as st

from traceanalyze.load import raw

KEYS = st.sampled_from(["kernel", "gpu_memcpy", "cudaLaunchKernel", "", "é", "x y"])


@given(st.lists(st.one_of(st.none(), KEYS), max_size=12),
       st.dictionaries(KEYS, st.one_of(st.none(), st.sampled_from(["a", "b"])), max_size=4),
       st.booleans())
def test_mapped_is_replace_strict_with_a_null_default(values, mapping, categorical):
    column = pl.Series("name", values, dtype=pl.Categorical if categorical else pl.String)
    frame = column.to_frame()
    expected = frame.select(pl.col("name").cast(pl.String).replace_strict(mapping, default=None,
                                                                          return_dtype=pl.String)).to_series()
    got = frame.select(raw._mapped("name", mapping, pl.String).alias("name")).to_series()
    assert got.to_list() == expected.to_list() and got.dtype == pl.String and got.len() == len(values)


def test_mapped_booleans():
    frame = pl.DataFrame({"name": ["cudaDeviceSynchronize", "cudaLaunchKernel", None, "other"]})
    got = frame.select(raw._mapped("name", {"cudaDeviceSynchronize": True, "cudaLaunchKernel": False},
                                   pl.Boolean)).to_series()
    assert got.to_list() == [True, False, None, None] and got.dtype == pl.Boolean
