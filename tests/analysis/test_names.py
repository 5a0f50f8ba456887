"""Name tests made once per distinct name give what the row-wise test gives, nulls included, on
String, Categorical and Enum columns, also where they are made once per category (a column of
many rows over few categories) or on every row (a short column)."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from unittest import mock

from traceanalyze.analysis import names as name_tests
from traceanalyze.analysis.names import contains, starts_with

NAMES = st.lists(st.one_of(st.none(), st.sampled_from(["aten::mm", "aten::add_", "sgemm_128", "Memcpy HtoD (Pageable)",
                                                        "ProfilerStep#3", "", "nchwToNhwcKernel", "ATEN::MM"])),
                 max_size=40)


# the test made on every row of a short column, and once per distinct name (any column, as if long)
ROW_BY_ROW = pytest.mark.parametrize("row_by_row_max", [name_tests.ROW_BY_ROW_MAX, -1])


@ROW_BY_ROW
@given(names=NAMES, pattern=st.sampled_from([r"aten::", r"(?i)htod|nchwToNhwc", r"^ProfilerStep#", r"_$"]))
def test_contains_is_the_row_wise_test(row_by_row_max, names, pattern):
    column = pl.Series("name", names, dtype=pl.String)
    expected = column.str.contains(pattern).to_list()
    with mock.patch.object(name_tests, "ROW_BY_ROW_MAX", row_by_row_max):
        assert contains(column, pattern).to_list() == expected
        assert contains(column.cast(pl.Categorical), pattern).to_list() == expected


@ROW_BY_ROW
@given(names=NAMES, prefix=st.sampled_from(["aten::", "Profiler", "", "x"]))
def test_starts_with_is_the_row_wise_test(row_by_row_max, names, prefix):
    column = pl.Series("name", names, dtype=pl.String)
    with mock.patch.object(name_tests, "ROW_BY_ROW_MAX", row_by_row_max):
        assert starts_with(column, prefix).to_list() == column.str.starts_with(prefix).to_list()


def test_a_short_column_is_tested_row_by_row():
    column = pl.Series("name", ["aten::mm", None, "sgemm_128"] * 100, dtype=pl.Categorical)
    with mock.patch.object(pl.Series, "unique", side_effect=AssertionError("a pass to find the distinct names")):
        assert contains(column, r"^aten::").to_list() == [True, None, False] * 100


@given(NAMES, st.sampled_from([r"aten::", r"(?i)htod|nchwToNhwc", r"^ProfilerStep#", r"_$"]), st.booleans())
def test_contains_once_per_category_is_the_row_wise_test(names, pattern, enum):
    column = pl.Series("name", names, dtype=pl.String)
    expected = column.str.contains(pattern).to_list()
    typed = column.cast(pl.Enum(sorted({n for n in names if n is not None} | {"unused"})) if enum else pl.Categorical)
    with mock.patch.object(name_tests, "CATEGORIES_PER_ROW", 0), \
         mock.patch.object(name_tests, "ROW_BY_ROW_MAX", -1):  # every column: once per category
        assert contains(typed, pattern).to_list() == expected


def test_many_rows_of_few_names_are_tested_once_per_category():
    names = pl.Series("name", ["aten::mm", None, "ProfilerStep#3", "sgemm_128"], dtype=pl.Categorical)
    categories = len(names.dtype.categories.to_series())  # every Categorical's, so far in this process
    column = pl.concat([names] * (categories * name_tests.CATEGORIES_PER_ROW // 4 + 1))
    with mock.patch.object(pl.Series, "unique", side_effect=AssertionError("a pass over the rows")):
        assert contains(column,
                        r"^ProfilerStep#").to_list() == column.cast(pl.String).str.contains(r"^ProfilerStep#").to_list()
