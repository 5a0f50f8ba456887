"""The blocking call of a `sync` gap: the first (by start, then trace order) blocking runtime call
of the gap's rank that overlaps it, found linearly, equals the pairwise definition."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from traceanalyze.analysis.idle import _blocking_calls_during

SPAN = st.tuples(st.integers(0, 60), st.integers(1, 25))


class _Runtime:
    def __init__(self, runtime: pl.DataFrame):
        self.runtime = runtime


def first_overlapping(gaps, calls):
    found = {}
    for gap_id, rank, start, end in gaps:
        overlapping = [(s, order, name) for order, (r, name, s, e, blocking) in enumerate(calls)
                       if blocking and r == rank and s < end and e > start]
        if overlapping:
            found[gap_id] = min(overlapping)[2]
    return found


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), SPAN), max_size=12),
       st.lists(st.tuples(st.integers(0, 1), SPAN, st.booleans()), max_size=12))
def test_first_overlapping_blocking_call(gap_spans, call_spans):
    gaps = [(i, rank, start, start + length) for i, (rank, (start, length)) in enumerate(gap_spans)]
    calls = [(rank, f"call{i}", start, start + length, blocking)
             for i, (rank, (start, length), blocking) in enumerate(call_spans)]
    runtime = pl.DataFrame(
        {"rank": [c[0] for c in calls], "name": [c[1] for c in calls], "pid": [1] * len(calls), "tid": [1] * len(calls),
         "start_ns": [c[2] for c in calls], "end_ns": [c[3] for c in calls], "blocking": [c[4] for c in calls]},
        schema={"rank": pl.Int32, "name": pl.String, "pid": pl.Int64, "tid": pl.Int64, "start_ns": pl.Int64,
                "end_ns": pl.Int64, "blocking": pl.Boolean})
    frame = pl.DataFrame({"gap_id": [g[0] for g in gaps], "rank": [g[1] for g in gaps],
                          "start_ns": [g[2] for g in gaps],
                          "end_ns": [g[3] for g in gaps]},
                         schema={"gap_id": pl.Int64, "rank": pl.Int32, "start_ns": pl.Int64, "end_ns": pl.Int64})
    result = _blocking_calls_during(frame, _Runtime(runtime))
    assert dict(result.select("gap_id", "sync_call").iter_rows()) == first_overlapping(gaps, calls)
