"""`model.linked_gpu`: each GPU op beside the runtime call that launched it; `launch=` gathers only
the launch columns asked for, with the same values as the full gather."""

from __future__ import annotations

import polars as pl
import pytest
from builder import TraceBuilder
from polars.testing import assert_frame_equal

from traceanalyze.load import load_trace
from traceanalyze.model import LAUNCH_COLUMNS, linked_gpu


@pytest.fixture
def trace(tmp_path):
    b = TraceBuilder()
    op = b.cpu_op("aten::relu", 0, 20)
    b.kernel(b.launch(5, 4, external_id=op), 12.5, 3.25)
    b.kernel(b.launch(10, 2, name="cudaLaunchKernel", tid=2), 30, 1)
    b.orphan_kernel(40, 1)
    return load_trace(b.write(tmp_path / "t.json"), cache=False)


def test_every_launch_column_by_default(trace):
    linked = linked_gpu(trace, ("start_ns",)).sort("start_ns")
    assert linked.columns == ["rank", "correlation", "start_ns", *LAUNCH_COLUMNS]
    base = trace.gpu["start_ns"].min() - 12_500  # the builder's origin: the kernels start at 12.5, 30 and 40 µs
    assert linked["launch_start_ns"].to_list() == [base + 5_000, base + 10_000, None]
    assert linked["launch_end_ns"].to_list() == [base + 9_000, base + 12_000, None]
    assert linked["launch_name"].cast(pl.String).to_list() == ["cudaLaunchKernel", "cudaLaunchKernel", None]


@pytest.mark.parametrize("launch", [("launch_start_ns",), ("launch_tid", "launch_start_ns"), ()])
def test_only_the_launch_columns_asked_for(trace, launch):
    full = linked_gpu(trace, ("start_ns",))
    some = linked_gpu(trace, ("start_ns",), launch=launch)
    assert some.columns == ["rank", "correlation", "start_ns", *launch]
    assert_frame_equal(some, full.select(some.columns))
