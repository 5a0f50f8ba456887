"""The HTML charts' inputs (report.chart_inputs): what a tooltip says for each idle gap."""

from __future__ import annotations

import polars as pl

from traceanalyze.report.chart_inputs import _gap_labels

LONG_KERNEL = ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
               "at::detail::Array<char*, 1>>(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)")


def gaps(rows: list[dict]) -> pl.DataFrame:
    schema = {"cause": pl.Enum(["host", "sync", "data"]), "step": pl.Int64, "cpu_op": pl.Categorical,
              "annotation": pl.Categorical, "sync_call": pl.Categorical, "next_gpu_op": pl.Categorical}
    return pl.DataFrame(rows, schema=schema)


def test_each_gap_label_names_cause_step_cpu_side_and_next_kernel():
    frame = gaps([
        {"cause": "sync", "step": 3, "cpu_op": "aten::item", "annotation": "fwd", "sync_call": "cudaStreamSynchronize",
         "next_gpu_op": LONG_KERNEL},
        {"cause": "host", "step": None, "cpu_op": None, "annotation": "optimizer", "sync_call": None,
         "next_gpu_op": "k"},
        {"cause": "host", "step": 12, "cpu_op": "", "annotation": "", "sync_call": "", "next_gpu_op": None},
        {"cause": "data", "step": 0, "cpu_op": None, "annotation": None, "sync_call": None, "next_gpu_op": ""},
        {"cause": "sync", "step": 4, "cpu_op": "aten::item", "annotation": None, "sync_call": "cudaStreamSynchronize",
         "next_gpu_op": LONG_KERNEL},
    ])
    assert _gap_labels(frame).to_list() == [
        "GPU idle (sync, step 3) — CPU at aten::item in cudaStreamSynchronize; next: "
        "at::native::vectorized_elementwise_kernel",
        "GPU idle (host) — CPU at optimizer; next: k",
        "GPU idle (host, step 12) — CPU at no CPU op; next: –",
        "GPU idle (data, step 0) — CPU at no CPU op; next: –",
        "GPU idle (sync, step 4) — CPU at aten::item in cudaStreamSynchronize; next: "
        "at::native::vectorized_elementwise_kernel",
    ]


def test_no_gaps_no_labels():
    assert _gap_labels(gaps([])).to_list() == []


def test_a_binned_lane_reads_each_bin_as_one_run_of_rows():
    from traceanalyze.renderers.plots.timeline import _runs_of_equal

    assert list(_runs_of_equal([1, 1, 2, 3, 3, 3, 1])) == [(0, 2), (2, 3), (3, 6), (6, 7)]
    assert list(_runs_of_equal([])) == []
    assert list(_runs_of_equal([5])) == [(0, 1)]


def timeline_of(kernels: int, gaps_count: int):
    """One device's timeline from `kernels` kernels of 1 µs, each 1 µs apart, on one stream, and
    `gaps_count` idle gaps."""
    from traceanalyze.report.chart_inputs import _timelines

    ops = pl.DataFrame({"device": [0] * kernels, "stream": [7] * kernels,
                        "start_ns": [2000 * i for i in range(kernels)],
                        "end_ns": [2000 * i + 1000 for i in range(kernels)],
                        "regime": ["bandwidth"] * kernels, "name": [f"k{i % 3}" for i in range(kernels)]})
    gap_rows = [{"device": 0, "start_ns": 2000 * i + 1000, "end_ns": 2000 * i + 2000, "cause": "host", "step": None,
                 "cpu_op": "aten::mm", "annotation": None, "sync_call": None, "next_gpu_op": "k1"}
                for i in range(gaps_count)]
    gap_frame = gaps(gap_rows).with_columns(pl.lit(0, dtype=pl.Int32).alias("device"),
                                            start_ns=pl.Series([r["start_ns"] for r in gap_rows], dtype=pl.Int64),
                                             end_ns=pl.Series([r["end_ns"] for r in gap_rows], dtype=pl.Int64))
    idle = pl.DataFrame({"device": [0], "window_start_ns": [0], "window_end_ns": [2000 * kernels]})
    streams = pl.DataFrame({"device": [0], "stream": [7], "busy_ns": [1000 * kernels]})
    steps = pl.DataFrame({"device": [0], "step": [0], "window_start_ns": [0]})
    return _timelines(ops, gap_frame, idle, streams, steps)[0]


def test_a_timeline_labels_each_interval_up_to_the_exact_limit_and_bins_past_it():
    """Up to `plots.EXACT_TIMELINE_MARKS` intervals each is drawn with its tooltip; past it every
    lane is binned (and no label is made: a binned lane draws none)."""
    from traceanalyze.renderers import plots

    limit = min(plots.EXACT_TIMELINE_MARKS, plots.MAX_MARKS)
    exact = timeline_of(limit // 2, limit - limit // 2)
    assert all(row.bins is None for row in exact.rows)
    kernel_lane, gap_lane = exact.rows
    assert kernel_lane.intervals["label"].to_list()[:3] == ["k0", "k1", "k2"]
    assert gap_lane.intervals["label"].null_count() == 0
    assert gap_lane.intervals["label"][0] == "GPU idle (host) — CPU at aten::mm; next: k1"
    binned = timeline_of(limit // 2 + 1, limit - limit // 2)
    assert all(row.bins is not None and row.intervals.is_empty() for row in binned.rows)
    assert binned.rows[0].bins["count"].sum() >= limit // 2 + 1
