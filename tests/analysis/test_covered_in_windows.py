"""`intervals.covered_in_windows` (linear: running sums and an as-of join) against counting every
covered nanosecond of every window one by one."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from traceanalyze.analysis.intervals import covered_in_windows

spans = st.tuples(st.integers(0, 1), st.integers(0, 60), st.integers(0, 25))


def covered_by_counting(intervals: list[tuple[int, int, int]], windows: list[tuple[int, int, int]]) -> list[int]:
    covered = {(device, t) for device, start, end in intervals for t in range(start, end)}
    return [sum((device, t) in covered for t in range(start, end)) for device, start, end in windows]


def frame(rows, names):
    return pl.DataFrame(rows, schema={"device": pl.Int32, names[0]: pl.Int64, names[1]: pl.Int64}, orient="row")


@settings(max_examples=300, deadline=None)
@given(st.lists(spans, max_size=30), st.lists(spans, min_size=1, max_size=12))
def test_coverage_of_each_window_equals_counting_nanoseconds(interval_spans, window_spans):
    intervals = [(device, start, start + length) for device, start, length in interval_spans]
    windows = [(device, start, start + length) for device, start, length in window_spans]  # may overlap, may be empty
    got = covered_in_windows(frame(intervals, ("start_ns", "end_ns")),
                             frame(windows, ("window_start_ns", "window_end_ns")),
                             ["device"])
    assert got.to_list() == covered_by_counting(intervals, windows)


def test_windows_keep_their_order_and_an_empty_input_covers_nothing():
    windows = frame([(0, 50, 60), (0, 0, 10), (1, 0, 100)], ("window_start_ns", "window_end_ns"))
    intervals = frame([(0, 5, 55), (0, 8, 9)], ("start_ns", "end_ns"))
    assert covered_in_windows(intervals, windows, ["device"]).to_list() == [5, 5, 0]
    assert covered_in_windows(intervals.clear(), windows, ["device"]).to_list() == [0, 0, 0]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 8), st.integers(1, 8)), max_size=20),
       st.lists(spans, min_size=1, max_size=12))
def test_disjoint_intervals_skip_the_union_and_cover_the_same(steps, window_spans):
    ends = {0: 0, 1: 0}
    intervals = []
    for device, pause, length in steps:  # each device's intervals one after another, never overlapping
        start = ends[device] + pause
        intervals.append((device, start, start + length))
        ends[device] = start + length
    windows = [(device, start, start + length) for device, start, length in window_spans]
    got = covered_in_windows(frame(intervals, ("start_ns", "end_ns")),
                             frame(windows, ("window_start_ns", "window_end_ns")),
                             ["device"], disjoint=True)
    assert got.to_list() == covered_by_counting(intervals, windows)
