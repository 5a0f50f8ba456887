"""A finding's evidence intervals (`spans_of`): the MAX_SPANS longest (the earliest of equals), in
time order; taken in Python for a small rank's few rows, by polars for many: the same spans."""

from __future__ import annotations

from unittest import mock

import polars as pl
from hypothesis import given
from hypothesis import strategies as st

from traceanalyze.analysis.findings import finding


@given(st.lists(st.integers(0, 50), max_size=40), st.integers(1, 5))
def test_the_longest_spans_in_time_order(lengths, kept):
    frame = pl.DataFrame({"start_ns": [1000 * k for k in range(len(lengths))],
                          "end_ns": [1000 * k + length for k, length in enumerate(lengths)]})
    longest = sorted(range(len(lengths)), key=lambda k: (-lengths[k], k))[:kept]
    expected = tuple((1000 * k, 1000 * k + lengths[k]) for k in sorted(longest))
    with mock.patch.object(finding, "MAX_SPANS", kept):
        in_python = finding.spans_of(frame)
        with mock.patch.object(finding, "SPANS_IN_PYTHON_MAX_ROWS", -1):
            assert finding.spans_of(frame) == in_python == expected
