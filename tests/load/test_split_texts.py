"""The shape arguments of a chunk's CPU ops, NUL-joined by the fast decoder, split back into one
value per row (null where absent): in Python for a small chunk, by polars for a large one; the
same values either way."""

from __future__ import annotations

from unittest import mock

import polars as pl
from hypothesis import given
from hypothesis import strategies as st

from traceanalyze.load import raw

VALUES = st.lists(st.sampled_from(["", "[1, 2]", "[[3, 4], []]", "\"é\"", "[\"x\", null]"]), min_size=1, max_size=8)


@given(st.lists(st.one_of(st.none(), VALUES), min_size=1, max_size=3))
def test_split_in_python_is_the_polars_split(joined):
    series = [pl.Series([None if values is None else "\x00".join(values)], dtype=pl.String) for values in joined]
    expected = [part or None for values in joined for part in (values if values is not None else [None])]
    in_python = raw._split_texts(series)
    with mock.patch.object(raw, "SPLIT_IN_PYTHON_MAX_CHARS", -1):
        in_polars = raw._split_texts(series)
    assert in_python.to_list() == in_polars.to_list() == expected
    assert in_python.dtype == in_polars.dtype == pl.String
