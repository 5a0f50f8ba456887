"""The summary figures of report/summaries.py on hand-made frames, with exact expected values."""

from __future__ import annotations

import polars as pl
from polars.testing import assert_frame_equal

from traceanalyze.analysis.idle import GAP_CAUSES
from traceanalyze.report.summaries import idle_causes, small_kernel_summary, window_summary

CAUSE = pl.Enum(list(GAP_CAUSES))


def gaps(rows: list[tuple[str, int]]) -> pl.DataFrame:
    return pl.DataFrame({"cause": [c for c, _ in rows], "duration_ns": [d for _, d in rows]},
                        schema={"cause": CAUSE, "duration_ns": pl.Int64})


def test_idle_causes_longest_first_ties_in_cause_order():
    found = idle_causes(gaps([("sync", 30), ("host", 10), ("host", 20), ("other", 30), ("launch", 10)]))
    expected = pl.DataFrame(
        {"cause": ["sync", "other", "host", "launch"], "duration_ns": [30, 30, 30, 10], "gaps": [1, 1, 2, 1],
         "share_of_idle": [0.3, 0.3, 0.3, 0.1]},
        schema={"cause": CAUSE, "duration_ns": pl.Int64, "gaps": pl.UInt32, "share_of_idle": pl.Float64},
    )
    # equal totals keep GAP_CAUSES order (host before sync before other), whatever order group_by gives
    expected = expected.sort(["duration_ns", "cause"], descending=[True, False])
    assert found["cause"].cast(pl.String).to_list() == ["host", "sync", "other", "launch"]
    assert_frame_equal(found, expected)


def test_idle_causes_of_no_gaps_is_empty():
    assert idle_causes(gaps([])).height == 0


def test_window_summary_means_over_device_windows():
    idle = pl.DataFrame({"window_ns": [40, 100], "gpu_busy_ns": [20, 100], "gpu_idle_ns": [20, 0]})
    summary = window_summary([idle, idle.clear()])
    assert (summary.window_ns, summary.busy_ns, summary.idle_ns, summary.device_windows) == (70.0, 60.0, 10.0, 2)
    assert summary.idle_fraction == 20 / 140
    assert window_summary([]).window_ns is None and window_summary([]).device_windows == 0


def test_small_kernel_share_of_kernel_time():
    kernels = pl.DataFrame({"duration_ns": [5, 15, 80], "small": [True, True, False]})
    summary = small_kernel_summary(kernels)
    assert (summary.count, summary.kernels_with_launch, summary.gpu_time_ns) == (2, 3, 20)
    assert summary.share_of_kernel_time == 0.2
    none_small = small_kernel_summary(kernels.with_columns(pl.lit(False).alias("small")))
    assert (none_small.count, none_small.gpu_time_ns, none_small.share_of_kernel_time) == (0, None, 0.0)


def test_a_per_step_table_of_many_steps_lists_the_slowest():
    from traceanalyze.report.summaries import listed_steps

    def steps(durations: list[int], devices: int = 1) -> pl.DataFrame:
        return pl.DataFrame({"step": [s for s in range(len(durations)) for _ in range(devices)],
                             "device": [d for _ in durations for d in range(devices)],
                             "cpu_duration_ns": [t for t in durations for _ in range(devices)]})

    few = steps([5, 1, 3])
    listed, title = listed_steps(few, most=3)
    assert title == "Per step" and listed["step"].to_list() == [0, 1, 2]
    listed, title = listed_steps(steps([5, 1, 9, 3, 9, 7]), most=3)
    assert title == "Slowest steps (3 of 6, by CPU step time)"
    assert listed["step"].to_list() == [2, 4, 5]  # 9, 9 (by step number), then 7
    listed, title = listed_steps(steps([5, 1, 9], devices=2), most=3)
    assert title == "Slowest steps (3 of 6 step × device rows, by CPU step time)"
    assert listed.select("step", "device").rows() == [(2, 0), (2, 1), (0, 0)]
