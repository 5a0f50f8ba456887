"""The HTML charts' inputs (report.chart_inputs): what a tooltip says for each idle gap."""

from __future__ import annotations

import polars as pl

from traceanalyze.report.chart_inputs import _gap_labels

LONG_KERNEL = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1>>(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)"


def gaps(rows: list[dict]) -> pl.DataFrame:
    schema = {"cause": pl.Enum(["host", "sync", "data"]), "step": pl.Int64, "cpu_op": pl.Categorical,
              "annotation": pl.Categorical, "sync_call": pl.Categorical, "next_gpu_op": pl.Categorical}
    return pl.DataFrame(rows, schema=schema)


def test_each_gap_label_names_cause_step_cpu_side_and_next_kernel():
    frame = gaps([
        {"cause": "sync", "step": 3, "cpu_op": "aten::item", "annotation": "fwd", "sync_call": "cudaStreamSynchronize",
         "next_gpu_op": LONG_KERNEL},
        {"cause": "host", "step": None, "cpu_op": None, "annotation": "optimizer", "sync_call": None, "next_gpu_op": "k"},
        {"cause": "host", "step": 12, "cpu_op": "", "annotation": "", "sync_call": "", "next_gpu_op": None},
        {"cause": "data", "step": 0, "cpu_op": None, "annotation": None, "sync_call": None, "next_gpu_op": ""},
        {"cause": "sync", "step": 4, "cpu_op": "aten::item", "annotation": None, "sync_call": "cudaStreamSynchronize",
         "next_gpu_op": LONG_KERNEL},
    ])
    assert _gap_labels(frame).to_list() == [
        "GPU idle (sync, step 3) — CPU at aten::item in cudaStreamSynchronize; next: at::native::vectorized_elementwise_kernel",
        "GPU idle (host) — CPU at optimizer; next: k",
        "GPU idle (host, step 12) — CPU at no CPU op; next: –",
        "GPU idle (data, step 0) — CPU at no CPU op; next: –",
        "GPU idle (sync, step 4) — CPU at aten::item in cudaStreamSynchronize; next: at::native::vectorized_elementwise_kernel",
    ]


def test_no_gaps_no_labels():
    assert _gap_labels(gaps([])).to_list() == []


def test_a_binned_lane_reads_each_bin_as_one_run_of_rows():
    from traceanalyze.report.plots import _runs_of_equal

    assert list(_runs_of_equal([1, 1, 2, 3, 3, 3, 1])) == [(0, 2), (2, 3), (3, 6), (6, 7)]
    assert list(_runs_of_equal([])) == []
    assert list(_runs_of_equal([5])) == [(0, 1)]
