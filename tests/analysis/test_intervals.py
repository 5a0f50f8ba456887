"""Interval unions: the compiled sweep, the polars one and a plain-Python sweep agree exactly."""

from __future__ import annotations

import random

import polars as pl
import pytest
from polars.testing import assert_frame_equal
from threads_at_once import eight_threads_at_once

from traceanalyze.analysis import intervals
from traceanalyze.analysis.intervals import _union_native, _union_vectorised, union_intervals
from traceanalyze.native import compiled

_native = compiled() or pytest.skip("the C helpers are not built (no C compiler at install) or TRACEANALYZE_NO_NATIVE "
                                    "is set",
                                    allow_module_level=True)


def union_by_sweep(rows: list[tuple], by: list[str]) -> list[tuple]:
    """Sort, then extend the current interval while the next one starts at or before its end."""
    merged: list[list] = []
    for row in sorted(rows, key=lambda r: (tuple((v is not None, v) for v in r[:-2]), r[-2], r[-1])):
        key, start, end = row[:-2], row[-2], row[-1]
        if merged and merged[-1][0] == key and start <= merged[-1][2]:
            merged[-1][2] = max(merged[-1][2], end)
        else:
            merged.append([key, start, end])
    return [(*key, start, end) for key, start, end in merged]


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("by", [[], ["device"], ["rank", "device"]])
def test_union_three_ways(seed, by):
    rng = random.Random(seed)
    n = 2000
    starts = [rng.randrange(0, 10_000) for _ in range(n)]
    frame = pl.DataFrame(
        {
            "rank": [rng.choice([0, 1]) for _ in range(n)],
            "device": [rng.choice([0, 1, 2, None]) for _ in range(n)],
            "start_ns": starts,
            "end_ns": [s + rng.choice([0, 1, 5, rng.randrange(0, 400)]) for s in starts],
        },
        schema={"rank": pl.Int32, "device": pl.Int32, "start_ns": pl.Int64, "end_ns": pl.Int64},
    )
    ordered = frame.select(*by, "start_ns", "end_ns").sort(*by, "start_ns", "end_ns")
    native = _union_native(_native, ordered, by)
    vectorised = _union_vectorised(ordered, by)
    assert_frame_equal(native, vectorised)
    expected = union_by_sweep(list(frame.select(*by, "start_ns", "end_ns").iter_rows()), by)
    assert list(native.iter_rows()) == expected
    # given in start order (a loaded gpu table), the groups are made by a stable sort on them alone
    for minimum in (1, 10**9):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(intervals, "NATIVE_MIN_ROWS", minimum)
            assert list(union_intervals(frame.sort("start_ns"), by).iter_rows()) == expected
    # merged intervals of a group neither overlap nor touch
    for before, after in zip(expected, expected[1:]):
        if before[:-2] == after[:-2]:
            assert after[-2] > before[-1]


def test_large_inputs_take_the_native_sweep(monkeypatch):
    calls = []
    monkeypatch.setattr(intervals, "_union_native", lambda *a: calls.append(1) or _union_vectorised(a[1], a[2]))
    frame = pl.DataFrame({"device": [0] * 3, "start_ns": [0, 5, 20], "end_ns": [10, 12, 30]})
    monkeypatch.setattr(intervals, "NATIVE_MIN_ROWS", 1)
    assert union_intervals(frame, ["device"]).rows() == [(0, 0, 12), (0, 20, 30)]
    assert calls == [1]


@pytest.mark.parametrize("seed", range(3))
def test_keys_of_one_value_merge_as_one_group_and_are_kept(seed, monkeypatch):
    """The one rank and device of a trace are not sorted or grouped on (one group), yet come back
    with every merged interval; the compiled sweep and polars give the sweep's answer."""
    rng = random.Random(seed)
    starts = [rng.randrange(0, 5_000) for _ in range(800)]
    frame = pl.DataFrame(
        {"rank": [3] * 800, "device": [1] * 800, "start_ns": starts,
         "end_ns": [s + rng.choice([0, 1, 7, rng.randrange(0, 300)]) for s in starts]},
        schema={"rank": pl.Int32, "device": pl.Int32, "start_ns": pl.Int64, "end_ns": pl.Int64},
    )
    expected = union_by_sweep(list(frame.iter_rows()), ["rank", "device"])
    in_start_order = frame.sort("start_ns")  # as a loaded gpu table: merged without sorting again
    for minimum in (1, 10**9):  # the compiled sweep, then polars
        monkeypatch.setattr(intervals, "NATIVE_MIN_ROWS", minimum)
        for given in (frame, in_start_order, in_start_order.sort("start_ns", "end_ns", descending=[False, True])):
            merged = union_intervals(given, ["rank", "device"])
            assert merged.columns == ["rank", "device", "start_ns", "end_ns"]
            assert merged.schema == frame.schema
            assert list(merged.iter_rows()) == expected


ANALYSIS_THREADS_IN_A_FRESH_PROCESS = """
import sys
import polars as pl
from traceanalyze import native
from traceanalyze.analysis.intervals import NATIVE_MIN_ROWS, union_intervals
assert native.compiled() is not None and "numpy" not in sys.modules
frame = pl.DataFrame({"device": [0] * NATIVE_MIN_ROWS, "start_ns": range(0, 3 * NATIVE_MIN_ROWS, 3),
                      "end_ns": range(2, 3 * NATIVE_MIN_ROWS + 2, 3)})
""" + eight_threads_at_once('union_intervals(frame, ["device"]).height') + """
print(native._BRIDGE_READY.is_set(), sorted(set(results)) == [NATIVE_MIN_ROWS])
"""


def test_analysis_threads_import_numpy_through_the_bridge_on_a_trace_no_loader_prepared():
    """A trace read back from the cache is analysed with no decoding thread having imported
    polars' numpy bridge: eight analysis threads taking the compiled path at once go through
    `native.numpy_for_threads` (one imports, the others wait) and all succeed."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", ANALYSIS_THREADS_IN_A_FRESH_PROCESS], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "True"]
