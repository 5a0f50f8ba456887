"""Name tests made once per distinct name give what the row-wise test gives, nulls included, on
String and Categorical columns."""

from __future__ import annotations

import polars as pl
from hypothesis import given
from hypothesis import strategies as st

from traceanalyze.analysis.names import contains, starts_with

NAMES = st.lists(st.one_of(st.none(), st.sampled_from(["aten::mm", "aten::add_", "sgemm_128", "Memcpy HtoD (Pageable)",
                                                        "ProfilerStep#3", "", "nchwToNhwcKernel", "ATEN::MM"])),
                 max_size=40)


@given(NAMES, st.sampled_from([r"aten::", r"(?i)htod|nchwToNhwc", r"^ProfilerStep#", r"_$"]))
def test_contains_is_the_row_wise_test(names, pattern):
    column = pl.Series("name", names, dtype=pl.String)
    expected = column.str.contains(pattern).to_list()
    assert contains(column, pattern).to_list() == expected
    assert contains(column.cast(pl.Categorical), pattern).to_list() == expected


@given(NAMES, st.sampled_from(["aten::", "Profiler", "", "x"]))
def test_starts_with_is_the_row_wise_test(names, prefix):
    column = pl.Series("name", names, dtype=pl.String)
    assert starts_with(column, prefix).to_list() == column.str.starts_with(prefix).to_list()
