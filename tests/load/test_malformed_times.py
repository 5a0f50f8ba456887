"""Times that cannot be int64 nanoseconds: the event is skipped and counted, on both decode paths."""

from __future__ import annotations

import json

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from traceanalyze.load import load_file
from traceanalyze.load.chrome import decode_document
from traceanalyze.load.reading import read_bytes
from traceanalyze.load.assemble import build_trace
from traceanalyze.load.chunk import SKIP_NO_TS_OR_NAME
from traceanalyze.analysis.health import trace_health

KERNEL = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5, "dur": 2,
          "args": {"device": 0, "stream": 7, "correlation": 1}}


def general_path(path):
    document, malformed = decode_document(read_bytes(path), path)
    return build_trace(document, path=path, rank=0, rank_source="default", malformed=malformed, include_python=False)


@pytest.mark.parametrize("bad", [
    {"ts": 2**70},
    {"ts": -(2**70)},
    {"ts": (1 << 63) // 1000},  # its ns alone overflow int64
    {"ts": (1 << 63) // 1000 - 10},  # its ns fit, its end would not
])
def test_integer_ts_beyond_int64_ns_is_skipped_on_both_paths(tmp_path, bad):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": [KERNEL, dict(KERNEL, name="bad", **bad)]}))
    fast, general = load_file(path, workers=1), general_path(path)
    for trace in (fast, general):
        assert trace.gpu.select("name", "start_ns", "end_ns").rows() == [("k", 5000, 7000)]
        assert trace.skipped.select("reason", "count").rows() == [(SKIP_NO_TS_OR_NAME, 1)]
        assert trace_health(trace).filter(pl.col("finding") == "malformed_events_skipped")["count"].to_list() == [1]
    for table in ("gpu", "skipped"):
        assert_frame_equal(getattr(fast, table), getattr(general, table))
